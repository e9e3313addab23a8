/* test_api.c — the C API of issue #13 through <tinygpt.h> alone (built
 * against the shared and the static library, and by api_test.py against the
 * installed one). Driven by api_test.py, which compares what it writes with
 * the PyTorch reference and with `tinygpt generate --json`:
 *
 *   test_api MODEL TEXT OUTDIR SEED N
 *
 * OUTDIR gets: info.txt (key value lines), ids.i32 (TEXT's tokens),
 * attn.f32 [L,H,T,T], logprobs.f32 [T,V], score.f32 [T-1], masked.f32
 * [T,V] (head 0 of the last layer silenced), gen.i32 / gen.f64 / gen.txt
 * (N tokens of TEXT's continuation at seed SEED, temp 1.5, top-k 40, top-p
 * 0.95, min-p 0, repeat penalty 3 over 64: ids,
 * log-probabilities, output bytes), stops.txt (two stop strings, a line
 * each, in hex: two bytes from the middle of gen.txt, and its first byte + \1,
 * which never completes) with stop.txt / stop.i32 (the same generation
 * with them), shift.i32 (40 tokens on a 16-position cache, cropped to
 * the default keep), context.i32 (keep 0 on that cache). Everything the
 * API promises that needs no oracle is checked here; a failure prints what
 * and exits 1. */
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
            fprintf(stderr, "test_api: FAIL %s: ", #cond);     \
            fprintf(stderr, __VA_ARGS__);                      \
            fputc('\n', stderr);                               \
            failures++;                                        \
        }                                                      \
    } while (0)

static const char *outdir;

/* tinygpt_set_interrupt's hook: counts the passes it is asked about and
 * answers 1 from the (interrupt_after+1)-th on. */
static int interrupt_after, interrupt_asked;
static int interrupt_fn(void *ctx) {
    int *asked = ctx;
    return ++*asked > interrupt_after;
}

static void write_file(const char *name, const void *p, size_t size, size_t n) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", outdir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, size, n, f) != n) {
        fprintf(stderr, "test_api: cannot write %s\n", path);
        exit(1);
    }
    fclose(f);
}

/* What one generation produced, through the callback. */
typedef struct run {
    int ids[4096];
    double lp[4096];
    char out[65536];
    size_t n_out;
    int n, stop_after; /* the callback stops after stop_after tokens (0: never) */
    int end_records, bad;
} run;

static int collect(void *user, const tinygpt_token *t) {
    run *r = user;
    if (t->id < 0) {
        r->end_records++;
    } else {
        if (r->n < 4096) {
            r->ids[r->n] = t->id;
            r->lp[r->n] = t->logprob;
        }
        if (t->index != r->n || !t->piece || t->text_len > t->piece_len + 3) r->bad++;
        r->n++;
    }
    if (r->n_out + t->out_len <= sizeof r->out) memcpy(r->out + r->n_out, t->out, t->out_len);
    r->n_out += t->out_len;
    return r->stop_after && r->n >= r->stop_after;
}

static int same_ids(const run *a, const run *b) {
    return a->n == b->n && !memcmp(a->ids, b->ids, (size_t)a->n * sizeof(int)) &&
           a->n_out == b->n_out && !memcmp(a->out, b->out, a->n_out);
}

static const float *sort_key;
static int by_logit(const void *x, const void *y) {
    int a = *(const int *)x, b = *(const int *)y;
    if (sort_key[a] != sort_key[b]) return sort_key[a] > sort_key[b] ? -1 : 1;
    return a - b;
}

/* One handle per thread: a generation on its own handle, from a context
 * saved on another (contexts do not depend on their handle). */
typedef struct job {
    const char *path;
    const tinygpt_context *ctx;
    const tinygpt_generate_opts *go;
    run r;
    int status;
} job;

static void *run_job(void *p) {
    job *j = p;
    tinygpt *h;
    char err[TINYGPT_ERR_LEN];
    if ((j->status = tinygpt_open(&h, j->path, NULL, err))) return NULL;
    if (!(j->status = tinygpt_context_restore(h, j->ctx)))
        j->status = tinygpt_generate(h, NULL, 0, j->go, collect, &j->r, NULL);
    tinygpt_close(h);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: test_api MODEL TEXT OUTDIR SEED N\n");
        return 2;
    }
    const char *path = argv[1], *text = argv[2];
    outdir = argv[3];
    unsigned long long seed = strtoull(argv[4], NULL, 10);
    int n_gen = atoi(argv[5]);
    char err[TINYGPT_ERR_LEN];
    tinygpt *m;
    if (tinygpt_open(&m, path, NULL, err)) {
        fprintf(stderr, "test_api: %s\n", err);
        return 1;
    }

    /* ---- model information ---- */
    tinygpt_info in;
    CHECK(tinygpt_get_info(m, &in) == TINYGPT_OK, "info");
    int L = in.n_layer, H = in.n_head, V = in.n_vocab, C = in.n_ctx;
    CHECK(!strcmp(in.arch, "gpt2") && L == tinygpt_n_layer(m) && H == tinygpt_n_head(m) &&
              V == tinygpt_n_vocab(m) && C == tinygpt_n_ctx(m) && in.n_embd == tinygpt_n_embd(m) &&
              in.head_size * H == in.n_embd && in.n_kv_head == H && !strcmp(in.path, path) &&
              in.n_threads == 1 && *in.isa && in.eos == tinygpt_eos(m),
          "info fields: arch %s L %d H %d", in.arch, L, H);
    uint64_t params = 0, bytes = 0;
    for (int i = 0; i < in.n_tensors; i++) {
        tinygpt_tensor_info t;
        CHECK(tinygpt_tensor(m, i, &t) == TINYGPT_OK, "tensor %d", i);
        uint64_t el = (uint64_t)t.dims[0] * (uint64_t)(t.n_dims == 2 ? t.dims[1] : 1);
        CHECK(t.n_elements == el && t.n_bytes >= el / 2 && *t.type && *t.name, "tensor %s", t.name);
        for (int j = 0; j < i; j++) {
            tinygpt_tensor_info u;
            tinygpt_tensor(m, j, &u);
            CHECK(strcmp(u.name, t.name), "tensor name %s twice", t.name);
        }
        params += t.n_elements;
        bytes += t.n_bytes;
    }
    CHECK(params == in.n_params && bytes == in.n_bytes, "tensors add up to %llu/%llu",
          (unsigned long long)params, (unsigned long long)bytes);
    tinygpt_tensor_info tbad;
    CHECK(tinygpt_tensor(m, in.n_tensors, &tbad) == TINYGPT_ERR_RANGE &&
              strstr(tinygpt_last_error(m), "outside"), "tensor past the end: '%s'",
          tinygpt_last_error(m));
    char info[1024];
    int il = snprintf(info, sizeof info,
                      "arch %s\nn_layer %d\nn_head %d\nn_kv_head %d\nn_embd %d\nhead_size %d\n"
                      "n_ff %d\nn_vocab %d\nn_ctx_train %d\nn_ctx %d\ntied %d\nn_params %llu\n"
                      "n_bytes %llu\nweight_type %s\nn_tensors %d\nbos %d\neos %d\n",
                      in.arch, L, H, in.n_kv_head, in.n_embd, in.head_size, in.n_ff, V,
                      in.n_ctx_train, C, in.tied, (unsigned long long)in.n_params,
                      (unsigned long long)in.n_bytes, in.weight_type, in.n_tensors, in.bos,
                      in.eos);
    write_file("info.txt", info, 1, (size_t)il);

    /* ---- tokenizer ---- */
    int eos = tinygpt_eos(m);
    CHECK(eos >= 0 && tinygpt_is_special(m, eos) && !tinygpt_is_special(m, 0) &&
              !tinygpt_is_special(m, V) && !tinygpt_is_special(m, -1),
          "special ids (eos %d)", eos);
    CHECK(tinygpt_token_id(m, "<|endoftext|>") == eos && tinygpt_token_id(m, "no such token") == -1
              && tinygpt_token_id(m, NULL) == -1, "token_id");
    size_t n = 0;
    int ids[512];
    CHECK(tinygpt_tokenize(m, text, strlen(text), 0, ids, 512, &n) == TINYGPT_OK && n >= 4,
          "tokenize: %zu", n);
    int T = (int)n;
    write_file("ids.i32", ids, sizeof(int), n);

    /* ---- attention, logits, log-probabilities, score ---- */
    float *attn = malloc((size_t)L * H * T * T * sizeof *attn);
    float *logits = malloc((size_t)T * V * sizeof *logits), *lp = malloc((size_t)T * V * sizeof *lp);
    float *last = malloc((size_t)V * sizeof *last), score[512];
    CHECK(tinygpt_attention(m, ids, T, attn, last) == TINYGPT_OK, "attention: %s",
          tinygpt_last_error(m));
    CHECK(tinygpt_n_past(m) == T, "attention leaves the cache at %d", tinygpt_n_past(m));
    write_file("attn.f32", attn, sizeof(float), (size_t)L * H * T * T);
    CHECK(tinygpt_attention(m, ids, 0, attn, NULL) == TINYGPT_ERR_RANGE &&
              tinygpt_attention(m, ids, C + 1, attn, NULL) == TINYGPT_ERR_RANGE,
          "attention of 0 and C+1 tokens");
    CHECK(tinygpt_eval(m, ids, T, 0, logits, 1) == TINYGPT_OK, "eval: %s", tinygpt_last_error(m));
    CHECK(tinygpt_logprobs(m, logits, (size_t)T, lp) == TINYGPT_OK, "logprobs");
    write_file("logprobs.f32", lp, sizeof(float), (size_t)T * V);
    CHECK(tinygpt_score(m, ids, T, score) == TINYGPT_OK, "score: %s", tinygpt_last_error(m));
    for (int t = 0; t + 1 < T; t++)
        CHECK(score[t] == lp[(size_t)t * V + ids[t + 1]], "score %d: %g vs %g", t, score[t],
              lp[(size_t)t * V + ids[t + 1]]);
    write_file("score.f32", score, sizeof(float), (size_t)T - 1);
    CHECK(tinygpt_score(m, ids, 1, score) == TINYGPT_ERR_RANGE, "score of one token");
    float nan_row[4096];
    for (int i = 0; i < V && i < 4096; i++) nan_row[i] = 0;
    nan_row[3] = NAN;
    CHECK(tinygpt_logprobs(m, nan_row, 1, lp) == TINYGPT_ERR_NUMERIC &&
              strstr(tinygpt_last_error(m), "logit 3"), "NaN row: '%s'", tinygpt_last_error(m));
    /* top-k against a full sort of the same row */
    int top[8], order[4096];
    float top_lp[8];
    const float *row = logits + (size_t)(T - 1) * V;
    CHECK(tinygpt_top_k(m, row, 8, top, top_lp) == TINYGPT_OK, "top_k");
    for (int i = 0; i < V; i++) order[i] = i;
    sort_key = row;
    qsort(order, (size_t)V, sizeof *order, by_logit);
    for (int j = 0; j < 8; j++)
        CHECK(top[j] == order[j] && fabsf(top_lp[j] - lp[(size_t)(T - 1) * V + top[j]]) < 1e-6f,
              "top %d: %d vs %d", j, top[j], order[j]);
    CHECK(tinygpt_top_k(m, row, 0, top, NULL) == TINYGPT_ERR_ARG &&
              tinygpt_top_k(m, row, V + 1, top, NULL) == TINYGPT_ERR_ARG, "top_k out of range");

    /* ---- head mask ---- */
    uint8_t *mask = malloc((size_t)L * H);
    CHECK(tinygpt_get_head_mask(m, mask) == TINYGPT_OK && mask[0] == 1 && mask[L * H - 1] == 1,
          "no mask: all heads on");
    memset(mask, 1, (size_t)L * H);
    mask[(L - 1) * H] = 0;
    CHECK(tinygpt_set_head_mask(m, mask) == TINYGPT_OK, "set mask");
    memset(mask, 7, (size_t)L * H);
    CHECK(tinygpt_get_head_mask(m, mask) == TINYGPT_OK && mask[(L - 1) * H] == 0 && mask[0] == 1,
          "mask read back");
    float *masked = malloc((size_t)T * V * sizeof *masked);
    CHECK(tinygpt_eval(m, ids, T, 0, masked, 1) == TINYGPT_OK, "masked eval");
    write_file("masked.f32", masked, sizeof(float), (size_t)T * V);
    CHECK(memcmp(masked, logits, (size_t)T * V * sizeof *masked), "the mask changes the logits");
    CHECK(tinygpt_set_head_mask(m, NULL) == TINYGPT_OK && tinygpt_get_head_mask(m, mask) == 0 &&
              mask[(L - 1) * H] == 1, "mask cleared");
    CHECK(tinygpt_eval(m, ids, T, 0, masked, 1) == TINYGPT_OK &&
              !memcmp(masked, logits, (size_t)T * V * sizeof *masked),
          "no mask again: the first logits, bit for bit");

    /* ---- the KV cache: length, truncate, refused positions, tokens ---- */
    size_t got = 0;
    int cached[512];
    CHECK(tinygpt_cache_tokens(m, cached, 512, &got) == TINYGPT_OK && got == n &&
              !memcmp(cached, ids, n * sizeof *ids), "cache tokens");
    CHECK(tinygpt_cache_tokens(m, cached, 1, &got) == TINYGPT_ERR_RANGE && got == n,
          "cache tokens, small buffer");
    CHECK(tinygpt_truncate(m, T + 1) == TINYGPT_ERR_RANGE && tinygpt_truncate(m, -1) ==
              TINYGPT_ERR_RANGE && tinygpt_n_past(m) == T, "truncate out of range");
    CHECK(tinygpt_truncate(m, 2) == TINYGPT_OK && tinygpt_n_past(m) == 2, "truncate to 2");
    CHECK(tinygpt_eval(m, ids + 3, 1, 3, last, 0) == TINYGPT_ERR_RANGE &&
              strstr(tinygpt_last_error(m), "position 3 is past the 2 positions") &&
              tinygpt_n_past(m) == 2, "pos 3 after truncating to 2: '%s'", tinygpt_last_error(m));
    /* going on from position 2 gives the logits of the untruncated run */
    CHECK(tinygpt_eval(m, ids + 2, T - 2, 2, masked, 1) == TINYGPT_OK &&
              tinygpt_n_past(m) == T, "eval from 2: %s", tinygpt_last_error(m));
    float d = 0;
    for (size_t i = 0; i < (size_t)(T - 2) * V; i++)
        d = fmaxf(d, fabsf(masked[i] - logits[2 * (size_t)V + i]));
    CHECK(d < 1e-3f, "logits after truncate + eval differ by %g", d);
    tinygpt_generate_opts go;
    tinygpt_generate_opts_init(&go);
    CHECK(tinygpt_truncate(m, 1) == 0 &&
              tinygpt_generate(m, NULL, 0, &go, NULL, NULL, NULL) == TINYGPT_ERR_ARG &&
              strstr(tinygpt_last_error(m), "no logits"),
          "no prompt after a truncate: '%s'", tinygpt_last_error(m));

    /* ---- generation: the CLI's settings; fork; stop conditions ---- */
    go.max_tokens = n_gen;
    go.sampling.seed = seed;
    /* a random model repeats itself at low temperatures; these settings give
     * varied text (so that a wrong crop or history shows) */
    go.sampling.temp = 1.5f;
    go.sampling.min_p = 0;
    go.sampling.repeat_penalty = 3;
    go.top_logprobs = 3;
    static run a, b, c, e, f;
    tinygpt_generate_result res;
    CHECK(tinygpt_generate_text(m, text, strlen(text), &go, collect, &a, &res) == TINYGPT_OK,
          "generate: %s", tinygpt_last_error(m));
    CHECK(res.stop == TINYGPT_STOP_LENGTH && res.n_tokens == n_gen && a.n == n_gen && !a.bad &&
              res.n_prompt == T && res.last_token == a.ids[n_gen - 1] &&
              tinygpt_n_past(m) == T + n_gen - 1 && !strcmp(tinygpt_stop_reason_str(res.stop),
                                                            "length"),
          "generate: stop %d n %d past %d", res.stop, res.n_tokens, tinygpt_n_past(m));
    write_file("gen.i32", a.ids, sizeof(int), (size_t)a.n);
    write_file("gen.f64", a.lp, sizeof(double), (size_t)a.n);
    write_file("gen.txt", a.out, 1, a.n_out);
    /* fork: prefill once, save, two continuations, restore, the first again */
    tinygpt_context *ctx = NULL;
    CHECK(tinygpt_truncate(m, 0) == 0 && tinygpt_eval(m, ids, T, 0, last, 0) == 0 &&
              tinygpt_context_save(m, &ctx) == TINYGPT_OK && tinygpt_context_n_past(ctx) == T,
          "save");
    CHECK(tinygpt_generate(m, NULL, 0, &go, collect, &b, NULL) == 0 && same_ids(&a, &b),
          "continuing the saved prompt = generate_text (%d tokens)", b.n);
    go.sampling.seed = seed + 1;
    memset(&c, 0, sizeof c);
    CHECK(tinygpt_context_restore(m, ctx) == 0 && tinygpt_n_past(m) == T &&
              tinygpt_generate(m, NULL, 0, &go, collect, &c, NULL) == 0 && !same_ids(&a, &c),
          "another seed, another text");
    go.sampling.seed = seed;
    memset(&b, 0, sizeof b);
    CHECK(tinygpt_context_restore(m, ctx) == 0 &&
              tinygpt_generate(m, NULL, 0, &go, collect, &b, NULL) == 0 && same_ids(&a, &b),
          "restored: the first continuation again");
    /* into another handle of the same model */
    tinygpt *m2 = NULL;
    CHECK(tinygpt_open(&m2, path, NULL, err) == 0, "second handle: %s", err);
    memset(&b, 0, sizeof b);
    CHECK(m2 && tinygpt_context_restore(m2, ctx) == 0 &&
              tinygpt_generate(m2, NULL, 0, &go, collect, &b, NULL) == 0 && same_ids(&a, &b),
          "restored into another handle");
    /* two handles on two threads at once, from the saved context */
    static job jobs[2];
    pthread_t th[2];
    for (int i = 0; i < 2; i++) {
        jobs[i].path = path, jobs[i].ctx = ctx, jobs[i].go = &go, jobs[i].status = -1;
        pthread_create(&th[i], NULL, run_job, &jobs[i]);
    }
    for (int i = 0; i < 2; i++) {
        pthread_join(th[i], NULL);
        CHECK(jobs[i].status == 0 && same_ids(&a, &jobs[i].r), "thread %d: status %d, %d tokens",
              i, jobs[i].status, jobs[i].r.n);
    }
    /* the step API gives the same tokens; stopping early */
    tinygpt_gen *g = NULL;
    CHECK(tinygpt_context_restore(m, ctx) == 0 && tinygpt_gen_start(m, NULL, 0, &go, &g) == 0,
          "gen_start");
    tinygpt_token tk;
    int k = 0;
    while (g && tinygpt_gen_next(g, &tk) == TINYGPT_OK && tk.id >= 0 && k < 3) {
        CHECK(tk.id == a.ids[k] && tk.logprob == a.lp[k] && tk.n_top == 3 &&
                  tk.top_logprobs[0] >= tk.logprob && tk.top_logprobs[2] <= tk.top_logprobs[1],
              "step %d: %d vs %d", k, tk.id, a.ids[k]);
        k++;
    }
    if (g) {
        tinygpt_gen_stop(g);
        CHECK(tinygpt_gen_next(g, &tk) == 0 && tk.id == -1, "after stop: the end record");
        CHECK(tinygpt_gen_next(g, &tk) == 0 && tk.id == -1 && tk.out_len == 0, "end again");
        tinygpt_gen_result(g, &res);
        CHECK(res.stop == TINYGPT_STOP_CALLER && res.n_tokens == 4, "stopped: %d %d", res.stop,
              res.n_tokens);
        tinygpt_gen_free(g);
    }
    /* without log-probabilities: the same tokens, logprob NaN; with
     * alternatives asked for they are there all the same */
    for (int tops = 0; tops <= 3; tops += 3) {
        tinygpt_generate_opts g0 = go;
        g0.top_logprobs = tops;
        g = NULL;
        CHECK(tinygpt_context_restore(m, ctx) == 0 && tinygpt_gen_start(m, NULL, 0, &g0, &g) == 0,
              "gen_start (top_logprobs %d)", tops);
        if (g) tinygpt_gen_set_logprobs(g, 0);
        k = 0;
        int same = 1;
        while (g && k < a.n && tinygpt_gen_next(g, &tk) == TINYGPT_OK && tk.id >= 0) {
            same &= tk.id == a.ids[k] && (tops ? tk.logprob == a.lp[k] : isnan(tk.logprob));
            k++;
        }
        CHECK(same && k == a.n, "gen_set_logprobs(g, 0), top_logprobs %d: the same %d tokens, logprob %s",
              tops, k, tops ? "as before" : "NaN");
        tinygpt_gen_free(g);
    }
    /* the callback stops it */
    memset(&e, 0, sizeof e);
    e.stop_after = 2;
    CHECK(tinygpt_context_restore(m, ctx) == 0 &&
              tinygpt_generate(m, NULL, 0, &go, collect, &e, &res) == 0 &&
              res.stop == TINYGPT_STOP_CALLER && e.n == 2 && res.n_tokens == 2 &&
              tinygpt_n_past(m) == T + 1 && !memcmp(e.ids, a.ids, 2 * sizeof(int)),
          "callback stop: %d tokens, reason %d", e.n, res.stop);
    /* a stop string: the output is the full one cut before its first
     * occurrence (the bytes after a stop string's end are never shown) */
    char stop[3] = {0}, never[3] = {0};
    if (a.n_out >= 4) memcpy(stop, a.out + a.n_out / 2, 2);
    else stop[0] = 'x';
    never[0] = stop[0], never[1] = 1;
    if (!stop[0]) stop[0] = 'x'; /* a NUL byte from the text */
    char stops_txt[64], *sp = stops_txt;
    for (const char *q = stop; *q; q++) sp += sprintf(sp, "%02x", (unsigned char)*q);
    sp += sprintf(sp, "\n");
    for (const char *q = never; *q; q++) sp += sprintf(sp, "%02x", (unsigned char)*q);
    sp += sprintf(sp, "\n");
    write_file("stops.txt", stops_txt, 1, (size_t)(sp - stops_txt));
    const char *stops[2] = {stop, never};
    go.stop = stops;
    go.n_stop = 2;
    memset(&f, 0, sizeof f);
    CHECK(tinygpt_generate_text(m, text, strlen(text), &go, collect, &f, &res) == 0,
          "generate with a stop string: %s", tinygpt_last_error(m));
    write_file("stop.txt", f.out, 1, f.n_out);
    write_file("stop.i32", f.ids, sizeof(int), (size_t)f.n);
    size_t sl = strlen(stop), cut = a.n_out;
    for (size_t i = 0; i + sl <= a.n_out; i++)
        if (!memcmp(a.out + i, stop, sl)) {
            cut = i;
            break;
        }
    CHECK(f.n_out == cut && !memcmp(f.out, a.out, cut) &&
              (cut == a.n_out ? res.stop == TINYGPT_STOP_LENGTH
                              : res.stop == TINYGPT_STOP_STRING && res.stop_index == 0),
          "stop string '%s': %zu bytes out, want %zu (reason %d)", stop, f.n_out, cut, res.stop);
    go.stop = NULL;
    go.n_stop = 0;
    /* bad settings: one-line errors */
    go.keep = C;
    CHECK(tinygpt_generate_text(m, text, strlen(text), &go, NULL, NULL, NULL) == TINYGPT_ERR_ARG
              && strstr(tinygpt_last_error(m), "keep"), "keep = C: '%s'", tinygpt_last_error(m));
    go.keep = -1;
    go.top_logprobs = 101;
    CHECK(tinygpt_generate_text(m, text, strlen(text), &go, NULL, NULL, NULL) == TINYGPT_ERR_ARG,
          "top_logprobs 101");
    go.top_logprobs = 0;
    const char *empty[1] = {""};
    go.stop = empty;
    go.n_stop = 1;
    CHECK(tinygpt_generate_text(m, text, strlen(text), &go, NULL, NULL, NULL) == TINYGPT_ERR_ARG
              && strstr(tinygpt_last_error(m), "stop string 0 is 0 bytes"), "empty stop: '%s'",
          tinygpt_last_error(m));
    go.stop = NULL;
    go.n_stop = 0;
    int badtok = V;
    CHECK(tinygpt_generate(m, &badtok, 1, &go, NULL, NULL, NULL) == TINYGPT_ERR_ARG &&
              strstr(tinygpt_last_error(m), "vocabulary"), "bad prompt token");
    go.sampling.top_p = 3;
    CHECK(tinygpt_generate(m, ids, 1, &go, NULL, NULL, NULL) == TINYGPT_ERR_ARG &&
              strstr(tinygpt_last_error(m), "[0, 1]"), "bad top_p: '%s'", tinygpt_last_error(m));
    go.sampling.top_p = 0.95f;
    int *longp = calloc((size_t)C + 1, sizeof *longp);
    CHECK(tinygpt_truncate(m, 0) == 0 &&
              tinygpt_generate(m, longp, C + 1, &go, NULL, NULL, NULL) == TINYGPT_ERR_RANGE &&
              strstr(tinygpt_last_error(m), "longer than the context"), "prompt > context: '%s'",
          tinygpt_last_error(m));
    free(longp);
    tinygpt_context_free(ctx);
    tinygpt_close(m2);

    /* ---- analysis: quality, heads, agreement, profile, sweep, bench, speed ---- */
    {
        tinygpt_quality q;
        /* one window holding the whole text: the summed loss is minus the
         * sum of tinygpt_score's log-probabilities */
        CHECK(tinygpt_run_quality(m, ids, n, 0, &q) == TINYGPT_OK && q.window == C &&
                  q.tokens == n - 1 && tinygpt_n_past(m) == 0, "quality: %s tokens %llu",
              tinygpt_last_error(m), (unsigned long long)q.tokens);
        CHECK(tinygpt_score(m, ids, T, score) == TINYGPT_OK, "score again");
        double sum = 0;
        for (int t = 0; t + 1 < T; t++) sum -= score[t];
        CHECK(fabs(q.nats - sum) < 1e-4 * (1 + fabs(sum)) &&
                  fabs(q.perplexity - exp(q.nats_per_token)) < 1e-9 * q.perplexity,
              "quality nats %.9g vs -sum(score) %.9g", q.nats, sum);
        CHECK(tinygpt_run_quality(m, ids, 1, 0, &q) == TINYGPT_ERR_ARG &&
                  tinygpt_run_quality(m, ids, n, C + 1, &q) == TINYGPT_ERR_ARG,
              "quality: bad arguments");
        /* the head analysis; each ablation loss is run_quality under that mask */
        tinygpt_heads_opts ho;
        tinygpt_heads_opts_init(&ho);
        CHECK(ho.head_tokens == 2048 && ho.seed == 1 && ho.window == 0, "heads defaults");
        tinygpt_head_analysis *ha = NULL;
        memset(mask, 1, (size_t)L * H);
        mask[0] = 0; /* a mask set before: not in force during, in force after */
        CHECK(tinygpt_set_head_mask(m, mask) == 0, "mask before heads");
        CHECK(tinygpt_run_heads(m, ids, n, &ho, &ha) == TINYGPT_OK && ha && ha->n_layer == L &&
                  ha->n_head == H && ha->tokens == n - 1 && ha->n_layers == (H > 1 ? L : 0),
              "heads: %s", tinygpt_last_error(m));
        uint8_t back[64];
        CHECK(tinygpt_get_head_mask(m, back) == 0 && back[0] == 0 && back[1] == 1,
              "the mask is back after the head analysis");
        /* (the baseline runs with the statistics probe attached, i.e. attention
         * unfused: the same sums in another order, equal to float rounding) */
        CHECK(tinygpt_set_head_mask(m, NULL) == 0 && tinygpt_run_quality(m, ids, n, 0, &q) == 0 &&
                  ha && fabs(q.nats_per_token - ha->baseline_loss) < 1e-6 * q.nats_per_token,
              "baseline %.12g vs quality %.12g", ha ? ha->baseline_loss : 0, q.nats_per_token);
        for (int i = 0; ha && i < L * H; i++) {
            const tinygpt_head *h = &ha->heads[i];
            memset(mask, 1, (size_t)L * H);
            mask[i] = 0;
            tinygpt_set_head_mask(m, mask);
            tinygpt_quality qa;
            CHECK(h->layer == i / H && h->head == i % H && h->kv_head == h->head && h->cls &&
                      h->entropy >= 0 && h->entropy <= 1 + 1e-9 && h->sink >= 0 &&
                      h->confidence <= 1 + 1e-9, "head %d fields", i);
            CHECK(tinygpt_run_quality(m, ids, n, 0, &qa) == 0 &&
                      fabs(qa.nats_per_token - h->ablation_loss) < 1e-12 &&
                      fabs(h->ablation_delta - (h->ablation_loss - ha->baseline_loss)) < 1e-12,
                  "head %d: ablation loss %.12g, quality under its mask %.12g", i,
                  h->ablation_loss, qa.nats_per_token);
            /* keeping only this head of its layer */
            memset(mask, 1, (size_t)L * H);
            memset(mask + (i / H) * H, 0, (size_t)H);
            mask[i] = 1;
            tinygpt_set_head_mask(m, mask);
            CHECK(H == 1 || (tinygpt_run_quality(m, ids, n, 0, &qa) == 0 &&
                             fabs(qa.nats_per_token - h->only_loss) < 1e-12),
                  "head %d: only-head loss %.12g vs %.12g", i, h->only_loss, qa.nats_per_token);
        }
        tinygpt_set_head_mask(m, NULL);
        tinygpt_head_analysis_free(ha);
        /* an interrupt: the head analysis (dozens of passes) stops at the pass
         * after the one the hook first answers 1 for, and runs whole once it
         * is removed */
        interrupt_after = 3, interrupt_asked = 0;
        ha = NULL;
        CHECK(tinygpt_set_interrupt(m, interrupt_fn, &interrupt_asked) == TINYGPT_OK &&
                  tinygpt_run_heads(m, ids, n, &ho, &ha) == TINYGPT_ERR_INTERRUPTED && !ha &&
                  interrupt_asked == 4 && strstr(tinygpt_last_error(m), "interrupted"),
              "interrupted heads: asked %d times (want 4), %s", interrupt_asked,
              tinygpt_last_error(m));
        CHECK(tinygpt_run_quality(m, ids, n, 0, &q) == TINYGPT_ERR_INTERRUPTED,
              "quality interrupted too");
        CHECK(tinygpt_set_interrupt(m, NULL, NULL) == TINYGPT_OK &&
                  tinygpt_run_heads(m, ids, n, &ho, &ha) == TINYGPT_OK && ha &&
                  interrupt_asked == 5,
              "heads after the interrupt is removed: %s", tinygpt_last_error(m));
        tinygpt_head_analysis_free(ha);
        /* a model agrees with itself */
        tinygpt *m3 = NULL;
        tinygpt_agreement ag;
        CHECK(tinygpt_open(&m3, path, NULL, err) == 0 &&
                  tinygpt_run_agreement(m, m3, ids, n, 0, &ag) == 0 && ag.positions == n - 1 &&
                  ag.top1_same == ag.positions && ag.top1 == 1 && fabs(ag.kl) < 1e-9,
              "agreement with itself: %s", tinygpt_last_error(m));
        tinygpt_close(m3);
        /* profile: every op of both phases, the steps asked for */
        tinygpt_profile_opts po;
        tinygpt_profile_opts_init(&po);
        po.n_prompt = 8;
        po.gen = 4;
        po.reps = 2;
        po.per_layer = po.per_head = 1;
        tinygpt_profile *pr = NULL;
        CHECK(tinygpt_run_profile(m, &po, &pr) == TINYGPT_OK && pr && pr->n_threads == 1,
              "profile: %s", tinygpt_last_error(m));
        for (int ph = 0; pr && ph < 2; ph++) {
            const tinygpt_profile_phase *p = &pr->phase[ph];
            CHECK(p->ran && p->steps == (ph ? 8 : 2) && p->tokens == (ph ? 8 : 16) &&
                      p->n_ops == 14 && p->total.ns > 0 && p->wall_ns > 0 &&
                      !strcmp(p->name, ph ? "decode" : "prefill") && p->n_layers > 0 &&
                      p->n_heads > 0 && !strcmp(p->ops[2].name, "qkv") &&
                      p->ops[2].calls == (double)(ph ? 8 : 2) * L && p->ops[2].flops > 0,
                  "profile phase %d: ran %d steps %d tokens %lld ops %d", ph, p->ran, p->steps,
                  (long long)p->tokens, p->n_ops);
        }
        tinygpt_profile_free(pr);
        po.n_prompt = C;
        CHECK(tinygpt_run_profile(m, &po, &pr) == TINYGPT_ERR_RANGE && !pr, "profile too long");
        /* the context sweep and bench rows */
        int ctxs[2] = {4, 9};
        tinygpt_sweep_row sw[2];
        CHECK(tinygpt_run_sweep(m, ctxs, 2, 3, 1, 0, sw) == 0 && sw[0].ctx == 4 && sw[1].ctx == 9
                  && sw[0].steps == 3 && sw[1].step_us > 0 && sw[1].attn_roof_pct < 0,
              "sweep: %s", tinygpt_last_error(m));
        ctxs[1] = 3;
        CHECK(tinygpt_run_sweep(m, ctxs, 2, 3, 1, 0, sw) == TINYGPT_ERR_ARG, "sweep descending");
        tinygpt_bench_row br;
        double ms[3];
        CHECK(tinygpt_run_bench(m, 1, 16, 3, NULL, 0, &br, ms) == 0 && br.is_pp && br.n == 16 &&
                  br.reps == 3 && br.tok_s > 0 && ms[2] > 0 && br.roof_frac < 0,
              "bench pp16: %s", tinygpt_last_error(m));
        CHECK(tinygpt_run_bench(m, 0, 8, 2, ids, 0, &br, NULL) == 0 && !br.is_pp && br.n == 8,
              "bench tg8");
        CHECK(tinygpt_run_bench(m, 0, C + 1, 2, NULL, 0, &br, NULL) == TINYGPT_ERR_ARG,
              "bench past the context");
        tinygpt_speed spd;
        CHECK(tinygpt_run_speed(m, ids, n, 0, 1, &spd) == 0 && spd.n_tokens == T &&
                  spd.prefill_tok_s > 0 && spd.decode_tok_s > 0 && tinygpt_n_past(m) == 0,
              "speed: %s", tinygpt_last_error(m));
    }

    /* ---- a 16-position cache: the crop (keep) and keep 0 ---- */
    tinygpt_options o;
    tinygpt_options_init(&o);
    o.n_ctx = 16;
    tinygpt *s = NULL;
    CHECK(tinygpt_open(&s, path, &o, err) == 0 && tinygpt_n_ctx(s) == 16, "n_ctx 16: %s", err);
    if (s) {
        static run sh, cx;
        go.max_tokens = 40;
        go.sampling.seed = seed;
        CHECK(tinygpt_generate_text(s, text, 4, &go, collect, &sh, &res) == 0 && sh.n == 40 &&
                  res.n_shifts > 0, "crop: %d tokens, %d shifts: %s", sh.n, res.n_shifts,
              tinygpt_last_error(s));
        write_file("shift.i32", sh.ids, sizeof(int), (size_t)sh.n);
        go.keep = 0;
        go.max_tokens = -1;
        size_t n4 = 0;
        tinygpt_tokenize(s, text, 4, 1, NULL, 0, &n4);
        CHECK(tinygpt_generate_text(s, text, 4, &go, collect, &cx, &res) == 0 &&
                  res.stop == TINYGPT_STOP_CONTEXT && cx.n == 16 - (int)n4 + 1 &&
                  tinygpt_n_past(s) == 16,
              "keep 0: reason %d, %d tokens", res.stop, cx.n);
        write_file("context.i32", cx.ids, sizeof(int), (size_t)cx.n);
        tinygpt_close(s);
    }

    free(mask);
    free(masked);
    free(attn);
    free(logits);
    free(lp);
    free(last);
    tinygpt_close(m);
    if (failures) fprintf(stderr, "test_api: %d failure(s)\n", failures);
    return failures ? 1 : 0;
}
