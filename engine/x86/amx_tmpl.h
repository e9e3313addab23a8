/* amx_tmpl.h — the prefill GEMM (T > 1) of BF16, Q8_0 and Q4_0 weights on
 * AMX tiles, written once over amx_tile.h's vocabulary and in portable C
 * around it. Included by engine/x86/amx.c (the instructions; built with
 * -mamx-tile -mamx-bf16 -mamx-int8, installed only where tg_cpu_has says
 * AMX) and by tests/engine/amx_kernels_emu.c (AMX_EMULATE: the software
 * model of the tiles, tests/engine/amx_emu.c), after defining
 *
 *   AMX_NAME(n)   the exported name of function n (tg_amx_n, tg_amxemu_n)
 *
 * Y[T,OUT] = X[T,IN] · W[OUT,IN]ᵀ + b, columns o0..o1-1 (tg_kernels.matmul_w
 * with T > 1; T == 1 stays on the decode GEMVs, amx.c). The register block
 * is 32 tokens × 32 weight rows: four 16 × 16 C tiles (tmm0..3) fed by two A
 * tiles of tokens (tmm4, 5) and two B tiles of weight rows (tmm6, 7).
 * X is padded with zero rows to a multiple of 32 tokens, W's last panel
 * with zero rows to 32; padded outputs are never stored.
 *
 *   BF16 (tdpbf16ps): X rounded once to bfloat16 pairs as vcvtne2ps2bf16
 *     does (round to nearest even; f32 subnormals to signed 0; NaN quiet),
 *     the AVX512-BF16 GEMM's rounding (bf16_avx512.c); K in steps of 16
 *     pairs (IN padded with zero pairs: each adds an exact 0). A tile: 16
 *     tokens × 16 pairs; B tile: 16 pairs × 16 rows, W packed per panel of
 *     32 rows as pair p of row j at dword p·32 + j (the VNNI layout). The
 *     products of two bfloat16 are exact; each C element is an f32 sum
 *     over the pairs in an order that depends only on IN, so |Y - Y_exact|
 *     <= (2^-8 + (IN + 8)·eps)·Σ|w·x| as for bf16_act (tg_engine.bf16_act).
 *   Q8_0 / Q4_0 (tdpbssd): one instruction per 32-block, because each
 *     block has its own d_w and d_x: A tile 16 tokens × 32 int8, B tile 8
 *     quads × 16 rows (Q4_0's nibbles unpacked to q - 8 while packing), C
 *     the exact int32 block sums; then, as the reference does,
 *     acc += (float)sum · (d_w·d_x) in f32, blocks in order (the same C
 *     expression), and y = acc + b. The int32 sums are exact, so the
 *     result is the reference's, bit for bit (the tests check that).
 *
 * Each output is computed by the same operations whichever panel, tile or
 * range it falls in: results do not depend on o0/o1 (nor on threads). */
#include <string.h>

#include "engine/engine.h"
#include "engine/x86/amx_tile.h"

#define AMX_MB 32 /* tokens per block (two A tiles) */
#define AMX_NB 32 /* weight rows per panel (two B tiles) */
#define AMX_KP 16 /* bf16 pairs per A/B tile row step */

static size_t amx_up(size_t n, size_t m) { return (n + m - 1) / m * m; }

/* the tile shapes of one kernel: C tiles 0..3, A tiles 4, 5 (rows ×
 * a_colsb bytes), B tiles 6, 7 (b_rows × 64 bytes) */
static void amx_config(amx_cfg *c, int a_colsb, int b_rows) {
    memset(c, 0, sizeof *c);
    c->palette = 1;
    for (int t = 0; t < 4; t++) c->rows[t] = 16, c->colsb[t] = 64;
    for (int t = 4; t < 6; t++) c->rows[t] = 16, c->colsb[t] = (uint16_t)a_colsb;
    for (int t = 6; t < 8; t++) c->rows[t] = (uint8_t)b_rows, c->colsb[t] = 64;
}

/* f32 -> bfloat16 as vcvtne2ps2bf16 (Intel SDM, convert_fp32_to_bfloat16):
 * zero and subnormal inputs give a signed 0, NaN keeps its top half with
 * the quiet bit set, else round to nearest even */
static uint32_t amx_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7f800000u) == 0) return (u >> 16) & 0x8000u;
    if ((u & 0x7fffffffu) > 0x7f800000u) return (u >> 16) | 0x40u;
    return (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
}

/* ---- BF16 ------------------------------------------------------------------ */

/* scratch (tg_matmul_w_scratch's "AMX BF16 GEMM", engine/dispatch.c): the
 * tile config, X as pairs [Tp, Pp], one panel [Pp, 32] of pairs, one C tile */
void AMX_NAME(gemm_bf16)(float *y, const float *x, const void *w, size_t ldw, const float *b,
                         int T, int in, int out, int o0, int o1, void *ws);
void AMX_NAME(gemm_bf16)(float *y, const float *x, const void *w, size_t ldw, const float *b,
                         int T, int in, int out, int o0, int o1, void *ws) {
    const size_t P = ((size_t)in + 1) / 2, Pp = amx_up(P, AMX_KP), Tp = amx_up((size_t)T, AMX_MB);
    char *p = ws;
    amx_cfg *cfg = tg_ws_take(&p, sizeof(amx_cfg));
    uint32_t *xb = tg_ws_take(&p, sizeof(uint32_t) * Tp * Pp);
    uint32_t *panel = tg_ws_take(&p, sizeof(uint32_t) * Pp * AMX_NB);
    float *cb = tg_ws_take(&p, sizeof(float) * 16 * 16);
    memset(xb, 0, sizeof(uint32_t) * Tp * Pp);
    for (int t = 0; t < T; t++)
        for (int i = 0; i < in; i++)
            xb[(size_t)t * Pp + (size_t)i / 2] |= amx_bf16(x[(size_t)t * in + i]) << (16 * (i & 1));
    amx_config(cfg, 64, 16);
    TILE_CONFIG(cfg);
    const size_t lda = Pp * 4, ldb = AMX_NB * 4;
    for (int o = o0; o < o1; o += AMX_NB) {
        int nr = o1 - o < AMX_NB ? o1 - o : AMX_NB;
        /* pair k of row j at panel[k·32 + j]; rows past nr and pairs past
         * IN are 0 */
        memset(panel, 0, sizeof(uint32_t) * Pp * AMX_NB);
        for (int j = 0; j < nr; j++) {
            const uint16_t *wr = (const uint16_t *)((const char *)w + (size_t)(o + j) * ldw);
            for (int i = 0; i < in; i++)
                panel[(size_t)(i / 2) * AMX_NB + j] |= (uint32_t)wr[i] << (16 * (i & 1));
        }
        for (int t = 0; t < T; t += AMX_MB) {
            TILE_ZERO(0);
            TILE_ZERO(1);
            TILE_ZERO(2);
            TILE_ZERO(3);
            const uint32_t *a0 = xb + (size_t)t * Pp, *a1 = a0 + 16 * Pp;
            for (size_t k = 0; k < Pp; k += AMX_KP) {
                TILE_LOAD(4, a0 + k, lda);
                TILE_LOAD(5, a1 + k, lda);
                TILE_LOAD(6, panel + k * AMX_NB, ldb);
                TILE_LOAD(7, panel + k * AMX_NB + 16, ldb);
                TILE_DPBF16PS(0, 4, 6);
                TILE_DPBF16PS(1, 4, 7);
                TILE_DPBF16PS(2, 5, 6);
                TILE_DPBF16PS(3, 5, 7);
            }
            /* C tile ti: tokens t + 16·(ti / 2), rows o + 16·(ti % 2) */
            for (int ti = 0; ti < 4; ti++) {
                int t0 = t + 16 * (ti / 2), j0 = 16 * (ti % 2);
                if (t0 >= T || j0 >= nr) continue;
                switch (ti) {
                case 0: TILE_STORE(0, cb, 64); break;
                case 1: TILE_STORE(1, cb, 64); break;
                case 2: TILE_STORE(2, cb, 64); break;
                default: TILE_STORE(3, cb, 64); break;
                }
                int mr = T - t0 < 16 ? T - t0 : 16, nc = nr - j0 < 16 ? nr - j0 : 16;
                for (int r = 0; r < mr; r++) {
                    float *yr = y + (size_t)(t0 + r) * out + o + j0;
                    for (int j = 0; j < nc; j++)
                        yr[j] = b ? cb[r * 16 + j] + b[o + j0 + j] : cb[r * 16 + j];
                }
            }
        }
    }
    TILE_RELEASE();
}

/* ---- Q8_0 and Q4_0 ------------------------------------------------------------ */

#define AMX_QPANEL ((size_t)TG_QK * AMX_NB + sizeof(float) * AMX_NB) /* bytes per block */

/* scratch (tg_matmul_w_scratch's "AMX integer GEMM"): the tile config, X's
 * bytes [Tp, IN] and scales [Tp, IN/32], one panel (per block 8 quads × 32
 * rows, then 32 d_w), the f32 accumulators of a 32 × 32 block, 4 C tiles */
void AMX_NAME(gemm_q)(int q4, float *y, const void *x, const void *w, size_t ldw,
                      const float *b, int T, int in, int out, int o0, int o1, void *ws);
void AMX_NAME(gemm_q)(int q4, float *y, const void *x, const void *w, size_t ldw,
                      const float *b, int T, int in, int out, int o0, int o1, void *ws) {
    const int nb = in / TG_QK;
    if (nb == 0) { /* an empty sum: y = b */
        tg_bias_rows(y, b, T, out, o0, o1);
        return;
    }
    const size_t Tp = amx_up((size_t)T, AMX_MB), lx = (size_t)nb * TG_QK;
    const tg_block_q8_0 *xq = x;
    char *p = ws;
    amx_cfg *cfg = tg_ws_take(&p, sizeof(amx_cfg));
    int8_t *xs = tg_ws_take(&p, Tp * lx);
    float *xd = tg_ws_take(&p, sizeof(float) * Tp * (size_t)nb);
    char *panel = tg_ws_take(&p, (size_t)nb * AMX_QPANEL);
    float *acc = tg_ws_take(&p, sizeof(float) * AMX_MB * AMX_NB);
    int32_t *cb = tg_ws_take(&p, sizeof(int32_t) * 4 * 16 * 16);
    memset(xs, 0, Tp * lx);
    memset(xd, 0, sizeof(float) * Tp * (size_t)nb);
    for (int t = 0; t < T; t++)
        for (int k = 0; k < nb; k++) {
            const tg_block_q8_0 *xk = xq + (size_t)t * nb + k;
            memcpy(xs + (size_t)t * lx + (size_t)k * TG_QK, xk->qs, TG_QK);
            xd[(size_t)t * nb + k] = tg_f16_to_f32(xk->d);
        }
    amx_config(cfg, TG_QK, TG_QK / 4);
    TILE_CONFIG(cfg);
    for (int o = o0; o < o1; o += AMX_NB) {
        int nr = o1 - o < AMX_NB ? o1 - o : AMX_NB;
        /* block k: byte 4g + i of row j at panel_k[(g·32 + j)·4 + i], then
         * the 32 rows' d_w (rows past nr: 0) */
        memset(panel, 0, (size_t)nb * AMX_QPANEL);
        for (int j = 0; j < nr; j++) {
            const char *wr = (const char *)w + (size_t)(o + j) * ldw;
            for (int k = 0; k < nb; k++) {
                char *pk = panel + (size_t)k * AMX_QPANEL;
                int8_t q[TG_QK];
                uint16_t d;
                if (q4) {
                    const tg_block_q4_0 *bk = (const tg_block_q4_0 *)wr + k;
                    for (int i = 0; i < TG_QK / 2; i++) {
                        q[i] = (int8_t)((bk->qs[i] & 15) - 8);
                        q[i + TG_QK / 2] = (int8_t)((bk->qs[i] >> 4) - 8);
                    }
                    d = bk->d;
                } else {
                    const tg_block_q8_0 *bk = (const tg_block_q8_0 *)wr + k;
                    memcpy(q, bk->qs, TG_QK);
                    d = bk->d;
                }
                for (int g = 0; g < TG_QK / 4; g++) memcpy(pk + ((size_t)g * AMX_NB + j) * 4, q + 4 * g, 4);
                float dw = tg_f16_to_f32(d);
                memcpy(pk + (size_t)TG_QK * AMX_NB + sizeof(float) * j, &dw, sizeof dw);
            }
        }
        for (int t = 0; t < T; t += AMX_MB) {
            for (int i = 0; i < AMX_MB * AMX_NB; i++) acc[i] = 0.0f;
            const int8_t *a0 = xs + (size_t)t * lx, *a1 = a0 + 16 * lx;
            for (int k = 0; k < nb; k++) {
                const char *pk = panel + (size_t)k * AMX_QPANEL;
                TILE_ZERO(0);
                TILE_ZERO(1);
                TILE_ZERO(2);
                TILE_ZERO(3);
                TILE_LOAD(4, a0 + (size_t)k * TG_QK, lx);
                TILE_LOAD(5, a1 + (size_t)k * TG_QK, lx);
                TILE_LOAD(6, pk, AMX_NB * 4);
                TILE_LOAD(7, pk + 64, AMX_NB * 4);
                TILE_DPBSSD(0, 4, 6);
                TILE_DPBSSD(1, 4, 7);
                TILE_DPBSSD(2, 5, 6);
                TILE_DPBSSD(3, 5, 7);
                TILE_STORE(0, cb, 64);
                TILE_STORE(1, cb + 256, 64);
                TILE_STORE(2, cb + 512, 64);
                TILE_STORE(3, cb + 768, 64);
                float dw[AMX_NB];
                memcpy(dw, pk + (size_t)TG_QK * AMX_NB, sizeof dw);
                const float *dx = xd + (size_t)t * nb + k;
                /* acc[r][j] += (float)c · (d_w[j]·d_x[r]): the reference's
                 * expression (engine/ref/quant_ref.c), so whatever the
                 * compiler's contraction rule, both round alike */
                for (int r = 0; r < AMX_MB; r++) {
                    float dxr = dx[(size_t)r * nb];
                    for (int h = 0; h < 2; h++) { /* C tile 2·(r / 16) + h */
                        const int32_t *cr = cb + (r / 16) * 512 + h * 256 + (r % 16) * 16;
                        const float *dwh = dw + 16 * h;
                        float *ar = acc + r * AMX_NB + 16 * h;
                        for (int j = 0; j < 16; j++) ar[j] += (float)cr[j] * (dwh[j] * dxr);
                    }
                }
            }
            int mr = T - t < AMX_MB ? T - t : AMX_MB;
            for (int r = 0; r < mr; r++) {
                float *yr = y + (size_t)(t + r) * out + o;
                for (int j = 0; j < nr; j++) yr[j] = b ? acc[r * AMX_NB + j] + b[o + j] : acc[r * AMX_NB + j];
            }
        }
    }
    TILE_RELEASE();
}
