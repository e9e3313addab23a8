/* task_analysis.c — what the heads of a task model do (analysis.h, task
 * models): answer accuracy and loss, per head the weight on each item of
 * the answer at the answer's query, the accuracy with that head zeroed and
 * with only that head of its layer. Moved from tools/task_heads.c with the
 * arithmetic unchanged (tests/tools/golden_test.py, compare_task). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/analysis.h"

/* argmax and -log softmax of logits[V] at target, in double */
static void score_logits(const float *l, int V, int target, int *argmax, double *nll) {
    int am = 0;
    double mx = l[0];
    for (int i = 1; i < V; i++)
        if (l[i] > mx) mx = l[i], am = i;
    double sum = 0;
    for (int i = 0; i < V; i++) sum += exp((double)l[i] - mx);
    *argmax = am;
    *nll = mx + log(sum) - (double)l[target];
}

tg_status tg_task_score_run(tg_gpt *g, const tg_task *t, tg_rng r, long n_seqs, tg_task_score *sc,
                            tg_task_seq_fn fn, void *user, tg_err *err) {
    int T = t->n - 1, V = t->V;
    if (V != tg_gpt_config(g)->n_vocab || T < 1 || T > tg_gpt_n_ctx(g))
        return tg_fail(err, TG_ERR_ARG, "the task (%d tokens of %d symbols) does not fit the model "
                                        "(vocabulary %d, context %d)", t->n, V,
                       tg_gpt_config(g)->n_vocab, tg_gpt_n_ctx(g));
    float *logits = malloc((size_t)T * V * sizeof *logits);
    tg_task_seq *s = malloc(sizeof *s);
    if (!logits || !s) {
        free(logits), free(s);
        return tg_fail(err, TG_ERR_NOMEM, "out of memory");
    }
    tg_status st = TG_OK;
    for (long q = 0; q < n_seqs && st == TG_OK; q++) {
        tg_task_sample(t, &r, s);
        if ((st = tg_gpt_forward(g, s->seq, T, 0, logits, 1, err)) != TG_OK) break;
        int all = 1;
        for (int i = 1; i < t->n; i++) {
            if (!s->answer[i]) continue;
            int am;
            double nll;
            score_logits(logits + (size_t)(i - 1) * V, V, s->seq[i], &am, &nll);
            sc->answers++;
            sc->nll += nll;
            if (am == s->seq[i]) sc->correct++;
            else all = 0;
        }
        sc->seqs++;
        sc->correct_seqs += all;
        if (fn) fn(user, s, logits);
    }
    free(logits), free(s);
    return st;
}

/* ---- per-head metrics through the probe ----------------------------------- */

typedef struct head_acc {
    int L, H, T, K;   /* K = items (or 2 for copy tasks: source, before it) */
    float *w;         /* [L, H, T, T] the current sequence's weights */
    double *item;     /* [L, H, K] summed weight on each item */
    double *top;      /* [L, H, K] times the item got the most weight among items */
    long n_queries;
} head_acc;

/* Every (layer, head, query) has its own row: workers never share memory. */
static void capture(void *user, int l, int h, int qpos, const float *p, int n_pos) {
    head_acc *a = user;
    if (qpos >= a->T || n_pos > a->T) return;
    memcpy(a->w + (((size_t)l * a->H + h) * a->T + qpos) * a->T, p, sizeof(float) * (size_t)n_pos);
}

static void accumulate(void *user, const tg_task_seq *s, const float *logits) {
    (void)logits;
    head_acc *a = user;
    int n = a->T + 1;
    for (int i = 1; i < n; i++) {
        if (!s->answer[i]) continue;
        int q = i - 1;
        for (int l = 0; l < a->L; l++)
            for (int h = 0; h < a->H; h++) {
                const float *row = a->w + (((size_t)l * a->H + h) * a->T + q) * a->T;
                double wk[TG_TASK_MAX_K] = {0};
                if (s->src[i] >= 0) {
                    wk[0] = row[s->src[i]];
                    wk[1] = s->src[i] > 0 ? row[s->src[i] - 1] : 0;
                } else {
                    for (int j = 0; j <= q; j++)
                        if (s->role[j] > 0) wk[s->role[j] - 1] += row[j];
                }
                int best = 0;
                for (int k = 0; k < a->K; k++) {
                    a->item[((size_t)l * a->H + h) * a->K + k] += wk[k];
                    if (wk[k] > wk[best]) best = k;
                }
                a->top[((size_t)l * a->H + h) * a->K + best] += 1;
            }
        a->n_queries++;
    }
}

static double acc_of(const tg_task_score *s) {
    return s->answers ? (double)s->correct / s->answers : NAN;
}

static tg_status masked_accuracy(tg_gpt *g, const tg_task *t, const uint8_t *mask, uint64_t seed,
                                 long n, double *out, tg_err *err) {
    tg_status st = tg_gpt_set_head_mask(g, mask, err);
    if (st) return st;
    tg_task_score sc = {0};
    st = tg_task_score_run(g, t, tg_task_stream(seed, TG_TASK_STREAM_COMPARE), n, &sc, NULL, NULL,
                           err);
    tg_gpt_set_head_mask(g, NULL, NULL);
    *out = acc_of(&sc);
    return st;
}

void tg_task_heads_free(tg_task_heads *h) {
    if (!h) return;
    free(h->heads);
    free(h->layers);
    memset(h, 0, sizeof *h);
}

tg_status tg_task_heads_analyse(tg_gpt *g, const tg_task *t, uint64_t seed, long n,
                                tg_task_heads *out, tg_err *err) {
    memset(out, 0, sizeof *out);
    if (!g || !t || n < 1) return tg_fail(err, TG_ERR_ARG, "task heads: no model, no task or no sequences");
    const tg_gpt2_config *c = tg_gpt_config(g);
    int L = c->n_layer, H = c->n_head, T = t->n - 1, KVH = tg_config_n_kv_head(c);
    if (T < 1 || T > tg_gpt_n_ctx(g) || t->V != c->n_vocab)
        return tg_fail(err, TG_ERR_ARG, "task heads: the task (%d tokens, %d symbols) does not fit "
                                        "the model", t->n, t->V);
    head_acc a = {.L = L, .H = H, .T = T, .K = t->n_items ? t->n_items : 2};
    out->n_layer = L, out->n_head = H, out->n_items = a.K;
    a.w = calloc((size_t)L * H * T * T, sizeof *a.w);
    a.item = calloc((size_t)L * H * a.K, sizeof *a.item);
    a.top = calloc((size_t)L * H * a.K, sizeof *a.top);
    double *ablate = calloc((size_t)L * H, sizeof *ablate), *keep = calloc((size_t)L * H, sizeof *keep);
    uint8_t *mask = malloc((size_t)L * H);
    out->heads = calloc((size_t)L * H, sizeof *out->heads);
    out->layers = calloc((size_t)L, sizeof *out->layers);
    tg_status st = TG_OK;
    if (!a.w || !a.item || !a.top || !ablate || !keep || !mask || !out->heads || !out->layers) {
        st = tg_fail(err, TG_ERR_NOMEM, "out of memory");
        goto done;
    }
    tg_probe probe = {.user = &a, .attn = capture};
    tg_gpt_set_probe(g, &probe);
    st = tg_task_score_run(g, t, tg_task_stream(seed, TG_TASK_STREAM_COMPARE), n, &out->full,
                           accumulate, &a, err);
    tg_gpt_set_probe(g, NULL);
    for (int l = 0; l < L && !st; l++)
        for (int h = 0; h < H && !st; h++) {
            memset(mask, 1, (size_t)L * H);
            mask[l * H + h] = 0;
            st = masked_accuracy(g, t, mask, seed, n, &ablate[l * H + h], err);
            if (st) break;
            memset(mask, 1, (size_t)L * H);
            for (int k = 0; k < H; k++) mask[l * H + k] = k == h;
            st = masked_accuracy(g, t, mask, seed, n, &keep[l * H + h], err);
        }
    if (st) goto done;
    out->n_queries = a.n_queries;
    out->accuracy = acc_of(&out->full);
    out->sequence_accuracy = (double)out->full.correct_seqs / out->full.seqs;
    out->loss = out->full.nll / out->full.answers;
    for (int l = 0; l < L; l++)
        for (int h = 0; h < H; h++) {
            size_t i = (size_t)l * H + h;
            tg_task_head_result *r = &out->heads[i];
            r->layer = l, r->head = h, r->kv_head = h / (H / KVH); /* its GQA group */
            for (int j = 0; j < a.K; j++) {
                r->weight[j] = a.item[i * a.K + j] / a.n_queries;
                r->top_share[j] = a.top[i * a.K + j] / a.n_queries;
            }
            r->ablated_accuracy = ablate[i];
            r->keep_only_accuracy = keep[i];
        }
    for (int l = 0; l < L; l++) {
        double best = -1, mean = 0;
        for (int h = 0; h < H; h++) {
            double v = keep[l * H + h];
            mean += v / H;
            if (v > best) best = v;
        }
        out->layers[l] = (tg_task_layer_result){l, best, mean};
    }
done:
    tg_gpt_set_probe(g, NULL);
    tg_gpt_set_head_mask(g, NULL, NULL);
    free(a.w), free(a.item), free(a.top), free(ablate), free(keep), free(mask);
    return st;
}
