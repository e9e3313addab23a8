/* fuzz_gguf.c — libFuzzer target: the GGUF reader and the gpt2 binding on
 * arbitrary bytes. Any input must give TG_OK or a clean error; with
 * ASan+UBSan, any out-of-bounds access, leak or UB is a crash. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "weights/gguf.h"
#include "weights/internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    /* an exact-size copy, so reading one byte past the end is caught */
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf) return 0;
    memcpy(buf, data, size);
    tg_err err;
    tg_gguf *g;
    if (tg_gguf_parse(&g, buf, size, "fuzz", &err) == TG_OK) {
        for (int64_t i = 0; i < tg_gguf_n_kv(g); i++) {
            const tg_gguf_kv *kv = tg_gguf_kv_at(g, i);
            for (uint64_t j = 0; j < kv->n && j < 64; j++) {
                const char *s;
                size_t len;
                if (kv->type == TG_GGUF_STRING || (kv->type == TG_GGUF_ARRAY && kv->arr_type == TG_GGUF_STRING)) {
                    tg_gguf_kv_str(g, kv, j, &s, &len);
                    volatile char sink = len ? s[len - 1] : 0;
                    (void)sink;
                } else {
                    (void)tg_gguf_kv_num(kv, j);
                }
            }
        }
        for (int64_t i = 0; i < tg_gguf_n_tensors(g); i++) {
            const tg_gguf_tensor *t = tg_gguf_tensor_at(g, i);
            if (t->n_elements > (1u << 20)) continue;
            float *f = malloc((size_t)t->n_elements * sizeof *f + 1);
            if (f) (void)tg_gguf_tensor_to_f32(t, f, &err);
            free(f);
        }
        tg_gguf_close(g);
        for (int vocab_only = 0; vocab_only < 2; vocab_only++) {
            tg_gpt2_model m;
            if (gpt2_load_gguf_buffer(&m, buf, size, vocab_only, &err) == TG_OK) tg_gpt2_free(&m);
        }
    }
    free(buf);
    return 0;
}
