/* fuzz_hf.c — libFuzzer target: a Hugging Face GPT-2 folder's text files
 * (config.json, vocab.json, merges.txt) and the GPT-2 tokenizer built from
 * the vocabulary and merges they give; config.json also as a Llama's.
 *
 * The input is the three files joined by SEP (config first); missing parts
 * are empty. Any input must give TG_OK or a clean error; a vocabulary that
 * loads and builds a tokenizer must encode a fixed text and the input's
 * first bytes to ids in range that decode without error. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/tokenizer.h"
#include "weights/hf_llama.h"
#include "weights/internal.h"

#define SEP "\n=====\n"

/* The next part of [*p, end) up to SEP (or the end), as an exact-size copy
 * so reading one byte past it is caught. */
static char *next_part(const uint8_t **p, const uint8_t *end, size_t *len) {
    const uint8_t *q = *p, *hit = NULL;
    size_t ls = sizeof SEP - 1;
    for (const uint8_t *s = q; s + ls <= end; s++)
        if (!memcmp(s, SEP, ls)) {
            hit = s;
            break;
        }
    size_t n = (size_t)((hit ? hit : end) - q);
    *p = hit ? hit + ls : end;
    char *b = malloc(n ? n : 1);
    if (b) memcpy(b, q, n);
    *len = n;
    return b;
}

static void encode_checked(tg_tokenizer *t, const char *s, size_t n, int special) {
    int *ids;
    size_t n_ids;
    tg_err err;
    if (tg_tokenizer_encode(t, s, n, special, &ids, &n_ids, &err)) return; /* e.g. a byte with no token */
    int V = tg_tokenizer_n_vocab(t);
    for (size_t i = 0; i < n_ids; i++)
        if (ids[i] < 0 || ids[i] >= V) abort();
    char *back;
    size_t len;
    if (tg_tokenizer_decode(t, ids, n_ids, &back, &len, &err) == TG_OK) free(back);
    free(ids);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const uint8_t *p = data, *end = data + size;
    size_t lc, lv, lm;
    char *cj = next_part(&p, end, &lc), *vj = next_part(&p, end, &lv), *mt = next_part(&p, end, &lm);
    tg_err err;
    if (cj && vj && mt) {
        tg_gpt2_config cfg;
        memset(&cfg, 0, sizeof cfg);
        int bos = 0, eos = 0, n_min = 0;
        /* the same config.json as a Llama's (weights/hf_llama.c) */
        tg_model_config lcfg;
        int lbos, leos, tie;
        (void)tg_hf_llama_config_parse(&lcfg, &lbos, &leos, &tie, cj, lc, "fuzz/config.json", &err);
        if (hf_config_parse(&cfg, &bos, &eos, cj, lc, "fuzz/config.json", &err) == TG_OK)
            n_min = cfg.n_vocab < (1 << 16) ? cfg.n_vocab : 0; /* pads the vocabulary like hf_load */
        tg_vocab v;
        if (hf_vocab_parse(&v, vj, lv, mt, lm, n_min, "fuzz", &err) == TG_OK) {
            tg_tokenizer *t;
            if (tg_tokenizer_create(&t, &v, &err) == TG_OK) {
                static const char text[] = "Hello world, it's <|endoftext|> caf\xc3\xa9  \n\n123";
                encode_checked(t, text, sizeof text - 1, 1);
                encode_checked(t, (const char *)data, size < 256 ? size : 256, 0);
                tg_tokenizer_free(t);
            }
            tg_vocab_free(&v);
        }
    }
    free(cj);
    free(vj);
    free(mt);
    return 0;
}
