/* tinygpt.h — the tinygpt library: run a GPT-2 on the CPU from C.
 *
 *   tinygpt *m;
 *   char err[TINYGPT_ERR_LEN];
 *   if (tinygpt_open(&m, "model.gguf", NULL, err) != TINYGPT_OK) { puts(err); ... }
 *   int ids[256]; size_t n;
 *   tinygpt_tokenize(m, "Hello", 5, 0, ids, 256, &n);
 *   float *logits = malloc(tinygpt_n_vocab(m) * sizeof(float));
 *   tinygpt_eval(m, ids, (int)n, 0, logits, 0);      // prefill: last logits
 *   int next = tinygpt_sample(m, logits);
 *   tinygpt_eval(m, &next, 1, (int)n, logits, 0);    // one decode step
 *   tinygpt_close(m);
 *
 * A model is loaded from a GGUF file (llama.cpp's gpt2 architecture) or a
 * Hugging Face GPT-2 folder. A `tinygpt` handle holds the weights, the
 * tokenizer, the KV cache, the worker threads and the sampler: use one
 * handle per thread (handles share nothing; the library has no global
 * mutable state). Functions that can fail return a tinygpt_status; the
 * message of the last failure on a handle is tinygpt_last_error(m).
 */
#ifndef TINYGPT_H
#define TINYGPT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TINYGPT_VERSION_MAJOR 0
#define TINYGPT_VERSION_MINOR 1
#define TINYGPT_ERR_LEN 512

typedef enum tinygpt_status {
    TINYGPT_OK = 0,
    TINYGPT_ERR_NOMEM,       /* allocation failed */
    TINYGPT_ERR_IO,          /* a file could not be opened or read */
    TINYGPT_ERR_FORMAT,      /* malformed model file */
    TINYGPT_ERR_UNSUPPORTED, /* valid but unsupported (tensor type, ISA, ...) */
    TINYGPT_ERR_ARG,         /* bad argument */
    TINYGPT_ERR_RANGE,       /* out of range (past the context, buffer too small) */
    TINYGPT_ERR_NUMERIC,
    TINYGPT_ERR_INTERRUPTED,
} tinygpt_status;

/* A short description of a status ("out of memory", ...). */
const char *tinygpt_status_str(tinygpt_status s);
const char *tinygpt_version(void); /* "0.1.0" */

typedef struct tinygpt tinygpt;

typedef struct tinygpt_options {
    int n_threads;   /* worker threads, >= 1 (default 1) */
    const char *isa; /* "scalar", "avx2", "avx512", "neon", or NULL: the best */
    int n_ctx;       /* KV cache length; 0 (default): the model's context */
} tinygpt_options;

void tinygpt_options_init(tinygpt_options *o);

/* Loads a model. opts may be NULL (defaults). On failure *out is NULL and
 * err (if non-NULL, TINYGPT_ERR_LEN bytes) holds a one-line message. A
 * tensor holding NaN or inf is TINYGPT_ERR_NUMERIC (every tensor is scanned
 * once at load). */
tinygpt_status tinygpt_open(tinygpt **out, const char *path, const tinygpt_options *opts,
                            char *err);
void tinygpt_close(tinygpt *m);

/* The message of the last failure on m ("" if none). */
const char *tinygpt_last_error(const tinygpt *m);

int tinygpt_n_vocab(const tinygpt *m);  /* V: logits per position */
int tinygpt_n_ctx(const tinygpt *m);    /* positions the KV cache holds */
int tinygpt_n_layer(const tinygpt *m);
int tinygpt_n_head(const tinygpt *m);
int tinygpt_n_embd(const tinygpt *m);
int tinygpt_eos(const tinygpt *m);      /* <|endoftext|>, or -1 */

/* Text -> ids. Writes at most cap ids and sets *n_ids to the full count
 * (ids may be NULL with cap 0 to ask for the count); if cap is too small
 * the result is TINYGPT_ERR_RANGE (call again with *n_ids). With
 * parse_special, "<|endoftext|>" in the text becomes its id. */
tinygpt_status tinygpt_tokenize(tinygpt *m, const char *text, size_t len, int parse_special,
                                int *ids, size_t cap, size_t *n_ids);

/* Ids -> bytes (not necessarily valid UTF-8 on their own). Writes at most
 * cap bytes plus a NUL if it fits, and sets *len to the full length; too
 * small a buffer is TINYGPT_ERR_RANGE. */
tinygpt_status tinygpt_detokenize(tinygpt *m, const int *ids, size_t n, char *buf, size_t cap,
                                  size_t *len);

/* The bytes of one token (*len of them), or NULL for an id out of range. */
const char *tinygpt_token_piece(const tinygpt *m, int id, size_t *len);

/* Streaming: how many leading bytes of buf[n] end on a UTF-8 character
 * boundary (an incomplete trailing character is held back). */
size_t tinygpt_utf8_complete(const char *buf, size_t n);

/* Runs tokens[n] at positions pos..pos+n-1 through the model, appending to
 * the KV cache. The cache holds positions 0..P-1 from earlier calls (P =
 * tinygpt_n_past, 0 after open), and pos must be <= P: pos == P appends,
 * pos < P rewrites from pos (positions pos..P-1 are forgotten, so pos 0
 * starts afresh), pos > P is TINYGPT_ERR_RANGE with a message naming pos
 * and P. pos + n beyond tinygpt_n_ctx is TINYGPT_ERR_RANGE too; a token id
 * outside [0, V) is TINYGPT_ERR_ARG. After a success P = pos + n; after a
 * failure the cache is unchanged. Writes logits[n, V] if all_logits, else
 * the last position's logits[V]. A NaN or inf logit is TINYGPT_ERR_NUMERIC
 * (the logits are then garbage; the cache holds the batch: P = pos + n). */
tinygpt_status tinygpt_eval(tinygpt *m, const int *tokens, int n, int pos, float *logits,
                            int all_logits);
/* P: how many positions the KV cache holds (the next pos to append at). */
int tinygpt_n_past(const tinygpt *m);

/* Sampling settings of the handle's sampler. */
typedef struct tinygpt_sampling {
    float temp;           /* 0 = greedy, or [1.17549435e-38 (FLT_MIN), 100]: below FLT_MIN
                             1/temp overflows, so that is TINYGPT_ERR_ARG (default 0.8) */
    int top_k;            /* 0 = off (default 40) */
    float top_p;          /* [0, 1]; 1 = off (default 0.95) */
    float min_p;          /* [0, 1]; 0 = off (default 0.05) */
    float repeat_penalty; /* [1, 10]; 1 = off (default 1) */
    int repeat_window;    /* recent tokens the penalty sees (default 64) */
    uint64_t seed;        /* any value (default 0) */
} tinygpt_sampling;

void tinygpt_sampling_init(tinygpt_sampling *s);
/* Replaces the sampler (its history and RNG restart from the seed). */
tinygpt_status tinygpt_set_sampling(tinygpt *m, const tinygpt_sampling *s);
/* Picks the next token from logits[V]; the token is also recorded for the
 * repetition penalty. NaN and -inf logits are never picked; if some are
 * +inf, one of those is (uniformly). Returns -1 (tinygpt_last_error says
 * why) when every logit is NaN or -inf. */
int tinygpt_sample(tinygpt *m, const float *logits);
/* Records a token (e.g. of the prompt) for the repetition penalty. */
void tinygpt_accept(tinygpt *m, int token);

#ifdef __cplusplus
}
#endif

#endif
