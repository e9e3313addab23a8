/* gemm_tri.h — the causal (triangular) cases of the training gemm, shared by
 * the packed drivers (engine/x86/train_gemm_tmpl.h, engine/arm/train_neon.c):
 * which k a tile of rows may use, the zeros a packed A panel needs, and how
 * many columns of a row a tile on the diagonal may write. Plain C. */
#ifndef TINYGPT_GEMM_TRI_H
#define TINYGPT_GEMM_TRI_H

#include <stddef.h>

#include "engine/engine.h"

static inline int tri_clamp(int x, int lo, int hi) { return x < lo ? lo : x > hi ? hi : x; }

/* The k range [*lo, *hi) of the slice [pc, pc + kc), as offsets into it,
 * that rows mf..ml may use: all of it, k <= m (A lower) or k >= m (A upper). */
static inline void tri_krange(int tri, int pc, int kc, int mf, int ml, int *lo, int *hi) {
    *lo = 0, *hi = kc;
    if (tri == TG_TRI_A_LOWER) *hi = tri_clamp(ml + 1 - pc, 0, kc);
    if (tri == TG_TRI_A_UPPER) *lo = tri_clamp(mf - pc, 0, kc);
}

/* p[kp][W] packs rows mf..mf+live-1 of A for k = k0..k0+kp-1. Zero the
 * entries a triangular A does not have (k > m, or k < m) among those the
 * panel's own tile reads (k <= its last row, or k >= its first row), so
 * whatever the memory there holds never enters a sum. */
static inline void tri_mask_panel(float *p, int W, int tri, int mf, int live, int k0, int kp) {
    for (int r = 0; r < live; r++) {
        const int m = mf + r;
        int k1 = 0, k2 = 0; /* zero k in [k1, k2) */
        if (tri == TG_TRI_A_LOWER) k1 = m + 1, k2 = mf + live;
        if (tri == TG_TRI_A_UPPER) k1 = mf, k2 = m;
        k1 = tri_clamp(k1, k0, k0 + kp), k2 = tri_clamp(k2, k0, k0 + kp);
        for (int k = k1; k < k2; k++) p[(size_t)(k - k0) * W + r] = 0.0f;
    }
}

/* Columns of row m that a tile starting at column nf with nr columns may
 * write: all nr, or (C lower) only n <= m. */
static inline int tri_row_cols(int tri, int m, int nf, int nr) {
    return tri == TG_TRI_C_LOWER ? tri_clamp(m - nf + 1, 0, nr) : nr;
}

#endif
