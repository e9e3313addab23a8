/* cmd_init.c — `tinygpt init`: a randomly initialised GPT-2 written as GGUF,
 * for benchmarks and as the start of training. GPT-2's initialisation:
 * weights N(0, 0.02), the residual projections (attn_output, ffn_down)
 * N(0, 0.02/sqrt(2L)), biases 0, layer norms weight 1 / bias 0; the output
 * is tied to token_embd. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cli.h"
#include "weights/gpt2.h"

static const char *usage_text =
    "usage: tinygpt init --layers L --heads H --embd E --ctx C (--vocab-from PATH | --byte-vocab)\n"
    "                    [--seed S] [--dtype TYPE] -o OUT.gguf\n"
    "  --layers L          transformer blocks, [1, 1024] (required)\n"
    "  --heads H           attention heads per block, [1, 1024], dividing E (required)\n"
    "  --embd E            width, [1, 65536] (required; the MLP is 4E wide)\n"
    "  --ctx C             context length in tokens, [1, 2^20] (required)\n"
    "  --vocab-from PATH   take the tokenizer of a GGUF or Hugging Face folder\n"
    "  --byte-vocab        256 byte tokens + <|endoftext|> (V = 257)\n"
    "  --seed S            random seed, [0, 2^63-1] (default 1)\n"
    "  --dtype TYPE        how the matrices are stored: f32|f16|bf16|q8_0|q4_0\n"
    "                      (default f32)\n"
    "  -o, --output OUT    the GGUF file to write (required)\n"
    "GPT-2's initialisation: weights N(0, 0.02), the residual projections\n"
    "N(0, 0.02/sqrt(2L)), biases 0, layer norms 1 and 0; the output tied to the\n"
    "token embedding. Exactly one of --vocab-from and --byte-vocab.\n";

/* splitmix64: a small seeded generator; Box-Muller for normals */
typedef struct rng {
    uint64_t s;
} rng;
static uint64_t rng_next(rng *r) {
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static double rng_uniform(rng *r) { return ((double)(rng_next(r) >> 11) + 0.5) * 0x1p-53; } /* (0, 1) */
static void fill_normal(rng *r, float *x, size_t n, double std) {
    for (size_t i = 0; i < n; i += 2) {
        double u = rng_uniform(r), v = rng_uniform(r);
        double m = sqrt(-2.0 * log(u));
        x[i] = (float)(std * m * cos(2 * M_PI * v));
        if (i + 1 < n) x[i + 1] = (float)(std * m * sin(2 * M_PI * v));
    }
}
static void fill_const(float *x, size_t n, float v) {
    for (size_t i = 0; i < n; i++) x[i] = v;
}

static void help(FILE *f) { fputs(usage_text, f); }

int cmd_init(int argc, char **argv) {
    long L = 0, H = 0, E = 0, C = 0, seed = 1;
    const char *vocab_from = NULL, *out = NULL, *dtype_s = "f32";
    int byte_vocab = 0;
    const cli_opt opts[] = {
        {CLI_INT("--layers", NULL, &L, 1, 1024)},
        {CLI_INT("--heads", NULL, &H, 1, 1024)},
        {CLI_INT("--embd", NULL, &E, 1, 65536)},
        {CLI_INT("--ctx", NULL, &C, 1, 1 << 20)},
        {CLI_INT("--seed", NULL, &seed, 0, INT64_MAX)},
        {CLI_STR("--vocab-from", NULL, &vocab_from)},
        {CLI_FLAG("--byte-vocab", NULL, &byte_vocab, 1)},
        {CLI_STR("--dtype", NULL, &dtype_s)},
        {CLI_STR("-o", "--output", &out)},
        {0},
    };
    int parsed = cli_parse("init", help, opts, argc, argv);
    if (parsed != CLI_RUN) return parsed;
    if (!L || !H || !E || !C) return cli_usage("init", "--layers, --heads, --embd and --ctx are required (see tinygpt init --help)");
    if (!out) return cli_usage("init", "-o OUT.gguf is required");
    if (!!vocab_from == byte_vocab) return cli_usage("init", "give exactly one of --vocab-from PATH and --byte-vocab");
    if (E % H) return cli_usage("init", "--embd %ld is not a multiple of --heads %ld", E, H);
    tg_dtype dtype;
    if (tg_dtype_parse(dtype_s, &dtype))
        return cli_usage("init", "--dtype must be f32, f16, bf16, q8_0 or q4_0, not '%s'", dtype_s);
    int oc = cli_out_check("init", "-o", out);
    if (oc) return oc;

    tg_err err = {{0}};
    tg_vocab vocab;
    if (byte_vocab) {
        if (tg_vocab_bytes(&vocab, &err)) return cli_error("init", "%s", err.msg);
    } else {
        tg_gpt2_model vm;
        if (tg_gpt2_load(&vm, vocab_from, 1, &err)) return cli_error("init", "%s", err.msg);
        if (!vm.vocab.n_tokens) {
            tg_gpt2_free(&vm);
            return cli_error("init", "%s: has no tokenizer", vocab_from);
        }
        vocab = vm.vocab; /* take it over */
        memset(&vm.vocab, 0, sizeof vm.vocab);
        tg_gpt2_free(&vm);
    }
    tg_gpt2_config cfg = {.n_layer = (int)L, .n_head = (int)H, .n_embd = (int)E, .n_ctx = (int)C,
                          .n_vocab = vocab.n_tokens, .n_ff = (int)(4 * E), .ln_eps = 1e-5f};
    if (tg_gpt2_config_check(&cfg, "init", &err)) {
        tg_vocab_free(&vocab);
        return cli_usage("init", "%s", err.msg);
    }
    size_t n = tg_gpt2_n_params(&cfg, 1);
    float *arena = n < SIZE_MAX / sizeof(float) ? malloc(n * sizeof(float)) : NULL;
    tg_gpt2_layer *layers = calloc((size_t)L, sizeof *layers);
    if (!arena || !layers) {
        free(arena);
        free(layers);
        tg_vocab_free(&vocab);
        return cli_error("init", "out of memory for %zu parameters", n);
    }
    rng r = {(uint64_t)seed};
    size_t e = (size_t)E, f = (size_t)cfg.n_ff, V = (size_t)cfg.n_vocab;
    double std = 0.02, std_res = 0.02 / sqrt(2.0 * (double)L);
    float *p = arena;
#define TAKE(dst, cnt, init)      \
    do {                          \
        float *q_ = p;            \
        size_t c_ = (cnt);        \
        init;                     \
        (dst) = q_;               \
        p += c_;                  \
    } while (0)
#define TAKEW(dst, rows, cols, init)                             \
    do {                                                         \
        const float *v_;                                         \
        TAKE(v_, (size_t)(rows) * (cols), init);                 \
        (dst) = tg_weight_f32(v_, (int)(rows), (int)(cols));      \
    } while (0)
#define NORMAL(s) fill_normal(&r, q_, c_, (s))
#define CONST(v) fill_const(q_, c_, (v))
    tg_gpt2_weights w = {.layers = layers, .tied = 1};
    TAKEW(w.wte, V, e, NORMAL(std));
    TAKE(w.wpe, (size_t)C * e, NORMAL(std));
    for (long l = 0; l < L; l++) {
        tg_gpt2_layer *y = &layers[l];
        TAKE(y->ln1_w, e, CONST(1));
        TAKE(y->ln1_b, e, CONST(0));
        TAKEW(y->qkv_w, 3 * e, e, NORMAL(std));
        TAKE(y->qkv_b, 3 * e, CONST(0));
        TAKEW(y->proj_w, e, e, NORMAL(std_res));
        TAKE(y->proj_b, e, CONST(0));
        TAKE(y->ln2_w, e, CONST(1));
        TAKE(y->ln2_b, e, CONST(0));
        TAKEW(y->up_w, f, e, NORMAL(std));
        TAKE(y->up_b, f, CONST(0));
        TAKEW(y->down_w, e, f, NORMAL(std_res));
        TAKE(y->down_b, e, CONST(0));
    }
    TAKE(w.lnf_w, e, CONST(1));
    TAKE(w.lnf_b, e, CONST(0));
#undef TAKE
#undef TAKEW
#undef NORMAL
#undef CONST
    w.lm_head = w.wte;
    tg_status s = tg_gpt2_save(out, &cfg, &w, &vocab, dtype, &err);
    free(arena);
    free(layers);
    tg_vocab_free(&vocab);
    if (s) return cli_error("init", "%s", err.msg);
    fprintf(stderr, "tinygpt init: wrote %s (%d layers, %d heads, embedding %d, context %d, vocab %d, %zu parameters)\n",
            out, cfg.n_layer, cfg.n_head, cfg.n_embd, cfg.n_ctx, cfg.n_vocab, n);
    return EXIT_OK;
}
