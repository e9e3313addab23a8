/* analysis.c — quality, head analysis, agreement and attention capture
 * (see analysis.h). Moved from tools/cmd_compare.c and tools/attnviz.c
 * with the arithmetic unchanged, so the numbers printed stay the same
 * (tests/tools/golden_test.py). */
#include "model/analysis.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "model/scoring.h"

enum { CHUNK = 128, N_INDUCTION_SEQS = 4 };

static double safe_div(double a, double b) { return b > 0 ? a / b : NAN; }

void tg_loss_bucket_edges(int N, int b[TG_LOSS_BUCKETS + 1]) {
    b[0] = 1;
    b[1] = N / 8 > 2 ? N / 8 : 2;
    b[2] = N / 4 > b[1] + 1 ? N / 4 : b[1] + 1;
    b[3] = N / 2 > b[2] + 1 ? N / 2 : b[2] + 1;
    b[4] = N;
    for (int i = 1; i <= TG_LOSS_BUCKETS; i++)
        if (b[i] > N) b[i] = N;
}

static tg_status check_window(const char *fn, tg_gpt *g, const int *ids, size_t n_ids, int N,
                              tg_err *err) {
    if (!g || !ids) return tg_fail(err, TG_ERR_ARG, "%s: no model or no ids", fn);
    if (N < 2 || N > tg_gpt_n_ctx(g))
        return tg_fail(err, TG_ERR_RANGE, "%s: window %d is outside [2, %d]", fn, N, tg_gpt_n_ctx(g));
    if (n_ids < 2)
        return tg_fail(err, TG_ERR_RANGE, "%s: %zu token%s; at least 2 are needed", fn, n_ids,
                       n_ids == 1 ? "" : "s");
    return TG_OK;
}

/* Runs ids[n] in windows of N tokens (at most `limit` positions scored) and
 * calls fn for every scored position with the logits that predict it. */
typedef void (*score_fn)(void *user, const float *logits, int target, int wpos);

static tg_status scan(tg_gpt *g, const int *ids, size_t n_ids, int N, size_t limit, score_fn fn,
                      void *user, float *logits, tg_err *err) {
    int V = tg_gpt_config(g)->n_vocab;
    size_t scored = 0;
    for (size_t w0 = 0; w0 < n_ids && scored < limit; w0 += (size_t)N) {
        int n = n_ids - w0 < (size_t)N ? (int)(n_ids - w0) : N;
        if (n < 2) break;
        if ((size_t)(n - 1) > limit - scored) n = (int)(limit - scored) + 1;
        for (int c0 = 0; c0 < n - 1; c0 += CHUNK) {
            int T = n - 1 - c0 < CHUNK ? n - 1 - c0 : CHUNK;
            tg_status st = tg_gpt_forward(g, ids + w0 + c0, T, c0, logits, 1, err);
            if (st) return st;
            for (int t = 0; t < T; t++)
                fn(user, logits + (size_t)t * V, ids[w0 + c0 + t + 1], c0 + t + 1);
        }
        scored += (size_t)(n - 1);
    }
    return TG_OK;
}

static float *chunk_logits(tg_gpt *g) {
    return malloc((size_t)CHUNK * (size_t)tg_gpt_config(g)->n_vocab * sizeof(float));
}

/* ---- quality ------------------------------------------------------------------ */

typedef struct quality_acc {
    const tg_tokenizer *tok;
    int V;
    int b[TG_LOSS_BUCKETS + 1];
    tg_text_quality *q;
} quality_acc;

static void quality_fn(void *user, const float *logits, int target, int wpos) {
    quality_acc *a = user;
    tg_text_quality *q = a->q;
    double nll = tg_nll(logits, a->V, target);
    size_t len = 0;
    if (a->tok) tg_tokenizer_piece(a->tok, target, &len);
    q->nats += nll;
    q->bytes += len;
    q->tokens++;
    for (int i = 0; i < TG_LOSS_BUCKETS; i++)
        if (wpos >= a->b[i] && wpos < a->b[i + 1]) {
            q->by_position[i].nats += nll;
            q->by_position[i].tokens++;
        }
}

tg_status tg_text_quality_run(tg_gpt *g, const tg_tokenizer *tok, const int *ids, size_t n_ids,
                              int N, tg_text_quality *out, tg_err *err) {
    memset(out, 0, sizeof *out);
    tg_status st = check_window("quality", g, ids, n_ids, N, err);
    if (st) return st;
    float *logits = chunk_logits(g);
    if (!logits) return tg_fail(err, TG_ERR_NOMEM, "quality: out of memory");
    quality_acc a = {tok, tg_gpt_config(g)->n_vocab, {0}, out};
    tg_loss_bucket_edges(N, a.b);
    out->window = N;
    st = scan(g, ids, n_ids, N, SIZE_MAX, quality_fn, &a, logits, err);
    free(logits);
    out->nats_per_token = safe_div(out->nats, (double)out->tokens);
    out->perplexity = exp(out->nats_per_token);
    out->nats_per_byte = safe_div(out->nats, (double)out->bytes);
    for (int k = 0; k < TG_LOSS_BUCKETS; k++) {
        tg_loss_bucket *b = &out->by_position[k];
        b->from = a.b[k];
        b->to = a.b[k + 1] - 1;
        b->nats_per_token = safe_div(b->nats, (double)b->tokens);
    }
    out->in_context_score = out->by_position[TG_LOSS_BUCKETS - 1].nats_per_token -
                            out->by_position[0].nats_per_token;
    return st;
}

/* ---- the head analysis ---------------------------------------------------------- */

typedef struct loss_acc {
    int V;
    double nats;
    size_t n;
} loss_acc;

static void loss_fn(void *user, const float *logits, int target, int wpos) {
    (void)wpos;
    loss_acc *a = user;
    a->nats += tg_nll(logits, a->V, target);
    a->n++;
}

/* Probe callbacks run on worker threads; one head's queries may be split
 * over threads, so the shared accumulators take a lock. */
typedef struct heads_ctx {
    tg_head_stats *stats;   /* [L*H] */
    int H, block;
    pthread_mutex_t mu;
} heads_ctx;

static void stats_attn(void *user, int l, int h, int qpos, const float *p, int n_pos) {
    heads_ctx *c = user;
    pthread_mutex_lock(&c->mu);
    tg_head_stats_add(&c->stats[l * c->H + h], p, n_pos, qpos);
    pthread_mutex_unlock(&c->mu);
}

static void induction_attn(void *user, int l, int h, int qpos, const float *p, int n_pos) {
    (void)n_pos;
    heads_ctx *c = user;
    pthread_mutex_lock(&c->mu);
    tg_head_stats_add_induction(&c->stats[l * c->H + h], p, qpos, c->block);
    pthread_mutex_unlock(&c->mu);
}

static uint64_t splitmix(uint64_t *x) {
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Mean loss over the first `limit` scored positions, with the head mask set. */
static tg_status subset_loss(tg_gpt *g, const int *ids, size_t n_ids, int N, size_t limit,
                             const uint8_t *mask, float *logits, double *out, tg_err *err) {
    tg_status st = tg_gpt_set_head_mask(g, mask, err);
    if (st) return st;
    loss_acc a = {tg_gpt_config(g)->n_vocab, 0, 0};
    st = scan(g, ids, n_ids, N, limit, loss_fn, &a, logits, err);
    tg_gpt_set_head_mask(g, NULL, NULL);
    *out = a.n ? a.nats / (double)a.n : 0.0;
    return st;
}

void tg_head_analysis_free(tg_head_analysis *a) {
    if (!a) return;
    free(a->heads);
    free(a->layers);
    memset(a, 0, sizeof *a);
}

tg_status tg_head_analyse(tg_gpt *g, const tg_tokenizer *tok, const int *ids, size_t n_ids,
                          const tg_head_opts *o, tg_head_analysis *out, tg_err *err) {
    memset(out, 0, sizeof *out);
    if (!o) return tg_fail(err, TG_ERR_ARG, "heads: no options");
    int N = o->window;
    tg_status st = check_window("heads", g, ids, n_ids, N, err);
    if (st) return st;
    if (o->head_tokens < 1) return tg_fail(err, TG_ERR_RANGE, "heads: head_tokens is 0");
    const tg_gpt2_config *c = tg_gpt_config(g);
    int L = c->n_layer, H = c->n_head;
    size_t LH = (size_t)L * H, limit = o->head_tokens;
    int KVH = tg_config_n_kv_head(c), G = H / KVH; /* query heads per KV head */
    *out = (tg_head_analysis){.n_layer = L, .n_head = H, .n_kv_head = KVH, .window = N,
                              .head_tokens = limit, .seed = o->seed};
    heads_ctx hc = {.H = H};
    hc.stats = calloc(LH, sizeof *hc.stats);
    double *ablate = calloc(LH, sizeof *ablate), *only = calloc(LH, sizeof *only);
    out->heads = calloc(LH, sizeof *out->heads);
    if (H > 1) out->layers = calloc((size_t)L, sizeof *out->layers);
    uint8_t *mask = malloc(LH);
    int *seq = malloc((size_t)N * sizeof *seq);
    float *logits = chunk_logits(g);
    if (!hc.stats || !ablate || !only || !out->heads || (H > 1 && !out->layers) || !mask || !seq ||
        !logits) {
        st = tg_fail(err, TG_ERR_NOMEM, "heads: out of memory");
        goto done;
    }
    pthread_mutex_init(&hc.mu, NULL);

    /* attention statistics on the text, and the baseline loss */
    tg_probe probe = {.user = &hc, .attn = stats_attn};
    tg_gpt_set_probe(g, &probe);
    loss_acc base = {c->n_vocab, 0, 0};
    st = scan(g, ids, n_ids, N, limit, loss_fn, &base, logits, err);
    tg_gpt_set_probe(g, NULL);
    if (st) goto unlock;
    out->tokens = base.n;
    out->baseline_loss = base.n ? base.nats / (double)base.n : 0.0;

    /* Induction: a random block of tokens repeated; ordinary tokens only. */
    int block = N / 2 < 64 ? N / 2 : 64;
    int nt = tok ? tg_tokenizer_n_vocab(tok) : c->n_vocab;
    if (nt > c->n_vocab) nt = c->n_vocab;
    hc.block = block;
    tg_probe iprobe = {.user = &hc, .attn = induction_attn};
    uint64_t rng = o->seed;
    for (int r = 0; r < N_INDUCTION_SEQS && block >= 2; r++) {
        for (int i = 0; i < block; i++) {
            int id;
            do id = (int)(splitmix(&rng) % (uint64_t)nt);
            while (tok && tg_tokenizer_is_special(tok, id));
            seq[i] = seq[block + i] = id;
        }
        tg_gpt_set_probe(g, &iprobe);
        st = tg_gpt_forward(g, seq, 2 * block, 0, logits, 0, err);
        tg_gpt_set_probe(g, NULL);
        if (st) goto unlock;
    }
    for (size_t i = 0; i < LH; i++) tg_head_stats_finish(&hc.stats[i]);

    /* ablation: each head zeroed; then (H > 1) only one head kept per layer */
    for (size_t i = 0; i < LH; i++) {
        memset(mask, 1, LH);
        mask[i] = 0;
        if ((st = subset_loss(g, ids, n_ids, N, limit, mask, logits, &ablate[i], err))) goto unlock;
    }
    for (int l = 0; l < L && H > 1; l++)
        for (int h = 0; h < H; h++) {
            memset(mask, 1, LH);
            memset(mask + (size_t)l * H, 0, (size_t)H);
            mask[(size_t)l * H + h] = 1;
            if ((st = subset_loss(g, ids, n_ids, N, limit, mask, logits, &only[(size_t)l * H + h],
                                  err)))
                goto unlock;
        }

    for (int l = 0; l < L; l++)
        for (int h = 0; h < H; h++) {
            size_t i = (size_t)l * H + h;
            tg_head_result *r = &out->heads[i];
            r->layer = l, r->head = h, r->kv_head = h / G;
            r->stats = hc.stats[i];
            r->cls = tg_head_class(&r->stats);
            r->ablation_loss = ablate[i];
            r->ablation_delta = ablate[i] - out->baseline_loss;
            r->only_loss = H > 1 ? only[i] : NAN;
        }
    for (int l = 0; l < L && H > 1; l++) {
        int best = 0;
        double mean = 0.0;
        for (int h = 0; h < H; h++) {
            mean += only[l * H + h] / H;
            if (only[l * H + h] < only[l * H + best]) best = h;
        }
        out->layers[l] = (tg_layer_result){.layer = l, .best_head = best,
                                           .all_heads_loss = out->baseline_loss,
                                           .best_head_loss = only[l * H + best],
                                           .random_head_loss = mean};
    }
    out->n_layers = H > 1 ? L : 0;
unlock:
    pthread_mutex_destroy(&hc.mu);
done:
    tg_gpt_set_probe(g, NULL);
    tg_gpt_set_head_mask(g, NULL, NULL);
    free(hc.stats);
    free(ablate);
    free(only);
    free(mask);
    free(seq);
    free(logits);
    return st;
}

/* ---- agreement ------------------------------------------------------------------- */

tg_status tg_agreement_run(tg_gpt *a, tg_gpt *b, const int *ids, size_t n_ids, int N,
                           tg_agreement *out, tg_err *err) {
    memset(out, 0, sizeof *out);
    tg_status st = check_window("agreement", a, ids, n_ids, N, err);
    if (!st) st = check_window("agreement", b, ids, n_ids, N, err);
    if (st) return st;
    int Va = tg_gpt_config(a)->n_vocab, Vb = tg_gpt_config(b)->n_vocab;
    int V = Va < Vb ? Va : Vb;
    float *la = chunk_logits(a), *lb = chunk_logits(b);
    if (!la || !lb) {
        free(la), free(lb);
        return tg_fail(err, TG_ERR_NOMEM, "agreement: out of memory");
    }
    for (size_t w0 = 0; w0 < n_ids && !st; w0 += (size_t)N) {
        int n = n_ids - w0 < (size_t)N ? (int)(n_ids - w0) : N;
        if (n < 2) break;
        for (int c0 = 0; c0 < n - 1 && !st; c0 += CHUNK) {
            int T = n - 1 - c0 < CHUNK ? n - 1 - c0 : CHUNK;
            st = tg_gpt_forward(a, ids + w0 + c0, T, c0, la, 1, err);
            if (!st) st = tg_gpt_forward(b, ids + w0 + c0, T, c0, lb, 1, err);
            for (int t = 0; t < T && !st; t++) {
                const float *ra = la + (size_t)t * Va, *rb = lb + (size_t)t * Vb;
                out->top1_same += tg_argmax(ra, V) == tg_argmax(rb, V);
                out->kl_sum += tg_kl(ra, rb, V);
                out->positions++;
            }
        }
    }
    free(la);
    free(lb);
    out->top1 = safe_div((double)out->top1_same, (double)out->positions);
    out->kl = safe_div(out->kl_sum, (double)out->positions);
    return st;
}

/* ---- attention capture ------------------------------------------------------------ */

/* The probe's attn callback: every (layer, head, query) has its own row, so
 * workers never write the same memory. */
static void capture_attn(void *user, int l, int h, int q, const float *p, int n_pos) {
    tg_attention *a = user;
    if (l < 0 || l >= a->n_layer || h < 0 || h >= a->n_head || q < 0 || q >= a->n_tokens ||
        n_pos > a->n_tokens)
        return;
    memcpy((float *)tg_attention_row(a, l, h, q), p, (size_t)n_pos * sizeof *p);
}

void tg_attention_free(tg_attention *a) {
    if (!a) return;
    free(a->w);
    memset(a, 0, sizeof *a);
}

static tg_status check_prompt(tg_gpt *g, const int *ids, int T, tg_err *err) {
    if (!g || (!ids && T > 0)) return tg_fail(err, TG_ERR_ARG, "attention: no model or no ids");
    if (T < 1) return tg_fail(err, TG_ERR_ARG, "attention: the prompt has no tokens");
    if (T > tg_gpt_n_ctx(g))
        return tg_fail(err, TG_ERR_RANGE, "attention: the prompt has %d tokens, the context %d",
                       T, tg_gpt_n_ctx(g));
    return TG_OK;
}

tg_status tg_attention_capture_into(tg_gpt *g, const int *ids, int T, float *w, float *logits,
                                    tg_err *err) {
    tg_status s = check_prompt(g, ids, T, err);
    if (s) return s;
    if (!w) return tg_fail(err, TG_ERR_ARG, "attention: no buffer for the weights");
    const tg_gpt2_config *c = tg_gpt_config(g);
    tg_attention a = {c->n_layer, c->n_head, T, w};
    memset(w, 0, (size_t)c->n_layer * c->n_head * T * T * sizeof *w);
    float *own = logits ? NULL : malloc((size_t)c->n_vocab * sizeof *own);
    if (!logits && !own) return tg_fail(err, TG_ERR_NOMEM, "attention: out of memory");
    tg_probe probe = {.user = &a, .attn = capture_attn};
    tg_gpt_set_probe(g, &probe);
    s = tg_gpt_forward(g, ids, T, 0, logits ? logits : own, 0, err);
    tg_gpt_set_probe(g, NULL);
    free(own);
    return s;
}

tg_status tg_attention_capture(tg_gpt *g, const int *ids, int T, tg_attention *out, tg_err *err) {
    memset(out, 0, sizeof *out);
    tg_status s = check_prompt(g, ids, T, err);
    if (s) return s;
    const tg_gpt2_config *c = tg_gpt_config(g);
    float *w = malloc((size_t)c->n_layer * c->n_head * T * T * sizeof *w);
    if (!w) return tg_fail(err, TG_ERR_NOMEM, "attention: out of memory for %d tokens", T);
    if ((s = tg_attention_capture_into(g, ids, T, w, NULL, err))) {
        free(w);
        return s;
    }
    *out = (tg_attention){c->n_layer, c->n_head, T, w};
    return TG_OK;
}
