/* matmul_avx512.c — Y[T,OUT] = X[T,IN] · W[OUT,IN]ᵀ + b with AVX-512F:
 * 16-float vectors, an 8 × 32 GEMM register tile (16 accumulators of 32
 * zmm), masked tails. The algorithm is in matmul_tmpl.h. */
#include <immintrin.h>

#include "engine/x86/x86.h"

typedef __m512 vec;
typedef __mmask16 vmask;
#define LANES 16
/* T = 2..4: MT_ROWS·4 accumulators + 4 x vectors + 1 w must fit the registers */
#define MT_ROWS 4
#define MR 8
static inline vec vzero(void) { return _mm512_setzero_ps(); }
static inline vec vload(const float *p) { return _mm512_loadu_ps(p); }
static inline void vstore(float *p, vec v) { _mm512_storeu_ps(p, v); }
static inline vec vfma(vec a, vec b, vec c) { return _mm512_fmadd_ps(a, b, c); }
static inline vec vadd(vec a, vec b) { return _mm512_add_ps(a, b); }
static inline vec vbcast(const float *p) { return _mm512_set1_ps(*p); }
static inline vmask vmask_n(int n) { return (vmask)((1u << n) - 1u); }
static inline vec vload_m(const float *p, vmask m) { return _mm512_maskz_loadu_ps(m, p); }
static inline void vstore_m(float *p, vec v, vmask m) { _mm512_mask_storeu_ps(p, m, v); }
/* 16 halves (h16) or bfloat16 as f32; lanes off in m read nothing and are 0 */
static inline __m512 load16_half(int h16, const uint16_t *p, __mmask16 m) {
    __m256i h = _mm256_maskz_loadu_epi16(m, p);
    if (h16) return _mm512_cvtph_ps(h);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}
static inline vec vload_h(int h16, const uint16_t *p) { return load16_half(h16, p, 0xffff); }
/* (lo256 + hi256) then the AVX2 order below: fixed, whatever the caller */
static inline float hsum(vec v) {
    __m256 a = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
    __m128 b = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    b = _mm_add_ps(b, _mm_movehl_ps(b, b));
    b = _mm_add_ss(b, _mm_movehdup_ps(b));
    return _mm_cvtss_f32(b);
}

/* lane r = the sum of v[r]'s lanes, for r < 8: each folded to 256 bits
 * (lo + hi), then AVX2's tree */
static inline __m256 hsum8(const vec v[8]) {
    __m256 h[8];
    for (int r = 0; r < 8; r++)
        h[r] = _mm256_add_ps(_mm512_castps512_ps256(v[r]), _mm512_extractf32x8_ps(v[r], 1));
    __m256 t0 = _mm256_hadd_ps(h[0], h[1]), t1 = _mm256_hadd_ps(h[2], h[3]);
    __m256 t2 = _mm256_hadd_ps(h[4], h[5]), t3 = _mm256_hadd_ps(h[6], h[7]);
    __m256 u0 = _mm256_hadd_ps(t0, t1), u1 = _mm256_hadd_ps(t2, t3);
    return _mm256_add_ps(_mm256_permute2f128_ps(u0, u1, 0x20), _mm256_permute2f128_ps(u0, u1, 0x31));
}

#include "engine/x86/matmul_tmpl.h"

UK(1) UK(2) UK(3) UK(4) UK(5) UK(6) UK(7) UK(8)
static const ukernel_fn ukernels[MR + 1] = {NULL,      ukernel_1, ukernel_2, ukernel_3, ukernel_4,
                                            ukernel_5, ukernel_6, ukernel_7, ukernel_8};

/* ---- the decode GEMV for matrices streamed from memory ---------------------------
 *
 * y[o0..o1) = W · x + b for one token, one row after the other (one
 * sequential stream): 64 floats (four zmm) per step into four FMA chains,
 * then 16-float steps into the first chain, the tail of IN % 16 under a
 * mask (nothing past the row is read) into the second, one horizontal sum
 * per row. Each row is computed by the same operations wherever it falls,
 * so results do not depend on o0/o1.
 *
 * It replaced AVX2's GEMV (matmul_tmpl.h's gemv_body: ymm, groups of 8 rows
 * with one transposing reduction) above 256 KB of weights: on Zen 5 that
 * one streams a step from DRAM at 71-75% of the DRAM probe, this one at
 * 94-100% (gpt2-small and stories15M shapes, bench_model, same run,
 * 2026-12-03). From L2 the ymm GEMV needs 2 loads per 8-float FMA (w and x)
 * and ~140 cycles per 768-float row, about two thirds of the time a 41 GB/s
 * stream allows; here half as many instructions. Software prefetch (256 B
 * to 4 KB ahead, T0/T1/NTA) gained nothing measurable and T0 at 1 KB lost
 * ~18%, so there is none. (On Zen 4 at ~24 GB/s the ymm GEMV streamed ~8%
 * faster than a zmm one; re-measure there before relying on this.) */
static void gemv_stream(float *y, const float *x, const float *w, const float *b, int in, int o0,
                        int o1) {
    for (int o = o0; o < o1; o++) {
        const float *wo = w + (size_t)o * in;
        __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        int i = 0;
        for (; i + 64 <= in; i += 64) {
            a0 = _mm512_fmadd_ps(_mm512_loadu_ps(wo + i), _mm512_loadu_ps(x + i), a0);
            a1 = _mm512_fmadd_ps(_mm512_loadu_ps(wo + i + 16), _mm512_loadu_ps(x + i + 16), a1);
            a2 = _mm512_fmadd_ps(_mm512_loadu_ps(wo + i + 32), _mm512_loadu_ps(x + i + 32), a2);
            a3 = _mm512_fmadd_ps(_mm512_loadu_ps(wo + i + 48), _mm512_loadu_ps(x + i + 48), a3);
        }
        for (; i + 16 <= in; i += 16)
            a0 = _mm512_fmadd_ps(_mm512_loadu_ps(wo + i), _mm512_loadu_ps(x + i), a0);
        if (i < in) { /* tail: 1..15 floats */
            __mmask16 m = (__mmask16)((1u << (in - i)) - 1u);
            a1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, wo + i), _mm512_maskz_loadu_ps(m, x + i), a1);
        }
        float v = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
        y[o] = b ? v + b[o] : v;
    }
}

/* weights above this many floats (256 KB) take gemv_stream: every matrix
 * of gpt2-small and of stories15M, none of the tiny models' (<= 128 x 512) */
#define GEMV_STREAM_MIN ((size_t)1 << 16)

/* The decode GEMV (T = 1) by size alone (never by o0/o1): short rows from
 * cache on matmul_tmpl.h's zmm GEMV, big matrices on gemv_stream, the rest
 * (rows of 129..512 floats in at most 256 KB) on AVX2's. */
void tg_matmul_avx512(float *y, const float *x, const float *w, const float *b, int T, int in,
                      int out, int o0, int o1) {
    size_t n = (size_t)in * (size_t)out;
    if (T == 1 && in <= 128 && n <= GEMV_STREAM_MIN)
        matmul_by_shape(ukernels, y, x, w, b, T, in, out, o0, o1); /* short rows from cache */
    else if (T == 1 && n > GEMV_STREAM_MIN && in > 0)
        gemv_stream(y, x, w, b, in, o0, o1);
    else if (T == 1)
        tg_matmul_avx2(y, x, w, b, T, in, out, o0, o1);
    else
        matmul_by_shape(ukernels, y, x, w, b, T, in, out, o0, o1);
}

/* F16 (h16) / BF16 weights, T > 1 (x86.h) */
void tg_matmul_half_avx512(int h16, float *y, const float *x, const void *w, size_t ldw,
                           const float *b, int T, int in, int out, int o0, int o1, void *ws) {
    matmul_half_by_shape(ukernels, h16, y, x, w, ldw, b, T, in, out, o0, o1, ws);
}

/* the f32 column of the typed table (ldw == 4·IN) */
static void matmul_f32_w(float *y, const void *x, const void *w, size_t ldw, const float *b,
                         int T, int in, int out, int o0, int o1, void *ws) {
    (void)ldw, (void)ws;
    tg_matmul_avx512(y, x, w, b, T, in, out, o0, o1);
}

/* The F16 and BF16 columns of the AVX-512 table, on AVX-512F/BW alone: the
 * decode on tg_gemv_half_avx512 (below), T > 1 on this file's f32 GEMM
 * with W widened in its packing (matmul_tmpl.h). They used to come with
 * the AVX512-VNNI step (quant_avx512.c), so an AVX-512 CPU without VNNI
 * (Skylake-X) kept AVX2's: the ymm GEMM, while its f32 ran this one.
 * Under TINYGPT_CPU_MASK=avx512_vnni,avx512_bf16,avx_vnni on Zen 5 that
 * made an f16/bf16 gpt2 prefill 0.56-0.60x of f32 (bench/README.md,
 * twelfth session, sk). AVX512-BF16 replaces the BF16 column's GEMM
 * (bf16_avx512.c). */
static void matmul_f16_w(float *y, const void *x, const void *w, size_t ldw, const float *b,
                         int T, int in, int out, int o0, int o1, void *ws) {
    if (T == 1) tg_gemv_half_avx512(1, y, x, w, ldw, b, in, o0, o1);
    else tg_matmul_half_avx512(1, y, x, w, ldw, b, T, in, out, o0, o1, ws);
}
static void matmul_bf16_w(float *y, const void *x, const void *w, size_t ldw, const float *b,
                          int T, int in, int out, int o0, int o1, void *ws) {
    if (T == 1) tg_gemv_half_avx512(0, y, x, w, ldw, b, in, o0, o1);
    else tg_matmul_half_avx512(0, y, x, w, ldw, b, T, in, out, o0, o1, ws);
}

void tg_kernels_init_matmul_avx512(tg_kernels *k) {
    k->matmul = tg_matmul_avx512;
    k->matmul_w[TG_WTYPE_F32] = matmul_f32_w;
    k->matmul_w[TG_WTYPE_F16] = matmul_f16_w;
    k->matmul_w[TG_WTYPE_BF16] = matmul_bf16_w;
}

/* ---- the F16/BF16 decode GEMV on zmm ------------------------------------------------
 *
 * y[o0..o1) = W · x for one token, W in IEEE half (h16) or bfloat16: 16
 * weights (32 bytes) widened exactly to a zmm per step (vcvtph2ps; a
 * bfloat16 by a 16-bit shift), four FMA chains, the tail of IN % 16 under
 * a mask (nothing past the row is read). The ymm GEMV (quant_tmpl.h's
 * gemv_half) needs twice the instructions and is compute-bound at ~47
 * GB/s from L2 on Zen 5, too close to DRAM's ~30 to stream at its rate.
 * Each row is computed by the same operations wherever it falls. */
void tg_gemv_half_avx512(int h16, float *y, const float *x, const void *w, size_t ldw,
                         const float *b, int in, int o0, int o1) {
    const __mmask16 all = 0xffff;
    for (int o = o0; o < o1; o++) {
        const uint16_t *wo = (const uint16_t *)((const char *)w + (size_t)o * ldw);
        __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        int i = 0;
        for (; i + 64 <= in; i += 64) {
            a0 = _mm512_fmadd_ps(load16_half(h16, wo + i, all), _mm512_loadu_ps(x + i), a0);
            a1 = _mm512_fmadd_ps(load16_half(h16, wo + i + 16, all), _mm512_loadu_ps(x + i + 16), a1);
            a2 = _mm512_fmadd_ps(load16_half(h16, wo + i + 32, all), _mm512_loadu_ps(x + i + 32), a2);
            a3 = _mm512_fmadd_ps(load16_half(h16, wo + i + 48, all), _mm512_loadu_ps(x + i + 48), a3);
        }
        for (; i + 16 <= in; i += 16)
            a0 = _mm512_fmadd_ps(load16_half(h16, wo + i, all), _mm512_loadu_ps(x + i), a0);
        if (i < in) { /* tail: 1..15 */
            __mmask16 m = (__mmask16)((1u << (in - i)) - 1u);
            a1 = _mm512_fmadd_ps(load16_half(h16, wo + i, m), _mm512_maskz_loadu_ps(m, x + i), a1);
        }
        float v = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
        y[o] = b ? v + b[o] : v;
    }
}
