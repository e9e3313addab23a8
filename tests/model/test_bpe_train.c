/* test_bpe_train.c — BPE training against a brute-force trainer.
 *
 * The reference recounts every pair over every word at every step (no
 * incremental bookkeeping), picks the highest count (ties: smaller left id,
 * then smaller right id), and merges it left to right in every word. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/bpe_train.h"
#include "model/tokenizer.h"
#include "weights/gpt2.h"

/* ---- the brute-force trainer ---- */

typedef struct ref_word {
    int *sym;
    int n;
    long count;
    char *text;
    size_t len;
} ref_word;

typedef struct ref {
    ref_word *w;
    int n_words;
    char **tok; /* token bytes */
    size_t *tok_len;
    int n_tok;
    int (*merges)[2];
    int n_merges;
} ref;

static tg_status ref_count(void *user, const char *s, size_t n, tg_err *err) {
    ref *r = user;
    for (int i = 0; i < r->n_words; i++)
        if (r->w[i].len == n && !memcmp(r->w[i].text, s, n)) {
            r->w[i].count++;
            return TG_OK;
        }
    r->w = realloc(r->w, (size_t)(r->n_words + 1) * sizeof *r->w);
    ref_word *w = &r->w[r->n_words++];
    w->text = malloc(n);
    memcpy(w->text, s, n);
    w->len = n;
    w->count = 1;
    w->n = (int)n;
    w->sym = malloc(n * sizeof(int));
    for (size_t i = 0; i < n; i++) w->sym[i] = (uint8_t)s[i];
    (void)err;
    return TG_OK;
}

static void ref_train(ref *r, const char *text, size_t len, int n_vocab) {
    memset(r, 0, sizeof *r);
    tg_pretok *pre;
    tg_err err;
    cr_assert_eq(tg_pretok_create(&pre, &err), TG_OK);
    cr_assert_eq(tg_pretok_split(pre, text, len, ref_count, r, &err), TG_OK);
    tg_pretok_free(pre);
    r->tok = malloc((size_t)n_vocab * sizeof(char *));
    r->tok_len = malloc((size_t)n_vocab * sizeof(size_t));
    r->merges = malloc(100000 * sizeof *r->merges);
    for (int b = 0; b < 256; b++) {
        r->tok[b] = malloc(1);
        r->tok[b][0] = (char)b;
        r->tok_len[b] = 1;
    }
    r->n_tok = 256;
    int done_cap = 100000, n_done = 0;
    int (*done)[2] = malloc((size_t)done_cap * sizeof *done);
    while (r->n_tok < n_vocab - 1) {
        long best = 0;
        int ba = -1, bb = -1;
        /* every adjacent pair of every word is a candidate; count it by
         * scanning all words again */
        for (int i = 0; i < r->n_words; i++)
            for (int k = 0; k + 1 < r->w[i].n; k++) {
                int a = r->w[i].sym[k], b = r->w[i].sym[k + 1];
                long c = 0;
                for (int i2 = 0; i2 < r->n_words; i2++)
                    for (int k2 = 0; k2 + 1 < r->w[i2].n; k2++)
                        c += (r->w[i2].sym[k2] == a && r->w[i2].sym[k2 + 1] == b) * r->w[i2].count;
                if (c > best || (c == best && (a < ba || (a == ba && b < bb)))) {
                    best = c;
                    ba = a;
                    bb = b;
                }
            }
        if (best == 0) break;
        size_t l = r->tok_len[ba] + r->tok_len[bb];
        char *s = malloc(l);
        memcpy(s, r->tok[ba], r->tok_len[ba]);
        memcpy(s + r->tok_len[ba], r->tok[bb], r->tok_len[bb]);
        int m = -1;
        for (int i = 0; i < r->n_tok && m < 0; i++)
            if (r->tok_len[i] == l && !memcmp(r->tok[i], s, l)) m = i;
        if (m < 0) {
            m = r->n_tok++;
            r->tok[m] = s;
            r->tok_len[m] = l;
        } else {
            free(s);
        }
        int seen = 0;
        for (int i = 0; i < n_done; i++) seen |= done[i][0] == ba && done[i][1] == bb;
        if (!seen) {
            done[n_done][0] = ba;
            done[n_done++][1] = bb;
            r->merges[r->n_merges][0] = ba;
            r->merges[r->n_merges++][1] = bb;
        }
        for (int i = 0; i < r->n_words; i++) {
            ref_word *w = &r->w[i];
            int k = 0;
            for (int j = 0; j < w->n;) {
                if (j + 1 < w->n && w->sym[j] == ba && w->sym[j + 1] == bb) {
                    w->sym[k++] = m;
                    j += 2;
                } else {
                    w->sym[k++] = w->sym[j++];
                }
            }
            w->n = k;
        }
    }
    free(done);
}

static void ref_free(ref *r) {
    for (int i = 0; i < r->n_words; i++) {
        free(r->w[i].sym);
        free(r->w[i].text);
    }
    for (int i = 0; i < r->n_tok; i++) free(r->tok[i]);
    free(r->w);
    free(r->tok);
    free(r->tok_len);
    free(r->merges);
}

static char *vocab_str(const char *b, size_t n) {
    char *s = malloc(2 * n + 1), *p = s;
    for (size_t i = 0; i < n; i++) p += tg_gpt2_byte_to_utf8((uint8_t)b[i], p);
    *p = 0;
    return s;
}

static void check_against_ref(const char *text, size_t len, int n_vocab) {
    tg_vocab v;
    tg_err err = {{0}};
    cr_assert_eq(tg_bpe_train(text, len, n_vocab, &v, &err), TG_OK, "%s", err.msg);
    ref r;
    ref_train(&r, text, len, n_vocab);
    cr_assert_eq(v.n_tokens, r.n_tok + 1, "N=%d: %d tokens, reference %d + 1", n_vocab, v.n_tokens, r.n_tok);
    cr_assert_leq(v.n_tokens, n_vocab);
    for (int i = 0; i < r.n_tok; i++) {
        char *want = vocab_str(r.tok[i], r.tok_len[i]);
        cr_assert_str_eq(v.tokens[i], want, "N=%d token %d", n_vocab, i);
        cr_assert_eq(v.token_type[i], 1);
        free(want);
    }
    cr_assert_str_eq(v.tokens[r.n_tok], "<|endoftext|>");
    cr_assert_eq(v.token_type[r.n_tok], 3);
    cr_assert_eq(v.eos_id, r.n_tok);
    cr_assert_eq(v.bos_id, r.n_tok);
    cr_assert_eq(v.n_merges, r.n_merges, "N=%d: %d merges, reference %d", n_vocab, v.n_merges, r.n_merges);
    for (int i = 0; i < r.n_merges; i++) {
        char buf[256];
        snprintf(buf, sizeof buf, "%s %s", v.tokens[r.merges[i][0]], v.tokens[r.merges[i][1]]);
        cr_assert_str_eq(v.merges[i], buf, "N=%d merge %d", n_vocab, i);
    }
    ref_free(&r);
    tg_vocab_free(&v);
}

static uint64_t rng_next(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

Test(bpe_train, matches_bruteforce_trainer) {
    const char *text =
        "the cat sat on the mat; the cat's hat is that hat.\n"
        "aaaa aaa aa a  banana bandana\n\n  tatata 123 1234 12 \xc3\xa9t\xc3\xa9 \xc3\xa9t\xc3\xa9!!\n";
    for (int n = 257; n <= 320; n += 9) check_against_ref(text, strlen(text), n);
    /* random texts over a small alphabet: many ties, repeated pairs and
     * merges whose result spells an existing token */
    uint64_t s = 42;
    for (int trial = 0; trial < 6; trial++) {
        char buf[400];
        size_t n = 100 + (size_t)(rng_next(&s) % 300);
        static const char alpha[] = "aab ba\n'";
        for (size_t i = 0; i < n; i++) buf[i] = alpha[rng_next(&s) % (sizeof alpha - 1)];
        check_against_ref(buf, n, 257 + (int)(rng_next(&s) % 60));
    }
}

Test(bpe_train, vocab_size_bounds) {
    tg_vocab v;
    tg_err err = {{0}};
    cr_assert_eq(tg_bpe_train("abc", 3, 256, &v, &err), TG_ERR_RANGE);
    cr_assert(strstr(err.msg, "256"), "%s", err.msg);
    cr_assert_eq(tg_bpe_train("abc", 3, TG_BPE_MAX_VOCAB + 1, &v, &err), TG_ERR_RANGE);
    cr_assert_eq(tg_bpe_train("abc", 3, -5, &v, &err), TG_ERR_RANGE);
    /* 257: the bytes and <|endoftext|>, no merge */
    cr_assert_eq(tg_bpe_train("abcabc", 6, 257, &v, &err), TG_OK, "%s", err.msg);
    cr_assert_eq(v.n_tokens, 257);
    cr_assert_eq(v.n_merges, 0);
    tg_vocab_free(&v);
    /* an empty text, or one that runs out of pairs, stops early */
    cr_assert_eq(tg_bpe_train("", 0, 1000, &v, &err), TG_OK, "%s", err.msg);
    cr_assert_eq(v.n_tokens, 257);
    tg_vocab_free(&v);
    cr_assert_eq(tg_bpe_train("abcd", 4, 1000, &v, &err), TG_OK, "%s", err.msg);
    cr_assert_eq(v.n_merges, 3);
    cr_assert_str_eq(v.tokens[v.n_tokens - 2], "abcd");
    tg_vocab_free(&v);
}

static char *read_all(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    *len = fread(b, 1, (size_t)n, f);
    fclose(f);
    return b;
}

/* Trained on real text: deterministic, round-trips any bytes through the
 * tokenizer, compresses its own text, and survives a GGUF save and load. */
Test(bpe_train, trained_vocab_works_in_the_tokenizer) {
    size_t len;
    char *text = read_all(TG_TEST_DATA "/torture.txt", &len);
    cr_assert_not_null(text, "cannot read %s", TG_TEST_DATA "/torture.txt");
    tg_vocab v, v2;
    tg_err err = {{0}};
    cr_assert_eq(tg_bpe_train(text, len, 700, &v, &err), TG_OK, "%s", err.msg);
    cr_assert_eq(v.n_tokens, 700);
    cr_assert_eq(tg_bpe_train(text, len, 700, &v2, &err), TG_OK);
    for (int i = 0; i < v.n_merges; i++) cr_assert_str_eq(v.merges[i], v2.merges[i], "deterministic");
    tg_vocab_free(&v2);

    tg_tokenizer *t;
    cr_assert_eq(tg_tokenizer_create(&t, &v, &err), TG_OK, "%s", err.msg);
    int *ids;
    size_t n_ids;
    cr_assert_eq(tg_tokenizer_encode(t, text, len, 0, &ids, &n_ids, &err), TG_OK);
    cr_assert_lt(n_ids, len / 2, "%zu tokens for %zu bytes", n_ids, len);
    free(ids);
    uint64_t s = 3;
    for (int k = 0; k < 100; k++) {
        char buf[300];
        size_t n = (size_t)(rng_next(&s) % sizeof buf);
        for (size_t i = 0; i < n; i++) buf[i] = k % 2 ? (char)rng_next(&s) : text[rng_next(&s) % len];
        cr_assert_eq(tg_tokenizer_encode(t, buf, n, 1, &ids, &n_ids, &err), TG_OK);
        char *back;
        size_t blen;
        cr_assert_eq(tg_tokenizer_decode(t, ids, n_ids, &back, &blen, &err), TG_OK);
        cr_assert(blen == n && !memcmp(back, buf, n), "round trip");
        free(back);
        free(ids);
    }

    char dir[] = "/tmp/tg_bpe_XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char path[64];
    snprintf(path, sizeof path, "%s/vocab.gguf", dir);
    tg_gpt2_config cfg = {0};
    cr_assert_eq(tg_gpt2_save(path, &cfg, NULL, &v, TG_DTYPE_F32, &err), TG_OK, "%s", err.msg);
    tg_gpt2_model m;
    cr_assert_eq(tg_gpt2_load(&m, path, 1, &err), TG_OK, "%s", err.msg);
    unlink(path);
    rmdir(dir);
    cr_assert_eq(m.vocab.n_tokens, v.n_tokens);
    cr_assert_eq(m.vocab.n_merges, v.n_merges);
    cr_assert_eq(m.vocab.eos_id, v.eos_id);
    for (int i = 0; i < v.n_tokens; i++) cr_assert_str_eq(m.vocab.tokens[i], v.tokens[i]);
    for (int i = 0; i < v.n_merges; i++) cr_assert_str_eq(m.vocab.merges[i], v.merges[i]);
    tg_gpt2_free(&m);
    tg_tokenizer_free(t);
    tg_vocab_free(&v);
    free(text);
}
