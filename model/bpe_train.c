/* bpe_train.c — byte-level BPE training (see bpe_train.h).
 *
 * Words are counted once; then each unique word is a run of symbol ids and
 * every adjacent pair keeps a weighted count and the list of words it
 * occurs in. A merge touches only the words in its pair's list: their
 * pairs are subtracted, the word is rewritten, its pairs added back. The
 * best pair comes from a max-heap with lazy deletion: every change of a
 * count pushes a fresh entry, and an entry whose count is no longer
 * current is dropped when popped.
 */
#include "model/bpe_train.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/tokenizer.h"

static uint64_t hash_bytes(const void *p, size_t n) {
    const uint8_t *s = p;
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 0x100000001b3ull;
    return h ^ (h >> 29);
}

static uint64_t hash_pair(int32_t a, int32_t b) {
    uint64_t x = ((uint64_t)(uint32_t)a << 32) | (uint32_t)b;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    return x ^ (x >> 33);
}

/* A growable array of T: `grow(&p, &cap, need, sizeof *p)`. */
static int grow(void *pp, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return 0;
    size_t c = *cap ? *cap : 16;
    while (c < need) {
        if (c > SIZE_MAX / 2 / elem) return -1;
        c *= 2;
    }
    void *p = realloc(*(void **)pp, c * elem);
    if (!p) return -1;
    *(void **)pp = p;
    *cap = c;
    return 0;
}

/* A byte string -> index map over strings stored in an arena. */
typedef struct str_map {
    int32_t *slots;  /* index + 1, 0 = empty */
    size_t cap, n;
} str_map;

typedef struct arena_strs {
    uint8_t *bytes;
    size_t n, cap;
    size_t *off;     /* [count + 1] */
    size_t count, off_cap;
} arena_strs;

static const uint8_t *strs_get(const arena_strs *a, size_t i, size_t *len) {
    *len = a->off[i + 1] - a->off[i];
    return a->bytes + a->off[i];
}

static int strs_add(arena_strs *a, const uint8_t *s, size_t n) {
    if (grow(&a->bytes, &a->cap, a->n + n, 1) || grow(&a->off, &a->off_cap, a->count + 2, sizeof(size_t)))
        return -1;
    if (a->count == 0) a->off[0] = 0;
    memcpy(a->bytes + a->n, s, n);
    a->n += n;
    a->off[++a->count] = a->n;
    return 0;
}

static int map_find(const str_map *m, const arena_strs *a, const uint8_t *s, size_t n, uint64_t h,
                    size_t *slot) {
    *slot = 0;
    if (!m->cap) return -1;
    size_t mask = m->cap - 1, i = h & mask;
    for (;; i = (i + 1) & mask) {
        int32_t v = m->slots[i];
        if (!v) break;
        size_t l;
        const uint8_t *c = strs_get(a, (size_t)v - 1, &l);
        if (l == n && !memcmp(c, s, n)) {
            *slot = i;
            return v - 1;
        }
    }
    *slot = i;
    return -1;
}

/* Inserts index idx for string s (not present); grows the map at 1/2 load. */
static int map_insert(str_map *m, const arena_strs *a, int32_t idx) {
    if (2 * (m->n + 1) > m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 1024;
        int32_t *slots = calloc(cap, sizeof *slots);
        if (!slots) return -1;
        for (size_t i = 0; i < m->cap; i++) {
            int32_t v = m->slots[i];
            if (!v) continue;
            size_t l;
            const uint8_t *s = strs_get(a, (size_t)v - 1, &l);
            size_t j = hash_bytes(s, l) & (cap - 1);
            while (slots[j]) j = (j + 1) & (cap - 1);
            slots[j] = v;
        }
        free(m->slots);
        m->slots = slots;
        m->cap = cap;
    }
    size_t l;
    const uint8_t *s = strs_get(a, (size_t)idx, &l);
    size_t j = hash_bytes(s, l) & (m->cap - 1);
    while (m->slots[j]) j = (j + 1) & (m->cap - 1);
    m->slots[j] = idx + 1;
    m->n++;
    return 0;
}

typedef struct bpe_pair {
    int32_t a, b;
    int64_t count;      /* occurrences weighted by word frequency */
    int32_t *words;     /* words that had it when it was added (may be stale) */
    size_t n_words, cap_words;
    int32_t last_word;  /* the last word appended, to skip repeats */
    int32_t epoch;      /* the merge step that last changed it */
    int32_t merged;     /* already in the merge list */
} bpe_pair;

typedef struct heap_ent {
    int64_t count;
    int32_t a, b;
} heap_ent;

typedef struct trainer {
    /* unique words */
    arena_strs word_text;
    str_map word_map;
    int64_t *word_count;
    size_t word_count_cap;
    int32_t *syms;      /* every word's symbols, word w at sym_off[w] */
    size_t *sym_off;    /* [n_words] */
    int32_t *sym_len;   /* [n_words] */
    /* tokens (their bytes) */
    arena_strs tok;
    str_map tok_map;
    /* pairs */
    bpe_pair *pairs;
    size_t n_pairs, pairs_cap;
    int32_t *pair_slots; /* index + 1 */
    size_t pair_slots_cap;
    heap_ent *heap;
    size_t heap_n, heap_cap;
    int32_t *changed;
    size_t n_changed, changed_cap;
    /* merges in rank order: (left, right) token ids */
    int32_t (*merges)[2];
    size_t n_merges, merges_cap;
} trainer;

static void trainer_free(trainer *t) {
    free(t->word_text.bytes);
    free(t->word_text.off);
    free(t->word_map.slots);
    free(t->word_count);
    free(t->syms);
    free(t->sym_off);
    free(t->sym_len);
    free(t->tok.bytes);
    free(t->tok.off);
    free(t->tok_map.slots);
    for (size_t i = 0; i < t->n_pairs; i++) free(t->pairs[i].words);
    free(t->pairs);
    free(t->pair_slots);
    free(t->heap);
    free(t->changed);
    free(t->merges);
}

static tg_status count_word(void *user, const char *w, size_t n, tg_err *err) {
    trainer *t = user;
    uint64_t h = hash_bytes(w, n);
    size_t slot;
    int idx = map_find(&t->word_map, &t->word_text, (const uint8_t *)w, n, h, &slot);
    if (idx < 0) {
        idx = (int)t->word_text.count;
        if (idx == INT32_MAX - 1 || strs_add(&t->word_text, (const uint8_t *)w, n) ||
            map_insert(&t->word_map, &t->word_text, idx) ||
            grow(&t->word_count, &t->word_count_cap, (size_t)idx + 1, sizeof(int64_t)))
            return tg_fail(err, TG_ERR_NOMEM, "bpe train: out of memory counting words");
        t->word_count[idx] = 0;
    }
    t->word_count[idx]++;
    return TG_OK;
}

/* The pair (a, b): its index, or -1 (create = 0) / a new pair (create = 1;
 * -2 when out of memory). */
static int64_t pair_get(trainer *t, int32_t a, int32_t b, int create) {
    if (t->pair_slots_cap) {
        size_t mask = t->pair_slots_cap - 1;
        for (size_t i = hash_pair(a, b) & mask;; i = (i + 1) & mask) {
            int32_t v = t->pair_slots[i];
            if (!v) break;
            if (t->pairs[v - 1].a == a && t->pairs[v - 1].b == b) return v - 1;
        }
    }
    if (!create) return -1;
    if (t->n_pairs >= INT32_MAX - 1 || grow(&t->pairs, &t->pairs_cap, t->n_pairs + 1, sizeof(bpe_pair)))
        return -2;
    if (2 * (t->n_pairs + 1) > t->pair_slots_cap) {
        size_t cap = t->pair_slots_cap ? t->pair_slots_cap * 2 : 4096;
        int32_t *slots = calloc(cap, sizeof *slots);
        if (!slots) return -2;
        for (size_t i = 0; i < t->n_pairs; i++) {
            size_t j = hash_pair(t->pairs[i].a, t->pairs[i].b) & (cap - 1);
            while (slots[j]) j = (j + 1) & (cap - 1);
            slots[j] = (int32_t)i + 1;
        }
        free(t->pair_slots);
        t->pair_slots = slots;
        t->pair_slots_cap = cap;
    }
    size_t idx = t->n_pairs++;
    t->pairs[idx] = (bpe_pair){a, b, 0, NULL, 0, 0, -1, -1, 0};
    size_t j = hash_pair(a, b) & (t->pair_slots_cap - 1);
    while (t->pair_slots[j]) j = (j + 1) & (t->pair_slots_cap - 1);
    t->pair_slots[j] = (int32_t)idx + 1;
    return (int64_t)idx;
}

/* Adds d to pair (a, b) for word w (listing w in it when d > 0); remembers
 * the pair as changed in this epoch. */
static int pair_add(trainer *t, int32_t a, int32_t b, int64_t d, int32_t w, int32_t epoch) {
    int64_t i = pair_get(t, a, b, d > 0);
    if (i == -2) return -1;
    if (i < 0) return 0; /* cannot happen: a subtracted pair was counted */
    bpe_pair *p = &t->pairs[i];
    p->count += d;
    if (d > 0 && p->last_word != w) {
        if (grow(&p->words, &p->cap_words, p->n_words + 1, sizeof(int32_t))) return -1;
        p->words[p->n_words++] = w;
        p->last_word = w;
    }
    if (p->epoch != epoch) {
        p->epoch = epoch;
        if (grow(&t->changed, &t->changed_cap, t->n_changed + 1, sizeof(int32_t))) return -1;
        t->changed[t->n_changed++] = (int32_t)i;
    }
    return 0;
}

/* Max-heap order: higher count first, then smaller a, then smaller b. */
static int ent_before(const heap_ent *x, const heap_ent *y) {
    if (x->count != y->count) return x->count > y->count;
    if (x->a != y->a) return x->a < y->a;
    return x->b < y->b;
}

static int heap_push(trainer *t, heap_ent e) {
    if (grow(&t->heap, &t->heap_cap, t->heap_n + 1, sizeof(heap_ent))) return -1;
    size_t i = t->heap_n++;
    while (i > 0) {
        size_t up = (i - 1) / 2;
        if (!ent_before(&e, &t->heap[up])) break;
        t->heap[i] = t->heap[up];
        i = up;
    }
    t->heap[i] = e;
    return 0;
}

static heap_ent heap_pop(trainer *t) {
    heap_ent top = t->heap[0], last = t->heap[--t->heap_n];
    size_t n = t->heap_n, i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && ent_before(&t->heap[c + 1], &t->heap[c])) c++;
        if (!ent_before(&t->heap[c], &last)) break;
        t->heap[i] = t->heap[c];
        i = c;
    }
    if (n) t->heap[i] = last;
    return top;
}

/* The token spelled by bytes s[n]: its id, or a new one. */
static int32_t token_for(trainer *t, const uint8_t *s, size_t n) {
    size_t slot;
    int idx = map_find(&t->tok_map, &t->tok, s, n, hash_bytes(s, n), &slot);
    if (idx >= 0) return idx;
    idx = (int)t->tok.count;
    if (strs_add(&t->tok, s, n) || map_insert(&t->tok_map, &t->tok, idx)) return -1;
    return idx;
}

/* Rewrites word w with the pair (a, b) merged into m, updating the pair
 * counts. Returns -1 when out of memory. */
static int merge_word(trainer *t, int32_t w, int32_t a, int32_t b, int32_t m, int32_t epoch) {
    int32_t *s = t->syms + t->sym_off[w];
    int32_t n = t->sym_len[w];
    int has = 0;
    for (int32_t i = 0; i + 1 < n && !has; i++) has = s[i] == a && s[i + 1] == b;
    if (!has) return 0; /* a stale listing */
    int64_t c = t->word_count[w];
    for (int32_t i = 0; i + 1 < n; i++)
        if (pair_add(t, s[i], s[i + 1], -c, w, epoch)) return -1;
    int32_t k = 0;
    for (int32_t i = 0; i < n;) {
        if (i + 1 < n && s[i] == a && s[i + 1] == b) {
            s[k++] = m;
            i += 2;
        } else {
            s[k++] = s[i++];
        }
    }
    t->sym_len[w] = k;
    for (int32_t i = 0; i + 1 < k; i++)
        if (pair_add(t, s[i], s[i + 1], c, w, epoch)) return -1;
    return 0;
}

/* The vocabulary string of token id (bytes in GPT-2's unicode form). */
static char *token_string(const trainer *t, int32_t id) {
    size_t n;
    const uint8_t *s = strs_get(&t->tok, (size_t)id, &n);
    char *out = malloc(2 * n + 1), *p = out;
    if (!out) return NULL;
    for (size_t i = 0; i < n; i++) p += tg_gpt2_byte_to_utf8(s[i], p);
    *p = 0;
    return out;
}

static tg_status build_vocab(const trainer *t, tg_vocab *v, tg_err *err) {
    memset(v, 0, sizeof *v);
    int n_tok = (int)t->tok.count + 1;
    v->tokens = calloc((size_t)n_tok, sizeof(char *));
    v->token_type = calloc((size_t)n_tok, sizeof(int32_t));
    v->merges = calloc(t->n_merges + 1, sizeof(char *));
    v->pre = strdup("gpt-2");
    if (!v->tokens || !v->token_type || !v->merges || !v->pre) goto nomem;
    v->n_tokens = n_tok;
    for (int i = 0; i + 1 < n_tok; i++) {
        if (!(v->tokens[i] = token_string(t, i))) goto nomem;
        v->token_type[i] = 1;
    }
    if (!(v->tokens[n_tok - 1] = strdup("<|endoftext|>"))) goto nomem;
    v->token_type[n_tok - 1] = 3;
    v->bos_id = v->eos_id = n_tok - 1;
    for (size_t r = 0; r < t->n_merges; r++) {
        const char *l = v->tokens[t->merges[r][0]], *rr = v->tokens[t->merges[r][1]];
        size_t ll = strlen(l), lr = strlen(rr);
        char *m = malloc(ll + lr + 2);
        if (!m) goto nomem;
        memcpy(m, l, ll);
        m[ll] = ' ';
        memcpy(m + ll + 1, rr, lr + 1);
        v->merges[v->n_merges++] = m;
    }
    return TG_OK;
nomem:
    tg_vocab_free(v);
    return tg_fail(err, TG_ERR_NOMEM, "bpe train: out of memory writing the vocabulary");
}

tg_status tg_bpe_train(const char *text, size_t len, int n_vocab, tg_vocab *out, tg_err *err) {
    memset(out, 0, sizeof *out);
    out->bos_id = out->eos_id = -1;
    if (n_vocab < TG_BPE_MIN_VOCAB || n_vocab > TG_BPE_MAX_VOCAB)
        return tg_fail(err, TG_ERR_RANGE,
                       "bpe train: vocabulary size %d is outside [%d, %d] (256 bytes + merges + <|endoftext|>)",
                       n_vocab, TG_BPE_MIN_VOCAB, TG_BPE_MAX_VOCAB);
    if (!text && len) return tg_fail(err, TG_ERR_ARG, "bpe train: NULL text");
    trainer t = {0};
    tg_status s;
    tg_pretok *pre;
    if ((s = tg_pretok_create(&pre, err))) return s;
    s = tg_pretok_split(pre, text, len, count_word, &t, err);
    tg_pretok_free(pre);
    if (s) goto done;

    for (int b = 0; b < 256; b++) {
        uint8_t c = (uint8_t)b;
        if (token_for(&t, &c, 1) != b) goto nomem;
    }
    size_t n_words = t.word_text.count, total = t.word_text.n;
    t.syms = malloc((total + 1) * sizeof(int32_t));
    t.sym_off = malloc((n_words + 1) * sizeof(size_t));
    t.sym_len = malloc((n_words + 1) * sizeof(int32_t));
    if (!t.syms || !t.sym_off || !t.sym_len) goto nomem;
    for (size_t w = 0; w < n_words; w++) {
        size_t n;
        const uint8_t *b = strs_get(&t.word_text, w, &n);
        if (n > INT32_MAX) {
            s = tg_fail(err, TG_ERR_RANGE, "bpe train: a %zu-byte word is too long", n);
            goto done;
        }
        t.sym_off[w] = t.word_text.off[w];
        t.sym_len[w] = (int32_t)n;
        for (size_t i = 0; i < n; i++) t.syms[t.sym_off[w] + i] = b[i];
        for (size_t i = 0; i + 1 < n; i++)
            if (pair_add(&t, b[i], b[i + 1], t.word_count[w], (int32_t)w, 0)) goto nomem;
    }
    for (size_t i = 0; i < t.n_pairs; i++)
        if (heap_push(&t, (heap_ent){t.pairs[i].count, t.pairs[i].a, t.pairs[i].b})) goto nomem;

    /* one id is kept for <|endoftext|> */
    for (int32_t epoch = 1; (int)t.tok.count < n_vocab - 1; epoch++) {
        int64_t best = -1;
        while (t.heap_n) {
            heap_ent e = heap_pop(&t);
            int64_t i = pair_get(&t, e.a, e.b, 0);
            if (i >= 0 && e.count > 0 && t.pairs[i].count == e.count) {
                best = i;
                break;
            }
        }
        if (best < 0) break; /* no pair left */
        /* A pair can come back after its merge when a later merge spells an
         * existing token; it is merged again but listed once. */
        int32_t a = t.pairs[best].a, b = t.pairs[best].b, again = t.pairs[best].merged;
        t.pairs[best].merged = 1;
        size_t la, lb;
        const uint8_t *sa = strs_get(&t.tok, (size_t)a, &la), *sb = strs_get(&t.tok, (size_t)b, &lb);
        uint8_t *ab = malloc(la + lb);
        if (!ab) goto nomem;
        memcpy(ab, sa, la); /* before token_for: it may move the arena */
        memcpy(ab + la, sb, lb);
        int32_t m = token_for(&t, ab, la + lb);
        free(ab);
        if (m < 0 || grow(&t.merges, &t.merges_cap, t.n_merges + 1, sizeof *t.merges)) goto nomem;
        if (!again) {
            t.merges[t.n_merges][0] = a;
            t.merges[t.n_merges++][1] = b;
        }

        /* the word list is detached: no new pair is (a, b) again */
        bpe_pair *p = &t.pairs[best];
        int32_t *words = p->words;
        size_t nw = p->n_words;
        p->words = NULL;
        p->n_words = p->cap_words = 0;
        t.n_changed = 0;
        int bad = 0;
        for (size_t k = 0; k < nw && !bad; k++) bad = merge_word(&t, words[k], a, b, m, epoch);
        free(words);
        if (bad) goto nomem;
        for (size_t k = 0; k < t.n_changed; k++) {
            const bpe_pair *q = &t.pairs[t.changed[k]];
            if (q->count > 0 && heap_push(&t, (heap_ent){q->count, q->a, q->b})) goto nomem;
        }
    }
    s = build_vocab(&t, out, err);
    goto done;
nomem:
    s = tg_fail(err, TG_ERR_NOMEM, "bpe train: out of memory (%zu-byte text, %d tokens)", len, n_vocab);
done:
    trainer_free(&t);
    return s;
}
