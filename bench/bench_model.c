/* bench_model.c — end-to-end forward-pass speed against ceilings measured in
 * the same run (reported, never asserted):
 *
 *  gpt2-small  (L12 H12 E768 C1024 V50257, random f32, tied head)
 *    decode    tok/s vs the DRAM roofline: a decode step must read every
 *              weight and the KV cache once (model/opcount.h), so at best
 *              tok/s = bandwidth / bytes per step; bandwidth is measured
 *              here with the same thread count. Target >= 85%. With one
 *              thread also by CPU time (the probe's and the step's), which
 *              a busy host's preemption moves less than wall time.
 *    prefill   512 tokens vs OpenBLAS sgemm doing the same matmuls (QKV,
 *              proj, up, down per layer, and the LM head row); target:
 *              sgemm time / our time >= 0.8.
 *  tiny        (L4 H4 E128 C256 V512) decode tok/s, 1 and 2 threads;
 *              target >= 20,000 tok/s on 1, and 2 never slower than 1.
 *  stories15m  a Llama of llama2.c's stories15M shape (L6 H6 E288 F768
 *              C256 V32000, random f32, tied classifier): decode vs the
 *              DRAM roofline as gpt2-small (target >= 85%), prefill alone.
 *
 *   bench_model [--quick] [--only tiny|gpt2|stories15m] [-t 1,2] [--isa ISA]
 *   bench_model ... --dtype f32,bf16,f32,bf16 --prefill 128,512 [--no-decode]
 *              prefill of each length; every type other than f32 also as a
 *              ratio to the latest f32 prefill of the same shape, threads
 *              and length in this run (issue #15's target: >= 2x)
 *   bench_model --only gpt2 -t 1 --step-log N   N decode steps, each timed (CPU
 *              time, page faults), alternated with those of a copy of the same
 *              GPT-2 in 2 MiB-page anonymous memory (bench/README.md, the slow
 *              steps)
 *   bench_model --model FILE [--quick] [-t 1,2]   (decode and prefill of a
 *                                                  checkpoint, e.g. one from
 *                                                  `tinygpt init`)
 *
 * Each figure is the best of a few repetitions (the machine is shared).
 * The model is built in memory with random weights: speed does not depend
 * on the values, and no file or `tinygpt init` run is needed. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "engine/mem.h"
#include "engine/roofline.h"
#include "model/gpt.h"
#include "model/opcount.h"
#include "model/sampler.h"

#ifdef TG_HAVE_OPENBLAS
#include <cblas.h>
#endif

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* CPU time of the whole process: on a shared machine, steps / CPU seconds
 * of a 1-thread run is the rate an idle core would give (the wall-clock
 * figure is what you get now). */
static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- a random GPT-2 in memory ----------------------------------------------- */

typedef struct bench_model {
    tg_gpt2_model m;
    float *blob;
} bench_model;

static tg_dtype bench_dtype; /* --dtype: the weight type written and loaded (f32 = 0) */
static uint64_t rng_state = 0x1234567;
static float frand(void) { /* xorshift64*: uniform in [-1, 1) */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (float)((rng_state * 0x2545F4914F6CDD1Dull) >> 40) * 0x1.0p-23f - 1.0f;
}

static int make_model(bench_model *b, int L, int H, int E, int C, int V) {
    memset(b, 0, sizeof *b);
    tg_gpt2_config c = {.n_layer = L, .n_head = H, .n_embd = E, .n_ctx = C, .n_vocab = V, .n_ff = 4 * E, .ln_eps = 1e-5f};
    size_t Ez = (size_t)E, F = 4 * Ez;
    size_t per_layer = 4 * Ez + 3 * Ez * Ez + 3 * Ez + Ez * Ez + Ez + F * Ez + F + Ez * F + Ez;
    size_t n = (size_t)V * Ez + (size_t)C * Ez + (size_t)L * per_layer + 2 * Ez;
    float *p = b->blob = malloc(n * sizeof(float));
    tg_gpt2_layer *layers = calloc((size_t)L, sizeof *layers);
    if (!p || !layers) return -1;
    float scale = 1.0f / sqrtf((float)E);
    for (size_t i = 0; i < n; i++) p[i] = scale * frand();
    tg_gpt2_weights *w = &b->m.w;
    w->wte = tg_weight_f32(p, V, E), p += (size_t)V * Ez;
    w->wpe = p, p += (size_t)C * Ez;
    for (int l = 0; l < L; l++) {
        tg_gpt2_layer *y = &layers[l];
        y->ln1_w = p, p += Ez;
        y->ln1_b = p, p += Ez;
        y->ln2_w = p, p += Ez;
        y->ln2_b = p, p += Ez;
        y->qkv_w = tg_weight_f32(p, 3 * E, E), p += 3 * Ez * Ez;
        y->qkv_b = p, p += 3 * Ez;
        y->proj_w = tg_weight_f32(p, E, E), p += Ez * Ez;
        y->proj_b = p, p += Ez;
        y->up_w = tg_weight_f32(p, 4 * E, E), p += F * Ez;
        y->up_b = p, p += F;
        y->down_w = tg_weight_f32(p, E, 4 * E), p += Ez * F;
        y->down_b = p, p += Ez;
    }
    w->layers = layers;
    w->lnf_w = p, p += Ez;
    w->lnf_b = p, p += Ez;
    w->lm_head = w->wte;
    w->tied = 1;
    b->m.cfg = c;
    b->m.has_weights = 1;
    return 0;
}

/* A random Llama (f32, tied classifier) written with tg_llama_save and
 * loaded back with tg_model_load: mapped like every command's model. */
static int make_llama(bench_model *b, int L, int H, int KVH, int E, int F, int C, int V) {
    memset(b, 0, sizeof *b);
    tg_model_config c = {.n_layer = L, .n_head = H, .n_embd = E, .n_ctx = C, .n_vocab = V,
                         .n_ff = F, .ln_eps = 1e-5f, .arch = TG_ARCH_LLAMA, .n_kv_head = KVH};
    size_t Ez = (size_t)E, Fz = (size_t)F, KV = (size_t)KVH * (E / H);
    size_t per_layer = 2 * Ez + 2 * Ez * Ez + 2 * KV * Ez + 3 * Fz * Ez;
    size_t n = (size_t)V * Ez + (size_t)L * per_layer + Ez;
    float *blob = malloc(n * sizeof(float)), *p = blob;
    tg_llama_weights w = {0};
    w.layers = calloc((size_t)L, sizeof *w.layers);
    if (!p || !w.layers) return -1;
    float scale = 1.0f / sqrtf((float)E);
    for (size_t i = 0; i < n; i++) p[i] = scale * frand();
    w.tok_embd = tg_weight_f32(p, V, E), p += (size_t)V * Ez;
    for (int l = 0; l < L; l++) {
        tg_llama_layer *y = &w.layers[l];
        y->attn_norm = p, p += Ez;
        y->ffn_norm = p, p += Ez;
        y->wq = tg_weight_f32(p, E, E), p += Ez * Ez;
        y->wk = tg_weight_f32(p, (int)KV, E), p += KV * Ez;
        y->wv = tg_weight_f32(p, (int)KV, E), p += KV * Ez;
        y->wo = tg_weight_f32(p, E, E), p += Ez * Ez;
        y->w1 = tg_weight_f32(p, F, E), p += Fz * Ez;
        y->w3 = tg_weight_f32(p, F, E), p += Fz * Ez;
        y->w2 = tg_weight_f32(p, E, F), p += Ez * Fz;
    }
    w.out_norm = p;
    w.output = w.tok_embd;
    w.tied = 1;
    const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    char path[4096];
    snprintf(path, sizeof path, "%s/tinygpt-bench-XXXXXX", dir);
    int fd = mkstemp(path);
    tg_err err;
    int rc = -1;
    if (fd >= 0) {
        close(fd);
        if (tg_llama_save(path, &c, &w, NULL, (int)bench_dtype, &err) ||
            tg_model_load(&b->m, path, 0, &err))
            fprintf(stderr, "bench_model: %s\n", err.msg);
        else
            rc = 0;
    unlink(path); /* the mapping outlives the name */
    }
    free(w.layers);
    free(blob);
    return rc;
}

static void free_model(bench_model *b) {
    if (b->blob) {
        free(b->m.w.layers);
        free(b->blob);
    } else {
        tg_gpt2_free(&b->m);
    }
}

/* Writes the model to a temporary GGUF and loads it back the way every
 * tinygpt command does (mmap), so the bench measures the product's memory:
 * file pages come in large folios here (FileHugePages), which stream from
 * DRAM ~25% faster than the 4 KB anonymous pages of a malloc'd model. */
static int small_pages; /* --small-pages: keep the malloc'd model (4 KB pages) */
static int step_log;    /* --step-log N: N decode steps, each timed (0: off) */
static tg_wtype kv_type;  /* --kv-type f16: the KV cache in IEEE half (default f32) */


/* what the matrices' real types add to opcount's f32 weight bytes */
static double typed_bytes_delta(const tg_gpt2_model *m) { return tg_opcost_typed_delta_model(m); }

static int reload_via_gguf(bench_model *b) {
    if (small_pages) return 0;
    const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    char path[4096];
    snprintf(path, sizeof path, "%s/tinygpt-bench-XXXXXX", dir);
    int fd = mkstemp(path);
    if (fd < 0) {
        fprintf(stderr, "bench_model: cannot create a temporary file in %s\n", dir);
        return -1;
    }
    close(fd);
    tg_err err;
    tg_gpt2_model m = {0};
    if (tg_gpt2_save(path, &b->m.cfg, &b->m.w, NULL, bench_dtype, &err) ||
        tg_gpt2_load(&m, path, 0, &err)) {
        fprintf(stderr, "bench_model: %s\n", err.msg);
        unlink(path);
        return -1;
    }
    unlink(path); /* the mapping outlives the name */
    free_model(b);
    b->blob = NULL;
    b->m = m;
    return 0;
}

static tg_gpt *make_gpt(bench_model *b, int threads, const char *isa) {
    tg_gpt *g;
    tg_err err;
    tg_gpt_opts o = {threads, isa, 0, kv_type};
    if (tg_gpt_create(&g, &b->m, &o, &err)) {
        fprintf(stderr, "bench_model: %s\n", err.msg);
        exit(1);
    }
    return g;
}

static void forward(tg_gpt *g, const int *tok, int T, int pos, float *logits) {
    tg_err err;
    if (tg_gpt_forward(g, tok, T, pos, logits, 0, &err)) {
        fprintf(stderr, "bench_model: %s\n", err.msg);
        exit(1);
    }
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Decode tok/s: prefill n_prompt tokens, then time `steps` single-token
 * steps (greedy sampling included when `sample`), `reps` times: the median
 * rate by the wall clock (returned), the best (*best_rate) and the best by
 * CPU time (*cpu_rate). */
static double decode_rate(tg_gpt *g, int n_prompt, int steps, int reps, int sample,
                          double *cpu_rate, double *best_rate) {
    const tg_gpt2_config *c = tg_gpt_config(g);
    float *logits = malloc((size_t)c->n_vocab * sizeof *logits);
    int *prompt = malloc((size_t)n_prompt * sizeof *prompt);
    double *rates = malloc((size_t)reps * sizeof *rates);
    for (int i = 0; i < n_prompt; i++) prompt[i] = (i * 7919) % c->n_vocab;
    tg_sampler_params sp = tg_sampler_defaults();
    sp.temp = 0;
    tg_sampler *s;
    tg_err err;
    tg_sampler_create(&s, &sp, c->n_vocab, &err);
    double best_cpu = 0;
    for (int r = 0; r < reps; r++) {
        forward(g, prompt, n_prompt, 0, logits);
        int tok = 1;
        double t0 = now(), c0 = cpu_now();
        for (int i = 0; i < steps; i++) {
            if (sample) tok = tg_sampler_sample(s, logits);
            forward(g, &tok, 1, n_prompt + i, logits);
        }
        double crate = steps / (cpu_now() - c0);
        rates[r] = steps / (now() - t0);
        best_cpu = crate > best_cpu ? crate : best_cpu;
    }
    double med = median(rates, reps);
    if (best_rate) *best_rate = rates[reps - 1]; /* median() sorted them */
    if (cpu_rate) *cpu_rate = best_cpu;
    tg_sampler_free(s);
    free(rates);
    free(prompt);
    free(logits);
    return med;
}

/* ---- gpt2-small --------------------------------------------------------------- */

#ifdef TG_HAVE_OPENBLAS
/* The matmuls of a T-token prefill (last-row LM head) with OpenBLAS sgemm,
 * on the same weights; best of reps. */
static double blas_prefill_time(const bench_model *b, int T, int threads, int reps,
                                double *cpu_time) {
    const tg_gpt2_config *c = &b->m.cfg;
    int E = c->n_embd, F = c->n_ff, V = c->n_vocab;
    float *x = malloc((size_t)T * F * sizeof(float)), *y = malloc((size_t)T * F * sizeof(float));
    for (size_t i = 0; i < (size_t)T * F; i++) x[i] = frand();
    openblas_set_num_threads(threads);
    double best = INFINITY, best_cpu = INFINITY;
    for (int r = 0; r < reps; r++) {
        double t0 = now(), c0 = cpu_now();
        for (int l = 0; l < c->n_layer; l++) {
            const tg_gpt2_layer *w = &b->m.w.layers[l];
            const struct {
                const float *w;
                int in, out;
            } mm[4] = {{w->qkv_w.data, E, 3 * E}, {w->proj_w.data, E, E}, {w->up_w.data, E, F},
                       {w->down_w.data, F, E}};
            for (int k = 0; k < 4; k++)
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, mm[k].out, mm[k].in, 1.0f,
                            x, mm[k].in, mm[k].w, mm[k].in, 0.0f, y, mm[k].out);
        }
        float *logits = malloc((size_t)V * sizeof(float));
        cblas_sgemv(CblasRowMajor, CblasNoTrans, V, E, 1.0f, b->m.w.lm_head.data, E, x, 1, 0.0f,
                    logits, 1);
        double t = now() - t0, ct = cpu_now() - c0;
        free(logits);
        best = t < best ? t : best;
        best_cpu = ct < best_cpu ? ct : best_cpu;
    }
    *cpu_time = best_cpu;
    free(x);
    free(y);
    return best;
}
#endif

typedef struct decode_vs_dram {
    double med_step_s, best_step_s; /* one decode step */
    double med_gbs, best_gbs;       /* one DRAM probe pass */
    double cpu_s;                   /* process CPU time of all the steps */
    double med_mm_s;                /* the step's matmuls alone (step_matmuls) */
    double mm_bytes;                /* the bytes of their weights */
    double mm_frac;                 /* median over pairs of their share of the roofline */
    /* the same two shares by CPU time (process CPU seconds of the pass, the
     * step and the matmuls; 1 thread, where all of it runs on the caller):
     * time the process was preempted counts in neither, so on a busy host
     * these move less than the wall-clock ones */
    double cpu_frac, mm_cpu_frac;
} decode_vs_dram;

/* The matrices of one decode step in the forward's order (GPT-2: qkv, proj,
 * up, down per layer; Llama: q, k, v, o, gate, up, down), the LM head last. */
enum { STEP_MATS_MAX = 7 * 64 + 1 };
static int step_matrices(const tg_gpt *g, const tg_weight **mats) {
    const tg_model *m = tg_gpt_model(g);
    int n = 0;
    for (int l = 0; l < m->cfg.n_layer && n + 8 <= STEP_MATS_MAX; l++) {
        if (m->cfg.arch == TG_ARCH_LLAMA) {
            const tg_llama_layer *y = &m->llama.layers[l];
            const tg_weight *ls[7] = {&y->wq, &y->wk, &y->wv, &y->wo, &y->w1, &y->w3, &y->w2};
            for (int k = 0; k < 7; k++) mats[n++] = ls[k];
        } else {
            const tg_gpt2_layer *y = &m->w.layers[l];
            const tg_weight *ls[4] = {&y->qkv_w, &y->proj_w, &y->up_w, &y->down_w};
            for (int k = 0; k < 4; k++) mats[n++] = ls[k];
        }
    }
    mats[n++] = m->cfg.arch == TG_ARCH_LLAMA ? &m->llama.output : &m->w.lm_head;
    return n;
}

/* The step's matmuls alone (T = 1, tg_matmul_w on the model's own
 * weights, on the forward's engine and pool): what the decode step costs
 * beyond them is its other ops and per-op overheads. */
static void step_matmuls(tg_gpt *g, const tg_weight *const *mats, int n, float *x, float *y,
                         void *ws) {
    for (int i = 0; i < n; i++)
        tg_matmul_w(tg_gpt_engine(g), tg_gpt_pool(g), y, x, mats[i], NULL, 1, ws);
}

/* Decode `steps` tokens after an n_prompt prefill, each step preceded by one
 * pass of the DRAM probe (4x the LLC, on the same threads): both see the
 * same machine over the same seconds, so on a shared host their medians
 * compare fairly, where a best-of-many probe against an averaged decode
 * would not. The probe also flushes the caches, as a big model's step
 * would itself. */
static tg_status decode_interleaved(tg_gpt *g, int th, int n_prompt, int steps, double bytes,
                                    decode_vs_dram *d, tg_err *err) {
    const tg_gpt2_config *c = tg_gpt_config(g);
    tg_dram_probe *probe;
    tg_status s = tg_dram_probe_create(&probe, 0, err);
    if (s) return s;
    float *logits = malloc((size_t)c->n_vocab * sizeof *logits);
    int *prompt = malloc((size_t)n_prompt * sizeof *prompt);
    double *step = malloc((size_t)steps * sizeof *step), *gbs = malloc((size_t)steps * sizeof *gbs);
    if (!logits || !prompt || !step || !gbs) {
        s = tg_fail(err, TG_ERR_NOMEM, "bench: out of memory");
        goto done;
    }
    for (int i = 0; i < n_prompt; i++) prompt[i] = (i * 7919) % c->n_vocab;
    forward(g, prompt, n_prompt, 0, logits);
    d->cpu_s = 0;
    /* the matmuls alone, each run after a probe pass of its own */
    const tg_weight *mats[STEP_MATS_MAX];
    int n_mats = step_matrices(g, mats), max_in = 0, max_out = 0;
    d->mm_bytes = 0;
    for (int i = 0; i < n_mats; i++) {
        max_in = mats[i]->cols > max_in ? mats[i]->cols : max_in;
        max_out = mats[i]->rows > max_out ? mats[i]->rows : max_out;
        d->mm_bytes += (double)mats[i]->row_bytes * mats[i]->rows;
    }
    float *mx = calloc((size_t)max_in, sizeof(float)), *my = malloc((size_t)max_out * sizeof(float));
    double *mm = malloc((size_t)steps * sizeof *mm), *mm_frac = malloc((size_t)steps * sizeof *mm_frac);
    double *cfrac = malloc((size_t)steps * sizeof *cfrac), *mcfrac = malloc((size_t)steps * sizeof *mcfrac);
    void *mws = malloc(tg_matmul_ws(TG_WTYPE_Q8_0, 1, max_in, 1) + 64);
    if (!mx || !my || !mm || !mm_frac || !cfrac || !mcfrac || !mws) {
        s = tg_fail(err, TG_ERR_NOMEM, "bench: out of memory");
        goto done_mm;
    }
    for (int i = 0; i < max_in; i++) mx[i] = frand();
    for (int i = 0; i < steps; i++) {
        /* the probe's rate by CPU time: the bytes it read (its rate times
         * its wall time) over its CPU time */
        double p0 = now(), pc0 = cpu_now();
        s = tg_dram_probe_pass(probe, tg_gpt_pool(g), th, &gbs[i], err);
        if (s) goto done_mm;
        double cgbs = gbs[i] * (now() - p0) / (cpu_now() - pc0);
        int tok = 1 + i;
        double t0 = now(), c0 = cpu_now();
        forward(g, &tok, 1, n_prompt + i, logits);
        step[i] = now() - t0;
        double ct = cpu_now() - c0;
        d->cpu_s += ct;
        cfrac[i] = bytes / (cgbs * 1e9) / ct;
        double mgbs;
        p0 = now(), pc0 = cpu_now();
        s = tg_dram_probe_pass(probe, tg_gpt_pool(g), th, &mgbs, err);
        if (s) goto done_mm;
        cgbs = mgbs * (now() - p0) / (cpu_now() - pc0);
        t0 = now(), c0 = cpu_now();
        step_matmuls(g, mats, n_mats, mx, my, mws);
        mm[i] = now() - t0;
        mm_frac[i] = d->mm_bytes / (mgbs * 1e9) / mm[i];
        mcfrac[i] = d->mm_bytes / (cgbs * 1e9) / (cpu_now() - c0);
    }
    d->med_mm_s = median(mm, steps);
    d->mm_frac = median(mm_frac, steps);
    d->cpu_frac = median(cfrac, steps);
    d->mm_cpu_frac = median(mcfrac, steps);
done_mm:
    free(mx);
    free(my);
    free(mm);
    free(mm_frac);
    free(cfrac);
    free(mcfrac);
    free(mws);
    if (s) goto done;
    d->med_step_s = median(step, steps);
    d->best_step_s = step[0]; /* median() sorted them */
    d->med_gbs = median(gbs, steps);
    d->best_gbs = gbs[steps - 1];
done:
    free(step);
    free(gbs);
    free(prompt);
    free(logits);
    tg_dram_probe_free(probe);
    return s;
}

/* ---- --step-log N: the distribution of single decode steps ------------------------ */

static double thread_cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The value of `key` in /proc/self/smaps_rollup (kB; 0 if absent or
 * unreadable). */
static long proc_value(const char *file, const char *key) {
    FILE *f = fopen(file, "r");
    if (!f) return 0;
    char line[256];
    long v = 0;
    size_t n = strlen(key);
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, key, n) && (line[n] == ':' || line[n] == ' ')) {
            v = strtol(line + n + 1, NULL, 10);
            break;
        }
    fclose(f);
    return v;
}

static void print_mapping(const char *when) {
    printf("         %s: Rss %ld MiB, FilePmdMapped %ld MiB, AnonHugePages %ld MiB\n", when,
           proc_value("/proc/self/smaps_rollup", "Rss") >> 10,
           proc_value("/proc/self/smaps_rollup", "FilePmdMapped") >> 10,
           proc_value("/proc/self/smaps_rollup", "AnonHugePages") >> 10);
}

/* The CPU time distribution of one model's steps, and its slow steps
 * (over twice the median) with the faults they took. */
static void print_steps(const char *what, const double *cpu, const double *wall, const long *flt,
                        int steps) {
    double *sorted = malloc((size_t)steps * sizeof *sorted);
    if (!sorted) exit(1);
    memcpy(sorted, cpu, (size_t)steps * sizeof *sorted);
    qsort(sorted, (size_t)steps, sizeof *sorted, cmp_double);
    double med = sorted[steps / 2], slow_ms = 0;
    long faults = 0;
    int slow = 0;
    for (int i = 0; i < steps; i++) faults += flt[i];
    printf("         %s: %d steps, CPU ms: min %.2f, median %.2f, p90 %.2f, p99 %.2f, max %.2f; "
           "page faults %ld\n", what, steps, 1e3 * sorted[0], 1e3 * med,
           1e3 * sorted[steps * 9 / 10], 1e3 * sorted[steps * 99 / 100], 1e3 * sorted[steps - 1],
           faults);
    for (int i = 0; i < steps; i++)
        if (cpu[i] > 2 * med) {
            slow_ms += 1e3 * (cpu[i] - med);
            if (slow++ < 8)
                printf("           slow step %4d: CPU %.2f ms, wall %.2f ms, %ld faults\n", i,
                       1e3 * cpu[i], 1e3 * wall[i], flt[i]);
        }
    printf("         %s: steps over 2x the median CPU time: %d of %d (%.0f ms beyond the "
           "median in all)\n", what, slow, steps, slow_ms);
    free(sorted);
}

/* A GPT-2's copy in anonymous memory: its tensors (matrices, position
 * embedding, vectors) moved to one 2 MiB-page block (tg_alloc_large), a
 * tied classifier still the token embedding; the rest (config, vocab) is
 * the original's, which must outlive the copy. anon_put counts the bytes
 * while a->p is NULL, then copies. */
typedef struct anon_block {
    char *p;
    size_t used;
} anon_block;

static const void *anon_put(anon_block *a, const void *src, size_t n) {
    size_t at = (a->used + 63) & ~(size_t)63;
    a->used = at + n;
    return a->p && src ? memcpy(a->p + at, src, n) : src;
}

static void anon_weight(anon_block *a, tg_weight *w) {
    w->data = anon_put(a, w->data, (size_t)w->rows * w->row_bytes);
}

static void anon_f32(anon_block *a, const float **v, size_t n) {
    *v = anon_put(a, *v, n * sizeof **v);
}

static void anon_walk(anon_block *a, tg_gpt2_weights *w, const tg_gpt2_config *c) {
    size_t E = (size_t)c->n_embd, F = (size_t)c->n_ff;
    const void *wte = w->wte.data;
    anon_weight(a, &w->wte);
    anon_f32(a, &w->wpe, (size_t)c->n_ctx * E);
    for (int l = 0; l < c->n_layer; l++) {
        tg_gpt2_layer *y = &w->layers[l];
        anon_f32(a, &y->ln1_w, E), anon_f32(a, &y->ln1_b, E);
        anon_weight(a, &y->qkv_w), anon_f32(a, &y->qkv_b, 3 * E);
        anon_weight(a, &y->proj_w), anon_f32(a, &y->proj_b, E);
        anon_f32(a, &y->ln2_w, E), anon_f32(a, &y->ln2_b, E);
        anon_weight(a, &y->up_w), anon_f32(a, &y->up_b, F);
        anon_weight(a, &y->down_w), anon_f32(a, &y->down_b, E);
    }
    anon_f32(a, &w->lnf_w, E), anon_f32(a, &w->lnf_b, E);
    if (w->lm_head.data == wte) w->lm_head = w->wte;
    else anon_weight(a, &w->lm_head);
}

/* *copy = m with its tensors in anonymous memory (*block; free() it and
 * copy->w.layers). */
static int anon_copy(tg_gpt2_model *copy, void **block, const tg_gpt2_model *m) {
    anon_block a = {0};
    *copy = *m;
    size_t L = (size_t)m->cfg.n_layer;
    anon_walk(&a, &copy->w, &copy->cfg); /* the size */
    copy->w.layers = malloc(L * sizeof *copy->w.layers);
    if (!copy->w.layers || !(a.p = tg_alloc_large(a.used))) {
        free(copy->w.layers);
        return -1;
    }
    memcpy(copy->w.layers, m->w.layers, L * sizeof *copy->w.layers);
    a.used = 0;
    anon_walk(&a, &copy->w, &copy->cfg);
    *block = a.p;
    return 0;
}

/* step_log decode steps after a 64-token prefill: the wall and CPU time of
 * each (the calling thread's; with -t 1 it does all the work) and the page
 * faults it took; for a mapped GPT-2 (not --small-pages), the steps of its
 * copy in anonymous memory alternate with its own, so both see the same
 * machine. */
static void decode_step_log(const bench_model *b, tg_gpt *g) {
    const tg_gpt2_config *c = tg_gpt_config(g);
    int n_prompt = 64, steps = step_log, nm = 1;
    if (n_prompt + steps > c->n_ctx) steps = c->n_ctx - n_prompt;
    tg_gpt *gs[2] = {g, NULL};
    bench_model ab = {.blob = NULL};
    void *block = NULL;
    if (!b->blob && c->arch == TG_ARCH_GPT2) {
        if (anon_copy(&ab.m, &block, &b->m)) fprintf(stderr, "bench_model: no anonymous copy for --step-log\n");
        else gs[nm++] = make_gpt(&ab, 1, NULL);
    }
    size_t V = (size_t)c->n_vocab;
    float *logits = malloc(2 * V * sizeof *logits);
    int prompt[64];
    double *wall = malloc(2 * (size_t)steps * sizeof *wall), *cpu = malloc(2 * (size_t)steps * sizeof *cpu);
    long *flt = malloc(2 * (size_t)steps * sizeof *flt);
    if (!logits || !wall || !cpu || !flt) {
        fprintf(stderr, "bench_model: out of memory\n");
        exit(1);
    }
    for (int i = 0; i < n_prompt; i++) prompt[i] = (i * 7919) % c->n_vocab;
    for (int k = 0; k < nm; k++) forward(gs[k], prompt, n_prompt, 0, logits + k * V);
    if (nm > 1 && memcmp(logits, logits + V, V * sizeof *logits)) {
        fprintf(stderr, "bench_model: the anonymous copy's logits differ from the model's\n");
        exit(1);
    }
    print_mapping("after the prefill");
    for (int i = 0; i < steps; i++)
        for (int k = 0; k < nm; k++) {
            struct rusage r0, r1;
            int tok = 1 + i;
            getrusage(RUSAGE_THREAD, &r0);
            double t0 = now(), c0 = thread_cpu_now();
            forward(gs[k], &tok, 1, n_prompt + i, logits);
            cpu[k * steps + i] = thread_cpu_now() - c0;
            wall[k * steps + i] = now() - t0;
            getrusage(RUSAGE_THREAD, &r1);
            flt[k * steps + i] = (r1.ru_minflt - r0.ru_minflt) + (r1.ru_majflt - r0.ru_majflt);
        }
    print_mapping("after the steps  ");
    print_steps("mapped", cpu, wall, flt, steps);
    if (nm > 1) {
        print_steps("anonymous copy", cpu + steps, wall + steps, flt + steps, steps);
        tg_gpt_free(gs[1]);
        free(ab.m.w.layers);
        free(block);
    }
    free(logits);
    free(wall);
    free(cpu);
    free(flt);
}

/* --prefill T,...: the prefill lengths (default: one, half the context up
 * to 512); --no-decode skips the decode figures. */
static int prefill_T[8], n_prefill, no_decode;

/* The f32 prefill rates measured so far in this run, by model shape,
 * thread count and T: each other type's prefill prints its ratio to the
 * latest one (list the types as f32,q8_0,f32,q8_0 to interleave them). */
typedef struct f32_rate {
    int arch, n_layer, n_embd, n_vocab, threads, T;
    double rate, cpu_rate;
} f32_rate;
static f32_rate f32_rates[64];
static int n_f32_rates;

static f32_rate *f32_rate_find(const tg_gpt2_config *c, int th, int T, int add) {
    for (int i = 0; i < n_f32_rates; i++) {
        f32_rate *r = &f32_rates[i];
        if (r->arch == (int)c->arch && r->n_layer == c->n_layer && r->n_embd == c->n_embd &&
            r->n_vocab == c->n_vocab && r->threads == th && r->T == T)
            return r;
    }
    if (!add || n_f32_rates == (int)(sizeof f32_rates / sizeof f32_rates[0])) return NULL;
    f32_rate *r = &f32_rates[n_f32_rates++];
    *r = (f32_rate){(int)c->arch, c->n_layer, c->n_embd, c->n_vocab, th, T, 0, 0};
    return r;
}

/* One prefill of T tokens into an empty cache, best of a few (more for
 * short ones), against OpenBLAS (f32 GPT-2) and against the f32 prefill
 * of this run (other types). */
static void bench_prefill(bench_model *b, tg_gpt *g, int th, int T, int quick) {
    const tg_gpt2_config *c = &b->m.cfg;
    int *tok = malloc((size_t)T * sizeof *tok);
    float *logits = malloc((size_t)c->n_vocab * sizeof *logits);
    for (int i = 0; i < T; i++) tok[i] = (i * 31) % c->n_vocab;
    double best = INFINITY, best_cpu = INFINITY;
    int reps = (quick ? 2 : 4) * (T < 512 ? 512 / T : 1);
    for (int r = 0; r < reps; r++) {
        double s0 = now(), c0 = cpu_now();
        forward(g, tok, T, 0, logits);
        double t = now() - s0, ct = cpu_now() - c0;
        best = t < best ? t : best;
        best_cpu = ct < best_cpu ? ct : best_cpu;
    }
    tg_opcost f = tg_opcost_forward(c, T, 0, 1);
    printf("prefill  %d thread%s %-6s %d tokens in %.3f s, %7.1f tok/s, %6.1f GFLOP/s",
           th, th == 1 ? " " : "s", tg_isa_name(tg_gpt_engine(g)->isa), T, best, T / best,
           f.flops / best * 1e-9);
    /* f32 matrices: no byte differs from 4 per weight */
    int is_f32 = typed_bytes_delta(&b->m) == 0;
    if (is_f32) {
        f32_rate *r = f32_rate_find(c, th, T, 1);
        if (r) r->rate = T / best, r->cpu_rate = T / best_cpu;
    }
#ifdef TG_HAVE_OPENBLAS
    /* sgemm needs f32 weights, and the baseline knows GPT-2's matmuls only */
    if (b->m.cfg.arch == TG_ARCH_GPT2 && is_f32) {
        double blas_cpu, blas = blas_prefill_time(b, T, th, quick ? 2 : 4, &blas_cpu);
        printf(" | OpenBLAS sgemm (same matmuls) %.3f s | ratio %.2f (target 0.8)", blas,
               blas / best);
        if (th == 1)
            printf(" | by CPU time %.3f s vs %.3f s: ratio %.2f", best_cpu, blas_cpu,
                   blas_cpu / best_cpu);
    } else
        printf(" | by CPU time %.3f s", best_cpu);
#else
    printf(" | by CPU time %.3f s | (no OpenBLAS baseline)", best_cpu);
#endif
    if (!is_f32) {
        f32_rate *r = f32_rate_find(c, th, T, 0);
        if (r)
            printf(" | vs f32 of this run %.2fx (f32 %.1f tok/s; by CPU time %.2fx)",
                   (T / best) / r->rate, r->rate, (T / best_cpu) / r->cpu_rate);
        else
            printf(" | vs f32: none measured before in this run");
    }
    printf("\n");
    fflush(stdout);
    free(tok);
    free(logits);
}

/* Decode against the DRAM roofline and prefill against OpenBLAS, for a model
 * with a context of at least 128. */
static void bench_big(bench_model *b, const int *threads, int n_threads, const char *isa,
                      int quick) {
    const tg_gpt2_config *c = &b->m.cfg;
    int n_prompt = 64, steps = quick ? 24 : 64, T_default = c->n_ctx < 1024 ? c->n_ctx / 2 : 512;
    for (int ti = 0; ti < n_threads; ti++) {
        int th = threads[ti];
        tg_gpt *g = make_gpt(b, th, isa);
        tg_err err;
        if (step_log) {
            decode_step_log(b, g);
            tg_gpt_free(g);
            continue;
        }
        if (!no_decode) {
            tg_opcost k = tg_opcost_forward(c, 1, n_prompt + steps / 2, 1);
            /* the KV cache's bytes as stored (an f16 cache: half) */
            double kv_bytes = k.kv_bytes * tg_kv_scale(kv_type);
            double bytes = k.weight_bytes + typed_bytes_delta(&b->m) + kv_bytes;
            decode_vs_dram d = {0};
            if (decode_interleaved(g, th, n_prompt, steps, bytes, &d, &err)) {
                fprintf(stderr, "bench_model: %s\n", err.msg);
                exit(1);
            }
            /* Medians of the interleaved samples, and best against best. */
            double rate = 1 / d.med_step_s, roof = d.med_gbs * 1e9 / bytes;
            printf("decode   %d thread%s %-6s %6.2f tok/s | DRAM %5.1f GB/s, %.0f MB/token -> "
                   "roofline %6.2f tok/s | %5.1f%% of roofline (target 85%%) | best step vs best "
                   "pass: %.2f tok/s, %.1f GB/s, %.1f%%",
                   th, th == 1 ? " " : "s", tg_isa_name(tg_gpt_engine(g)->isa), rate, d.med_gbs,
                   bytes * 1e-6, roof, 100 * rate / roof, 1 / d.best_step_s, d.best_gbs,
                   100 * (bytes / d.best_step_s) / (d.best_gbs * 1e9));
            if (th == 1)
                printf(" | by CPU time %.2f tok/s, %.1f%% of roofline (matmuls alone %.1f%%)",
                       steps / d.cpu_s, 100 * d.cpu_frac, 100 * d.mm_cpu_frac);
            printf("\n");
            /* The rest of the step is the other ops (norms, attention, adds,
             * the embedding row), and among them attention reads the KV
             * cache from memory (the probe pass before each step evicts
             * it): those bytes are in the roofline's, so at the probe's
             * rate they take kv ms of the rest by right. */
            printf("         the step's matmuls alone: %.2f ms for %.0f MB, %5.1f%% of roofline; "
                   "the rest of the step %.2f ms (%.1f%% of it; the KV cache's %.1f MB at the "
                   "probe's rate: %.2f ms)\n",
                   1e3 * d.med_mm_s, d.mm_bytes * 1e-6, 100 * d.mm_frac,
                   1e3 * (d.med_step_s - d.med_mm_s), 100 * (1 - d.med_mm_s / d.med_step_s),
                   kv_bytes * 1e-6, 1e3 * kv_bytes / (d.med_gbs * 1e9));
        }
        for (int pi = 0; pi < (n_prefill ? n_prefill : 1); pi++) {
            int T = n_prefill ? prefill_T[pi] : T_default;
            if (T > c->n_ctx) {
                printf("prefill  %d tokens: more than the context (%d), skipped\n", T, c->n_ctx);
                continue;
            }
            bench_prefill(b, g, th, T, quick);
        }
        tg_gpt_free(g);
    }
}

/* ---- tiny ----------------------------------------------------------------------- */

static void bench_tiny(const int *threads, int n_threads, const char *isa, int quick) {
    bench_model b;
    if (make_model(&b, 4, 4, 128, 256, 512) || reload_via_gguf(&b)) exit(1);
    printf("## tiny: L4 H4 E128 C256 V512, %s\n", tg_wtype_name(b.m.w.layers[0].up_w.type));
    double first = 0;
    for (int ti = 0; ti < n_threads; ti++) {
        int th = threads[ti];
        tg_gpt *g = make_gpt(&b, th, isa);
        /* the whole context: 1 prompt token, 255 decode steps */
        double cpu, best, fwd = decode_rate(g, 1, 255, quick ? 3 : 21, 0, &cpu, &best);
        double smp = decode_rate(g, 1, 255, quick ? 3 : 21, 1, NULL, NULL);
        if (ti == 0) first = fwd;
        printf("decode   %d thread%s %-6s %8.0f tok/s forward only (median of %d; best %.0f), "
               "%8.0f tok/s with greedy sampling (target 20000 on 1 thread)",
               th, th == 1 ? " " : "s", tg_isa_name(tg_gpt_engine(g)->isa), fwd,
               quick ? 3 : 21, best, smp);
        if (th == 1) printf(" | by CPU time %.0f tok/s", cpu);
        if (ti > 0) printf(" | %.2fx of %d thread%s", fwd / first, threads[0], threads[0] == 1 ? "" : "s");
        printf("\n");
        fflush(stdout);
        tg_gpt_free(g);
    }
    free_model(&b);
}

int main(int argc, char **argv) {
    int quick = 0, threads[8] = {1, 2}, n_threads = 2;
    const char *dtypes = "f32";
    const char *only = NULL, *isa = NULL, *model_path = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strcmp(argv[i], "--small-pages")) small_pages = 1;
        else if (!strcmp(argv[i], "--kv-type") && i + 1 < argc) {
            const char *kv = argv[++i];
            if (strcmp(kv, "f32") && strcmp(kv, "f16")) {
                fprintf(stderr, "bench_model: --kv-type: '%s' is not f32 or f16\n", kv);
                return 2;
            }
            kv_type = strcmp(kv, "f16") ? TG_WTYPE_F32 : TG_WTYPE_F16;
        }
        else if (!strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
        else if (!strcmp(argv[i], "--isa") && i + 1 < argc) isa = argv[++i];
        else if (!strcmp(argv[i], "--model") && i + 1 < argc) model_path = argv[++i];
        else if (!strcmp(argv[i], "--dtype") && i + 1 < argc) dtypes = argv[++i];
        else if (!strcmp(argv[i], "--no-decode")) no_decode = 1;
        else if (!strcmp(argv[i], "--step-log") && i + 1 < argc) {
            step_log = atoi(argv[++i]);
            if (step_log < 1 || step_log > 1 << 20) {
                fprintf(stderr, "bench_model: --step-log: a number of steps, >= 1\n");
                return 2;
            }
        }
        else if (!strcmp(argv[i], "--prefill") && i + 1 < argc) {
            n_prefill = 0;
            for (char *s = argv[++i]; *s && n_prefill < 8;) {
                prefill_T[n_prefill] = (int)strtol(s, &s, 10);
                if (prefill_T[n_prefill] < 2 || prefill_T[n_prefill] > 1 << 16) {
                    fprintf(stderr, "bench_model: --prefill: token counts in [2, 65536]\n");
                    return 2;
                }
                n_prefill++;
                if (*s == ',') s++;
                else if (*s) {
                    fprintf(stderr, "bench_model: --prefill: a list of token counts, e.g. 128,512\n");
                    return 2;
                }
            }
        }
        else if (!strcmp(argv[i], "-t") && i + 1 < argc) {
            n_threads = 0;
            for (char *s = argv[++i]; *s && n_threads < 8;) {
                threads[n_threads++] = (int)strtol(s, &s, 10);
                if (*s == ',') s++;
            }
        } else {
            fprintf(stderr, "usage: bench_model [--quick] [--only tiny|gpt2 | --model FILE] "
                            "[-t 1,2] [--isa ISA] [--small-pages] [--dtype f32,q8_0,...] [--kv-type f32|f16] "
                            "[--prefill 128,512] [--no-decode] [--step-log N]\n");
            return 2;
        }
    }
    for (int i = 0; i < n_threads; i++)
        if (threads[i] < 1 || threads[i] > 64) {
            fprintf(stderr, "bench_model: -t: threads in [1, 64]\n");
            return 2;
        }
    printf("# bench_model: medians of repeated runs (best also shown); ceilings measured in this run\n");
    /* --dtype a,b,...: the built-in models once per weight type, in order */
    char dlist[128];
    snprintf(dlist, sizeof dlist, "%s", dtypes);
    for (char *save = NULL, *d = strtok_r(dlist, ",", &save); d && !model_path;
         d = strtok_r(NULL, ",", &save)) {
        if (tg_dtype_parse(d, &bench_dtype)) {
            fprintf(stderr, "bench_model: --dtype: '%s' is not f32, f16, bf16, q8_0 or q4_0\n", d);
            return 2;
        }
        if (!only || !strcmp(only, "tiny")) bench_tiny(threads, n_threads, isa, quick);
        if (!only || !strcmp(only, "gpt2")) {
            bench_model b;
            double t0 = now();
            if (make_model(&b, 12, 12, 768, 1024, 50257)) {
                fprintf(stderr, "bench_model: out of memory for gpt2-small\n");
                return 1;
            }
            if (reload_via_gguf(&b)) return 1;
            printf("## gpt2-small: L12 H12 E768 C1024 V50257, %s, %.0f MB of matrices (built in %.1f s)\n",
                   d, (tg_gpt2_n_params(&b.m.cfg, 1) * 4 + typed_bytes_delta(&b.m)) * 1e-6, now() - t0);
            bench_big(&b, threads, n_threads, isa, quick);
            free_model(&b);
        }
        if (!only || !strcmp(only, "stories15m")) {
            bench_model b;
            if (make_llama(&b, 6, 6, 6, 288, 768, 256, 32000)) return 1;
            printf("## stories15m (Llama): L6 H6 KVH6 E288 F768 C256 V32000, %s, %.0f MB of "
                   "matrices\n", d, (tg_model_n_params(&b.m) * 4 + typed_bytes_delta(&b.m)) * 1e-6);
            bench_big(&b, threads, n_threads, isa, quick);
            free_model(&b);
        }
    }
    if (model_path) {
        bench_model b = {0};
        tg_err err;
        if (tg_model_load(&b.m, model_path, 0, &err)) {
            fprintf(stderr, "bench_model: %s\n", err.msg);
            return 1;
        }
        const tg_gpt2_config *c = &b.m.cfg;
        printf("## %s: L%d H%d E%d C%d V%d\n", model_path, c->n_layer, c->n_head, c->n_embd,
               c->n_ctx, c->n_vocab);
        if (c->n_ctx < 128) {
            fprintf(stderr, "bench_model: %s: a context of at least 128 is needed\n", model_path);
            return 1;
        }
        bench_big(&b, threads, n_threads, isa, quick);
        tg_gpt2_free(&b.m);
        return 0;
    }
    return 0;
}
