/* task.c — the synthetic tasks (see task.h).
 *
 * Token ids, per kind (D digits, k items, A answer tuples = D^k):
 *   marked-tuple  0..D-1 digits, D..2D-1 marked digits, 2D "?", then A tuples
 *   pair-lookup   0..D-1 digits, D + jD + d mark j's digit d, D+kD "?", tuples
 *   offsets       0..D-1 digits, D "?", then A tuples
 *   assoc-recall  0..K-1 keys, K..K+Vv-1 values
 *   induction     0..vocab-1
 * A tuple (d_0, .., d_{k-1}) is the id first_tuple + Σ d_j D^(k-1-j).
 */
#include "model/task.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const kind_names[TG_TASK_N_KINDS] = {
    "marked-tuple", "pair-lookup", "offsets", "assoc-recall", "induction"};

const char *tg_task_kind_name(tg_task_kind k) {
    return k >= 0 && k < TG_TASK_N_KINDS ? kind_names[k] : NULL;
}

const char *tg_task_names(void) { return "marked-tuple, pair-lookup, offsets, assoc-recall, induction"; }

/* An integer option of a kind: its key, where it lives, range and default. */
typedef struct opt_def {
    tg_task_kind kind;
    const char *key;
    size_t off;
    int lo, hi, def;
} opt_def;

#define OPT(kd, key, field, lo, hi, def) {kd, key, offsetof(tg_task, field), lo, hi, def}
static const opt_def opt_defs[] = {
    OPT(TG_TASK_MARKED_TUPLE, "len", len, 1, 1000, 16),
    OPT(TG_TASK_MARKED_TUPLE, "digits", digits, 2, 10, 3),
    OPT(TG_TASK_MARKED_TUPLE, "k", k, 1, TG_TASK_MAX_K, 4),
    OPT(TG_TASK_MARKED_TUPLE, "spacing", spacing, 1, 1000, 1),
    OPT(TG_TASK_PAIR_LOOKUP, "len", len, 1, 1000, 16),
    OPT(TG_TASK_PAIR_LOOKUP, "digits", digits, 2, 10, 3),
    OPT(TG_TASK_PAIR_LOOKUP, "k", k, 1, TG_TASK_MAX_K, 2),
    OPT(TG_TASK_OFFSETS, "len", len, 1, 1000, 12),
    OPT(TG_TASK_OFFSETS, "digits", digits, 2, 10, 4),
    OPT(TG_TASK_ASSOC_RECALL, "pairs", pairs, 1, 250, 8),
    OPT(TG_TASK_ASSOC_RECALL, "queries", queries, 1, 250, 4),
    OPT(TG_TASK_ASSOC_RECALL, "keys", keys, 1, 1000, 16),
    OPT(TG_TASK_ASSOC_RECALL, "values", values, 2, 1000, 16),
    OPT(TG_TASK_INDUCTION, "len", len, 2, 500, 12),
    OPT(TG_TASK_INDUCTION, "jitter", spacing, 0, 498, 5),
    OPT(TG_TASK_INDUCTION, "vocab", vocab, 2, 4000, 32),
};
#undef OPT
enum { N_OPT_DEFS = sizeof opt_defs / sizeof opt_defs[0] };

static int *opt_field(tg_task *t, const opt_def *d) { return (int *)((char *)t + d->off); }

static int ipow(int b, int e) {
    int r = 1;
    while (e-- > 0) r *= b;
    return r;
}

/* "3:7" -> offs; returns the count or -1 */
static int parse_offsets(const char *v, size_t vlen, int *offs) {
    int n = 0;
    size_t i = 0;
    while (i < vlen) {
        if (n == TG_TASK_MAX_K || v[i] < '0' || v[i] > '9') return -1;
        long x = 0;
        while (i < vlen && v[i] >= '0' && v[i] <= '9') {
            x = x * 10 + (v[i++] - '0');
            if (x > 1000) return -1;
        }
        offs[n++] = (int)x;
        if (i < vlen && v[i++] != ':') return -1;
        if (i == vlen && v[vlen - 1] == ':') return -1;
    }
    return n;
}

/* Fills V, n, n_answers, n_items, chance and checks the combination. */
static tg_status derive(tg_task *t, tg_err *err) {
    const char *nm = kind_names[t->kind];
    int D = t->digits, k = t->k;
    switch (t->kind) {
    case TG_TASK_MARKED_TUPLE:
    case TG_TASK_PAIR_LOOKUP:
    case TG_TASK_OFFSETS:
        if (ipow(D, k) > TG_TASK_MAX_V)
            return tg_fail(err, TG_ERR_ARG, "%s: digits^k = %d^%d answer tokens exceed %d", nm, D,
                           k, TG_TASK_MAX_V);
        if (t->kind == TG_TASK_MARKED_TUPLE && (long)(k - 1) * t->spacing >= t->len)
            return tg_fail(err, TG_ERR_ARG, "%s: %d marks %d apart do not fit in len=%d", nm, k,
                           t->spacing, t->len);
        if (t->kind == TG_TASK_PAIR_LOOKUP && k > t->len)
            return tg_fail(err, TG_ERR_ARG, "%s: k=%d marks do not fit in len=%d", nm, k, t->len);
        if (t->kind == TG_TASK_OFFSETS)
            for (int j = 0; j < k; j++) {
                if (t->offs[j] < 1 || t->offs[j] > t->len)
                    return tg_fail(err, TG_ERR_ARG, "%s: offset %d is outside [1, len=%d]", nm,
                                   t->offs[j], t->len);
                for (int i = 0; i < j; i++)
                    if (t->offs[i] == t->offs[j])
                        return tg_fail(err, TG_ERR_ARG, "%s: offset %d is given twice", nm, t->offs[j]);
            }
        {
            int first = t->kind == TG_TASK_MARKED_TUPLE ? 2 * D + 1
                        : t->kind == TG_TASK_PAIR_LOOKUP ? D + k * D + 1 : D + 1;
            t->V = first + ipow(D, k);
        }
        t->n = t->len + 2;
        t->n_answers = 1;
        t->n_items = k;
        t->chance = 1.0 / ipow(D, k);
        break;
    case TG_TASK_ASSOC_RECALL:
        if (t->pairs > t->keys)
            return tg_fail(err, TG_ERR_ARG, "%s: pairs=%d distinct keys need keys >= %d", nm,
                           t->pairs, t->pairs);
        if (t->queries > t->pairs)
            return tg_fail(err, TG_ERR_ARG, "%s: queries=%d exceed pairs=%d (each key is asked once)",
                           nm, t->queries, t->pairs);
        if (t->keys + t->values > TG_TASK_MAX_V)
            return tg_fail(err, TG_ERR_ARG, "%s: keys + values exceed %d tokens", nm, TG_TASK_MAX_V);
        t->V = t->keys + t->values;
        t->n = 2 * t->pairs + 2 * t->queries;
        t->n_answers = t->queries;
        t->n_items = 0;
        t->chance = 1.0 / t->values;
        break;
    case TG_TASK_INDUCTION:
        if (t->spacing > t->len - 2)
            return tg_fail(err, TG_ERR_ARG, "%s: jitter=%d leaves no answer (at most len-2 = %d)", nm,
                           t->spacing, t->len - 2);
        if (t->len + t->spacing > t->vocab)
            return tg_fail(err, TG_ERR_ARG,
                           "%s: len=%d and jitter=%d need vocab >= %d distinct tokens", nm, t->len,
                           t->spacing, t->len + t->spacing);
        t->V = t->vocab;
        t->n = 2 * t->len;
        t->n_answers = t->len - t->spacing - 1;
        t->n_items = 0;
        t->chance = 1.0 / t->vocab;
        break;
    default:
        return tg_fail(err, TG_ERR_ARG, "task: bad kind");
    }
    if (t->n > TG_TASK_MAX_N)
        return tg_fail(err, TG_ERR_ARG, "%s: sequences of %d tokens exceed %d", nm, t->n, TG_TASK_MAX_N);
    return TG_OK;
}

tg_status tg_task_parse(tg_task *t, const char *name, const char *opts, tg_err *err) {
    memset(t, 0, sizeof *t);
    int kind = -1;
    for (int i = 0; i < TG_TASK_N_KINDS; i++)
        if (name && !strcmp(name, kind_names[i])) kind = i;
    if (kind < 0)
        return tg_fail(err, TG_ERR_ARG, "unknown task '%s' (tasks: %s)", name ? name : "",
                       tg_task_names());
    t->kind = (tg_task_kind)kind;
    for (int i = 0; i < N_OPT_DEFS; i++)
        if (opt_defs[i].kind == t->kind) *opt_field(t, &opt_defs[i]) = opt_defs[i].def;
    if (t->kind == TG_TASK_OFFSETS) t->k = 2, t->offs[0] = 3, t->offs[1] = 7;

    const char *p = opts ? opts : "";
    while (*p) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        if (!eq || eq == p)
            return tg_fail(err, TG_ERR_ARG, "%s: option '%.*s' is not key=value", name, (int)len, p);
        size_t klen = (size_t)(eq - p), vlen = len - klen - 1;
        const char *v = eq + 1;
        int found = 0;
        if (t->kind == TG_TASK_OFFSETS && klen == 7 && !memcmp(p, "offsets", 7)) {
            int n = parse_offsets(v, vlen, t->offs);
            if (n < 1)
                return tg_fail(err, TG_ERR_ARG,
                               "%s: offsets='%.*s' is not 1 to %d distances like 3:7", name,
                               (int)vlen, v, TG_TASK_MAX_K);
            t->k = n;
            found = 1;
        }
        for (int i = 0; i < N_OPT_DEFS && !found; i++) {
            const opt_def *d = &opt_defs[i];
            if (d->kind != t->kind || strlen(d->key) != klen || memcmp(d->key, p, klen)) continue;
            char buf[16];
            char *e;
            long x = 0;
            int ok = vlen > 0 && vlen < sizeof buf;
            if (ok) {
                memcpy(buf, v, vlen);
                buf[vlen] = 0;
                x = strtol(buf, &e, 10);
                ok = *e == 0 && buf[0] != '+' && buf[0] != ' ' && x >= d->lo && x <= d->hi;
            }
            if (!ok)
                return tg_fail(err, TG_ERR_ARG, "%s: %s='%.*s' is not an integer in [%d, %d]", name,
                               d->key, (int)vlen, v, d->lo, d->hi);
            *opt_field(t, d) = (int)x;
            found = 1;
        }
        if (!found) {
            char keys[128] = "";
            for (int i = 0; i < N_OPT_DEFS; i++)
                if (opt_defs[i].kind == t->kind) {
                    if (keys[0]) strcat(keys, ", ");
                    strcat(keys, opt_defs[i].key);
                }
            if (t->kind == TG_TASK_OFFSETS) strcat(keys, ", offsets");
            return tg_fail(err, TG_ERR_ARG, "%s: unknown option '%.*s' (options: %s)", name,
                           (int)klen, p, keys);
        }
        p += len;
        if (*p == ',') {
            p++;
            if (!*p) return tg_fail(err, TG_ERR_ARG, "%s: options end with ','", name);
        }
    }
    return derive(t, err);
}

int tg_task_opts_string(const tg_task *t, char *buf, size_t size) {
    int n = 0;
    char tmp[512];
    for (int i = 0; i < N_OPT_DEFS; i++) {
        const opt_def *d = &opt_defs[i];
        if (d->kind != t->kind) continue;
        if (t->kind == TG_TASK_OFFSETS && !strcmp(d->key, "k")) continue;
        n += snprintf(tmp + n, sizeof tmp - (size_t)n, "%s%s=%d", n ? "," : "", d->key,
                      *(const int *)((const char *)t + d->off));
    }
    if (t->kind == TG_TASK_OFFSETS) {
        n += snprintf(tmp + n, sizeof tmp - (size_t)n, ",offsets=");
        for (int j = 0; j < t->k; j++)
            n += snprintf(tmp + n, sizeof tmp - (size_t)n, "%s%d", j ? ":" : "", t->offs[j]);
    }
    return snprintf(buf, size, "%s", tmp);
}

/* first tuple id and the tuple's digits */
static int tuple_base(const tg_task *t) { return t->V - ipow(t->digits, t->k); }

int tg_task_token_name(const tg_task *t, int id, char *buf, size_t size) {
    int D = t->digits, k = t->k;
    if (id < 0 || id >= t->V) return snprintf(buf, size, "<%d?>", id);
    switch (t->kind) {
    case TG_TASK_MARKED_TUPLE:
    case TG_TASK_PAIR_LOOKUP:
    case TG_TASK_OFFSETS: {
        int base = tuple_base(t);
        if (id >= base) {
            char d[TG_TASK_MAX_K + 2];
            int x = id - base;
            d[0] = '=';
            for (int j = k - 1; j >= 0; j--) d[1 + j] = (char)('0' + x % D), x /= D;
            d[k + 1] = 0;
            return snprintf(buf, size, "%s", d);
        }
        if (id == base - 1) return snprintf(buf, size, "?");
        if (id < D) return snprintf(buf, size, "%d", id);
        if (t->kind == TG_TASK_MARKED_TUPLE) return snprintf(buf, size, "*%d", id - D);
        return snprintf(buf, size, "%c%d", 'a' + (id - D) / D, (id - D) % D);
    }
    case TG_TASK_ASSOC_RECALL:
        return id < t->keys ? snprintf(buf, size, "k%d", id) : snprintf(buf, size, "v%d", id - t->keys);
    case TG_TASK_INDUCTION:
        return snprintf(buf, size, "t%d", id);
    default:
        return snprintf(buf, size, "?");
    }
}

tg_rng tg_task_stream(uint64_t seed, int stream) {
    tg_rng r = {seed * 0x9e3779b97f4a7c15ull ^ ((uint64_t)stream << 56) ^ 0x7a5c5eedull};
    tg_rng_next(&r);
    return r;
}

static int below(tg_rng *r, int n) { return (int)(tg_rng_next(r) % (uint64_t)n); }

/* k distinct sorted positions in [0, len), at least `gap` apart: uniform,
 * as k sorted distinct draws from [0, len - (k-1)(gap-1)) spread out */
static void sorted_positions(tg_rng *r, int len, int k, int gap, int *pos) {
    int m = len - (k - 1) * (gap - 1);
    /* k distinct of [0, m) by selection sampling, already in order */
    int need = k;
    for (int i = 0, j = 0; i < m && need > 0; i++)
        if (below(r, m - i) < need) pos[j++] = i, need--;
    for (int j = 0; j < k; j++) pos[j] += j * (gap - 1);
}

void tg_task_sample(const tg_task *t, tg_rng *r, tg_task_seq *s) {
    int n = t->n, D = t->digits, k = t->k;
    memset(s->answer, 0, (size_t)n);
    memset(s->role, 0, (size_t)n);
    for (int i = 0; i < n; i++) s->src[i] = -1;
    switch (t->kind) {
    case TG_TASK_MARKED_TUPLE:
    case TG_TASK_PAIR_LOOKUP:
    case TG_TASK_OFFSETS: {
        int len = t->len, pos[TG_TASK_MAX_K], item[TG_TASK_MAX_K];
        for (int i = 0; i < len; i++) s->seq[i] = below(r, D);
        if (t->kind == TG_TASK_OFFSETS) {
            for (int j = 0; j < k; j++) pos[j] = len - t->offs[j], item[j] = j;
        } else {
            sorted_positions(r, len, k, t->kind == TG_TASK_MARKED_TUPLE ? t->spacing : 1, pos);
            for (int j = 0; j < k; j++) item[j] = j;
            if (t->kind == TG_TASK_PAIR_LOOKUP) /* which mark sits where: a random order */
                for (int j = k - 1; j > 0; j--) {
                    int i = below(r, j + 1), x = item[i];
                    item[i] = item[j], item[j] = x;
                }
        }
        int digit[TG_TASK_MAX_K];
        for (int j = 0; j < k; j++) {
            int d = s->seq[pos[j]];
            digit[item[j]] = d;
            s->role[pos[j]] = (int8_t)(item[j] + 1);
            if (t->kind == TG_TASK_MARKED_TUPLE) s->seq[pos[j]] = D + d;
            else if (t->kind == TG_TASK_PAIR_LOOKUP) s->seq[pos[j]] = D + item[j] * D + d;
        }
        int x = 0;
        for (int j = 0; j < k; j++) x = x * D + digit[j];
        int base = tuple_base(t);
        s->seq[len] = base - 1; /* "?" */
        s->seq[len + 1] = base + x;
        s->answer[len + 1] = 1;
        break;
    }
    case TG_TASK_ASSOC_RECALL: {
        int P = t->pairs, K = t->keys, keys[1000], order[250];
        for (int i = 0; i < K; i++) keys[i] = i;
        for (int i = 0; i < P; i++) { /* partial Fisher-Yates: P distinct keys */
            int j = i + below(r, K - i), x = keys[i];
            keys[i] = keys[j], keys[j] = x;
        }
        for (int i = 0; i < P; i++) {
            s->seq[2 * i] = keys[i];
            s->seq[2 * i + 1] = K + below(r, t->values);
            order[i] = i;
        }
        for (int i = 0; i < t->queries; i++) {
            int j = i + below(r, P - i), x = order[i];
            order[i] = order[j], order[j] = x;
            int q = 2 * P + 2 * i;
            s->seq[q] = keys[order[i]];
            s->seq[q + 1] = s->seq[2 * order[i] + 1];
            s->answer[q + 1] = 1;
            s->src[q + 1] = 2 * order[i] + 1;
        }
        break;
    }
    case TG_TASK_INDUCTION: {
        /* filler of f = 2(len-b) tokens, then a block of b = len - U[0, jitter]
         * tokens twice; all distinct, so each token's earlier occurrence is
         * unique; the last len-jitter-1 positions are answers (all in the
         * second copy, after its first token). The block's varying length
         * keeps "the token len-1 back" from being the answer. */
        int L = t->len, b = L - below(r, t->spacing + 1), f = 2 * (L - b), toks[4000];
        for (int i = 0; i < t->vocab; i++) toks[i] = i;
        for (int i = 0; i < f + b; i++) {
            int j = i + below(r, t->vocab - i), x = toks[i];
            toks[i] = toks[j], toks[j] = x;
        }
        for (int i = 0; i < f; i++) s->seq[i] = toks[b + i];
        for (int i = 0; i < b; i++) s->seq[f + i] = s->seq[f + b + i] = toks[i];
        for (int a = n - t->n_answers; a < n; a++) s->answer[a] = 1, s->src[a] = a - b;
        break;
    }
    default:
        break;
    }
}

void tg_task_batch(const tg_task *t, tg_rng *r, int B, int *tokens, int *targets) {
    tg_task_seq s;
    int T = t->n - 1;
    for (int b = 0; b < B; b++) {
        tg_task_sample(t, r, &s);
        for (int i = 0; i < T; i++) {
            tokens[(size_t)b * T + i] = s.seq[i];
            targets[(size_t)b * T + i] = s.answer[i + 1] ? s.seq[i + 1] : -1;
        }
    }
}
