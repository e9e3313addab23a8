/* weights_dump.c — test helper: loads a model (GGUF or Hugging Face folder)
 * and writes every tensor as raw little-endian f32 in the gpt2 slot order
 * (token_embd, position_embd, per layer attn_norm w/b, attn_qkv w/b,
 * attn_output w/b, ffn_norm w/b, ffn_up w/b, ffn_down w/b, then
 * output_norm w/b, output), and prints the config as JSON on stdout.
 * Exit 1 with the loader's message if it fails. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weights/gpt2.h"

static int put(FILE *f, const float *x, size_t n) { return fwrite(x, sizeof *x, n, f) == n; }

/* a matrix row by row, decoded to f32 when it is typed */
static int put_matrix(FILE *f, const tg_weight *v) {
    float *row = malloc(sizeof(float) * (size_t)v->cols);
    int ok = row != NULL;
    for (int r = 0; r < v->rows && ok; r++) {
        tg_dequantize_row(v->type, row, (const char *)v->data + (size_t)r * v->row_bytes, v->cols);
        ok = put(f, row, (size_t)v->cols);
    }
    free(row);
    return ok;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: weights_dump MODEL OUT.bin\n");
        return 2;
    }
    tg_gpt2_model m;
    tg_err err;
    if (tg_gpt2_load(&m, argv[1], 0, &err)) {
        fprintf(stderr, "weights_dump: %s\n", err.msg);
        return 1;
    }
    FILE *f = fopen(argv[2], "wb");
    if (!f) return 1;
    const tg_gpt2_config *c = &m.cfg;
    size_t E = (size_t)c->n_embd, F = (size_t)c->n_ff;
    int ok = put_matrix(f, &m.w.wte) && put(f, m.w.wpe, (size_t)c->n_ctx * E);
    for (int l = 0; l < c->n_layer; l++) {
        const tg_gpt2_layer *y = &m.w.layers[l];
        ok = ok && put(f, y->ln1_w, E) && put(f, y->ln1_b, E) && put_matrix(f, &y->qkv_w) &&
             put(f, y->qkv_b, 3 * E) && put_matrix(f, &y->proj_w) && put(f, y->proj_b, E) &&
             put(f, y->ln2_w, E) && put(f, y->ln2_b, E) && put_matrix(f, &y->up_w) && put(f, y->up_b, F) &&
             put_matrix(f, &y->down_w) && put(f, y->down_b, E);
    }
    ok = ok && put(f, m.w.lnf_w, E) && put(f, m.w.lnf_b, E) && put_matrix(f, &m.w.lm_head);
    ok = (fclose(f) == 0) && ok;
    printf("{\"n_layer\": %d, \"n_head\": %d, \"n_embd\": %d, \"n_ctx\": %d, \"n_vocab\": %d, \"n_ff\": %d, "
           "\"ln_eps\": %.9g, \"tied\": %d, \"n_tokens\": %d, \"n_merges\": %d, \"bos\": %d, \"eos\": %d, "
           "\"n_params\": %zu}\n",
           c->n_layer, c->n_head, c->n_embd, c->n_ctx, c->n_vocab, c->n_ff, (double)c->ln_eps, m.w.tied,
           m.vocab.n_tokens, m.vocab.n_merges, m.vocab.bos_id, m.vocab.eos_id, tg_gpt2_n_params(c, m.w.tied));
    tg_gpt2_free(&m);
    return ok ? 0 : 1;
}
