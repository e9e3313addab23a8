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

/* ---- stop strings (stop_filter) --------------------------------------------- */

typedef struct outbuf {
    char b[512];
    size_t n;
} outbuf;

static void collect(void *user, const char *p, size_t n) {
    outbuf *o = user;
    cr_assert(o->n + n <= sizeof o->b);
    memcpy(o->b + o->n, p, n);
    o->n += n;
}

/* The oracle, byte by byte: where the text is cut (the start of the stop
 * string that ends first, the longer of two ending together), or len; the
 * index of that string in *hit (-1 for none). */
static size_t oracle_cut(const char *t, size_t len, const char *const *stops, int n, int *hit) {
    *hit = -1;
    for (size_t end = 1; end <= len; end++) {
        size_t cut = SIZE_MAX;
        for (int k = 0; k < n; k++) {
            size_t l = strlen(stops[k]);
            if (l <= end && !memcmp(t + end - l, stops[k], l) && end - l < cut) {
                cut = end - l;
                *hit = k;
            }
        }
        if (cut != SIZE_MAX) return cut;
    }
    return len;
}

/* What may be printed of an unfinished text t[len] with no stop string in
 * it yet: all but the longest suffix that is a proper prefix of a stop. */
static size_t oracle_printable(const char *t, size_t len, const char *const *stops, int n) {
    for (size_t i = 0; i < len; i++)
        for (int k = 0; k < n; k++) {
            size_t l = strlen(stops[k]), tail = len - i;
            if (tail < l && !memcmp(t + i, stops[k], tail)) return i;
        }
    return len;
}

/* Feeds pieces[] one call each; checks the output after every call against
 * the oracles, and the end result (after stop_finish) against want. */
static void check_stops(const char *const *stops, int n, const char *const *pieces, int n_pieces,
                        const char *want, int want_hit) {
    outbuf o = {.n = 0};
    stop_filter f;
    cr_assert_eq(stop_init(&f, stops, n, collect, &o), 0);
    char text[512];
    size_t len = 0;
    int stopped = 0;
    for (int i = 0; i < n_pieces; i++) {
        size_t pl = strlen(pieces[i]);
        memcpy(text + len, pieces[i], pl);
        len += pl;
        int r = stop_put(&f, pieces[i], pl);
        int hit;
        size_t cut = oracle_cut(text, len, stops, n, &hit);
        if (stopped) {
            cr_assert_eq(r, 0, "after the stop, piece %d returns %d", i, r);
            continue;
        }
        if (hit >= 0) {
            cr_assert_eq(r, 1, "piece %d ('%s') completes stop %d", i, pieces[i], hit);
            cr_assert_eq(f.hit, hit);
            cr_assert(o.n == cut && !memcmp(o.b, text, cut), "printed %zu bytes, want %zu", o.n,
                      cut);
            stopped = 1;
        } else {
            size_t ok = oracle_printable(text, len, stops, n);
            cr_assert_eq(r, 0);
            cr_assert(o.n == ok && !memcmp(o.b, text, ok),
                      "after piece %d: printed %zu bytes ('%.*s'), want %zu", i, o.n, (int)o.n,
                      o.b, ok);
        }
    }
    stop_finish(&f);
    cr_assert(o.n == strlen(want) && !memcmp(o.b, want, o.n), "printed '%.*s', want '%s'",
              (int)o.n, o.b, want);
    cr_assert_eq(f.hit, want_hit);
    for (int k = 0; k < n; k++)
        cr_assert(!memmem(o.b, o.n, stops[k], strlen(stops[k])), "stop %d printed", k);
    stop_free(&f);
}

#define N_(a) (int)(sizeof(a) / sizeof(a)[0])

Test(stop, split_across_pieces) {
    const char *s[] = {"END"}, *p[] = {"abE", "N", "Dxyz", "more"};
    check_stops(s, 1, p, N_(p), "ab", 0);
}

Test(stop, partial_match_fails_then_the_real_one) {
    const char *s[] = {"abc"}, *p[] = {"xab", "ab", "c", "tail"};
    check_stops(s, 1, p, N_(p), "xab", 0);
    const char *s2[] = {"aab"}, *p2[] = {"a", "a", "a", "b"}; /* overlapping with itself */
    check_stops(s2, 1, p2, N_(p2), "a", 0);
    const char *p3[] = {"xa", "ay", "aa", "ab!"};
    check_stops(s2, 1, p3, N_(p3), "xaaya", 0);
}

Test(stop, at_the_very_first_piece) {
    const char *s[] = {"He"}, *p[] = {"Hello", "world"};
    check_stops(s, 1, p, N_(p), "", 0);
    const char *p2[] = {"H", "e"};
    check_stops(s, 1, p2, N_(p2), "", 0);
}

Test(stop, common_prefixes) {
    const char *s[] = {"abcd", "abx", "ab!"}, *p[] = {"ab", "c", "x", "a", "b", "x", "zz"};
    check_stops(s, 3, p, N_(p), "abcx", 1);
    /* one string inside another: the one that ends first wins... */
    const char *s2[] = {"abcd", "bc"}, *p2[] = {"a", "b", "c", "d"};
    check_stops(s2, 2, p2, N_(p2), "a", 1);
    /* ...however the bytes are cut */
    const char *p3[] = {"abcd"};
    check_stops(s2, 2, p3, N_(p3), "a", 1);
    /* two ending on the same byte: cut before the longer */
    const char *s4[] = {"bc", "abc"}, *p4[] = {"xab", "c"};
    check_stops(s4, 2, p4, N_(p4), "x", 1);
}

Test(stop, utf8_multibyte) {
    const char *s[] = {"\xe4\xb8\xad"}; /* 中 */
    const char *p[] = {"a\xc3", "\xa9\xe4", "\xb8", "\xad", "b"};
    check_stops(s, 1, p, N_(p), "a\xc3\xa9", 0);
    const char *s2[] = {"\xf0\x9f\x99\x82!"}; /* 🙂! */
    const char *p2[] = {"\xf0\x9f", "\x99\x82", "?", "\xf0", "\x9f\x99\x82", "!"};
    check_stops(s2, 1, p2, N_(p2), "\xf0\x9f\x99\x82?", 0);
}

Test(stop, no_match_prints_everything) {
    const char *s[] = {"xyz"}, *p[] = {"abx", "y"};
    check_stops(s, 1, p, N_(p), "abxy", -1);
    const char *p2[] = {"a", "b"};
    check_stops(NULL, 0, p2, N_(p2), "ab", -1);
}

/* Random texts over {a, b, c}, random stop strings and random cuts: the
 * result never depends on the cuts and always matches the oracle. */
Test(stop, random_against_the_oracle) {
    srand(11);
    for (int r = 0; r < 3000; r++) {
        char text[40], stop_buf[3][6];
        const char *stops[3];
        size_t len = (size_t)(rand() % 30);
        for (size_t i = 0; i < len; i++) text[i] = "abc"[rand() % 3];
        text[len] = 0;
        int n = 1 + rand() % 3;
        for (int k = 0; k < n; k++) {
            int l = 1 + rand() % 5;
            for (int i = 0; i < l; i++) stop_buf[k][i] = "abc"[rand() % 3];
            stop_buf[k][l] = 0;
            stops[k] = stop_buf[k];
        }
        char piece_buf[40][40];
        const char *pieces[40];
        int np = 0;
        for (size_t pos = 0; pos < len;) {
            size_t l = 1 + (size_t)(rand() % 4);
            if (l > len - pos) l = len - pos;
            memcpy(piece_buf[np], text + pos, l);
            piece_buf[np][l] = 0;
            pieces[np] = piece_buf[np];
            np++;
            pos += l;
        }
        int hit;
        size_t cut = oracle_cut(text, len, stops, n, &hit);
        char want[40];
        memcpy(want, text, cut);
        want[cut] = 0;
        check_stops(stops, n, pieces, np, want, hit);
    }
}

/* generate's batched flushes (flush_ns): a put right after a flush leaves
 * its bytes in the FILE's buffer; stream_finish writes the whole input. */
Test(stream, batched_flush) {
    size_t len = sizeof text - 1;
    char *out = NULL;
    size_t out_len = 0;
    FILE *f = open_memstream(&out, &out_len);
    cr_assert(f);
    text_stream s;
    stream_init(&s, f);
    s.flush_ns = 1000000000000LL; /* 1000 s: only the first put flushes */
    stream_put(&s, text, 1);
    cr_assert_eq(out_len, 1, "the first put flushes");
    for (size_t i = 1; i < len; i++) stream_put(&s, text + i, 1);
    cr_assert_eq(out_len, 1, "puts within flush_ns of a flush are not flushed (%zu written)", out_len);
    stream_finish(&s);
    cr_assert_eq(out_len, len);
    cr_assert(!memcmp(out, text, len));
    fclose(f);
    free(out);
}
