/* train_neon.c — the training kernels with aarch64 Advanced SIMD: the
 * general-stride GEMM (panels of A and B packed from any strides into the
 * 8 × 12 register tile of tile_neon.h) and the shared template's backward of
 * layernorm, GELU and softmax, AdamW. */
#include <arm_neon.h>
#include <string.h>

#include "engine/arm/arm.h"
#include "engine/arm/tile_neon.h"
#include "engine/arm/vec_neon.h"
#include "engine/simd/gemm_tri.h"

/* GEMM blocking: KC deep slices, an MC × KC block of A (L2), a KC × NC
 * panel of B. */
enum { KC = 256, MC = 96, NC = 252 };
_Static_assert(MC % MR == 0 && NC % NR == 0, "blocks hold whole tiles");
_Static_assert(MC * KC + KC * NC <= TG_GEMM_WS, "TG_GEMM_WS holds the packed panels");

/* dst = A[mc,kc] as ceil(mc/MR) panels [kc][MR], zero-padded */
static void pack_a(float *dst, const float *a, ptrdiff_t rsa, ptrdiff_t csa, int mc, int kc) {
    for (int i = 0; i < mc; i += MR) {
        const int mr = mc - i < MR ? mc - i : MR;
        const float *ai = a + i * rsa;
        for (int k = 0; k < kc; k++, dst += MR) {
            const float *src = ai + k * csa;
            int r = 0;
            for (; r < mr; r++) dst[r] = src[r * rsa];
            for (; r < MR; r++) dst[r] = 0.0f;
        }
    }
}

/* dst = B[kc,nc] as ceil(nc/NR) panels [kc][NR], zero-padded */
static void pack_b(float *dst, const float *b, ptrdiff_t rsb, ptrdiff_t csb, int kc, int nc) {
    for (int j = 0; j < nc; j += NR) {
        const int nr = nc - j < NR ? nc - j : NR;
        const float *bj = b + j * csb;
        for (int k = 0; k < kc; k++, dst += NR) {
            const float *src = bj + k * rsb;
            if (csb == 1 && nr == NR) {
                vst1q_f32(dst, vld1q_f32(src));
                vst1q_f32(dst + 4, vld1q_f32(src + 4));
                vst1q_f32(dst + 8, vld1q_f32(src + 8));
            } else {
                int c = 0;
                for (; c < nr; c++) dst[c] = src[c * csb];
                for (; c < NR; c++) dst[c] = 0.0f;
            }
        }
    }
}

/* A tile whose rows may write only part of their columns (a lower C, cut
 * at the diagonal): the full tile on a scratch copy, then each row's share. */
static void tile_tri(const float *pa, const float *pb, int kc, float *c, size_t ldc, int mr,
                     int nr, int load, int tri, int mf, int nf) {
    alignas(16) float t[MR * NR] = {0};
    if (load)
        for (int r = 0; r < mr; r++)
            memcpy(t + r * NR, c + r * ldc, sizeof(float) * tri_row_cols(tri, mf + r, nf, nr));
    tile_8x12(pa, pb, kc, t, NR, load, NULL);
    for (int r = 0; r < mr; r++)
        memcpy(c + r * ldc, t + r * NR, sizeof(float) * tri_row_cols(tri, mf + r, nf, nr));
}

/* C[M,N] = (C, bias or 0) + A[M,K]·B[K,N], rows m0..m1-1, triangular cases
 * as in engine.h (see engine/simd/gemm_tri.h). Each element is one FMA chain
 * over k ascending from its start value (later K slices reload it from C),
 * whatever m0/m1. A bias start (or K = 0) is written into C first. */
static void gemm_neon(float *c, int ldc, const float *a, ptrdiff_t rsa, ptrdiff_t csa,
                      const float *b, ptrdiff_t rsb, ptrdiff_t csb, int M, int N, int K,
                      int tri, int m0, int m1, int acc, const float *bias, float *ws) {
    (void)M;
    if (tri == TG_TRI_C_LOWER && N > m1) N = m1; /* columns no row reaches */
    if (!acc && (bias || K == 0)) { /* the start value, written once */
        for (int m = m0; m < m1; m++) {
            float *cm = c + (size_t)m * ldc;
            const int n = tri_row_cols(tri, m, 0, N);
            if (bias)
                memcpy(cm, bias, sizeof(float) * n);
            else
                memset(cm, 0, sizeof(float) * n);
        }
        acc = 1;
    }
    if (K == 0) return;
    float *pa = ws, *pb = ws + MC * KC;
    for (int jc = 0; jc < N; jc += NC) {
        const int nc = N - jc < NC ? N - jc : NC;
        for (int pc = 0; pc < K; pc += KC) {
            const int kc = K - pc < KC ? K - pc : KC;
            const int load = acc || pc > 0;
            pack_b(pb, b + pc * rsb + jc * csb, rsb, csb, kc, nc);
            for (int ic = m0; ic < m1; ic += MC) {
                const int mc = m1 - ic < MC ? m1 - ic : MC;
                int klo, khi; /* the part of the slice this block of rows uses */
                tri_krange(tri, pc, kc, ic, ic + mc - 1, &klo, &khi);
                const int kp = khi - klo;
                pack_a(pa, a + ic * rsa + (pc + klo) * csa, rsa, csa, mc, kp);
                for (int i = 0; i < mc; i += MR)
                    tri_mask_panel(pa + (size_t)i * kp, MR, tri, ic + i,
                                   mc - i < MR ? mc - i : MR, pc + klo, kp);
                for (int jr = 0; jr < nc; jr += NR) {
                    const int nr = nc - jr < NR ? nc - jr : NR;
                    for (int ir = 0; ir < mc; ir += MR) {
                        const int mr = mc - ir < MR ? mc - ir : MR;
                        const int mf = ic + ir, nf = jc + jr;
                        if (tri == TG_TRI_C_LOWER && nf > mf + mr - 1) continue; /* above */
                        int ks, ke; /* this tile's k range, within [klo, khi) */
                        tri_krange(tri, pc, kc, mf, mf + mr - 1, &ks, &ke);
                        ks = tri_clamp(ks, klo, khi), ke = tri_clamp(ke, ks, khi);
                        float *cij = c + (size_t)mf * ldc + nf;
                        const float *pai = pa + (size_t)ir * kp + (size_t)(ks - klo) * MR;
                        const float *pbj = pb + (size_t)jr * kc + (size_t)ks * NR;
                        if (tri_row_cols(tri, mf, nf, nr) < nr)
                            tile_tri(pai, pbj, ke - ks, cij, (size_t)ldc, mr, nr, load, tri, mf, nf);
                        else if (mr == MR && nr == NR)
                            tile_8x12(pai, pbj, ke - ks, cij, (size_t)ldc, load, NULL);
                        else
                            tile_edge(pai, pbj, ke - ks, cij, (size_t)ldc, mr, nr, load, NULL);
                    }
                }
            }
        }
    }
}

#include "engine/simd/train_tmpl.h"

void tg_kernels_init_train_neon(tg_kernels *k) {
    init_train_tmpl_neon(k);
    k->gemm = gemm_neon;
}
