/* fuzz_tokenizer.c — libFuzzer target for the BPE tokenizer.
 *
 * Any input bytes must encode without error (with and without special-token
 * parsing), every id must be in range, decoding must give back the input
 * byte for byte, and streaming the pieces through tg_utf8_complete must
 * print the same bytes while never holding back more than 3. With the first
 * byte's low bit set, a small vocabulary is also trained on the input itself
 * and the same checks run with it (fuzzing the trainer too).
 *
 * The main vocabulary is trained once at start-up on a fixed multilingual
 * text, so it has real merges over ASCII, Latin, Greek, CJK and emoji. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/bpe_train.h"
#include "model/tokenizer.h"

static const char SEED_TEXT[] =
    "The quick brown fox jumps over the lazy dog. It's what we've said, they'll do, I'd go.\n"
    "  Leading spaces,\ttabs\t\tand\r\nCRLF lines\n\n\n1234567890 3.14159 1,000,000\n"
    "caf\xc3\xa9 na\xc3\xafve \xc3\x9c""ber stra\xc3\x9f""e \xce\x95\xce\xbb\xce\xbb\xce\xb7\xce\xbd\xce\xb9\xce\xba\xce\xac "
    "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\xe3\x81\xae\xe3\x83\x86\xe3\x82\xad\xe3\x82\xb9\xe3\x83\x88 "
    "\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\xa4\x96 e\xcc\x81 \xd7\xa9\xd7\x9c\xd7\x95\xd7\x9d "
    "<|endoftext|> the the the and and and of of of to to to\n";

static tg_tokenizer *main_tok;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    tg_vocab v;
    tg_err err;
    if (tg_bpe_train(SEED_TEXT, sizeof SEED_TEXT - 1, 600, &v, &err) ||
        tg_tokenizer_create(&main_tok, &v, &err)) {
        fprintf(stderr, "fuzz_tokenizer: %s\n", err.msg);
        abort();
    }
    tg_vocab_free(&v);
    return 0;
}

static void check_round_trip(tg_tokenizer *t, const uint8_t *data, size_t size, int parse_special) {
    int *ids;
    size_t n;
    tg_err err;
    if (tg_tokenizer_encode(t, (const char *)data, size, parse_special, &ids, &n, &err)) {
        fprintf(stderr, "encode failed: %s\n", err.msg);
        abort();
    }
    int V = tg_tokenizer_n_vocab(t);
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= V) abort();
    if (n > size) abort(); /* every token covers at least one byte */
    char *back;
    size_t len;
    if (tg_tokenizer_decode(t, ids, n, &back, &len, &err)) abort();
    if (len != size || memcmp(back, data, size)) abort();
    free(back);

    /* streaming: emit what tg_utf8_complete allows after each piece */
    char *out = malloc(size + 1), hold[64];
    size_t n_out = 0, n_hold = 0;
    for (size_t i = 0; i < n; i++) {
        size_t pl;
        const char *p = tg_tokenizer_piece(t, ids[i], &pl);
        for (size_t k = 0; k < pl; k++) {
            if (n_hold == sizeof hold) abort();
            hold[n_hold++] = p[k];
            size_t ok = tg_utf8_complete(hold, n_hold);
            if (ok > n_hold || n_hold - ok > 3) abort();
            memcpy(out + n_out, hold, ok);
            n_out += ok;
            memmove(hold, hold + ok, n_hold - ok);
            n_hold -= ok;
        }
    }
    memcpy(out + n_out, hold, n_hold); /* end of stream: flush the tail */
    n_out += n_hold;
    if (n_out != size || memcmp(out, data, size)) abort();
    free(out);
    free(ids);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    check_round_trip(main_tok, data, size, 0);
    check_round_trip(main_tok, data, size, 1);
    if (size > 0 && size <= 512 && (data[0] & 1)) {
        tg_vocab v;
        tg_err err;
        tg_tokenizer *t;
        int n_vocab = 257 + data[size - 1];
        if (tg_bpe_train((const char *)data, size, n_vocab, &v, &err)) abort();
        if (v.n_tokens > n_vocab || v.n_tokens < 257) abort();
        if (tg_tokenizer_create(&t, &v, &err)) {
            fprintf(stderr, "trained vocabulary rejected: %s\n", err.msg);
            abort();
        }
        check_round_trip(t, data, size, 1);
        tg_tokenizer_free(t);
        tg_vocab_free(&v);
    }
    return 0;
}
