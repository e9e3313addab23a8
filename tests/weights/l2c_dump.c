/* l2c_dump.c — test helper: reads a llama2.c checkpoint with weights/llama2c.c
 * and writes every tensor as raw little-endian f32 in the reader's order,
 * printing the config and the tensor list as JSON on stdout. Exit 1 with the
 * reader's message if it fails. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "weights/llama2c.h"

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: l2c_dump FILE OUT.bin\n");
        return 2;
    }
    tg_l2c *c;
    tg_err err;
    if (tg_l2c_open(&c, argv[1], &err) || tg_l2c_check_finite(c, &err)) {
        fprintf(stderr, "l2c_dump: %s\n", err.msg);
        return 1;
    }
    FILE *f = fopen(argv[2], "wb");
    if (!f) return 1;
    const tg_l2c_config *g = &c->cfg;
    printf("{\"dim\": %d, \"hidden_dim\": %d, \"n_layers\": %d, \"n_heads\": %d, \"n_kv_heads\": %d, "
           "\"vocab_size\": %d, \"seq_len\": %d, \"tied\": %s, \"version\": %d, \"group_size\": %d, \"tensors\": [",
           g->dim, g->hidden_dim, g->n_layers, g->n_heads, g->n_kv_heads, g->vocab_size, g->seq_len,
           g->shared ? "true" : "false", (int)g->version, g->group_size);
    int ok = 1;
    for (int i = 0; i < c->n_tensors && ok; i++) {
        const tg_l2c_tensor *t = &c->tensors[i];
        float *x = malloc((size_t)t->n_elements * sizeof *x);
        ok = x && tg_l2c_to_f32(c, t, x, &err) == TG_OK &&
             fwrite(x, sizeof *x, (size_t)t->n_elements, f) == (size_t)t->n_elements;
        free(x);
        if (t->n_dims == 2)
            printf("%s[\"%s\", [%" PRId64 ", %" PRId64 "], %d]", i ? ", " : "", t->name, t->shape[0], t->shape[1],
                   (int)t->kind);
        else
            printf("%s[\"%s\", [%" PRId64 "], %d]", i ? ", " : "", t->name, t->shape[0], (int)t->kind);
    }
    printf("]}\n");
    ok = (fclose(f) == 0) && ok;
    tg_l2c_close(c);
    return ok ? 0 : 1;
}
