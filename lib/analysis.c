/* analysis.c — the analysis of model/analysis.h and model/measure.h
 * through the public API: the same calls `tinygpt compare`, `profile` and
 * `bench` make, their result structs copied into the public ones (which
 * name no model/ type, so the header stays the only one a program needs). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/roofline.h"
#include "lib/internal.h"
#include "model/analysis.h"
#include "model/measure.h"

_Static_assert(TINYGPT_LOSS_BUCKETS == TG_LOSS_BUCKETS, "loss buckets");
_Static_assert(TINYGPT_ALL == TG_PROF_ALL, "the profile's wildcard");
_Static_assert(TINYGPT_BENCH_MAX_REPS == TG_BENCH_MAX_REPS, "bench repetitions");

/* The window: 0 is the cache length; else [2, n_ctx]. */
static tinygpt_status window_of(tinygpt *m, int window, const char *fn, int *N) {
    int C = tinygpt_n_ctx(m);
    *N = window ? window : C;
    if (*N < 2 || *N > C)
        return tg_lib_fail(m, TINYGPT_ERR_ARG, "%s: window %d is outside [2, %d] (the cache)", fn,
                           window, C);
    return TINYGPT_OK;
}

static tinygpt_status check_ids(tinygpt *m, const int *ids, size_t n, const char *fn) {
    int V = tinygpt_n_vocab(m);
    if (n < 2 || !ids)
        return tg_lib_fail(m, TINYGPT_ERR_ARG, "%s: %zu tokens; it takes at least 2", fn, n);
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= V)
            return tg_lib_fail(m, TINYGPT_ERR_ARG, "%s: token %zu is %d, outside [0, %d) (the "
                               "vocabulary)", fn, i, ids[i], V);
    return TINYGPT_OK;
}

/* ---- quality, heads, agreement ---------------------------------------------------- */

tinygpt_status tinygpt_run_quality(tinygpt *m, const int *ids, size_t n, int window,
                                   tinygpt_quality *out) {
    int N;
    tinygpt_status s;
    if ((s = check_ids(m, ids, n, "tinygpt_run_quality")) ||
        (s = window_of(m, window, "tinygpt_run_quality", &N)))
        return s;
    tg_text_quality q;
    s = (tinygpt_status)tg_text_quality_run(tg_lib_gpt(m), tg_lib_tok(m), ids, n, N, &q,
                                            tg_lib_err(m));
    tg_lib_cache_lost(m);
    if (s) return s;
    *out = (tinygpt_quality){q.window, q.tokens, q.bytes, q.nats, q.nats_per_token,
                             q.perplexity, q.nats_per_byte, {{0}}, q.in_context_score};
    for (int i = 0; i < TG_LOSS_BUCKETS; i++) {
        const tg_loss_bucket *b = &q.by_position[i];
        out->by_position[i] = (tinygpt_loss_bucket){b->from, b->to, b->tokens, b->nats,
                                                    b->nats_per_token};
    }
    return TINYGPT_OK;
}

void tinygpt_heads_opts_init(tinygpt_heads_opts *o) {
    *o = (tinygpt_heads_opts){0, 2048, 1};
}

void tinygpt_head_analysis_free(tinygpt_head_analysis *a) {
    if (!a) return;
    free(a->heads);
    free(a->layers);
    free(a);
}

tinygpt_status tinygpt_run_heads(tinygpt *m, const int *ids, size_t n,
                                 const tinygpt_heads_opts *opts, tinygpt_head_analysis **out) {
    *out = NULL;
    tinygpt_heads_opts def;
    if (!opts) {
        tinygpt_heads_opts_init(&def);
        opts = &def;
    }
    int N;
    tinygpt_status s;
    if ((s = check_ids(m, ids, n, "tinygpt_run_heads")) ||
        (s = window_of(m, opts->window, "tinygpt_run_heads", &N)))
        return s;
    if (opts->head_tokens < 1)
        return tg_lib_fail(m, TINYGPT_ERR_ARG, "tinygpt_run_heads: head_tokens is 0");
    tg_head_opts ho = {N, (size_t)opts->head_tokens, opts->seed};
    tg_head_analysis a;
    tg_gpt_set_head_mask(tg_lib_gpt(m), NULL, tg_lib_err(m)); /* from every head on */
    s = (tinygpt_status)tg_head_analyse(tg_lib_gpt(m), tg_lib_tok(m), ids, n, &ho, &a,
                                        tg_lib_err(m));
    tg_lib_cache_lost(m);
    tinygpt_head_analysis *r = NULL;
    size_t LH = s ? 0 : (size_t)a.n_layer * a.n_head;
    if (!s) {
        r = calloc(1, sizeof *r);
        if (r) {
            r->heads = calloc(LH, sizeof *r->heads);
            r->layers = calloc((size_t)(a.n_layers ? a.n_layers : 1), sizeof *r->layers);
        }
        if (!r || !r->heads || !r->layers) {
            tinygpt_head_analysis_free(r);
            r = NULL;
            s = tg_lib_fail(m, TINYGPT_ERR_NOMEM, "tinygpt_run_heads: out of memory");
        }
    }
    if (r) {
        r->n_layer = a.n_layer, r->n_head = a.n_head, r->n_kv_head = a.n_kv_head;
        r->window = a.window;
        r->head_tokens = a.head_tokens, r->seed = a.seed, r->tokens = a.tokens;
        r->baseline_loss = a.baseline_loss;
        for (size_t i = 0; i < LH; i++) {
            const tg_head_result *h = &a.heads[i];
            const tg_head_stats *st = &h->stats;
            r->heads[i] = (tinygpt_head){h->layer, h->head, h->kv_head, st->entropy,
                                         st->confidence, st->sink, st->prev, st->local,
                                         st->induction, h->cls, h->ablation_loss,
                                         h->ablation_delta, h->only_loss};
        }
        r->n_layers = a.n_layers;
        for (int i = 0; i < a.n_layers; i++) {
            const tg_layer_result *y = &a.layers[i];
            r->layers[i] = (tinygpt_layer_heads){y->layer, y->best_head, y->all_heads_loss,
                                                 y->best_head_loss, y->random_head_loss};
        }
    }
    tg_head_analysis_free(&a);
    *out = r;
    return s;
}

tinygpt_status tinygpt_run_agreement(tinygpt *a, tinygpt *b, const int *ids, size_t n,
                                     int window, tinygpt_agreement *out) {
    tinygpt_status s;
    if ((s = check_ids(a, ids, n, "tinygpt_run_agreement"))) return s;
    int V = tinygpt_n_vocab(a);
    if (tinygpt_n_vocab(b) != V)
        return tg_lib_fail(a, TINYGPT_ERR_ARG, "tinygpt_run_agreement: the vocabularies differ "
                           "(%d and %d tokens)", V, tinygpt_n_vocab(b));
    for (int i = 0; i < V; i++) {
        size_t la, lb;
        const char *pa = tinygpt_token_piece(a, i, &la), *pb = tinygpt_token_piece(b, i, &lb);
        if (la != lb || memcmp(pa, pb, la))
            return tg_lib_fail(a, TINYGPT_ERR_ARG, "tinygpt_run_agreement: the vocabularies "
                               "differ at token %d", i);
    }
    int Ca = tinygpt_n_ctx(a), Cb = tinygpt_n_ctx(b), N = window ? window : Ca < Cb ? Ca : Cb;
    if (N < 2 || N > Ca || N > Cb)
        return tg_lib_fail(a, TINYGPT_ERR_ARG, "tinygpt_run_agreement: window %d is outside "
                           "[2, %d] (the smaller cache)", window, Ca < Cb ? Ca : Cb);
    tg_agreement g;
    s = (tinygpt_status)tg_agreement_run(tg_lib_gpt(a), tg_lib_gpt(b), ids, n, N, &g,
                                         tg_lib_err(a));
    tg_lib_cache_lost(a);
    tg_lib_cache_lost(b);
    if (s) return s;
    *out = (tinygpt_agreement){g.positions, g.top1_same, g.kl_sum, g.top1, g.kl};
    return TINYGPT_OK;
}

/* ---- profile, sweep, bench, speed ---------------------------------------------------- */

static tinygpt_status roofline(tinygpt *m, double seconds, tg_roofline *r, const tg_roofline **rp) {
    *rp = NULL;
    if (!(seconds > 0)) return TINYGPT_OK;
    if (seconds > 60)
        return tg_lib_fail(m, TINYGPT_ERR_ARG, "tinygpt: roofline_seconds %g is above 60", seconds);
    tg_gpt *g = tg_lib_gpt(m);
    tinygpt_info in;
    tinygpt_get_info(m, &in);
    tinygpt_status s = (tinygpt_status)tg_roofline_measure(
        r, tg_gpt_pool(g), in.n_threads, tg_gpt_engine(g)->isa, seconds, tg_lib_err(m));
    if (!s) *rp = r;
    return s;
}

static tinygpt_profile_row row_of(const tg_profile_row *r) {
    return (tinygpt_profile_row){r->name, r->layer, r->head, r->calls, r->ns, r->pct,
                                 r->flops, r->bytes, r->weight_bytes, r->kv_bytes,
                                 r->act_bytes, r->roof_pct};
}

/* The public rows beside the model/ result they were copied from. */
typedef struct profile_box {
    tinygpt_profile pub;
    tinygpt_profile_row *rows; /* every phase's ops, layers and heads, one allocation */
} profile_box;

void tinygpt_profile_free(tinygpt_profile *p) {
    if (!p) return;
    profile_box *b = (profile_box *)p; /* pub is the first member */
    free(b->rows);
    free(b);
}

void tinygpt_profile_opts_init(tinygpt_profile_opts *o) {
    *o = (tinygpt_profile_opts){NULL, 0, 32, 1, 0, 0, 0, 0};
}

tinygpt_status tinygpt_run_profile(tinygpt *m, const tinygpt_profile_opts *opts,
                                   tinygpt_profile **out) {
    *out = NULL;
    tinygpt_profile_opts o;
    if (opts) o = *opts;
    else tinygpt_profile_opts_init(&o);
    int C = tinygpt_n_ctx(m), V = tinygpt_n_vocab(m);
    if (o.gen < 0 || o.gen >= C || o.reps < 1 || o.reps > 10000)
        return tg_lib_fail(m, TINYGPT_ERR_ARG, "tinygpt_run_profile: gen %d must be in [0, %d) "
                           "and reps %d in [1, 10000]", o.gen, C, o.reps);
    if (o.n_prompt == 0) o.n_prompt = 128 < C - o.gen ? 128 : C - o.gen;
    if (o.n_prompt < 1 || o.n_prompt + o.gen > C)
        return tg_lib_fail(m, TINYGPT_ERR_RANGE, "tinygpt_run_profile: %d prompt tokens + %d "
                           "decode steps do not fit the %d-position cache", o.n_prompt, o.gen, C);
    int *own = NULL;
    const int *prompt = o.prompt;
    if (!prompt) {
        if (!(own = malloc((size_t)o.n_prompt * sizeof *own)))
            return tg_lib_fail(m, TINYGPT_ERR_NOMEM, "tinygpt_run_profile: out of memory");
        tg_random_tokens(own, o.n_prompt, V, o.seed);
        prompt = own;
    } else {
        for (int i = 0; i < o.n_prompt; i++)
            if (prompt[i] < 0 || prompt[i] >= V) {
                free(own);
                return tg_lib_fail(m, TINYGPT_ERR_ARG, "tinygpt_run_profile: prompt token %d is "
                                   "%d, outside [0, %d)", i, prompt[i], V);
            }
    }
    tg_roofline roof;
    const tg_roofline *rp;
    tinygpt_status s = roofline(m, o.roofline_seconds, &roof, &rp);
    tg_profile prof;
    memset(&prof, 0, sizeof prof);
    if (!s) {
        tg_profile_opts po = {.prompt = prompt, .n_prompt = o.n_prompt, .gen = o.gen,
                              .reps = o.reps, .seed = o.seed, .per_layer = o.per_layer,
                              .per_head = o.per_head, .roof = rp};
        s = (tinygpt_status)tg_profile_run(tg_lib_gpt(m), &po, &prof, tg_lib_err(m));
        tg_lib_cache_lost(m);
    }
    free(own);
    profile_box *b = NULL;
    if (!s) {
        size_t n_rows = 0;
        for (int ph = 0; ph < TG_PHASE_COUNT; ph++)
            n_rows += TG_OP_COUNT + (size_t)prof.phase[ph].n_layers + (size_t)prof.phase[ph].n_heads;
        b = calloc(1, sizeof *b);
        if (b) b->rows = calloc(n_rows, sizeof *b->rows);
        if (!b || !b->rows) {
            tinygpt_profile_free(b ? &b->pub : NULL);
            b = NULL;
            s = tg_lib_fail(m, TINYGPT_ERR_NOMEM, "tinygpt_run_profile: out of memory");
        }
    }
    if (b) {
        tinygpt_profile *p = &b->pub;
        p->n_threads = prof.n_threads;
        p->dram_gbs = rp ? rp->dram_gbs : 0;
        p->peak_gflops = rp ? rp->peak_gflops : 0;
        tinygpt_profile_row *r = b->rows;
        for (int ph = 0; ph < TG_PHASE_COUNT; ph++) {
            const tg_profile_phase *src = &prof.phase[ph];
            tinygpt_profile_phase *d = &p->phase[ph];
            d->name = tg_phase_name((tg_phase)ph);
            d->ran = prof.has_phase[ph];
            d->steps = src->info.steps;
            d->tokens = src->info.tokens;
            d->wall_ns = src->info.wall_ns, d->op_ns = src->info.op_ns;
            d->wait_ns = src->info.wait_ns, d->cpu_ns = src->info.cpu_ns;
            d->ops = r, d->n_ops = src->ops ? TG_OP_COUNT : 0;
            for (int i = 0; i < d->n_ops; i++) *r++ = row_of(&src->ops[i]);
            d->layers = r, d->n_layers = src->layers ? src->n_layers : 0;
            for (int i = 0; i < d->n_layers; i++) *r++ = row_of(&src->layers[i]);
            d->heads = r, d->n_heads = src->heads ? src->n_heads : 0;
            for (int i = 0; i < d->n_heads; i++) *r++ = row_of(&src->heads[i]);
            d->outside = row_of(&src->outside);
            d->total = row_of(&src->total);
        }
        *out = p;
    }
    tg_profile_free(&prof);
    return s;
}

tinygpt_status tinygpt_run_sweep(tinygpt *m, const int *ctx, int n, int steps, uint64_t seed,
                                 double roofline_seconds, tinygpt_sweep_row *rows) {
    int C = tinygpt_n_ctx(m);
    if (n < 1 || steps < 1 || steps > 100000)
        return tg_lib_fail(m, TINYGPT_ERR_ARG, "tinygpt_run_sweep: %d contexts, %d steps", n,
                           steps);
    for (int i = 0; i < n; i++)
        if (ctx[i] < 1 || ctx[i] > C - 1 || (i && ctx[i] <= ctx[i - 1]))
            return tg_lib_fail(m, TINYGPT_ERR_ARG, "tinygpt_run_sweep: contexts must ascend "
                               "within [1, %d]; ctx[%d] is %d", C - 1, i, ctx[i]);
    tg_sweep_row *t = calloc((size_t)n, sizeof *t);
    if (!t) return tg_lib_fail(m, TINYGPT_ERR_NOMEM, "tinygpt_run_sweep: out of memory");
    tg_roofline roof;
    const tg_roofline *rp;
    tinygpt_status s = roofline(m, roofline_seconds, &roof, &rp);
    if (!s) {
        s = (tinygpt_status)tg_profile_sweep(tg_lib_gpt(m), ctx, n, steps, seed, rp, t,
                                             tg_lib_err(m));
        tg_lib_cache_lost(m);
    }
    for (int i = 0; !s && i < n; i++)
        rows[i] = (tinygpt_sweep_row){t[i].ctx, t[i].steps, t[i].step_us, t[i].attn_us,
                                      {t[i].part_us[0], t[i].part_us[1], t[i].part_us[2]},
                                      t[i].attn_pct, t[i].us_per_head, t[i].attn_gflops,
                                      t[i].attn_roof_pct};
    free(t);
    return s;
}

tinygpt_status tinygpt_run_bench(tinygpt *m, int is_pp, int n, int reps, const int *tokens,
                                 double roofline_seconds, tinygpt_bench_row *out, double *ms) {
    int C = tinygpt_n_ctx(m), V = tinygpt_n_vocab(m);
    if (n < 1 || n > C || reps < 1 || reps > TG_BENCH_MAX_REPS)
        return tg_lib_fail(m, TINYGPT_ERR_ARG, "tinygpt_run_bench: n %d must be in [1, %d] and "
                           "reps %d in [1, %d]", n, C, reps, TG_BENCH_MAX_REPS);
    int *own = NULL;
    if (!tokens) {
        if (!(own = malloc((size_t)n * sizeof *own)))
            return tg_lib_fail(m, TINYGPT_ERR_NOMEM, "tinygpt_run_bench: out of memory");
        tg_random_tokens(own, n, V, 1);
        tokens = own;
    }
    tg_bench_row *r = calloc(1, sizeof *r);
    tinygpt_status s = r ? TINYGPT_OK
                         : tg_lib_fail(m, TINYGPT_ERR_NOMEM, "tinygpt_run_bench: out of memory");
    tg_roofline roof;
    const tg_roofline *rp = NULL;
    if (!s) s = roofline(m, roofline_seconds, &roof, &rp);
    if (!s) {
        s = (tinygpt_status)tg_bench_run(tg_lib_gpt(m), !!is_pp, n, reps, tokens, rp, r,
                                         tg_lib_err(m));
        tg_lib_cache_lost(m);
    }
    if (!s) {
        *out = (tinygpt_bench_row){r->threads, r->is_pp, r->n, r->reps, r->tok_s, r->tok_s_sd,
                                   r->gflops, r->gbs, r->flops_frac, r->bw_frac, r->roof_frac};
        if (ms) memcpy(ms, r->ms, (size_t)r->reps * sizeof *ms);
    }
    free(r);
    free(own);
    return s;
}

tinygpt_status tinygpt_run_speed(tinygpt *m, const int *ids, size_t n, int window, int reps,
                                 tinygpt_speed *out) {
    int N;
    tinygpt_status s;
    if ((s = check_ids(m, ids, n, "tinygpt_run_speed")) ||
        (s = window_of(m, window, "tinygpt_run_speed", &N)))
        return s;
    if (reps < 1 || reps > 1000)
        return tg_lib_fail(m, TINYGPT_ERR_ARG, "tinygpt_run_speed: reps %d is outside [1, 1000]",
                           reps);
    tg_speed sp;
    s = (tinygpt_status)tg_speed_run(tg_lib_gpt(m), ids, n, N, reps, &sp, tg_lib_err(m));
    tg_lib_cache_lost(m);
    if (s) return s;
    *out = (tinygpt_speed){sp.n_tokens, sp.reps, sp.prefill_tok_s, sp.decode_tok_s,
                           sp.prefill_attn_share, sp.decode_attn_share};
    return TINYGPT_OK;
}
