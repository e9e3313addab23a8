/* sampler.c — next-token selection (see sampler.h). Every step works on a
 * candidate list (id, value); orders are total (value descending, then id
 * ascending) so that the result depends only on the logits and the RNG. */
#include "model/sampler.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct cand {
    int id;
    float v; /* logit, then probability */
} cand;

struct tg_sampler {
    tg_sampler_params p;
    int V;
    cand *c;          /* [V] candidates */
    uint64_t *keys;   /* [2V] top-k scratch: rank keys */
    uint8_t *bin;     /* [V] top-k scratch: each token's bucket */
    float tau;        /* top-k: a guess at the k-th logit (speed only) */
    float *logits;    /* [V] working copy */
    uint8_t *seen;    /* [V] marks for the penalty (each token once) */
    int *recent;      /* [window] ring of the last accepted tokens */
    int n_recent, head;
    uint64_t rng;     /* splitmix64 state */
};

tg_sampler_params tg_sampler_defaults(void) {
    return (tg_sampler_params){.temp = 0.8f, .top_k = 40, .top_p = 0.95f, .min_p = 0.05f,
                               .repeat_penalty = 1.0f, .repeat_window = 64, .seed = 0};
}

static int in_range(float v, float lo, float hi) { return v >= lo && v <= hi; }

tg_status tg_sampler_create(tg_sampler **out, const tg_sampler_params *p, int n_vocab,
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
    tg_sampler *s = calloc(1, sizeof *s);
    if (!s) return tg_fail(err, TG_ERR_NOMEM, "sampler: out of memory");
    s->p = *p;
    s->V = n_vocab;
    s->c = malloc((size_t)n_vocab * sizeof *s->c);
    s->logits = malloc((size_t)n_vocab * sizeof *s->logits);
    s->seen = calloc((size_t)n_vocab, 1);
    s->keys = malloc(2 * (size_t)n_vocab * sizeof *s->keys);
    s->bin = malloc((size_t)n_vocab);
    s->recent = malloc((size_t)(p->repeat_window > 0 ? p->repeat_window : 1) * sizeof(int));
    if (!s->c || !s->logits || !s->seen || !s->recent || !s->keys || !s->bin) {
        tg_sampler_free(s);
        return tg_fail(err, TG_ERR_NOMEM, "sampler: out of memory for %d tokens", n_vocab);
    }
    tg_sampler_reset(s);
    *out = s;
    return TG_OK;
}

void tg_sampler_free(tg_sampler *s) {
    if (!s) return;
    free(s->c);
    free(s->logits);
    free(s->seen);
    free(s->keys);
    free(s->bin);
    free(s->recent);
    free(s);
}

void tg_sampler_reset(tg_sampler *s) {
    s->n_recent = s->head = 0;
    s->rng = s->p.seed;
    s->tau = -INFINITY;
}

void tg_sampler_forget(tg_sampler *s) { s->n_recent = s->head = 0; }

void tg_sampler_accept(tg_sampler *s, int token) {
    int w = s->p.repeat_window;
    if (w <= 0 || token < 0 || token >= s->V) return;
    s->recent[s->head] = token;
    s->head = (s->head + 1) % w;
    if (s->n_recent < w) s->n_recent++;
}

/* splitmix64: a full-period 64-bit generator; every seed (0 too) is good. */
static uint64_t next_u64(tg_sampler *s) {
    uint64_t z = (s->rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

double tg_sampler_uniform(tg_sampler *s) { return (double)(next_u64(s) >> 11) * 0x1.0p-53; }

/* a ranks before b: larger value, then smaller id */
static int before(const cand *a, const cand *b) {
    return a->v > b->v || (a->v == b->v && a->id < b->id);
}

static int cmp_cand(const void *pa, const void *pb) {
    const cand *a = pa, *b = pb;
    return before(a, b) ? -1 : before(b, a) ? 1 : 0;
}

/* x[V]: logit / r if positive else * r, once per distinct recent token. */
static void apply_penalty(tg_sampler *s, float *x) {
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

/* A token's rank as one integer: ascending keys are the order `before`
 * defines (value descending, then id ascending). The value's bits are made
 * monotone (negative floats flipped, positive ones offset) and inverted;
 * -0 is taken as +0, as the float compare does. */
static uint64_t rank_key(float v, int id) {
    uint32_t u;
    v += 0.0f; /* -0 -> +0 */
    memcpy(&u, &v, sizeof u);
    u = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
    return (uint64_t)~u << 32 | (uint32_t)id;
}

static int cmp_key(const void *pa, const void *pb) {
    uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;
    return (a > b) - (a < b);
}

/* keys[N] ascending: insertion sort for the few a top-k leaves, qsort
 * beyond */
static void sort_keys(uint64_t *keys, int n) {
    if (n > 128) {
        qsort(keys, (size_t)n, sizeof *keys, cmp_key);
        return;
    }
    for (int i = 1; i < n; i++) {
        uint64_t e = keys[i];
        int j = i;
        for (; j > 0 && keys[j - 1] > e; j--) keys[j] = keys[j - 1];
        keys[j] = e;
    }
}

/* bytes b[i0..i0+7] (those below n) as one word, byte j = b[i0 + j]: one
 * load where all 8 are there (the loop with its bound check was compiled
 * as 8 byte loads and branches) */
static inline uint64_t load_bytes8(const uint8_t *b, int i0, int n) {
    uint64_t w = 0;
    if (i0 + 8 <= n) {
        memcpy(&w, b + i0, sizeof w);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        w = __builtin_bswap64(w);
#endif
        return w;
    }
    for (int j = 0; i0 + j < n; j++) w |= (uint64_t)b[i0 + j] << (8 * j);
    return w;
}

#define TOPK_BINS 128

/* c[0..k-1] = the k best of x[V] (x > -inf), sorted; returns the count (<=
 * k). Partial selection by buckets: the finite values' range cut into
 * TOPK_BINS equal bins (a monotone map: a lower bin holds only smaller
 * values), a histogram, the highest bins that hold k tokens, and a sort of
 * those few (typically k plus part of one bin). keys is scratch of V. A
 * range that is not a finite positive number (+inf, all equal, overflow)
 * sorts every candidate instead. */
/* The float whose monotone key (below) is k. */
static float key_float(int32_t k) {
    int32_t s = k ^ ((k >> 31) & 0x7fffffff);
    float f;
    memcpy(&f, &s, sizeof f);
    return f;
}

static int select_top_k_buckets(cand *c, uint64_t *keys, uint8_t *bin, const float *x, int V,
                                int k) {
    /* The candidates' range (NaN and -inf are never candidates) on integer
     * keys that order as the floats do: branch-free integer loops the
     * compiler vectorizes, as it cannot a float min/max. In key order the
     * negative NaNs lie below -inf and the positive ones above +inf. */
    typedef int32_t __attribute__((may_alias)) bits32;
    const bits32 *xb = (const bits32 *)x;
    const int32_t key_ninf = (int32_t)0x807fffff, key_pinf = 0x7f800000;
    int32_t amn[8], amx[8]; /* 8 running lanes: an element-wise form SSE2 vectorizes */
    for (int j = 0; j < 8; j++) amn[j] = INT32_MAX, amx[j] = INT32_MIN;
    int i = 0;
    for (; i + 8 <= V; i += 8)
        for (int j = 0; j < 8; j++) {
            int32_t s = xb[i + j];
            int32_t key = s ^ ((s >> 31) & 0x7fffffff);
            int ok = key > key_ninf && key <= key_pinf;
            amn[j] = ok && key < amn[j] ? key : amn[j];
            amx[j] = ok && key > amx[j] ? key : amx[j];
        }
    for (; i < V; i++) {
        int32_t s = xb[i];
        int32_t key = s ^ ((s >> 31) & 0x7fffffff);
        int ok = key > key_ninf && key <= key_pinf;
        amn[0] = ok && key < amn[0] ? key : amn[0];
        amx[0] = ok && key > amx[0] ? key : amx[0];
    }
    int32_t kmn = amn[0], kmx = amx[0];
    for (int j = 1; j < 8; j++) {
        kmn = amn[j] < kmn ? amn[j] : kmn;
        kmx = amx[j] > kmx ? amx[j] : kmx;
    }
    if (kmx == INT32_MIN) return 0; /* nothing above -inf */
    float mn = key_float(kmn), mx = key_float(kmx);
    int m = 0;
    float scale = (float)TOPK_BINS / (mx - mn);
    if (!(mx < INFINITY) || !(scale < INFINITY) || !(scale > 0.0f)) {
        for (int i = 0; i < V; i++)
            if (x[i] > -INFINITY) keys[m++] = rank_key(x[i], i);
        sort_keys(keys, m);
    } else {
        /* bin[i]: the bucket, 0..TOPK_BINS-1 (NaN and -inf land in 0 and
         * are dropped when collected) */
        for (int i = 0; i < V; i++) {
            float f = (x[i] - mn) * scale;
            f = f > 0.0f ? f : 0.0f; /* NaN -> 0 */
            f = f < (float)(TOPK_BINS - 1) ? f : (float)(TOPK_BINS - 1);
            bin[i] = (uint8_t)(int)f;
        }
        /* four histograms in turn, so that runs of one bucket do not wait
         * on each other's increments */
        int hist[4][TOPK_BINS];
        memset(hist, 0, sizeof hist);
        int i = 0;
        for (; i + 4 <= V; i += 4) {
            hist[0][bin[i]]++;
            hist[1][bin[i + 1]]++;
            hist[2][bin[i + 2]]++;
            hist[3][bin[i + 3]]++;
        }
        for (; i < V; i++) hist[0][bin[i]]++;
        /* the highest buckets lo.. that hold k tokens; where each bucket's
         * tokens go in the list (higher buckets first) */
        int start[TOPK_BINS], lo = TOPK_BINS - 1, cum = 0;
        for (;; lo--) {
            start[lo] = cum;
            cum += hist[0][lo] + hist[1][lo] + hist[2][lo] + hist[3][lo];
            if (cum >= k || lo == 0) break;
        }
        /* mark bucket >= lo (0/1 bytes, vectorized), then visit the marks
         * 8 at a time: the tokens go to their bucket's place, so the list
         * is sorted but for the order within each bucket */
        uint8_t *sel = bin; /* bin[i] is read before sel[i] overwrites it */
        int lo_ = lo;
        for (int j = 0; j < V; j++) sel[j] = (uint8_t)(bin[j] >= lo_ ? 1 + bin[j] - lo_ : 0);
        for (int i0 = 0; i0 < V; i0 += 8) {
            uint64_t w = load_bytes8(sel, i0, V); /* byte j = sel[i0 + j] */
            while (w) {
                int byte = __builtin_ctzll(w) >> 3, id = i0 + byte;
                int b = (int)((w >> (8 * byte)) & 0xff) - 1 + lo_;
                w &= ~((uint64_t)0xff << (8 * byte));
                if (x[id] > -INFINITY) keys[start[b]++] = rank_key(x[id], id);
            }
        }
        /* every token of buckets >= 1 is a candidate (NaN and -inf land in
         * 0), so only bucket 0's part of the list can be short */
        m = lo > 0 ? cum : start[0];
        sort_keys(keys, m); /* nearly sorted: insertion sort is linear here */
    }
    int n = m < k ? m : k;
    for (int i = 0; i < n; i++) {
        int id = (int)(uint32_t)keys[i];
        c[i] = (cand){id, x[id]};
    }
    return n;
}

/* keys[M] ascending, for tokens whose values x[id] lie in [lo, hi] (finite):
 * placed first by NEAR_BINS equal slices of that range (higher values
 * first; tmp[M] scratch), which leaves only the order within each slice to
 * the insertion sort. 128 slices for the ~60 tokens a top-40 threshold
 * passes: most slices hold one, so the insertion sort's branches rarely
 * mispredict (32 slices: 1.76 us per token, 128: 1.32, bench_sampler) */
#define NEAR_BINS 128
static void sort_near(uint64_t *keys, uint64_t *tmp, const float *x, int m, float lo, float hi) {
    float scale = (float)NEAR_BINS / (hi - lo);
    if (!(scale < INFINITY) || !(scale > 0.0f)) {
        sort_keys(keys, m);
        return;
    }
    int count[NEAR_BINS + 1] = {0};
    uint8_t b[512];
    if (m > (int)sizeof b) {
        sort_keys(keys, m);
        return;
    }
    for (int i = 0; i < m; i++) {
        float f = (hi - x[(uint32_t)keys[i]]) * scale;
        int bi = f < (float)(NEAR_BINS - 1) ? (int)f : NEAR_BINS - 1;
        b[i] = (uint8_t)bi;
        count[bi + 1]++;
    }
    for (int i = 1; i <= NEAR_BINS; i++) count[i] += count[i - 1];
    for (int i = 0; i < m; i++) tmp[count[b[i]]++] = keys[i];
    memcpy(keys, tmp, (size_t)m * sizeof *keys);
    for (int i = 1; i < m; i++) { /* nearly sorted: a few steps each */
        uint64_t e = keys[i];
        int j = i;
        for (; j > 0 && keys[j - 1] > e; j--) keys[j] = keys[j - 1];
        keys[j] = e;
    }
}

/* c[0..k-1] = the k best of x[V] (x > -inf), sorted; returns the count.
 * First a guess *tau of the k-th value (from the previous call: the logits
 * of consecutive tokens are alike): when at least k tokens are >= tau, the
 * k best are among them, and one pass with a rarely taken branch finds
 * them. Otherwise (first call, a shifted distribution, too many above
 * tau) the buckets above decide. Either way the result is exact: tau only
 * changes the time. */
static int select_top_k(cand *c, uint64_t *keys, uint8_t *bin, float *tau, const float *x,
                        int V, int k) {
    int n = -1;
    if (*tau > -INFINITY) {
        int cap = 4 * k + 64, m = 0;
        float t = *tau, hi = -INFINITY;
        for (int i = 0; i < V; i++) bin[i] = x[i] >= t; /* NaN fails, -inf < t */
        /* 64 tokens at a time as one bit mask (the 0/1 bytes of 8 packed by
         * one multiply), so that the loop over the set bits mispredicts
         * once per 64 tokens, not once per 8 (the logits change every
         * token: the branch predictor cannot learn these patterns) */
        for (int g0 = 0; g0 < V && m <= cap; g0 += 64) {
            uint64_t bits = 0;
            for (int j = 0; j < 64 && g0 + j < V; j += 8)
                bits |= (load_bytes8(bin, g0 + j, V) * 0x0102040810204080ULL >> 56) << j;
            while (bits) {
                int id = g0 + __builtin_ctzll(bits);
                bits &= bits - 1;
                keys[m++] = rank_key(x[id], id);
                hi = x[id] > hi ? x[id] : hi;
            }
        }
        if (m >= k && m <= cap) {
            sort_near(keys, keys + V, x, m, t, hi);
            n = k;
            for (int i = 0; i < n; i++) {
                int id = (int)(uint32_t)keys[i];
                c[i] = (cand){id, x[id]};
            }
        }
    }
    if (n < 0) n = select_top_k_buckets(c, keys, bin, x, V, k);
    /* next guess: a little below this k-th value (a quarter of the top k's
     * spread: for N(0, 3²) logits over 1,024 tokens and k = 40 fewer
     * tokens miss and take the buckets than with an eighth, for a few more
     * candidates to sort: 0.96 -> 0.91 us per token) */
    float next = -INFINITY;
    if (n == k && k > 1) {
        float hi = c[0].v, lo = c[k - 1].v, d = 0.25f * (hi - lo);
        next = lo - d;
        if (!(next > -INFINITY) || !(next < INFINITY) || !(d > 0.0f)) next = -INFINITY;
    }
    *tau = next;
    return n;
}

int tg_sampler_sample(tg_sampler *s, const float *logits) {
    int V = s->V;
    const float *x = logits; /* read only: a copy only for the penalty */
    if (s->p.repeat_penalty != 1.0f) {
        memcpy(s->logits, logits, (size_t)V * sizeof *s->logits);
        apply_penalty(s, s->logits);
        x = s->logits;
    }
    if (s->p.temp == 0.0f) return argmax(x, V);

    /* Candidates: the top k sorted, or every finite token in id order. */
    cand *c = s->c;
    int n, sorted = 0;
    if (s->p.top_k > 0 && s->p.top_k < V) {
        n = select_top_k(c, s->keys, s->bin, &s->tau, x, V, s->p.top_k);
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
    double r = tg_sampler_uniform(s) * total, cum = 0.0;
    for (int i = 0; i < n; i++) {
        cum += c[i].v;
        if (r < cum) return c[i].id;
    }
    return c[n - 1].id;
}
