/* train_gemm_tmpl.h — the training gemm (engine.h: C[M,N] = start + A·B with
 * any strides, rows m0..m1-1) written once for x86 over the SIMD vocabulary of a
 * vec_<isa>.h (VL, vf, vld, vst, vbcast, vfma, vzero, ISA_SUFFIX) and
 * included by train_avx2.c and train_avx512.c after defining
 *
 *   MR   rows of the MR × NR register tile (NR = 2·VL columns)
 *
 * Goto/BLIS blocking as in matmul_tmpl.h: a KC × NC panel of B and an
 * MC × KC block of A are packed into NR-column and MR-row micro-panels
 * (k-major, zero-padded), and the tile accumulates over k with broadcasts of
 * A and loads of B. Packing reads either operand in either orientation; the
 * orientations that need a transpose (A with rows contiguous in k, B with
 * columns contiguous in k: X and Wᵀ of the forward, Q and Kᵀ of attention)
 * go through 8 × 8 AVX transposes instead of one scalar per element.
 *
 * Every C element is one lane of one accumulator that starts from C, the
 * bias or 0 and is fed k = 0..K-1 in order (later KC slices reload the
 * partial sum from C), so the result does not
 * depend on m0/m1 — and is the same on every ISA built from this file. */
#include <string.h>

#include "engine/simd/gemm_tri.h"
#include "engine/x86/tr8_avx.h"

#ifndef FN
#define TG_CAT_(a, b) a##_##b
#define TG_CAT(a, b) TG_CAT_(a, b)
#define FN(name) TG_CAT(name, ISA_SUFFIX)
#endif

#define NR (2 * VL)
enum { KC = 256, MC = 96, NC = 256 }; /* B panel KC·NC (L2), A block MC·KC (L2) */
_Static_assert(MC % MR == 0 && NC % NR == 0, "blocks hold whole tiles");
_Static_assert(MC * KC + KC * NC <= TG_GEMM_WS, "TG_GEMM_WS holds the packed panels");

#define ALWAYS_INLINE static inline __attribute__((always_inline))
/* unroll the row loops early, so the accumulator arrays become registers */
#define UNROLL _Pragma("GCC unroll 16")

/* dst[kc][W] (W = MR or NR) = the `live` <= W lines of a strided operand,
 * line l starting at src + l·ls, element k of a line at k·es; lines past
 * `live` are zero. Lines contiguous in k (es == 1) are transposed 8 at a
 * time; lines contiguous across (ls == 1) are copied W floats per k. */
ALWAYS_INLINE void FN(pack)(int W, float *dst, const float *src, ptrdiff_t ls, ptrdiff_t es,
                            int live, int kc) {
    int k = 0;
    if (live == W && ls == 1) {
        for (; k < kc; k++) memcpy(dst + (size_t)k * W, src + k * es, sizeof(float) * W);
        return;
    }
    if (live == W && es == 1 && W % 8 == 0) {
        for (; k + 8 <= kc; k += 8)
            for (int l0 = 0; l0 < W; l0 += 8) {
                const float *r[8];
                for (int j = 0; j < 8; j++) r[j] = src + (l0 + j) * ls;
                tg_tr8_avx(dst + (size_t)k * W + l0, (size_t)W, r, k);
            }
    }
    for (; k < kc; k++) { /* the general case, and the last kc % 8 steps */
        float *d = dst + (size_t)k * W;
        int l = 0;
        for (; l < live; l++) d[l] = src[l * ls + k * es];
        for (; l < W; l++) d[l] = 0.0f;
    }
}

/* c[MR,NR] (rows ldc apart) = (load ? c : bias ? bias[NR] : 0) + pa[kc][MR]ᵀ · pb[kc][NR] */
ALWAYS_INLINE void FN(tile)(int kc, const float *pa, const float *pb, float *c, size_t ldc,
                            int load, const float *bias) {
    vf c0[MR], c1[MR];
    const vf b0 = bias ? vld(bias) : vzero(), b1 = bias ? vld(bias + VL) : vzero();
    UNROLL
    for (int r = 0; r < MR; r++) {
        c0[r] = load ? vld(c + r * ldc) : b0;
        c1[r] = load ? vld(c + r * ldc + VL) : b1;
    }
    for (int k = 0; k < kc; k++, pa += MR, pb += NR) {
        vf b0 = vld(pb), b1 = vld(pb + VL);
        UNROLL
        for (int r = 0; r < MR; r++) {
            vf a = vbcast(pa + r);
            c0[r] = vfma(a, b0, c0[r]);
            c1[r] = vfma(a, b1, c1[r]);
        }
    }
    UNROLL
    for (int r = 0; r < MR; r++) {
        vst(c + r * ldc, c0[r]);
        vst(c + r * ldc + VL, c1[r]);
    }
}

static void FN(tile_full)(int kc, const float *pa, const float *pb, float *c, size_t ldc,
                          int load, const float *bias) {
    FN(tile)(kc, pa, pb, c, ldc, load, bias);
}

/* A partial tile (mr < MR rows, nr < NR columns, or a row's columns cut at
 * the diagonal by tri) goes through a full one on the stack (the bias too),
 * so nothing outside what it may write is read or written. Row r's columns
 * start at nf; m = mf + r. */
static void FN(tile_edge)(int kc, const float *pa, const float *pb, float *c, size_t ldc,
                          int mr, int nr, int load, const float *bias, int tri, int mf, int nf) {
    float t[MR * NR] = {0}, bt[NR] = {0};
    if (load)
        for (int r = 0; r < mr; r++)
            memcpy(t + r * NR, c + r * ldc, sizeof(float) * tri_row_cols(tri, mf + r, nf, nr));
    if (bias) memcpy(bt, bias, sizeof(float) * nr);
    FN(tile)(kc, pa, pb, t, NR, load, bias ? bt : NULL);
    for (int r = 0; r < mr; r++)
        memcpy(c + r * ldc, t + r * NR, sizeof(float) * tri_row_cols(tri, mf + r, nf, nr));
}

/* C[M,N] = (C, bias or 0) + A[M,K]·B[K,N], rows m0..m1-1, triangular cases
 * (engine.h): a tile above the diagonal of a lower C is skipped, one across
 * it writes only its lower part; a triangular A is packed over the k its
 * block of rows can use, with the missing entries zeroed, and each tile
 * runs over its rows' k range only. */
static void FN(gemm)(float *c, int ldc, const float *a, ptrdiff_t rsa, ptrdiff_t csa,
                     const float *b, ptrdiff_t rsb, ptrdiff_t csb, int M, int N, int K, int tri,
                     int m0, int m1, int acc, const float *bias, float *ws) {
    (void)M;
    if (tri == TG_TRI_C_LOWER && N > m1) N = m1; /* columns no row reaches */
    if (K == 0) {
        if (!acc)
            for (int m = m0; m < m1; m++)
                for (int n = 0; n < tri_row_cols(tri, m, 0, N); n++)
                    c[(size_t)m * ldc + n] = bias ? bias[n] : 0.0f;
        return;
    }
    float *pa = ws, *pb = ws + MC * KC;
    for (int jc = 0; jc < N; jc += NC) {
        const int nc = N - jc < NC ? N - jc : NC;
        for (int pc = 0; pc < K; pc += KC) {
            const int kc = K - pc < KC ? K - pc : KC;
            const int load = acc || pc > 0;
            for (int j = 0; j < nc; j += NR) /* B's columns are its lines */
                FN(pack)(NR, pb + (size_t)j * kc, b + pc * rsb + (jc + j) * csb, csb, rsb,
                         nc - j < NR ? nc - j : NR, kc);
            for (int ic = m0; ic < m1; ic += MC) {
                const int mc = m1 - ic < MC ? m1 - ic : MC;
                int klo, khi; /* the part of the slice this block of rows uses */
                tri_krange(tri, pc, kc, ic, ic + mc - 1, &klo, &khi);
                const int kp = khi - klo;
                for (int i = 0; i < mc; i += MR) { /* A's rows are its lines */
                    const int live = mc - i < MR ? mc - i : MR;
                    float *pai = pa + (size_t)i * kp;
                    FN(pack)(MR, pai, a + (ic + i) * rsa + (pc + klo) * csa, rsa, csa, live, kp);
                    tri_mask_panel(pai, MR, tri, ic + i, live, pc + klo, kp);
                }
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
                        const float *bj = bias ? bias + nf : NULL;
                        if (mr == MR && nr == NR && tri_row_cols(tri, mf, nf, nr) == nr)
                            FN(tile_full)(ke - ks, pai, pbj, cij, (size_t)ldc, load, bj);
                        else
                            FN(tile_edge)(ke - ks, pai, pbj, cij, (size_t)ldc, mr, nr, load, bj,
                                          tri, mf, nf);
                    }
                }
            }
        }
    }
}
