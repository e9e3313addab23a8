/* fuzz_sampler.c — libFuzzer target for the sampler on arbitrary logits.
 *
 * Input: a 16-byte header of sampler settings, then the logits as raw
 * little-endian float32 bits (NaN, ±inf, subnormals and huge values
 * included; fuzz_sampler.dict holds those patterns). V = the number of whole
 * floats after the header (at least 1). Every draw must be an id in [0, V)
 * whose logit is a number above -inf (+inf if there is one), or -1 only
 * when no logit is above -inf (or, with a repetition penalty, every one
 * above is so negative that logit * r overflows to -inf); settings outside the allowed ranges must be
 * refused by tg_sampler_create, never reach the draw.
 *
 * Header: temp (float32, raw), top_k (u16), top_p (u8 / 255), min_p
 * (u8 / 255), repeat penalty (1 + u8 / 28), repeat window (u8), draws
 * (u8 % 8 + 1), seed (u32), accepted tokens (u8). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/sampler.h"

static float rd_f32(const uint8_t *p) {
    uint32_t u = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 16 + 4) return 0;
    int V = (int)((size - 16) / 4);
    if (V > 1 << 16) V = 1 << 16;
    tg_sampler_params p = {
        .temp = rd_f32(data),
        .top_k = data[4] | data[5] << 8,
        .top_p = data[6] / 255.0f,
        .min_p = data[7] / 255.0f,
        .repeat_penalty = 1.0f + data[8] / 28.0f,
        .repeat_window = data[9],
        .seed = (uint64_t)data[11] | (uint64_t)data[12] << 8 | (uint64_t)data[13] << 16 |
                (uint64_t)data[14] << 24,
    };
    int draws = data[10] % 8 + 1, n_accept = data[15];
    float *x = malloc((size_t)V * sizeof *x);
    if (!x) return 0;
    int any_safe = 0, any_inf = 0; /* safe: stays above -inf after any penalty r <= 10 */
    for (int i = 0; i < V; i++) {
        x[i] = rd_f32(data + 16 + 4 * (size_t)i);
        any_safe |= x[i] > -3.4e37f;
        any_inf |= x[i] == INFINITY;
    }
    tg_sampler *s;
    tg_err err;
    if (tg_sampler_create(&s, &p, V, &err) != TG_OK) {
        /* refused: must be a setting outside its documented range */
        int temp_ok = p.temp == 0.0f || (p.temp >= TG_SAMPLER_MIN_TEMP && p.temp <= 100.0f);
        if (temp_ok && p.repeat_penalty <= 10.0f) {
            fprintf(stderr, "valid settings refused: %s\n", err.msg);
            abort();
        }
        free(x);
        return 0;
    }
    /* the repetition penalty divides a positive logit by r >= 1 and
     * multiplies a negative one: it keeps +inf, -inf and NaN, and can only
     * push a logit below -3.4e37 to -inf */
    for (int i = 0; i < n_accept; i++) tg_sampler_accept(s, (int)(data[16 + i % (size - 16)] % V));
    for (int d = 0; d < draws; d++) {
        int t = tg_sampler_sample(s, x);
        if (t == -1 && !any_safe) continue;
        if (t < 0 || t >= V || !(x[t] > -INFINITY) || (any_inf && x[t] != INFINITY)) {
            fprintf(stderr, "sampled %d of V=%d (logit %g; a safe logit %d, a +inf %d)\n", t, V,
                    t >= 0 && t < V ? (double)x[t] : 0.0, any_safe, any_inf);
            abort();
        }
        tg_sampler_accept(s, t);
    }
    tg_sampler_free(s);
    free(x);
    return 0;
}
