/* test_analysis.c — the library's analysis (model/analysis.h) and
 * measurements (model/measure.h) on a random model, called directly as a
 * program of the C API would:
 *   - quality, baseline and ablation losses against a loss recomputed here
 *     window by window from the logits (log-softmax in double, written
 *     here), with the head mask set by hand;
 *   - the head metrics (sink, previous-token, confidence) against the
 *     weights captured window by window with tg_attention_capture;
 *   - attention rows: causal, each a distribution;
 *   - the profile's bookkeeping: op rows + outside = the phase's wall
 *     time, per-layer and per-head rows adding up to the op rows, steps;
 *     the sweep and bench rows' shapes and costs (model/opcount.h);
 *   - bad arguments are error codes with a message, and every call leaves
 *     the handle without probe or head mask (its logits equal a fresh
 *     handle's afterwards).
 * The numbers the commands print are checked against PyTorch in
 * tests/tools/heads_test.py and kept exactly by tests/tools/golden_test.py. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/analysis.h"
#include "model/measure.h"

enum { L = 2, H = 2, E = 32, C = 40, V = 136, F = 64, NIDS = 90 };

typedef struct rand_model {
    tg_gpt2_model m;
    tg_gpt2_layer layers[L];
    float *blob;
} rand_model;

static uint64_t rng = 777;
static float frand(float scale) { /* uniform in [-scale, scale) */
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return scale * ((float)(rng >> 40) / (float)(1u << 24) * 2.0f - 1.0f);
}

static void make_model(rand_model *r) {
    memset(r, 0, sizeof *r);
    size_t per_layer = 2 * E + 3 * E * E + 3 * E + E * E + E + 2 * E + F * E + F + E * F + E;
    size_t n = 2 * (size_t)V * E + (size_t)C * E + L * per_layer + 2 * E;
    float *p = r->blob = malloc(n * sizeof *p);
    cr_assert(p);
    for (size_t i = 0; i < n; i++) p[i] = frand(0.5f);
    tg_gpt2_config *c = &r->m.cfg;
    memset(c, 0, sizeof *c);
    c->n_layer = L, c->n_head = H, c->n_embd = E, c->n_ctx = C, c->n_vocab = V, c->n_ff = F;
    c->ln_eps = 1e-5f;
    tg_gpt2_weights *w = &r->m.w;
    w->wte = tg_weight_f32(p, V, E), p += V * E;
    w->wpe = p, p += C * E;
    for (int l = 0; l < L; l++) {
        tg_gpt2_layer *y = &r->layers[l];
        y->ln1_w = p, p += E;
        y->ln1_b = p, p += E;
        y->qkv_w = tg_weight_f32(p, 3 * E, E), p += 3 * E * E;
        y->qkv_b = p, p += 3 * E;
        y->proj_w = tg_weight_f32(p, E, E), p += E * E;
        y->proj_b = p, p += E;
        y->ln2_w = p, p += E;
        y->ln2_b = p, p += E;
        y->up_w = tg_weight_f32(p, F, E), p += F * E;
        y->up_b = p, p += F;
        y->down_w = tg_weight_f32(p, E, F), p += E * F;
        y->down_b = p, p += E;
    }
    w->layers = r->layers;
    w->lnf_w = p, p += E;
    w->lnf_b = p, p += E;
    w->lm_head = tg_weight_f32(p, V, E);
    r->m.has_weights = 1;
}

static rand_model M;
static tg_gpt *G;
static int ids[NIDS];

static tg_gpt *create(int n_threads) {
    tg_gpt *g;
    tg_err err;
    tg_gpt_opts o = {n_threads, NULL, 0, TG_WTYPE_F32};
    cr_assert_eq(tg_gpt_create(&g, &M.m, &o, &err), TG_OK, "%s", err.msg);
    return g;
}

static void setup(void) {
    make_model(&M);
    G = create(1);
    for (int i = 0; i < NIDS; i++) ids[i] = (int)((unsigned)(i * 37 + 11) % V);
}

static void teardown(void) {
    tg_gpt_free(G);
    free(M.blob);
}

/* -log softmax(row)[t] in double */
static double nll(const float *row, int t) {
    double mx = row[0], s = 0;
    for (int v = 1; v < V; v++) mx = row[v] > mx ? row[v] : mx;
    for (int v = 0; v < V; v++) s += exp((double)row[v] - mx);
    return log(s) + mx - row[t];
}

/* The mean loss over the first `limit` scored positions, windows of N,
 * each window run whole; mask (or NULL) set by hand. */
static double oracle_loss(tg_gpt *g, int N, size_t limit, const uint8_t *mask, size_t *n_out) {
    tg_err err;
    float *lg = malloc((size_t)C * V * sizeof *lg);
    cr_assert_eq(tg_gpt_set_head_mask(g, mask, &err), TG_OK);
    double s = 0;
    size_t n = 0;
    for (int w0 = 0; w0 < NIDS && n < limit; w0 += N) {
        int len = NIDS - w0 < N ? NIDS - w0 : N;
        if (len < 2) break;
        cr_assert_eq(tg_gpt_forward(g, ids + w0, len - 1, 0, lg, 1, &err), TG_OK, "%s", err.msg);
        for (int t = 0; t < len - 1 && n < limit; t++, n++) s += nll(lg + (size_t)t * V, ids[w0 + t + 1]);
    }
    tg_gpt_set_head_mask(g, NULL, &err);
    free(lg);
    if (n_out) *n_out = n;
    return s / (double)n;
}

/* The handle is clean: its logits for a prompt equal a fresh handle's. */
static void assert_clean(tg_gpt *g) {
    tg_err err;
    float a[V], b[V];
    tg_gpt *f = create(1);
    cr_assert_eq(tg_gpt_forward(g, ids, 12, 0, a, 0, &err), TG_OK);
    cr_assert_eq(tg_gpt_forward(f, ids, 12, 0, b, 0, &err), TG_OK);
    cr_assert_eq(memcmp(a, b, sizeof a), 0, "the handle kept a probe or a head mask");
    tg_gpt_free(f);
}

TestSuite(analysis, .init = setup, .fini = teardown);

Test(analysis, quality_matches_the_recomputed_loss) {
    tg_err err;
    tg_text_quality q;
    int N = 32;
    cr_assert_eq(tg_text_quality_run(G, NULL, ids, NIDS, N, &q, &err), TG_OK, "%s", err.msg);
    size_t n;
    double want = oracle_loss(G, N, SIZE_MAX, NULL, &n);
    cr_assert_eq(q.tokens, n);
    cr_assert_eq(q.window, N);
    cr_assert_eq(q.bytes, 0); /* no tokenizer */
    cr_assert(isnan(q.nats_per_byte));
    cr_assert(fabs(q.nats_per_token - want) <= 1e-5 * want, "%g vs %g", q.nats_per_token, want);
    cr_assert(fabs(q.perplexity - exp(q.nats_per_token)) <= 1e-12 * q.perplexity);
    /* buckets [1,4) [4,8) [8,16) [16,32) cover every scored position once */
    int from[4] = {1, 4, 8, 16}, to[4] = {3, 7, 15, 31};
    size_t sum = 0;
    double nats = 0;
    for (int k = 0; k < TG_LOSS_BUCKETS; k++) {
        cr_assert_eq(q.by_position[k].from, from[k]);
        cr_assert_eq(q.by_position[k].to, to[k]);
        sum += q.by_position[k].tokens;
        nats += q.by_position[k].nats;
    }
    cr_assert_eq(sum, q.tokens);
    cr_assert(fabs(nats - q.nats) <= 1e-9 * q.nats);
    cr_assert(fabs(q.in_context_score -
                   (q.by_position[3].nats_per_token - q.by_position[0].nats_per_token)) < 1e-12);
    assert_clean(G);
}

Test(analysis, heads_match_masks_and_captured_weights) {
    tg_err err;
    tg_head_analysis a;
    int N = 24;
    size_t limit = 50; /* two full windows (23 each) and 4 positions of the third */
    tg_head_opts o = {.window = N, .head_tokens = limit, .seed = 3};
    cr_assert_eq(tg_head_analyse(G, NULL, ids, NIDS, &o, &a, &err), TG_OK, "%s", err.msg);
    cr_assert_eq(a.n_layer, L);
    cr_assert_eq(a.n_head, H);
    cr_assert_eq(a.n_kv_head, H);
    cr_assert_eq(a.tokens, limit);
    size_t n;
    double base = oracle_loss(G, N, limit, NULL, &n);
    cr_assert(fabs(a.baseline_loss - base) <= 1e-5 * base, "%g vs %g", a.baseline_loss, base);
    uint8_t mask[L * H];
    for (int i = 0; i < L * H; i++) {
        const tg_head_result *r = &a.heads[i];
        cr_assert_eq(r->layer, i / H);
        cr_assert_eq(r->head, i % H);
        cr_assert_eq(r->kv_head, r->head);
        cr_assert_str_eq(r->cls, tg_head_class(&r->stats));
        memset(mask, 1, sizeof mask);
        mask[i] = 0;
        double want = oracle_loss(G, N, limit, mask, NULL);
        cr_assert(fabs(r->ablation_loss - want) <= 1e-5 * want, "head %d: %g vs %g", i,
                  r->ablation_loss, want);
        cr_assert(fabs(r->ablation_delta - (r->ablation_loss - a.baseline_loss)) < 1e-12);
        for (int h = 0; h < H; h++) mask[(i / H) * H + h] = h == i % H;
        for (int j = 0; j < L * H; j++)
            if (j / H != i / H) mask[j] = 1;
        want = oracle_loss(G, N, limit, mask, NULL);
        cr_assert(fabs(r->only_loss - want) <= 1e-5 * want, "head %d only: %g vs %g", i,
                  r->only_loss, want);
    }
    cr_assert_eq(a.n_layers, L);
    for (int l = 0; l < L; l++) {
        const tg_layer_result *y = &a.layers[l];
        double mean = 0, best = INFINITY;
        for (int h = 0; h < H; h++) {
            mean += a.heads[l * H + h].only_loss / H;
            best = fmin(best, a.heads[l * H + h].only_loss);
        }
        cr_assert_eq(y->best_head_loss, best);
        cr_assert_eq(a.heads[l * H + y->best_head].only_loss, best);
        cr_assert(fabs(y->random_head_loss - mean) <= 1e-12);
        cr_assert_eq(y->all_heads_loss, a.baseline_loss);
    }
    /* sink, prev and confidence over the queries that predict the scored
     * positions: queries 0..n-2 of each window, 50 in all */
    double sink[L * H] = {0}, prev[L * H] = {0}, conf[L * H] = {0};
    long nq = 0, np = 0;
    for (int w0 = 0, left = (int)limit; left > 0; w0 += N) {
        int T = left < N - 1 ? left : N - 1;
        tg_attention at;
        cr_assert_eq(tg_attention_capture(G, ids + w0, T, &at, &err), TG_OK, "%s", err.msg);
        for (int q = 0; q < T; q++) {
            for (int i = 0; i < L * H; i++) {
                const float *row = tg_attention_row(&at, i / H, i % H, q);
                sink[i] += row[0];
                if (q >= 1) prev[i] += row[q - 1];
                double mx = 0;
                for (int k = 0; k <= q; k++) mx = fmax(mx, row[k]);
                conf[i] += mx;
            }
            nq++;
            np += q >= 1;
        }
        tg_attention_free(&at);
        left -= T;
    }
    for (int i = 0; i < L * H; i++) {
        const tg_head_stats *s = &a.heads[i].stats;
        cr_assert(fabs(s->sink - sink[i] / nq) < 1e-6, "sink %d: %g vs %g", i, s->sink, sink[i] / nq);
        cr_assert(fabs(s->prev - prev[i] / np) < 1e-6, "prev %d", i);
        cr_assert(fabs(s->confidence - conf[i] / nq) < 1e-6, "confidence %d", i);
        cr_assert(s->induction >= 0 && s->induction <= 1);
    }
    tg_head_analysis_free(&a);
    cr_assert_null(a.heads);
    assert_clean(G);
}

Test(analysis, agreement_with_itself_and_another) {
    tg_err err;
    tg_agreement ag;
    tg_gpt *b = create(1);
    cr_assert_eq(tg_agreement_run(G, b, ids, NIDS, 32, &ag, &err), TG_OK, "%s", err.msg);
    cr_assert_eq(ag.positions, 31 + 31 + 25);
    cr_assert_eq(ag.top1, 1.0); /* the same model, the same kernels */
    cr_assert_eq(ag.kl, 0.0);
    /* B without layer 0's heads: the mean KL is the one recomputed here */
    uint8_t mask[L * H] = {0, 0, 1, 1};
    cr_assert_eq(tg_gpt_set_head_mask(b, mask, &err), TG_OK);
    cr_assert_eq(tg_agreement_run(G, b, ids, NIDS, 32, &ag, &err), TG_OK, "%s", err.msg);
    float *la = malloc((size_t)C * V * sizeof *la), *lb = malloc((size_t)C * V * sizeof *lb);
    double kl = 0;
    size_t same = 0, n = 0;
    for (int w0 = 0; w0 < NIDS; w0 += 32) {
        int len = NIDS - w0 < 32 ? NIDS - w0 : 32;
        cr_assert_eq(tg_gpt_forward(G, ids + w0, len - 1, 0, la, 1, &err), TG_OK);
        cr_assert_eq(tg_gpt_forward(b, ids + w0, len - 1, 0, lb, 1, &err), TG_OK);
        for (int t = 0; t < len - 1; t++, n++) {
            const float *ra = la + (size_t)t * V, *rb = lb + (size_t)t * V;
            int aa = 0, ab = 0;
            for (int v = 0; v < V; v++) {
                aa = ra[v] > ra[aa] ? v : aa, ab = rb[v] > rb[ab] ? v : ab;
                /* KL(p||q) = Σ p (log p - log q), log p = -nll */
            }
            same += aa == ab;
            for (int v = 0; v < V; v++) {
                double lp = -nll(ra, v), lq = -nll(rb, v);
                kl += exp(lp) * (lp - lq);
            }
        }
    }
    cr_assert_eq(ag.positions, n);
    cr_assert_eq(ag.top1_same, same);
    cr_assert(ag.kl > 0 && fabs(ag.kl - kl / n) <= 1e-6 * (kl / n), "%g vs %g", ag.kl, kl / n);
    free(la);
    free(lb);
    tg_gpt_free(b);
}

Test(analysis, attention_rows_are_causal_distributions) {
    tg_err err;
    tg_attention at;
    int T = 17;
    cr_assert_eq(tg_attention_capture(G, ids, T, &at, &err), TG_OK, "%s", err.msg);
    cr_assert_eq(at.n_layer, L);
    cr_assert_eq(at.n_head, H);
    cr_assert_eq(at.n_tokens, T);
    for (int l = 0; l < L; l++)
        for (int h = 0; h < H; h++)
            for (int q = 0; q < T; q++) {
                const float *row = tg_attention_row(&at, l, h, q);
                double s = 0;
                for (int k = 0; k < T; k++) {
                    if (k > q) cr_assert_eq(row[k], 0.0f);
                    cr_assert(row[k] >= 0);
                    s += row[k];
                }
                cr_assert(fabs(s - 1) <= (q + 8) * 1.2e-7, "row %d %d %d sums to %g", l, h, q, s);
            }
    /* into the caller's buffer: the same weights, and the forward pass's logits */
    size_t n = (size_t)L * H * T * T;
    float *w = malloc(n * sizeof *w), lg[V], want[V];
    for (size_t i = 0; i < n; i++) w[i] = NAN; /* must be overwritten, zeros included */
    cr_assert_eq(tg_attention_capture_into(G, ids, T, w, lg, &err), TG_OK, "%s", err.msg);
    cr_assert_eq(memcmp(w, at.w, n * sizeof *w), 0);
    cr_assert_eq(tg_gpt_forward(G, ids, T, 0, want, 0, &err), TG_OK);
    /* with the probe attached attention runs unfused: equal up to rounding,
     * on the scale of the row */
    double big = 0, d = 0;
    for (int v = 0; v < V; v++) big = fmax(big, fabs(want[v])), d = fmax(d, fabs(lg[v] - want[v]));
    cr_assert(d <= 1e-5 * big, "logits differ by %g (scale %g)", d, big);
    cr_assert_eq(tg_attention_capture_into(G, ids, T, w, NULL, &err), TG_OK, "%s", err.msg);
    cr_assert_eq(tg_attention_capture_into(G, ids, T, NULL, NULL, &err), TG_ERR_ARG);
    free(w);
    tg_attention_free(&at);
    assert_clean(G);
}

Test(analysis, bad_arguments_are_errors) {
    tg_err err;
    tg_text_quality q;
    tg_head_analysis a;
    tg_attention at;
    tg_agreement ag;
    tg_head_opts o = {.window = 1, .head_tokens = 10};
    err.msg[0] = 0;
    cr_assert_eq(tg_text_quality_run(G, NULL, ids, NIDS, 1, &q, &err), TG_ERR_RANGE);
    cr_assert(strstr(err.msg, "window"), "%s", err.msg);
    cr_assert_eq(tg_text_quality_run(G, NULL, ids, NIDS, C + 1, &q, &err), TG_ERR_RANGE);
    cr_assert_eq(tg_text_quality_run(G, NULL, ids, 1, 8, &q, &err), TG_ERR_RANGE);
    cr_assert(strstr(err.msg, "at least 2"), "%s", err.msg);
    cr_assert_eq(tg_head_analyse(G, NULL, ids, NIDS, &o, &a, &err), TG_ERR_RANGE);
    tg_head_analysis_free(&a);
    o.window = 8, o.head_tokens = 0;
    cr_assert_eq(tg_head_analyse(G, NULL, ids, NIDS, &o, &a, &err), TG_ERR_RANGE);
    tg_head_analysis_free(&a);
    cr_assert_eq(tg_head_analyse(G, NULL, ids, NIDS, NULL, &a, &err), TG_ERR_ARG);
    cr_assert_eq(tg_attention_capture(G, ids, 0, &at, &err), TG_ERR_ARG);
    cr_assert_eq(tg_attention_capture(G, ids, C + 1, &at, &err), TG_ERR_RANGE);
    cr_assert_null(at.w);
    cr_assert_eq(tg_agreement_run(G, G, ids, NIDS, 0, &ag, &err), TG_ERR_RANGE);
    /* a token outside the vocabulary: the forward pass's error comes back
     * and the handle is left clean */
    int bad[NIDS];
    memcpy(bad, ids, sizeof bad);
    bad[40] = V + 3;
    o.head_tokens = 100;
    cr_assert_eq(tg_head_analyse(G, NULL, bad, NIDS, &o, &a, &err), TG_ERR_ARG);
    tg_head_analysis_free(&a);
    assert_clean(G);
    cr_assert_eq(tg_text_quality_run(G, NULL, bad, NIDS, 8, &q, &err), TG_ERR_ARG);
    cr_assert_eq(tg_attention_capture(G, bad + 35, 8, &at, &err), TG_ERR_ARG);
    assert_clean(G);
}

/* ---- measure.h ------------------------------------------------------------------ */

Test(analysis, profile_rows_add_up) {
    tg_err err;
    tg_profile p;
    int gen = 5, reps = 2;
    tg_profile_opts o = {.prompt = ids, .n_prompt = 9, .gen = gen, .reps = reps, .seed = 1,
                         .per_layer = 1, .per_head = 1};
    cr_assert_eq(tg_profile_run(G, &o, &p, &err), TG_OK, "%s", err.msg);
    cr_assert_eq(p.n_threads, 1);
    cr_assert(p.has_phase[TG_PHASE_PREFILL] && p.has_phase[TG_PHASE_DECODE]);
    cr_assert_not_null(p.profiler);
    int n_block = 0, n_head_ops = 0;
    for (int op = 0; op < TG_OP_COUNT; op++) {
        n_block += tg_op_in_block((tg_op)op);
        n_head_ops += tg_op_per_head((tg_op)op);
    }
    for (int ph = 0; ph < TG_PHASE_COUNT; ph++) {
        const tg_profile_phase *pp = &p.phase[ph];
        cr_assert_eq(pp->info.steps, ph == TG_PHASE_PREFILL ? reps : reps * gen);
        cr_assert_eq(pp->info.tokens, ph == TG_PHASE_PREFILL ? reps * 9 : reps * gen);
        cr_assert_eq(pp->total.calls, pp->info.steps);
        cr_assert_eq(pp->n_layers, L * n_block);
        cr_assert_eq(pp->n_heads, H * n_head_ops);
        double ns = pp->outside.ns, flops = 0;
        for (int op = 0; op < TG_OP_COUNT; op++) {
            cr_assert_eq(pp->ops[op].op, (tg_op)op);
            cr_assert_str_eq(pp->ops[op].name, tg_op_name((tg_op)op));
            cr_assert(pp->ops[op].roof_pct < 0); /* no roofline given */
            ns += pp->ops[op].ns;
            flops += pp->ops[op].flops;
        }
        cr_assert(fabs(ns - pp->info.wall_ns) <= 1e-6 * pp->info.wall_ns, "%g vs %g", ns,
                  pp->info.wall_ns);
        cr_assert(fabs(flops - pp->total.flops) <= 1e-9 * flops);
        /* per layer: each block op's rows add up to its op row */
        for (int op = 0; op < TG_OP_COUNT; op++) {
            if (!tg_op_in_block((tg_op)op)) continue;
            double f = 0, c = 0;
            for (int i = 0; i < pp->n_layers; i++)
                if (pp->layers[i].op == (tg_op)op) f += pp->layers[i].flops, c += pp->layers[i].calls;
            cr_assert(fabs(f - pp->ops[op].flops) <= 1e-9 * f, "%s", tg_op_name((tg_op)op));
            cr_assert_eq(c, pp->ops[op].calls);
        }
        for (int i = 0; i < pp->n_heads; i++) cr_assert(tg_op_per_head(pp->heads[i].op));
    }
    /* the prefill's cost is opcount's for 9 tokens, twice */
    tg_opcost want = tg_opcost_scale(tg_opcost_forward(&M.m.cfg, 9, 0, 1), reps);
    const tg_profile_row *tot = &p.phase[TG_PHASE_PREFILL].total;
    double sample = p.phase[TG_PHASE_PREFILL].ops[TG_OP_SAMPLE].flops;
    cr_assert(fabs(tot->flops - sample - want.flops) <= 1e-9 * want.flops, "%g vs %g",
              tot->flops - sample, want.flops);
    tg_profile_free(&p);
    cr_assert_null(p.profiler);
    /* does not fit the context */
    o.n_prompt = C - 2, o.gen = 3;
    cr_assert_eq(tg_profile_run(G, &o, &p, &err), TG_ERR_RANGE);
    tg_profile_free(&p);
    assert_clean(G);
}

Test(analysis, sweep_and_bench_rows) {
    tg_err err;
    int ctx[3] = {4, 10, 30};
    tg_sweep_row rows[3];
    cr_assert_eq(tg_profile_sweep(G, ctx, 3, 3, 1, NULL, rows, &err), TG_OK, "%s", err.msg);
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(rows[i].ctx, ctx[i]);
        cr_assert_eq(rows[i].steps, 3);
        cr_assert(rows[i].step_us > 0 && rows[i].attn_us >= 0 && rows[i].attn_pct <= 100);
        cr_assert(rows[i].attn_roof_pct < 0);
    }
    int unsorted[2] = {10, 4};
    cr_assert_eq(tg_profile_sweep(G, unsorted, 2, 3, 1, NULL, rows, &err), TG_ERR_RANGE);
    int too_long[1] = {C};
    cr_assert_eq(tg_profile_sweep(G, too_long, 1, 3, 1, NULL, rows, &err), TG_ERR_RANGE);

    tg_bench_row *r = malloc(sizeof *r);
    cr_assert_eq(tg_bench_run(G, 1, 16, 3, ids, NULL, r, &err), TG_OK, "%s", err.msg);
    cr_assert_eq(r->threads, 1);
    cr_assert_eq(r->reps, 3);
    cr_assert(r->ms[0] > 0 && r->ms[2] > 0 && r->tok_s > 0);
    cr_assert_eq(r->cost.flops, tg_opcost_forward(&M.m.cfg, 16, 0, 1).flops);
    cr_assert(r->roof_frac < 0 && r->flops_frac < 0 && r->bw_frac < 0);
    cr_assert_eq(tg_bench_run(G, 0, 6, 2, ids, NULL, r, &err), TG_OK, "%s", err.msg);
    double f = 0;
    for (int i = 0; i < 6; i++) f += tg_opcost_forward(&M.m.cfg, 1, i, 1).flops;
    cr_assert(fabs(r->cost.flops - f) <= 1e-12 * f);
    /* an f16 KV cache: the same run counts half the KV bytes (2 per element, not 4) */
    double kv32 = r->cost.kv_bytes;
    tg_gpt *g16;
    tg_gpt_opts o16 = {1, NULL, 0, TG_WTYPE_F16};
    cr_assert_eq(tg_gpt_create(&g16, &M.m, &o16, &err), TG_OK, "%s", err.msg);
    cr_assert_eq(tg_bench_run(g16, 0, 6, 2, ids, NULL, r, &err), TG_OK, "%s", err.msg);
    cr_assert(kv32 > 0 && r->cost.kv_bytes * 2 == kv32, "f16 KV %g vs f32 %g", r->cost.kv_bytes, kv32);
    cr_assert(fabs(r->cost.flops - f) <= 1e-12 * f);
    tg_gpt_free(g16);
    cr_assert_eq(tg_bench_run(G, 1, 16, 0, ids, NULL, r, &err), TG_ERR_ARG);
    cr_assert_eq(tg_bench_run(G, 1, 16, TG_BENCH_MAX_REPS + 1, ids, NULL, r, &err), TG_ERR_ARG);
    cr_assert_eq(tg_bench_run(G, 1, C + 1, 1, ids, NULL, r, &err), TG_ERR_RANGE);
    free(r);

    tg_speed sp;
    cr_assert_eq(tg_speed_run(G, ids, 20, 32, 3, &sp, &err), TG_OK, "%s", err.msg);
    cr_assert_eq(sp.n_tokens, 20); /* fewer ids than the window */
    cr_assert(sp.prefill_tok_s > 0 && sp.decode_tok_s > 0);
    cr_assert(sp.prefill_attn_share >= 0 && sp.prefill_attn_share <= 1);
    cr_assert(sp.decode_attn_share >= 0 && sp.decode_attn_share <= 1);
    assert_clean(G);

    int t1[8], t2[8];
    tg_random_tokens(t1, 8, V, 5);
    tg_random_tokens(t2, 8, V, 5);
    cr_assert_eq(memcmp(t1, t2, sizeof t1), 0);
    for (int i = 0; i < 8; i++) cr_assert(t1[i] >= 0 && t1[i] < V);
}

/* ---- task models ------------------------------------------------------------------ */

Test(analysis, task_heads_match_masks_and_weights) {
    tg_err err;
    tg_task t;
    cr_assert_eq(tg_task_parse(&t, "marked-tuple", "len=16,digits=5,k=3,spacing=1", &err), TG_OK,
                 "%s", err.msg);
    cr_assert(t.V == V && t.n - 1 <= C, "the task does not fit the test model (V %d, n %d)", t.V, t.n);
    long n = 40;
    tg_task_heads th;
    cr_assert_eq(tg_task_heads_analyse(G, &t, 9, n, &th, &err), TG_OK, "%s", err.msg);
    cr_assert_eq(th.n_items, 3);
    cr_assert_eq(th.full.seqs, n);
    /* accuracy recomputed here: argmax of each answer's logits, same sequences */
    tg_rng r = tg_task_stream(9, TG_TASK_STREAM_COMPARE);
    tg_task_seq *s = malloc(sizeof *s);
    float *lg = malloc((size_t)(t.n - 1) * V * sizeof *lg);
    long answers = 0, correct = 0;
    for (long q = 0; q < n; q++) {
        tg_task_sample(&t, &r, s);
        cr_assert_eq(tg_gpt_forward(G, s->seq, t.n - 1, 0, lg, 1, &err), TG_OK);
        for (int i = 1; i < t.n; i++) {
            if (!s->answer[i]) continue;
            const float *row = lg + (size_t)(i - 1) * V;
            int am = 0;
            for (int v = 1; v < t.V; v++) am = row[v] > row[am] ? v : am;
            answers++, correct += am == s->seq[i];
        }
    }
    cr_assert_eq(th.full.answers, answers);
    cr_assert_eq(th.full.correct, correct);
    cr_assert_eq(th.accuracy, (double)correct / answers);
    cr_assert_eq(th.n_queries, answers);
    uint8_t mask[L * H];
    for (int i = 0; i < L * H; i++) {
        const tg_task_head_result *h = &th.heads[i];
        cr_assert_eq(h->kv_head, h->head);
        double wsum = 0, tsum = 0;
        for (int j = 0; j < th.n_items; j++) wsum += h->weight[j], tsum += h->top_share[j];
        cr_assert(wsum >= 0 && wsum <= 1 + 1e-6, "head %d: item weights sum to %g", i, wsum);
        cr_assert(fabs(tsum - 1) < 1e-12, "head %d: top shares sum to %g", i, tsum);
        memset(mask, 1, sizeof mask);
        mask[i] = 0;
        cr_assert_eq(tg_gpt_set_head_mask(G, mask, &err), TG_OK);
        tg_task_score sc = {0};
        cr_assert_eq(tg_task_score_run(G, &t, tg_task_stream(9, TG_TASK_STREAM_COMPARE), n, &sc,
                                       NULL, NULL, &err), TG_OK);
        tg_gpt_set_head_mask(G, NULL, &err);
        cr_assert_eq(h->ablated_accuracy, (double)sc.correct / sc.answers);
    }
    for (int l = 0; l < L; l++) {
        double a = th.heads[l * H].keep_only_accuracy, b = th.heads[l * H + 1].keep_only_accuracy;
        cr_assert_eq(th.layers[l].keep_best_accuracy, fmax(a, b));
        cr_assert(fabs(th.layers[l].keep_random_accuracy - (a + b) / 2) < 1e-12);
    }
    free(s);
    free(lg);
    tg_task_heads_free(&th);
    cr_assert_null(th.heads);
    assert_clean(G);
    cr_assert_eq(tg_task_heads_analyse(G, &t, 9, 0, &th, &err), TG_ERR_ARG);
    tg_task_heads_free(&th);
    /* a task of another vocabulary is refused, not run over the buffer */
    tg_task other;
    cr_assert_eq(tg_task_parse(&other, "marked-tuple", "len=16,digits=3,k=3,spacing=1", &err), TG_OK);
    cr_assert_neq(other.V, V);
    tg_task_score sc = {0};
    cr_assert_eq(tg_task_score_run(G, &other, tg_task_stream(1, 0), 2, &sc, NULL, NULL, &err),
                 TG_ERR_ARG);
    cr_assert(strstr(err.msg, "vocabulary"), "%s", err.msg);
}
