/* cli_dir.h — the scratch directory of the tests that run the built
 * `tinygpt` (test_train_cli.c, test_train_llama_cli.c, test_task.c): a
 * fresh /tmp directory per test (Criterion .init/.fini), a generated text
 * in it, the command run there with its output in out.txt and err.txt,
 * and what it wrote read back. `dir` is the directory's path. */
#ifndef TINYGPT_TESTS_CLI_DIR_H
#define TINYGPT_TESTS_CLI_DIR_H

#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

static char dir[64];

/* mkdtemp of tmpl ("/tmp/NAMEXXXXXX") into dir */
static inline void cli_dir_make(const char *tmpl) {
    snprintf(dir, sizeof dir, "%s", tmpl);
    cr_assert(mkdtemp(dir), "cannot make %s", tmpl);
}

static inline void cli_dir_remove(void) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

/* dir/NAME: n words drawn from words[16] by a 64-bit LCG from seed, each
 * followed by a space, or by sep every `every`-th draw on average (the
 * generator's bits 40+ modulo every being 0); returns its length. */
static inline size_t cli_write_text(const char *name, const char *const words[16], uint64_t seed,
                                    int n, int every, const char *sep) {
    char p[128];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    cr_assert(f);
    uint64_t s = seed;
    for (int i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        fprintf(f, "%s%s", words[(s >> 33) % 16], (s >> 40) % (uint64_t)every ? " " : sep);
    }
    size_t len = (size_t)ftell(f);
    fclose(f);
    return len;
}

/* `tinygpt ARGS` in dir, stdout to out.txt, stderr to err.txt; its exit
 * code (-1 if it did not exit) */
static inline int tinygpt_run(const char *args) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cd %s && %s %s > out.txt 2> err.txt", dir, TINYGPT_EXE, args);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* dir/NAME's first 4 MiB - 1 bytes, NUL-terminated (NULL if it cannot be
 * opened); *len its length when len is not NULL */
static inline char *slurp(const char *name, size_t *len) {
    char p[128];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "rb");
    if (!f) return NULL;
    char *buf = malloc(1 << 22);
    cr_assert(buf);
    size_t n = fread(buf, 1, (1 << 22) - 1, f);
    fclose(f);
    buf[n] = 0;
    if (len) *len = n;
    return buf;
}

static inline int exists(const char *name) {
    char p[128];
    struct stat st;
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return stat(p, &st) == 0;
}

static inline int same_file(const char *a, const char *b) {
    char cmd[256];
    snprintf(cmd, sizeof cmd, "cd %s && cmp -s %s %s", dir, a, b);
    return system(cmd) == 0;
}

/* The first `cols` columns of the CSV dir/NAME, one line per row (the
 * training log's step and loss columns, without the tokens/s that vary
 * from run to run). */
static inline char *csv_columns(const char *name, int cols) {
    char *csv = slurp(name, NULL);
    cr_assert(csv, "%s missing", name);
    char *out = calloc(1, strlen(csv) + 1), *o = out;
    for (char *line = strtok(csv, "\n"); line; line = strtok(NULL, "\n")) {
        int commas = 0;
        for (char *c = line; *c && commas < cols; c++) {
            if (*c == ',') commas++;
            if (commas < cols) *o++ = *c;
        }
        *o++ = '\n';
    }
    free(csv);
    return out;
}

#endif
