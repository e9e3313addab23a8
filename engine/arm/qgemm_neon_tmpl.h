/* qgemm_neon_tmpl.h — the NEON prefill GEMM of the integer weight types
 * (Q8_0, Q4_0), written once; included by quant_neon_tmpl.h (so by
 * quant_neon.c and quant_neon_dotprod.c) after defining:
 *
 *   qacc               an accumulator of 4 int32 sums, one per weight row
 *   qacc_zero()        a cleared accumulator
 *   qacc_dot(a, w, x, l)  a += for each of 4 rows j: Σ_i w[4j+i] · x[4l+i]
 *                      (w: 4 rows × 4 bytes, x: 16 bytes of a token, l its
 *                      lane of 4 bytes); sdot by lane (vdotq_laneq_s32), or
 *                      vmull_s8 + vpadalq_s16 into two half-sums
 *   qacc_sum(a)        the 4 row sums (int32x4)
 *   QMR                token rows per register tile
 *
 * Y[T,OUT] = Xq[T, IN/32] · W[OUT, IN/32]ᵀ + b, columns o0..o1-1, X in
 * Q8_0 blocks (quantize_q8_0), W in Q8_0 or Q4_0.
 *
 * W is packed per panel of QNR = 8 rows as signed bytes (Q4_0's nibbles
 * unpacked to q - 8): for each block, its 32 bytes as 8 groups of 4, each
 * group 32 bytes = the 8 rows' 4 bytes (two vectors of 4 rows; a 4 × 4
 * dword transpose per 4 rows), then the 8 scales d_w as f32. A token's x is
 * read in place from its block, 16 bytes at a time, and each of its 4-byte
 * lanes multiplies a group: every product is int8 · int8 summed exactly in
 * int32, with no offset to correct.
 *
 * Then per block, as the reference (engine/ref/quant_ref.c) does it, with
 * the same roundings in the same order: acc += (float)sum · (d_w · d_x),
 * blocks in order, then + b. So every output equals the C reference bit for
 * bit, whatever panel, tile or range it falls in (results do not depend on
 * o0/o1 nor on the thread count). Padding rows of a panel are zeros and are
 * never stored. */
#include <stdlib.h>
#include <string.h>

#define QNR 8
#define QPANEL_BLOCK ((size_t)TG_QK * QNR + sizeof(float) * QNR) /* bytes of one block */

/* the 4 × 4 dword transpose: r[j] lane g (row j's group g) -> out[g] lane j */
ALWAYS_INLINE void q_tr4(int8_t *dst, int32x4_t r0, int32x4_t r1, int32x4_t r2, int32x4_t r3) {
    int32x4_t t0 = vtrn1q_s32(r0, r1), t1 = vtrn2q_s32(r0, r1);
    int32x4_t t2 = vtrn1q_s32(r2, r3), t3 = vtrn2q_s32(r2, r3);
    int64x2_t u0 = vreinterpretq_s64_s32(t0), u1 = vreinterpretq_s64_s32(t1);
    int64x2_t u2 = vreinterpretq_s64_s32(t2), u3 = vreinterpretq_s64_s32(t3);
    /* groups are QNR·4 = 32 bytes apart */
    vst1q_s8(dst + 0 * 32, vreinterpretq_s8_s64(vtrn1q_s64(u0, u2)));
    vst1q_s8(dst + 1 * 32, vreinterpretq_s8_s64(vtrn1q_s64(u1, u3)));
    vst1q_s8(dst + 2 * 32, vreinterpretq_s8_s64(vtrn2q_s64(u0, u2)));
    vst1q_s8(dst + 3 * 32, vreinterpretq_s8_s64(vtrn2q_s64(u1, u3)));
}

/* panel[nb] blocks = rows r0..r0+nr-1 of W as signed bytes (nr <= QNR; rows
 * past nr are zeros with scale 0) */
ALWAYS_INLINE void q_pack_w(int q4, int8_t *panel, const char *w, size_t ldw, int r0, int nr,
                            int nb) {
    for (int k = 0; k < nb; k++) {
        int8_t *pb = panel + (size_t)k * QPANEL_BLOCK;
        float dw[QNR];
        int32x4_t h[QNR][2]; /* row j's elements 0..15 and 16..31 */
        for (int j = 0; j < QNR; j++) {
            if (j >= nr) {
                h[j][0] = h[j][1] = vdupq_n_s32(0);
                dw[j] = 0.0f;
                continue;
            }
            const char *wr = w + (size_t)(r0 + j) * ldw;
            if (q4) {
                const tg_block_q4_0 *b = (const tg_block_q4_0 *)wr + k;
                uint8x16_t q = vld1q_u8(b->qs);
                int8x16_t lo = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(q, vdupq_n_u8(15))), vdupq_n_s8(8));
                int8x16_t hi = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(q, 4)), vdupq_n_s8(8));
                h[j][0] = vreinterpretq_s32_s8(lo);
                h[j][1] = vreinterpretq_s32_s8(hi);
                dw[j] = h2f(b->d);
            } else {
                const tg_block_q8_0 *b = (const tg_block_q8_0 *)wr + k;
                h[j][0] = vreinterpretq_s32_s8(vld1q_s8(b->qs));
                h[j][1] = vreinterpretq_s32_s8(vld1q_s8(b->qs + 16));
                dw[j] = h2f(b->d);
            }
        }
        for (int half = 0; half < 2; half++) /* groups 4·half .. 4·half+3 */
            for (int j0 = 0; j0 < QNR; j0 += 4)
                q_tr4(pb + (size_t)half * 4 * 32 + 4 * j0, h[j0][half], h[j0 + 1][half],
                      h[j0 + 2][half], h[j0 + 3][half]);
        memcpy(pb + TG_QK * QNR, dw, sizeof dw);
    }
}

/* y[mr, nr] (ldy apart) = X[mr] · panel + b: the register tile. xq: the
 * token rows' Q8_0 blocks (nb apart), xd their scales as f32. */
ALWAYS_INLINE void q_tile(int mr, float *y, size_t ldy, const tg_block_q8_0 *xq, const float *xd,
                          const int8_t *panel, const float *b, int nb, int nr) {
    float32x4_t f[QMR][2];
    for (int r = 0; r < mr; r++) f[r][0] = f[r][1] = vdupq_n_f32(0.0f);
    for (int k = 0; k < nb; k++) {
        const int8_t *pb = panel + (size_t)k * QPANEL_BLOCK;
        qacc a[QMR][2];
        for (int r = 0; r < mr; r++) a[r][0] = a[r][1] = qacc_zero();
        for (int half = 0; half < 2; half++) {
            int8x16_t x[QMR];
            for (int r = 0; r < mr; r++) x[r] = vld1q_s8(xq[(size_t)r * nb + k].qs + 16 * half);
#define Q_GROUP(l)                                                                        \
    do {                                                                                  \
        const int8_t *pg = pb + (size_t)(4 * half + (l)) * 32;                            \
        int8x16_t w0 = vld1q_s8(pg), w1 = vld1q_s8(pg + 16);                              \
        for (int r = 0; r < mr; r++) {                                                    \
            a[r][0] = qacc_dot(a[r][0], w0, x[r], l);                                     \
            a[r][1] = qacc_dot(a[r][1], w1, x[r], l);                                     \
        }                                                                                 \
    } while (0)
            Q_GROUP(0);
            Q_GROUP(1);
            Q_GROUP(2);
            Q_GROUP(3);
#undef Q_GROUP
        }
        const float *dw = (const float *)(pb + TG_QK * QNR);
        float32x4_t d0 = vld1q_f32(dw), d1 = vld1q_f32(dw + 4);
        for (int r = 0; r < mr; r++) { /* the reference's (float)s · (dw · dx), then + */
            float dx = xd[(size_t)r * nb + k];
            f[r][0] = vaddq_f32(f[r][0], vmulq_f32(vcvtq_f32_s32(qacc_sum(a[r][0])), vmulq_n_f32(d0, dx)));
            f[r][1] = vaddq_f32(f[r][1], vmulq_f32(vcvtq_f32_s32(qacc_sum(a[r][1])), vmulq_n_f32(d1, dx)));
        }
    }
    for (int r = 0; r < mr; r++) {
        float *yr = y + (size_t)r * ldy;
        float32x4_t v0 = f[r][0], v1 = f[r][1];
        if (nr == QNR) {
            if (b) v0 = vaddq_f32(v0, vld1q_f32(b)), v1 = vaddq_f32(v1, vld1q_f32(b + 4));
            vst1q_f32(yr, v0);
            vst1q_f32(yr + 4, v1);
        } else { /* a partial panel: only its nr columns */
            float tmp[QNR];
            vst1q_f32(tmp, v0);
            vst1q_f32(tmp + 4, v1);
            for (int j = 0; j < nr; j++) yr[j] = b ? tmp[j] + b[j] : tmp[j];
        }
    }
}

typedef void (*q_tile_fn)(float *, size_t, const tg_block_q8_0 *, const float *, const int8_t *,
                          const float *, int, int);
#define Q_TILE(n)                                                                              \
    static void q_tile_##n(float *y, size_t ldy, const tg_block_q8_0 *xq, const float *xd,     \
                           const int8_t *panel, const float *b, int nb, int nr) {              \
        q_tile(n, y, ldy, xq, xd, panel, b, nb, nr);                                           \
    }

/* The whole GEMM for columns o0..o1: X's scales once, then one panel of W
 * at a time under every token tile. */
ALWAYS_INLINE void qgemm_run(int q4, const q_tile_fn *tiles, float *y, const void *x,
                             const void *w, size_t ldw, const float *b, int T, int in, int out,
                             int o0, int o1, void *ws) {
    int nb = in / TG_QK;
    if (nb == 0) { /* an empty sum: y = b */
        tg_bias_rows(y, b, T, out, o0, o1);
        return;
    }
    const tg_block_q8_0 *xb = x;
    /* from ws (tg_matmul_w_scratch's "integer GEMM"): X's scales, one
     * panel (27 KB for GPT-2's IN = 3072) */
    char *p = ws;
    float *xd = tg_ws_take(&p, sizeof(float) * (size_t)T * nb);
    int8_t *panel = tg_ws_take(&p, (size_t)nb * QPANEL_BLOCK);
    for (size_t i = 0; i < (size_t)T * nb; i++) xd[i] = h2f(xb[i].d);
    for (int o = o0; o < o1; o += QNR) {
        int nr = o1 - o < QNR ? o1 - o : QNR;
        q_pack_w(q4, panel, w, ldw, o, nr, nb);
        for (int t = 0; t < T; t += QMR) {
            int mr = T - t < QMR ? T - t : QMR;
            size_t xo = (size_t)t * nb;
            tiles[mr](y + (size_t)t * out + o, (size_t)out, xb + xo, xd + xo, panel,
                      b ? b + o : NULL, nb, nr);
        }
    }
}
