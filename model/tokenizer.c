/* tokenizer.c — GPT-2 byte-level BPE (see tokenizer.h). */
#include "model/tokenizer.h"
#include "model/tokenizer_spm.h"

#include <stdlib.h>
#include <string.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

/* ---- byte <-> unicode ---- */

/* Bytes GPT-2 keeps as their own code point: printable Latin-1. */
static int byte_is_printable(int b) {
    return (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
}

/* The others get 256, 257, ... in byte order (68 of them). */
uint32_t tg_gpt2_byte_to_cp(uint8_t b) {
    if (byte_is_printable(b)) return b;
    uint32_t n = 0;
    for (int c = 0; c < b; c++) n += !byte_is_printable(c);
    return 256 + n;
}

int tg_gpt2_cp_to_byte(uint32_t cp) {
    if (cp < 256) return byte_is_printable((int)cp) ? (int)cp : -1;
    uint32_t n = cp - 256;
    for (int c = 0; c < 256; c++)
        if (!byte_is_printable(c) && n-- == 0) return c;
    return -1;
}

int tg_gpt2_byte_to_utf8(uint8_t b, char out[3]) {
    uint32_t cp = tg_gpt2_byte_to_cp(b);
    if (cp < 0x80) {
        out[0] = (char)cp;
        out[1] = 0;
        return 1;
    }
    out[0] = (char)(0xC0 | (cp >> 6)); /* cp < 0x800 always */
    out[1] = (char)(0x80 | (cp & 0x3F));
    out[2] = 0;
    return 2;
}

/* One code point from s[0..n) if it is well-formed UTF-8: its length, else 0. */
static int utf8_decode(const uint8_t *s, size_t n, uint32_t *cp) {
    if (n == 0) return 0;
    uint8_t c = s[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    int len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 0;
    if (len == 0 || (size_t)len > n || c > 0xF4 || c < 0xC2) return 0;
    uint32_t v = c & (0x3F >> (len - 1));
    for (int i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        v = (v << 6) | (s[i] & 0x3F);
    }
    static const uint32_t min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (v < min_cp[len] || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return 0;
    *cp = v;
    return len;
}

size_t tg_utf8_complete(const char *buf, size_t n) {
    const uint8_t *s = (const uint8_t *)buf;
    /* Find the lead byte of the last (possibly partial) sequence. */
    size_t p = n;
    int back = 0;
    while (p > 0 && back < 3 && (s[p - 1] & 0xC0) == 0x80) {
        p--;
        back++;
    }
    if (p == 0) return n;
    uint8_t c = s[p - 1];
    int len = c >= 0xF5 ? 0 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
    size_t have = n - (p - 1);
    if (len == 0 || have >= (size_t)len) return n; /* invalid lead or complete */
    /* Hold back only if the tail can still become a valid character. */
    if (have >= 2) {
        uint8_t c1 = s[p];
        if ((c == 0xE0 && c1 < 0xA0) || (c == 0xED && c1 > 0x9F) || (c == 0xF0 && c1 < 0x90) ||
            (c == 0xF4 && c1 > 0x8F))
            return n;
    }
    return p - 1;
}

/* ---- small containers ---- */

typedef struct ivec {
    int *v;
    size_t n, cap;
} ivec;

static int ivec_reserve(ivec *a, size_t extra) {
    if (a->n + extra <= a->cap) return 0;
    size_t cap = a->cap ? a->cap : 64;
    while (cap < a->n + extra) {
        if (cap > SIZE_MAX / 2 / sizeof(int)) return -1;
        cap *= 2;
    }
    int *v = realloc(a->v, cap * sizeof(int));
    if (!v) return -1;
    a->v = v;
    a->cap = cap;
    return 0;
}

static uint64_t hash_bytes(const void *p, size_t n) {
    const uint8_t *s = p;
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 0x100000001b3ull;
    return h ^ (h >> 29);
}

static uint64_t hash_u64(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    return x ^ (x >> 33);
}

static size_t pow2_at_least(size_t n) {
    size_t c = 16;
    while (c < n) c *= 2;
    return c;
}

/* ---- pre-tokenizer ---- */

struct tg_pretok {
    pcre2_code *code;
    pcre2_match_data *md;
    pcre2_match_context *mctx;
    pcre2_jit_stack *jit_stack;
};

void tg_pretok_free(tg_pretok *p) {
    if (!p) return;
    pcre2_match_data_free(p->md);
    pcre2_match_context_free(p->mctx);
    pcre2_jit_stack_free(p->jit_stack);
    pcre2_code_free(p->code);
    free(p);
}

tg_status tg_pretok_create(tg_pretok **out, tg_err *err) {
    *out = NULL;
    tg_pretok *p = calloc(1, sizeof *p);
    if (!p) return tg_fail(err, TG_ERR_NOMEM, "tokenizer: out of memory");
    int ec;
    PCRE2_SIZE eo;
    /* MATCH_INVALID_UTF: invalid UTF-8 never matches and is skipped over,
     * so the gaps between matches are exactly the invalid bytes. */
    p->code = pcre2_compile((PCRE2_SPTR)TG_GPT2_PRETOK_PATTERN, PCRE2_ZERO_TERMINATED,
                            PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &ec, &eo, NULL);
    if (!p->code) {
        PCRE2_UCHAR msg[128];
        pcre2_get_error_message(ec, msg, sizeof msg);
        tg_pretok_free(p);
        return tg_fail(err, TG_ERR_UNSUPPORTED, "tokenizer: pcre2 cannot compile the GPT-2 pattern at %zu: %s",
                       (size_t)eo, (char *)msg);
    }
    /* Without JIT (unsupported CPU) the interpreter gives the same matches. */
    pcre2_jit_compile(p->code, PCRE2_JIT_COMPLETE);
    p->md = pcre2_match_data_create_from_pattern(p->code, NULL);
    p->mctx = pcre2_match_context_create(NULL);
    p->jit_stack = pcre2_jit_stack_create(32 * 1024, 4 * 1024 * 1024, NULL);
    if (!p->md || !p->mctx || !p->jit_stack) {
        tg_pretok_free(p);
        return tg_fail(err, TG_ERR_NOMEM, "tokenizer: out of memory creating the pcre2 matcher");
    }
    pcre2_jit_stack_assign(p->mctx, NULL, p->jit_stack);
    *out = p;
    return TG_OK;
}

tg_status tg_pretok_split(tg_pretok *p, const char *text, size_t len, tg_pretok_fn fn,
                          void *user, tg_err *err) {
    size_t pos = 0;
    tg_status s;
    while (pos < len) {
        int rc = pcre2_match(p->code, (PCRE2_SPTR)text, len, pos, 0, p->md, p->mctx);
        if (rc == PCRE2_ERROR_NOMATCH) /* only invalid bytes remain */
            return fn(user, text + pos, len - pos, err);
        if (rc < 0) {
            PCRE2_UCHAR msg[128];
            pcre2_get_error_message(rc, msg, sizeof msg);
            return tg_fail(err, TG_ERR_RANGE, "tokenizer: pre-tokenizer failed at byte %zu: %s",
                           pos, (char *)msg);
        }
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(p->md);
        size_t a = ov[0], b = ov[1];
        if (a < pos || b < a || b > len) /* cannot happen: guard against a bad match */
            return tg_fail(err, TG_ERR_RANGE, "tokenizer: pre-tokenizer bad match at byte %zu", pos);
        if (a > pos && (s = fn(user, text + pos, a - pos, err)) != TG_OK) return s;
        if (b == a) { /* no alternative matches empty; never loop forever */
            if (a >= len) break;
            b = a + 1;
        }
        if ((s = fn(user, text + a, b - a, err)) != TG_OK) return s;
        pos = b;
    }
    return TG_OK;
}

/* ---- tokenizer ---- */

/* A merge rule keyed by its two token ids. */
typedef struct pair_slot {
    uint64_t key; /* (left << 32 | right) + 1; 0 = empty */
    int32_t rank, merged;
} pair_slot;

/* A cached word: its bytes and ids live in the cache arenas. */
typedef struct cache_slot {
    uint64_t hash;
    uint32_t word_off, word_len; /* word_len 0 = empty */
    uint32_t ids_off, n_ids;
} cache_slot;

#define CACHE_SLOTS (1u << 16)
#define CACHE_MAX_ENTRIES (CACHE_SLOTS / 2)
#define CACHE_MAX_WORD 256
#define CACHE_MAX_BYTES (8u << 20)

/* A candidate merge in a word: symbols at pos and next[pos]. */
typedef struct bpe_cand {
    int32_t rank, pos, left, right, merged;
} bpe_cand;

struct tg_tokenizer {
    int n_vocab;
    char *strs;              /* vocabulary strings, NUL-separated */
    size_t *str_off;         /* [V] */
    char *bytes;             /* decoded bytes of every token, each NUL-terminated */
    size_t *bytes_off;       /* [V+1] */
    uint8_t *special;        /* [V] */
    int *specials;           /* ids of special tokens, longest text first */
    int n_specials;
    int eos, bos;
    int byte_id[256];

    int *str_map;            /* [str_cap] id + 1, 0 = empty */
    size_t str_cap;
    pair_slot *pairs;        /* [pair_cap] */
    size_t pair_cap;

    tg_pretok *pre;

    /* word cache */
    cache_slot *cache;       /* [CACHE_SLOTS] */
    size_t cache_n;
    uint8_t *cache_words;
    size_t cache_words_n, cache_words_cap;
    ivec cache_ids;

    /* scratch for one word */
    int *sym_id, *sym_next, *sym_prev;
    bpe_cand *heap, *sweep;
    size_t heap_n, scratch_cap, heap_cap;

    /* the encode in progress */
    ivec *out;

    tg_spm *spm;             /* a SentencePiece vocabulary: everything is there */
    int def_flags;           /* TG_ENCODE_BOS / EOS added by tg_tokenizer_encode */
};

static int str_lookup(const tg_tokenizer *t, const char *s, size_t n) {
    size_t mask = t->str_cap - 1;
    for (size_t i = hash_bytes(s, n) & mask;; i = (i + 1) & mask) {
        int v = t->str_map[i];
        if (!v) return -1;
        const char *c = t->strs + t->str_off[v - 1];
        if (strlen(c) == n && !memcmp(c, s, n)) return v - 1;
    }
}

int tg_tokenizer_token_id(const tg_tokenizer *t, const char *s) {
    if (t->spm) return tg_spm_token_id(t->spm, s);
    return s ? str_lookup(t, s, strlen(s)) : -1;
}

static const pair_slot *pair_find(const tg_tokenizer *t, int a, int b) {
    uint64_t key = (((uint64_t)(uint32_t)a << 32) | (uint32_t)b) + 1;
    size_t mask = t->pair_cap - 1;
    for (size_t i = hash_u64(key) & mask;; i = (i + 1) & mask) {
        if (t->pairs[i].key == key) return &t->pairs[i];
        if (!t->pairs[i].key) return NULL;
    }
}

void tg_tokenizer_free(tg_tokenizer *t) {
    if (!t) return;
    free(t->strs);
    free(t->str_off);
    free(t->bytes);
    free(t->bytes_off);
    free(t->special);
    free(t->specials);
    free(t->str_map);
    free(t->pairs);
    tg_pretok_free(t->pre);
    tg_spm_free(t->spm);
    free(t->cache);
    free(t->cache_words);
    free(t->cache_ids.v);
    free(t->sym_id);
    free(t->sym_next);
    free(t->sym_prev);
    free(t->heap);
    free(t->sweep);
    free(t);
}

int tg_tokenizer_n_vocab(const tg_tokenizer *t) { return t->n_vocab; }
int tg_tokenizer_eos(const tg_tokenizer *t) { return t->eos; }
int tg_tokenizer_bos(const tg_tokenizer *t) { return t->bos; }
int tg_tokenizer_is_special(const tg_tokenizer *t, int id) {
    if (t->spm) return tg_spm_is_special(t->spm, id);
    return id >= 0 && id < t->n_vocab && t->special[id];
}

int tg_tokenizer_kind(const tg_tokenizer *t) { return t->spm ? TG_VOCAB_SPM : TG_VOCAB_GPT2; }

const char *tg_tokenizer_piece_after(const tg_tokenizer *t, int prev, int id, size_t *len) {
    if (t->spm) return tg_spm_piece(t->spm, prev, id, len);
    return tg_tokenizer_piece(t, id, len);
}

const char *tg_tokenizer_piece(const tg_tokenizer *t, int id, size_t *len) {
    if (t->spm) return tg_spm_piece(t->spm, -1, id, len);
    if (id < 0 || id >= t->n_vocab) return NULL;
    if (len) *len = t->bytes_off[id + 1] - t->bytes_off[id] - 1;
    return t->bytes + t->bytes_off[id];
}

/* A token's bytes: each code point mapped back through the byte table; a
 * string with any other code point (an added token like "<pad>" written
 * outside the byte alphabet) decodes to its own UTF-8 text. Returns the
 * length written to out (capacity >= strlen(s)). */
static size_t token_bytes(const char *s, const int16_t cp_byte[324], uint8_t *out) {
    size_t n = strlen(s), k = 0;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        int l = utf8_decode((const uint8_t *)s + i, n - i, &cp);
        int b = l && cp < 324 ? cp_byte[cp] : -1;
        if (b < 0) {
            memcpy(out, s, n);
            return n;
        }
        out[k++] = (uint8_t)b;
        i += (size_t)l;
    }
    return k;
}

static int cmp_special_len(const void *a, const void *b, void *ctx) {
    const tg_tokenizer *t = ctx;
    int x = *(const int *)a, y = *(const int *)b;
    size_t lx = t->bytes_off[x + 1] - t->bytes_off[x], ly = t->bytes_off[y + 1] - t->bytes_off[y];
    if (lx != ly) return lx > ly ? -1 : 1;
    return x < y ? -1 : x > y;
}

tg_status tg_tokenizer_create(tg_tokenizer **out, const tg_vocab *v, tg_err *err) {
    *out = NULL;
    if (!v || v->n_tokens <= 0 || !v->tokens)
        return tg_fail(err, TG_ERR_ARG, "tokenizer: empty vocabulary");
    if (v->n_merges < 0 || (v->n_merges > 0 && !v->merges))
        return tg_fail(err, TG_ERR_ARG, "tokenizer: bad merge list");
    int V = v->n_tokens;
    tg_tokenizer *t = calloc(1, sizeof *t);
    if (!t) return tg_fail(err, TG_ERR_NOMEM, "tokenizer: out of memory");
    t->n_vocab = V;
    tg_status s = TG_OK;
    if (v->kind == TG_VOCAB_SPM) {
        if ((s = tg_spm_create(&t->spm, v, err)) != TG_OK) goto fail;
        t->bos = tg_spm_bos(t->spm);
        t->eos = tg_spm_eos(t->spm);
        t->def_flags = (v->add_bos && t->bos >= 0 ? TG_ENCODE_BOS : 0) |
                       (v->add_eos && t->eos >= 0 ? TG_ENCODE_EOS : 0);
        *out = t;
        return TG_OK;
    }

    size_t total = 0;
    for (int i = 0; i < V; i++) {
        if (!v->tokens[i]) {
            s = tg_fail(err, TG_ERR_FORMAT, "tokenizer: token %d has no string", i);
            goto fail;
        }
        total += strlen(v->tokens[i]) + 1;
    }
    t->strs = malloc(total);
    t->bytes = malloc(total);
    t->str_off = malloc((size_t)V * sizeof(size_t));
    t->bytes_off = malloc(((size_t)V + 1) * sizeof(size_t));
    t->special = calloc((size_t)V, 1);
    t->specials = malloc((size_t)V * sizeof(int));
    t->str_cap = pow2_at_least((size_t)V * 2);
    t->str_map = calloc(t->str_cap, sizeof(int));
    t->cache = calloc(CACHE_SLOTS, sizeof(cache_slot));
    if (!t->strs || !t->bytes || !t->str_off || !t->bytes_off || !t->special || !t->specials ||
        !t->str_map || !t->cache)
        goto nomem;

    int16_t cp_byte[324]; /* code point -> byte, -1 for none */
    for (uint32_t cp = 0; cp < 324; cp++) cp_byte[cp] = (int16_t)tg_gpt2_cp_to_byte(cp);
    size_t so = 0, bo = 0;
    for (int i = 0; i < V; i++) {
        size_t n = strlen(v->tokens[i]);
        memcpy(t->strs + so, v->tokens[i], n + 1);
        t->str_off[i] = so;
        so += n + 1;
        t->bytes_off[i] = bo;
        bo += token_bytes(v->tokens[i], cp_byte, (uint8_t *)t->bytes + bo);
        t->bytes[bo++] = 0;
        /* first id wins for a repeated string */
        if (str_lookup(t, v->tokens[i], n) < 0) {
            size_t mask = t->str_cap - 1, j = hash_bytes(v->tokens[i], n) & mask;
            while (t->str_map[j]) j = (j + 1) & mask;
            t->str_map[j] = i + 1;
        }
    }
    t->bytes_off[V] = bo;

    for (int b = 0; b < 256; b++) {
        char u[3];
        int n = tg_gpt2_byte_to_utf8((uint8_t)b, u);
        t->byte_id[b] = str_lookup(t, u, (size_t)n);
        if (t->byte_id[b] < 0) {
            s = tg_fail(err, TG_ERR_FORMAT,
                        "tokenizer: the vocabulary has no token for byte 0x%02x (not a byte-level BPE vocabulary)", b);
            goto fail;
        }
    }

    t->eos = v->eos_id >= 0 && v->eos_id < V ? v->eos_id : -1;
    t->bos = v->bos_id >= 0 && v->bos_id < V ? v->bos_id : -1;
    for (int i = 0; i < V; i++) {
        int ty = v->token_type ? v->token_type[i] : 1;
        int sp = ty == 3 || ty == 4 || i == t->eos || i == t->bos ||
                 !strcmp(v->tokens[i], "<|endoftext|>");
        size_t blen = t->bytes_off[i + 1] - t->bytes_off[i] - 1;
        if (sp && blen > 0) { /* an empty special could never be matched */
            t->special[i] = 1;
            t->specials[t->n_specials++] = i;
        }
    }
    qsort_r(t->specials, (size_t)t->n_specials, sizeof(int), cmp_special_len, t);

    t->pair_cap = pow2_at_least((size_t)v->n_merges * 2 + 2);
    t->pairs = calloc(t->pair_cap, sizeof(pair_slot));
    if (!t->pairs) goto nomem;
    for (int r = 0; r < v->n_merges; r++) {
        const char *m = v->merges[r];
        const char *sp = m ? strchr(m, ' ') : NULL;
        if (!sp || sp == m || !sp[1] || strchr(sp + 1, ' ')) {
            s = tg_fail(err, TG_ERR_FORMAT, "tokenizer: merge %d is not \"left right\"", r);
            goto fail;
        }
        size_t la = (size_t)(sp - m), lb = strlen(sp + 1);
        /* A merge whose parts or result are not tokens cannot come from a
         * consistent tokenizer (GPT-2's 50,000 merges all name tokens): it
         * is corruption, and skipping it would silently change the BPE. */
        int a = str_lookup(t, m, la), b = str_lookup(t, sp + 1, lb);
        if (a < 0 || b < 0) {
            int blen = (int)(a < 0 ? la : lb);
            s = tg_fail(err, TG_ERR_FORMAT,
                        "tokenizer: merge %d (\"%.60s\") names '%.*s', which is not in the vocabulary",
                        r, m, blen > 40 ? 40 : blen, a < 0 ? m : sp + 1);
            goto fail;
        }
        char *ab = malloc(la + lb + 1);
        if (!ab) goto nomem;
        memcpy(ab, m, la);
        memcpy(ab + la, sp + 1, lb + 1);
        int c = str_lookup(t, ab, la + lb);
        if (c < 0) {
            s = tg_fail(err, TG_ERR_FORMAT,
                        "tokenizer: merge %d (\"%.60s\") makes '%.40s', which is not in the vocabulary",
                        r, m, ab);
            free(ab);
            goto fail;
        }
        free(ab);
        uint64_t key = (((uint64_t)(uint32_t)a << 32) | (uint32_t)b) + 1;
        size_t mask = t->pair_cap - 1, j = hash_u64(key) & mask;
        while (t->pairs[j].key && t->pairs[j].key != key) j = (j + 1) & mask;
        if (t->pairs[j].key) continue; /* keep the first rank */
        t->pairs[j] = (pair_slot){key, r, c};
    }

    if ((s = tg_pretok_create(&t->pre, err)) != TG_OK) goto fail;
    *out = t;
    return TG_OK;
nomem:
    s = tg_fail(err, TG_ERR_NOMEM, "tokenizer: out of memory building a %d-token vocabulary", V);
fail:
    tg_tokenizer_free(t);
    return s;
}

/* ---- BPE on one word ---- */

static int cand_less(const bpe_cand *a, const bpe_cand *b) {
    return a->rank < b->rank || (a->rank == b->rank && a->pos < b->pos);
}

static void heap_push(tg_tokenizer *t, bpe_cand c) {
    bpe_cand *h = t->heap;
    size_t i = t->heap_n++;
    while (i > 0) {
        size_t up = (i - 1) / 2;
        if (!cand_less(&c, &h[up])) break;
        h[i] = h[up];
        i = up;
    }
    h[i] = c;
}

static bpe_cand heap_pop(tg_tokenizer *t) {
    bpe_cand *h = t->heap, top = h[0], last = h[--t->heap_n];
    size_t n = t->heap_n, i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && cand_less(&h[c + 1], &h[c])) c++;
        if (!cand_less(&h[c], &last)) break;
        h[i] = h[c];
        i = c;
    }
    if (n) h[i] = last;
    return top;
}

/* Pushes the pair (pos, next[pos]) if it is a merge. The heap never holds
 * more than 3 candidates per symbol (initial + 2 per merge), sized below. */
static void push_pair(tg_tokenizer *t, int pos) {
    int q = t->sym_next[pos];
    if (q < 0) return;
    const pair_slot *ps = pair_find(t, t->sym_id[pos], t->sym_id[q]);
    if (ps) heap_push(t, (bpe_cand){ps->rank, pos, t->sym_id[pos], t->sym_id[q], ps->merged});
}

static int scratch_reserve(tg_tokenizer *t, size_t n) {
    if (n <= t->scratch_cap) return 0;
    size_t cap = pow2_at_least(n);
    if (cap > (size_t)INT32_MAX / 4) return -1;
    int *a = realloc(t->sym_id, cap * sizeof(int));
    if (a) t->sym_id = a;
    int *b = realloc(t->sym_next, cap * sizeof(int));
    if (b) t->sym_next = b;
    int *c = realloc(t->sym_prev, cap * sizeof(int));
    if (c) t->sym_prev = c;
    /* each merge removes a symbol and adds at most 2 candidates */
    bpe_cand *h = realloc(t->heap, 3 * cap * sizeof(bpe_cand));
    if (h) t->heap = h;
    bpe_cand *w = realloc(t->sweep, 3 * cap * sizeof(bpe_cand));
    if (w) t->sweep = w;
    if (!a || !b || !c || !h || !w) return -1;
    t->scratch_cap = cap;
    return 0;
}

static const cache_slot *cache_find(const tg_tokenizer *t, const uint8_t *w, size_t n, uint64_t h) {
    for (size_t i = h & (CACHE_SLOTS - 1);; i = (i + 1) & (CACHE_SLOTS - 1)) {
        const cache_slot *c = &t->cache[i];
        if (!c->word_len) return NULL;
        if (c->hash == h && c->word_len == n && !memcmp(t->cache_words + c->word_off, w, n)) return c;
    }
}

/* Remembers w -> ids[n_ids]; when full the cache starts over. Failing to
 * cache is not an error. */
static void cache_put(tg_tokenizer *t, const uint8_t *w, size_t n, uint64_t h, const int *ids,
                      size_t n_ids) {
    if (t->cache_n >= CACHE_MAX_ENTRIES || t->cache_words_n + n > CACHE_MAX_BYTES) {
        memset(t->cache, 0, CACHE_SLOTS * sizeof(cache_slot));
        t->cache_n = t->cache_words_n = t->cache_ids.n = 0;
    }
    if (t->cache_words_n + n > t->cache_words_cap) {
        size_t cap = t->cache_words_cap ? t->cache_words_cap * 2 : 1 << 16;
        uint8_t *p = realloc(t->cache_words, cap);
        if (!p) return;
        t->cache_words = p;
        t->cache_words_cap = cap;
    }
    if (ivec_reserve(&t->cache_ids, n_ids)) return;
    size_t i = h & (CACHE_SLOTS - 1);
    while (t->cache[i].word_len) i = (i + 1) & (CACHE_SLOTS - 1);
    t->cache[i] = (cache_slot){h, (uint32_t)t->cache_words_n, (uint32_t)n,
                               (uint32_t)t->cache_ids.n, (uint32_t)n_ids};
    memcpy(t->cache_words + t->cache_words_n, w, n);
    t->cache_words_n += n;
    memcpy(t->cache_ids.v + t->cache_ids.n, ids, n_ids * sizeof(int));
    t->cache_ids.n += n_ids;
    t->cache_n++;
}

/* Appends the ids of one pre-token to t->out. */
static tg_status bpe_word(void *user, const char *word, size_t n, tg_err *err) {
    tg_tokenizer *t = user;
    const uint8_t *w = (const uint8_t *)word;
    ivec *out = t->out;
    if (n == 0) return TG_OK;
    if (ivec_reserve(out, n)) return tg_fail(err, TG_ERR_NOMEM, "tokenizer: out of memory");
    if (n == 1) {
        out->v[out->n++] = t->byte_id[w[0]];
        return TG_OK;
    }
    uint64_t h = 0;
    if (n <= CACHE_MAX_WORD) {
        h = hash_bytes(w, n);
        const cache_slot *c = cache_find(t, w, n, h);
        if (c) {
            memcpy(out->v + out->n, t->cache_ids.v + c->ids_off, c->n_ids * sizeof(int));
            out->n += c->n_ids;
            return TG_OK;
        }
    }
    if (n > (size_t)INT32_MAX / 4 || scratch_reserve(t, n))
        return tg_fail(err, TG_ERR_NOMEM, "tokenizer: out of memory for a %zu-byte word", n);
    int *id = t->sym_id, *next = t->sym_next, *prev = t->sym_prev;
    for (size_t i = 0; i < n; i++) {
        id[i] = t->byte_id[w[i]];
        prev[i] = (int)i - 1;
        next[i] = i + 1 < n ? (int)i + 1 : -1;
    }
    t->heap_n = 0;
    for (size_t i = 0; i + 1 < n; i++) push_pair(t, (int)i);

    /* encoder.py's loop: take the lowest-ranked pair present and merge every
     * occurrence of it, left to right, before looking at new pairs. */
    while (t->heap_n) {
        int rank = t->heap[0].rank;
        size_t n_sweep = 0;
        while (t->heap_n && t->heap[0].rank == rank) t->sweep[n_sweep++] = heap_pop(t);
        size_t n_merged = 0;
        for (size_t k = 0; k < n_sweep; k++) { /* ascending pos */
            bpe_cand c = t->sweep[k];
            int q = next[c.pos];
            if (id[c.pos] != c.left || q < 0 || id[q] != c.right) continue; /* stale */
            id[c.pos] = c.merged;
            next[c.pos] = next[q];
            if (next[q] >= 0) prev[next[q]] = c.pos;
            id[q] = -1;
            t->sweep[n_merged++].pos = c.pos; /* n_merged <= k: reuse the slots */
        }
        for (size_t k = 0; k < n_merged; k++) {
            int p = t->sweep[k].pos;
            if (prev[p] >= 0) push_pair(t, prev[p]);
            push_pair(t, p);
        }
    }
    size_t start = out->n;
    for (int i = 0; i >= 0; i = next[i]) out->v[out->n++] = id[i];
    if (n <= CACHE_MAX_WORD) cache_put(t, w, n, h, out->v + start, out->n - start);
    return TG_OK;
}

/* The next special token at or after pos: its start (*at, len if none) and
 * id. hits[k] remembers where special k next occurs (len + 1: not looked
 * for yet), so each special's text is scanned once per encode. */
static int next_special(const tg_tokenizer *t, const char *text, size_t len, size_t pos,
                        size_t *hits, size_t *at) {
    size_t best = len;
    int best_id = -1;
    for (int k = 0; k < t->n_specials; k++) {
        int id = t->specials[k];
        if (hits[k] == len + 1 || (hits[k] < pos)) {
            size_t sl;
            const char *sp = tg_tokenizer_piece(t, id, &sl);
            const char *hit = sl <= len - pos ? memmem(text + pos, len - pos, sp, sl) : NULL;
            hits[k] = hit ? (size_t)(hit - text) : len;
        }
        /* specials are sorted longest first: a tie keeps the longer one */
        if (hits[k] < best) {
            best = hits[k];
            best_id = id;
        }
    }
    *at = best;
    return best_id;
}

int tg_tokenizer_default_flags(const tg_tokenizer *t) { return t->def_flags; }

tg_status tg_tokenizer_encode(tg_tokenizer *t, const char *text, size_t len, int parse_special,
                              int **ids, size_t *n_ids, tg_err *err) {
    return tg_tokenizer_encode_ex(t, text, len, (parse_special ? TG_ENCODE_SPECIAL : 0) | t->def_flags,
                                  ids, n_ids, err);
}

/* GPT-2: BOS/EOS wrap the ids when asked for. */
static tg_status gpt2_wrap(tg_tokenizer *t, int flags, int **ids, size_t *n_ids, tg_err *err) {
    int bos = (flags & TG_ENCODE_BOS) && t->bos >= 0, eos = (flags & TG_ENCODE_EOS) && t->eos >= 0;
    if (!bos && !eos) return TG_OK;
    int *v = realloc(*ids, (*n_ids + 2) * sizeof(int));
    if (!v) {
        free(*ids);
        *ids = NULL;
        *n_ids = 0;
        return tg_fail(err, TG_ERR_NOMEM, "tokenizer: out of memory");
    }
    if (bos) {
        memmove(v + 1, v, *n_ids * sizeof(int));
        v[0] = t->bos;
        (*n_ids)++;
    }
    if (eos) v[(*n_ids)++] = t->eos;
    *ids = v;
    return TG_OK;
}

static tg_status gpt2_encode(tg_tokenizer *t, const char *text, size_t len, int parse_special,
                             int **ids, size_t *n_ids, tg_err *err);

tg_status tg_tokenizer_encode_ex(tg_tokenizer *t, const char *text, size_t len, int flags,
                                 int **ids, size_t *n_ids, tg_err *err) {
    if (t->spm) return tg_spm_encode(t->spm, text, len, flags, ids, n_ids, err);
    tg_status s = gpt2_encode(t, text, len, flags & TG_ENCODE_SPECIAL, ids, n_ids, err);
    return s ? s : gpt2_wrap(t, flags, ids, n_ids, err);
}

static tg_status gpt2_encode(tg_tokenizer *t, const char *text, size_t len, int parse_special,
                             int **ids, size_t *n_ids, tg_err *err) {
    *ids = NULL;
    *n_ids = 0;
    if (!text && len) return tg_fail(err, TG_ERR_ARG, "tokenizer: NULL text");
    ivec out = {0};
    if (ivec_reserve(&out, len / 3 + 16))
        return tg_fail(err, TG_ERR_NOMEM, "tokenizer: out of memory for a %zu-byte text", len);
    size_t *hits = NULL;
    if (parse_special && t->n_specials) {
        hits = malloc((size_t)t->n_specials * sizeof(size_t));
        if (!hits) {
            free(out.v);
            return tg_fail(err, TG_ERR_NOMEM, "tokenizer: out of memory");
        }
        for (int k = 0; k < t->n_specials; k++) hits[k] = len + 1;
    }
    t->out = &out;
    tg_status s = TG_OK;
    size_t pos = 0;
    while (pos < len && s == TG_OK) {
        size_t at = len;
        int sid = hits ? next_special(t, text, len, pos, hits, &at) : -1;
        if (at > pos) s = tg_pretok_split(t->pre, text + pos, at - pos, bpe_word, t, err);
        if (s == TG_OK && sid >= 0) {
            if (ivec_reserve(&out, 1)) {
                s = tg_fail(err, TG_ERR_NOMEM, "tokenizer: out of memory");
                break;
            }
            size_t sl;
            tg_tokenizer_piece(t, sid, &sl);
            out.v[out.n++] = sid;
            at += sl;
        }
        pos = at;
    }
    t->out = NULL;
    free(hits);
    if (s != TG_OK) {
        free(out.v);
        return s;
    }
    *ids = out.v;
    *n_ids = out.n;
    return TG_OK;
}

tg_status tg_tokenizer_decode(const tg_tokenizer *t, const int *ids, size_t n, char **out,
                              size_t *len, tg_err *err) {
    if (t->spm) return tg_spm_decode(t->spm, ids, n, out, len, err);
    *out = NULL;
    *len = 0;
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= t->n_vocab)
            return tg_fail(err, TG_ERR_ARG, "tokenizer: token id %d at position %zu is outside [0, %d)",
                           ids[i], i, t->n_vocab);
        total += t->bytes_off[ids[i] + 1] - t->bytes_off[ids[i]] - 1;
    }
    char *buf = malloc(total + 1);
    if (!buf) return tg_fail(err, TG_ERR_NOMEM, "tokenizer: out of memory decoding %zu tokens", n);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        size_t l;
        const char *p = tg_tokenizer_piece(t, ids[i], &l);
        memcpy(buf + k, p, l);
        k += l;
    }
    buf[k] = 0;
    *out = buf;
    *len = k;
    return TG_OK;
}
