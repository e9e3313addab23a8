/* tile_neon.h — the 8 × 12 GEMM register tile shared by the inference matmul
 * (matmul_neon.c) and the training GEMM (train_neon.c). Include only from
 * engine/arm/ files.
 *
 * Panels: xp[kc][MR] (MR rows of the left operand, k-major) and wp[kc][NR]
 * (NR columns of the right one, k-major). Per k: two loads of x, three of w,
 * 24 lane-indexed FMAs into 24 of the 32 vector registers. Every output is
 * one lane of one accumulator fed k = 0..kc-1 in order. */
#ifndef TINYGPT_TILE_NEON_H
#define TINYGPT_TILE_NEON_H

#include <arm_neon.h>
#include <stdalign.h>
#include <stddef.h>
#include <string.h>

#define MR 8  /* rows per register tile: two vectors of x per k */
#define NR 12 /* columns per register tile: three vectors of w per k */

/* c[MR,NR] (rows ldc apart) = (load ? c : 0) + xp[kc][MR]ᵀ · wp[kc][NR]
 * (+ b[NR] at the end when b is given). */
static inline void tile_8x12(const float *xp, const float *wp, int kc, float *c, size_t ldc,
                             int load, const float *b) {
    float32x4_t acc[MR][3];
    for (int r = 0; r < MR; r++)
        for (int j = 0; j < 3; j++)
            acc[r][j] = load ? vld1q_f32(c + r * ldc + 4 * j) : vdupq_n_f32(0.0f);
    for (int k = 0; k < kc; k++, xp += MR, wp += NR) {
        const float32x4_t w0 = vld1q_f32(wp), w1 = vld1q_f32(wp + 4), w2 = vld1q_f32(wp + 8);
        const float32x4_t xa = vld1q_f32(xp), xb = vld1q_f32(xp + 4);
#define TILE_ROW(r, xv, lane)                                     \
    acc[r][0] = vfmaq_laneq_f32(acc[r][0], w0, xv, lane);         \
    acc[r][1] = vfmaq_laneq_f32(acc[r][1], w1, xv, lane);         \
    acc[r][2] = vfmaq_laneq_f32(acc[r][2], w2, xv, lane)
        TILE_ROW(0, xa, 0); TILE_ROW(1, xa, 1); TILE_ROW(2, xa, 2); TILE_ROW(3, xa, 3);
        TILE_ROW(4, xb, 0); TILE_ROW(5, xb, 1); TILE_ROW(6, xb, 2); TILE_ROW(7, xb, 3);
#undef TILE_ROW
    }
    if (b) {
        const float32x4_t b0 = vld1q_f32(b), b1 = vld1q_f32(b + 4), b2 = vld1q_f32(b + 8);
        for (int r = 0; r < MR; r++) {
            acc[r][0] = vaddq_f32(acc[r][0], b0);
            acc[r][1] = vaddq_f32(acc[r][1], b1);
            acc[r][2] = vaddq_f32(acc[r][2], b2);
        }
    }
    for (int r = 0; r < MR; r++)
        for (int j = 0; j < 3; j++) vst1q_f32(c + r * ldc + 4 * j, acc[r][j]);
}

/* A tile cut short (mr < MR rows or nr < NR columns): the same tile on a
 * scratch copy, so nothing outside c[mr][nr] (or b[nr]) is read or written,
 * and each element gets exactly the operations a full tile would give it. */
static inline void tile_edge(const float *xp, const float *wp, int kc, float *c, size_t ldc,
                             int mr, int nr, int load, const float *b) {
    alignas(16) float t[MR * NR] = {0};
    alignas(16) float bpad[NR] = {0};
    if (load)
        for (int r = 0; r < mr; r++) memcpy(t + r * NR, c + r * ldc, (size_t)nr * sizeof(float));
    if (b) memcpy(bpad, b, (size_t)nr * sizeof(float));
    tile_8x12(xp, wp, kc, t, NR, load, b ? bpad : NULL);
    for (int r = 0; r < mr; r++) memcpy(c + r * ldc, t + r * NR, (size_t)nr * sizeof(float));
}

#endif
