/* test_tokenizer.c — the BPE tokenizer against a brute-force reference.
 *
 * The reference is OpenAI encoder.py's loop written naively over byte
 * strings (find the lowest-ranked adjacent pair, merge every occurrence left
 * to right, repeat), run on random vocabularies and random texts. Exactness
 * on GPT-2's real vocabulary is checked against the npm encoder by
 * tokenizer_exact.sh. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/tokenizer.h"

/* ---- a random byte-level vocabulary ---- */

typedef struct test_vocab {
    tg_vocab v;
    /* the byte form of every token, for the reference */
    uint8_t **raw;
    size_t *raw_len;
    /* merges as (left id, right id) in rank order */
    int *ml, *mr;
} test_vocab;

static uint64_t rng_next(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Vocabulary string of a byte string (GPT-2 byte->unicode form). */
static char *to_vocab_str(const uint8_t *b, size_t n) {
    char *s = malloc(2 * n + 1), *p = s;
    for (size_t i = 0; i < n; i++) p += tg_gpt2_byte_to_utf8(b[i], p);
    *p = 0;
    return s;
}

static void tv_add(test_vocab *tv, const uint8_t *b, size_t n) {
    int id = tv->v.n_tokens++;
    tv->v.tokens[id] = to_vocab_str(b, n);
    tv->raw[id] = malloc(n + 1);
    memcpy(tv->raw[id], b, n);
    tv->raw_len[id] = n;
}

/* 256 bytes, then n_merges merges of random existing tokens (biased to a
 * small alphabet so texts over it merge a lot), then <|endoftext|>. */
static void tv_make(test_vocab *tv, int n_merges, uint64_t seed) {
    memset(tv, 0, sizeof *tv);
    int cap = 256 + n_merges + 1;
    tv->v.tokens = calloc((size_t)cap, sizeof(char *));
    tv->raw = calloc((size_t)cap, sizeof(uint8_t *));
    tv->raw_len = calloc((size_t)cap, sizeof(size_t));
    tv->v.merges = calloc((size_t)n_merges + 1, sizeof(char *));
    tv->ml = calloc((size_t)n_merges + 1, sizeof(int));
    tv->mr = calloc((size_t)n_merges + 1, sizeof(int));
    for (int b = 0; b < 256; b++) {
        uint8_t c = (uint8_t)b;
        tv_add(tv, &c, 1);
    }
    static const char alpha[] = "ab \xc3\xa9\n'";
    uint64_t s = seed | 1;
    while (tv->v.n_merges < n_merges) {
        int a, b;
        if (rng_next(&s) % 3 == 0) { /* two bytes from the alphabet */
            a = (uint8_t)alpha[rng_next(&s) % (sizeof alpha - 1)];
            b = (uint8_t)alpha[rng_next(&s) % (sizeof alpha - 1)];
        } else { /* recent tokens, so longer merges appear */
            int n = tv->v.n_tokens;
            a = n - 1 - (int)(rng_next(&s) % (uint64_t)(n - 255 > 1 ? n - 255 : 1));
            b = (int)(rng_next(&s) % 2) ? (uint8_t)alpha[rng_next(&s) % (sizeof alpha - 1)]
                                        : n - 1 - (int)(rng_next(&s) % (uint64_t)(n - 255 > 1 ? n - 255 : 1));
        }
        size_t la = tv->raw_len[a], lb = tv->raw_len[b];
        if (la + lb > 12) continue;
        uint8_t buf[32];
        memcpy(buf, tv->raw[a], la);
        memcpy(buf + la, tv->raw[b], lb);
        int dup = 0;
        for (int i = 0; i < tv->v.n_tokens && !dup; i++)
            dup = tv->raw_len[i] == la + lb && !memcmp(tv->raw[i], buf, la + lb);
        if (dup) continue;
        int r = tv->v.n_merges++;
        size_t sa = strlen(tv->v.tokens[a]), sb = strlen(tv->v.tokens[b]);
        tv->v.merges[r] = malloc(sa + sb + 2);
        sprintf(tv->v.merges[r], "%s %s", tv->v.tokens[a], tv->v.tokens[b]);
        tv->ml[r] = a;
        tv->mr[r] = b;
        tv_add(tv, buf, la + lb);
    }
    tv->v.tokens[tv->v.n_tokens] = strdup("<|endoftext|>");
    tv->raw[tv->v.n_tokens] = (uint8_t *)strdup("<|endoftext|>");
    tv->raw_len[tv->v.n_tokens] = 13;
    tv->v.eos_id = tv->v.bos_id = tv->v.n_tokens++;
}

static void tv_free(test_vocab *tv) {
    for (int i = 0; i < tv->v.n_tokens; i++) {
        free(tv->v.tokens[i]);
        free(tv->raw[i]);
    }
    for (int i = 0; i < tv->v.n_merges; i++) free(tv->v.merges[i]);
    free(tv->v.tokens);
    free(tv->v.merges);
    free(tv->raw);
    free(tv->raw_len);
    free(tv->ml);
    free(tv->mr);
}

/* ---- the reference: encoder.py's bpe() on byte strings ---- */

typedef struct ref_ctx {
    const test_vocab *tv;
    int *ids;
    size_t n;
} ref_ctx;

static tg_status ref_word(void *user, const char *w, size_t n, tg_err *err) {
    ref_ctx *rc = user;
    const test_vocab *tv = rc->tv;
    int *sym = malloc(n * sizeof(int)); /* token id of each symbol */
    size_t ns = n;
    for (size_t i = 0; i < n; i++) sym[i] = (uint8_t)w[i];
    for (;;) {
        int best = -1; /* lowest rank among adjacent pairs */
        for (size_t i = 0; i + 1 < ns; i++)
            for (int r = 0; r < tv->v.n_merges && (best < 0 || r < best); r++)
                if (tv->ml[r] == sym[i] && tv->mr[r] == sym[i + 1]) best = r;
        if (best < 0) break;
        size_t k = 0;
        for (size_t i = 0; i < ns;) {
            if (i + 1 < ns && sym[i] == tv->ml[best] && sym[i + 1] == tv->mr[best]) {
                sym[k++] = 256 + best; /* merge r made token 256 + r */
                i += 2;
            } else {
                sym[k++] = sym[i++];
            }
        }
        ns = k;
    }
    memcpy(rc->ids + rc->n, sym, ns * sizeof(int));
    rc->n += ns;
    free(sym);
    (void)err;
    return TG_OK;
}

static void random_text(uint64_t *s, uint8_t *buf, size_t n) {
    static const char alpha[] = "ab \xc3\xa9\n'";
    for (size_t i = 0; i < n; i++) {
        uint64_t r = rng_next(s) % 16;
        buf[i] = r < 13 ? (uint8_t)alpha[rng_next(s) % (sizeof alpha - 1)] : (uint8_t)rng_next(s);
    }
}

Test(tokenizer, matches_bruteforce_bpe_on_random_vocabs) {
    for (int trial = 0; trial < 12; trial++) {
        test_vocab tv;
        tv_make(&tv, 40 + 30 * trial, 1234 + (uint64_t)trial);
        tg_err err = {{0}};
        tg_tokenizer *t;
        cr_assert_eq(tg_tokenizer_create(&t, &tv.v, &err), TG_OK, "%s", err.msg);
        tg_pretok *pre;
        cr_assert_eq(tg_pretok_create(&pre, &err), TG_OK, "%s", err.msg);
        uint64_t s = 99 + (uint64_t)trial;
        for (int k = 0; k < 40; k++) {
            uint8_t text[300];
            size_t n = (size_t)(rng_next(&s) % sizeof text);
            random_text(&s, text, n);
            int *ids;
            size_t n_ids;
            cr_assert_eq(tg_tokenizer_encode(t, (char *)text, n, 0, &ids, &n_ids, &err), TG_OK,
                         "%s", err.msg);
            ref_ctx rc = {&tv, malloc((n + 1) * sizeof(int)), 0};
            cr_assert_eq(tg_pretok_split(pre, (char *)text, n, ref_word, &rc, &err), TG_OK);
            cr_assert_eq(n_ids, rc.n, "trial %d text %d: %zu ids, reference %zu", trial, k, n_ids, rc.n);
            for (size_t i = 0; i < n_ids; i++)
                cr_assert_eq(ids[i], rc.ids[i], "trial %d text %d id %zu: %d, reference %d", trial, k,
                             i, ids[i], rc.ids[i]);
            char *back;
            size_t blen;
            cr_assert_eq(tg_tokenizer_decode(t, ids, n_ids, &back, &blen, &err), TG_OK);
            cr_assert(blen == n && !memcmp(back, text, n), "round trip");
            free(back);
            free(ids);
            free(rc.ids);
        }
        tg_pretok_free(pre);
        tg_tokenizer_free(t);
        tv_free(&tv);
    }
}

/* Repeated pairs: encoder.py merges "a a a" left to right into "aa a". */
Test(tokenizer, overlapping_pairs_merge_left_to_right) {
    test_vocab tv;
    tv_make(&tv, 0, 1);
    /* one merge: a a -> aa */
    tv.v.merges[0] = strdup("a a");
    tv.ml[0] = tv.mr[0] = 'a';
    tv.v.n_merges = 1;
    free(tv.v.tokens[256]);
    free(tv.raw[256]);
    tv.v.tokens[256] = strdup("aa");
    tv.raw[256] = (uint8_t *)strdup("aa");
    tv.raw_len[256] = 2;
    tv.v.eos_id = tv.v.bos_id = -1;
    tg_err err;
    tg_tokenizer *t;
    cr_assert_eq(tg_tokenizer_create(&t, &tv.v, &err), TG_OK, "%s", err.msg);
    for (size_t n = 1; n < 9; n++) {
        char text[16];
        memset(text, 'a', n);
        int *ids;
        size_t n_ids;
        cr_assert_eq(tg_tokenizer_encode(t, text, n, 0, &ids, &n_ids, &err), TG_OK);
        cr_assert_eq(n_ids, (n + 1) / 2);
        for (size_t i = 0; i < n / 2; i++) cr_assert_eq(ids[i], 256);
        if (n % 2) cr_assert_eq(ids[n_ids - 1], 'a');
        free(ids);
    }
    tg_tokenizer_free(t);
    tv_free(&tv);
}

Test(tokenizer, any_bytes_round_trip) {
    test_vocab tv;
    tv_make(&tv, 200, 7);
    tg_err err;
    tg_tokenizer *t;
    cr_assert_eq(tg_tokenizer_create(&t, &tv.v, &err), TG_OK, "%s", err.msg);
    uint64_t s = 5;
    for (int k = 0; k < 300; k++) {
        uint8_t text[512];
        size_t n = (size_t)(rng_next(&s) % sizeof text);
        for (size_t i = 0; i < n; i++) text[i] = (uint8_t)rng_next(&s);
        if (k % 3 == 0) /* truncated and overlong sequences, surrogates, NUL */
            for (size_t i = 0; i + 3 < n; i += 7) memcpy(text + i, k % 2 ? "\xed\xa0\x80" : "\xf0\x9f\x98", 3);
        for (int ps = 0; ps < 2; ps++) {
            int *ids;
            size_t n_ids;
            cr_assert_eq(tg_tokenizer_encode(t, (char *)text, n, ps, &ids, &n_ids, &err), TG_OK, "%s", err.msg);
            char *back;
            size_t blen;
            cr_assert_eq(tg_tokenizer_decode(t, ids, n_ids, &back, &blen, &err), TG_OK);
            cr_assert(blen == n && !memcmp(back, text, n), "round trip of %zu random bytes", n);
            free(back);
            free(ids);
        }
    }
    tg_tokenizer_free(t);
    tv_free(&tv);
}

Test(tokenizer, special_tokens_only_when_asked) {
    test_vocab tv;
    tv_make(&tv, 50, 3);
    tg_err err;
    tg_tokenizer *t;
    cr_assert_eq(tg_tokenizer_create(&t, &tv.v, &err), TG_OK, "%s", err.msg);
    int eot = tg_tokenizer_token_id(t, "<|endoftext|>");
    cr_assert_eq(eot, tv.v.n_tokens - 1);
    cr_assert_eq(tg_tokenizer_eos(t), eot);
    cr_assert(tg_tokenizer_is_special(t, eot));
    cr_assert(!tg_tokenizer_is_special(t, 'a'));
    const char *text = "a<|endoftext|><|endoftext|>b<|endoftext|";
    size_t n = strlen(text);
    int *ids;
    size_t n_ids;
    cr_assert_eq(tg_tokenizer_encode(t, text, n, 1, &ids, &n_ids, &err), TG_OK);
    int count = 0;
    for (size_t i = 0; i < n_ids; i++) count += ids[i] == eot;
    cr_assert_eq(count, 2, "two complete <|endoftext|> become the special id");
    cr_assert_eq(ids[1], eot);
    cr_assert_eq(ids[2], eot);
    char *back;
    size_t blen;
    cr_assert_eq(tg_tokenizer_decode(t, ids, n_ids, &back, &blen, &err), TG_OK);
    cr_assert(blen == n && !memcmp(back, text, n));
    free(back);
    free(ids);
    cr_assert_eq(tg_tokenizer_encode(t, text, n, 0, &ids, &n_ids, &err), TG_OK);
    for (size_t i = 0; i < n_ids; i++) cr_assert_neq(ids[i], eot, "plain text never gives the special id");
    free(ids);
    tg_tokenizer_free(t);
    tv_free(&tv);
}

typedef struct tiles {
    const char *base;
    size_t at;
    int ok;
} tiles;

static tg_status tile_check(void *user, const char *w, size_t n, tg_err *err) {
    tiles *tl = user;
    if (w != tl->base + tl->at || n == 0) tl->ok = 0;
    tl->at += n;
    (void)err;
    return TG_OK;
}

Test(tokenizer, pretokens_tile_the_text_even_when_huge) {
    tg_err err;
    tg_pretok *pre;
    cr_assert_eq(tg_pretok_create(&pre, &err), TG_OK, "%s", err.msg);
    size_t n = 3u << 20;
    char *text = malloc(n);
    /* one giant letter run, one giant space run, one giant invalid run,
     * one giant punctuation run, then a mix */
    const char fill[] = {'x', ' ', (char)0xff, '!', 0};
    for (int f = 0; f < 5; f++) {
        if (fill[f]) {
            memset(text, fill[f], n);
        } else {
            uint64_t s = 11;
            for (size_t i = 0; i < n; i++) text[i] = (char)rng_next(&s);
        }
        tiles tl = {text, 0, 1};
        cr_assert_eq(tg_pretok_split(pre, text, n, tile_check, &tl, &err), TG_OK, "%s", err.msg);
        cr_assert(tl.ok && tl.at == n, "fill %d: pre-tokens tile the text", f);
    }
    free(text);
    tg_pretok_free(pre);
}

Test(tokenizer, byte_table_is_gpt2s) {
    /* encoder.py: printable Latin-1 maps to itself, the rest to 256.. */
    cr_assert_eq(tg_gpt2_byte_to_cp(' '), 0x120); /* 'Ġ' */
    cr_assert_eq(tg_gpt2_byte_to_cp('\n'), 0x10A); /* 'Ċ' */
    cr_assert_eq(tg_gpt2_byte_to_cp('A'), 'A');
    cr_assert_eq(tg_gpt2_byte_to_cp(0xAD), 0x143); /* the last one */
    int seen[324] = {0};
    for (int b = 0; b < 256; b++) {
        uint32_t cp = tg_gpt2_byte_to_cp((uint8_t)b);
        cr_assert_lt(cp, 324);
        cr_assert_eq(seen[cp]++, 0, "byte table is one-to-one");
        cr_assert_eq(tg_gpt2_cp_to_byte(cp), b);
    }
    cr_assert_eq(tg_gpt2_cp_to_byte(0x144), -1);
    cr_assert_eq(tg_gpt2_cp_to_byte(0x7F), -1);
}

Test(tokenizer, utf8_complete_holds_back_only_partial_chars) {
    struct {
        const char *s;
        size_t n, want;
    } cases[] = {
        {"abc", 3, 3},
        {"a\xc3", 2, 1},             /* é cut after its lead byte */
        {"a\xc3\xa9", 3, 3},
        {"\xe2\x82", 2, 0},          /* € cut */
        {"\xf0\x9f\x98", 3, 0},      /* 😀 cut */
        {"\xf0\x9f\x98\x80", 4, 4},
        {"a\xff", 2, 2},             /* invalid: never completes */
        {"a\x80", 2, 2},             /* stray continuation */
        {"\xe0\x80", 2, 2},          /* overlong: cannot complete */
        {"\xed\xa0", 2, 2},          /* surrogate: cannot complete */
        {"\xf4\x90", 2, 2},          /* above U+10FFFF */
        {"\xc0", 1, 1},              /* invalid lead */
        {"", 0, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        cr_assert_eq(tg_utf8_complete(cases[i].s, cases[i].n), cases[i].want, "case %zu", i);
}

Test(tokenizer, bad_vocabularies_and_ids_are_errors) {
    test_vocab tv;
    tv_make(&tv, 10, 2);
    tg_err err = {{0}};
    tg_tokenizer *t;
    /* a vocabulary without the byte tokens */
    tg_vocab v = tv.v;
    v.tokens += 10;
    v.n_tokens -= 10;
    v.n_merges = 0;
    cr_assert_eq(tg_tokenizer_create(&t, &v, &err), TG_ERR_FORMAT);
    cr_assert(strstr(err.msg, "byte 0x"), "%s", err.msg);
    /* a merge without a space */
    v = tv.v;
    char *saved = v.merges[0];
    v.merges[0] = "nospace";
    cr_assert_eq(tg_tokenizer_create(&t, &v, &err), TG_ERR_FORMAT);
    cr_assert(strstr(err.msg, "merge 0"), "%s", err.msg);
    v.merges[0] = saved;
    cr_assert_eq(tg_tokenizer_create(&t, &tv.v, &err), TG_OK);
    int bad[] = {1, 2, tv.v.n_tokens};
    char *out;
    size_t len;
    cr_assert_eq(tg_tokenizer_decode(t, bad, 3, &out, &len, &err), TG_ERR_ARG);
    cr_assert(strstr(err.msg, "position 2"), "%s", err.msg);
    bad[2] = -1;
    cr_assert_eq(tg_tokenizer_decode(t, bad, 3, &out, &len, &err), TG_ERR_ARG);
    cr_assert_null(tg_tokenizer_piece(t, -1, NULL));
    tg_tokenizer_free(t);
    tv_free(&tv);
}

/* Merges naming tokens the vocabulary lacks are corruption (GPT-2's 50,000
 * merges all name tokens): an error naming the merge, never skipped. */
Test(tokenizer, merges_must_name_tokens) {
    const char *cases[][2] = {{"a b", NULL}, {"a zz", "names 'zz'"}, {"yy b", "names 'yy'"},
                              {"b c", "makes 'bc'"}};
    for (int k = 0; k < 4; k++) {
        tg_vocab v;
        tg_err err;
        cr_assert_eq(tg_vocab_bytes(&v, &err), TG_OK);
        v.tokens = realloc(v.tokens, 258 * sizeof *v.tokens);
        v.tokens[257] = strdup("ab");
        v.n_tokens = 258;
        free(v.token_type);
        v.token_type = NULL;
        v.merges = calloc(2, sizeof *v.merges);
        v.merges[0] = strdup("a b");
        v.merges[1] = strdup(cases[k][0]);
        v.n_merges = 2;
        tg_tokenizer *t = NULL;
        tg_status s = tg_tokenizer_create(&t, &v, &err);
        if (!cases[k][1]) {
            cr_assert_eq(s, TG_OK, "%s", err.msg);
            tg_tokenizer_free(t);
        } else {
            cr_assert_eq(s, TG_ERR_FORMAT, "merge '%s'", cases[k][0]);
            cr_assert(strstr(err.msg, "merge 1") && strstr(err.msg, cases[k][1]), "%s", err.msg);
        }
        tg_vocab_free(&v);
    }
}
