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
 * Generation the way `tinygpt generate` does it, a token at a time:
 *
 *   static int on_token(void *user, const tinygpt_token *t) {
 *       fwrite(t->out, 1, t->out_len, stdout);   // whole UTF-8 characters
 *       return 0;                                // non-zero stops
 *   }
 *   tinygpt_generate_opts g;
 *   tinygpt_generate_opts_init(&g);
 *   g.max_tokens = 100;
 *   g.sampling.seed = 7;
 *   const char *stop[] = {"\n\n"};
 *   g.stop = stop, g.n_stop = 1;
 *   tinygpt_generate_text(m, "ROMEO:", 6, &g, on_token, NULL, NULL);
 *
 * A model is loaded from a GGUF file (llama.cpp's gpt2 or llama
 * architecture) or a Hugging Face GPT-2 or Llama folder with its tokenizer
 * (a llama2.c .bin holds none: `tinygpt convert --tokenizer` makes it a
 * GGUF). A `tinygpt` handle holds the weights, the tokenizer, the KV cache,
 * the worker threads and the sampler: use one handle per thread (handles
 * share nothing; the library has no global mutable state). Functions that
 * can fail return a tinygpt_status; the message of the last failure on a
 * handle is tinygpt_last_error(m).
 *
 * Ownership and lifetimes: the caller owns every buffer it passes (the
 * library copies what it keeps: stop strings, masks, settings) and frees
 * what it gets from a *_save / *_start / tinygpt_open with the matching
 * *_free / tinygpt_close. Pointers the library hands out (tinygpt_info's
 * strings, tensor names, token pieces, tinygpt_last_error) belong to the
 * handle and stay valid until tinygpt_close, except a tinygpt_token's,
 * which last until the next tinygpt_gen_next (or the callback's return).
 * A handle pointer m is never NULL (except for tinygpt_close and
 * tinygpt_last_error). A tinygpt_context does not depend on its handle.
 *
 * Beyond load/tokenize/eval/sample: model information and the tensor
 * table; special tokens; log-probabilities, top-k and a text's score;
 * attention weights [L, H, T, T] and a head mask; the KV cache's length,
 * truncation, its tokens, and saved contexts (fork a prompt); generation
 * with a per-token callback or step by step, with stop strings, EOS,
 * max tokens and the context crop of `tinygpt generate`.
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
typedef struct tinygpt_gen tinygpt_gen; /* a generation in progress (below) */

typedef struct tinygpt_options {
    int n_threads;   /* worker threads, >= 1 (default 1) */
    const char *isa; /* "scalar", "avx2", "avx512", "neon", or NULL: the best */
    int n_ctx;       /* KV cache length; 0 (default): the model's context */
    const char *kv_type; /* KV cache elements: "f32" or NULL (default), or "f16"
                            (half the bytes; attention widens them as it reads) */
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


/* ==== model information ==================================================
 * Strings in these structs belong to the handle: valid until tinygpt_close. */

typedef struct tinygpt_info {
    const char *arch;        /* "gpt2" */
    const char *path;        /* the model as opened */
    int n_layer;             /* L */
    int n_head;              /* H: query heads */
    int n_kv_head;           /* key/value heads (== H for GPT-2) */
    int n_embd;              /* E */
    int head_size;           /* E / H */
    int n_ff;                /* feed-forward width */
    int n_vocab;             /* V */
    int n_ctx_train;         /* the model's context */
    int n_ctx;               /* positions the KV cache holds (<= n_ctx_train) */
    int tied;                /* 1: the LM head is the token embedding */
    float norm_eps;          /* layernorm epsilon */
    uint64_t n_params;       /* parameters (a tied LM head counted once) */
    uint64_t n_bytes;        /* their bytes as held in memory, in their types */
    const char *weight_type; /* the matrices' type ("f32", "f16", "bf16", "q8_0",
                                "q4_0"), or "mixed" */
    int n_tensors;           /* tensors listed by tinygpt_tensor */
    const char *isa;         /* the kernels in use: "scalar", "avx2", ... */
    int n_threads;
    int bos, eos;            /* special ids, or -1 */
} tinygpt_info;

tinygpt_status tinygpt_get_info(const tinygpt *m, tinygpt_info *out);

/* The tensors the model runs on, GGUF-named ("token_embd.weight",
 * "blk.0.attn_qkv.weight", ...). A matrix is dims {rows (out), cols (in)},
 * n_dims 2; a vector dims {n}, n_dims 1. */
typedef struct tinygpt_tensor_info {
    const char *name;
    const char *type;        /* "f32", "f16", "bf16", "q8_0", "q4_0" */
    int n_dims;
    int64_t dims[2];
    uint64_t n_elements, n_bytes;
} tinygpt_tensor_info;

/* i in [0, info.n_tensors), else TINYGPT_ERR_RANGE. */
tinygpt_status tinygpt_tensor(const tinygpt *m, int i, tinygpt_tensor_info *out);

/* ==== tokenizer (beside tinygpt_tokenize / tinygpt_detokenize above) ==== */

int tinygpt_bos(const tinygpt *m);                /* or -1 */
int tinygpt_is_special(const tinygpt *m, int id); /* 1 for <|endoftext|> and other control
                                                     tokens, 0 otherwise (and out of range) */
/* The id of the token whose vocabulary string is s (GPT-2's byte->unicode
 * spelling: "Ġthe" for " the", or "<|endoftext|>"), or -1. */
int tinygpt_token_id(const tinygpt *m, const char *s);

/* ==== logits and log-probabilities ======================================= */

/* out[n, V] = log-softmax of each row of logits[n, V] (V = tinygpt_n_vocab),
 * computed in double (out may be logits). A row without a finite maximum
 * (all NaN or -inf, or a +inf) is TINYGPT_ERR_NUMERIC naming the row. */
tinygpt_status tinygpt_logprobs(tinygpt *m, const float *logits, size_t n, float *out);

/* The k most likely tokens of logits[V]: ids[k] and (if non-NULL)
 * logprobs[k] (log-softmax), best first, ties to the lower id (the order
 * of `tinygpt generate --top-logprobs`). k in [1, V], else
 * TINYGPT_ERR_ARG. */
tinygpt_status tinygpt_top_k(tinygpt *m, const float *logits, int k, int *ids, float *logprobs);

/* Scores a text: runs tokens[n] from position 0 (as tinygpt_eval(m, tokens,
 * n, 0, ...): the cache then holds them) and writes out[n - 1], the
 * log-probability of tokens[i + 1] after tokens[0..i]. n in [2, n_ctx]. */
tinygpt_status tinygpt_score(tinygpt *m, const int *tokens, int n, float *out);

/* ==== attention and ablation ============================================= */

/* Runs tokens[n] from position 0 (the cache then holds them, as after
 * tinygpt_eval(m, tokens, n, 0, ...)) and writes every head's attention
 * weights to weights[L, H, n, n] (caller-allocated, L * H * n * n floats):
 * weights[l][h][q][k] is query q's softmax weight on key k, for k <= q, and
 * 0 for k > q (causal). logits, if non-NULL, gets the last position's [V].
 * The probe that captures them runs attention unfused, so these logits may
 * differ from tinygpt_eval's in the last bits. n in [1, n_ctx]. */
tinygpt_status tinygpt_attention(tinygpt *m, const int *tokens, int n, float *weights,
                                 float *logits);

/* The head mask: mask[L * H] (index layer * H + head), 0 silences that
 * head (its output is zeroed before the output projection), non-zero keeps
 * it; NULL keeps every head. Copied. It applies to every later forward
 * pass; the KV cache keeps what earlier passes computed, so evaluate again
 * from position 0 after changing it. */
tinygpt_status tinygpt_set_head_mask(tinygpt *m, const uint8_t *mask);
/* Writes the current mask to mask[L * H] (all 1 when none is set). */
tinygpt_status tinygpt_get_head_mask(const tinygpt *m, uint8_t *mask);

/* fn(ctx) is asked at the start of every forward pass m runs from now on
 * (NULL: never): a non-zero answer makes the call running it (an eval, a
 * generation step, tinygpt_run_quality / _heads / _agreement ...) return
 * TINYGPT_ERR_INTERRUPTED, so that a long analysis can be cancelled (a
 * server's client went away) within one pass. fn runs on the calling
 * thread; the KV cache keeps what the passes before it computed. */
tinygpt_status tinygpt_set_interrupt(tinygpt *m, int (*fn)(void *ctx), void *ctx);

/* ==== the KV cache ======================================================== */

/* tinygpt_n_past (above) is its current length P. */

/* Forgets positions n..P-1 (0 <= n <= P, else TINYGPT_ERR_RANGE). */
tinygpt_status tinygpt_truncate(tinygpt *m, int n);

/* The token ids the cache holds (positions 0..P-1): writes at most cap and
 * sets *n to P; too small a buffer is TINYGPT_ERR_RANGE. */
tinygpt_status tinygpt_cache_tokens(const tinygpt *m, int *ids, size_t cap, size_t *n);

/* A saved context: the cache's keys and values, its token ids and the last
 * logits, to fork a prompt into several continuations (prefill once, save,
 * restore before each), or to move it into another handle of the same
 * model (on another thread). Owned by the caller; independent of the
 * handle it came from (it may outlive it). */
typedef struct tinygpt_context tinygpt_context;

tinygpt_status tinygpt_context_save(tinygpt *m, tinygpt_context **out);
/* Makes m's cache exactly the saved one. A context from a model of another
 * shape is TINYGPT_ERR_ARG, one longer than m's cache TINYGPT_ERR_RANGE.
 * Restoring only reads c: several handles on several threads may restore
 * the same context at once (one prompt, parallel continuations). */
tinygpt_status tinygpt_context_restore(tinygpt *m, const tinygpt_context *c);
int tinygpt_context_n_past(const tinygpt_context *c);
void tinygpt_context_free(tinygpt_context *c);

/* ==== generation ==========================================================
 * Sampling as `tinygpt generate` does it: the same settings, seed and
 * prompt give the same tokens. */

typedef enum tinygpt_stop_reason {
    TINYGPT_STOP_NONE = 0, /* still running */
    TINYGPT_STOP_LENGTH,   /* max_tokens generated */
    TINYGPT_STOP_EOS,      /* the model produced <|endoftext|>, EOS or BOS (which starts the
                            * next text: llama2.c's stories end with it); not reported as a token */
    TINYGPT_STOP_STRING,   /* the output ended with a stop string (cut off) */
    TINYGPT_STOP_CONTEXT,  /* the cache is full and keep is 0 */
    TINYGPT_STOP_CALLER,   /* the callback returned non-zero, or tinygpt_gen_free early */
} tinygpt_stop_reason;

/* "running", "length", "eos", "stop", "context", "caller" (the first five are the
 * CLI's stop reasons). */
const char *tinygpt_stop_reason_str(tinygpt_stop_reason r);

#define TINYGPT_MAX_STOPS 64
#define TINYGPT_MAX_STOP_LEN 4096
#define TINYGPT_MAX_TOP_LOGPROBS 100

typedef struct tinygpt_generate_opts {
    int max_tokens;             /* tokens to generate, >= 0; -1: until EOS, a stop string
                                   or the caller (default 256) */
    tinygpt_sampling sampling;  /* (default: tinygpt_sampling_init's) */
    const char *const *stop;    /* n_stop stop strings, each 1..TINYGPT_MAX_STOP_LEN bytes,
                                   n_stop <= TINYGPT_MAX_STOPS; copied at start */
    int n_stop;
    int ignore_eos;             /* 1: <|endoftext|> (EOS, BOS) is an ordinary token */
    int keep;                   /* when the cache is full: run its last `keep` tokens again
                                   as a new prompt from position 0 and go on (nanoGPT's
                                   crop); 0: stop (TINYGPT_STOP_CONTEXT); -1 (default):
                                   half the cache. [-1, n_ctx - 1] */
    int top_logprobs;           /* alternatives reported per token, [0, 100] (default 0) */
} tinygpt_generate_opts;

void tinygpt_generate_opts_init(tinygpt_generate_opts *o);

/* One generated token, as handed to the caller. Pointers are valid until
 * the next tinygpt_gen_next (or the callback's return). */
typedef struct tinygpt_token {
    int id;                  /* the token; -1 in the end record (see below) */
    int index;               /* 0, 1, ...: its place among the generated tokens */
    const char *piece;       /* its exact bytes (piece_len) */
    size_t piece_len;
    const char *text;        /* the UTF-8 characters this token completes (bytes of a
                                character split over tokens come with its last one); */
    size_t text_len;         /*   invalid bytes pass through as they are */
    const char *out;         /* what the output gains now: text, less whatever could be
                                the start of a stop string (held back until it fails) */
    size_t out_len;          /*   and never the stop string; concatenated, these are the
                                  generated text `tinygpt generate --no-echo` prints */
    double logprob;          /* log-softmax of the raw logits at this step (before the
                                penalty, temperature and truncation), in double as the
                                CLI's --json prints it */
    int n_top;               /* top_logprobs alternatives: */
    const int *top_ids;      /*   ids[n_top], best first (ties: lower id) */
    const double *top_logprobs; /* their log-probabilities */
} tinygpt_token;

typedef struct tinygpt_generate_result {
    tinygpt_stop_reason stop;
    int stop_index;          /* which stop string ended it, or -1 */
    int n_tokens;            /* tokens generated (an EOS that stopped it not counted) */
    int last_token;          /* the last one, which is not in the cache (-1 if none):
                                pass it as the prompt of the next call to go on */
    int n_prompt;            /* prompt tokens run */
    int n_shifts;            /* times the cache was cropped (keep) */
    double prefill_s, decode_s; /* wall time of the prompt and of the rest */
} tinygpt_generate_result;

/* A generation in progress, step by step (for an iterator or a server's
 * loop). It borrows the handle: until tinygpt_gen_free, call nothing else
 * on m but tinygpt_gen_* (and the read-only getters).
 *
 * The prompt tokens[n] are appended to the cache at P = tinygpt_n_past
 * (tinygpt_truncate(m, 0) first for a fresh text); n == 0 goes on from the
 * last logits of the cache (those of the last tinygpt_eval, prompt or
 * restored context), and on an empty cache starts from <|endoftext|> as
 * `tinygpt generate` does for an empty prompt. A prompt that does not fit
 * (P + n > n_ctx with keep 0, or n > n_ctx) is TINYGPT_ERR_RANGE; no logits
 * to go on from is TINYGPT_ERR_ARG. The sampler is new, seeded from
 * opts->sampling, and has seen the tokens in the cache (the repetition
 * penalty's history). opts may be NULL (defaults). */
tinygpt_status tinygpt_gen_start(tinygpt *m, const int *tokens, int n,
                                 const tinygpt_generate_opts *opts, tinygpt_gen **out);
/* The same with a text prompt from position 0 (the cache is cleared first),
 * tokenized as `tinygpt generate -p` does (<|endoftext|> spelled out is
 * that token). */
tinygpt_status tinygpt_gen_start_text(tinygpt *m, const char *text, size_t len,
                                      const tinygpt_generate_opts *opts, tinygpt_gen **out);
/* Produces the next token into *t. When the generation has ended, t->id is
 * -1 and t->out holds the bytes still held back (an unfinished UTF-8
 * character or an unfinished stop string; possibly none): the end record,
 * given once; later calls give it again with out_len 0. Errors (a NaN
 * logit, ...) end it too. */
tinygpt_status tinygpt_gen_next(tinygpt_gen *g, tinygpt_token *t);
/* Ends it early (reason TINYGPT_STOP_CALLER unless it had ended). */
void tinygpt_gen_stop(tinygpt_gen *g);
/* on 0: later tokens come without their log-probability (t->logprob NaN),
 * which skips a log-softmax over the vocabulary per token (V exps in
 * double: most of a tiny model's step beyond its forward pass); with
 * top_logprobs > 0 they are computed anyway. 1 (the default): with it. */
void tinygpt_gen_set_logprobs(tinygpt_gen *g, int on);
void tinygpt_gen_result(const tinygpt_gen *g, tinygpt_generate_result *res);
void tinygpt_gen_free(tinygpt_gen *g);

/* Called for every generated token and, if bytes remain held back at the
 * end, once more with the end record (id -1). A non-zero return stops the
 * generation after that token (TINYGPT_STOP_CALLER). */
typedef int (*tinygpt_token_fn)(void *user, const tinygpt_token *t);

/* tinygpt_gen_start + tinygpt_gen_next until the end, with a callback (fn
 * may be NULL). res may be NULL. */
tinygpt_status tinygpt_generate(tinygpt *m, const int *tokens, int n,
                                const tinygpt_generate_opts *opts, tinygpt_token_fn fn,
                                void *user, tinygpt_generate_result *res);
/* The same with a text prompt (tinygpt_gen_start_text). */
tinygpt_status tinygpt_generate_text(tinygpt *m, const char *text, size_t len,
                                     const tinygpt_generate_opts *opts, tinygpt_token_fn fn,
                                     void *user, tinygpt_generate_result *res);

/* ==== analysis: the numbers of `tinygpt compare`, `profile` and `bench` ===
 * The same library code the commands print (model/analysis.h,
 * model/measure.h), as plain structs. Each call runs its own forward
 * passes and leaves the KV cache empty (tinygpt_n_past 0). Quality and
 * agreement run under the handle's head mask (so an ablated loss is
 * tinygpt_set_head_mask + tinygpt_run_quality); the head analysis starts
 * from every head on and makes its own masks; the mask set before is in
 * force again afterwards. Losses are in nats. */

/* The scoring scheme: ids cut into non-overlapping windows of N tokens;
 * in each window positions 1..n-1 are predicted from the ones before. */
#define TINYGPT_LOSS_BUCKETS 4

typedef struct tinygpt_loss_bucket {
    int from, to;            /* window positions [from, to] */
    uint64_t tokens;         /* positions scored there */
    double nats, nats_per_token; /* summed; mean (NaN: none) */
} tinygpt_loss_bucket;

typedef struct tinygpt_quality {
    int window;              /* N */
    uint64_t tokens, bytes;  /* positions scored, bytes of their pieces */
    double nats, nats_per_token, perplexity, nats_per_byte;
    tinygpt_loss_bucket by_position[TINYGPT_LOSS_BUCKETS]; /* 1..N/8-1, ..N/4-1, ..N/2-1, ..N-1 */
    double in_context_score; /* last bucket's nats/token minus the first's (< 0: context helps) */
} tinygpt_quality;

/* ids[n] (n >= 2) in windows of `window` tokens (0: the cache length;
 * else [2, n_ctx]). */
tinygpt_status tinygpt_run_quality(tinygpt *m, const int *ids, size_t n, int window,
                                   tinygpt_quality *out);

typedef struct tinygpt_head {
    int layer, head, kv_head;
    /* means over the queries (model/heads.h): normalised entropy, largest
     * weight, weight on position 0, on the previous token, on the last 4
     * positions, and the induction score on repeated random sequences */
    double entropy, confidence, sink, prev, local, induction;
    const char *cls;         /* "previous-token", "sink", "induction", "local", "broad",
                                "mixed" (static) */
    double ablation_loss;    /* the loss with this head zeroed */
    double ablation_delta;   /* ablation_loss - baseline_loss */
    double only_loss;        /* keeping only this head of its layer (NaN when H == 1) */
} tinygpt_head;

typedef struct tinygpt_layer_heads {
    int layer, best_head;    /* best: lowest only_loss (first on ties) */
    double all_heads_loss, best_head_loss, random_head_loss; /* random: mean only_loss */
} tinygpt_layer_heads;

typedef struct tinygpt_heads_opts {
    int window;              /* N; 0 (default): the cache length */
    uint64_t head_tokens;    /* positions scored for the metrics and ablations (default 2048) */
    uint64_t seed;           /* of the random induction sequences (default 1) */
} tinygpt_heads_opts;

void tinygpt_heads_opts_init(tinygpt_heads_opts *o); /* the defaults of `tinygpt compare` */

typedef struct tinygpt_head_analysis {
    int n_layer, n_head, n_kv_head, window;
    uint64_t head_tokens, seed, tokens; /* tokens: positions actually scored */
    double baseline_loss;    /* every head on, over those positions */
    tinygpt_head *heads;     /* [L * H], layer-major */
    tinygpt_layer_heads *layers; /* [n_layers]: one per layer when H > 1, else none */
    int n_layers;
} tinygpt_head_analysis;

/* The head analysis of ids[n] (n >= 2). *out is the caller's: free it with
 * tinygpt_head_analysis_free. opts may be NULL (defaults). */
tinygpt_status tinygpt_run_heads(tinygpt *m, const int *ids, size_t n,
                                 const tinygpt_heads_opts *opts, tinygpt_head_analysis **out);
void tinygpt_head_analysis_free(tinygpt_head_analysis *a);

typedef struct tinygpt_agreement {
    uint64_t positions, top1_same;
    double kl_sum;           /* sum of KL(a || b), nats */
    double top1, kl;         /* top1_same / positions, kl_sum / positions (NaN: none) */
} tinygpt_agreement;

/* Two models on the same windows of ids[n] (ids of a's vocabulary, which
 * must mean the same tokens in b's: same n_vocab and every piece equal,
 * else TINYGPT_ERR_ARG), over the first min(V_a, V_b) logits. Errors are
 * reported on a. window 0: the smaller cache. */
tinygpt_status tinygpt_run_agreement(tinygpt *a, tinygpt *b, const int *ids, size_t n,
                                     int window, tinygpt_agreement *out);

/* ---- where the time goes ---- */

#define TINYGPT_ALL (-2)     /* a profile row over every layer / head */

typedef struct tinygpt_profile_row {
    const char *name;        /* the op ("embed", "qkv", "attn_scores", ...), "(outside ops)"
                                or "total" */
    int layer, head;         /* TINYGPT_ALL, -1 (not tied to one), or the index */
    double calls, ns, pct;   /* instances timed, wall time, % of the phase */
    double flops, bytes, weight_bytes, kv_bytes, act_bytes;
    double roof_pct;         /* 100 * roofline time / ns; < 0: no roofline or no time */
} tinygpt_profile_row;

typedef struct tinygpt_profile_phase {
    const char *name;        /* "prefill", "decode" */
    int ran;                 /* at least one step */
    int steps;
    int64_t tokens;
    double wall_ns, op_ns, wait_ns, cpu_ns;
    tinygpt_profile_row *ops; int n_ops;         /* one per op, all layers and heads */
    tinygpt_profile_row *layers; int n_layers;   /* per (layer, op) when per_layer */
    tinygpt_profile_row *heads; int n_heads;     /* per (head, attention op) when per_head */
    tinygpt_profile_row outside, total;
} tinygpt_profile_phase;

typedef struct tinygpt_profile {
    int n_threads;
    double dram_gbs, peak_gflops; /* the roofline measured (0: none) */
    tinygpt_profile_phase phase[2]; /* prefill, decode */
} tinygpt_profile;

typedef struct tinygpt_profile_opts {
    const int *prompt;       /* [n_prompt] ids of the prefill (NULL: n_prompt random ids
                                from seed, as `tinygpt profile` without -p) */
    int n_prompt;            /* >= 1 (default 128, or n_ctx - gen if that is less) */
    int gen;                 /* decode steps after it (default 32); n_prompt + gen <= n_ctx */
    int reps;                /* repetitions, summed (default 1) */
    uint64_t seed;           /* of the random prompt and the sampler (default 0) */
    int per_layer, per_head; /* fill those rows (default 0) */
    double roofline_seconds; /* > 0: measure the machine's roofline first, that long per
                                probe (for roof_pct); 0 (default): none */
} tinygpt_profile_opts;

void tinygpt_profile_opts_init(tinygpt_profile_opts *o);
/* One unprofiled warm-up, then reps x (prefill, gen decode steps with a
 * timed sample each) under the profiler: `tinygpt profile --json`'s
 * numbers (the defaults are its defaults; n_prompt 0 means the default).
 * Free *out with tinygpt_profile_free. */
tinygpt_status tinygpt_run_profile(tinygpt *m, const tinygpt_profile_opts *opts,
                                   tinygpt_profile **out);
void tinygpt_profile_free(tinygpt_profile *p);

typedef struct tinygpt_sweep_row {
    int ctx, steps;          /* positions in the cache; decode steps timed (medians) */
    double step_us, attn_us; /* the step; scores + softmax + mix */
    double part_us[3];       /* scores, softmax, mix */
    double attn_pct, us_per_head, attn_gflops, attn_roof_pct; /* roof < 0: none */
} tinygpt_sweep_row;

/* Decode at growing context: for each ctx[i] (ascending, distinct, in [1,
 * n_ctx - 1]) a prefill of random ids (seed) up to it, then `steps`
 * profiled decode steps there. rows[n]. roofline_seconds as above. */
tinygpt_status tinygpt_run_sweep(tinygpt *m, const int *ctx, int n, int steps, uint64_t seed,
                                 double roofline_seconds, tinygpt_sweep_row *rows);

typedef struct tinygpt_bench_row {
    int threads, is_pp, n, reps; /* ppN: one prefill of N; tgN: N decode steps */
    double tok_s, tok_s_sd;  /* mean and sample standard deviation over the reps */
    double gflops, gbs;
    double flops_frac, bw_frac, roof_frac; /* fractions of the machine (< 0: no roofline) */
} tinygpt_bench_row;

#define TINYGPT_BENCH_MAX_REPS 1000
/* llama-bench style: one warm-up, then reps (1..1000) timed runs of ppN or
 * tgN on tokens[n] (NULL: random ids from seed 1, as `tinygpt bench`).
 * ms, if non-NULL, gets each repetition's milliseconds [reps]. */
tinygpt_status tinygpt_run_bench(tinygpt *m, int is_pp, int n, int reps, const int *tokens,
                                 double roofline_seconds, tinygpt_bench_row *out, double *ms);

typedef struct tinygpt_speed {
    int n_tokens, reps;      /* N prefilled and N decoded */
    double prefill_tok_s, decode_tok_s;           /* medians */
    double prefill_attn_share, decode_attn_share; /* attention / op time (profiled runs) */
} tinygpt_speed;

/* The speed part of `tinygpt compare`: prefill ids[0..N) and decode N
 * steps, reps times (window 0: the cache length). */
tinygpt_status tinygpt_run_speed(tinygpt *m, const int *ids, size_t n, int window, int reps,
                                 tinygpt_speed *out);

#ifdef __cplusplus
}
#endif

#endif
