/* fuzz_llama_tok.c — libFuzzer target for SentencePiece-style vocabularies
 * and their tokenizer.
 *
 * The first byte picks what the rest is:
 *   0: a llama2.c tokenizer.bin (tg_vocab_parse_llama2c, read to the end),
 *   1: the same with the count the model would give (the first 2 bytes after
 *      the selector, little-endian),
 *   2: a Hugging Face tokenizer.json (tg_vocab_parse_hf_json),
 *   3: text for a fixed, well-formed vocabulary built at start-up.
 * A vocabulary that parses must give a tokenizer or a one-line error; the
 * tokenizer must encode a fixed text and the input, every id in range, at
 * most one id per byte plus the dummy prefix, BOS and EOS, and decode them.
 * For the fixed vocabulary decode(encode(x)) == x byte for byte, and the
 * streamed pieces (tg_tokenizer_piece_after) give the same bytes. A parse
 * error must leave the vocabulary empty and its message on one line. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/tokenizer.h"
#include "weights/vocab.h"

static tg_tokenizer *fixed_tok;

/* A tokenizer.bin: <unk>, BOS, EOS, the 256 <0xXX> bytes, then letters,
 * space and a few merges with falling scores. */
static size_t build_fixed(uint8_t *b) {
    size_t n = 0;
    int32_t mtl = 16;
    memcpy(b, &mtl, 4);
    n = 4;
    char piece[32];
    static const char *const words[] = {
        " ", "a", "e", "h", "n", "d", "t", "o", "s", "i", "l", "r", "\xc3\xa9",
        "th", "he", "an", "in", "er", " t", " a", "the", " the", "and", " and", " th", "ll", "o ",
    };
    int nw = (int)(sizeof words / sizeof words[0]);
    for (int i = 0; i < 3 + 256 + nw; i++) {
        const char *p = piece;
        if (i == 0) p = "<unk>";
        else if (i == 1) p = "\n<s>\n";
        else if (i == 2) p = "\n</s>\n";
        else if (i < 259) snprintf(piece, sizeof piece, "<0x%02X>", i - 3);
        else p = words[i - 259];
        float score = i < 259 ? 0.0f : -(float)(i - 259);
        int32_t len = (int32_t)strlen(p);
        memcpy(b + n, &score, 4);
        memcpy(b + n + 4, &len, 4);
        memcpy(b + n + 8, p, (size_t)len);
        n += 8 + (size_t)len;
    }
    return n;
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    static uint8_t buf[8192];
    size_t n = build_fixed(buf);
    tg_vocab v;
    tg_err err;
    if (tg_vocab_parse_llama2c(&v, buf, n, 0, "fixed", &err) || tg_tokenizer_create(&fixed_tok, &v, &err)) {
        fprintf(stderr, "fuzz_llama_tok: %s\n", err.msg);
        abort();
    }
    tg_vocab_free(&v);
    return 0;
}

/* Encodes and decodes; with exact, the round trip must hold. */
static void check(tg_tokenizer *t, const uint8_t *data, size_t size, int flags, int exact) {
    int *ids;
    size_t n;
    tg_err err;
    tg_status s = tg_tokenizer_encode_ex(t, (const char *)data, size, flags, &ids, &n, &err);
    if (s != TG_OK) {
        /* only a vocabulary without byte tokens or <unk> may fail to encode */
        if (exact || s != TG_ERR_ARG || strchr(err.msg, '\n')) abort();
        return;
    }
    int V = tg_tokenizer_n_vocab(t);
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= V) abort();
    if (!(flags & TG_ENCODE_SPECIAL) && n > size + 3) abort();
    char *back;
    size_t len;
    if (tg_tokenizer_decode(t, ids, n, &back, &len, &err)) abort();
    if (exact) {
        if (len != size || memcmp(back, data, size)) abort();
        size_t k = 0;
        char *cat = malloc(len + n + 1);
        if (!cat) abort();
        for (size_t i = 0; i < n; i++) {
            size_t pl;
            const char *p = tg_tokenizer_piece_after(t, i ? ids[i - 1] : -1, ids[i], &pl);
            if (!p) abort();
            if (k + pl > len + n) abort();
            memcpy(cat + k, p, pl);
            k += pl;
        }
        size_t skip = k > len && cat[0] == ' ';
        if (k - skip != len || memcmp(cat + skip, back, len)) abort();
        free(cat);
    }
    free(back);
    free(ids);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    int mode = data[0] % 4;
    const uint8_t *p = data + 1;
    size_t n = size - 1;
    if (mode == 3) {
        check(fixed_tok, p, n, 0, 1);
        check(fixed_tok, p, n, TG_ENCODE_BOS | TG_ENCODE_EOS, 1);
        check(fixed_tok, p, n, TG_ENCODE_SPECIAL, 0);
        return 0;
    }
    tg_vocab v;
    tg_err err;
    tg_status s;
    if (mode == 0) {
        s = tg_vocab_parse_llama2c(&v, p, n, 0, "fuzz.bin", &err);
    } else if (mode == 1) {
        if (n < 2) return 0;
        int count = p[0] | p[1] << 8;
        s = tg_vocab_parse_llama2c(&v, p + 2, n - 2, count, "fuzz.bin", &err);
    } else {
        char *json = malloc(n + 1); /* cJSON reads a NUL-terminated copy */
        if (!json) return 0;
        memcpy(json, p, n);
        json[n] = 0;
        s = tg_vocab_parse_hf_json(&v, json, n, "fuzz.json", &err);
        free(json);
    }
    if (s != TG_OK) {
        if (v.n_tokens != 0 || v.tokens || strchr(err.msg, '\n')) abort();
        return 0;
    }
    tg_tokenizer *t;
    if (tg_tokenizer_create(&t, &v, &err) == TG_OK) {
        static const char text[] = "Once upon a time, \xe6\x97\xa5\xe6\x9c\xac \xff <s> end\n";
        check(t, (const uint8_t *)text, sizeof text - 1, TG_ENCODE_BOS, 0);
        check(t, p, n < 512 ? n : 512, TG_ENCODE_SPECIAL, 0);
        tg_tokenizer_free(t);
    } else if (strchr(err.msg, '\n')) {
        abort();
    }
    tg_vocab_free(&v);
    return 0;
}
