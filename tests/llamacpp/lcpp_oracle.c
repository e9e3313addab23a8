/* lcpp_oracle.c — llama.cpp as an independent oracle and speed baseline for
 * tinygpt's tests and benchmarks. Not part of tinygpt: install.sh builds it
 * at test time against the llama.h of the llama.cpp that npm's
 * node-llama-cpp was built from, and links that package's prebuilt
 * libllama/libggml. Only llama.h's public API is called.
 *
 *   lcpp_oracle [OPTIONS] info MODEL                 architecture, vocabulary, the CPU backend chosen
 *   lcpp_oracle [OPTIONS] tokenize MODEL TEXTFILE    ids of the file's bytes, one line
 *   lcpp_oracle [OPTIONS] logits MODEL IDS.i32 OUT.f32
 *                                                    logits[T, V] at every position, raw float32
 *   lcpp_oracle [OPTIONS] greedy MODEL IDS.i32 N     N greedy tokens after the prompt, a line
 *                                                    "id top1-top2" each (argmax, lowest id on a tie)
 *   lcpp_oracle quantize IN OUT TYPE [--pure] [--output-type TYPE]
 *                                                    llama_model_quantize, TYPE f16|bf16|q8_0|q4_0
 *   lcpp_oracle [OPTIONS] bench MODEL pp|tg N REPS   llama-bench's ppN (one prefill of N tokens) or
 *                                                    tgN (N one-token decodes from an empty cache),
 *                                                    after one warm-up run; a JSON line per repetition
 *                                                    with its wall and process-CPU milliseconds
 *
 * OPTIONS: -t THREADS (1), --kv f32|f16 (KV-cache type, f32: tinygpt's),
 *          --ctx N (context, default the model's), --chunk N (logits: feed
 *          the ids N at a time, 1 = the decode path; default all at once),
 *          --flash on|off|auto (flash attention; auto: llama.cpp's default),
 *          --no-special (tokenize: no BOS/EOS added, "<...>" not parsed as
 *          control tokens), --no-repack (keep the weights in their file
 *          layout: no CPU repacking of q4_0/q8_0), -v (llama.cpp's log).
 * IDS.i32 is int32 little-endian ids, as tests/model/gpt_dump reads.
 * The CPU backends are loaded from LCPP_BACKEND_DIR (compiled in; the
 * environment variable of that name overrides it); LCPP_CPU_VARIANT=NAME
 * loads libggml-cpu-NAME.so instead of the best one for this CPU.
 * Errors: one line on stderr, exit 1 (2 for a usage error). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "llama.h"

#ifndef LCPP_BACKEND_DIR
#define LCPP_BACKEND_DIR "."
#endif

/* Options of the model and context, from the command line. */
typedef struct {
    int threads;      /* llama.cpp threads for decode and batches */
    int kv_f16;       /* KV cache in f16 (llama.cpp's default) instead of f32 */
    int n_ctx;        /* 0 = the model's training context */
    int chunk;        /* logits: ids per llama_decode call, 0 = all */
    int no_special;   /* tokenize: add_special = parse_special = false */
    int no_repack;    /* use_extra_bufts = false */
    int verbose;      /* forward llama.cpp's log to stderr */
    int flash;        /* flash attention: -1 auto (llama.cpp's default), 0 off, 1 on */
} oracle_opts;

static char last_log[512];
static int verbose_log;

/* llama.cpp's log: kept quiet, the last warning or error remembered for the
 * one-line message of a failure. */
static void log_cb(enum ggml_log_level level, const char *text, void *user) {
    (void)user;
    if (verbose_log) fputs(text, stderr);
    if (level == GGML_LOG_LEVEL_ERROR || level == GGML_LOG_LEVEL_WARN) {
        snprintf(last_log, sizeof last_log, "%s", text);
        size_t n = strlen(last_log);
        while (n && (last_log[n - 1] == '\n' || last_log[n - 1] == '\r')) last_log[--n] = 0;
    }
}

static int fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("lcpp_oracle: ", stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    if (last_log[0]) fprintf(stderr, " (llama.cpp: %s)", last_log);
    fputc('\n', stderr);
    return 1;
}

static int usage(const char *msg) {
    fprintf(stderr, "lcpp_oracle: %s (usage: see the comment at the top of lcpp_oracle.c)\n", msg);
    return 2;
}

static int parse_int(const char *s, int lo, int hi, int *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) return -1;
    *out = (int)v;
    return 0;
}

static double now_s(clockid_t clk) {
    struct timespec ts;
    clock_gettime(clk, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Loads the CPU backend(s) and names the one in use. */
static int load_backends(void) {
    const char *dir = getenv("LCPP_BACKEND_DIR");
    if (!dir || !*dir) dir = LCPP_BACKEND_DIR;
    const char *variant = getenv("LCPP_CPU_VARIANT");
    if (variant && *variant) {
        char path[4096];
        snprintf(path, sizeof path, "%s/libggml-cpu-%s.so", dir, variant);
        if (!ggml_backend_load(path)) return fail("cannot load the CPU backend %s", path);
    } else {
        ggml_backend_load_all_from_path(dir);
    }
    for (size_t i = 0; i < ggml_backend_dev_count(); i++)
        if (ggml_backend_dev_type(ggml_backend_dev_get(i)) == GGML_BACKEND_DEVICE_TYPE_CPU) return 0;
    return fail("no CPU backend could be loaded from %s", dir);
}

/* The CPU backend's features as "NAME=VALUE ..." (what ggml compiled in and
 * this CPU has). */
static void print_backend(FILE *f) {
    for (size_t i = 0; i < ggml_backend_reg_count(); i++) {
        ggml_backend_reg_t reg = ggml_backend_reg_get(i);
        fprintf(f, "backend: %s", ggml_backend_reg_name(reg));
        ggml_backend_get_features_t gf =
            (ggml_backend_get_features_t)ggml_backend_reg_get_proc_address(reg, "ggml_backend_get_features");
        if (gf)
            for (struct ggml_backend_feature *ft = gf(reg); ft && ft->name; ft++)
                fprintf(f, " %s=%s", ft->name, ft->value);
        fputc('\n', f);
    }
}

static struct llama_model *open_model(const char *path, const oracle_opts *o) {
    struct llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    if (o->no_repack) mp.use_extra_bufts = false;
    struct llama_model *m = llama_model_load_from_file(path, mp);
    if (!m) fail("%s: llama.cpp cannot load it", path);
    return m;
}

static struct llama_context *open_context(struct llama_model *m, const oracle_opts *o, int n_needed) {
    struct llama_context_params cp = llama_context_default_params();
    if (n_needed > llama_model_n_ctx_train(m)) {
        /* GPT-2's learned positions end there (ggml asserts past them) */
        fail("%d positions do not fit the model's context of %d", n_needed, llama_model_n_ctx_train(m));
        return NULL;
    }
    int n_ctx = o->n_ctx ? o->n_ctx : llama_model_n_ctx_train(m);
    if (n_ctx < n_needed) n_ctx = n_needed;
    cp.n_ctx = (uint32_t)n_ctx;
    cp.n_batch = (uint32_t)(n_needed > 512 ? n_needed : 512);
    cp.n_ubatch = cp.n_batch;
    cp.n_seq_max = 1;
    cp.n_threads = o->threads;
    cp.n_threads_batch = o->threads;
    cp.type_k = cp.type_v = o->kv_f16 ? GGML_TYPE_F16 : GGML_TYPE_F32;
    cp.flash_attn_type = o->flash < 0 ? LLAMA_FLASH_ATTN_TYPE_AUTO
                         : o->flash ? LLAMA_FLASH_ATTN_TYPE_ENABLED : LLAMA_FLASH_ATTN_TYPE_DISABLED;
    cp.no_perf = true;
    struct llama_context *c = llama_init_from_model(m, cp);
    if (!c) fail("cannot make a llama.cpp context of %d positions", n_ctx);
    return c;
}

static int32_t *read_ids(const char *path, int *n) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fail("%s: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 1024, len = 0;
    int32_t *ids = malloc(cap * sizeof *ids);
    size_t got;
    while (ids && (got = fread(ids + len, sizeof *ids, cap - len, f)) > 0) {
        len += got;
        if (len == cap) {
            int32_t *more = realloc(ids, 2 * cap * sizeof *ids);
            if (!more) {
                free(ids);
                ids = NULL;
            }
            ids = more;
            cap *= 2;
        }
    }
    fclose(f);
    if (!ids) fail("out of memory");
    else if (len == 0 || len > 1 << 20) {
        fail("%s: %zu ids (want 1 to 2^20)", path, len);
        free(ids);
        return NULL;
    }
    *n = (int)len;
    return ids;
}

/* Decodes ids[0, n) at positions pos0.. in one llama_decode call; the
 * logits of every position are kept when all_logits, else the last one's. */
static int decode(struct llama_context *c, const int32_t *ids, int n, int pos0, int all_logits) {
    struct llama_batch b = llama_batch_init(n, 0, 1);
    for (int i = 0; i < n; i++) {
        b.token[i] = ids[i];
        b.pos[i] = pos0 + i;
        b.n_seq_id[i] = 1;
        b.seq_id[i][0] = 0;
        b.logits[i] = all_logits || i == n - 1;
    }
    b.n_tokens = n;
    int r = llama_decode(c, b);
    llama_batch_free(b);
    return r;
}

static int check_ids(const struct llama_vocab *v, const int32_t *ids, int n) {
    int nv = llama_vocab_n_tokens(v);
    for (int i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= nv) return fail("id %d at %d is outside the vocabulary of %d", ids[i], i, nv);
    return 0;
}

static int cmd_info(const char *path, const oracle_opts *o) {
    struct llama_model *m = open_model(path, o);
    if (!m) return 1;
    const struct llama_vocab *v = llama_model_get_vocab(m);
    char desc[256], arch[64] = "?";
    llama_model_desc(m, desc, sizeof desc);
    llama_model_meta_val_str(m, "general.architecture", arch, sizeof arch);
    printf("model: %s\narch: %s\nn_vocab: %d\nn_ctx_train: %d\nn_embd: %d\nn_layer: %d\nn_head: %d\n"
           "n_head_kv: %d\nbos: %d\neos: %d\nadd_bos: %d\nvocab_type: %d\n",
           desc, arch, llama_vocab_n_tokens(v), llama_model_n_ctx_train(m), llama_model_n_embd(m),
           llama_model_n_layer(m), llama_model_n_head(m), llama_model_n_head_kv(m), llama_vocab_bos(v),
           llama_vocab_eos(v), llama_vocab_get_add_bos(v), (int)llama_vocab_type(v));
    print_backend(stdout);
    printf("system: %s\n", llama_print_system_info());
    llama_model_free(m);
    return 0;
}

static int cmd_tokenize(const char *path, const char *text_path, const oracle_opts *o) {
    FILE *f = fopen(text_path, "rb");
    if (!f) return fail("%s: %s", text_path, strerror(errno));
    size_t cap = 1 << 16, len = 0, got;
    char *text = malloc(cap);
    while (text && (got = fread(text + len, 1, cap - len, f)) > 0) {
        len += got;
        if (len == cap) {
            char *more = realloc(text, cap *= 2);
            if (!more) free(text);
            text = more;
        }
    }
    fclose(f);
    if (!text) return fail("out of memory");
    if (len > INT32_MAX / 2) {
        free(text);
        return fail("%s: too long", text_path);
    }
    struct llama_model_params mp = llama_model_default_params();
    mp.vocab_only = true;
    struct llama_model *m = llama_model_load_from_file(path, mp);
    if (!m) {
        free(text);
        return fail("%s: llama.cpp cannot load its vocabulary", path);
    }
    const struct llama_vocab *v = llama_model_get_vocab(m);
    int n_max = (int)len + 8;
    int32_t *ids = malloc((size_t)n_max * sizeof *ids);
    int n = ids ? llama_tokenize(v, text, (int32_t)len, ids, n_max, !o->no_special, !o->no_special) : 0;
    int rc = 0;
    if (!ids) rc = fail("out of memory");
    else if (n < 0) rc = fail("llama_tokenize wants %d ids, more than %d", -n, n_max);
    else {
        for (int i = 0; i < n; i++) printf(i ? " %d" : "%d", ids[i]);
        putchar('\n');
    }
    free(ids);
    free(text);
    llama_model_free(m);
    return rc;
}

static int cmd_logits(const char *path, const char *ids_path, const char *out_path, const oracle_opts *o) {
    int n, rc = 0;
    int32_t *ids = read_ids(ids_path, &n);
    if (!ids) return 1;
    struct llama_model *m = open_model(path, o);
    struct llama_context *c = m ? open_context(m, o, n) : NULL;
    FILE *out = NULL;
    if (!c) rc = 1;
    const struct llama_vocab *v = m ? llama_model_get_vocab(m) : NULL;
    if (!rc) rc = check_ids(v, ids, n);
    if (!rc && !(out = fopen(out_path, "wb"))) rc = fail("%s: %s", out_path, strerror(errno));
    int nv = v ? llama_vocab_n_tokens(v) : 0;
    int chunk = o->chunk > 0 ? o->chunk : n;
    for (int p = 0; !rc && p < n; p += chunk) {
        int k = n - p < chunk ? n - p : chunk;
        if (decode(c, ids + p, k, p, 1)) {
            rc = fail("llama_decode failed at position %d", p);
            break;
        }
        for (int i = 0; i < k && !rc; i++) {
            const float *lg = llama_get_logits_ith(c, i);
            if (!lg) rc = fail("no logits for position %d", p + i);
            else if (fwrite(lg, sizeof *lg, (size_t)nv, out) != (size_t)nv)
                rc = fail("%s: write failed", out_path);
        }
    }
    if (out && fclose(out) && !rc) rc = fail("%s: write failed", out_path);
    if (c) llama_free(c);
    if (m) llama_model_free(m);
    free(ids);
    return rc;
}

/* Argmax (lowest id among equal maxima) and the gap to the runner-up. */
static int argmax(const float *x, int n, float *gap) {
    int best = 0;
    float second = -INFINITY;
    for (int i = 1; i < n; i++) {
        if (x[i] > x[best]) {
            second = x[best];
            best = i;
        } else if (x[i] > second) {
            second = x[i];
        }
    }
    *gap = x[best] - second;
    return best;
}

static int cmd_greedy(const char *path, const char *ids_path, int n_gen, const oracle_opts *o) {
    int n, rc = 0;
    int32_t *ids = read_ids(ids_path, &n);
    if (!ids) return 1;
    struct llama_model *m = open_model(path, o);
    struct llama_context *c = m ? open_context(m, o, n + n_gen) : NULL;
    if (!c) rc = 1;
    const struct llama_vocab *v = m ? llama_model_get_vocab(m) : NULL;
    if (!rc) rc = check_ids(v, ids, n);
    if (!rc && decode(c, ids, n, 0, 0)) rc = fail("llama_decode of the %d-token prompt failed", n);
    int nv = v ? llama_vocab_n_tokens(v) : 0;
    for (int i = 0; !rc && i < n_gen; i++) {
        float gap;
        int32_t tok = argmax(llama_get_logits_ith(c, -1), nv, &gap);
        printf("%d %.9g\n", tok, gap);
        if (i + 1 < n_gen && decode(c, &tok, 1, n + i, 0)) rc = fail("llama_decode failed at step %d", i);
    }
    if (c) llama_free(c);
    if (m) llama_model_free(m);
    free(ids);
    return rc;
}

static int type_of(const char *name, enum llama_ftype *ft, enum ggml_type *gt) {
    static const struct {
        const char *name;
        enum llama_ftype ft;
        enum ggml_type gt;
    } types[] = {
        {"f32", LLAMA_FTYPE_ALL_F32, GGML_TYPE_F32},      {"f16", LLAMA_FTYPE_MOSTLY_F16, GGML_TYPE_F16},
        {"bf16", LLAMA_FTYPE_MOSTLY_BF16, GGML_TYPE_BF16}, {"q8_0", LLAMA_FTYPE_MOSTLY_Q8_0, GGML_TYPE_Q8_0},
        {"q4_0", LLAMA_FTYPE_MOSTLY_Q4_0, GGML_TYPE_Q4_0},
    };
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (!strcmp(name, types[i].name)) {
            if (ft) *ft = types[i].ft;
            if (gt) *gt = types[i].gt;
            return 0;
        }
    return -1;
}

static int cmd_quantize(int argc, char **argv) {
    if (argc < 3) return usage("quantize IN OUT TYPE [--pure] [--output-type TYPE]");
    struct llama_model_quantize_params qp = llama_model_quantize_default_params();
    if (type_of(argv[2], &qp.ftype, NULL)) return usage("quantize: TYPE is f32|f16|bf16|q8_0|q4_0");
    for (int i = 3; i < argc; i++) {
        if (!strcmp(argv[i], "--pure")) qp.pure = true;
        else if (!strcmp(argv[i], "--output-type") && i + 1 < argc) {
            if (type_of(argv[++i], NULL, &qp.output_tensor_type)) return usage("quantize: bad --output-type");
        } else return usage("quantize: unknown option");
    }
    qp.nthread = 1;
    uint32_t r = llama_model_quantize(argv[0], argv[1], &qp);
    return r ? fail("llama_model_quantize %s -> %s (%s) failed with %u", argv[0], argv[1], argv[2], r) : 0;
}

static int cmd_bench(const char *path, const char *what, int n, int reps, const oracle_opts *o) {
    int is_pp = !strcmp(what, "pp");
    if (!is_pp && strcmp(what, "tg")) return usage("bench: pp or tg");
    struct llama_model *m = open_model(path, o);
    /* the context llama-bench gives a test: its own tokens (ggml pads the
     * KV cache to 256 cells), unless --ctx says otherwise */
    oracle_opts ob = *o;
    if (!ob.n_ctx) ob.n_ctx = n;
    struct llama_context *c = m ? open_context(m, &ob, n) : NULL;
    if (!c) {
        if (m) llama_model_free(m);
        return 1;
    }
    const struct llama_vocab *v = llama_model_get_vocab(m);
    int nv = llama_vocab_n_tokens(v), rc = 0;
    int32_t *ids = malloc((size_t)n * sizeof *ids);
    if (!ids) rc = fail("out of memory");
    for (int i = 0; ids && i < n; i++) ids[i] = (int32_t)((1 + 7u * (unsigned)i) % (unsigned)nv);
    for (int r = -1; !rc && r < reps; r++) { /* r = -1: the warm-up */
        llama_memory_clear(llama_get_memory(c), true);
        double w0 = now_s(CLOCK_MONOTONIC), c0 = now_s(CLOCK_PROCESS_CPUTIME_ID);
        if (is_pp) rc = decode(c, ids, n, 0, 0) ? fail("llama_decode of %d tokens failed", n) : 0;
        else
            for (int i = 0; i < n && !rc; i++)
                rc = decode(c, ids + i, 1, i, 0) ? fail("llama_decode failed at step %d", i) : 0;
        llama_synchronize(c);
        double wall = now_s(CLOCK_MONOTONIC) - w0, cpu = now_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
        if (!rc && r >= 0)
            printf("{\"test\": \"%s%d\", \"rep\": %d, \"wall_ms\": %.6f, \"cpu_ms\": %.6f, \"tok_s\": %.3f}\n",
                   what, n, r, wall * 1e3, cpu * 1e3, n / wall);
    }
    free(ids);
    llama_free(c);
    llama_model_free(m);
    return rc;
}

int main(int argc, char **argv) {
    oracle_opts o = {.threads = 1, .flash = -1};
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-t") && i + 1 < argc) {
            if (parse_int(argv[++i], 1, 256, &o.threads)) return usage("-t: 1 to 256");
        } else if (!strcmp(a, "--kv") && i + 1 < argc) {
            const char *k = argv[++i];
            if (!strcmp(k, "f16")) o.kv_f16 = 1;
            else if (strcmp(k, "f32")) return usage("--kv: f32 or f16");
        } else if (!strcmp(a, "--ctx") && i + 1 < argc) {
            if (parse_int(argv[++i], 1, 1 << 20, &o.n_ctx)) return usage("--ctx: 1 to 2^20");
        } else if (!strcmp(a, "--chunk") && i + 1 < argc) {
            if (parse_int(argv[++i], 1, 1 << 20, &o.chunk)) return usage("--chunk: 1 to 2^20");
        } else if (!strcmp(a, "--flash") && i + 1 < argc) {
            const char *f = argv[++i];
            o.flash = !strcmp(f, "on") ? 1 : !strcmp(f, "off") ? 0 : !strcmp(f, "auto") ? -1 : 2;
            if (o.flash == 2) return usage("--flash: on, off or auto");
        } else if (!strcmp(a, "--no-special")) o.no_special = 1;
        else if (!strcmp(a, "--no-repack")) o.no_repack = 1;
        else if (!strcmp(a, "-v")) o.verbose = 1;
        else return usage("unknown option");
    }
    if (i >= argc) return usage("no command");
    verbose_log = o.verbose;
    llama_log_set(log_cb, NULL);
    if (load_backends()) return 1;
    llama_backend_init();
    const char *cmd = argv[i++];
    int n = argc - i, rc, k;
    char **a = argv + i;
    if (!strcmp(cmd, "info") && n == 1) rc = cmd_info(a[0], &o);
    else if (!strcmp(cmd, "tokenize") && n == 2) rc = cmd_tokenize(a[0], a[1], &o);
    else if (!strcmp(cmd, "logits") && n == 3) rc = cmd_logits(a[0], a[1], a[2], &o);
    else if (!strcmp(cmd, "greedy") && n == 3)
        rc = parse_int(a[2], 1, 1 << 20, &k) ? usage("greedy: N is 1 to 2^20") : cmd_greedy(a[0], a[1], k, &o);
    else if (!strcmp(cmd, "quantize")) rc = cmd_quantize(n, a);
    else if (!strcmp(cmd, "bench") && n == 4) {
        int reps;
        if (parse_int(a[2], 1, 1 << 20, &k) || parse_int(a[3], 1, 10000, &reps)) rc = usage("bench: N and REPS");
        else rc = cmd_bench(a[0], a[1], k, reps, &o);
    } else rc = usage("unknown command or wrong number of arguments");
    llama_backend_free();
    return rc;
}
