/* test_lib.c — a program that uses only the public header <tinygpt.h> and
 * links against libtinygpt (built twice: shared and static). Driven by
 * lib_test.py, which checks its output against the PyTorch reference.
 *
 *   test_lib MODEL TEXT OUT.f32 GREEDY.i32 N_GREEDY
 *
 * Writes the prefill logits [n, V] of TEXT's tokens to OUT and the greedy
 * continuation (N_GREEDY ids, through the KV cache) to GREEDY; checks the
 * API's own contracts (errors with messages, buffer sizes, round trips, two
 * handles on two threads at once) and exits non-zero naming what failed. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tinygpt.h>

static int failures;
#define CHECK(cond, ...)                                       \
    do {                                                       \
        if (!(cond)) {                                         \
            fprintf(stderr, "test_lib: FAIL %s: ", #cond);     \
            fprintf(stderr, __VA_ARGS__);                      \
            fputc('\n', stderr);                               \
            failures++;                                        \
        }                                                      \
    } while (0)

typedef struct job {
    const char *path, *text;
    float *logits; /* [V] last position */
    int status;
} job;

static void *run_job(void *p) {
    job *j = p;
    tinygpt *m;
    char err[TINYGPT_ERR_LEN];
    tinygpt_options o;
    tinygpt_options_init(&o);
    o.n_threads = 2;
    if ((j->status = tinygpt_open(&m, j->path, &o, err))) return NULL;
    int ids[512];
    size_t n;
    if (!(j->status = tinygpt_tokenize(m, j->text, strlen(j->text), 0, ids, 512, &n)))
        j->status = tinygpt_eval(m, ids, (int)n, 0, j->logits, 0);
    tinygpt_close(m);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: test_lib MODEL TEXT OUT.f32 GREEDY.i32 N\n");
        return 2;
    }
    const char *path = argv[1], *text = argv[2];
    int n_greedy = atoi(argv[5]);
    char err[TINYGPT_ERR_LEN] = "";
    tinygpt *m = NULL;

    /* Errors come with a message naming the file. */
    tinygpt_status s = tinygpt_open(&m, "/nonexistent/model.gguf", NULL, err);
    CHECK(s == TINYGPT_ERR_IO && m == NULL && strstr(err, "/nonexistent/model.gguf"),
          "status %d (%s), message '%s'", s, tinygpt_status_str(s), err);
    tinygpt_options o;
    tinygpt_options_init(&o);
    o.isa = "no-such-isa";
    s = tinygpt_open(&m, path, &o, err);
    CHECK(s != TINYGPT_OK && strstr(err, "no-such-isa"), "bad isa: %d '%s'", s, err);

    if ((s = tinygpt_open(&m, path, NULL, err))) {
        fprintf(stderr, "test_lib: %s\n", err);
        return 1;
    }
    int V = tinygpt_n_vocab(m), C = tinygpt_n_ctx(m);
    CHECK(V > 0 && C > 0 && tinygpt_n_layer(m) > 0 && tinygpt_n_head(m) > 0 &&
              tinygpt_n_embd(m) % tinygpt_n_head(m) == 0,
          "dims V=%d C=%d", V, C);
    CHECK(strcmp(tinygpt_version(), "0") > 0, "version '%s'", tinygpt_version());

    /* Tokenize: too small a buffer reports the size needed. */
    size_t len = strlen(text), n = 0, need = 0;
    int small[1];
    s = tinygpt_tokenize(m, text, len, 0, NULL, 0, &need); /* size query */
    CHECK(len == 0 || (s == TINYGPT_ERR_RANGE && need > 0 && *tinygpt_last_error(m)),
          "size query: %d need %zu", s, need);
    size_t need1 = 0;
    s = tinygpt_tokenize(m, text, len, 0, small, 1, &need1);
    CHECK(need < 2 || (s == TINYGPT_ERR_RANGE && need1 == need), "small buffer: %d need %zu", s,
          need1);
    int *ids = malloc((need + 1) * sizeof *ids);
    s = tinygpt_tokenize(m, text, len, 0, ids, need + 1, &n);
    CHECK(s == TINYGPT_OK && n == need, "tokenize: %d, %zu ids vs %zu", s, n, need);
    /* ... and detokenize gives the text back, byte for byte. */
    char *back = malloc(len + 1);
    size_t blen = 0;
    s = tinygpt_detokenize(m, ids, n, back, len + 1, &blen);
    CHECK(s == TINYGPT_OK && blen == len && !memcmp(back, text, len) && back[len] == 0,
          "round trip: %d, %zu bytes", s, blen);
    s = tinygpt_detokenize(m, ids, n, back, len > 0 ? len - 1 : 0, &blen);
    CHECK(len == 0 || (s == TINYGPT_ERR_RANGE && blen == len), "small text buffer: %d", s);
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        size_t pl = 0;
        CHECK(tinygpt_token_piece(m, ids[i], &pl) != NULL, "piece of %d", ids[i]);
        total += pl;
    }
    CHECK(total == len, "pieces add up to %zu bytes of %zu", total, len);
    CHECK(tinygpt_token_piece(m, V + 5, &blen) == NULL, "piece out of range");
    CHECK(tinygpt_utf8_complete("a\xc3", 2) == 1, "utf8_complete");

    /* Prefill logits for the reference; a bad call fails with a message. */
    float *logits = malloc((n + 1) * (size_t)V * sizeof *logits);
    s = tinygpt_eval(m, ids, (int)n, 0, logits, 1);
    CHECK(s == TINYGPT_OK, "eval: %s", tinygpt_last_error(m));
    FILE *f = fopen(argv[3], "wb");
    if (f) {
        fwrite(logits, sizeof(float), n * (size_t)V, f);
        fclose(f);
    }
    int bad = V;
    s = tinygpt_eval(m, &bad, 1, 0, logits, 0);
    CHECK(s == TINYGPT_ERR_ARG && strstr(tinygpt_last_error(m), "token"), "bad token: %d '%s'", s,
          tinygpt_last_error(m));
    s = tinygpt_eval(m, ids, 1, C, logits, 0);
    CHECK(s == TINYGPT_ERR_RANGE, "past the context: %d", s);

    /* The cache holds positions 0..P-1: pos <= P appends or rewrites, pos >
     * P is refused naming both numbers and leaves the cache as it was. */
    CHECK(tinygpt_n_past(m) == (int)n, "n_past %d after a prefill of %zu", tinygpt_n_past(m), n);
    char want[64];
    snprintf(want, sizeof want, "position %d is past the %d positions", (int)n + 1, (int)n);
    s = tinygpt_eval(m, ids, 1, (int)n + 1, logits, 0);
    CHECK(s == TINYGPT_ERR_RANGE && strstr(tinygpt_last_error(m), want) &&
              tinygpt_n_past(m) == (int)n,
          "a gap after the cache: %d '%s'", s, tinygpt_last_error(m));
    tinygpt *fresh = NULL;
    if (tinygpt_open(&fresh, path, NULL, err) == TINYGPT_OK) {
        CHECK(tinygpt_n_past(fresh) == 0, "n_past of a new handle: %d", tinygpt_n_past(fresh));
        s = tinygpt_eval(fresh, ids, 1, C > 50 ? 50 : C - 1, logits, 0);
        CHECK(s == TINYGPT_ERR_RANGE && strstr(tinygpt_last_error(fresh), "the 0 positions"),
              "pos 50 on an empty cache: %d '%s'", s, tinygpt_last_error(fresh));
        CHECK(tinygpt_eval(fresh, ids, 1, 0, logits, 0) == TINYGPT_OK &&
                  tinygpt_n_past(fresh) == 1, "pos 0 on an empty cache: %s",
              tinygpt_last_error(fresh));
        tinygpt_close(fresh);
    }
    if (n >= 2) {
        /* Rewriting from pos 1 after three positions forgets the third: the
         * logits equal a run that never had it (the same kernels, bit for
         * bit), and P is 2. */
        float *a = malloc((size_t)V * sizeof *a);
        int junk[2] = {ids[n - 1], ids[0]};
        CHECK(tinygpt_eval(m, ids, 1, 0, logits, 0) == TINYGPT_OK &&
                  tinygpt_eval(m, ids + 1, 1, 1, a, 0) == TINYGPT_OK, "reference run");
        CHECK(tinygpt_eval(m, ids, 1, 0, logits, 0) == TINYGPT_OK &&
                  tinygpt_eval(m, junk, 2, 1, logits, 0) == TINYGPT_OK && tinygpt_n_past(m) == 3,
              "three positions: %s", tinygpt_last_error(m));
        CHECK(tinygpt_eval(m, ids + 1, 1, 1, logits, 0) == TINYGPT_OK && tinygpt_n_past(m) == 2 &&
                  !memcmp(a, logits, (size_t)V * sizeof *a),
              "rewritten from pos 1: n_past %d, logits differ from a fresh run's?",
              tinygpt_n_past(m));
        free(a);
    }

    /* Greedy continuation through the KV cache. */
    tinygpt_sampling sp;
    tinygpt_sampling_init(&sp);
    sp.temp = 0;
    CHECK(tinygpt_set_sampling(m, &sp) == TINYGPT_OK, "set_sampling");
    sp.top_p = 2.0f;
    CHECK(tinygpt_set_sampling(m, &sp) == TINYGPT_ERR_ARG && strstr(tinygpt_last_error(m), "[0, 1]"),
          "bad top-p: '%s'", tinygpt_last_error(m));
    sp.top_p = 0.95f;
    sp.temp = 1e-45f; /* 1/temp overflows: refused, not NaN probabilities */
    CHECK(tinygpt_set_sampling(m, &sp) == TINYGPT_ERR_ARG &&
              strstr(tinygpt_last_error(m), "smallest usable"),
          "tiny temp: '%s'", tinygpt_last_error(m));
    sp.temp = 0;
    float *bad_logits = malloc((size_t)V * sizeof *bad_logits);
    for (int i = 0; i < V; i++) bad_logits[i] = NAN;
    CHECK(tinygpt_sample(m, bad_logits) == -1 && strstr(tinygpt_last_error(m), "NaN or -inf"),
          "all-NaN logits: '%s'", tinygpt_last_error(m));
    bad_logits[V / 2] = INFINITY;
    CHECK(tinygpt_sample(m, bad_logits) == V / 2, "+inf logit is the pick");
    free(bad_logits);
    int *out = malloc((size_t)(n_greedy + 1) * sizeof *out);
    s = tinygpt_eval(m, ids, (int)n, 0, logits, 0);
    int pos = (int)n, got = 0;
    while (s == TINYGPT_OK && got < n_greedy && pos < C) {
        out[got++] = tinygpt_sample(m, logits);
        s = tinygpt_eval(m, &out[got - 1], 1, pos++, logits, 0);
    }
    CHECK(s == TINYGPT_OK, "greedy: %s", tinygpt_last_error(m));
    f = fopen(argv[4], "wb");
    if (f) {
        fwrite(out, sizeof(int), (size_t)got, f);
        fclose(f);
    }

    /* Two handles on two threads at once give the same logits as one. */
    s = tinygpt_eval(m, ids, (int)n, 0, logits, 0);
    job jobs[2];
    pthread_t th[2];
    for (int i = 0; i < 2; i++) {
        jobs[i] = (job){path, text, malloc((size_t)V * sizeof(float)), -1};
        pthread_create(&th[i], NULL, run_job, &jobs[i]);
    }
    for (int i = 0; i < 2; i++) {
        pthread_join(th[i], NULL);
        CHECK(jobs[i].status == TINYGPT_OK &&
                  !memcmp(jobs[i].logits, logits, (size_t)V * sizeof(float)),
              "thread %d: status %d", i, jobs[i].status);
        free(jobs[i].logits);
    }

    free(out);
    free(logits);
    free(back);
    free(ids);
    tinygpt_close(m);
    tinygpt_close(NULL);
    if (failures) fprintf(stderr, "test_lib: %d failure(s)\n", failures);
    return failures ? 1 : 0;
}
