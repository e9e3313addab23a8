/* sampler_oracle.c — the sampler as it was before the partial selection (commit
 * 8ce0572's model/sampler.c, a min-heap top-k and qsort), kept unchanged
 * but for its names as the oracle of test_sampler's same_choices tests: the
 * new sampler must pick the same token for the same seed, logits and
 * settings. (Original comment:) Every step works on a
 * candidate list (id, value); orders are total (value descending, then id
 * ascending) so that the result depends only on the logits and the RNG. */
#include "tests/model/sampler_oracle.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct cand {
    int id;
    float v; /* logit, then probability */
} cand;

struct oracle_sampler {
    tg_sampler_params p;
    int V;
    cand *c;          /* [V] candidates */
    float *logits;    /* [V] working copy */
    uint8_t *seen;    /* [V] marks for the penalty (each token once) */
    int *recent;      /* [window] ring of the last accepted tokens */
    int n_recent, head;
    uint64_t rng;     /* splitmix64 state */
};

tg_sampler_params oracle_sampler_defaults(void) {
    return (tg_sampler_params){.temp = 0.8f, .top_k = 40, .top_p = 0.95f, .min_p = 0.05f,
                               .repeat_penalty = 1.0f, .repeat_window = 64, .seed = 0};
}

static int in_range(float v, float lo, float hi) { return v >= lo && v <= hi; }

tg_status oracle_sampler_create(oracle_sampler **out, const tg_sampler_params *p, int n_vocab,
                            tg_err *err) {
    *out = NULL;
    if (n_vocab < 1) return tg_fail(err, TG_ERR_ARG, "sampler: vocabulary of %d tokens", n_vocab);
    if (!in_range(p->temp, 0.0f, 100.0f))
        return tg_fail(err, TG_ERR_ARG, "sampler: temperature %g outside [0, 100]", p->temp);
    if (p->temp > 0.0f && p->temp < TG_SAMPLER_MIN_TEMP)
        return tg_fail(err, TG_ERR_ARG,
                       "sampler: temperature %g is below the smallest usable %g (1/temp "
                       "overflows); use 0 for greedy",
                       p->temp, TG_SAMPLER_MIN_TEMP);
    if (p->top_k < 0 || p->top_k > (1 << 30))
        return tg_fail(err, TG_ERR_ARG, "sampler: top-k %d outside [0, %d]", p->top_k, 1 << 30);
    if (!in_range(p->top_p, 0.0f, 1.0f))
        return tg_fail(err, TG_ERR_ARG, "sampler: top-p %g outside [0, 1]", p->top_p);
    if (!in_range(p->min_p, 0.0f, 1.0f))
        return tg_fail(err, TG_ERR_ARG, "sampler: min-p %g outside [0, 1]", p->min_p);
    if (!in_range(p->repeat_penalty, 1.0f, 10.0f))
        return tg_fail(err, TG_ERR_ARG, "sampler: repeat penalty %g outside [1, 10]",
                       p->repeat_penalty);
    if (p->repeat_window < 0 || p->repeat_window > (1 << 20))
        return tg_fail(err, TG_ERR_ARG, "sampler: repeat window %d outside [0, %d]",
                       p->repeat_window, 1 << 20);
    oracle_sampler *s = calloc(1, sizeof *s);
    if (!s) return tg_fail(err, TG_ERR_NOMEM, "sampler: out of memory");
    s->p = *p;
    s->V = n_vocab;
    s->c = malloc((size_t)n_vocab * sizeof *s->c);
    s->logits = malloc((size_t)n_vocab * sizeof *s->logits);
    s->seen = calloc((size_t)n_vocab, 1);
    s->recent = malloc((size_t)(p->repeat_window > 0 ? p->repeat_window : 1) * sizeof(int));
    if (!s->c || !s->logits || !s->seen || !s->recent) {
        oracle_sampler_free(s);
        return tg_fail(err, TG_ERR_NOMEM, "sampler: out of memory for %d tokens", n_vocab);
    }
    oracle_sampler_reset(s);
    *out = s;
    return TG_OK;
}

void oracle_sampler_free(oracle_sampler *s) {
    if (!s) return;
    free(s->c);
    free(s->logits);
    free(s->seen);
    free(s->recent);
    free(s);
}

void oracle_sampler_reset(oracle_sampler *s) {
    s->n_recent = s->head = 0;
    s->rng = s->p.seed;
}

void oracle_sampler_accept(oracle_sampler *s, int token) {
    int w = s->p.repeat_window;
    if (w <= 0 || token < 0 || token >= s->V) return;
    s->recent[s->head] = token;
    s->head = (s->head + 1) % w;
    if (s->n_recent < w) s->n_recent++;
}

/* splitmix64: a full-period 64-bit generator; every seed (0 too) is good. */
static uint64_t next_u64(oracle_sampler *s) {
    uint64_t z = (s->rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

double oracle_sampler_uniform(oracle_sampler *s) { return (double)(next_u64(s) >> 11) * 0x1.0p-53; }

/* a ranks before b: larger value, then smaller id */
static int before(const cand *a, const cand *b) {
    return a->v > b->v || (a->v == b->v && a->id < b->id);
}

static int cmp_cand(const void *pa, const void *pb) {
    const cand *a = pa, *b = pb;
    return before(a, b) ? -1 : before(b, a) ? 1 : 0;
}

/* x[V]: logit / r if positive else * r, once per distinct recent token. */
static void apply_penalty(oracle_sampler *s, float *x) {
    float r = s->p.repeat_penalty;
    if (r == 1.0f) return;
    for (int i = 0; i < s->n_recent; i++) {
        int t = s->recent[i];
        if (s->seen[t]) continue;
        s->seen[t] = 1;
        x[t] = x[t] > 0.0f ? x[t] / r : x[t] * r;
    }
    for (int i = 0; i < s->n_recent; i++) s->seen[s->recent[i]] = 0;
}

/* The first index of the largest value above -inf (+inf included; NaN and
 * -inf never win), or -1 if there is none. */
static int argmax(const float *x, int n) {
    int best = -1;
    for (int i = 0; i < n; i++)
        if (x[i] > -INFINITY && (best < 0 || x[i] > x[best])) best = i;
    return best;
}

/* c[0..k-1] = the k best of x[V] (x > -inf), sorted. A min-heap of the k
 * best so far, root = the worst of them. Returns the count (<= k). */
static int select_top_k(cand *c, const float *x, int V, int k) {
    int n = 0;
    for (int i = 0; i < V; i++) {
        cand e = {i, x[i]};
        if (!(e.v > -INFINITY)) continue; /* -inf and NaN are never candidates */
        if (n < k) {
            int j = n++; /* sift up */
            while (j > 0 && before(&c[(j - 1) / 2], &e)) {
                c[j] = c[(j - 1) / 2];
                j = (j - 1) / 2;
            }
            c[j] = e;
        } else if (before(&e, &c[0])) {
            int j = 0; /* replace the root, sift down */
            for (;;) {
                int l = 2 * j + 1, r = l + 1, m = j;
                const cand *worst = &e;
                if (l < n && before(worst, &c[l])) worst = &c[l], m = l;
                if (r < n && before(worst, &c[r])) m = r;
                if (m == j) break;
                c[j] = c[m];
                j = m;
            }
            c[j] = e;
        }
    }
    qsort(c, (size_t)n, sizeof *c, cmp_cand);
    return n;
}

int oracle_sampler_sample(oracle_sampler *s, const float *logits) {
    int V = s->V;
    float *x = s->logits;
    memcpy(x, logits, (size_t)V * sizeof *x);
    apply_penalty(s, x);
    if (s->p.temp == 0.0f) return argmax(x, V);

    /* Candidates: the top k sorted, or every finite token in id order. */
    cand *c = s->c;
    int n, sorted = 0;
    if (s->p.top_k > 0 && s->p.top_k < V) {
        n = select_top_k(c, x, V, s->p.top_k);
        sorted = 1;
    } else {
        n = 0;
        for (int i = 0; i < V; i++)
            if (x[i] > -INFINITY) c[n++] = (cand){i, x[i]};
    }
    if (n == 0) return -1; /* every logit NaN or -inf */

    /* softmax(logit / temp) over the candidates. temp >= FLT_MIN keeps
     * inv_t finite, so (v - mx) * inv_t is 0 for the largest and <= 0 (or
     * -inf) for the rest: no NaN. A +inf maximum is the limit instead:
     * probability 1 for each +inf token, 0 for the others, then normalised. */
    float inv_t = 1.0f / s->p.temp, mx = -INFINITY;
    for (int i = 0; i < n; i++) mx = c[i].v > mx ? c[i].v : mx;
    double sum = 0.0;
    for (int i = 0; i < n; i++) {
        if (mx == INFINITY) c[i].v = c[i].v == INFINITY ? 1.0f : 0.0f;
        else c[i].v = expf((c[i].v - mx) * inv_t);
        sum += c[i].v;
    }
    float pmax = 0.0f;
    for (int i = 0; i < n; i++) {
        c[i].v = (float)(c[i].v / sum);
        pmax = c[i].v > pmax ? c[i].v : pmax;
    }

    /* top-p: the smallest prefix (by probability) whose mass reaches p.
     * A token with p_i < (1 - top_p) / n has at least top_p of mass ranked
     * above it, so it can be dropped before sorting (half that bound keeps
     * rounding on the safe side). */
    if (s->p.top_p < 1.0f) {
        if (!sorted) {
            float drop = 0.5f * (1.0f - s->p.top_p) / (float)n;
            int m = 0;
            for (int i = 0; i < n; i++)
                if (c[i].v >= drop) c[m++] = c[i];
            n = m;
            qsort(c, (size_t)n, sizeof *c, cmp_cand);
            sorted = 1;
        }
        double cum = 0.0;
        int keep = n;
        for (int i = 0; i < n; i++) {
            cum += c[i].v;
            if (cum >= s->p.top_p) {
                keep = i + 1;
                break;
            }
        }
        n = keep;
    }

    /* min-p: drop tokens below min_p times the most likely one. */
    if (s->p.min_p > 0.0f) {
        float floor_p = s->p.min_p * pmax;
        int m = 0;
        for (int i = 0; i < n; i++)
            if (c[i].v >= floor_p) c[m++] = c[i];
        n = m;
    }

    /* Draw from what is left, renormalised. The most likely token (p = pmax
     * > 0) survives top-p (it ranks first) and min-p (min_p <= 1), so n >= 1. */
    double total = 0.0;
    for (int i = 0; i < n; i++) total += c[i].v;
    double r = oracle_sampler_uniform(s) * total, cum = 0.0;
    for (int i = 0; i < n; i++) {
        cum += c[i].v;
        if (r < cum) return c[i].id;
    }
    return c[n - 1].id;
}
