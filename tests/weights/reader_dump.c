/* reader_dump.c — test helper: reads a llama2.c checkpoint (weights/llama2c.c)
 * or a Hugging Face Llama folder (weights/hf_llama.c) through the reader
 * side of weights/tensors.h, writes every view as raw little-endian f32 in
 * the set's order and prints the tg_model_config and the view list (name,
 * numpy shape, GGML type) as JSON on stdout. Exit 1 with the reader's
 * message if it fails. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "weights/gguf.h"
#include "weights/hf_llama.h"
#include "weights/llama2c.h"

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: reader_dump FILE|FOLDER OUT.bin\n");
        return 2;
    }
    struct stat sb;
    int folder = stat(argv[1], &sb) == 0 && S_ISDIR(sb.st_mode);
    tg_l2c *c = NULL;
    tg_hf_llama *h = NULL;
    tg_model_config cfg;
    tg_tensor_set ts = {0};
    tg_err err;
    int tied = 0, version = -1, group = 0, bos = -1, eos = -1;
    tg_status s;
    if (folder) {
        s = tg_hf_llama_open(&h, argv[1], &err);
        if (!s) s = tg_hf_llama_tensor_set(h, &ts, &err);
        if (!s) cfg = h->cfg, tied = h->tie, bos = h->bos_id, eos = h->eos_id;
    } else {
        s = tg_l2c_open(&c, argv[1], &err);
        if (!s) s = tg_l2c_check_finite(c, &err);
        if (!s) s = tg_l2c_tensor_set(c, &cfg, &ts, &err);
        if (!s) tied = c->cfg.shared, version = (int)c->cfg.version, group = c->cfg.group_size;
    }
    if (s) {
        fprintf(stderr, "reader_dump: %s\n", err.msg);
        return 1;
    }
    FILE *f = fopen(argv[2], "wb");
    if (!f) return 1;
    printf("{\"dim\": %d, \"hidden_dim\": %d, \"n_layers\": %d, \"n_heads\": %d, \"n_kv_heads\": %d, "
           "\"vocab_size\": %d, \"seq_len\": %d, \"head_dim\": %d, \"rope_dim\": %d, \"rope_theta\": %.9g, "
           "\"eps\": %.9g, \"rope_pairs\": \"%s\", \"arch\": %d, \"tied\": %s, \"version\": %d, \"group_size\": %d, "
           "\"bos\": %d, \"eos\": %d, \"tensors\": [",
           cfg.n_embd, cfg.n_ff, cfg.n_layer, cfg.n_head, cfg.n_kv_head, cfg.n_vocab, cfg.n_ctx, cfg.head_dim,
           cfg.rope_dim, (double)cfg.rope_theta, (double)cfg.ln_eps,
           cfg.rope_pairs == TG_ROPE_ADJACENT ? "adjacent" : "halves", (int)cfg.arch, tied ? "true" : "false", version,
           group, bos, eos);
    int ok = 1;
    for (int i = 0; i < ts.n && ok; i++) {
        const tg_tensor_view *v = &ts.t[i];
        uint64_t n = (uint64_t)(v->ne[0] * v->ne[1] * v->ne[2] * v->ne[3]);
        tg_gguf_tensor t = {.name = v->name, .n_dims = v->n_dims, .type = v->type, .n_elements = n,
                            .nbytes = v->nbytes, .data = v->data};
        for (int d = 0; d < 4; d++) t.ne[d] = v->ne[d];
        float *x = malloc((size_t)n * sizeof *x + 1);
        ok = x && tg_gguf_tensor_to_f32(&t, x, &err) == TG_OK && fwrite(x, sizeof *x, (size_t)n, f) == (size_t)n;
        free(x);
        printf("%s[\"%s\", [", i ? ", " : "", v->name);
        for (int d = v->n_dims - 1; d >= 0; d--) printf("%" PRId64 "%s", v->ne[d], d ? ", " : "");
        printf("], %u]", v->type);
    }
    printf("]}\n");
    ok = (fclose(f) == 0) && ok;
    free(ts.t);
    tg_l2c_close(c);
    tg_hf_llama_close(h);
    return ok ? 0 : 1;
}
