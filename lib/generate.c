/* generate.c — generation through the public API (include/tinygpt.h),
 * step by step: the loop of `tinygpt generate` (tools/cmd_generate.c) as a
 * state machine, so an iterator or a server can pull one token at a time.
 * The same prompt, settings and seed give the same tokens as the command:
 * the same sampler, the same forward calls, the same context crop.
 *
 * Output bytes pass two holds before they are released (t->out): a stop
 * string filter (a suffix that could still begin a stop string waits until
 * it fails to) and a UTF-8 hold (an unfinished character waits for its
 * last byte). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/internal.h"
#include "model/sampler.h"
#include "model/tokenizer.h"

struct tinygpt_gen {
    tinygpt *m;
    int V, C, eos, keep, max_tokens, ignore_eos, n_top;
    int bos; /* a sampled BOS ends the text too (llama2.c's stories end with it) */
    int no_logprob; /* tinygpt_gen_set_logprobs(g, 0): skip the normaliser */
    tg_sampler *smp;
    float *logits;          /* [V] the next token's logits */
    int *text_ids;          /* [C + n] scratch for a context crop */
    /* stop strings */
    char **stops;
    size_t *stop_len, max_stop;
    int n_stop;
    char *held;             /* bytes the stop filter holds back [n_held] */
    size_t n_held, cap_held;
    char pend_out[4];       /* an unfinished character of the output */
    size_t n_pend_out;
    char pend_text[4];      /* an unfinished character of the token texts */
    size_t n_pend_text;
    char *out, *text;       /* what the last record hands out */
    size_t cap_out, cap_text;
    /* state */
    int unfed;              /* the last token still has to run (-1: none) */
    int ended, end_given;
    tinygpt_generate_result res;
    double t_start;
    int top_ids[TINYGPT_MAX_TOP_LOGPROBS];
    double top_lp[TINYGPT_MAX_TOP_LOGPROBS];
};

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static const char *const reasons[] = {"running", "length", "eos", "stop", "context", "caller"};

const char *tinygpt_stop_reason_str(tinygpt_stop_reason r) {
    return (unsigned)r < sizeof reasons / sizeof reasons[0] ? reasons[r] : "unknown";
}

void tinygpt_generate_opts_init(tinygpt_generate_opts *o) {
    memset(o, 0, sizeof *o);
    o->max_tokens = 256;
    tinygpt_sampling_init(&o->sampling);
    o->keep = -1;
}

/* Grows *buf to hold n bytes. */
static int reserve(char **buf, size_t *cap, size_t n) {
    if (n <= *cap) return 0;
    size_t c = n * 2 + 16;
    char *b = realloc(*buf, c);
    if (!b) return -1;
    *buf = b;
    *cap = c;
    return 0;
}

void tinygpt_gen_set_logprobs(tinygpt_gen *g, int on) {
    if (g) g->no_logprob = !on;
}

void tinygpt_gen_free(tinygpt_gen *g) {
    if (!g) return;
    tg_sampler_free(g->smp);
    for (int i = 0; i < g->n_stop; i++) free(g->stops[i]);
    free(g->stops);
    free(g->stop_len);
    free(g->held);
    free(g->out);
    free(g->text);
    free(g->logits);
    free(g->text_ids);
    free(g);
}

/* Appends t[n] to the text and runs it, so that g->logits are the next
 * token's. When the cache cannot take them, it is replaced by the last
 * max(keep, n) tokens of the text (at most C) run from position 0. */
static tinygpt_status feed(tinygpt_gen *g, const int *t, int n) {
    tinygpt *m = g->m;
    int P = tinygpt_n_past(m);
    if (P + n <= g->C) return tinygpt_eval(m, t, n, P, g->logits, 0);
    int K = n > g->keep ? n : g->keep;
    if (K > g->C) K = g->C;
    memcpy(g->text_ids, tg_lib_cache_ids(m), (size_t)P * sizeof(int));
    memcpy(g->text_ids + P, t, (size_t)n * sizeof(int));
    g->res.n_shifts++;
    return tinygpt_eval(m, g->text_ids + P + n - K, K, 0, g->logits, 0);
}

static tinygpt_status start(tinygpt *m, const int *tokens, int n,
                            const tinygpt_generate_opts *opts, tinygpt_gen **out) {
    *out = NULL;
    tinygpt_generate_opts def;
    if (!opts) {
        tinygpt_generate_opts_init(&def);
        opts = &def;
    }
    int C = tinygpt_n_ctx(m), V = tinygpt_n_vocab(m), P = tinygpt_n_past(m);
    if (opts->max_tokens < -1)
        return tg_lib_fail(m, TINYGPT_ERR_ARG, "tinygpt_gen: max_tokens %d is below -1",
                           opts->max_tokens);
    if (opts->keep < -1 || opts->keep > C - 1)
        return tg_lib_fail(m, TINYGPT_ERR_ARG, "tinygpt_gen: keep %d is outside [-1, %d] (the "
                           "context less one)", opts->keep, C - 1);
    if (opts->top_logprobs < 0 || opts->top_logprobs > TINYGPT_MAX_TOP_LOGPROBS)
        return tg_lib_fail(m, TINYGPT_ERR_ARG, "tinygpt_gen: top_logprobs %d is outside [0, %d]",
                           opts->top_logprobs, TINYGPT_MAX_TOP_LOGPROBS);
    if (opts->n_stop < 0 || opts->n_stop > TINYGPT_MAX_STOPS || (opts->n_stop && !opts->stop))
        return tg_lib_fail(m, TINYGPT_ERR_ARG, "tinygpt_gen: n_stop %d is outside [0, %d]",
                           opts->n_stop, TINYGPT_MAX_STOPS);
    for (int i = 0; i < opts->n_stop; i++) {
        size_t len = opts->stop[i] ? strlen(opts->stop[i]) : 0;
        if (len < 1 || len > TINYGPT_MAX_STOP_LEN)
            return tg_lib_fail(m, TINYGPT_ERR_ARG, "tinygpt_gen: stop string %d is %zu bytes; "
                               "a stop string is 1 to %d", i, len, TINYGPT_MAX_STOP_LEN);
    }
    if (n < 0 || (n > 0 && !tokens))
        return tg_lib_fail(m, TINYGPT_ERR_ARG, "tinygpt_gen: %d prompt tokens", n);
    for (int i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= V)
            return tg_lib_fail(m, TINYGPT_ERR_ARG, "tinygpt_gen: prompt token %d is %d, outside "
                               "[0, %d) (the vocabulary)", i, tokens[i], V);
    int keep = opts->keep < 0 ? C / 2 : opts->keep;
    if (n > C)
        return tg_lib_fail(m, TINYGPT_ERR_RANGE, "tinygpt_gen: the prompt is %d tokens, longer "
                           "than the context of %d tokens", n, C);
    if (keep == 0 && P + n > C)
        return tg_lib_fail(m, TINYGPT_ERR_RANGE, "tinygpt_gen: %d prompt tokens do not fit "
                           "after the %d in the cache (context %d, keep 0)", n, P, C);
    int eos = tinygpt_eos(m);
    if (n == 0 && P > 0 && !tg_lib_last_logits(m))
        return tg_lib_fail(m, TINYGPT_ERR_ARG, "tinygpt_gen: no prompt, and no logits to go on "
                           "from (the cache was truncated, or its last eval failed)");
    if (n == 0 && P == 0 && eos < 0)
        return tg_lib_fail(m, TINYGPT_ERR_ARG, "tinygpt_gen: empty prompt, and the model has no "
                           "<|endoftext|> token to start from");

    tinygpt_gen *g = calloc(1, sizeof *g);
    if (!g) return tg_lib_fail(m, TINYGPT_ERR_NOMEM, "tinygpt_gen: out of memory");
    *g = (tinygpt_gen){.m = m, .V = V, .C = C, .eos = eos, .bos = tinygpt_bos(m), .keep = keep,
                       .max_tokens = opts->max_tokens, .ignore_eos = opts->ignore_eos,
                       .n_top = opts->top_logprobs > V ? V : opts->top_logprobs, .unfed = -1};
    g->res = (tinygpt_generate_result){.stop = TINYGPT_STOP_NONE, .stop_index = -1,
                                       .last_token = -1};
    g->logits = malloc((size_t)V * sizeof *g->logits);
    g->text_ids = malloc((size_t)(2 * C + 1) * sizeof *g->text_ids);
    g->n_stop = opts->n_stop;
    g->stops = calloc((size_t)(g->n_stop ? g->n_stop : 1), sizeof *g->stops);
    g->stop_len = calloc((size_t)(g->n_stop ? g->n_stop : 1), sizeof *g->stop_len);
    int oom = !g->logits || !g->text_ids || !g->stops || !g->stop_len;
    for (int i = 0; !oom && i < g->n_stop; i++) {
        g->stop_len[i] = strlen(opts->stop[i]);
        if (g->stop_len[i] > g->max_stop) g->max_stop = g->stop_len[i];
        oom = !(g->stops[i] = strdup(opts->stop[i]));
    }
    if (oom) {
        tinygpt_gen_free(g);
        return tg_lib_fail(m, TINYGPT_ERR_NOMEM, "tinygpt_gen: out of memory");
    }
    const tinygpt_sampling *p = &opts->sampling;
    tg_sampler_params sp = {p->temp, p->top_k, p->top_p, p->min_p, p->repeat_penalty,
                            p->repeat_window, p->seed};
    tg_status s = tg_sampler_create(&g->smp, &sp, V, tg_lib_err(m));
    if (s) {
        tinygpt_gen_free(g);
        return (tinygpt_status)s;
    }
    const int *cached = tg_lib_cache_ids(m);
    for (int i = 0; i < P; i++) tg_sampler_accept(g->smp, cached[i]);
    int start_eos = n == 0 && P == 0;
    const int *prompt = start_eos ? &eos : tokens;
    int n_prompt = start_eos ? 1 : n;
    for (int i = 0; i < n_prompt; i++) tg_sampler_accept(g->smp, prompt[i]);
    double t0 = now();
    tinygpt_status st = TINYGPT_OK;
    if (n_prompt > 0) st = feed(g, prompt, n_prompt);
    else memcpy(g->logits, tg_lib_last_logits(m), (size_t)V * sizeof *g->logits);
    g->t_start = now();
    g->res.prefill_s = g->t_start - t0;
    g->res.n_prompt = n_prompt;
    if (st) {
        tinygpt_gen_free(g);
        return st;
    }
    *out = g;
    return TINYGPT_OK;
}

tinygpt_status tinygpt_gen_start(tinygpt *m, const int *tokens, int n,
                                 const tinygpt_generate_opts *opts, tinygpt_gen **out) {
    return start(m, tokens, n, opts, out);
}

tinygpt_status tinygpt_gen_start_text(tinygpt *m, const char *text, size_t len,
                                      const tinygpt_generate_opts *opts, tinygpt_gen **out) {
    *out = NULL;
    if (!text && len)
        return tg_lib_fail(m, TINYGPT_ERR_ARG, "tinygpt_gen_start_text: no text");
    size_t n = 0;
    tinygpt_status s = tinygpt_tokenize(m, text ? text : "", len, 1, NULL, 0, &n);
    if (s && s != TINYGPT_ERR_RANGE) return s;
    int *ids = malloc((n ? n : 1) * sizeof *ids);
    if (!ids) return tg_lib_fail(m, TINYGPT_ERR_NOMEM, "tinygpt_gen_start_text: out of memory");
    if (!(s = tinygpt_tokenize(m, text ? text : "", len, 1, ids, n, &n))) {
        tinygpt_truncate(m, 0);
        s = start(m, ids, (int)n, opts, out);
    }
    free(ids);
    return s;
}

/* ---- the output holds ---------------------------------------------------------- */

/* Appends p[n] to the record's out, through the UTF-8 hold. */
static int release(tinygpt_gen *g, const char *p, size_t n, size_t *out_len) {
    size_t all = g->n_pend_out + n;
    if (reserve(&g->out, &g->cap_out, *out_len + all + 1)) return -1;
    char *o = g->out + *out_len;
    memcpy(o, g->pend_out, g->n_pend_out);
    memcpy(o + g->n_pend_out, p, n);
    size_t done = tinygpt_utf8_complete(o, all);
    g->n_pend_out = all - done; /* <= 3 */
    memcpy(g->pend_out, o + done, g->n_pend_out);
    *out_len += done;
    return 0;
}

/* Could held[i..n_held) still grow into some stop string? */
static int could_start_stop(const tinygpt_gen *g, size_t i) {
    size_t tail = g->n_held - i;
    for (int k = 0; k < g->n_stop; k++)
        if (tail < g->stop_len[k] && !memcmp(g->held + i, g->stops[k], tail)) return 1;
    return 0;
}

/* Feeds a token's bytes to the stop filter; releases what is safe into out.
 * Returns 1 when a stop string has ended (g->res.stop_index names it), 0,
 * or -1 when out of memory. */
static int filter(tinygpt_gen *g, const char *p, size_t n, size_t *out_len) {
    if (g->n_stop == 0) return release(g, p, n, out_len);
    size_t old = g->n_held;
    if (reserve(&g->held, &g->cap_held, old + n)) return -1;
    memcpy(g->held + old, p, n);
    g->n_held += n;
    /* The earliest end of any stop string (none ended within the old bytes);
     * of two ending at the same byte, the longer one is cut. */
    for (size_t end = old + 1; end <= g->n_held; end++) {
        int hit = -1;
        for (int k = 0; k < g->n_stop; k++) {
            size_t len = g->stop_len[k];
            if (len <= end && !memcmp(g->held + end - len, g->stops[k], len) &&
                (hit < 0 || len > g->stop_len[hit]))
                hit = k;
        }
        if (hit >= 0) {
            g->res.stop_index = hit;
            size_t keep = end - g->stop_len[hit];
            g->n_held = 0;
            return release(g, g->held, keep, out_len) ? -1 : 1;
        }
    }
    size_t i = g->n_held > g->max_stop - 1 ? g->n_held - (g->max_stop - 1) : 0;
    while (i < g->n_held && !could_start_stop(g, i)) i++;
    if (release(g, g->held, i, out_len)) return -1;
    memmove(g->held, g->held + i, g->n_held - i);
    g->n_held -= i;
    return 0;
}

/* The end record: whatever is still held back. */
static tinygpt_status end_record(tinygpt_gen *g, tinygpt_token *t) {
    size_t out_len = 0;
    memset(t, 0, sizeof *t);
    t->id = -1;
    t->index = g->res.n_tokens;
    t->piece = t->text = "";
    if (!g->end_given) {
        g->end_given = 1;
        if (reserve(&g->out, &g->cap_out, g->n_held + g->n_pend_out + 1))
            return tg_lib_fail(g->m, TINYGPT_ERR_NOMEM, "tinygpt_gen: out of memory");
        memcpy(g->out, g->pend_out, g->n_pend_out);
        out_len = g->n_pend_out;
        if (g->res.stop != TINYGPT_STOP_STRING && g->n_held) {
            memcpy(g->out + out_len, g->held, g->n_held);
            out_len += g->n_held;
        }
        g->n_pend_out = g->n_held = 0;
    }
    t->out = out_len ? g->out : "";
    t->out_len = out_len;
    return TINYGPT_OK;
}

static void finish(tinygpt_gen *g, tinygpt_stop_reason r) {
    if (g->ended) return;
    g->ended = 1;
    g->res.stop = r;
    g->res.decode_s = now() - g->t_start;
}

/* ---- the loop ------------------------------------------------------------------- */

tinygpt_status tinygpt_gen_next(tinygpt_gen *g, tinygpt_token *t) {
    tinygpt *m = g->m;
    if (g->unfed >= 0 && !g->ended) { /* the previous token runs now, when needed */
        int tok = g->unfed;
        g->unfed = -1;
        tinygpt_status s = feed(g, &tok, 1);
        if (s) {
            finish(g, TINYGPT_STOP_NONE);
            end_record(g, t);
            return s;
        }
    }
    if (g->ended) return end_record(g, t);
    if (g->max_tokens >= 0 && g->res.n_tokens >= g->max_tokens) {
        finish(g, TINYGPT_STOP_LENGTH); /* max_tokens 0 */
        return end_record(g, t);
    }
    int tok = tg_sampler_sample(g->smp, g->logits);
    if (tok < 0) {
        finish(g, TINYGPT_STOP_NONE);
        end_record(g, t);
        return tg_lib_fail(m, TINYGPT_ERR_NUMERIC, "tinygpt_gen: no logit is a number above "
                           "-inf: nothing to sample");
    }
    if ((tok == g->eos || (g->bos >= 0 && tok == g->bos)) && !g->ignore_eos) {
        finish(g, TINYGPT_STOP_EOS);
        return end_record(g, t);
    }
    tg_sampler_accept(g->smp, tok);
    /* log-softmax normaliser in double, as the command's --json */
    double lse = NAN;
    if (!g->no_logprob || g->n_top > 0) {
        const float *l = g->logits;
        double mx = -INFINITY, sum = 0;
        for (int i = 0; i < g->V; i++) mx = l[i] > mx ? l[i] : mx;
        for (int i = 0; i < g->V; i++) sum += exp((double)l[i] - mx);
        lse = mx + log(sum);
    }
    memset(t, 0, sizeof *t);
    t->id = tok;
    t->index = g->res.n_tokens;
    t->piece = tinygpt_token_piece(m, tok, &t->piece_len);
    t->logprob = (double)g->logits[tok] - lse;
    if (g->n_top > 0) {
        tg_lib_top_k(g->logits, g->V, g->n_top, g->top_ids);
        for (int j = 0; j < g->n_top; j++) g->top_lp[j] = (double)g->logits[g->top_ids[j]] - lse;
        t->n_top = g->n_top;
        t->top_ids = g->top_ids;
        t->top_logprobs = g->top_lp;
    }
    /* text: the characters this token completes */
    size_t all = g->n_pend_text + t->piece_len;
    if (reserve(&g->text, &g->cap_text, all + 1)) {
        finish(g, TINYGPT_STOP_NONE);
        return tg_lib_fail(m, TINYGPT_ERR_NOMEM, "tinygpt_gen: out of memory");
    }
    memcpy(g->text, g->pend_text, g->n_pend_text);
    memcpy(g->text + g->n_pend_text, t->piece, t->piece_len);
    size_t done = tinygpt_utf8_complete(g->text, all);
    g->n_pend_text = all - done;
    memcpy(g->pend_text, g->text + done, g->n_pend_text);
    g->text[done] = 0;
    t->text = g->text;
    t->text_len = done;
    /* out: through the stop filter and the UTF-8 hold */
    size_t out_len = 0;
    int hit = filter(g, t->piece, t->piece_len, &out_len);
    if (hit < 0) {
        finish(g, TINYGPT_STOP_NONE);
        return tg_lib_fail(m, TINYGPT_ERR_NOMEM, "tinygpt_gen: out of memory");
    }
    t->out = out_len ? g->out : "";
    t->out_len = out_len;
    g->res.n_tokens++;
    g->res.last_token = tok;
    if (hit) finish(g, TINYGPT_STOP_STRING);
    else if (g->max_tokens >= 0 && g->res.n_tokens >= g->max_tokens) finish(g, TINYGPT_STOP_LENGTH);
    else if (g->keep == 0 && tinygpt_n_past(m) == g->C) finish(g, TINYGPT_STOP_CONTEXT);
    else g->unfed = tok;
    return TINYGPT_OK;
}

void tinygpt_gen_stop(tinygpt_gen *g) {
    g->unfed = -1;
    finish(g, TINYGPT_STOP_CALLER);
}

void tinygpt_gen_result(const tinygpt_gen *g, tinygpt_generate_result *res) { *res = g->res; }

static tinygpt_status run(tinygpt_gen *g, tinygpt_token_fn fn, void *user,
                          tinygpt_generate_result *res) {
    tinygpt_status s = TINYGPT_OK;
    tinygpt_token t;
    for (;;) {
        if ((s = tinygpt_gen_next(g, &t))) break;
        if (t.id < 0) {
            if (fn && t.out_len) fn(user, &t);
            break;
        }
        if (fn && fn(user, &t)) tinygpt_gen_stop(g);
    }
    if (res) tinygpt_gen_result(g, res);
    tinygpt_gen_free(g);
    return s;
}

tinygpt_status tinygpt_generate(tinygpt *m, const int *tokens, int n,
                                const tinygpt_generate_opts *opts, tinygpt_token_fn fn,
                                void *user, tinygpt_generate_result *res) {
    tinygpt_gen *g;
    tinygpt_status s = tinygpt_gen_start(m, tokens, n, opts, &g);
    return s ? s : run(g, fn, user, res);
}

tinygpt_status tinygpt_generate_text(tinygpt *m, const char *text, size_t len,
                                     const tinygpt_generate_opts *opts, tinygpt_token_fn fn,
                                     void *user, tinygpt_generate_result *res) {
    tinygpt_gen *g;
    tinygpt_status s = tinygpt_gen_start_text(m, text, len, opts, &g);
    return s ? s : run(g, fn, user, res);
}
