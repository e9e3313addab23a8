/* matmul_avx2.c — Y[T,OUT] = X[T,IN] · W[OUT,IN]ᵀ + b with AVX2 + FMA:
 * 8-float vectors, a 6 × 16 GEMM register tile (12 accumulators of 16 ymm),
 * masked tails. The algorithm is in matmul_tmpl.h. */
#include <immintrin.h>

#include "engine/x86/half_avx.h"

typedef __m256 vec;
typedef __m256i vmask;
#define LANES 8
/* T = 2..4: MT_ROWS·4 accumulators + 4 x vectors + 1 w must fit the registers */
#define MT_ROWS 2
#define MR 6
static inline vec vzero(void) { return _mm256_setzero_ps(); }
static inline vec vload(const float *p) { return _mm256_loadu_ps(p); }
static inline void vstore(float *p, vec v) { _mm256_storeu_ps(p, v); }
static inline vec vfma(vec a, vec b, vec c) { return _mm256_fmadd_ps(a, b, c); }
static inline vec vadd(vec a, vec b) { return _mm256_add_ps(a, b); }
static inline vec vbcast(const float *p) { return _mm256_broadcast_ss(p); }
/* lane i on when i < n */
static inline vmask vmask_n(int n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
static inline vec vload_m(const float *p, vmask m) { return _mm256_maskload_ps(p, m); }
static inline void vstore_m(float *p, vec v, vmask m) { _mm256_maskstore_ps(p, m, v); }
static inline vec vload_h(int h16, const uint16_t *p) { return tg_half8_ps(h16, p); }
static inline float hsum(vec v) {
    __m128 b = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    b = _mm_add_ps(b, _mm_movehl_ps(b, b));
    b = _mm_add_ss(b, _mm_movehdup_ps(b));
    return _mm_cvtss_f32(b);
}

/* lane r = the sum of v[r]'s lanes, for r < 8 (a fixed tree) */
static inline __m256 hsum8(const vec v[8]) {
    __m256 t0 = _mm256_hadd_ps(v[0], v[1]), t1 = _mm256_hadd_ps(v[2], v[3]);
    __m256 t2 = _mm256_hadd_ps(v[4], v[5]), t3 = _mm256_hadd_ps(v[6], v[7]);
    __m256 u0 = _mm256_hadd_ps(t0, t1), u1 = _mm256_hadd_ps(t2, t3);
    /* u0 = [v0..v3 over the low 128 | v0..v3 over the high 128], u1 for v4..v7 */
    return _mm256_add_ps(_mm256_permute2f128_ps(u0, u1, 0x20), _mm256_permute2f128_ps(u0, u1, 0x31));
}

#include "engine/x86/matmul_tmpl.h"

UK(1) UK(2) UK(3) UK(4) UK(5) UK(6)
static const ukernel_fn ukernels[MR + 1] = {NULL,      ukernel_1, ukernel_2, ukernel_3,
                                            ukernel_4, ukernel_5, ukernel_6};

void tg_matmul_avx2(float *y, const float *x, const float *w, const float *b, int T, int in,
                    int out, int o0, int o1) {
    matmul_by_shape(ukernels, y, x, w, b, T, in, out, o0, o1);
}

/* F16 (h16) / BF16 weights, T > 1 (x86.h) */
void tg_matmul_half_avx2(int h16, float *y, const float *x, const void *w, size_t ldw,
                         const float *b, int T, int in, int out, int o0, int o1, void *ws) {
    matmul_half_by_shape(ukernels, h16, y, x, w, ldw, b, T, in, out, o0, o1, ws);
}

/* the f32 column of the typed table (ldw == 4·IN) */
static void matmul_f32_w(float *y, const void *x, const void *w, size_t ldw, const float *b,
                         int T, int in, int out, int o0, int o1, void *ws) {
    (void)ldw, (void)ws;
    tg_matmul_avx2(y, x, w, b, T, in, out, o0, o1);
}

void tg_kernels_init_matmul_avx2(tg_kernels *k) {
    k->matmul = tg_matmul_avx2;
    k->matmul_w[TG_WTYPE_F32] = matmul_f32_w;
}
