/* bench_train.c — training throughput of model/train.c (tokens/s of
 * forward + backward + AdamW) for one model shape; prints one JSON line.
 * usage: bench_train L H E C V B threads steps [llama KVH F]
 * (with "llama KVH F": a tied Llama with KVH key/value heads and
 * feed-forward width F instead of a GPT-2) */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "model/train.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    if (argc != 9 && argc != 12) {
        fprintf(stderr, "usage: bench_train L H E C V B threads steps [llama KVH F]\n");
        return 2;
    }
    int L = atoi(argv[1]), H = atoi(argv[2]), E = atoi(argv[3]), C = atoi(argv[4]);
    int V = atoi(argv[5]), B = atoi(argv[6]), nth = atoi(argv[7]), steps = atoi(argv[8]);
    tg_gpt2_config cfg = {.n_layer = L, .n_head = H, .n_embd = E, .n_ctx = C, .n_vocab = V,
                          .n_ff = 4 * E, .ln_eps = 1e-5f};
    int llama = argc == 12;
    if (llama) {
        cfg.arch = TG_ARCH_LLAMA, cfg.n_kv_head = atoi(argv[10]), cfg.n_ff = atoi(argv[11]);
        cfg.head_dim = cfg.rope_dim = E / H, cfg.rope_theta = 10000.0f;
    }
    tg_trainer *tr;
    tg_err err;
    if (tg_trainer_create(&tr, &cfg, B, C, nth, NULL, &err) != TG_OK) {
        fprintf(stderr, "bench_train: %s\n", err.msg);
        return 1;
    }
    tg_trainer_init_params(tr, 1);
    int *tok = malloc(sizeof(int) * B * C), *tgt = malloc(sizeof(int) * B * C);
    tg_rng r = {3};
    for (int i = 0; i < B * C; i++) tok[i] = (int)(tg_rng_next(&r) % V), tgt[i] = (int)(tg_rng_next(&r) % V);
    tg_adamw opt = {0.9f, 0.95f, 1e-8f, 0.1f};
    double t0 = 0;
    float loss = 0;
    for (int s = 0; s < steps + 1; s++) {
        if (s == 1) t0 = now(); /* the first step warms up */
        tg_trainer_forward(tr, tok, tgt, B, C, &loss, NULL, NULL);
        tg_trainer_zero_grad(tr);
        tg_trainer_backward(tr);
        tg_trainer_step(tr, &opt, 1e-3f, 1.0f);
    }
    double dt = now() - t0;
    printf("{\"impl\": \"tinygpt\", \"arch\": \"%s\", \"threads\": %d, \"tokens_per_s\": %.1f, \"ms_per_step\": %.2f, \"params\": %zu, \"loss\": %.4f}\n",
           llama ? "llama" : "gpt2", nth, steps * (double)B * C / dt, dt * 1e3 / steps, tg_trainer_n_params(tr), loss);
    tg_trainer_free(tr);
    free(tok), free(tgt);
    return 0;
}
