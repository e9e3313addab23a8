/* probe_overhead.c — what the probe hook costs when nobody listens.
 *
 * Built twice from the same source: probe_overhead_hooks links the model as
 * shipped (probe calls compiled in, no probe attached unless --profile);
 * probe_overhead_none rebuilds gpt.c and attention.c with -DTG_NO_PROBE, so
 * the calls are not there at all. Each process runs the same generation
 * (a 32-token prompt, then greedy decode to the end of the context) `reps`
 * times after a warm-up and prints the CPU and wall time of every
 * repetition as one JSON line; probe_overhead.py alternates the two
 * binaries and compares medians.
 *
 *   probe_overhead_{hooks,none} [--reps N] [--threads T] [-m MODEL.gguf]
 *   probe_overhead_hooks --profile ...   (with the profiler attached)
 *
 * Without -m the model is a random tiny GPT-2 in memory (L4 H4 E128 C256
 * V512): the shortest ops, so the worst case for a per-op cost. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model/gpt.h"
#ifndef TG_NO_PROBE
#include "model/profiler.h"
#endif

static double clock_s(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t rng = 0x853c49e6748fea9bu;
static float frand(void) { /* xorshift64*, uniform in [-1, 1) */
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return (float)((rng * 0x2545F4914F6CDD1Du) >> 40) * 0x1.0p-23f - 1.0f;
}

/* A random GPT-2 in memory, weights carved out of one block. */
static float *random_model(tg_gpt2_model *m, int L, int H, int E, int C, int V) {
    memset(m, 0, sizeof *m);
    m->cfg = (tg_gpt2_config){L, H, E, C, V, 4 * E, 1e-5f};
    size_t e = (size_t)E, F = 4 * e;
    size_t n = tg_gpt2_n_params(&m->cfg, 1);
    float *blob = malloc(n * sizeof *blob), *p = blob;
    tg_gpt2_layer *ly = calloc((size_t)L, sizeof *ly);
    if (!blob || !ly) exit(1);
    for (size_t i = 0; i < n; i++) blob[i] = 0.1f * frand();
    m->w.wte = p, p += (size_t)V * e;
    m->w.wpe = p, p += (size_t)C * e;
    for (int l = 0; l < L; l++) {
        ly[l].ln1_w = p, p += e;
        ly[l].ln1_b = p, p += e;
        ly[l].qkv_w = p, p += 3 * e * e;
        ly[l].qkv_b = p, p += 3 * e;
        ly[l].proj_w = p, p += e * e;
        ly[l].proj_b = p, p += e;
        ly[l].ln2_w = p, p += e;
        ly[l].ln2_b = p, p += e;
        ly[l].up_w = p, p += F * e;
        ly[l].up_b = p, p += F;
        ly[l].down_w = p, p += e * F;
        ly[l].down_b = p, p += e;
    }
    m->w.layers = ly;
    m->w.lnf_w = p, p += e;
    m->w.lnf_b = p, p += e;
    m->w.lm_head = m->w.wte;
    m->w.tied = 1;
    m->has_weights = 1;
    return blob;
}

static int argmax(const float *x, int n) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

static void die(const tg_err *err) {
    fprintf(stderr, "probe_overhead: %s\n", err->msg);
    exit(1);
}

int main(int argc, char **argv) {
    int reps = 20, threads = 1, profile = 0;
    const char *path = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-m") && i + 1 < argc) path = argv[++i];
        else if (!strcmp(argv[i], "--profile")) profile = 1;
        else {
            fprintf(stderr, "usage: %s [--reps N] [--threads T] [-m MODEL] [--profile]\n", argv[0]);
            return 2;
        }
    }
    if (reps < 1 || reps > 100000 || threads < 1 || threads > 256) return 2;
#ifdef TG_NO_PROBE
    const char *variant = "none";
    if (profile) {
        fprintf(stderr, "probe_overhead: --profile needs the build with the probe compiled in\n");
        return 2;
    }
#else
    const char *variant = profile ? "profiled" : "hooks";
#endif
    tg_err err;
    tg_gpt2_model m;
    float *blob = NULL;
    if (path) {
        if (tg_gpt2_load(&m, path, 0, &err)) die(&err);
    } else {
        blob = random_model(&m, 4, 4, 128, 256, 512);
    }
    tg_gpt *g;
    tg_gpt_opts o = {threads, NULL, 0};
    if (tg_gpt_create(&g, &m, &o, &err)) die(&err);
    const tg_gpt2_config *c = tg_gpt_config(g);
    int C = c->n_ctx < 256 ? c->n_ctx : 256, P = C / 8 > 0 ? C / 8 : 1;
    float *logits = malloc((size_t)c->n_vocab * sizeof *logits);
    int *tokens = malloc((size_t)C * sizeof *tokens);
    double *cpu = malloc((size_t)reps * sizeof *cpu), *wall = malloc((size_t)reps * sizeof *wall);
    if (!logits || !tokens || !cpu || !wall) return 1;
    for (int i = 0; i < P; i++) tokens[i] = (i * 7919 + 13) % c->n_vocab;
#ifndef TG_NO_PROBE
    tg_profiler *prof = NULL;
    if (profile) {
        if (tg_profiler_create(&prof, c, threads, tg_gpt_pool(g), 0, 0, &err)) die(&err);
        tg_gpt_set_probe(g, tg_profiler_probe(prof));
    }
#endif
    for (int r = -1; r < reps; r++) { /* r = -1: warm-up */
        double c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID), w0 = clock_s(CLOCK_MONOTONIC);
        for (int pos = 0; pos < C;) {
            int T = pos == 0 ? P : 1;
#ifndef TG_NO_PROBE
            if (prof) tg_profiler_step_begin(prof);
#endif
            if (tg_gpt_forward(g, tokens + pos, T, pos, logits, 0, &err)) die(&err);
#ifndef TG_NO_PROBE
            if (prof && tg_profiler_step_end(prof, pos ? TG_PHASE_DECODE : TG_PHASE_PREFILL, T,
                                             pos, 1, 0, &err))
                die(&err);
#endif
            pos += T;
            if (pos < C) tokens[pos] = argmax(logits, c->n_vocab);
        }
        if (r >= 0) {
            cpu[r] = (clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0) * 1e3;
            wall[r] = (clock_s(CLOCK_MONOTONIC) - w0) * 1e3;
        }
    }
    printf("{\"variant\": \"%s\", \"tokens\": %d, \"threads\": %d, \"cpu_ms\": [", variant, C,
           threads);
    for (int r = 0; r < reps; r++) printf("%s%.4f", r ? ", " : "", cpu[r]);
    printf("], \"wall_ms\": [");
    for (int r = 0; r < reps; r++) printf("%s%.4f", r ? ", " : "", wall[r]);
    printf("], \"last_token\": %d}\n", tokens[C - 1]);
#ifndef TG_NO_PROBE
    tg_profiler_free(prof);
#endif
    tg_gpt_free(g);
    if (blob) {
        free(m.w.layers);
        free(blob);
    } else {
        tg_gpt2_free(&m);
    }
    free(logits);
    free(tokens);
    free(cpu);
    free(wall);
    return 0;
}
