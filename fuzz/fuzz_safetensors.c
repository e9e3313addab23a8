/* fuzz_safetensors.c — libFuzzer target: the safetensors header parser
 * (length, JSON via cJSON, dtype/shape/offset checks) on arbitrary bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "weights/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf) return 0;
    memcpy(buf, data, size);
    tg_err err;
    tg_st *st;
    if (tg_st_parse(&st, buf, size, "fuzz", &err) == TG_OK) {
        for (int i = 0; i < st->n_tensors; i++) {
            const tg_st_tensor *t = &st->tensors[i];
            if (t->n_elements > (1u << 20)) continue;
            float *f = malloc((size_t)t->n_elements * sizeof *f + 1);
            if (f) (void)tg_st_to_f32(t, f, &err);
            free(f);
            (void)tg_st_find(st, t->name);
        }
        tg_st_close(st);
    }
    free(buf);
    return 0;
}
