/* cmd_init.c — `tinygpt init`: a randomly initialised GPT-2 (or, with
 * --arch llama, Llama) written as GGUF, for benchmarks, tests and as the
 * start of training. GPT-2's initialisation: weights N(0, 0.02), the
 * residual projections (attn_output, ffn_down) N(0, 0.02/sqrt(2L)), biases
 * 0, layer norms weight 1 / bias 0; the output is tied to token_embd.
 * Llama: the same normals (llama2.c's model.py: attn_output and ffn_down
 * scaled by 1/sqrt(2L)), RMSNorm gains 1, tied unless --untied. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cli.h"
#include "weights/gpt2.h"
#include "weights/llama.h"
#include "weights/model.h"
#include "weights/vocab.h"

static const char *usage_text =
    "usage: tinygpt init --layers L --heads H --embd E --ctx C\n"
    "                    (--vocab-from PATH | --byte-vocab) [--seed S] [--dtype TYPE]\n"
    "                    -o OUT.gguf\n"
    "  --layers L          transformer blocks, [1, 1024] (required)\n"
    "  --heads H           attention heads per block, [1, 1024], dividing E\n"
    "                      (required)\n"
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
    "token embedding. Exactly one of --vocab-from and --byte-vocab.\n"
    "A Llama (RMSNorm, RoPE, SwiGLU, grouped-query attention, no biases):\n"
    "  --arch ARCH         gpt2 | llama (default gpt2)\n"
    "  --kv-heads KVH      llama: key/value heads, [1, 1024], dividing --heads\n"
    "                      (default: --heads; 1 is multi-query attention)\n"
    "  --ff F              llama: feed-forward width, [1, 2^20] (default llama2.c's:\n"
    "                      2/3 of 4E rounded up to a multiple of 32)\n"
    "  --rope-theta T      llama: RoPE base, (0, 1e9] (default 10000)\n"
    "  --untied            llama: an output.weight of its own (default: tied)\n"
    "  --vocab-from PATH   llama: any vocabulary\n"
    "                      (tokenizer.bin, tokenizer.json, GGUF)\n";

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
/* The next n floats at *p, filled with N(0, sd), or with 1 when sd < 0. */
static float *fill_next(float **p, rng *r, size_t n, double sd) {
    float *q = *p;
    if (sd < 0) fill_const(q, n, 1.0f);
    else fill_normal(r, q, n, sd);
    *p += n;
    return q;
}

static void help(FILE *f) { fputs(usage_text, f); }

/* A random Llama: one arena for every float, the views carved out of it. */
static int init_llama(const tg_model_config *cfg, int untied, long seed, tg_dtype dtype, tg_vocab *vocab,
                      const char *out) {
    tg_err err = {{0}};
    size_t e = (size_t)cfg->n_embd, f = (size_t)cfg->n_ff, V = (size_t)cfg->n_vocab;
    size_t hs = (size_t)tg_config_head_dim(cfg), qd = (size_t)cfg->n_head * hs;
    size_t kvd = (size_t)tg_config_n_kv_head(cfg) * hs, L = (size_t)cfg->n_layer;
    size_t per_layer = 2 * e + qd * e + 2 * kvd * e + e * qd + 3 * f * e;
    size_t n = V * e * (untied ? 2 : 1) + e + L * per_layer;
    float *arena = n < SIZE_MAX / sizeof(float) ? malloc(n * sizeof(float)) : NULL;
    tg_llama_layer *layers = calloc(L, sizeof *layers);
    if (!arena || !layers) {
        free(arena);
        free(layers);
        return cli_error("init", "out of memory for %zu parameters", n);
    }
    rng r = {(uint64_t)seed};
    double std = 0.02, std_res = 0.02 / sqrt(2.0 * (double)L);
    float *p = arena;
#define TAKE(cnt, sd) fill_next(&p, &r, (cnt), (sd))
    tg_llama_weights w = {.layers = layers, .tied = !untied};
    w.tok_embd = tg_weight_f32(TAKE(V * e, std), (int)V, (int)e);
    for (size_t l = 0; l < L; l++) {
        tg_llama_layer *y = &layers[l];
        y->attn_norm = TAKE(e, -1);
        y->wq = tg_weight_f32(TAKE(qd * e, std), (int)qd, (int)e);
        y->wk = tg_weight_f32(TAKE(kvd * e, std), (int)kvd, (int)e);
        y->wv = tg_weight_f32(TAKE(kvd * e, std), (int)kvd, (int)e);
        y->wo = tg_weight_f32(TAKE(e * qd, std_res), (int)e, (int)qd);
        y->ffn_norm = TAKE(e, -1);
        y->w1 = tg_weight_f32(TAKE(f * e, std), (int)f, (int)e);
        y->w3 = tg_weight_f32(TAKE(f * e, std), (int)f, (int)e);
        y->w2 = tg_weight_f32(TAKE(e * f, std_res), (int)e, (int)f);
    }
    w.out_norm = TAKE(e, -1);
    w.output = untied ? tg_weight_f32(TAKE(V * e, std), (int)V, (int)e) : w.tok_embd;
#undef TAKE
    tg_status s = tg_llama_save(out, cfg, &w, vocab, (int)dtype, &err);
    free(arena);
    free(layers);
    if (s) return cli_error("init", "%s", err.msg);
    fprintf(stderr, "tinygpt init: wrote %s (llama: %d layers, %d heads, %d kv heads, embedding %d, feed-forward %d, "
            "context %d, vocab %d, %zu parameters)\n", out, cfg->n_layer, cfg->n_head, tg_config_n_kv_head(cfg),
            cfg->n_embd, cfg->n_ff, cfg->n_ctx, cfg->n_vocab, tg_llama_n_params(cfg, !untied));
    return EXIT_OK;
}

int cmd_init(int argc, char **argv) {
    long L = 0, H = 0, E = 0, C = 0, seed = 1, KVH = 0, FF = 0;
    const char *vocab_from = NULL, *out = NULL, *dtype_s = "f32", *arch_s = "gpt2";
    const char *theta_s = NULL;
    int byte_vocab = 0, untied = 0;
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
        {CLI_STR("--arch", NULL, &arch_s)},
        {CLI_INT("--kv-heads", NULL, &KVH, 1, 1024)},
        {CLI_INT("--ff", NULL, &FF, 1, 1 << 20)},
        {CLI_STR("--rope-theta", NULL, &theta_s)},
        {CLI_FLAG("--untied", NULL, &untied, 1)},
        {0},
    };
    int parsed = cli_parse("init", help, opts, argc, argv);
    if (parsed != CLI_RUN) return parsed;
    if (!L || !H || !E || !C) return cli_usage("init", "--layers, --heads, --embd and --ctx are required (see tinygpt init --help)");
    if (!out) return cli_usage("init", "-o OUT.gguf is required");
    if (!!vocab_from == byte_vocab) return cli_usage("init", "give exactly one of --vocab-from PATH and --byte-vocab");
    int llama = tg_arch_parse(arch_s, strlen(arch_s));
    if (llama < 0) return cli_usage("init", "--arch must be gpt2 or llama, not '%s'", arch_s);
    llama = llama == TG_ARCH_LLAMA;
    if (!llama && (KVH || FF || theta_s || untied))
        return cli_usage("init", "--kv-heads, --ff, --rope-theta and --untied need --arch llama");
    if (E % H) return cli_usage("init", "--embd %ld is not a multiple of --heads %ld", E, H);
    if (KVH && H % KVH) return cli_usage("init", "--kv-heads %ld does not divide --heads %ld", KVH, H);
    double theta = 10000.0;
    if (theta_s) {
        char *end;
        theta = strtod(theta_s, &end);
        if (end == theta_s || *end || !(theta > 0 && theta <= 1e9))
            return cli_usage("init", "--rope-theta must be a number in (0, 1e9], not '%s'", theta_s);
    }
    tg_dtype dtype;
    if (tg_dtype_parse(dtype_s, &dtype))
        return cli_usage("init", "--dtype must be f32, f16, bf16, q8_0 or q4_0, not '%s'", dtype_s);
    int oc = cli_out_check("init", "-o", out);
    if (!oc) oc = cli_out_not_input("init", "-o", out, "--vocab-from", vocab_from);
    if (oc) return oc;

    tg_err err = {{0}};
    tg_vocab vocab;
    if (byte_vocab) {
        if (tg_vocab_bytes(&vocab, &err)) return cli_error("init", "%s", err.msg);
    } else if (llama) {
        if (tg_vocab_load(&vocab, vocab_from, &err)) return cli_error("init", "%s", err.msg);
        if (!vocab.n_tokens) {
            tg_vocab_free(&vocab);
            return cli_error("init", "%s: has no tokenizer", vocab_from);
        }
    } else {
        tg_model vm;
        if (tg_model_load(&vm, vocab_from, TG_LOAD_VOCAB_ONLY, &err)) {
            /* not a model: a Llama's tokenizer file (tokenizer.bin/.json) takes --arch llama */
            tg_vocab sv;
            tg_err ignored;
            int spm = 0;
            if (!tg_vocab_load(&sv, vocab_from, &ignored)) {
                spm = sv.kind == TG_VOCAB_SPM;
                tg_vocab_free(&sv);
            }
            if (spm)
                return cli_error("init", "%s: a SentencePiece (Llama) vocabulary: add --arch llama to initialise a "
                                 "Llama with it", vocab_from);
            return cli_error("init", "%s", err.msg);
        }
        if (vm.cfg.arch != TG_ARCH_GPT2) {
            const char *arch = tg_arch_name(vm.cfg.arch); /* a static name */
            tg_model_free(&vm);
            return cli_error("init", "%s: a %s model: add --arch llama to initialise a Llama with its vocabulary "
                             "(a GPT-2 takes a GPT-2 model's)", vocab_from, arch);
        }
        if (!vm.vocab.n_tokens) {
            tg_model_free(&vm);
            return cli_error("init", "%s: has no tokenizer", vocab_from);
        }
        vocab = vm.vocab; /* take it over */
        memset(&vm.vocab, 0, sizeof vm.vocab);
        tg_model_free(&vm);
    }
    if (llama) {
        /* llama2.c's default hidden size: 2/3 of 4E, up to a multiple of 32 */
        long ff = FF ? FF : (8 * E / 3 + 31) / 32 * 32;
        tg_model_config lc = {.n_layer = (int)L, .n_head = (int)H, .n_embd = (int)E, .n_ctx = (int)C,
                              .n_vocab = vocab.n_tokens, .n_ff = (int)ff, .ln_eps = 1e-5f,
                              .arch = TG_ARCH_LLAMA, .n_kv_head = (int)(KVH ? KVH : H),
                              .head_dim = (int)(E / H), .rope_theta = (float)theta,
                              .rope_dim = (int)(E / H), .rope_pairs = TG_ROPE_ADJACENT};
        if (tg_llama_config_check(&lc, "init", &err)) {
            tg_vocab_free(&vocab);
            return cli_usage("init", "%s", err.msg);
        }
        int rc = init_llama(&lc, untied, seed, dtype, &vocab, out);
        tg_vocab_free(&vocab);
        return rc;
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
