/* test_tokenizer_spm.c — SentencePiece-style vocabularies and tokenizer:
 * llama2.c's tokenizer.bin (the real tok512.bin of ../shared, and hostile
 * files built here: truncated at every byte, lengths past the end,
 * negative lengths, a huge max_token_length, a count that disagrees with
 * the file), decode(encode(x)) == x on fixed and random bytes, the llama
 * GGUF vocabulary round trip (write, read, same fields, same ids), Hugging
 * Face tokenizer.json (Llama-style and byte-level), and a long text.
 * The ids themselves are checked against an independent reference in
 * spm_oracle.py. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "model/tokenizer.h"
#include "weights/gguf.h"
#include "weights/vocab.h"

static char *shared_file(const char *rel) {
    static char path[4096];
    const char *env = getenv("TINYGPT_SHARED");
    const char *cands[3] = {env, TEST_SRC_DIR "/../shared", TEST_SRC_DIR "/../../shared"};
    for (int i = 0; i < 3; i++) {
        if (!cands[i]) continue;
        snprintf(path, sizeof path, "%s/data/%s", cands[i], rel);
        struct stat st;
        if (stat(path, &st) == 0) return path;
    }
    /* skipped with the reason, a failure when TINYGPT_REQUIRE_DATA is set (.ci/run) */
    if (getenv("TINYGPT_REQUIRE_DATA") && *getenv("TINYGPT_REQUIRE_DATA"))
        cr_assert_fail("%s is missing (shared/data beside the source tree, or $TINYGPT_SHARED)", rel);
    cr_skip_test("%s is missing (shared/data beside the source tree, or $TINYGPT_SHARED; README.md, "
                 "'Data for the tour and the tests')", rel);
    return NULL;
}

static uint8_t *read_all(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    cr_assert(f, "%s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc((size_t)n + 1);
    cr_assert_eq(fread(b, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return b;
}

static tg_tokenizer *make_tok(const tg_vocab *v) {
    tg_tokenizer *t;
    tg_err err;
    cr_assert_eq(tg_tokenizer_create(&t, v, &err), TG_OK, "%s", err.msg);
    return t;
}

static void load_tok512(tg_vocab *v) {
    tg_err err;
    cr_assert_eq(tg_vocab_load_llama2c(v, shared_file("stories260K/tok512.bin"), 512, &err), TG_OK, "%s",
                 err.msg);
}

Test(llama2c, tok512_fields) {
    tg_vocab v;
    load_tok512(&v);
    cr_assert_eq(v.kind, TG_VOCAB_SPM);
    cr_assert_eq(v.n_tokens, 512);
    cr_assert_eq(v.bos_id, 1);
    cr_assert_eq(v.eos_id, 2);
    cr_assert_eq(v.unk_id, 0);
    cr_assert_eq(v.add_bos, 1);
    cr_assert_str_eq(v.tokens[1], "<s>");
    cr_assert_str_eq(v.tokens[2], "</s>");
    cr_assert_eq(v.token_type[0], TG_TOKEN_UNKNOWN);
    cr_assert_eq(v.token_type[1], TG_TOKEN_CONTROL);
    int ids[256];
    cr_assert_eq(tg_vocab_byte_ids(&v, ids), 256);
    for (int b = 0; b < 256; b++) {
        cr_assert_eq(ids[b], b + 3);
        cr_assert_eq(v.token_type[b + 3], TG_TOKEN_BYTE);
    }
    /* llama2.c wrote ▁ as a space: it is ▁ again */
    int space = -1;
    for (int i = 0; i < v.n_tokens; i++) {
        cr_assert_null(strchr(v.tokens[i], ' '), "token %d '%s' has a space", i, v.tokens[i]);
        if (!strcmp(v.tokens[i], "\xe2\x96\x81")) space = i;
    }
    cr_assert_geq(space, 0);
    /* the file holds exactly 512 tokens */
    tg_vocab w;
    tg_err err;
    cr_assert_eq(tg_vocab_load_llama2c(&w, shared_file("stories260K/tok512.bin"), 511, &err), TG_ERR_FORMAT);
    cr_assert(strstr(err.msg, "follow the 511 tokens"), "%s", err.msg);
    cr_assert_eq(tg_vocab_load_llama2c(&w, shared_file("stories260K/tok512.bin"), 513, &err), TG_ERR_FORMAT);
    cr_assert(strstr(err.msg, "513"), "%s", err.msg);
    cr_assert_eq(tg_vocab_load_llama2c(&w, shared_file("stories260K/tok512.bin"), 0, &err), TG_OK, "%s", err.msg);
    cr_assert_eq(w.n_tokens, 512);
    tg_vocab_free(&w);
    cr_assert_eq(tg_vocab_load(&w, shared_file("stories260K/tok512.bin"), &err), TG_OK, "%s", err.msg);
    cr_assert_eq(w.n_tokens, 512);
    cr_assert_eq(w.kind, TG_VOCAB_SPM);
    tg_vocab_free(&w);
    tg_vocab_free(&v);
}

/* ---- hostile tokenizer.bin ---- */

typedef struct wbuf {
    uint8_t b[1 << 14];
    size_t n;
} wbuf;

static void put_i32(wbuf *w, int32_t x) {
    memcpy(w->b + w->n, &x, 4);
    w->n += 4;
}
static void put_f32(wbuf *w, float x) {
    memcpy(w->b + w->n, &x, 4);
    w->n += 4;
}
static void put_tok(wbuf *w, float score, const char *s) {
    put_f32(w, score);
    put_i32(w, (int32_t)strlen(s));
    memcpy(w->b + w->n, s, strlen(s));
    w->n += strlen(s);
}

/* A small valid file: <unk>, BOS, EOS, 256 bytes, " ", "a", "b", " a", "ab". */
static size_t small_file(wbuf *w, size_t *bounds, int *n_bounds) {
    w->n = 0;
    put_i32(w, 8);
    int k = 0;
    const char *pre[3] = {"<unk>", "\n<s>\n", "\n</s>\n"};
    for (int i = 0; i < 3; i++) {
        put_tok(w, 0, pre[i]);
        bounds[k++] = w->n;
    }
    for (int b = 0; b < 256; b++) {
        char s[8];
        snprintf(s, sizeof s, "<0x%02X>", b);
        put_tok(w, 0, s);
        bounds[k++] = w->n;
    }
    const char *rest[5] = {" ", "a", "b", " a", "ab"};
    float sc[5] = {-1, -2, -3, -4, -5};
    for (int i = 0; i < 5; i++) {
        put_tok(w, sc[i], rest[i]);
        bounds[k++] = w->n;
    }
    *n_bounds = k;
    return w->n;
}

Test(llama2c, truncated_at_every_byte) {
    wbuf w;
    size_t bounds[300];
    int nb;
    size_t len = small_file(&w, bounds, &nb);
    tg_vocab v;
    tg_err err;
    cr_assert_eq(tg_vocab_parse_llama2c(&v, w.b, len, nb, "t.bin", &err), TG_OK, "%s", err.msg);
    cr_assert_eq(v.n_tokens, nb);
    tg_vocab_free(&v);
    int k = 0;
    for (size_t n = 0; n < len; n++) {
        /* the model's count: every cut is an error */
        tg_status s = tg_vocab_parse_llama2c(&v, w.b, n, nb, "t.bin", &err);
        cr_assert_eq(s, TG_ERR_FORMAT, "cut at %zu: %d %s", n, s, err.msg);
        cr_assert(strstr(err.msg, "t.bin") && !strchr(err.msg, '\n'), "%s", err.msg);
        cr_assert_eq(v.n_tokens, 0);
        /* to the end of the file: only a cut between tokens reads */
        s = tg_vocab_parse_llama2c(&v, w.b, n, 0, "t.bin", &err);
        while (k < nb && bounds[k] < n) k++;
        int at_bound = k < nb && bounds[k] == n;
        if (at_bound) {
            cr_assert_eq(s, TG_OK, "cut at token boundary %zu: %s", n, err.msg);
            cr_assert_eq(v.n_tokens, k + 1);
            tg_vocab_free(&v);
        } else {
            cr_assert_eq(s, TG_ERR_FORMAT, "cut at %zu loaded", n);
        }
    }
}

static tg_status parse_edit(wbuf *w, size_t at, int32_t val, int n_expect, tg_err *err) {
    wbuf c = *w;
    memcpy(c.b + at, &val, 4);
    tg_vocab v;
    tg_status s = tg_vocab_parse_llama2c(&v, c.b, c.n, n_expect, "h.bin", err);
    if (!s) tg_vocab_free(&v);
    return s;
}

Test(llama2c, hostile_fields) {
    wbuf w;
    size_t bounds[300];
    int nb;
    small_file(&w, bounds, &nb);
    tg_err err;
    struct { size_t at; int32_t val; const char *needle; } cases[] = {
        {0, 0, "max_token_length 0"},
        {0, -5, "max_token_length -5"},
        {0, INT32_MAX, "max_token_length 2147483647"},
        {0, 4, "outside [0, max_token_length 4]"},           /* "<unk>" is 5 */
        {8, -1, "length -1"},                                  /* token 0's length */
        {8, INT32_MIN, "length -2147483648"},
        {8, 8, "h.bin: token"},                                /* shifts everything after */
        {bounds[nb - 2] + 4, 7, "run past the end"},           /* the last token's length */
        {4, 0x7fc00000, "not finite"},                         /* NaN score */
        {4, 0x7f800000, "not finite"},                         /* inf */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tg_status s = parse_edit(&w, cases[i].at, cases[i].val, 0, &err);
        cr_assert_eq(s, TG_ERR_FORMAT, "case %zu: %d", i, s);
        cr_assert(strstr(err.msg, cases[i].needle), "case %zu: '%s' lacks '%s'", i, err.msg, cases[i].needle);
    }
    /* the count disagrees with the file */
    tg_vocab v;
    cr_assert_eq(tg_vocab_parse_llama2c(&v, w.b, w.n, nb + 1, "h.bin", &err), TG_ERR_FORMAT);
    cr_assert(strstr(err.msg, "expects"), "%s", err.msg);
    cr_assert_eq(tg_vocab_parse_llama2c(&v, w.b, w.n, nb - 1, "h.bin", &err), TG_ERR_FORMAT);
    cr_assert_eq(tg_vocab_parse_llama2c(&v, w.b, w.n, 1 << 30, "h.bin", &err), TG_ERR_ARG);
    cr_assert_eq(tg_vocab_parse_llama2c(&v, w.b, 4, 0, "h.bin", &err), TG_ERR_FORMAT);
    cr_assert(strstr(err.msg, "no tokens"), "%s", err.msg);
    /* a NUL inside a piece */
    wbuf c = w;
    c.b[12] = 0;
    cr_assert_eq(tg_vocab_parse_llama2c(&v, c.b, c.n, 0, "h.bin", &err), TG_ERR_FORMAT);
    cr_assert(strstr(err.msg, "NUL"), "%s", err.msg);
}

/* ---- encode/decode ---- */

static void roundtrip(tg_tokenizer *t, const char *text, size_t len, int flags) {
    int *ids;
    size_t n;
    tg_err err;
    cr_assert_eq(tg_tokenizer_encode_ex(t, text, len, flags, &ids, &n, &err), TG_OK, "%s", err.msg);
    char *out;
    size_t ol;
    cr_assert_eq(tg_tokenizer_decode(t, ids, n, &out, &ol, &err), TG_OK, "%s", err.msg);
    cr_assert(ol == len && !memcmp(out, text, len), "round trip of %zu bytes gave %zu bytes", len, ol);
    /* streaming: the pieces, each after its predecessor, give the same bytes
     * once the first one's dummy-prefix space is set aside */
    size_t k = 0;
    char *cat = malloc(ol + 2 * n + 2);
    for (size_t i = 0; i < n; i++) {
        size_t pl;
        const char *p = tg_tokenizer_piece_after(t, i ? ids[i - 1] : -1, ids[i], &pl);
        cr_assert_not_null(p);
        memcpy(cat + k, p, pl);
        k += pl;
    }
    size_t skip = k > ol && cat[0] == ' ' ? 1 : 0;
    cr_assert(k - skip == ol && !memcmp(cat + skip, out, ol), "streamed pieces differ from decode");
    free(cat);
    free(out);
    free(ids);
}

static const char *const texts[] = {
    "Once upon a time",
    "",
    " ",
    "  two leading spaces",
    "line one\nline two\n\n",
    "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\xa4\x96",
    "bad \xff\xfe \xc3 \xe2\x82",
    "<s> </s> <unk> <0x41>",
};

Test(spm, roundtrip_fixed_and_random) {
    tg_vocab v;
    load_tok512(&v);
    tg_tokenizer *t = make_tok(&v);
    cr_assert_eq(tg_tokenizer_kind(t), TG_VOCAB_SPM);
    cr_assert_eq(tg_tokenizer_default_flags(t), TG_ENCODE_BOS);
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
        for (int f = 0; f < 8; f++) roundtrip(t, texts[i], strlen(texts[i]), f & ~TG_ENCODE_SPECIAL);
    uint64_t r = 12345;
    char buf[400];
    for (int it = 0; it < 300; it++) {
        size_t len = (size_t)(it % 97) * 4 % 397;
        for (size_t k = 0; k < len; k++) {
            r = r * 6364136223846793005ull + 1442695040888963407ull;
            /* mostly ASCII letters, spaces and newlines, some high bytes */
            uint8_t x = (uint8_t)(r >> 56);
            buf[k] = (char)(x < 160 ? "abcdefghij klmnop \nqrst"[x % 23] : x);
        }
        roundtrip(t, buf, len, it & 1 ? TG_ENCODE_BOS : 0);
    }
    /* the default flags put BOS first; EOS is a flag */
    int *ids;
    size_t n;
    tg_err err;
    cr_assert_eq(tg_tokenizer_encode(t, "hi", 2, 0, &ids, &n, &err), TG_OK);
    cr_assert(n >= 2 && ids[0] == 1);
    free(ids);
    cr_assert_eq(tg_tokenizer_encode_ex(t, "hi", 2, TG_ENCODE_EOS, &ids, &n, &err), TG_OK);
    cr_assert(n >= 2 && ids[n - 1] == 2 && ids[0] != 1);
    free(ids);
    /* BOS and EOS are special; their strings are found; they decode to nothing */
    cr_assert(tg_tokenizer_is_special(t, 1) && tg_tokenizer_is_special(t, 2) && !tg_tokenizer_is_special(t, 300));
    cr_assert_eq(tg_tokenizer_token_id(t, "<s>"), 1);
    cr_assert_eq(tg_tokenizer_token_id(t, "<0x41>"), 0x41 + 3);
    size_t pl;
    cr_assert_str_eq(tg_tokenizer_piece(t, 0x41 + 3, &pl), "A");
    cr_assert_eq(tg_tokenizer_piece(t, 1, &pl)[0], 0);
    cr_assert_null(tg_tokenizer_piece(t, 512, &pl));
    int bad = 512;
    char *out;
    cr_assert_eq(tg_tokenizer_decode(t, &bad, 1, &out, &pl, &err), TG_ERR_ARG);
    /* parse_special: the literal text of a control token is that token */
    cr_assert_eq(tg_tokenizer_encode_ex(t, "a</s>b", 6, TG_ENCODE_SPECIAL, &ids, &n, &err), TG_OK);
    int found = 0;
    for (size_t i = 0; i < n; i++) found += ids[i] == 2;
    cr_assert_eq(found, 1);
    free(ids);
    tg_tokenizer_free(t);
    tg_vocab_free(&v);
}

/* TG_ENCODE_NO_PREFIX (a text that goes on another, as the REPL's re-encoded
 * remainder): no dummy-prefix space, so the pieces spell the text exactly,
 * byte for byte; with the prefix they spell " " + text. */
static void pieces_spell(tg_tokenizer *t, const char *text, size_t len, int flags) {
    int *ids;
    size_t n;
    tg_err err;
    cr_assert_eq(tg_tokenizer_encode_ex(t, text, len, flags, &ids, &n, &err), TG_OK, "%s", err.msg);
    size_t pre = flags & TG_ENCODE_NO_PREFIX || !len ? 0 : 1, k = 0;
    char *cat = malloc(len + 16 * n + 2);
    for (size_t i = 0; i < n; i++) {
        size_t pl;
        const char *p = tg_tokenizer_piece(t, ids[i], &pl);
        cr_assert_not_null(p);
        memcpy(cat + k, p, pl);
        k += pl;
    }
    cr_assert(k == pre + len && (!pre || cat[0] == ' ') && !memcmp(cat + pre, text, len),
              "flags %d: the pieces of a %zu-byte text spell %zu bytes", flags, len, k);
    free(cat);
    free(ids);
}

Test(spm, no_prefix) {
    tg_vocab v;
    load_tok512(&v);
    tg_tokenizer *t = make_tok(&v);
    for (size_t i = 0; i < sizeof texts / sizeof texts[0] - 1; i++) /* the last spells specials */
        for (int f = 0; f < 2; f++) pieces_spell(t, texts[i], strlen(texts[i]), f ? TG_ENCODE_NO_PREFIX : 0);
    uint64_t r = 777;
    char buf[200];
    for (int it = 0; it < 100; it++) {
        size_t len = (size_t)it * 2 % 199;
        for (size_t k = 0; k < len; k++) {
            r = r * 6364136223846793005ull + 1442695040888963407ull;
            uint8_t x = (uint8_t)(r >> 56);
            buf[k] = (char)(x < 160 ? "abcdefghij klmnop \nqrst"[x % 23] : x);
        }
        pieces_spell(t, buf, len, TG_ENCODE_NO_PREFIX | (it & 1 ? TG_ENCODE_SPECIAL : 0));
    }
    tg_tokenizer_free(t);
    tg_vocab_free(&v);
}

/* A long text: the heap keeps it O(n log n) (llama2.c's scan would take
 * minutes on this); ids must round trip. */
Test(spm, long_text) {
    tg_vocab v;
    load_tok512(&v);
    tg_tokenizer *t = make_tok(&v);
    size_t len;
    uint8_t *text = read_all(shared_file("tinystories/tinystories_val.txt"), &len);
    if (len > (4u << 20)) len = 4u << 20;
    roundtrip(t, (const char *)text, len, TG_ENCODE_BOS);
    free(text);
    tg_tokenizer_free(t);
    tg_vocab_free(&v);
}

/* ---- GGUF llama vocabulary ---- */

static void gguf_roundtrip(const tg_vocab *v, tg_vocab *back) {
    tg_err err;
    tg_gguf_writer *gw;
    cr_assert_eq(tg_gguf_writer_new(&gw, &err), TG_OK);
    cr_assert_eq(tg_gguf_set_str(gw, "general.architecture", "llama", &err), TG_OK);
    cr_assert_eq(tg_vocab_to_gguf(gw, v, &err), TG_OK, "%s", err.msg);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert_eq(tg_gguf_write_to(gw, f, "mem.gguf", &err), TG_OK, "%s", err.msg);
    fclose(f);
    tg_gguf_writer_free(gw);
    tg_gguf *g;
    cr_assert_eq(tg_gguf_parse(&g, buf, len, "mem.gguf", &err), TG_OK, "%s", err.msg);
    const char *s;
    size_t sl;
    cr_assert_eq(tg_gguf_get_str(g, "tokenizer.ggml.model", &s, &sl, &err), TG_OK);
    cr_assert(sl == 5 && !memcmp(s, "llama", 5));
    cr_assert_not_null(tg_gguf_find_kv(g, "tokenizer.ggml.scores"));
    cr_assert_null(tg_gguf_find_kv(g, "tokenizer.ggml.merges"));
    cr_assert_eq(tg_vocab_from_gguf(back, g, "mem.gguf", &err), TG_OK, "%s", err.msg);
    tg_gguf_close(g);
    free(buf);
}

Test(gguf, llama_vocab_roundtrip) {
    tg_vocab v, b;
    load_tok512(&v);
    v.pad_id = 0;
    gguf_roundtrip(&v, &b);
    cr_assert_eq(b.kind, TG_VOCAB_SPM);
    cr_assert_eq(b.n_tokens, v.n_tokens);
    for (int i = 0; i < v.n_tokens; i++) {
        cr_assert_str_eq(b.tokens[i], v.tokens[i]);
        cr_assert_eq(b.scores[i], v.scores[i]);
        cr_assert_eq(b.token_type[i], v.token_type[i]);
    }
    cr_assert(b.bos_id == 1 && b.eos_id == 2 && b.unk_id == 0 && b.pad_id == 0 && b.add_bos == 1 && b.add_eos == 0);
    tg_tokenizer *t1 = make_tok(&v), *t2 = make_tok(&b);
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        int *a, *c;
        size_t na, nc;
        tg_err err;
        cr_assert_eq(tg_tokenizer_encode(t1, texts[i], strlen(texts[i]), 0, &a, &na, &err), TG_OK);
        cr_assert_eq(tg_tokenizer_encode(t2, texts[i], strlen(texts[i]), 0, &c, &nc, &err), TG_OK);
        cr_assert(na == nc && !memcmp(a, c, na * sizeof *a), "text %zu encodes differently", i);
        free(a);
        free(c);
    }
    tg_tokenizer_free(t1);
    tg_tokenizer_free(t2);
    /* without the optional keys llama.cpp's defaults apply; a bad id is an error */
    tg_vocab_free(&b);
    v.bos_id = 600;
    tg_err err;
    tg_gguf_writer *gw;
    tg_gguf_writer_new(&gw, &err);
    cr_assert_eq(tg_vocab_to_gguf(gw, &v, &err), TG_ERR_ARG);
    cr_assert(strstr(err.msg, "bos_token_id = 600"), "%s", err.msg);
    tg_gguf_writer_free(gw);
    tg_vocab_free(&v);
}

Test(gguf, llama_vocab_hostile_keys) {
    tg_vocab v;
    load_tok512(&v);
    struct { const char *key; int kind; const char *needle; } cases[] = {
        {"tokenizer.ggml.bos_token_id", 0, "is not a token id"},
        {"tokenizer.ggml.scores", 1, "scores must be a float32 array"},
        {"tokenizer.ggml.scores", 2, "not finite"},
        {"tokenizer.ggml.add_bos_token", 3, "add_bos_token"},
        {"tokenizer.ggml.model", 4, "only 'gpt2'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tg_err err;
        tg_gguf_writer *gw;
        tg_gguf_writer_new(&gw, &err);
        cr_assert_eq(tg_vocab_to_gguf(gw, &v, &err), TG_OK);
        float sc[512] = {0};
        switch (cases[i].kind) {
        case 0: tg_gguf_set_u32(gw, cases[i].key, 512, &err); break;
        case 1: tg_gguf_set_arr(gw, cases[i].key, TG_GGUF_FLOAT32, sc, 3, &err); break;
        case 2: sc[7] = NAN; tg_gguf_set_arr(gw, cases[i].key, TG_GGUF_FLOAT32, sc, 512, &err); break;
        case 3: tg_gguf_set_str(gw, cases[i].key, "yes", &err); break;
        case 4: tg_gguf_set_str(gw, cases[i].key, "t5", &err); break;
        }
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        cr_assert_eq(tg_gguf_write_to(gw, f, "mem.gguf", &err), TG_OK, "%s", err.msg);
        fclose(f);
        tg_gguf_writer_free(gw);
        tg_gguf *g;
        cr_assert_eq(tg_gguf_parse(&g, buf, len, "mem.gguf", &err), TG_OK, "%s", err.msg);
        tg_vocab b;
        tg_status s = tg_vocab_from_gguf(&b, g, "mem.gguf", &err);
        cr_assert_neq(s, TG_OK, "case %zu loaded", i);
        cr_assert(strstr(err.msg, cases[i].needle), "case %zu: '%s' lacks '%s'", i, err.msg, cases[i].needle);
        cr_assert_eq(b.n_tokens, 0);
        tg_gguf_close(g);
        free(buf);
    }
    tg_vocab_free(&v);
}

/* ---- Hugging Face tokenizer.json ---- */

/* A Llama-style tokenizer.json: ▁ pieces, byte_fallback, merges by rank. */
static const char llama_json[] =
    "{\"version\":\"1.0\",\"added_tokens\":["
    "{\"id\":0,\"content\":\"<unk>\",\"special\":true},"
    "{\"id\":1,\"content\":\"<s>\",\"special\":true},"
    "{\"id\":2,\"content\":\"</s>\",\"special\":true}],"
    "\"normalizer\":{\"type\":\"Sequence\",\"normalizers\":[{\"type\":\"Prepend\",\"prepend\":\"\xe2\x96\x81\"},"
    "{\"type\":\"Replace\"}]},\"pre_tokenizer\":null,"
    "\"post_processor\":{\"type\":\"TemplateProcessing\",\"single\":[{\"SpecialToken\":{\"id\":\"<s>\",\"type_id\":0}},"
    "{\"Sequence\":{\"id\":\"A\",\"type_id\":0}}]},"
    "\"decoder\":{\"type\":\"Sequence\",\"decoders\":[{\"type\":\"Replace\"},{\"type\":\"ByteFallback\"}]},"
    "\"model\":{\"type\":\"BPE\",\"byte_fallback\":true,\"unk_token\":\"<unk>\",\"vocab\":{"
    "\"<unk>\":0,\"<s>\":1,\"</s>\":2,\"<0x0A>\":3,\"<0x21>\":4,"
    "\"\xe2\x96\x81\":5,\"h\":6,\"e\":7,\"l\":8,\"o\":9,"
    "\"he\":10,\"ll\":11,\"\xe2\x96\x81he\":12,\"\xe2\x96\x81hell\":13,\"lo\":14},"
    "\"merges\":[\"h e\",\"l l\",[\"\xe2\x96\x81\",\"he\"],\"\xe2\x96\x81he ll\",\"l o\"]}}";

Test(hf_json, llama_style) {
    tg_vocab v;
    tg_err err;
    cr_assert_eq(tg_vocab_parse_hf_json(&v, llama_json, strlen(llama_json), "tokenizer.json", &err), TG_OK, "%s",
                 err.msg);
    cr_assert_eq(v.kind, TG_VOCAB_SPM);
    cr_assert_eq(v.n_tokens, 15);
    cr_assert(v.bos_id == 1 && v.eos_id == 2 && v.unk_id == 0 && v.add_bos == 1);
    cr_assert(v.token_type[1] == TG_TOKEN_CONTROL && v.token_type[3] == TG_TOKEN_BYTE);
    /* ranks become scores: "he" (rank 0) outranks "▁hell" (rank 3) */
    cr_assert_gt(v.scores[10], v.scores[13]);
    tg_tokenizer *t = make_tok(&v);
    int *ids;
    size_t n;
    /* "hello!\n": ▁ h e l l o ! \n -> he, ll, ▁he, ▁hell; "lo" (rank 4) never
     * gets its turn because ll (rank 1) took the l's first; ! and \n by bytes */
    cr_assert_eq(tg_tokenizer_encode(t, "hello!\n", 7, 0, &ids, &n, &err), TG_OK, "%s", err.msg);
    int want[] = {1, 13, 9, 4, 3};
    cr_assert_eq(n, 5, "%zu ids", n);
    cr_assert(!memcmp(ids, want, sizeof want));
    free(ids);
    /* 'x' has neither a piece nor a byte token: <unk> */
    cr_assert_eq(tg_tokenizer_encode(t, "x", 1, 0, &ids, &n, &err), TG_OK, "%s", err.msg);
    cr_assert(n == 3 && ids[0] == 1 && ids[1] == 5 && ids[2] == 0, "%zu", n);
    free(ids);
    tg_tokenizer_free(t);
    /* through the GGUF writer and back: the same */
    tg_vocab b;
    gguf_roundtrip(&v, &b);
    cr_assert_eq(b.n_tokens, 15);
    cr_assert_eq(b.scores[13], v.scores[13]);
    tg_vocab_free(&b);
    tg_vocab_free(&v);
}

Test(hf_json, byte_level_is_gpt2) {
    static const char j[] =
        "{\"added_tokens\":[{\"id\":3,\"content\":\"<|endoftext|>\",\"special\":true}],"
        "\"pre_tokenizer\":{\"type\":\"ByteLevel\",\"add_prefix_space\":false},"
        "\"decoder\":{\"type\":\"ByteLevel\"},"
        "\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":1,\"ab\":2},\"merges\":[\"a b\"]}}";
    tg_vocab v;
    tg_err err;
    cr_assert_eq(tg_vocab_parse_hf_json(&v, j, strlen(j), "t.json", &err), TG_OK, "%s", err.msg);
    cr_assert_eq(v.kind, TG_VOCAB_GPT2);
    cr_assert_eq(v.n_tokens, 4);
    cr_assert_eq(v.n_merges, 1);
    cr_assert_str_eq(v.merges[0], "a b");
    cr_assert(v.eos_id == 3 && v.bos_id == 3 && v.token_type[3] == TG_TOKEN_CONTROL);
    tg_vocab_free(&v);
}

Test(hf_json, hostile) {
    struct { const char *json; const char *needle; } cases[] = {
        {"[1]", "not a JSON object"},
        {"{\"model\":{\"type\":\"Unigram\",\"vocab\":[]}}", "only BPE"},
        {"{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":2}}}", "no token has id 1"},
        {"{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":0}}}", "gives id 0 to both"},
        {"{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":-1}}}", "not a token id"},
        {"{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":1e300}}}", "not a token id"},
        {"{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0.5}}}", "not a token id"},
        {"{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":1},\"merges\":[\"a c\"]}}", "not in model.vocab"},
        {"{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":1},\"merges\":[\"ab\"]}}", "merges[0]"},
        {"{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\\u0000\":0}}}", "\\u0000"},
        {"{\"model\":{\"type\":\"BPE\",\"vocab\":{}}}", "empty"},
        {"{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0}", "not valid JSON"},
        /* a piece quoted in a message stays on one line */
        {"{\"added_tokens\":[{\"id\":0,\"content\":\"x\\ny\",\"special\":true}],"
         "\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\\nb\":0}}}", "\"x\\x0ay\" has the id of \"a\\x0ab\""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tg_vocab v;
        tg_err err;
        tg_status s = tg_vocab_parse_hf_json(&v, cases[i].json, strlen(cases[i].json), "t.json", &err);
        cr_assert_neq(s, TG_OK, "case %zu loaded", i);
        cr_assert(strstr(err.msg, cases[i].needle), "case %zu: '%s' lacks '%s'", i, err.msg, cases[i].needle);
        cr_assert_null(strchr(err.msg, '\n'), "case %zu: '%s'", i, err.msg);
        cr_assert_eq(v.n_tokens, 0);
    }
}
