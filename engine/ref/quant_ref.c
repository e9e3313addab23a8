/* quant_ref.c — the C reference of the typed-weight kernels: matmuls per
 * weight type, the Q8_0 activation quantizer and the row decoders. Plain
 * loops in the obvious order: the fallback on any CPU and the oracle the
 * SIMD versions are tested against. */
#include <string.h>

#include "engine/engine.h"

/* The f32 column in the typed signature (ldw == 4·IN). */
static void matmul_f32_w(float *y, const void *x, const void *w, size_t ldw, const float *b,
                         int T, int in, int out, int o0, int o1, void *ws) {
    (void)ldw, (void)ws;
    tg_matmul_ref(y, x, w, b, T, in, out, o0, o1);
}

/* Y[T,OUT] = X[T,IN] · W[OUT,IN]ᵀ + b, W in IEEE half (h16 = 1) or bfloat16 */
static void matmul_half(int h16, float *y, const float *x, const void *w, size_t ldw,
                        const float *b, int T, int in, int out, int o0, int o1) {
    for (int t = 0; t < T; t++) {
        const float *xt = x + (size_t)t * in;
        for (int o = o0; o < o1; o++) {
            const uint16_t *wo = (const uint16_t *)((const char *)w + (size_t)o * ldw);
            float acc = 0.0f;
            for (int i = 0; i < in; i++)
                acc += xt[i] * (h16 ? tg_f16_to_f32(wo[i]) : tg_bf16_to_f32(wo[i]));
            y[(size_t)t * out + o] = b ? acc + b[o] : acc;
        }
    }
}

static void matmul_f16_ref(float *y, const void *x, const void *w, size_t ldw, const float *b,
                           int T, int in, int out, int o0, int o1, void *ws) {
    (void)ws;
    matmul_half(1, y, x, w, ldw, b, T, in, out, o0, o1);
}

static void matmul_bf16_ref(float *y, const void *x, const void *w, size_t ldw,
                            const float *b, int T, int in, int out, int o0, int o1, void *ws) {
    (void)ws;
    matmul_half(0, y, x, w, ldw, b, T, in, out, o0, o1);
}

/* Y[T,OUT] = Xq[T, IN/32] · W[OUT, IN/32]ᵀ + b, W in Q8_0 (q4 = 0) or Q4_0
 * (q4 = 1), X in Q8_0: per block an exact int32 sum, then += sum·(dw·dx). */
static void matmul_q(int q4, float *y, const void *x, const void *w, size_t ldw,
                     const float *b, int T, int in, int out, int o0, int o1) {
    int nb = in / TG_QK;
    for (int t = 0; t < T; t++) {
        const tg_block_q8_0 *xb = (const tg_block_q8_0 *)x + (size_t)t * nb;
        for (int o = o0; o < o1; o++) {
            const char *wo = (const char *)w + (size_t)o * ldw;
            float acc = 0.0f;
            for (int k = 0; k < nb; k++) {
                int32_t s = 0;
                uint16_t dw;
                if (q4) {
                    const tg_block_q4_0 *wb = (const tg_block_q4_0 *)wo + k;
                    for (int j = 0; j < TG_QK / 2; j++) {
                        s += ((wb->qs[j] & 15) - 8) * xb[k].qs[j];
                        s += ((wb->qs[j] >> 4) - 8) * xb[k].qs[j + TG_QK / 2];
                    }
                    dw = wb->d;
                } else {
                    const tg_block_q8_0 *wb = (const tg_block_q8_0 *)wo + k;
                    for (int j = 0; j < TG_QK; j++) s += wb->qs[j] * xb[k].qs[j];
                    dw = wb->d;
                }
                acc += (float)s * (tg_f16_to_f32(dw) * tg_f16_to_f32(xb[k].d));
            }
            y[(size_t)t * out + o] = b ? acc + b[o] : acc;
        }
    }
}

static void matmul_q8_0_ref(float *y, const void *x, const void *w, size_t ldw,
                            const float *b, int T, int in, int out, int o0, int o1, void *ws) {
    (void)ws;
    matmul_q(0, y, x, w, ldw, b, T, in, out, o0, o1);
}

static void matmul_q4_0_ref(float *y, const void *x, const void *w, size_t ldw,
                            const float *b, int T, int in, int out, int o0, int o1, void *ws) {
    (void)ws;
    matmul_q(1, y, x, w, ldw, b, T, in, out, o0, o1);
}

/* q[N/32] = Q8_0(x[N]) */
static void quantize_q8_0_ref(tg_block_q8_0 *q, const float *x, int n) {
    tg_quantize_row(TG_WTYPE_Q8_0, q, x, n);
}

static void dequant_f32(float *y, const void *w, int n) { tg_dequantize_row(TG_WTYPE_F32, y, w, n); }
static void dequant_f16(float *y, const void *w, int n) { tg_dequantize_row(TG_WTYPE_F16, y, w, n); }
static void dequant_bf16(float *y, const void *w, int n) { tg_dequantize_row(TG_WTYPE_BF16, y, w, n); }
static void dequant_q8_0(float *y, const void *w, int n) { tg_dequantize_row(TG_WTYPE_Q8_0, y, w, n); }
static void dequant_q4_0(float *y, const void *w, int n) { tg_dequantize_row(TG_WTYPE_Q4_0, y, w, n); }

void tg_kernels_init_quant_ref(tg_kernels *k) {
    k->matmul_w[TG_WTYPE_F32] = matmul_f32_w;
    k->matmul_w[TG_WTYPE_F16] = matmul_f16_ref;
    k->matmul_w[TG_WTYPE_BF16] = matmul_bf16_ref;
    k->matmul_w[TG_WTYPE_Q8_0] = matmul_q8_0_ref;
    k->matmul_w[TG_WTYPE_Q4_0] = matmul_q4_0_ref;
    k->quantize_q8_0 = quantize_q8_0_ref;
    k->dequant[TG_WTYPE_F32] = dequant_f32;
    k->dequant[TG_WTYPE_F16] = dequant_f16;
    k->dequant[TG_WTYPE_BF16] = dequant_bf16;
    k->dequant[TG_WTYPE_Q8_0] = dequant_q8_0;
    k->dequant[TG_WTYPE_Q4_0] = dequant_q4_0;
}
