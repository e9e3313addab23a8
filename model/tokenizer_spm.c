/* tokenizer_spm.c — SentencePiece-style BPE (see tokenizer_spm.h).
 *
 * Symbols are spans [start, end) of one work buffer (the dummy-prefix space,
 * then the text), kept in a doubly linked list; a max-heap holds candidate
 * merges of adjacent symbols keyed (score, leftmost start). A candidate is
 * stale once either symbol is gone or has grown (its span no longer has the
 * length recorded), and is dropped when popped. Every merge is one pop and
 * at most two pushes: O(n log n) in the text length, where llama2.c's scan
 * over all pairs per merge is O(n²).
 */
#include "model/tokenizer_spm.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/tokenizer.h"

#define SPACE_MARK "\xe2\x96\x81" /* ▁ */
#define SCORE_FLOOR (-1e10f)      /* llama2.c's best_score start: never merged at or below */

typedef struct spm_sym {
    uint32_t start, end; /* span of the work buffer */
    int32_t id;
    int32_t prev, next;  /* -1 at the ends */
    uint8_t mergeable;   /* 0: a byte-fallback or <unk> symbol */
} spm_sym;

typedef struct spm_cand {
    float score;
    uint32_t start, len; /* of the left symbol and of the merged span */
    int32_t left, right, id;
} spm_cand;

struct tg_spm {
    int n_vocab;
    int bos, eos, unk;
    int add_bos, add_eos;
    int byte_id[256];
    float *scores;         /* [V] */
    uint8_t *special;      /* [V] control / user-defined: matched with parse_special */
    char *text;            /* decoded bytes of every token, NUL-separated */
    size_t *text_off;      /* [V + 1] */
    char *keys;            /* the text each token matches (▁ as space), NUL-separated */
    size_t *key_off;       /* [V + 1] */
    char *strs;            /* vocabulary strings, NUL-separated */
    size_t *str_off;       /* [V + 1] */
    int32_t *key_map;      /* [cap] id + 1 of a matchable key, 0 empty */
    int32_t *str_map;      /* [cap] id + 1 by vocabulary string */
    size_t map_cap;
    size_t max_key;        /* longest matchable key */
    int *specials;         /* special ids, longest string first */
    int n_specials;

    /* scratch */
    char *work;
    spm_sym *sym;
    spm_cand *heap;
    size_t work_cap, sym_cap, heap_n, heap_cap;
};

static uint64_t hash_bytes(const void *p, size_t n) {
    const uint8_t *s = p;
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 0x100000001b3ull;
    return h ^ (h >> 29);
}

static int map_find(const int32_t *map, size_t cap, const char *base, const size_t *off,
                    const char *s, size_t n) {
    size_t mask = cap - 1;
    for (size_t i = hash_bytes(s, n) & mask;; i = (i + 1) & mask) {
        int v = map[i];
        if (!v) return -1;
        const char *c = base + off[v - 1];
        if (off[v] - off[v - 1] - 1 == n && !memcmp(c, s, n)) return v - 1;
    }
}

/* Adds id under its string unless the string is there already (first id wins). */
static void map_add(int32_t *map, size_t cap, const char *base, const size_t *off, int id) {
    const char *s = base + off[id];
    size_t n = off[id + 1] - off[id] - 1;
    if (map_find(map, cap, base, off, s, n) >= 0) return;
    size_t mask = cap - 1, i = hash_bytes(s, n) & mask;
    while (map[i]) i = (i + 1) & mask;
    map[i] = id + 1;
}

void tg_spm_free(tg_spm *s) {
    if (!s) return;
    free(s->scores);
    free(s->special);
    free(s->text);
    free(s->text_off);
    free(s->keys);
    free(s->key_off);
    free(s->strs);
    free(s->str_off);
    free(s->key_map);
    free(s->str_map);
    free(s->specials);
    free(s->work);
    free(s->sym);
    free(s->heap);
    free(s);
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

static int byte_piece(const char *t) {
    if (strncmp(t, "<0x", 3) || !t[3] || !t[4] || t[5] != '>' || t[6]) return -1;
    int hi = hexval(t[3]), lo = hexval(t[4]);
    return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

/* Writes t with every ▁ turned into a space; returns the length. */
static size_t unmark(const char *t, char *out) {
    size_t k = 0;
    for (size_t i = 0; t[i];) {
        if ((uint8_t)t[i] == 0xE2 && (uint8_t)t[i + 1] == 0x96 && (uint8_t)t[i + 2] == 0x81) { /* ▁ */
            out[k++] = ' ';
            i += 3;
        } else {
            out[k++] = t[i++];
        }
    }
    return k;
}

static int cmp_special(const void *a, const void *b, void *ctx) {
    const tg_spm *s = ctx;
    int x = *(const int *)a, y = *(const int *)b;
    size_t lx = s->str_off[x + 1] - s->str_off[x], ly = s->str_off[y + 1] - s->str_off[y];
    if (lx != ly) return lx > ly ? -1 : 1;
    return x < y ? -1 : x > y;
}

tg_status tg_spm_create(tg_spm **out, const tg_vocab *v, tg_err *err) {
    *out = NULL;
    int V = v->n_tokens;
    tg_spm *s = calloc(1, sizeof *s);
    if (!s) return tg_fail(err, TG_ERR_NOMEM, "tokenizer: out of memory");
    s->n_vocab = V;
    size_t total = 0;
    for (int i = 0; i < V; i++) {
        if (!v->tokens[i]) {
            tg_spm_free(s);
            return tg_fail(err, TG_ERR_FORMAT, "tokenizer: token %d has no string", i);
        }
        total += strlen(v->tokens[i]) + 1;
    }
    s->scores = malloc((size_t)V * sizeof *s->scores);
    s->special = calloc((size_t)V, 1);
    s->text = malloc(total);
    s->keys = malloc(total);
    s->strs = malloc(total);
    s->text_off = malloc(((size_t)V + 1) * sizeof(size_t));
    s->key_off = malloc(((size_t)V + 1) * sizeof(size_t));
    s->str_off = malloc(((size_t)V + 1) * sizeof(size_t));
    s->specials = malloc((size_t)V * sizeof(int));
    s->map_cap = 16;
    while (s->map_cap < (size_t)V * 2) s->map_cap *= 2;
    s->key_map = calloc(s->map_cap, sizeof(int32_t));
    s->str_map = calloc(s->map_cap, sizeof(int32_t));
    if (!s->scores || !s->special || !s->text || !s->keys || !s->strs || !s->text_off ||
        !s->key_off || !s->str_off || !s->specials || !s->key_map || !s->str_map) {
        tg_spm_free(s);
        return tg_fail(err, TG_ERR_NOMEM, "tokenizer: out of memory building a %d-token vocabulary", V);
    }
    s->bos = v->bos_id >= 0 && v->bos_id < V ? v->bos_id : -1;
    s->eos = v->eos_id >= 0 && v->eos_id < V ? v->eos_id : -1;
    s->unk = v->unk_id >= 0 && v->unk_id < V ? v->unk_id : -1;
    s->add_bos = v->add_bos && s->bos >= 0;
    s->add_eos = v->add_eos && s->eos >= 0;
    size_t to = 0, ko = 0, so = 0;
    for (int i = 0; i < V; i++) {
        const char *t = v->tokens[i];
        int ty = v->token_type ? v->token_type[i] : TG_TOKEN_NORMAL;
        int b = byte_piece(t);
        s->scores[i] = v->scores ? v->scores[i] : 0.0f;
        size_t n = strlen(t);
        memcpy(s->strs + so, t, n + 1);
        s->str_off[i] = so;
        so += n + 1;
        s->key_off[i] = ko;
        ko += unmark(t, s->keys + ko);
        s->keys[ko++] = 0;
        s->text_off[i] = to;
        if (ty == TG_TOKEN_CONTROL) {
            /* no text of its own */
        } else if (b >= 0) {
            s->text[to++] = (char)b;
        } else {
            to += unmark(t, s->text + to);
        }
        s->text[to++] = 0;
        if ((ty == TG_TOKEN_CONTROL || ty == TG_TOKEN_USER_DEFINED) && n > 0) {
            s->special[i] = 1;
            s->specials[s->n_specials++] = i;
        }
    }
    s->text_off[V] = to;
    s->key_off[V] = ko;
    s->str_off[V] = so;
    for (int i = 0; i < V; i++) {
        int ty = v->token_type ? v->token_type[i] : TG_TOKEN_NORMAL;
        map_add(s->str_map, s->map_cap, s->strs, s->str_off, i);
        size_t kl = s->key_off[i + 1] - s->key_off[i] - 1;
        if (ty == TG_TOKEN_CONTROL || ty == TG_TOKEN_UNUSED || kl == 0) continue;
        map_add(s->key_map, s->map_cap, s->keys, s->key_off, i);
        if (kl > s->max_key) s->max_key = kl;
    }
    for (int b = 0; b < 256; b++) s->byte_id[b] = -1;
    tg_vocab_byte_ids(v, s->byte_id);
    qsort_r(s->specials, (size_t)s->n_specials, sizeof(int), cmp_special, s);
    *out = s;
    return TG_OK;
}

int tg_spm_bos(const tg_spm *s) { return s->bos; }
int tg_spm_eos(const tg_spm *s) { return s->eos; }
int tg_spm_is_special(const tg_spm *s, int id) {
    return id >= 0 && id < s->n_vocab && (s->special[id] || id == s->bos || id == s->eos);
}
int tg_spm_token_id(const tg_spm *s, const char *piece) {
    return piece ? map_find(s->str_map, s->map_cap, s->strs, s->str_off, piece, strlen(piece)) : -1;
}

/* ---- growable output ---- */

typedef struct ibuf {
    int *v;
    size_t n, cap;
} ibuf;

static int ibuf_push(ibuf *b, int x) {
    if (b->n == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 64;
        if (cap > SIZE_MAX / sizeof(int)) return -1;
        int *p = realloc(b->v, cap * sizeof(int));
        if (!p) return -1;
        b->v = p;
        b->cap = cap;
    }
    b->v[b->n++] = x;
    return 0;
}

/* ---- heap ---- */

static int cand_before(const spm_cand *a, const spm_cand *b) {
    return a->score > b->score || (a->score == b->score && a->start < b->start);
}

static void heap_push(tg_spm *s, spm_cand c) {
    spm_cand *h = s->heap;
    size_t i = s->heap_n++;
    while (i > 0) {
        size_t up = (i - 1) / 2;
        if (!cand_before(&c, &h[up])) break;
        h[i] = h[up];
        i = up;
    }
    h[i] = c;
}

static spm_cand heap_pop(tg_spm *s) {
    spm_cand *h = s->heap, top = h[0], last = h[--s->heap_n];
    size_t n = s->heap_n, i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && cand_before(&h[c + 1], &h[c])) c++;
        if (!cand_before(&h[c], &last)) break;
        h[i] = h[c];
        i = c;
    }
    if (n) h[i] = last;
    return top;
}

/* Pushes the merge of symbol l and the one after it, if it makes a piece. */
static void push_pair(tg_spm *s, int l) {
    if (l < 0) return;
    int r = s->sym[l].next;
    if (r < 0 || !s->sym[l].mergeable || !s->sym[r].mergeable) return;
    uint32_t a = s->sym[l].start, b = s->sym[r].end;
    if (b - a > s->max_key) return;
    int id = map_find(s->key_map, s->map_cap, s->keys, s->key_off, s->work + a, b - a);
    if (id < 0 || !(s->scores[id] > SCORE_FLOOR)) return;
    heap_push(s, (spm_cand){s->scores[id], a, b - a, l, r, id});
}

static int reserve(void **p, size_t *cap, size_t n, size_t elem) {
    if (n <= *cap) return 0;
    size_t c = *cap ? *cap : 64;
    while (c < n) {
        if (c > SIZE_MAX / 4 / elem) return -1;
        c *= 2;
    }
    void *q = realloc(*p, c * elem);
    if (!q) return -1;
    *p = q;
    *cap = c;
    return 0;
}

/* Appends the ids of text[len] (after a dummy-prefix space if prefix) to out. */
static tg_status encode_fragment(tg_spm *s, const char *text, size_t len, int prefix, ibuf *out,
                                 tg_err *err) {
    if (len == 0) return TG_OK;
    size_t W = len + 1;
    if (W > UINT32_MAX / 2)
        return tg_fail(err, TG_ERR_RANGE, "tokenizer: a %zu-byte text is too long to encode at once", len);
    /* each byte is at most one symbol; each merge pushes at most 2 candidates */
    if (reserve((void **)&s->work, &s->work_cap, W, 1) ||
        reserve((void **)&s->sym, &s->sym_cap, W, sizeof(spm_sym)) ||
        reserve((void **)&s->heap, &s->heap_cap, 3 * W, sizeof(spm_cand)))
        return tg_fail(err, TG_ERR_NOMEM, "tokenizer: out of memory for a %zu-byte text", len);
    char *w = s->work;
    w[0] = ' ';
    memcpy(w + 1, text, len);
    spm_sym *sym = s->sym;
    int n = 0;
    /* one symbol: the piece of span [a, b), else one per byte */
    for (size_t a = prefix ? 0 : 1; a < W;) {
        size_t b = a + 1;
        if (a > 0) /* the prefix is a character of its own */
            while (b < W && ((uint8_t)w[b] & 0xC0) == 0x80 && b - a < 4) b++;
        int id = map_find(s->key_map, s->map_cap, s->keys, s->key_off, w + a, b - a);
        if (id >= 0) {
            sym[n] = (spm_sym){(uint32_t)a, (uint32_t)b, id, n - 1, -1, 1};
            n++;
        } else {
            for (size_t k = a; k < b; k++) {
                int bid = s->byte_id[(uint8_t)w[k]];
                if (bid < 0) bid = s->unk;
                if (bid < 0)
                    return tg_fail(err, TG_ERR_ARG,
                                   "tokenizer: byte 0x%02x at offset %zu has no piece, no <0x%02X> token and "
                                   "there is no <unk>",
                                   (uint8_t)w[k], k ? k - 1 : 0, (uint8_t)w[k]);
                sym[n] = (spm_sym){(uint32_t)k, (uint32_t)k + 1, bid, n - 1, -1, 0};
                n++;
            }
        }
        a = b;
    }
    for (int i = 0; i + 1 < n; i++) sym[i].next = i + 1;
    s->heap_n = 0;
    for (int i = 0; i + 1 < n; i++) push_pair(s, i);
    while (s->heap_n) {
        spm_cand c = heap_pop(s);
        spm_sym *L = &sym[c.left], *R = &sym[c.right];
        if (L->id < 0 || R->id < 0 || L->next != c.right || R->end - L->start != c.len) continue;
        L->id = c.id;
        L->end = R->end;
        L->next = R->next;
        if (R->next >= 0) sym[R->next].prev = c.left;
        R->id = -1;
        push_pair(s, L->prev);
        push_pair(s, c.left);
    }
    for (int i = 0; i >= 0 && i < n; i = sym[i].next)
        if (ibuf_push(out, sym[i].id)) return tg_fail(err, TG_ERR_NOMEM, "tokenizer: out of memory");
    return TG_OK;
}

/* The next special token's string at or after pos: its start (len if
 * none). hits[k] remembers where special k next occurs (len + 1: not
 * looked for yet), so each special's text is scanned once per encode. */
static int next_special(const tg_spm *s, const char *text, size_t len, size_t pos, size_t *hits,
                        size_t *at) {
    size_t best = len;
    int best_id = -1;
    for (int k = 0; k < s->n_specials; k++) {
        int id = s->specials[k];
        if (hits[k] == len + 1 || hits[k] < pos) {
            const char *sp = s->strs + s->str_off[id];
            size_t sl = s->str_off[id + 1] - s->str_off[id] - 1;
            const char *hit = sl <= len - pos ? memmem(text + pos, len - pos, sp, sl) : NULL;
            hits[k] = hit ? (size_t)(hit - text) : len;
        }
        if (hits[k] < best) { /* longest first: a tie keeps the longer */
            best = hits[k];
            best_id = id;
        }
    }
    *at = best;
    return best_id;
}

tg_status tg_spm_encode(tg_spm *s, const char *text, size_t len, int flags, int **ids,
                        size_t *n_ids, tg_err *err) {
    *ids = NULL;
    *n_ids = 0;
    if (!text && len) return tg_fail(err, TG_ERR_ARG, "tokenizer: NULL text");
    ibuf out = {0};
    tg_status st = TG_OK;
    if (ibuf_push(&out, 0)) return tg_fail(err, TG_ERR_NOMEM, "tokenizer: out of memory");
    out.n = 0;
    if ((flags & TG_ENCODE_BOS) && s->bos >= 0 && ibuf_push(&out, s->bos)) goto nomem;
    int prefix = !(flags & TG_ENCODE_NO_PREFIX);
    if (!(flags & TG_ENCODE_SPECIAL) || !s->n_specials) {
        st = encode_fragment(s, text, len, prefix, &out, err);
    } else {
        /* llama.cpp's rule: a dummy prefix at the start and after each special */
        size_t *hits = malloc((size_t)s->n_specials * sizeof *hits);
        if (!hits) goto nomem;
        for (int k = 0; k < s->n_specials; k++) hits[k] = len + 1;
        size_t pos = 0;
        while (pos < len && !st) {
            size_t at;
            int sid = next_special(s, text, len, pos, hits, &at);
            st = encode_fragment(s, text + pos, at - pos, prefix, &out, err);
            if (!st && sid >= 0) {
                if (ibuf_push(&out, sid)) {
                    free(hits);
                    goto nomem;
                }
                at += s->str_off[sid + 1] - s->str_off[sid] - 1;
            }
            pos = at;
        }
        free(hits);
    }
    if (!st && (flags & TG_ENCODE_EOS) && s->eos >= 0 && ibuf_push(&out, s->eos)) goto nomem;
    if (st) {
        free(out.v);
        return st;
    }
    *ids = out.v;
    *n_ids = out.n;
    return TG_OK;
nomem:
    free(out.v);
    return tg_fail(err, TG_ERR_NOMEM, "tokenizer: out of memory");
}

const char *tg_spm_piece(const tg_spm *s, int prev, int id, size_t *len) {
    if (id < 0 || id >= s->n_vocab) return NULL;
    const char *p = s->text + s->text_off[id];
    size_t n = s->text_off[id + 1] - s->text_off[id] - 1;
    if (prev >= 0 && prev == s->bos && n > 0 && p[0] == ' ') p++, n--;
    if (len) *len = n;
    return p;
}

tg_status tg_spm_decode(const tg_spm *s, const int *ids, size_t n, char **out, size_t *len,
                        tg_err *err) {
    *out = NULL;
    *len = 0;
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= s->n_vocab)
            return tg_fail(err, TG_ERR_ARG, "tokenizer: token id %d at position %zu is outside [0, %d)", ids[i], i,
                           s->n_vocab);
        total += s->text_off[ids[i] + 1] - s->text_off[ids[i]] - 1;
    }
    char *buf = malloc(total + 1);
    if (!buf) return tg_fail(err, TG_ERR_NOMEM, "tokenizer: out of memory decoding %zu tokens", n);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        size_t l;
        const char *p = tg_spm_piece(s, i ? ids[i - 1] : -1, ids[i], &l);
        if (i == 0 && l > 0 && p[0] == ' ') p++, l--; /* the dummy prefix */
        memcpy(buf + k, p, l);
        k += l;
    }
    buf[k] = 0;
    *out = buf;
    *len = k;
    return TG_OK;
}
