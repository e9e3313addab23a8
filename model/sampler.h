/* sampler.h — picks the next token from the logits: greedy (temperature 0),
 * or a draw from the softmax at a temperature, restricted by top-k, top-p
 * (nucleus) and min-p, after a repetition penalty over the recent tokens.
 * The sampler owns its RNG, so a seed fixes the whole sequence of draws
 * (and, since the logits are bit-identical for any thread count, the text).
 *
 * Order of the steps (Hugging Face's): repetition penalty -> temperature ->
 * top-k -> softmax -> top-p -> min-p -> draw.
 *
 * Non-finite logits have one fixed meaning, so the result never depends on
 * how NaN compares: a NaN or -inf logit is probability 0 (never picked); if
 * any logit is +inf, the distribution is the softmax's limit, uniform over
 * the +inf tokens (greedy: the lowest +inf id). When no logit is a number
 * above -inf there is no distribution and the sampler returns -1.
 */
#ifndef TINYGPT_MODEL_SAMPLER_H
#define TINYGPT_MODEL_SAMPLER_H

#include <stdint.h>

#include "engine/status.h"

typedef struct tg_sampler_params {
    float temp;            /* 0 = greedy (argmax); else >= TG_SAMPLER_MIN_TEMP, logits / temp */
    int top_k;             /* keep the k most likely; 0 = off */
    float top_p;           /* keep the smallest set whose mass >= p; 1 = off */
    float min_p;           /* keep p_i >= min_p * p_max; 0 = off */
    float repeat_penalty;  /* CTRL-style: logit / r if > 0 else * r; 1 = off */
    int repeat_window;     /* how many recent tokens the penalty looks at */
    uint64_t seed;         /* any value, including 0 */
} tg_sampler_params;

/* The smallest positive temperature: FLT_MIN, the smallest normal float.
 * Below it 1/temp overflows to +inf and every probability would be NaN, so
 * such a temperature is TG_ERR_ARG (0 is greedy). */
#define TG_SAMPLER_MIN_TEMP 1.17549435e-38f

/* temp 0.8, top-k 40, top-p 0.95, min-p 0.05, repeat 1.0 (off) over 64, seed 0 */
tg_sampler_params tg_sampler_defaults(void);

typedef struct tg_sampler tg_sampler;

/* Allowed ranges (anything else is TG_ERR_ARG naming the range):
 * temp 0 or [TG_SAMPLER_MIN_TEMP, 100], top_k [0, 2^30] (>= V is off), top_p [0, 1] (0 keeps the
 * top token), min_p [0, 1], repeat_penalty [1, 10], repeat_window
 * [0, 2^20]. n_vocab >= 1. */
tg_status tg_sampler_create(tg_sampler **out, const tg_sampler_params *p, int n_vocab,
                            tg_err *err);
void tg_sampler_free(tg_sampler *s);

/* Records a token (prompt or generated) for the repetition penalty. */
void tg_sampler_accept(tg_sampler *s, int token);
/* Forgets the recorded tokens and restarts the RNG from the seed. */
void tg_sampler_reset(tg_sampler *s);
/* Forgets the recorded tokens only: the RNG goes on (a REPL that cuts its
 * text back records what it kept again). */
void tg_sampler_forget(tg_sampler *s);

/* Picks a token from logits[V] (not modified): an id in [0, V), or -1 when
 * every logit is NaN or -inf (see above). Does not accept it. */
int tg_sampler_sample(tg_sampler *s, const float *logits);

/* The next uniform draw in [0, 1) from the sampler's RNG (for tests). */
double tg_sampler_uniform(tg_sampler *s);

#endif
