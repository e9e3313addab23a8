/* fuzz_llama2c.c — libFuzzer target: the llama2.c checkpoint reader (legacy
 * .bin sized by its 7-int header, ak42 v1/v2 with their 256-byte header and
 * int8 groups) on arbitrary bytes, then every tensor decoded and scanned. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "weights/llama2c.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf) return 0;
    memcpy(buf, data, size);
    char why[256];
    (void)tg_l2c_sniff(buf, size, size);
    tg_l2c_legacy_why(buf, size, size, why, sizeof why);
    tg_err err;
    tg_l2c *c;
    if (tg_l2c_parse(&c, buf, size, "fuzz", &err) == TG_OK) {
        (void)tg_l2c_check_finite(c, &err);
        tg_model_config cfg;
        tg_tensor_set ts;
        if (tg_l2c_tensor_set(c, &cfg, &ts, &err) == TG_OK) free(ts.t);
        for (int i = 0; i < c->n_tensors; i++) {
            const tg_l2c_tensor *t = &c->tensors[i];
            if (t->n_elements > (1u << 20)) continue;
            float *f = malloc((size_t)t->n_elements * sizeof *f + 1);
            if (f) (void)tg_l2c_to_f32(c, t, f, &err);
            free(f);
            (void)tg_l2c_find(c, t->name);
        }
        tg_l2c_close(c);
    }
    free(buf);
    return 0;
}
