/* bench_sampler.c — the sampler's cost per token with the default settings
 * (temperature 0.8, top-k 40, top-p 0.95, min-p 0.05) over V logits,
 * against the previous sampler (a heap and a sort; tests/model/
 * sampler_oracle.c, the test's oracle) in the same run, interleaved.
 *
 *   bench_sampler [--vocab V] [--reps N] [--cold]
 *
 * The logits are a sequence of 64 vectors of N(0, 3²) values, hot in the
 * cache (as the LM head has just written them) unless --cold rotates
 * through 64 MB of them. Times are this thread's CPU time: median of N
 * repetitions of one pass over the sequence, per token, and the median of
 * the per-repetition ratios old / new. Reported, never asserted. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model/sampler.h"
#include "tests/model/sampler_oracle.h"

static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    int V = 1024, reps = 41, cold = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--vocab") && i + 1 < argc) V = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--cold")) cold = 1;
        else {
            fprintf(stderr, "usage: bench_sampler [--vocab V] [--reps N] [--cold]\n");
            return 2;
        }
    }
    if (V < 1 || V > (1 << 24) || reps < 1 || reps > 1001) {
        fprintf(stderr, "bench_sampler: --vocab 1..2^24, --reps 1..1001\n");
        return 2;
    }
    int n_vec = cold ? (int)(64e6 / (4.0 * V)) : 64;
    if (n_vec < 64) n_vec = 64;
    float *x = malloc(sizeof(float) * (size_t)V * (size_t)n_vec);
    double *tn = malloc(sizeof(double) * (size_t)reps), *to = malloc(sizeof(double) * (size_t)reps);
    double *ratio = malloc(sizeof(double) * (size_t)reps);
    if (!x || !tn || !to || !ratio) {
        fprintf(stderr, "bench_sampler: out of memory\n");
        return 1;
    }
    srand(1);
    for (size_t i = 0; i < (size_t)V * n_vec; i++) {
        double u = (rand() + 1.0) / (RAND_MAX + 2.0), v = rand() / (RAND_MAX + 1.0);
        x[i] = (float)(3 * sqrt(-2 * log(u)) * cos(6.283185307179586 * v));
    }
    tg_sampler_params p = tg_sampler_defaults();
    tg_sampler *s;
    oracle_sampler *o;
    tg_err err;
    if (tg_sampler_create(&s, &p, V, &err) || oracle_sampler_create(&o, &p, V, &err)) {
        fprintf(stderr, "bench_sampler: %s\n", err.msg);
        return 1;
    }
    int per = 64; /* tokens per repetition */
    long sum = 0, mismatch = 0, off = 0;
    for (int r = 0; r < reps; r++) {
        long o0 = off;
        double t0 = cpu_now();
        for (int i = 0; i < per; i++) sum += tg_sampler_sample(s, x + (size_t)((o0 + i) % n_vec) * V);
        double t1 = cpu_now();
        for (int i = 0; i < per; i++) {
            int b = oracle_sampler_sample(o, x + (size_t)((o0 + i) % n_vec) * V);
            sum -= b;
        }
        double t2 = cpu_now();
        off += per;
        tn[r] = (t1 - t0) / per;
        to[r] = (t2 - t1) / per;
        ratio[r] = to[r] / tn[r];
    }
    mismatch = sum; /* the same seed and logits: the sums of the picks agree */
    qsort(tn, (size_t)reps, sizeof *tn, cmp_double);
    qsort(to, (size_t)reps, sizeof *to, cmp_double);
    qsort(ratio, (size_t)reps, sizeof *ratio, cmp_double);
    printf("sampler V=%d (temp %.2g, top-k %d, top-p %.2g, min-p %.2g), logits %s, %d x %d tokens:\n"
           "  new %.3f us/token (best %.3f) | old %.3f us/token (best %.3f) | old/new %.2fx "
           "(median of per-repetition ratios) | picks %s\n",
           V, p.temp, p.top_k, p.top_p, p.min_p, cold ? "cold (64 MB rotated)" : "hot", reps, per,
           1e6 * tn[reps / 2], 1e6 * tn[0], 1e6 * to[reps / 2], 1e6 * to[0], ratio[reps / 2],
           mismatch == 0 ? "agree" : "DIFFER");
    tg_sampler_free(s);
    oracle_sampler_free(o);
    free(x);
    free(tn);
    free(to);
    free(ratio);
    return mismatch != 0;
}
