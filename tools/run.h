/* run.h — what the commands that run a model share: find and load it, build
 * its tokenizer and forward pass, and say clearly what went wrong. */
#ifndef TINYGPT_TOOLS_RUN_H
#define TINYGPT_TOOLS_RUN_H

#include "model/gpt.h"
#include "model/tokenizer.h"
#include "weights/gpt2.h"

typedef struct run_opts {
    int n_threads;    /* >= 1 */
    const char *isa;  /* NULL: $TINYGPT_ISA or the best */
    int n_ctx;        /* 0: the model's context */
    int ctx_min;      /* smallest --ctx the command accepts (for the message) */
    int no_check;     /* --no-check: skip the load-time scan for NaN/inf weights */
    const char *tokenizer; /* --tokenizer: a vocabulary used instead of the model's, or NULL */
    const char *kv_type;   /* --kv-type: "f32" (NULL: the default) or "f16" */
    int no_tokenizer_opt;  /* the command has no --tokenizer (the messages say so) */
} run_opts;

/* The option every command that loads a model takes, and its help line
 * (dst: an int set to 1). */
#define RUN_OPT_NO_CHECK(dst) CLI_FLAG("--no-check", NULL, dst, 1)
#define RUN_HELP_NO_CHECK \
    "  --no-check            do not scan the weights for NaN/inf at load (huge\n" \
    "                        files; a non-finite logit still stops the run)\n"

/* --tokenizer PATH, wherever a model is loaded (dst: a const char *). */
#define RUN_OPT_TOKENIZER(dst) CLI_STR("--tokenizer", NULL, dst)
#define RUN_HELP_TOKENIZER \
    "  --tokenizer PATH      use this vocabulary instead of the model's: llama2.c\n" \
    "                        tokenizer.bin, GGUF, tokenizer.json or Hugging Face\n" \
    "                        folder\n"

/* --kv-type f32|f16, wherever a model runs (dst: a const char *). */
#define RUN_OPT_KV_TYPE(dst) CLI_STR("--kv-type", NULL, dst)
#define RUN_HELP_KV_TYPE \
    "  --kv-type TYPE        KV cache elements: f32 or f16 (half the bytes; attention\n" \
    "                        widens them as it reads) (default f32)\n"

/* Parses a --kv-type name (NULL: f32). Returns EXIT_OK, or the usage exit
 * code after printing a one-line error. */
int run_kv_type(const char *cmd, const char *name, tg_wtype *out);

/* Replaces *vocab with the one at path (NULL: keeps it). With n_vocab > 0
 * (a model's token ids; vocab is that model's, named model_path) the new one
 * must fit it: the kind and size of the model's own tokenizer, or when it
 * has none, n_vocab tokens. Returns EXIT_OK, or the exit code after printing
 * a one-line error (vocab then unchanged). */
int run_use_tokenizer(const char *cmd, tg_vocab *vocab, const char *path, const char *model_path, int n_vocab);

/* A model without a vocabulary (a llama2.c checkpoint keeps its tokenizer in
 * a file of its own) cannot encode text: says so and how to give one
 * (--tokenizer, or when the command has none, a GGUF made by convert).
 * Returns EXIT_OK when vocab has tokens, else the exit code after printing
 * a one-line error naming path. */
int run_need_vocab(const char *cmd, const char *path, const tg_vocab *vocab, int has_tokenizer_opt);

typedef struct run_ctx {
    tg_gpt2_model model;
    tg_tokenizer *tok;
    tg_gpt *gpt;
    const char *model_path;
    int eos;          /* <|endoftext|>, or -1 */
} run_ctx;

/* Loads model_path (NULL: the default model) and prepares everything.
 * Returns EXIT_OK, or the exit code after printing a one-line error. */
int run_open(run_ctx *rc, const char *cmd, const char *model_path, const run_opts *o);
void run_close(run_ctx *rc);

/* Monotonic time in seconds. */
double run_now(void);

#endif
