/* test_large_merges.c — a 200,000-line merges.txt parses in linear time.
 *
 * Not a timing assertion: its meson test has a 60 s timeout that only a
 * quadratic parser blows. Under ASan with strict_string_checks=1 (as .ci/run
 * runs the suite) every strchr checks the whole rest of the buffer, so
 * splitting lines with strchr cost ~200,000 x 1.5 MB on average here (minutes);
 * with memchr bounded by each line it is one pass (well under a second). */
#include <criterion/criterion.h>

#include "tests/weights/testutil.h"

#define LINES 200000

Test(large_merges, parses_in_one_pass) {
    char *dir = test_tmpdir();
    const char *vocab = "{\"a\": 0, \"b\": 1, \"<|endoftext|>\": 2}";
    test_write(dir, "vocab.json", vocab, strlen(vocab));
    size_t cap = (size_t)LINES * 24 + 64, n = 0;
    char *txt = malloc(cap);
    n += (size_t)snprintf(txt + n, cap - n, "#version: 0.2\n");
    for (int i = 0; i < LINES; i++)
        n += (size_t)snprintf(txt + n, cap - n, "a%d b%d%s", i, i, i % 2 ? "\r\n" : "\n");
    test_write(dir, "merges.txt", txt, n);
    free(txt);
    tg_vocab v;
    tg_err err;
    cr_assert_eq(tg_vocab_load_hf(&v, dir, 0, &err), TG_OK, "%s", err.msg);
    cr_assert_eq(v.n_merges, LINES);
    cr_assert_str_eq(v.merges[0], "a0 b0");
    cr_assert_str_eq(v.merges[1], "a1 b1", "CR stripped");
    cr_assert_str_eq(v.merges[LINES - 1], "a199999 b199999");
    tg_vocab_free(&v);
    test_rmdir(dir);
    free(dir);
}
