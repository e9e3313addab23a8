/* probe_overhead.c — what the probe hook costs when nobody listens.
 *
 * The forward pass (model/gpt.c, model/attention.c) is built twice as a
 * shared library: tgfwd_hooks as shipped (probe calls compiled in), and
 * tgfwd_none with -DTG_NO_PROBE (every probe call compiled out). This
 * program loads both into one process (dlopen, RTLD_LOCAL; each library is
 * linked -Bsymbolic with its own copy of the engine) and runs the same
 * generation on each — a 16-token prompt, then greedy decode to position
 * 128 — alternating them repetition by repetition in A B B A order, so the
 * two see the same machine at the same moment. One thread; the time of a
 * repetition is the thread's CPU time (on a shared machine, wall time
 * mostly measures the other tenants). The verdict is the median over
 * rounds of the ratio hooks / none within a round.
 *
 * A third variant, `profiled`, attaches tinygpt's profiler to the hooks
 * build: what `tinygpt profile` pays.
 *
 *   probe_overhead HOOKS.so NONE.so [--rounds N] [-m MODEL.gguf]
 *
 * Without -m the model is a random tiny GPT-2 in memory (L4 H4 E128 C256
 * V512): the shortest ops, so the worst case for a per-op cost. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model/gpt.h"
#include "model/profiler.h"

/* The entry points of one build of the forward pass. */
typedef struct forward_lib {
    const char *name;
    void *dl;
    tg_status (*create)(tg_gpt **, const tg_gpt2_model *, const tg_gpt_opts *, tg_err *);
    void (*free_)(tg_gpt *);
    tg_status (*forward)(tg_gpt *, const int *, int, int, float *, int, tg_err *);
    void (*set_probe)(tg_gpt *, const tg_probe *);
    const tg_gpt2_config *(*config)(const tg_gpt *);
} forward_lib;

static void *sym(void *dl, const char *lib, const char *name) {
    void *p = dlsym(dl, name);
    if (!p) {
        fprintf(stderr, "probe_overhead: %s: no symbol %s\n", lib, name);
        exit(1);
    }
    return p;
}

static void open_lib(forward_lib *f, const char *name, const char *path) {
    f->name = name;
    f->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!f->dl) {
        fprintf(stderr, "probe_overhead: %s\n", dlerror());
        exit(1);
    }
    *(void **)&f->create = sym(f->dl, path, "tg_gpt_create");
    *(void **)&f->free_ = sym(f->dl, path, "tg_gpt_free");
    *(void **)&f->forward = sym(f->dl, path, "tg_gpt_forward");
    *(void **)&f->set_probe = sym(f->dl, path, "tg_gpt_set_probe");
    *(void **)&f->config = sym(f->dl, path, "tg_gpt_config");
}

static double thread_cpu_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + 1e-6 * (double)ts.tv_nsec;
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
    m->cfg = (tg_gpt2_config){.n_layer = L, .n_head = H, .n_embd = E, .n_ctx = C, .n_vocab = V, .n_ff = 4 * E, .ln_eps = 1e-5f};
    size_t e = (size_t)E, F = 4 * e;
    size_t n = tg_gpt2_n_params(&m->cfg, 1);
    float *blob = malloc(n * sizeof *blob), *p = blob;
    tg_gpt2_layer *ly = calloc((size_t)L, sizeof *ly);
    if (!blob || !ly) exit(1);
    for (size_t i = 0; i < n; i++) blob[i] = 0.1f * frand();
    m->w.wte = tg_weight_f32(p, V, E), p += (size_t)V * e;
    m->w.wpe = p, p += (size_t)C * e;
    for (int l = 0; l < L; l++) {
        ly[l].ln1_w = p, p += e;
        ly[l].ln1_b = p, p += e;
        ly[l].qkv_w = tg_weight_f32(p, 3 * E, E), p += 3 * e * e;
        ly[l].qkv_b = p, p += 3 * e;
        ly[l].proj_w = tg_weight_f32(p, E, E), p += e * e;
        ly[l].proj_b = p, p += e;
        ly[l].ln2_w = p, p += e;
        ly[l].ln2_b = p, p += e;
        ly[l].up_w = tg_weight_f32(p, 4 * E, E), p += F * e;
        ly[l].up_b = p, p += F;
        ly[l].down_w = tg_weight_f32(p, E, 4 * E), p += e * F;
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

typedef struct variant {
    const char *name;
    const forward_lib *lib;
    tg_gpt *g;
    tg_profiler *prof;  /* NULL: no probe attached */
    double *ms;         /* per round, mean of the round's repetitions */
    int last_token;
} variant;

/* One generation: prompt of P tokens, then greedy decode up to C. Returns
 * the CPU milliseconds it took. */
static double generate(variant *v, const tg_gpt2_model *m, int *tokens, float *logits, int P,
                       int C) {
    /* A fresh instance per generation: freed and made again in turn, the
     * variants get the same KV cache and scratch addresses from malloc, so
     * no variant is stuck with a worse memory layout for a whole run. */
    tg_err err;
    tg_gpt_opts o = {1, NULL, 0, TG_WTYPE_F32};
    if (v->lib->create(&v->g, m, &o, &err)) die(&err);
    if (v->prof) v->lib->set_probe(v->g, tg_profiler_probe(v->prof));
    const tg_gpt2_config *c = v->lib->config(v->g);
    double t0 = thread_cpu_ms();
    for (int pos = 0; pos < C;) {
        int T = pos == 0 ? P : 1;
        if (v->prof) tg_profiler_step_begin(v->prof);
        if (v->lib->forward(v->g, tokens + pos, T, pos, logits, 0, &err)) die(&err);
        if (v->prof && tg_profiler_step_end(v->prof, pos ? TG_PHASE_DECODE : TG_PHASE_PREFILL,
                                            T, pos, 1, 0, &err))
            die(&err);
        pos += T;
        if (pos < C) tokens[pos] = argmax(logits, c->n_vocab);
    }
    double ms = thread_cpu_ms() - t0;
    v->last_token = tokens[C - 1];
    v->lib->free_(v->g);
    v->g = NULL;
    return ms;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(const double *x, int n) {
    double *s = malloc((size_t)n * sizeof *s);
    if (!s) exit(1);
    memcpy(s, x, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    double m = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
    free(s);
    return m;
}

static double quantile(const double *x, int n, double q) {
    double *s = malloc((size_t)n * sizeof *s);
    if (!s) exit(1);
    memcpy(s, x, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    double v = s[(int)(q * (n - 1) + 0.5)];
    free(s);
    return v;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: probe_overhead HOOKS.so NONE.so [--rounds N] [-m MODEL]\n");
        return 2;
    }
    int rounds = 400;
    const char *path = NULL;
    for (int i = 3; i < argc; i++) {
        if (!strcmp(argv[i], "--rounds") && i + 1 < argc) rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-m") && i + 1 < argc) path = argv[++i];
        else {
            fprintf(stderr, "probe_overhead: unknown argument %s\n", argv[i]);
            return 2;
        }
    }
    if (rounds < 2 || rounds > 100000) return 2;
    forward_lib hooks, none;
    open_lib(&hooks, "hooks", argv[1]);
    open_lib(&none, "none", argv[2]);

    tg_err err;
    tg_gpt2_model m;
    float *blob = NULL;
    if (path) {
        if (tg_gpt2_load(&m, path, 0, &err)) die(&err);
    } else {
        blob = random_model(&m, 4, 4, 128, 256, 512);
    }
    variant v[3] = {{.name = "none", .lib = &none}, {.name = "hooks", .lib = &hooks},
                    {.name = "profiled", .lib = &hooks}};
    for (int i = 0; i < 3; i++) {
        v[i].ms = calloc((size_t)rounds, sizeof *v[i].ms);
        if (!v[i].ms) return 1;
    }
    const tg_gpt2_config *c = &m.cfg;
    if (tg_profiler_create(&v[2].prof, c, 1, NULL, 0, 0, &err)) die(&err);
    int C = c->n_ctx < 128 ? c->n_ctx : 128, P = C / 8 > 0 ? C / 8 : 1;
    float *logits = malloc((size_t)c->n_vocab * sizeof *logits);
    int *tokens = malloc((size_t)C * sizeof *tokens);
    double *ratio = malloc((size_t)rounds * sizeof *ratio);
    if (!logits || !tokens || !ratio) return 1;
    for (int i = 0; i < P; i++) tokens[i] = (i * 7919 + 13) % c->n_vocab;
    for (int i = 0; i < 3; i++) generate(&v[i], &m, tokens, logits, P, C); /* warm-up */
    for (int r = 0; r < rounds; r++) {
        /* A B B A (B A A B on odd rounds), then the profiled one. */
        int a = r % 2, b = 1 - a;
        double t[2] = {0, 0};
        t[a] += generate(&v[a], &m, tokens, logits, P, C);
        t[b] += generate(&v[b], &m, tokens, logits, P, C);
        t[b] += generate(&v[b], &m, tokens, logits, P, C);
        t[a] += generate(&v[a], &m, tokens, logits, P, C);
        v[0].ms[r] = t[0] / 2;
        v[1].ms[r] = t[1] / 2;
        v[2].ms[r] = generate(&v[2], &m, tokens, logits, P, C);
        tg_profiler_reset(v[2].prof);
        ratio[r] = v[1].ms[r] / v[0].ms[r];
    }
    double r50 = median(ratio, rounds), r25 = quantile(ratio, rounds, 0.25),
           r75 = quantile(ratio, rounds, 0.75);
    double none_ms = median(v[0].ms, rounds), hooks_ms = median(v[1].ms, rounds),
           prof_ms = median(v[2].ms, rounds);
    double none_min = quantile(v[0].ms, rounds, 0), hooks_min = quantile(v[1].ms, rounds, 0);
    printf("generation of %d tokens (%d-token prompt, greedy decode), L%d H%d E%d, 1 thread;\n"
           "%d rounds of none/hooks in A B B A order; CPU time per generation (median):\n",
           C, P, c->n_layer, c->n_head, c->n_embd, rounds);
    printf("  none     (probe compiled out)      %9.3f ms\n", none_ms);
    printf("  hooks    (compiled in, no probe)   %9.3f ms\n", hooks_ms);
    printf("  profiled (profiler attached)       %9.3f ms   %.3fx none\n", prof_ms,
           prof_ms / none_ms);
    printf("  fastest round: none %.3f ms, hooks %.3f ms (ratio %.4f)\n", none_min, hooks_min,
           hooks_min / none_min);
    printf("hooks / none per round: median %.4f, quartiles %.4f - %.4f\n", r50, r25, r75);
    if (v[0].last_token != v[1].last_token || v[0].last_token != v[2].last_token)
        printf("warning: the variants generated different tokens (%d, %d, %d)\n",
               v[0].last_token, v[1].last_token, v[2].last_token);
    printf("hooks / none = %.4f: %s\n", r50,
           r50 >= 0.99 && r50 <= 1.01 ? "within 1%" : "NOT within 1%");
    tg_profiler_free(v[2].prof);
    for (int i = 0; i < 3; i++) free(v[i].ms);
    if (blob) {
        free(m.w.layers);
        free(blob);
    } else {
        tg_gpt2_free(&m);
    }
    free(logits);
    free(tokens);
    free(ratio);
    dlclose(hooks.dl);
    dlclose(none.dl);
    return 0;
}
