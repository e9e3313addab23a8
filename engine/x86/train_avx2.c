/* train_avx2.c — the training kernels with AVX2 + FMA: a packed GEMM
 * (6×16 register tile, panels of A and B packed from any strides) and the
 * shared template's backward of layernorm, GELU and softmax, AdamW. */
#include <immintrin.h>
#include <string.h>

#include "engine/x86/x86.h"
#include "engine/x86/vec_avx2.h"

/* GEMM blocking: MR×NR register tile, KC deep slices, MC×KC block of A in
 * L2, KC×NC panel of B. */
enum { MR = 6, NR = 16, KC = 256, MC = 96, NC = 256 };
_Static_assert(MC % MR == 0 && NC % NR == 0, "blocks hold whole tiles");
_Static_assert(MC * KC + KC * NC <= TG_GEMM_WS, "TG_GEMM_WS holds the packed panels");

/* dst = A[mc,kc] as ceil(mc/MR) panels of kc columns of MR values, zero-padded */
static void pack_a(float *dst, const float *a, ptrdiff_t rsa, ptrdiff_t csa, int mc, int kc) {
    for (int i = 0; i < mc; i += MR) {
        int mr = mc - i < MR ? mc - i : MR;
        const float *ai = a + i * rsa;
        for (int k = 0; k < kc; k++) {
            const float *src = ai + k * csa;
            int r = 0;
            for (; r < mr; r++) dst[r] = src[r * rsa];
            for (; r < MR; r++) dst[r] = 0.0f;
            dst += MR;
        }
    }
}

/* dst = B[kc,nc] as ceil(nc/NR) panels of kc rows of NR values, zero-padded */
static void pack_b(float *dst, const float *b, ptrdiff_t rsb, ptrdiff_t csb, int kc, int nc) {
    for (int j = 0; j < nc; j += NR) {
        int nr = nc - j < NR ? nc - j : NR;
        const float *bj = b + j * csb;
        for (int k = 0; k < kc; k++) {
            const float *src = bj + k * rsb;
            if (csb == 1 && nr == NR) {
                _mm256_storeu_ps(dst, _mm256_loadu_ps(src));
                _mm256_storeu_ps(dst + 8, _mm256_loadu_ps(src + 8));
            } else {
                int c = 0;
                for (; c < nr; c++) dst[c] = src[c * csb];
                for (; c < NR; c++) dst[c] = 0.0f;
            }
            dst += NR;
        }
    }
}

/* c[MR,NR] (rows ldc apart) = (load ? c : 0) + pa[kc,MR]ᵀ·pb[kc,NR], one FMA chain per element */
static void tile_6x16(int kc, const float *pa, const float *pb, float *c, ptrdiff_t ldc, int load) {
    __m256 c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51;
    if (load) {
        c00 = _mm256_loadu_ps(c + 0 * ldc), c01 = _mm256_loadu_ps(c + 0 * ldc + 8);
        c10 = _mm256_loadu_ps(c + 1 * ldc), c11 = _mm256_loadu_ps(c + 1 * ldc + 8);
        c20 = _mm256_loadu_ps(c + 2 * ldc), c21 = _mm256_loadu_ps(c + 2 * ldc + 8);
        c30 = _mm256_loadu_ps(c + 3 * ldc), c31 = _mm256_loadu_ps(c + 3 * ldc + 8);
        c40 = _mm256_loadu_ps(c + 4 * ldc), c41 = _mm256_loadu_ps(c + 4 * ldc + 8);
        c50 = _mm256_loadu_ps(c + 5 * ldc), c51 = _mm256_loadu_ps(c + 5 * ldc + 8);
    } else {
        c00 = c01 = c10 = c11 = c20 = c21 = _mm256_setzero_ps();
        c30 = c31 = c40 = c41 = c50 = c51 = _mm256_setzero_ps();
    }
    for (int k = 0; k < kc; k++, pa += MR, pb += NR) {
        __m256 b0 = _mm256_loadu_ps(pb), b1 = _mm256_loadu_ps(pb + 8), a;
        a = _mm256_broadcast_ss(pa + 0);
        c00 = _mm256_fmadd_ps(a, b0, c00), c01 = _mm256_fmadd_ps(a, b1, c01);
        a = _mm256_broadcast_ss(pa + 1);
        c10 = _mm256_fmadd_ps(a, b0, c10), c11 = _mm256_fmadd_ps(a, b1, c11);
        a = _mm256_broadcast_ss(pa + 2);
        c20 = _mm256_fmadd_ps(a, b0, c20), c21 = _mm256_fmadd_ps(a, b1, c21);
        a = _mm256_broadcast_ss(pa + 3);
        c30 = _mm256_fmadd_ps(a, b0, c30), c31 = _mm256_fmadd_ps(a, b1, c31);
        a = _mm256_broadcast_ss(pa + 4);
        c40 = _mm256_fmadd_ps(a, b0, c40), c41 = _mm256_fmadd_ps(a, b1, c41);
        a = _mm256_broadcast_ss(pa + 5);
        c50 = _mm256_fmadd_ps(a, b0, c50), c51 = _mm256_fmadd_ps(a, b1, c51);
    }
    _mm256_storeu_ps(c + 0 * ldc, c00), _mm256_storeu_ps(c + 0 * ldc + 8, c01);
    _mm256_storeu_ps(c + 1 * ldc, c10), _mm256_storeu_ps(c + 1 * ldc + 8, c11);
    _mm256_storeu_ps(c + 2 * ldc, c20), _mm256_storeu_ps(c + 2 * ldc + 8, c21);
    _mm256_storeu_ps(c + 3 * ldc, c30), _mm256_storeu_ps(c + 3 * ldc + 8, c31);
    _mm256_storeu_ps(c + 4 * ldc, c40), _mm256_storeu_ps(c + 4 * ldc + 8, c41);
    _mm256_storeu_ps(c + 5 * ldc, c50), _mm256_storeu_ps(c + 5 * ldc + 8, c51);
}

/* A partial tile (mr < MR or nr < NR) goes through a full tile on the stack. */
static void tile_edge(int kc, const float *pa, const float *pb, float *c, int ldc, int mr,
                      int nr, int load) {
    float t[MR * NR];
    if (load)
        for (int r = 0; r < mr; r++) memcpy(t + r * NR, c + (size_t)r * ldc, sizeof(float) * nr);
    tile_6x16(kc, pa, pb, t, NR, load);
    for (int r = 0; r < mr; r++) memcpy(c + (size_t)r * ldc, t + r * NR, sizeof(float) * nr);
}

static void gemm_avx2(float *c, int ldc, const float *a, ptrdiff_t rsa, ptrdiff_t csa,
                      const float *b, ptrdiff_t rsb, ptrdiff_t csb, int M, int N, int K,
                      int m0, int m1, int acc, float *ws) {
    (void)M;
    if (K == 0) {
        if (!acc)
            for (int m = m0; m < m1; m++) memset(c + (size_t)m * ldc, 0, sizeof(float) * N);
        return;
    }
    float *pa = ws, *pb = ws + MC * KC;
    for (int jc = 0; jc < N; jc += NC) {
        int nc = N - jc < NC ? N - jc : NC;
        for (int pc = 0; pc < K; pc += KC) {
            int kc = K - pc < KC ? K - pc : KC;
            int load = acc || pc > 0;
            pack_b(pb, b + pc * rsb + jc * csb, rsb, csb, kc, nc);
            for (int ic = m0; ic < m1; ic += MC) {
                int mc = m1 - ic < MC ? m1 - ic : MC;
                pack_a(pa, a + ic * rsa + pc * csa, rsa, csa, mc, kc);
                for (int jr = 0; jr < nc; jr += NR) {
                    int nr = nc - jr < NR ? nc - jr : NR;
                    const float *pbj = pb + (size_t)jr * kc;
                    for (int ir = 0; ir < mc; ir += MR) {
                        int mr = mc - ir < MR ? mc - ir : MR;
                        float *cij = c + (size_t)(ic + ir) * ldc + jc + jr;
                        const float *pai = pa + (size_t)ir * kc;
                        if (mr == MR && nr == NR)
                            tile_6x16(kc, pai, pbj, cij, ldc, load);
                        else
                            tile_edge(kc, pai, pbj, cij, ldc, mr, nr, load);
                    }
                }
            }
        }
    }
}

#include "engine/simd/train_tmpl.h"

void tg_kernels_init_train_avx2(tg_kernels *k) {
    init_train_tmpl_avx2(k);
    k->gemm = gemm_avx2;
}
