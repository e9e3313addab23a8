/* vocab.c — tokenizer vocabularies: GGUF (gpt2 and llama), llama2.c's
 * tokenizer.bin, Hugging Face tokenizer.json, and the GGUF writer side
 * (see vocab.h). */
#include "weights/vocab.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "weights/file.h"

#include "weights/gguf.h"
#include "weights/internal.h"

#define MAX_TOKENS (1 << 24)
#define MAX_JSON_BYTES (256u << 20)
#define LLAMA2C_MAX_TOKEN_LENGTH (1 << 16)
#define SPACE_MARK "\xe2\x96\x81" /* U+2581 ▁, SentencePiece's space */

void tg_vocab_init(tg_vocab *v) {
    memset(v, 0, sizeof *v);
    v->bos_id = v->eos_id = v->unk_id = v->pad_id = -1;
}

void tg_vocab_free(tg_vocab *v) {
    for (int i = 0; v->tokens && i < v->n_tokens; i++) free(v->tokens[i]);
    for (int i = 0; v->merges && i < v->n_merges; i++) free(v->merges[i]);
    free(v->tokens);
    free(v->merges);
    free(v->token_type);
    free(v->scores);
    free(v->pre);
    tg_vocab_init(v);
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

/* The byte a "<0xXX>" piece stands for, or -1. */
static int byte_piece(const char *s) {
    if (strncmp(s, "<0x", 3) || !s[3] || !s[4] || s[5] != '>' || s[6]) return -1;
    int hi = hexval(s[3]), lo = hexval(s[4]);
    return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

int tg_vocab_byte_ids(const tg_vocab *v, int ids[256]) {
    int found = 0;
    for (int b = 0; b < 256; b++) ids[b] = -1;
    for (int i = 0; v->tokens && i < v->n_tokens; i++) {
        int b = v->tokens[i] ? byte_piece(v->tokens[i]) : -1;
        if (b >= 0 && ids[b] < 0) {
            ids[b] = i;
            found++;
        }
    }
    return found;
}

/* Up to 40 bytes of an untrusted string for a one-line message: printable
 * ASCII as is, anything else as \xNN, "..." when cut. */
typedef struct quoted {
    char s[200];
} quoted;

static quoted q(const char *p, size_t n) {
    quoted o;
    size_t k = 0;
    for (size_t i = 0; i < n && i < 40; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c >= 0x20 && c < 0x7F && c != '\\') o.s[k++] = (char)c;
        else k += (size_t)snprintf(o.s + k, sizeof o.s - k, "\\x%02x", c);
    }
    if (n > 40) memcpy(o.s + k, "...", 3), k += 3;
    o.s[k] = 0;
    return o;
}
#define Q(str) (q((str), strlen(str)).s)

static char *dup_checked(const char *s, size_t len) {
    if (memchr(s, 0, len)) return NULL;
    char *d = malloc(len + 1);
    if (d) {
        memcpy(d, s, len);
        d[len] = 0;
    }
    return d;
}

/* ---- GGUF -> vocab ---------------------------------------------------------- */

/* An optional token id key: absent leaves *out; -1 (any signed type) or
 * 0xFFFFFFFF means "none"; anything else must be in [0, n). */
static tg_status gguf_id(const tg_gguf *g, const char *key, int n, int *out, const char *where,
                         tg_err *err) {
    const tg_gguf_kv *kv = tg_gguf_find_kv(g, key);
    if (!kv) return TG_OK;
    int is_int = kv->type <= TG_GGUF_INT32 || kv->type == TG_GGUF_UINT64 || kv->type == TG_GGUF_INT64;
    if (kv->type == TG_GGUF_FLOAT32 || kv->type == TG_GGUF_BOOL || !is_int)
        return tg_fail(err, TG_ERR_FORMAT, "%s: %s is a %s, not an integer", where, key,
                       tg_gguf_vtype_name(kv->type));
    int64_t id = tg_gguf_kv_int(kv, 0);
    if (id == -1 || (kv->type == TG_GGUF_UINT32 && id == (int64_t)UINT32_MAX)) {
        *out = -1;
        return TG_OK;
    }
    if (id < 0 || id >= n)
        return tg_fail(err, TG_ERR_FORMAT, "%s: %s = %" PRId64 " is not a token id (vocabulary of %d)",
                       where, key, id, n);
    *out = (int)id;
    return TG_OK;
}

static tg_status gguf_flag(const tg_gguf *g, const char *key, int *out, tg_err *err) {
    if (!tg_gguf_find_kv(g, key)) return TG_OK;
    return tg_gguf_get_bool(g, key, out, err);
}

static tg_status vocab_from_gguf(tg_vocab *v, const tg_gguf *g, const char *path, tg_err *err) {
    const char *s;
    size_t len;
    if (!tg_gguf_find_kv(g, "tokenizer.ggml.model")) return TG_OK;
    tg_status st = tg_gguf_get_str(g, "tokenizer.ggml.model", &s, &len, err);
    if (st) return st;
    int llama = len == 5 && !memcmp(s, "llama", 5);
    if (!llama && (len != 4 || memcmp(s, "gpt2", 4)))
        return tg_fail(err, TG_ERR_UNSUPPORTED,
                       "%s: tokenizer.ggml.model is '%s', only 'gpt2' (byte-level BPE) and 'llama' "
                       "(SentencePiece BPE) are supported",
                       path, q(s, len).s);
    v->kind = llama ? TG_VOCAB_SPM : TG_VOCAB_GPT2;
    const tg_gguf_kv *tok = tg_gguf_find_kv(g, "tokenizer.ggml.tokens");
    if (!tok || tok->type != TG_GGUF_ARRAY || tok->arr_type != TG_GGUF_STRING)
        return tg_fail(err, TG_ERR_FORMAT, "%s: tokenizer.ggml.tokens is missing or not an array of strings", path);
    if (tok->n < 1 || tok->n > MAX_TOKENS)
        return tg_fail(err, TG_ERR_FORMAT, "%s: tokenizer.ggml.tokens has %" PRIu64 " entries (1 to 2^24 allowed)", path, tok->n);
    int n = (int)tok->n;
    if (!(v->tokens = calloc((size_t)n, sizeof *v->tokens))) goto oom;
    v->n_tokens = n;
    for (int i = 0; i < n; i++) {
        tg_gguf_kv_str(g, tok, (uint64_t)i, &s, &len);
        if (!(v->tokens[i] = dup_checked(s, len))) {
            if (memchr(s, 0, len))
                return tg_fail(err, TG_ERR_FORMAT, "%s: tokenizer.ggml.tokens[%d] contains a NUL byte", path, i);
            goto oom;
        }
    }
    const tg_gguf_kv *tt = tg_gguf_find_kv(g, "tokenizer.ggml.token_type");
    if (tt) {
        if (tt->type != TG_GGUF_ARRAY || tt->arr_type != TG_GGUF_INT32 || tt->n != tok->n)
            return tg_fail(err, TG_ERR_FORMAT, "%s: tokenizer.ggml.token_type must be an int32 array of %d entries", path, n);
        if (!(v->token_type = malloc((size_t)n * sizeof *v->token_type))) goto oom;
        for (int i = 0; i < n; i++) v->token_type[i] = (int32_t)tg_gguf_kv_int(tt, (uint64_t)i);
    }
    const tg_gguf_kv *sc = tg_gguf_find_kv(g, "tokenizer.ggml.scores");
    if (sc) {
        if (sc->type != TG_GGUF_ARRAY || sc->arr_type != TG_GGUF_FLOAT32 || sc->n != tok->n)
            return tg_fail(err, TG_ERR_FORMAT, "%s: tokenizer.ggml.scores must be a float32 array of %d entries", path, n);
        if (!(v->scores = malloc((size_t)n * sizeof *v->scores))) goto oom;
        for (int i = 0; i < n; i++) {
            v->scores[i] = (float)tg_gguf_kv_num(sc, (uint64_t)i);
            if (!isfinite(v->scores[i]))
                return tg_fail(err, TG_ERR_FORMAT, "%s: tokenizer.ggml.scores[%d] is not finite", path, i);
        }
    }
    const tg_gguf_kv *mg = tg_gguf_find_kv(g, "tokenizer.ggml.merges");
    if (mg && !llama) {
        if (mg->type != TG_GGUF_ARRAY || mg->arr_type != TG_GGUF_STRING || mg->n > MAX_TOKENS)
            return tg_fail(err, TG_ERR_FORMAT, "%s: tokenizer.ggml.merges must be an array of strings", path);
        int nm = (int)mg->n;
        if (!(v->merges = calloc(nm ? (size_t)nm : 1, sizeof *v->merges))) goto oom;
        v->n_merges = nm;
        for (int i = 0; i < nm; i++) {
            tg_gguf_kv_str(g, mg, (uint64_t)i, &s, &len);
            const char *sp = memchr(s, ' ', len);
            if (!sp || sp == s || sp == s + len - 1 || memchr(sp + 1, ' ', len - (size_t)(sp + 1 - s)))
                return tg_fail(err, TG_ERR_FORMAT, "%s: tokenizer.ggml.merges[%d] is not 'left right'", path, i);
            if (!(v->merges[i] = dup_checked(s, len))) {
                if (memchr(s, 0, len))
                    return tg_fail(err, TG_ERR_FORMAT, "%s: tokenizer.ggml.merges[%d] contains a NUL byte", path, i);
                goto oom;
            }
        }
    }
    if (llama) {
        /* llama.cpp's defaults for an SPM vocabulary */
        v->bos_id = n > 1 ? 1 : -1;
        v->eos_id = n > 2 ? 2 : -1;
        v->unk_id = 0;
        v->add_bos = 1;
        if ((st = gguf_id(g, "tokenizer.ggml.bos_token_id", n, &v->bos_id, path, err)) ||
            (st = gguf_id(g, "tokenizer.ggml.eos_token_id", n, &v->eos_id, path, err)) ||
            (st = gguf_id(g, "tokenizer.ggml.unknown_token_id", n, &v->unk_id, path, err)) ||
            (st = gguf_id(g, "tokenizer.ggml.padding_token_id", n, &v->pad_id, path, err)) ||
            (st = gguf_flag(g, "tokenizer.ggml.add_bos_token", &v->add_bos, err)) ||
            (st = gguf_flag(g, "tokenizer.ggml.add_eos_token", &v->add_eos, err)))
            return st;
        return TG_OK;
    }
    const char *ids[2] = {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id"};
    int *dst[2] = {&v->bos_id, &v->eos_id};
    for (int k = 0; k < 2; k++) {
        if (!tg_gguf_find_kv(g, ids[k])) continue;
        uint64_t id;
        if ((st = tg_gguf_get_uint(g, ids[k], &id, err))) return st;
        if (id >= (uint64_t)n)
            return tg_fail(err, TG_ERR_FORMAT, "%s: %s = %" PRIu64 " is not a token id (vocabulary of %d)", path, ids[k], id, n);
        *dst[k] = (int)id;
    }
    if (tg_gguf_find_kv(g, "tokenizer.ggml.pre")) {
        if ((st = tg_gguf_get_str(g, "tokenizer.ggml.pre", &s, &len, err))) return st;
        if (!(v->pre = dup_checked(s, len)))
            return tg_fail(err, TG_ERR_FORMAT, "%s: tokenizer.ggml.pre is not a valid string", path);
    }
    return TG_OK;
oom:
    return tg_fail(err, TG_ERR_NOMEM, "%s: out of memory reading the tokenizer", path);
}

tg_status tg_vocab_from_gguf(tg_vocab *v, const tg_gguf *g, const char *where, tg_err *err) {
    tg_vocab_init(v);
    tg_status s = vocab_from_gguf(v, g, where ? where : "gguf", err);
    if (s) tg_vocab_free(v);
    return s;
}

/* ---- vocab -> GGUF ---------------------------------------------------------- */

/* A token's type when the vocabulary has none: what its piece says. */
static int32_t inferred_type(const tg_vocab *v, int i) {
    if (v->token_type) return v->token_type[i];
    if (i == v->bos_id || i == v->eos_id) return TG_TOKEN_CONTROL;
    if (v->kind == TG_VOCAB_SPM) {
        if (i == v->unk_id) return TG_TOKEN_UNKNOWN;
        if (byte_piece(v->tokens[i]) >= 0) return TG_TOKEN_BYTE;
    }
    return TG_TOKEN_NORMAL;
}

tg_status tg_vocab_to_gguf(tg_gguf_writer *gw, const tg_vocab *v, tg_err *err) {
    tg_status s;
    int spm = v->kind == TG_VOCAB_SPM;
    if (v->n_tokens < 1 || !v->tokens)
        return tg_fail(err, TG_ERR_ARG, "gguf writer: the vocabulary is empty");
    for (int i = 0; i < v->n_tokens; i++)
        if (!v->tokens[i]) return tg_fail(err, TG_ERR_ARG, "gguf writer: token %d is NULL", i);
    if ((s = tg_gguf_set_str(gw, "tokenizer.ggml.model", spm ? "llama" : "gpt2", err))) return s;
    if (!spm && (s = tg_gguf_set_str(gw, "tokenizer.ggml.pre", v->pre ? v->pre : "gpt-2", err))) return s;
    if ((s = tg_gguf_set_arr_str(gw, "tokenizer.ggml.tokens", (const char *const *)v->tokens,
                                 (uint64_t)v->n_tokens, err)))
        return s;
    if (spm) {
        float *sc = calloc((size_t)v->n_tokens, sizeof *sc);
        if (!sc) return tg_fail(err, TG_ERR_NOMEM, "gguf writer: out of memory");
        if (v->scores) memcpy(sc, v->scores, (size_t)v->n_tokens * sizeof *sc);
        s = tg_gguf_set_arr(gw, "tokenizer.ggml.scores", TG_GGUF_FLOAT32, sc, (uint64_t)v->n_tokens, err);
        free(sc);
        if (s) return s;
    }
    int32_t *tt = malloc((size_t)v->n_tokens * sizeof *tt);
    if (!tt) return tg_fail(err, TG_ERR_NOMEM, "gguf writer: out of memory");
    for (int i = 0; i < v->n_tokens; i++) tt[i] = inferred_type(v, i);
    s = tg_gguf_set_arr(gw, "tokenizer.ggml.token_type", TG_GGUF_INT32, tt, (uint64_t)v->n_tokens, err);
    free(tt);
    if (s) return s;
    if (!spm) {
        for (int i = 0; v->merges && i < v->n_merges; i++)
            if (!v->merges[i]) return tg_fail(err, TG_ERR_ARG, "gguf writer: merge %d is NULL", i);
        if ((s = tg_gguf_set_arr_str(gw, "tokenizer.ggml.merges", (const char *const *)v->merges,
                                     (uint64_t)(v->merges ? v->n_merges : 0), err)))
            return s;
    }
    struct { const char *key; int id; } ids[4] = {
        {"tokenizer.ggml.bos_token_id", v->bos_id}, {"tokenizer.ggml.eos_token_id", v->eos_id},
        {"tokenizer.ggml.unknown_token_id", spm ? v->unk_id : -1},
        {"tokenizer.ggml.padding_token_id", spm ? v->pad_id : -1}};
    for (int k = 0; k < 4; k++) {
        if (ids[k].id >= v->n_tokens)
            return tg_fail(err, TG_ERR_ARG, "gguf writer: %s = %d is not a token id (vocabulary of %d)",
                           ids[k].key, ids[k].id, v->n_tokens);
        if (ids[k].id >= 0 && (s = tg_gguf_set_u32(gw, ids[k].key, (uint32_t)ids[k].id, err))) return s;
    }
    if (spm && ((s = tg_gguf_set_bool(gw, "tokenizer.ggml.add_bos_token", v->add_bos != 0, err)) ||
                (s = tg_gguf_set_bool(gw, "tokenizer.ggml.add_eos_token", v->add_eos != 0, err))))
        return s;
    return TG_OK;
}

/* ---- llama2.c tokenizer.bin --------------------------------------------------- */

static int32_t rd_i32(const uint8_t *p) {
    uint32_t u = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    int32_t v;
    memcpy(&v, &u, sizeof v);
    return v;
}

static float rd_f32(const uint8_t *p) {
    int32_t i = rd_i32(p);
    float f;
    memcpy(&f, &i, sizeof f);
    return f;
}

/* A piece as llama2.c's export wrote it -> SentencePiece's spelling: every
 * space becomes ▁. NULL when out of memory. */
static char *spm_piece(const uint8_t *s, size_t n) {
    size_t spaces = 0;
    for (size_t i = 0; i < n; i++) spaces += s[i] == ' ';
    char *d = malloc(n + 2 * spaces + 1), *p = d;
    if (!d) return NULL;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == ' ') {
            memcpy(p, SPACE_MARK, 3);
            p += 3;
        } else {
            *p++ = (char)s[i];
        }
    }
    *p = 0;
    return d;
}

static tg_status parse_llama2c(tg_vocab *v, const uint8_t *b, size_t len, int n_expect,
                               const char *name, tg_err *err) {
    if (len < 4)
        return tg_fail(err, TG_ERR_FORMAT,
                       "%s: %zu bytes, too short for a llama2.c tokenizer (a 4-byte max_token_length, then the tokens)",
                       name, len);
    int32_t mtl = rd_i32(b);
    if (mtl < 1 || mtl > LLAMA2C_MAX_TOKEN_LENGTH)
        return tg_fail(err, TG_ERR_FORMAT, "%s: max_token_length %" PRId32 " is outside [1, %d] (not a llama2.c tokenizer?)",
                       name, mtl, LLAMA2C_MAX_TOKEN_LENGTH);
    if (n_expect < 0 || n_expect > MAX_TOKENS)
        return tg_fail(err, TG_ERR_ARG, "%s: %d tokens expected, outside [0, 2^24]", name, n_expect);
    /* every token takes at least 8 bytes: that bounds the count before any allocation */
    size_t cap = (len - 4) / 8;
    if (n_expect > 0 && (size_t)n_expect > cap)
        return tg_fail(err, TG_ERR_FORMAT, "%s: %zu bytes cannot hold the %d tokens the model expects (8 bytes each at least)",
                       name, len, n_expect);
    if (n_expect > 0) cap = (size_t)n_expect;
    if (cap > MAX_TOKENS) cap = MAX_TOKENS;
    if (cap == 0) return tg_fail(err, TG_ERR_FORMAT, "%s: no tokens after the 4-byte header", name);
    v->kind = TG_VOCAB_SPM;
    v->max_token_length = mtl;
    v->add_bos = 1;
    if (!(v->tokens = calloc(cap, sizeof *v->tokens)) || !(v->scores = malloc(cap * sizeof *v->scores)))
        goto oom;
    size_t off = 4;
    int n = 0;
    while (off < len && (n_expect == 0 || n < n_expect)) {
        if (n >= MAX_TOKENS)
            return tg_fail(err, TG_ERR_FORMAT, "%s: more than 2^24 tokens", name);
        if (len - off < 8)
            return tg_fail(err, TG_ERR_FORMAT, "%s: truncated: token %d's score and length need 8 bytes at offset %zu, %zu left",
                           name, n, off, len - off);
        float score = rd_f32(b + off);
        int32_t l = rd_i32(b + off + 4);
        if (!isfinite(score))
            return tg_fail(err, TG_ERR_FORMAT, "%s: token %d's score (offset %zu) is not finite", name, n, off);
        if (l < 0 || l > mtl)
            return tg_fail(err, TG_ERR_FORMAT, "%s: token %d's length %" PRId32 " (offset %zu) is outside [0, max_token_length %" PRId32 "]",
                           name, n, l, off + 4, mtl);
        off += 8;
        if ((size_t)l > len - off)
            return tg_fail(err, TG_ERR_FORMAT, "%s: token %d's %" PRId32 " bytes at offset %zu run past the end of the file (%zu left)",
                           name, n, l, off, len - off);
        if (memchr(b + off, 0, (size_t)l))
            return tg_fail(err, TG_ERR_FORMAT, "%s: token %d (offset %zu) contains a NUL byte", name, n, off);
        const char *p = (const char *)b + off;
        char *t;
        if (l == 5 && !memcmp(p, "\n<s>\n", 5)) t = strdup("<s>");
        else if (l == 6 && !memcmp(p, "\n</s>\n", 6)) t = strdup("</s>");
        else t = spm_piece(b + off, (size_t)l);
        if (!t) goto oom;
        v->tokens[n] = t;
        v->scores[n] = score;
        v->n_tokens = ++n;
        off += (size_t)l;
    }
    if (n_expect > 0 && n < n_expect)
        return tg_fail(err, TG_ERR_FORMAT, "%s: holds %d tokens, the model expects %d", name, n, n_expect);
    if (n_expect > 0 && off < len)
        return tg_fail(err, TG_ERR_FORMAT, "%s: %zu bytes follow the %d tokens the model expects (the file holds more tokens)",
                       name, len - off, n_expect);
    if (!(v->token_type = malloc((size_t)n * sizeof *v->token_type))) goto oom;
    /* llama2.c's ids: 0 <unk>, 1 BOS, 2 EOS; the pieces say which are there */
    for (int i = 0; i < n; i++) {
        const char *t = v->tokens[i];
        int32_t ty = TG_TOKEN_NORMAL;
        if (!strcmp(t, "<unk>")) {
            ty = TG_TOKEN_UNKNOWN;
            if (v->unk_id < 0) v->unk_id = i;
        } else if (!strcmp(t, "<s>")) {
            ty = TG_TOKEN_CONTROL;
            if (v->bos_id < 0) v->bos_id = i;
        } else if (!strcmp(t, "</s>")) {
            ty = TG_TOKEN_CONTROL;
            if (v->eos_id < 0) v->eos_id = i;
        } else if (byte_piece(t) >= 0) {
            ty = TG_TOKEN_BYTE;
        }
        v->token_type[i] = ty;
    }
    if (v->bos_id < 0 && n > 1) v->bos_id = 1; /* run.c's constants */
    if (v->eos_id < 0 && n > 2) v->eos_id = 2;
    return TG_OK;
oom:
    return tg_fail(err, TG_ERR_NOMEM, "%s: out of memory reading the tokenizer", name);
}

tg_status tg_vocab_parse_llama2c(tg_vocab *v, const void *buf, size_t len, int n_expect,
                                 const char *name, tg_err *err) {
    tg_vocab_init(v);
    tg_status s = parse_llama2c(v, buf, len, n_expect, name ? name : "tokenizer.bin", err);
    if (s) tg_vocab_free(v);
    return s;
}

/* The largest tokenizer file read into memory. */
#define MAX_TOKENIZER_FILE ((size_t)1 << 30)

tg_status tg_vocab_load_llama2c(tg_vocab *v, const char *path, int n_expect, tg_err *err) {
    tg_vocab_init(v);
    size_t len;
    char *buf = wt_read_file(path, MAX_TOKENIZER_FILE, &len, err);
    if (!buf) return TG_ERR_IO;
    tg_status s = tg_vocab_parse_llama2c(v, buf, len, n_expect, path, err);
    free(buf);
    return s;
}

/* ---- Hugging Face tokenizer.json -------------------------------------------- */

/* Whether a pre_tokenizer / decoder (or a Sequence of them) is ByteLevel. */
static int json_has_type(const cJSON *node, const char *type) {
    if (!cJSON_IsObject(node)) return 0;
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(node, "type");
    if (cJSON_IsString(t) && !strcmp(t->valuestring, type)) return 1;
    const char *lists[] = {"pretokenizers", "decoders", "normalizers", "processors"};
    for (size_t k = 0; k < sizeof lists / sizeof lists[0]; k++) {
        const cJSON *a = cJSON_GetObjectItemCaseSensitive(node, lists[k]);
        const cJSON *e;
        cJSON_ArrayForEach(e, a) if (json_has_type(e, type)) return 1;
    }
    return 0;
}

/* Splits a merge ("a b" or ["a", "b"]) into its two parts (borrowed). */
static int merge_parts(const cJSON *m, const char **a, size_t *la, const char **b, size_t *lb) {
    if (cJSON_IsString(m)) {
        const char *s = m->valuestring, *sp = strchr(s, ' ');
        if (!sp || sp == s || !sp[1] || strchr(sp + 1, ' ')) return 0;
        *a = s, *la = (size_t)(sp - s), *b = sp + 1, *lb = strlen(sp + 1);
        return 1;
    }
    if (cJSON_IsArray(m) && cJSON_GetArraySize(m) == 2) {
        const cJSON *x = cJSON_GetArrayItem(m, 0), *y = cJSON_GetArrayItem(m, 1);
        if (!cJSON_IsString(x) || !cJSON_IsString(y) || !*x->valuestring || !*y->valuestring) return 0;
        *a = x->valuestring, *la = strlen(*a), *b = y->valuestring, *lb = strlen(*b);
        return 1;
    }
    return 0;
}

static int cmp_cstr(const void *a, const void *b, void *ctx) {
    char **t = ctx;
    return strcmp(t[*(const int *)a], t[*(const int *)b]);
}

/* The id of piece s[n] in a sorted index of tokens, or -1. */
static int find_sorted(char **tokens, const int *order, int n_tok, const char *s, size_t n) {
    int lo = 0, hi = n_tok - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        const char *t = tokens[order[mid]];
        int c = strncmp(t, s, n);
        if (c == 0 && t[n]) c = 1;
        if (c == 0) return order[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid - 1;
    }
    return -1;
}

static tg_status parse_hf_json(tg_vocab *v, const cJSON *root, const char *name, tg_err *err) {
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
    if (!cJSON_IsObject(model)) return tg_fail(err, TG_ERR_FORMAT, "%s: no \"model\" object", name);
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(model, "type");
    const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(model, "vocab");
    const cJSON *merges = cJSON_GetObjectItemCaseSensitive(model, "merges");
    if (type && (!cJSON_IsString(type) || strcmp(type->valuestring, "BPE")))
        return tg_fail(err, TG_ERR_UNSUPPORTED, "%s: model.type is %s%s%s, only BPE is supported", name,
                       cJSON_IsString(type) ? "'" : "", cJSON_IsString(type) ? Q(type->valuestring) : "not a string",
                       cJSON_IsString(type) ? "'" : "");
    if (!cJSON_IsObject(vocab)) return tg_fail(err, TG_ERR_FORMAT, "%s: model.vocab is missing or not an object", name);
    if (merges && !cJSON_IsArray(merges)) return tg_fail(err, TG_ERR_FORMAT, "%s: model.merges is not an array", name);
    const cJSON *added = cJSON_GetObjectItemCaseSensitive(root, "added_tokens");
    if (added && !cJSON_IsArray(added)) return tg_fail(err, TG_ERR_FORMAT, "%s: added_tokens is not an array", name);
    int byte_level = json_has_type(cJSON_GetObjectItemCaseSensitive(root, "pre_tokenizer"), "ByteLevel") ||
                     json_has_type(cJSON_GetObjectItemCaseSensitive(root, "decoder"), "ByteLevel");

    /* ids: the vocab's and the added tokens'; the largest + 1 is the size */
    int64_t max_id = -1;
    const cJSON *e;
    cJSON_ArrayForEach(e, vocab) {
        if (!cJSON_IsNumber(e) || e->valuedouble < 0 || e->valuedouble >= MAX_TOKENS ||
            e->valuedouble != (double)(int64_t)e->valuedouble)
            return tg_fail(err, TG_ERR_FORMAT, "%s: model.vocab[\"%s\"] is not a token id in [0, 2^24)", name, Q(e->string));
        if ((int64_t)e->valuedouble > max_id) max_id = (int64_t)e->valuedouble;
    }
    cJSON_ArrayForEach(e, added) {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(e, "id");
        const cJSON *content = cJSON_GetObjectItemCaseSensitive(e, "content");
        if (!cJSON_IsNumber(id) || id->valuedouble < 0 || id->valuedouble >= MAX_TOKENS ||
            id->valuedouble != (double)(int64_t)id->valuedouble || !cJSON_IsString(content))
            return tg_fail(err, TG_ERR_FORMAT, "%s: an added token lacks a string content or an id in [0, 2^24)", name);
        if ((int64_t)id->valuedouble > max_id) max_id = (int64_t)id->valuedouble;
    }
    if (max_id < 0) return tg_fail(err, TG_ERR_FORMAT, "%s: model.vocab is empty", name);
    int n = (int)max_id + 1;
    v->kind = byte_level ? TG_VOCAB_GPT2 : TG_VOCAB_SPM;
    if (!(v->tokens = calloc((size_t)n, sizeof *v->tokens)) ||
        !(v->token_type = malloc((size_t)n * sizeof *v->token_type)))
        goto oom;
    v->n_tokens = n;
    for (int i = 0; i < n; i++) v->token_type[i] = TG_TOKEN_NORMAL;
    cJSON_ArrayForEach(e, vocab) {
        int id = (int)e->valuedouble;
        if (v->tokens[id])
            return tg_fail(err, TG_ERR_FORMAT, "%s: model.vocab gives id %d to both \"%s\" and \"%s\"", name, id,
                           Q(v->tokens[id]), Q(e->string));
        if (!(v->tokens[id] = strdup(e->string))) goto oom;
    }
    cJSON_ArrayForEach(e, added) {
        int id = (int)cJSON_GetObjectItemCaseSensitive(e, "id")->valuedouble;
        const char *c = cJSON_GetObjectItemCaseSensitive(e, "content")->valuestring;
        if (v->tokens[id] && strcmp(v->tokens[id], c))
            return tg_fail(err, TG_ERR_FORMAT, "%s: added token %d \"%s\" has the id of \"%s\"", name, id, Q(c),
                           Q(v->tokens[id]));
        if (!v->tokens[id] && !(v->tokens[id] = strdup(c))) goto oom;
        v->token_type[id] = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "special")) ? TG_TOKEN_CONTROL
                                                                                         : TG_TOKEN_USER_DEFINED;
    }
    for (int i = 0; i < n; i++)
        if (!v->tokens[i]) return tg_fail(err, TG_ERR_FORMAT, "%s: no token has id %d (ids run to %d)", name, i, n - 1);

    int nm = merges ? cJSON_GetArraySize(merges) : 0;
    if (nm > MAX_TOKENS) return tg_fail(err, TG_ERR_FORMAT, "%s: more than 2^24 merges", name);
    int *order = malloc((size_t)n * sizeof *order);
    if (!order) goto oom;
    for (int i = 0; i < n; i++) order[i] = i;
    qsort_r(order, (size_t)n, sizeof *order, cmp_cstr, v->tokens);
    tg_status s = TG_OK;
    if (v->kind == TG_VOCAB_GPT2) {
        if (!(v->merges = calloc(nm ? (size_t)nm : 1, sizeof *v->merges))) goto oom_order;
        int r = 0;
        cJSON_ArrayForEach(e, merges) {
            const char *a, *b;
            size_t la, lb;
            if (!merge_parts(e, &a, &la, &b, &lb)) {
                s = tg_fail(err, TG_ERR_FORMAT, "%s: model.merges[%d] is not \"left right\" or [left, right]", name, r);
                break;
            }
            char *m = malloc(la + lb + 2);
            if (!m) goto oom_order;
            memcpy(m, a, la);
            m[la] = ' ';
            memcpy(m + la + 1, b, lb + 1);
            v->merges[r++] = m;
            v->n_merges = r;
        }
        /* bos = eos = <|endoftext|>, as GPT-2 and SmolLM use it */
        int eot = find_sorted(v->tokens, order, n, "<|endoftext|>", 13);
        v->bos_id = v->eos_id = eot;
    } else {
        if (!(v->scores = malloc((size_t)n * sizeof *v->scores))) goto oom_order;
        /* a piece's score is -(rank of the first merge making it); a longer
         * piece no merge makes is never merged into (-1e30, below llama2.c's
         * -1e10 floor), as Hugging Face's BPE would never make it */
        for (int i = 0; i < n; i++) v->scores[i] = 0;
        for (int i = 0; i < n; i++) {
            const char *t = v->tokens[i];
            uint32_t c0 = (uint8_t)t[0];
            size_t l1 = c0 < 0x80 ? 1 : c0 < 0xE0 ? 2 : c0 < 0xF0 ? 3 : 4;
            if (strlen(t) > l1 && v->token_type[i] == TG_TOKEN_NORMAL && byte_piece(t) < 0) v->scores[i] = -1e30f;
        }
        int r = 0;
        char *buf = NULL;
        size_t cap = 0;
        cJSON_ArrayForEach(e, merges) {
            const char *a, *b;
            size_t la, lb;
            if (!merge_parts(e, &a, &la, &b, &lb)) {
                s = tg_fail(err, TG_ERR_FORMAT, "%s: model.merges[%d] is not \"left right\" or [left, right]", name, r);
                break;
            }
            if (la + lb + 1 > cap) {
                cap = (la + lb + 1) * 2;
                char *nb = realloc(buf, cap);
                if (!nb) {
                    free(buf);
                    goto oom_order;
                }
                buf = nb;
            }
            memcpy(buf, a, la);
            memcpy(buf + la, b, lb);
            int id = find_sorted(v->tokens, order, n, buf, la + lb);
            if (id < 0 || find_sorted(v->tokens, order, n, a, la) < 0 || find_sorted(v->tokens, order, n, b, lb) < 0) {
                s = tg_fail(err, TG_ERR_FORMAT, "%s: model.merges[%d] names or makes a piece that is not in model.vocab",
                            name, r);
                break;
            }
            if (v->scores[id] < -1e29f) v->scores[id] = -(float)r - 1;
            r++;
        }
        free(buf);
        int b0 = find_sorted(v->tokens, order, n, "<s>", 3), e0 = find_sorted(v->tokens, order, n, "</s>", 4);
        int u0 = find_sorted(v->tokens, order, n, "<unk>", 5);
        const cJSON *unk = cJSON_GetObjectItemCaseSensitive(model, "unk_token");
        if (cJSON_IsString(unk)) u0 = find_sorted(v->tokens, order, n, unk->valuestring, strlen(unk->valuestring));
        v->bos_id = b0, v->eos_id = e0, v->unk_id = u0;
        if (u0 >= 0) v->token_type[u0] = TG_TOKEN_UNKNOWN;
        for (int i = 0; i < n; i++)
            if (byte_piece(v->tokens[i]) >= 0 && v->token_type[i] == TG_TOKEN_NORMAL) v->token_type[i] = TG_TOKEN_BYTE;
        /* add_bos: the post-processor's single template starts with <s> */
        const cJSON *pp = cJSON_GetObjectItemCaseSensitive(root, "post_processor");
        const cJSON *single = cJSON_GetObjectItemCaseSensitive(pp, "single");
        const cJSON *first = cJSON_GetArrayItem(single, 0);
        const cJSON *stok = cJSON_GetObjectItemCaseSensitive(first, "SpecialToken");
        const cJSON *sid = cJSON_GetObjectItemCaseSensitive(stok, "id");
        v->add_bos = cJSON_IsString(sid) && b0 >= 0 && !strcmp(sid->valuestring, "<s>");
        if (!pp || cJSON_IsNull(pp)) v->add_bos = b0 >= 0; /* Llama's default */
    }
    free(order);
    return s;
oom_order:
    free(order);
oom:
    return tg_fail(err, TG_ERR_NOMEM, "%s: out of memory reading the tokenizer", name);
}

tg_status tg_vocab_parse_hf_json(tg_vocab *v, const char *json, size_t len, const char *name,
                                 tg_err *err) {
    tg_vocab_init(v);
    if (!name) name = "tokenizer.json";
    for (size_t i = 0; i < len; i++)
        if (!json[i]) return tg_fail(err, TG_ERR_FORMAT, "%s: a NUL byte at offset %zu", name, i);
    /* \u0000 would cut a piece short as a C string */
    for (size_t i = 0; i + 5 < len; i++)
        if (json[i] == '\\' && json[i + 1] == 'u' && !memcmp(json + i + 2, "0000", 4)) {
            size_t k = i; /* an escaped backslash before it makes it text */
            while (k > 0 && json[k - 1] == '\\') k--;
            if ((i - k) % 2 == 0) return tg_fail(err, TG_ERR_FORMAT, "%s: a string holds \\u0000 (a NUL character)", name);
        }
    cJSON *root = wt_json_parse(json, len);
    if (!root) return tg_fail(err, TG_ERR_FORMAT, "%s: not valid JSON", name);
    tg_status s = cJSON_IsObject(root) ? parse_hf_json(v, root, name, err)
                                       : tg_fail(err, TG_ERR_FORMAT, "%s: not a JSON object", name);
    cJSON_Delete(root);
    if (s) tg_vocab_free(v);
    return s;
}

tg_status tg_vocab_load_hf_json(tg_vocab *v, const char *path, tg_err *err) {
    tg_vocab_init(v);
    size_t len;
    char *buf = wt_read_file(path, MAX_JSON_BYTES, &len, err);
    if (!buf) return TG_ERR_IO;
    tg_status s = tg_vocab_parse_hf_json(v, buf, len, path, err);
    free(buf);
    return s;
}

/* ---- any of them -------------------------------------------------------------- */

tg_status tg_vocab_load(tg_vocab *v, const char *path, tg_err *err) {
    tg_vocab_init(v);
    if (!path || !*path) return tg_fail(err, TG_ERR_ARG, "tokenizer path is empty");
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        char p[4096];
        if (snprintf(p, sizeof p, "%s/tokenizer.json", path) >= (int)sizeof p)
            return tg_fail(err, TG_ERR_ARG, "%s: path too long", path);
        if (stat(p, &sb) == 0) return tg_vocab_load_hf_json(v, p, err);
        snprintf(p, sizeof p, "%s/vocab.json", path);
        if (stat(p, &sb) != 0)
            return tg_fail(err, TG_ERR_IO, "%s: a folder with neither tokenizer.json nor vocab.json + merges.txt: "
                                           "not a vocabulary", path);
        return tg_vocab_load_hf(v, path, 0, err);
    }
    /* what the file is, from its first bytes (a GGUF is mapped, not read) */
    struct stat fs;
    int fd = wt_open_regular(path, &fs, err);
    if (fd < 0) return TG_ERR_IO;
    char head[64];
    ssize_t got = read(fd, head, sizeof head);
    close(fd);
    if (got < 0) return tg_fail(err, TG_ERR_IO, "%s: cannot read", path);
    if (got < 4) /* too short for any of them */
        return tg_fail(err, TG_ERR_FORMAT,
                       "%s: %s, not a vocabulary (expected a GGUF file, a llama2.c tokenizer.bin, a tokenizer.json "
                       "or a Hugging Face folder)", path, got ? "under 4 bytes" : "empty file");
    tg_status s;
    if (got >= 4 && !memcmp(head, "GGUF", 4)) {
        tg_gguf *g;
        if ((s = tg_gguf_open(&g, path, err))) return s;
        s = tg_vocab_from_gguf(v, g, path, err);
        if (!s && v->n_tokens == 0)
            s = tg_fail(err, TG_ERR_FORMAT, "%s: no tokenizer (key 'tokenizer.ggml.model' missing)", path);
        tg_gguf_close(g);
        return s;
    }
    ssize_t i = 0;
    while (i < got && (head[i] == ' ' || head[i] == '\t' || head[i] == '\n' || head[i] == '\r')) i++;
    if (i < got && head[i] == '{') return tg_vocab_load_hf_json(v, path, err);
    return tg_vocab_load_llama2c(v, path, 0, err);
}
