/* test_stream.c — generate's streaming output (tools/stream.c): whatever the
 * chunking of the bytes, after every call the output is exactly the longest
 * prefix of the input that does not end inside a still-completable UTF-8
 * character (as tg_utf8_complete defines it, on the whole input so far), and
 * after stream_finish it is the input, byte for byte. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/tokenizer.h"
#include "tools/stream.h"

/* 1-, 2-, 3- and 4-byte characters, invalid bytes, overlong and surrogate
 * leads, a lone continuation byte, and a truncated character at the end. */
static const char text[] =
    "a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80 \xff\xc3(\xe0\x80\xed\xa0\x80\x80"
    "z\xf4\x90\x80\xc3\xa9\xe4\xb8\xad\xe6\x96\x87\xf0\x9f\x91\x8d\xe2\x82";

static void run(const size_t *cuts, size_t n_cuts) {
    size_t len = sizeof text - 1;
    char *out = NULL;
    size_t out_len = 0;
    FILE *f = open_memstream(&out, &out_len);
    cr_assert(f);
    text_stream s;
    stream_init(&s, f);
    size_t pos = 0;
    for (size_t c = 0; c <= n_cuts; c++) {
        size_t end = c < n_cuts ? cuts[c] : len;
        stream_put(&s, text + pos, end - pos);
        pos = end;
        size_t want = tg_utf8_complete(text, pos);
        cr_assert_eq(out_len, want, "after %zu bytes: %zu written, want %zu", pos, out_len, want);
        cr_assert(out_len == 0 || !memcmp(out, text, out_len), "output is a prefix of the input");
    }
    stream_finish(&s);
    cr_assert_eq(out_len, len);
    cr_assert(!memcmp(out, text, len));
    fclose(f);
    free(out);
}

Test(stream, one_byte_at_a_time) {
    size_t cuts[sizeof text];
    for (size_t i = 0; i < sizeof text - 1; i++) cuts[i] = i;
    run(cuts, sizeof text - 1);
}

Test(stream, all_at_once) { run(NULL, 0); }

Test(stream, every_pair_of_cuts) {
    size_t len = sizeof text - 1;
    for (size_t a = 0; a <= len; a++)
        for (size_t b = a; b <= len; b++) {
            size_t cuts[2] = {a, b};
            run(cuts, 2);
        }
}

Test(stream, random_chunks) {
    srand(5);
    size_t len = sizeof text - 1;
    for (int r = 0; r < 200; r++) {
        size_t cuts[64], n = 0, pos = 0;
        while (n < 64) {
            pos += (size_t)(rand() % 5);
            if (pos > len) break;
            cuts[n++] = pos;
        }
        run(cuts, n);
    }
}
