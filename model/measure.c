/* measure.c — the profile of a run, the context sweep, bench rows and
 * compare's speed (see measure.h). Moved from tools/cmd_profile.c,
 * tools/cmd_bench.c and tools/cmd_compare.c with the arithmetic unchanged
 * (tests/tools/golden_test.py keeps the deterministic fields). */
#define _POSIX_C_SOURCE 200809L
#include "model/measure.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model/sampler.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void tg_random_tokens(int *tokens, int n, int n_vocab, uint64_t seed) {
    uint64_t s = seed ^ 0x9E3779B97F4A7C15u;
    for (int i = 0; i < n; i++) { /* splitmix64 */
        uint64_t z = (s += 0x9E3779B97F4A7C15u);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
        z ^= z >> 31;
        tokens[i] = (int)(z % (uint64_t)n_vocab);
    }
}

static int cmp_double(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* Median of x[n] (sorts x). */
static double median(double *x, int n) {
    qsort(x, (size_t)n, sizeof *x, cmp_double);
    return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

static const tg_op attn_ops[3] = {TG_OP_ATTN_SCORES, TG_OP_ATTN_SOFTMAX, TG_OP_ATTN_MIX};

/* ---- the profile -------------------------------------------------------------------- */

static tg_profile_row make_row(const tg_profiler *p, tg_phase ph, tg_op op, int layer, int head,
                               double wall_ns, const tg_roofline *roof) {
    tg_prof_stat st = tg_profiler_stat(p, ph, op, layer, head);
    tg_profile_row r = {.op = op, .name = tg_op_name(op), .layer = layer, .head = head,
                        .calls = st.calls, .ns = st.ns};
    r.pct = wall_ns > 0 ? 100.0 * st.ns / wall_ns : 0;
    r.flops = st.cost.flops;
    r.bytes = tg_opcost_bytes(st.cost);
    r.weight_bytes = st.cost.weight_bytes;
    r.kv_bytes = st.cost.kv_bytes;
    r.act_bytes = st.cost.act_bytes;
    r.roof_pct = roof && st.ns > 0 ? 100.0 * tg_roofline_time(roof, r.flops, r.weight_bytes + r.kv_bytes) /
                                         (st.ns * 1e-9)
                                   : -1;
    return r;
}

static tg_status fill_phase(const tg_profiler *p, const tg_gpt2_config *c, tg_phase ph,
                            int n_threads, const tg_profile_opts *o, tg_profile_phase *out,
                            tg_err *err) {
    tg_prof_phase st = tg_profiler_phase(p, ph);
    out->phase = ph;
    out->info = st;
    out->busy_ns = calloc((size_t)n_threads, sizeof *out->busy_ns);
    out->ops = calloc(TG_OP_COUNT, sizeof *out->ops);
    int n_block = 0, n_head_ops = 0;
    for (int op = 0; op < TG_OP_COUNT; op++) {
        n_block += tg_op_in_block((tg_op)op);
        n_head_ops += tg_op_per_head((tg_op)op);
    }
    int heads = o->per_head && tg_profiler_has_heads(p, ph);
    if (o->per_layer) out->layers = calloc((size_t)c->n_layer * n_block, sizeof *out->layers);
    if (heads) out->heads = calloc((size_t)c->n_head * n_head_ops, sizeof *out->heads);
    if (!out->busy_ns || !out->ops || (o->per_layer && !out->layers) || (heads && !out->heads))
        return tg_fail(err, TG_ERR_NOMEM, "profile: out of memory");
    if (st.busy_ns) memcpy(out->busy_ns, st.busy_ns, (size_t)n_threads * sizeof *out->busy_ns);
    out->info.busy_ns = out->busy_ns;
    const tg_roofline *roof = o->roof;
    for (int op = 0; op < TG_OP_COUNT; op++)
        out->ops[op] = make_row(p, ph, (tg_op)op, TG_PROF_ALL, TG_PROF_ALL, st.wall_ns, roof);
    for (int l = 0; l < c->n_layer && o->per_layer; l++)
        for (int op = 0; op < TG_OP_COUNT; op++)
            if (tg_op_in_block((tg_op)op))
                out->layers[out->n_layers++] = make_row(p, ph, (tg_op)op, l, TG_PROF_ALL, st.wall_ns, roof);
    for (int h = 0; h < c->n_head && heads; h++)
        for (int op = 0; op < TG_OP_COUNT; op++)
            if (tg_op_per_head((tg_op)op))
                out->heads[out->n_heads++] = make_row(p, ph, (tg_op)op, TG_PROF_ALL, h, st.wall_ns, roof);
    /* The whole phase: the op rows plus the time no op was running: glue
     * between kernels, the probe's own clock reads, dispatch, wake-ups. */
    tg_profile_row outr = {.op = TG_OP_COUNT, .name = "(outside ops)", .layer = TG_PROF_ALL,
                           .head = TG_PROF_ALL, .ns = st.wall_ns - st.op_ns, .roof_pct = -1};
    outr.pct = st.wall_ns > 0 ? 100.0 * outr.ns / st.wall_ns : 0;
    out->outside = outr;
    tg_opcost all = {0};
    for (int op = 0; op < TG_OP_COUNT; op++)
        all = tg_opcost_add(all, tg_profiler_stat(p, ph, (tg_op)op, TG_PROF_ALL, TG_PROF_ALL).cost);
    tg_profile_row tot = {.op = TG_OP_COUNT, .name = "total", .layer = TG_PROF_ALL,
                          .head = TG_PROF_ALL, .ns = st.wall_ns, .pct = 100, .flops = all.flops,
                          .bytes = tg_opcost_bytes(all), .weight_bytes = all.weight_bytes,
                          .kv_bytes = all.kv_bytes, .act_bytes = all.act_bytes, .calls = st.steps};
    tot.roof_pct = roof && st.wall_ns > 0
                       ? 100.0 * tg_roofline_time(roof, tot.flops, all.weight_bytes + all.kv_bytes) /
                             (st.wall_ns * 1e-9)
                       : -1;
    out->total = tot;
    return TG_OK;
}

/* The prefill of prompt[n_prompt], then o->gen decode steps (each feeds
 * the token sampled last, at positions n_prompt .. n_prompt + gen - 1);
 * every step ends with a timed sample. */
static tg_status run_generation(tg_gpt *g, tg_profiler *p, const tg_profile_opts *o,
                                float *logits, tg_err *err) {
    const tg_gpt2_config *c = tg_gpt_config(g);
    tg_sampler_params sp = tg_sampler_defaults();
    sp.seed = o->seed;
    tg_sampler *s;
    tg_status st = tg_sampler_create(&s, &sp, c->n_vocab, err);
    if (st) return st;
    const tg_probe *pr = tg_profiler_probe(p);
    int tok = 0;
    for (int step = 0; step <= o->gen; step++) {
        int pos = step == 0 ? 0 : o->n_prompt + step - 1;
        int T = step == 0 ? o->n_prompt : 1;
        const int *in = step == 0 ? o->prompt : &tok;
        tg_profiler_step_begin(p);
        if ((st = tg_gpt_forward(g, in, T, pos, logits, 0, err))) break;
        pr->op_begin(pr->user, TG_OP_SAMPLE, -1, -1, 0);
        tok = tg_sampler_sample(s, logits);
        pr->op_end(pr->user, TG_OP_SAMPLE, -1, -1, 0);
        if (tok < 0) {
            st = tg_fail(err, TG_ERR_NUMERIC, "no logit is a number above -inf: nothing to sample");
            break;
        }
        tg_sampler_accept(s, tok);
        if ((st = tg_profiler_step_end(p, step == 0 ? TG_PHASE_PREFILL : TG_PHASE_DECODE, T, pos, 1,
                                       1, err)))
            break;
    }
    tg_sampler_free(s);
    return st;
}

void tg_profile_free(tg_profile *p) {
    if (!p) return;
    for (int ph = 0; ph < TG_PHASE_COUNT; ph++) {
        free(p->phase[ph].busy_ns);
        free(p->phase[ph].ops);
        free(p->phase[ph].layers);
        free(p->phase[ph].heads);
    }
    tg_profiler_free(p->profiler);
    memset(p, 0, sizeof *p);
}

tg_status tg_profile_run(tg_gpt *g, const tg_profile_opts *o, tg_profile *out, tg_err *err) {
    memset(out, 0, sizeof *out);
    if (!g || !o || !o->prompt || o->n_prompt < 1 || o->gen < 0 || o->reps < 1)
        return tg_fail(err, TG_ERR_ARG, "profile: no model, no prompt, or a count below its range");
    if ((long)o->n_prompt + o->gen > tg_gpt_n_ctx(g))
        return tg_fail(err, TG_ERR_RANGE, "profile: %d prompt tokens + %d decode steps do not fit "
                                          "the %d-position context", o->n_prompt, o->gen, tg_gpt_n_ctx(g));
    const tg_gpt2_config *c = tg_gpt_config(g);
    int nth = tg_pool_size(tg_gpt_pool(g));
    out->n_threads = nth;
    tg_status st = tg_profiler_create(&out->profiler, c, nth, tg_gpt_pool(g), o->keep_events, 0, err);
    if (st) return st;
    tg_profiler_set_gpt(out->profiler, g);
    float *logits = malloc((size_t)c->n_vocab * sizeof *logits);
    if (!logits) return tg_fail(err, TG_ERR_NOMEM, "profile: out of memory");
    /* Warm-up, unprofiled: pages of the weights, caches, the pool. */
    tg_gpt_set_probe(g, NULL);
    st = tg_gpt_forward(g, o->prompt, o->n_prompt, 0, logits, 0, err);
    if (!st) st = tg_gpt_forward(g, o->prompt, 1, o->n_prompt, logits, 0, err);
    if (!st) {
        tg_gpt_set_probe(g, tg_profiler_probe(out->profiler));
        for (int r = 0; r < o->reps && !st; r++) st = run_generation(g, out->profiler, o, logits, err);
        tg_gpt_set_probe(g, NULL);
    }
    free(logits);
    for (int ph = 0; ph < TG_PHASE_COUNT && !st; ph++) {
        if (!tg_profiler_phase(out->profiler, (tg_phase)ph).steps) continue;
        out->has_phase[ph] = 1;
        st = fill_phase(out->profiler, c, (tg_phase)ph, nth, o, &out->phase[ph], err);
    }
    return st;
}

/* ---- context sweep --------------------------------------------------------------------- */

tg_status tg_profile_sweep(tg_gpt *g, const int *ctxs, int n_ctx, int steps, uint64_t seed,
                           const tg_roofline *roof, tg_sweep_row *rows, tg_err *err) {
    if (!g || !ctxs || !rows || n_ctx < 1 || steps < 1)
        return tg_fail(err, TG_ERR_ARG, "sweep: no model, no lengths or no steps");
    for (int i = 0; i < n_ctx; i++)
        if (ctxs[i] < 1 || ctxs[i] > tg_gpt_n_ctx(g) - 1 || (i && ctxs[i] <= ctxs[i - 1]))
            return tg_fail(err, TG_ERR_RANGE, "sweep: length %d is not ascending within [1, %d]",
                           ctxs[i], tg_gpt_n_ctx(g) - 1);
    const tg_gpt2_config *c = tg_gpt_config(g);
    int max_c = ctxs[n_ctx - 1];
    tg_profiler *p = NULL;
    tg_status st = tg_profiler_create(&p, c, tg_pool_size(tg_gpt_pool(g)), tg_gpt_pool(g), 0, 0, err);
    if (st) return st;
    tg_profiler_set_gpt(p, g);
    int *tokens = malloc((size_t)(max_c + 1) * sizeof *tokens);
    float *logits = malloc((size_t)c->n_vocab * sizeof *logits);
    double *st_ns = calloc((size_t)steps * 5, sizeof *st_ns);
    if (!tokens || !logits || !st_ns) {
        st = tg_fail(err, TG_ERR_NOMEM, "sweep: out of memory");
        goto done;
    }
    tg_random_tokens(tokens, max_c + 1, c->n_vocab, seed);
    int done = 0;
    for (int i = 0; i < n_ctx && !st; i++) {
        int ctx = ctxs[i];
        tg_gpt_set_probe(g, NULL);
        if (ctx > done && (st = tg_gpt_forward(g, tokens + done, ctx - done, done, logits, 0, err)))
            break;
        done = ctx;
        tg_gpt_set_probe(g, tg_profiler_probe(p));
        /* Each step on its own, then the median step: one preempted step on
         * a busy machine must not move the row. */
        int n = steps;
        memset(st_ns, 0, (size_t)n * 5 * sizeof *st_ns);
        double *attn_ns = st_ns + n, *part_ns[3] = {st_ns + 2 * n, st_ns + 3 * n, st_ns + 4 * n};
        tg_opcost cost = {0};
        for (int s = 0; s < n && !st; s++) {
            tg_profiler_reset(p);
            tg_profiler_step_begin(p);
            st = tg_gpt_forward(g, tokens + ctx, 1, ctx, logits, 0, err);
            if (!st) st = tg_profiler_step_end(p, TG_PHASE_DECODE, 1, ctx, 1, 0, err);
            if (st) break;
            st_ns[s] = tg_profiler_phase(p, TG_PHASE_DECODE).wall_ns;
            cost = (tg_opcost){0};
            for (int k = 0; k < 3; k++) {
                tg_prof_stat ps =
                    tg_profiler_stat(p, TG_PHASE_DECODE, attn_ops[k], TG_PROF_ALL, TG_PROF_ALL);
                part_ns[k][s] = ps.ns;
                attn_ns[s] += ps.ns;
                cost = tg_opcost_add(cost, ps.cost);
            }
        }
        if (st) break;
        tg_sweep_row *r = &rows[i];
        *r = (tg_sweep_row){.ctx = ctx, .steps = n};
        double attn = median(attn_ns, n), step = median(st_ns, n);
        for (int k = 0; k < 3; k++) r->part_us[k] = median(part_ns[k], n) * 1e-3;
        r->step_us = step * 1e-3;
        r->attn_us = attn * 1e-3;
        r->attn_pct = step > 0 ? 100 * attn / step : 0;
        r->us_per_head = r->attn_us / (c->n_layer * c->n_head);
        r->attn_gflops = attn > 0 ? cost.flops / attn : 0;
        r->kv_bytes = cost.kv_bytes;
        r->attn_roof_pct = roof && attn > 0
                               ? 100 * tg_roofline_time(roof, cost.flops, cost.kv_bytes) / (attn * 1e-9)
                               : -1;
    }
done:
    tg_gpt_set_probe(g, NULL);
    free(st_ns);
    free(logits);
    free(tokens);
    tg_profiler_free(p);
    return st;
}

/* ---- bench ------------------------------------------------------------------------------- */

static void mean_sd(const double *x, int n, double *mean, double *sd) {
    double s = 0, q = 0;
    for (int i = 0; i < n; i++) s += x[i];
    *mean = n ? s / n : 0;
    for (int i = 0; i < n; i++) q += (x[i] - *mean) * (x[i] - *mean);
    *sd = n > 1 ? sqrt(q / (n - 1)) : 0;
}

/* One run: a prefill of n tokens, or n decode steps, from an empty cache. */
static tg_status bench_once(tg_gpt *g, int is_pp, int n, const int *tokens, float *logits,
                            tg_err *err) {
    if (is_pp) return tg_gpt_forward(g, tokens, n, 0, logits, 0, err);
    for (int i = 0; i < n; i++) {
        tg_status s = tg_gpt_forward(g, tokens + i, 1, i, logits, 0, err);
        if (s) return s;
    }
    return TG_OK;
}

tg_status tg_bench_run(tg_gpt *g, int is_pp, int n, int reps, const int *tokens,
                       const tg_roofline *roof, tg_bench_row *r, tg_err *err) {
    memset(r, 0, sizeof *r);
    if (!g || !tokens || n < 1 || reps < 1 || reps > TG_BENCH_MAX_REPS)
        return tg_fail(err, TG_ERR_ARG, "bench: no model or tokens, or a count outside its range");
    if (n > tg_gpt_n_ctx(g))
        return tg_fail(err, TG_ERR_RANGE, "bench: %d tokens do not fit the %d-position context", n,
                       tg_gpt_n_ctx(g));
    const tg_gpt2_config *c = tg_gpt_config(g);
    r->threads = tg_pool_size(tg_gpt_pool(g));
    r->is_pp = is_pp != 0;
    r->n = n;
    float *logits = malloc((size_t)c->n_vocab * sizeof *logits);
    double *tok_s = malloc((size_t)reps * sizeof *tok_s);
    tg_status st = !logits || !tok_s ? tg_fail(err, TG_ERR_NOMEM, "bench: out of memory") : TG_OK;
    if (!st) st = bench_once(g, r->is_pp, n, tokens, logits, err); /* warm-up */
    for (int i = 0; i < reps && !st; i++) {
        double t0 = now_s();
        if ((st = bench_once(g, r->is_pp, n, tokens, logits, err))) break;
        double dt = now_s() - t0;
        r->ms[i] = dt * 1e3;
        tok_s[i] = dt > 0 ? n / dt : 0;
    }
    if (!st) {
        r->reps = reps;
        mean_sd(tok_s, reps, &r->tok_s, &r->tok_s_sd);
        double mean_s, sd_s;
        mean_sd(r->ms, reps, &mean_s, &sd_s);
        mean_s *= 1e-3;
        if (r->is_pp) r->cost = tg_opcost_forward(c, n, 0, 1);
        else
            for (int i = 0; i < n; i++) r->cost = tg_opcost_add(r->cost, tg_opcost_forward(c, 1, i, 1));
        /* the matrices' real types (f16, q8_0, ...): once per forward step,
         * and the embedding rows once per token */
        tg_typed_bytes tb;
        tg_typed_bytes_of(tg_gpt_model(g), &tb);
        r->cost.weight_bytes += tg_opcost_typed_delta_model(tg_gpt_model(g)) * (r->is_pp ? 1 : n) +
                                tb.token[TG_OP_EMBED] * n;
        r->cost.kv_bytes *= tg_kv_scale(tg_gpt_kv_type(g)); /* an f16 cache: half the bytes */
        /* The bytes of the roofline are what comes from memory: weights and
         * KV cache (activations stay in cache). */
        double bytes = r->cost.weight_bytes + r->cost.kv_bytes;
        r->gflops = mean_s > 0 ? r->cost.flops / mean_s * 1e-9 : 0;
        r->gbs = mean_s > 0 ? bytes / mean_s * 1e-9 : 0;
        r->roof_frac = roof && mean_s > 0 ? tg_roofline_time(roof, r->cost.flops, bytes) / mean_s : -1;
        r->flops_frac = roof && roof->peak_gflops > 0 ? r->gflops / roof->peak_gflops : -1;
        r->bw_frac = roof && roof->dram_gbs > 0 ? r->gbs / roof->dram_gbs : -1;
    }
    free(tok_s);
    free(logits);
    return st;
}

/* ---- compare's speed -------------------------------------------------------------------- */

tg_status tg_speed_run(tg_gpt *g, const int *ids, size_t n_ids, int N, int reps, tg_speed *out,
                       tg_err *err) {
    memset(out, 0, sizeof *out);
    if (!g || !ids || n_ids < 1 || N < 1 || reps < 1)
        return tg_fail(err, TG_ERR_ARG, "speed: no model, no ids, or a count below 1");
    if (n_ids < (size_t)N) N = (int)n_ids;
    if (N > tg_gpt_n_ctx(g))
        return tg_fail(err, TG_ERR_RANGE, "speed: %d tokens do not fit the %d-position context", N,
                       tg_gpt_n_ctx(g));
    out->n_tokens = N;
    out->reps = reps;
    const tg_gpt2_config *c = tg_gpt_config(g);
    float *logits = malloc((size_t)c->n_vocab * sizeof *logits);
    double *pre = malloc((size_t)reps * 4 * sizeof *pre);
    if (!logits || !pre) {
        free(logits), free(pre);
        return tg_fail(err, TG_ERR_NOMEM, "speed: out of memory");
    }
    double *dec = pre + reps, *share[TG_PHASE_COUNT] = {pre + 2 * reps, pre + 3 * reps};
    tg_status st = TG_OK;
    for (int r = 0; r < reps && !st; r++) {
        double t0 = now_s();
        if ((st = tg_gpt_forward(g, ids, N, 0, logits, 0, err))) break;
        double t1 = now_s();
        for (int t = 0; t < N && !st; t++) st = tg_gpt_forward(g, ids + t, 1, t, logits, 0, err);
        double t2 = now_s();
        pre[r] = N / (t1 - t0);
        dec[r] = N / (t2 - t1);
    }
    for (int r = 0; r < reps && !st; r++) {
        tg_profiler *p;
        if ((st = tg_profiler_create(&p, c, tg_pool_size(tg_gpt_pool(g)), tg_gpt_pool(g), 0, 0, err)))
            break;
        tg_profiler_set_gpt(p, g);
        tg_gpt_set_probe(g, tg_profiler_probe(p));
        tg_profiler_step_begin(p);
        st = tg_gpt_forward(g, ids, N, 0, logits, 0, err);
        if (!st) st = tg_profiler_step_end(p, TG_PHASE_PREFILL, N, 0, 1, 0, err);
        for (int t = 0; t < N && !st; t++) {
            tg_profiler_step_begin(p);
            st = tg_gpt_forward(g, ids + t, 1, t, logits, 0, err);
            if (!st) st = tg_profiler_step_end(p, TG_PHASE_DECODE, 1, t, 1, 0, err);
        }
        tg_gpt_set_probe(g, NULL);
        for (int ph = 0; ph < TG_PHASE_COUNT && !st; ph++) {
            double attn = 0.0;
            for (int i = 0; i < 3; i++)
                attn += tg_profiler_stat(p, (tg_phase)ph, attn_ops[i], TG_PROF_ALL, TG_PROF_ALL).ns;
            tg_prof_phase info = tg_profiler_phase(p, (tg_phase)ph);
            share[ph][r] = info.op_ns > 0 ? attn / info.op_ns : 0.0;
        }
        tg_profiler_free(p);
    }
    if (!st) {
        /* medians: one run is at the mercy of a busy machine (the upper
         * middle one for an even count, as before) */
        qsort(pre, (size_t)reps, sizeof *pre, cmp_double);
        qsort(dec, (size_t)reps, sizeof *dec, cmp_double);
        out->prefill_tok_s = pre[reps / 2];
        out->decode_tok_s = dec[reps / 2];
        for (int ph = 0; ph < TG_PHASE_COUNT; ph++)
            qsort(share[ph], (size_t)reps, sizeof(double), cmp_double);
        out->prefill_attn_share = share[TG_PHASE_PREFILL][reps / 2];
        out->decode_attn_share = share[TG_PHASE_DECODE][reps / 2];
    }
    tg_gpt_set_probe(g, NULL);
    free(pre);
    free(logits);
    return st;
}
