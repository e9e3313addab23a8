/* task.h — synthetic tasks whose answers need several earlier tokens at
 * once: seeded generators of token sequences (no files), each with its own
 * small vocabulary, the positions that are answers, and chance level.
 *
 * A sequence is seq[n] of token ids in [0, V). A model reads seq[0..n-2]
 * and is scored only where answer[i] is set: predicting seq[i] from
 * seq[0..i-1] (position i-1's logits). Nothing after an answer is needed to
 * compute it, and (marked-tuple, pair-lookup, offsets) the answer tokens
 * never occur among the inputs.
 *
 * The tasks (options as key=value, defaults in brackets):
 *   marked-tuple  len [16] digits (values 0..digits-1 [3]); k [4] of them are
 *                 marked, all with the same marked-digit tokens, at least
 *                 spacing [1] apart; then "?" and the answer, the ordered
 *                 k-tuple of marked digits as one token ("=0121"). The marks
 *                 can be told apart only by their order.
 *   pair-lookup   the same, but mark j has its own tokens (a0.., b0.., ...)
 *                 and sits anywhere: the answer is (digit at a, digit at b,
 *                 ...), items selected by content. k [2].
 *   offsets       len [12] digits, "?", then the tuple of the digits at the
 *                 given distances before "?": offsets [3:7] (k = their
 *                 count), items selected by position.
 *   assoc-recall  multi-query associative recall: pairs [8] key-value pairs
 *                 (distinct keys of keys [16], values of values [16]), then
 *                 queries [4] of those keys, each followed by its value
 *                 (the answers).
 *   induction     a block of b distinct tokens of vocab [32], repeated, after
 *                 2(len-b) filler tokens (n = 2 len [12]); b = len - U[0,
 *                 jitter [5]], so the distance back to the earlier copy varies
 *                 and only content finds it; the last len-jitter-1 tokens are
 *                 the answers (Olsson et al. 2022). jitter=0: R R exactly.
 */
#ifndef TINYGPT_MODEL_TASK_H
#define TINYGPT_MODEL_TASK_H

#include <stddef.h>
#include <stdint.h>

#include "engine/status.h"
#include "model/train.h"

typedef enum tg_task_kind {
    TG_TASK_MARKED_TUPLE,
    TG_TASK_PAIR_LOOKUP,
    TG_TASK_OFFSETS,
    TG_TASK_ASSOC_RECALL,
    TG_TASK_INDUCTION,
    TG_TASK_N_KINDS
} tg_task_kind;

enum { TG_TASK_MAX_K = 6, TG_TASK_MAX_V = 4096, TG_TASK_MAX_N = 1024 };

typedef struct tg_task {
    tg_task_kind kind;
    /* options (0 where the kind has none) */
    int len, digits, k, spacing;      /* spacing: induction's jitter */
    int offs[TG_TASK_MAX_K];          /* offsets: distances before "?" */
    int pairs, queries, keys, values; /* assoc-recall */
    int vocab;                        /* induction */
    /* derived */
    int V;          /* vocabulary size */
    int n;          /* tokens per sequence (inputs are the first n-1) */
    int n_answers;  /* answer positions per sequence */
    int n_items;    /* roles: items an answer is made of (0: per-answer sources) */
    double chance;  /* accuracy of a uniform guess over an answer's possible values */
} tg_task;

/* One sampled sequence. role[i] = j+1 if position i holds item j of the
 * (single) answer — the j-th mark in order, mark j, offset j — else 0;
 * src[i] (assoc-recall, induction) is the earlier position whose token the
 * answer at i copies, -1 elsewhere. */
typedef struct tg_task_seq {
    int seq[TG_TASK_MAX_N];
    uint8_t answer[TG_TASK_MAX_N];
    int8_t role[TG_TASK_MAX_N];
    int src[TG_TASK_MAX_N];
} tg_task_seq;

/* Parses a task: name and options "key=value,key=value" (NULL or "" for
 * the defaults). An unknown name or key, a value out of range or a
 * combination that cannot be generated is TG_ERR_ARG, with a one-line
 * message naming it. */
tg_status tg_task_parse(tg_task *t, const char *name, const char *opts, tg_err *err);

/* "marked-tuple", ... (NULL for a kind out of range) */
const char *tg_task_kind_name(tg_task_kind k);
/* All task names, comma-separated (for help texts). */
const char *tg_task_names(void);

/* Every option of t as "key=value,..." in a fixed order: parsing it again
 * gives the same task (this is what a model file records). Returns the
 * length it needs (like snprintf). */
int tg_task_opts_string(const tg_task *t, char *buf, size_t size);

/* The printable name of token id ("3", "*2", "?", "=0121", "k5", ...), as
 * snprintf. */
int tg_task_token_name(const tg_task *t, int id, char *buf, size_t size);

/* Independent sequence streams of one seed: training batches, the
 * trainer's own held-out checks, `tinygpt eval`, examples (`tinygpt task`,
 * `attention`), `compare`. Evaluation never sees a training sequence's
 * stream. */
enum { TG_TASK_STREAM_TRAIN = 1, TG_TASK_STREAM_HELDOUT = 2, TG_TASK_STREAM_EVAL = 3,
       TG_TASK_STREAM_SAMPLE = 4, TG_TASK_STREAM_COMPARE = 5 };
tg_rng tg_task_stream(uint64_t seed, int stream);

/* Draws one sequence from r (deterministic for its state). */
void tg_task_sample(const tg_task *t, tg_rng *r, tg_task_seq *s);

/* A batch for training: B sequences as tokens[B, n-1] and targets[B, n-1]
 * (the next token where it is an answer, else -1). */
void tg_task_batch(const tg_task *t, tg_rng *r, int B, int *tokens, int *targets);

#endif
