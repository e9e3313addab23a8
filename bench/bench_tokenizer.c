/* bench_tokenizer.c — BPE training and encoding speed on a text (default:
 * Tiny Shakespeare from shared/ beside the source tree).
 *
 *   bench_tokenizer [TEXT] [--vocab DIR_OR_GGUF] [--spm TOKENIZER] [--spm-only]
 *
 * Rows (best of 5, process CPU time, so a loaded machine reads about like an
 * idle core):
 *   - training a vocabulary of N tokens on the whole text;
 *   - encoding the text with it (a fresh tokenizer each time, so the word
 *     cache starts empty), against the pre-tokenizer alone (the PCRE2
 *     split every encode starts with) measured in the same run: the ratio
 *     says what the merges and the cache add on top of the regex;
 *   - with --vocab (e.g. GPT-2's, a Hugging Face folder), the same for it;
 *   - SentencePiece-style BPE (--spm TOKENIZER, default llama2.c's
 *     tok512.bin from shared/): the heap encoder on growing prefixes of the
 *     text against llama2.c's algorithm as it is defined (rescan every
 *     adjacent pair after each merge, O(n²)), written here as the baseline,
 *     same run, same ids checked.
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

/* llama2.c's encode as defined: characters, byte fallback, then merge the
 * best-scoring adjacent pair, rescanning all pairs each time. Pieces are
 * looked up through the tokenizer (▁ for a space). Returns the id count. */
static size_t spm_quadratic(const tg_tokenizer *t, const tg_vocab *v, const char *text, size_t len,
                            int *ids) {
    size_t n = 0;
    char buf[512];
    ids[n++] = v->bos_id;
    if (len) ids[n++] = tg_tokenizer_token_id(t, "\xe2\x96\x81");
    for (size_t i = 0; i < len;) {
        size_t j = i + 1;
        while (j < len && ((unsigned char)text[j] & 0xC0) == 0x80 && j - i < 4) j++;
        size_t k = 0;
        for (size_t c = i; c < j; c++) {
            if (text[c] == ' ') memcpy(buf + k, "\xe2\x96\x81", 3), k += 3;
            else buf[k++] = text[c];
        }
        buf[k] = 0;
        int id = tg_tokenizer_token_id(t, buf);
        if (id >= 0) ids[n++] = id;
        else
            for (size_t c = i; c < j; c++) {
                snprintf(buf, sizeof buf, "<0x%02X>", (unsigned char)text[c]);
                ids[n++] = tg_tokenizer_token_id(t, buf);
            }
        i = j;
    }
    for (;;) {
        float best = -1e10f;
        int best_id = -1;
        size_t best_i = 0;
        for (size_t i = 1; i + 1 < n; i++) { /* BOS never merges */
            size_t la = strlen(v->tokens[ids[i]]), lb = strlen(v->tokens[ids[i + 1]]);
            if (la + lb >= sizeof buf) continue;
            memcpy(buf, v->tokens[ids[i]], la);
            memcpy(buf + la, v->tokens[ids[i + 1]], lb + 1);
            int id = tg_tokenizer_token_id(t, buf);
            if (id >= 0 && v->scores[id] > best) best = v->scores[id], best_id = id, best_i = i;
        }
        if (best_id < 0) break;
        ids[best_i] = best_id;
        memmove(ids + best_i + 1, ids + best_i + 2, (n - best_i - 2) * sizeof *ids);
        n--;
    }
    return n;
}

static void bench_spm(const char *path, const char *text, size_t len) {
    tg_vocab v;
    tg_err err;
    tg_tokenizer *t;
    if (tg_vocab_load(&v, path, &err) || v.kind != TG_VOCAB_SPM || tg_tokenizer_create(&t, &v, &err)) {
        printf("\n(SentencePiece rows skipped: %s)\n", v.kind != TG_VOCAB_SPM ? "not a SentencePiece vocabulary" : err.msg);
        return;
    }
    printf("\nSentencePiece BPE, %s (%d tokens): heap encoder vs llama2.c's rescan, CPU s, best of 5\n", path,
           v.n_tokens);
    printf("%10s %9s %11s %11s %9s %6s\n", "bytes", "tokens", "heap s", "rescan s", "speed-up", "same");
    int *ref = malloc((len + 2) * sizeof *ref);
    for (size_t n = 1024; ref && n <= len && n <= (16u << 10); n *= 4) {
        double best_h = 1e30, best_q = 1e30;
        int *ids = NULL;
        size_t n_ids = 0, n_ref = 0;
        for (int rep = 0; rep < 5; rep++) {
            free(ids);
            double t0 = cpu_now();
            tg_tokenizer_encode_ex(t, text, n, TG_ENCODE_BOS, &ids, &n_ids, &err);
            double t1 = cpu_now();
            if (rep < 2 || n <= (4u << 10)) n_ref = spm_quadratic(t, &v, text, n, ref);
            double t2 = cpu_now();
            if (t1 - t0 < best_h) best_h = t1 - t0;
            if ((rep < 2 || n <= (4u << 10)) && t2 - t1 < best_q) best_q = t2 - t1;
        }
        int same = n_ids == n_ref && !memcmp(ids, ref, n_ids * sizeof *ids);
        printf("%10zu %9zu %11.5f %11.5f %8.1fx %6s\n", n, n_ids, best_h, best_q, best_q / best_h,
               same ? "yes" : "NO");
        free(ids);
    }
    /* the whole text: the heap alone (the rescan would take hours) */
    double best_h = 1e30;
    size_t n_ids = 0;
    for (int rep = 0; rep < 5; rep++) {
        int *ids;
        double t0 = cpu_now();
        tg_tokenizer_encode_ex(t, text, len, TG_ENCODE_BOS, &ids, &n_ids, &err);
        double t1 = cpu_now() - t0;
        free(ids);
        if (t1 < best_h) best_h = t1;
    }
    printf("%10zu %9zu %11.5f %11s %9s %6s  (%.1f MB/s)\n", len, n_ids, best_h, "-", "-", "-",
           len / best_h / 1e6);
    free(ref);
    tg_tokenizer_free(t);
    tg_vocab_free(&v);
}

int main(int argc, char **argv) {
    const char *path = TINYGPT_SOURCE_DIR "/../shared/data/tinyshakespeare/input.txt", *vocab_path = NULL;
    const char *spm_path = TINYGPT_SOURCE_DIR "/../shared/data/stories260K/tok512.bin";
    int spm_only = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--vocab") && i + 1 < argc) vocab_path = argv[++i];
        else if (!strcmp(argv[i], "--spm") && i + 1 < argc) spm_path = argv[++i];
        else if (!strcmp(argv[i], "--spm-only")) spm_only = 1;
        else path = argv[i];
    }
    size_t len;
    char *text = read_all(path, &len);
    if (!text) {
        fprintf(stderr, "bench_tokenizer: cannot read %s (pass a text file)\n", path);
        return 1;
    }
    printf("text: %s (%zu bytes); CPU time, best of 5\n\n", path, len);
    if (spm_only) {
        bench_spm(spm_path, text, len);
        free(text);
        return 0;
    }
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
    bench_spm(spm_path, text, len);
    free(text);
    return 0;
}
