/* bench_tokenizer.c — BPE training and encoding speed on a text (default:
 * Tiny Shakespeare from shared/ beside the source tree).
 *
 *   bench_tokenizer [TEXT] [--vocab DIR_OR_GGUF]
 *
 * Rows (best of 5, process CPU time, so a loaded machine reads about like an
 * idle core):
 *   - training a vocabulary of N tokens on the whole text;
 *   - encoding the text with it (a fresh tokenizer each time, so the word
 *     cache starts empty), against the pre-tokenizer alone (the PCRE2
 *     split every encode starts with) measured in the same run: the ratio
 *     says what the merges and the cache add on top of the regex;
 *   - with --vocab (e.g. GPT-2's, a Hugging Face folder), the same for it.
 * Reports only; nothing is asserted. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model/bpe_train.h"
#include "model/tokenizer.h"
#include "weights/gpt2.h"

static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static tg_status count_piece(void *user, const char *w, size_t n, tg_err *err) {
    (void)w, (void)n, (void)err;
    ++*(size_t *)user;
    return TG_OK;
}

static char *read_all(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = n >= 0 ? malloc((size_t)n + 1) : NULL;
    *len = b ? fread(b, 1, (size_t)n, f) : 0;
    fclose(f);
    return b;
}

/* Best-of-5 CPU seconds to pre-tokenize and to encode text with a fresh
 * tokenizer for the vocabulary (so the word cache starts empty each time). */
static void bench_encode(const char *name, const tg_vocab *v, const char *text, size_t len) {
    tg_err err;
    tg_pretok *pre;
    tg_tokenizer *tok = NULL;
    if (tg_pretok_create(&pre, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        exit(1);
    }
    double best_pre = 1e30, best_enc = 1e30;
    size_t n_pieces = 0, n_ids = 0;
    for (int rep = 0; rep < 5; rep++) {
        n_pieces = 0;
        double t0 = cpu_now();
        tg_pretok_split(pre, text, len, count_piece, &n_pieces, &err);
        double t_pre = cpu_now() - t0, t1;
        int *ids;
        tg_tokenizer_free(tok);
        if (tg_tokenizer_create(&tok, v, &err)) {
            fprintf(stderr, "%s\n", err.msg);
            exit(1);
        }
        t1 = cpu_now();
        if (tg_tokenizer_encode(tok, text, len, 0, &ids, &n_ids, &err)) {
            fprintf(stderr, "%s\n", err.msg);
            exit(1);
        }
        double t2 = cpu_now();
        free(ids);
        if (t_pre < best_pre) best_pre = t_pre;
        if (t2 - t1 < best_enc) best_enc = t2 - t1;
    }
    tg_pretok_free(pre);
    int n_vocab = tg_tokenizer_n_vocab(tok);
    tg_tokenizer_free(tok);
    printf("%-22s %7d %9zu %8.2f %9.1f %10.2f %9.1f %7.2fx\n", name, n_vocab, n_ids,
           (double)len / n_ids, len / best_enc / 1e6, n_ids / best_enc / 1e6, len / best_pre / 1e6,
           best_enc / best_pre);
}

int main(int argc, char **argv) {
    const char *path = TINYGPT_SOURCE_DIR "/../shared/data/tinyshakespeare/input.txt", *vocab_path = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--vocab") && i + 1 < argc) vocab_path = argv[++i];
        else path = argv[i];
    }
    size_t len;
    char *text = read_all(path, &len);
    if (!text) {
        fprintf(stderr, "bench_tokenizer: cannot read %s (pass a text file)\n", path);
        return 1;
    }
    printf("text: %s (%zu bytes); CPU time, best of 5\n\n", path, len);
    printf("%-8s %10s %8s\n", "train N", "merges", "cpu s");
    tg_vocab trained[3];
    const int sizes[3] = {1024, 4096, 16384};
    tg_err err;
    for (int k = 0; k < 3; k++) {
        double best = 1e30;
        for (int rep = 0; rep < 5; rep++) {
            double t0 = cpu_now();
            if (tg_bpe_train(text, len, sizes[k], &trained[k], &err)) {
                fprintf(stderr, "%s\n", err.msg);
                return 1;
            }
            double t = cpu_now() - t0;
            if (t < best) best = t;
            if (rep < 4) tg_vocab_free(&trained[k]);
        }
        printf("%-8d %10d %8.3f\n", sizes[k], trained[k].n_merges, best);
    }

    printf("\n%-22s %7s %9s %8s %9s %10s %9s %8s\n", "encode with", "vocab", "tokens", "B/token",
           "MB/s", "Mtok/s", "regex MB/s", "vs regex");
    for (int k = 0; k < 3; k++) {
        char name[32];
        snprintf(name, sizeof name, "trained N=%d", sizes[k]);
        bench_encode(name, &trained[k], text, len);
        tg_vocab_free(&trained[k]);
    }
    if (vocab_path) {
        tg_gpt2_model m;
        if (tg_gpt2_load(&m, vocab_path, 1, &err)) {
            fprintf(stderr, "%s\n", err.msg);
            return 1;
        }
        bench_encode("--vocab", &m.vocab, text, len);
        tg_gpt2_free(&m);
    }
    free(text);
    return 0;
}
