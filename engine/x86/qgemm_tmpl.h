/* qgemm_tmpl.h — the prefill GEMM of the integer weight types (Q8_0, Q4_0)
 * on vpdpbusd, written once for a vector of QL int32 lanes. Included by
 * quant_tmpl.h in the files built with VNNI (quant_avx512.c: zmm, QL = 16;
 * quant_avxvnni.c: ymm, QL = 8), in quant_avx2.c (ymm, QL = 8; qdpbusd
 * on vpmaddubsw + vpmaddwd, exact only where the u8·s8 pairs fit int16)
 * and directly in quant_avx512bw.c (the same on zmm, QL = 16, for AVX-512
 * CPUs without VNNI), after defining:
 *
 *   qvi qvf            the integer and float vector types
 *   QL                 int32 / f32 lanes per vector
 *   QMR                token rows per register tile (QNR = 2·QL weight rows)
 *   qdpbusd(acc,u,s)   acc += Σ of 4 adjacent u8(u)·s8(s) products per lane
 *   qload_i qbcast_i32 qcvt qloadf qset1f qfma qmul qstoref
 *   qloadf_n(p,n) qstoref_n(p,v,n)   lanes 0..n-1 only (n < QL)
 * and optionally
 *   qdpbusd2(acc,u1,s1,u2,s2)  two groups in one (Q4_0 on plain AVX2)
 *   QGEMM_Q8_SIGNED, qdpbusd_s(acc,w,x)  Q8_0 with W signed (plain AVX2)
 *
 * Y[T,OUT] = Xq[T, IN/32] · W[OUT, IN/32]ᵀ + b, columns o0..o1-1, X in
 * Q8_0 blocks (quantize_q8_0), W in Q8_0 or Q4_0.
 *
 * vpdpbusd multiplies unsigned by signed bytes: W is packed unsigned (Q8_0:
 * u = w + 128, w ^ 0x80; Q4_0: its nibble q = w + 8 as it is) and X stays
 * signed, read in place from its blocks (one broadcast of 4 bytes of a
 * token's x feeds two vpdpbusd of QNR rows each). An int32 lane starting at
 * c = -128·Σ_j x_j (Q4_0: -8·Σ_j x_j) and adding the 32 products u·x ends
 * at Σ_j w_j·x_j, exactly. Then, as the reference: acc += (float)sum ·
 * (d_w·d_x), blocks in order (one fma where the reference rounds a product
 * and a sum).
 *
 * W is packed per panel of QNR rows: for each block its 32 bytes as 8
 * groups of 4, each group one vector of QNR rows (8 rows at a time through
 * an 8 × 8 dword transpose), then the QNR scales d_w. A panel of GPT-2's
 * mlp_down (IN = 3072) is 108 KB: it stays in L2 while every token tile
 * runs over it.
 *
 * Every output is one lane of one accumulator fed the blocks in order
 * whatever panel, tile or range it falls in, so results do not depend on
 * o0/o1 (nor on the thread count). Padding rows of a panel are never
 * stored. */
#include <stdalign.h>
#include <string.h>
#include "engine/x86/tr8_avx.h"

/* QGEMM_Q8_SIGNED (plain AVX2, where u8·s8 pairs sum in int16): Q8_0's W
 * stays signed in the panel, with no correction, and each product is made
 * |w| · sign(w)·x, exact (qdpbusd_s) */
#ifndef QGEMM_Q8_SIGNED
#define QGEMM_Q8_SIGNED 0
#endif
/* one group's products: sgn (a constant in every tile) picks qdpbusd_s */
#if QGEMM_Q8_SIGNED
#define q_dot(sgn, acc, w, x) ((sgn) ? qdpbusd_s(acc, w, x) : qdpbusd(acc, w, x))
#else
#define q_dot(sgn, acc, w, x) qdpbusd(acc, w, x)
#endif

#define QNR (2 * QL)
#define QPANEL_BLOCK ((size_t)(TG_QK + 4) * QNR) /* bytes of one block of a panel */

/* panel[nb] blocks = rows r0..r0+nr-1 of W as unsigned bytes (nr <= QNR;
 * rows past nr read zeros) */
ALWAYS_INLINE void q_pack_w(int q4, char *panel, const char *w, size_t ldw, int r0, int nr,
                            int nb) {
    static const alignas(32) uint8_t zero[TG_QK];
    alignas(32) uint8_t tmp[8][TG_QK]; /* Q4_0: 8 rows' nibbles unpacked */
    const __m128i m4 = _mm_set1_epi8(15);
    for (int k = 0; k < nb; k++) {
        char *pb = panel + (size_t)k * QPANEL_BLOCK;
        float *dw = (float *)(pb + TG_QK * QNR);
        for (int j0 = 0; j0 < QNR; j0 += 8) {
            const float *r[8];
            for (int j = 0; j < 8; j++) {
                int row = j0 + j;
                if (row >= nr) {
                    r[j] = (const float *)zero;
                    dw[row] = 0.0f;
                    continue;
                }
                const char *wr = w + (size_t)(r0 + row) * ldw;
                if (q4) {
                    const tg_block_q4_0 *b = (const tg_block_q4_0 *)wr + k;
                    __m128i v = _mm_loadu_si128((const __m128i *)b->qs);
                    _mm_store_si128((__m128i *)tmp[j], _mm_and_si128(v, m4));
                    _mm_store_si128((__m128i *)(tmp[j] + 16), _mm_and_si128(_mm_srli_epi16(v, 4), m4));
                    r[j] = (const float *)tmp[j];
                    dw[row] = h2f(b->d);
                } else {
                    const tg_block_q8_0 *b = (const tg_block_q8_0 *)wr + k;
                    r[j] = (const float *)b->qs;
                    dw[row] = h2f(b->d);
                }
            }
            tg_tr8_avx((float *)pb + j0, QNR, r, 0); /* dword g of row j -> pb[g][j0 + j] */
        }
        if (!q4 && !QGEMM_Q8_SIGNED) /* s8 -> u8: + 128 */
            for (int i = 0; i < TG_QK * QNR; i += 32) {
                __m256i v = _mm256_loadu_si256((const __m256i *)(pb + i));
                _mm256_storeu_si256((__m256i *)(pb + i), _mm256_xor_si256(v, _mm256_set1_epi8((char)0x80)));
            }
    }
}

/* y[mr, nr] (ldy apart) = X[mr] · panel + b: the register tile. xq: the
 * token rows' Q8_0 blocks (nb apart), xd their scales, xc their
 * corrections. */
ALWAYS_INLINE void q_tile(int sgn, int mr, float *y, size_t ldy, const tg_block_q8_0 *xq, const float *xd,
                          const int32_t *xc, const char *panel, const float *b, int nb, int nr) {
    qvf f[QMR][2];
    for (int r = 0; r < mr; r++) f[r][0] = f[r][1] = qset1f(0.0f);
    for (int k = 0; k < nb; k++) {
        const char *pb = panel + (size_t)k * QPANEL_BLOCK;
        const float *dw = (const float *)(pb + TG_QK * QNR);
        qvi a[QMR][2];
        for (int r = 0; r < mr; r++) a[r][0] = a[r][1] = qset1_i32(xc[(size_t)r * nb + k]);
#ifdef qdpbusd2 /* two groups at a time (plain AVX2: summed in int16 first), but Q8_0's signed W */
        if (!sgn)
            for (int g = 0; g < TG_QK / 4; g += 2) {
                const char *pg = pb + (size_t)g * 4 * QNR;
                qvi w0 = qload_i(pg), w1 = qload_i(pg + 4 * QL);
                qvi v0 = qload_i(pg + 4 * QNR), v1 = qload_i(pg + 4 * QNR + 4 * QL);
                for (int r = 0; r < mr; r++) {
                    qvi x = qbcast_i32(xq[(size_t)r * nb + k].qs + 4 * g);
                    qvi z = qbcast_i32(xq[(size_t)r * nb + k].qs + 4 * g + 4);
                    a[r][0] = qdpbusd2(a[r][0], w0, x, v0, z);
                    a[r][1] = qdpbusd2(a[r][1], w1, x, v1, z);
                }
            }
        else
#endif
            for (int g = 0; g < TG_QK / 4; g++) {
                qvi w0 = qload_i(pb + (size_t)g * 4 * QNR), w1 = qload_i(pb + (size_t)g * 4 * QNR + 4 * QL);
                for (int r = 0; r < mr; r++) {
                    qvi x = qbcast_i32(xq[(size_t)r * nb + k].qs + 4 * g);
                    a[r][0] = q_dot(sgn, a[r][0], w0, x);
                    a[r][1] = q_dot(sgn, a[r][1], w1, x);
                }
            }
        qvf d0 = qloadf(dw), d1 = qloadf(dw + QL);
        for (int r = 0; r < mr; r++) {
            qvf dx = qset1f(xd[(size_t)r * nb + k]);
            f[r][0] = qfma(qcvt(a[r][0]), qmul(d0, dx), f[r][0]);
            f[r][1] = qfma(qcvt(a[r][1]), qmul(d1, dx), f[r][1]);
        }
    }
    for (int r = 0; r < mr; r++) {
        float *yr = y + (size_t)r * ldy;
        if (nr == QNR) {
            qvf v0 = f[r][0], v1 = f[r][1];
            if (b) v0 = qadd(v0, qloadf(b)), v1 = qadd(v1, qloadf(b + QL));
            qstoref(yr, v0);
            qstoref(yr + QL, v1);
        } else {
            int n0 = nr < QL ? nr : QL, n1 = nr - n0;
            qvf v0 = f[r][0], v1 = f[r][1];
            if (b) {
                v0 = qadd(v0, n0 == QL ? qloadf(b) : qloadf_n(b, n0));
                if (n1) v1 = qadd(v1, qloadf_n(b + QL, n1));
            }
            if (n0 == QL) qstoref(yr, v0);
            else qstoref_n(yr, v0, n0);
            if (n1) qstoref_n(yr + QL, v1, n1);
        }
    }
}

typedef void (*q_tile_fn)(float *, size_t, const tg_block_q8_0 *, const float *, const int32_t *,
                          const char *, const float *, int, int);
#define Q_TILE_FN(name, sgn, n)                                                                \
    static void name(float *y, size_t ldy, const tg_block_q8_0 *xq, const float *xd,           \
                     const int32_t *xc, const char *panel, const float *b, int nb, int nr) {   \
        q_tile(sgn, n, y, ldy, xq, xd, xc, panel, b, nb, nr);                                  \
    }
#define Q_TILE(n) Q_TILE_FN(q_tile_##n, 0, n)
#define Q_TILE_S(n) Q_TILE_FN(q_tile_s##n, 1, n) /* the tiles of QGEMM_Q8_SIGNED's Q8_0 */

/* The whole GEMM for columns o0..o1: X's scales and corrections once, then
 * one panel of W at a time under every token tile. */
ALWAYS_INLINE void qgemm_run(int q4, const q_tile_fn *tiles, float *y, const void *x,
                             const void *w, size_t ldw, const float *b, int T, int in, int out,
                             int o0, int o1, void *ws) {
    int nb = in / TG_QK;
    if (nb == 0) { /* an empty sum: y = b */
        tg_bias_rows(y, b, T, out, o0, o1);
        return;
    }
    const tg_block_q8_0 *xb = x;
    /* from ws (tg_matmul_w_scratch's "integer GEMM"): X's scales and
     * corrections, one panel */
    char *p = ws;
    float *xd = tg_ws_take(&p, sizeof(float) * (size_t)T * nb);
    int32_t *xc = tg_ws_take(&p, sizeof(int32_t) * (size_t)T * nb);
    char *panel = tg_ws_take(&p, (size_t)nb * QPANEL_BLOCK);
    for (size_t i = 0; i < (size_t)T * nb; i++) {
        int32_t s = 0;
        for (int j = 0; j < TG_QK; j++) s += xb[i].qs[j];
        xc[i] = q4 ? -8 * s : QGEMM_Q8_SIGNED ? 0 : -128 * s;
        xd[i] = h2f(xb[i].d);
    }
    for (int o = o0; o < o1; o += QNR) {
        int nr = o1 - o < QNR ? o1 - o : QNR;
        q_pack_w(q4, panel, w, ldw, o, nr, nb);
        for (int t = 0; t < T; t += QMR) {
            int mr = T - t < QMR ? T - t : QMR;
            size_t xo = (size_t)t * nb;
            tiles[mr](y + (size_t)t * out + o, (size_t)out, xb + xo, xd + xo, xc + xo, panel,
                      b ? b + o : NULL, nb, nr);
        }
    }
}
