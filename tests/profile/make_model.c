/* make_model.c — writes a random GPT-2 (GPT-2's initialisation: N(0, 0.02)
 * weights, unit LayerNorm gains, zero biases) with a byte vocabulary, for
 * the profile and bench command tests.
 * usage: make_model OUT.gguf L H E C */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "weights/gpt2.h"

static uint64_t rng = 0x2545F4914F6CDD1Du;

static float gauss(void) { /* Box-Muller over xorshift64* */
    double u[2];
    for (int i = 0; i < 2; i++) {
        rng ^= rng >> 12;
        rng ^= rng << 25;
        rng ^= rng >> 27;
        u[i] = ((rng * 0x2545F4914F6CDD1Du) >> 11) * 0x1p-53;
    }
    return (float)(sqrt(-2 * log(u[0] + 0x1p-60)) * cos(6.283185307179586 * u[1]));
}

static float *owned[1024];
static int n_owned;

static float *fill(size_t n, float mean, float sd) {
    float *p = malloc(n * sizeof *p);
    if (!p || n_owned == 1024) exit(1);
    owned[n_owned++] = p;
    for (size_t i = 0; i < n; i++) p[i] = mean + sd * (sd ? gauss() : 0);
    return p;
}

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: make_model OUT.gguf L H E C\n");
        return 2;
    }
    tg_err err;
    tg_vocab vocab;
    if (tg_vocab_bytes(&vocab, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    int L = atoi(argv[2]), H = atoi(argv[3]), E = atoi(argv[4]), C = atoi(argv[5]);
    tg_gpt2_config cfg = {.n_layer = L, .n_head = H, .n_embd = E, .n_ctx = C,
                          .n_vocab = vocab.n_tokens, .n_ff = 4 * E, .ln_eps = 1e-5f};
    size_t e = (size_t)E, F = 4 * e, V = (size_t)cfg.n_vocab;
    tg_gpt2_weights w = {0};
    w.wte = tg_weight_f32(fill(V * e, 0, 0.02f), (int)V, E);
    w.wpe = fill((size_t)C * e, 0, 0.01f);
    w.layers = calloc((size_t)L, sizeof *w.layers);
    for (int l = 0; l < L; l++) {
        tg_gpt2_layer *ly = &w.layers[l];
        ly->ln1_w = fill(e, 1, 0);
        ly->ln1_b = fill(e, 0, 0);
        ly->qkv_w = tg_weight_f32(fill(3 * e * e, 0, 0.02f), 3 * E, E);
        ly->qkv_b = fill(3 * e, 0, 0);
        ly->proj_w = tg_weight_f32(fill(e * e, 0, 0.02f), E, E);
        ly->proj_b = fill(e, 0, 0);
        ly->ln2_w = fill(e, 1, 0);
        ly->ln2_b = fill(e, 0, 0);
        ly->up_w = tg_weight_f32(fill(F * e, 0, 0.02f), 4 * E, E);
        ly->up_b = fill(F, 0, 0);
        ly->down_w = tg_weight_f32(fill(e * F, 0, 0.02f), E, 4 * E);
        ly->down_b = fill(e, 0, 0);
    }
    w.lnf_w = fill(e, 1, 0);
    w.lnf_b = fill(e, 0, 0);
    w.lm_head = w.wte;
    w.tied = 1;
    int rc = 0;
    if (tg_gpt2_save(argv[1], &cfg, &w, &vocab, TG_DTYPE_F32, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        rc = 1;
    }
    for (int i = 0; i < n_owned; i++) free(owned[i]);
    free(w.layers);
    tg_vocab_free(&vocab);
    return rc;
}
