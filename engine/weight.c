/* weight.c — weight types: names, row sizes, the scalar half/bfloat16
 * conversions and the reference encoders and decoders of every type (the
 * definition the kernels, the writers and the tests share). */
#include <math.h>
#include <string.h>

#include "engine/engine.h"

static const char *const wtype_names[TG_WTYPE_COUNT] = {"f32", "f16", "bf16", "q8_0", "q4_0"};

const char *tg_wtype_name(tg_wtype t) {
    return (unsigned)t < TG_WTYPE_COUNT ? wtype_names[t] : "unknown";
}

tg_status tg_wtype_parse(const char *name, tg_wtype *out) {
    for (int i = 0; i < TG_WTYPE_COUNT; i++)
        if (name && strcmp(name, wtype_names[i]) == 0) {
            *out = (tg_wtype)i;
            return TG_OK;
        }
    return TG_ERR_ARG;
}

int tg_wtype_block(tg_wtype t) { return t == TG_WTYPE_Q8_0 || t == TG_WTYPE_Q4_0 ? TG_QK : 1; }

size_t tg_wtype_row_bytes(tg_wtype t, int n) {
    if (n < 0) return 0;
    switch (t) {
    case TG_WTYPE_F32: return (size_t)n * 4;
    case TG_WTYPE_F16:
    case TG_WTYPE_BF16: return (size_t)n * 2;
    case TG_WTYPE_Q8_0: return n % TG_QK ? 0 : (size_t)(n / TG_QK) * sizeof(tg_block_q8_0);
    case TG_WTYPE_Q4_0: return n % TG_QK ? 0 : (size_t)(n / TG_QK) * sizeof(tg_block_q4_0);
    default: return 0;
    }
}

int tg_wtype_q8_act(tg_wtype t) { return t == TG_WTYPE_Q8_0 || t == TG_WTYPE_Q4_0; }

tg_weight tg_weight_f32(const float *w, int rows, int cols) {
    tg_weight v = {TG_WTYPE_F32, w, rows, cols, (size_t)cols * sizeof(float)};
    return v;
}

/* ---- scalar conversions ---------------------------------------------------- */

static uint32_t f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
static float bits_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

float tg_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    if (exp == 0x1f) return bits_f32(sign | 0x7f800000u | (man << 13)); /* inf / nan */
    if (exp == 0) {                                                      /* zero / subnormal */
        float v = (float)man * 0x1p-24f;
        return sign ? -v : v;
    }
    return bits_f32(sign | ((exp + 112) << 23) | (man << 13));
}

uint16_t tg_f32_to_f16(float f) {
    uint32_t u = f32_bits(f), sign = (u >> 16) & 0x8000;
    uint32_t a = u & 0x7fffffffu;
    if (a >= 0x7f800000u) return (uint16_t)(sign | 0x7c00 | (a > 0x7f800000u ? 0x200 : 0));
    if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00); /* rounds to >= 65520: inf */
    if (a < 0x38800000u) {                                  /* below 2^-14: subnormal half */
        /* value / 2^-24, rounded to nearest even, via float arithmetic that is exact */
        float v = bits_f32(a) * 0x1p24f;
        float r = rintf(v); /* default rounding mode: nearest even */
        return (uint16_t)(sign | (uint32_t)r);
    }
    uint32_t man = a & 0x7fffff, exp = (a >> 23) - 112;
    uint32_t h = (exp << 10) | (man >> 13);
    uint32_t rest = man & 0x1fff;
    if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) h++; /* may carry into exp: fine */
    return (uint16_t)(sign | h);
}

float tg_bf16_to_f32(uint16_t h) { return bits_f32((uint32_t)h << 16); }

uint16_t tg_f32_to_bf16(float f) {
    uint32_t u = f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); /* quiet NaN */
    u += 0x7fff + ((u >> 16) & 1);
    return (uint16_t)(u >> 16);
}

/* ---- block encoders ---------------------------------------------------------- */

#define HALF_NAN 0x7e00

/* One Q8_0 block of x[32]; 1 if it held a non-finite value. */
static int quantize_block_q8_0(tg_block_q8_0 *y, const float *x) {
    float amax = 0.0f;
    int finite = 1;
    for (int j = 0; j < TG_QK; j++) {
        finite &= isfinite(x[j]) != 0;
        float a = fabsf(x[j]);
        amax = a > amax ? a : amax;
    }
    if (!finite) {
        y->d = HALF_NAN;
        memset(y->qs, 0, sizeof y->qs);
        return 1;
    }
    float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
    y->d = tg_f32_to_f16(d);
    for (int j = 0; j < TG_QK; j++) y->qs[j] = (int8_t)nearbyintf(x[j] * id); /* |.| <= 127 */
    return 0;
}

static int quantize_block_q4_0(tg_block_q4_0 *y, const float *x) {
    float amax = 0.0f, m = 0.0f;
    int finite = 1;
    for (int j = 0; j < TG_QK; j++) {
        finite &= isfinite(x[j]) != 0;
        if (fabsf(x[j]) > amax) {
            amax = fabsf(x[j]);
            m = x[j];
        }
    }
    if (!finite) {
        y->d = HALF_NAN;
        memset(y->qs, 0x88, sizeof y->qs); /* q = 8: zero */
        return 1;
    }
    float d = m / -8.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
    y->d = tg_f32_to_f16(d);
    uint8_t q[TG_QK];
    for (int j = 0; j < TG_QK; j++) {
        float v = nearbyintf(x[j] * id); /* in [-8, 8] */
        int qi = (int)v + 8;
        q[j] = (uint8_t)(qi > 15 ? 15 : qi < 0 ? 0 : qi);
    }
    for (int j = 0; j < TG_QK / 2; j++) y->qs[j] = (uint8_t)(q[j] | q[j + TG_QK / 2] << 4);
    return 0;
}

int tg_quantize_row(tg_wtype t, void *y, const float *x, int n) {
    int bad = 0;
    switch (t) {
    case TG_WTYPE_F32: memcpy(y, x, (size_t)n * sizeof(float)); break;
    case TG_WTYPE_F16:
    case TG_WTYPE_BF16: {
        uint16_t *h = y;
        for (int i = 0; i < n; i++) {
            h[i] = t == TG_WTYPE_F16 ? tg_f32_to_f16(x[i]) : tg_f32_to_bf16(x[i]);
            bad += !isfinite(x[i]);
        }
        break;
    }
    case TG_WTYPE_Q8_0:
        for (int b = 0; b < n / TG_QK; b++)
            bad += quantize_block_q8_0((tg_block_q8_0 *)y + b, x + (size_t)b * TG_QK);
        break;
    case TG_WTYPE_Q4_0:
        for (int b = 0; b < n / TG_QK; b++)
            bad += quantize_block_q4_0((tg_block_q4_0 *)y + b, x + (size_t)b * TG_QK);
        break;
    default: break;
    }
    return bad;
}

void tg_dequantize_row(tg_wtype t, float *y, const void *x, int n) {
    switch (t) {
    case TG_WTYPE_F32: memcpy(y, x, (size_t)n * sizeof(float)); break;
    case TG_WTYPE_F16:
        for (int i = 0; i < n; i++) y[i] = tg_f16_to_f32(((const uint16_t *)x)[i]);
        break;
    case TG_WTYPE_BF16:
        for (int i = 0; i < n; i++) y[i] = tg_bf16_to_f32(((const uint16_t *)x)[i]);
        break;
    case TG_WTYPE_Q8_0:
        for (int b = 0; b < n / TG_QK; b++) {
            const tg_block_q8_0 *blk = (const tg_block_q8_0 *)x + b;
            float d = tg_f16_to_f32(blk->d);
            for (int j = 0; j < TG_QK; j++) y[b * TG_QK + j] = d * (float)blk->qs[j];
        }
        break;
    case TG_WTYPE_Q4_0:
        for (int b = 0; b < n / TG_QK; b++) {
            const tg_block_q4_0 *blk = (const tg_block_q4_0 *)x + b;
            float d = tg_f16_to_f32(blk->d);
            for (int j = 0; j < TG_QK / 2; j++) {
                y[b * TG_QK + j] = d * (float)((blk->qs[j] & 15) - 8);
                y[b * TG_QK + j + TG_QK / 2] = d * (float)((blk->qs[j] >> 4) - 8);
            }
        }
        break;
    default: break;
    }
}
