/* opcount_dump.c — prints model/opcount's costs as JSON for the Python
 * oracle: usage: opcount_dump L H E F V T POS N_LOGITS */
#include <stdio.h>
#include <stdlib.h>

#include "model/opcount.h"

static const char *const names[TG_OP_COUNT] = {
    "embed", "ln_1", "qkv", "attn_scores", "attn_softmax", "attn_mix", "attn_proj",
    "ln_2", "mlp_up", "gelu", "mlp_down", "ln_f", "lm_head", "sample"};

static void put(const char *name, tg_opcost k, int last) {
    printf("  \"%s\": {\"flops\": %.17g, \"weight_bytes\": %.17g, \"kv_bytes\": %.17g, "
           "\"act_bytes\": %.17g}%s\n",
           name, k.flops, k.weight_bytes, k.kv_bytes, k.act_bytes, last ? "" : ",");
}

int main(int argc, char **argv) {
    if (argc != 9) {
        fprintf(stderr, "usage: opcount_dump L H E F V T POS N_LOGITS\n");
        return 2;
    }
    int a[8];
    for (int i = 0; i < 8; i++) a[i] = atoi(argv[i + 1]);
    tg_gpt2_config c = {.n_layer = a[0], .n_head = a[1], .n_embd = a[2], .n_ff = a[3],
                        .n_vocab = a[4], .n_ctx = a[6] + a[5], .ln_eps = 1e-5f};
    int T = a[5], pos = a[6], R = a[7];
    printf("{\n");
    for (int op = 0; op < TG_OP_COUNT; op++)
        put(names[op], tg_opcost_step(&c, (tg_op)op, T, pos, R), 0);
    put("forward", tg_opcost_forward(&c, T, pos, R), 1);
    printf("}\n");
    return 0;
}
