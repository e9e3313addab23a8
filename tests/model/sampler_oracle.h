/* sampler_oracle.h — the previous sampler (sampler_oracle.c), the oracle of
 * test_sampler's same_choices tests: same parameters and rules as
 * model/sampler.h, its own names. */
#ifndef TINYGPT_TESTS_SAMPLER_ORACLE_H
#define TINYGPT_TESTS_SAMPLER_ORACLE_H

#include "model/sampler.h"

typedef struct oracle_sampler oracle_sampler;
tg_sampler_params oracle_sampler_defaults(void);
tg_status oracle_sampler_create(oracle_sampler **out, const tg_sampler_params *p, int n_vocab,
                                tg_err *err);
void oracle_sampler_free(oracle_sampler *s);
void oracle_sampler_accept(oracle_sampler *s, int token);
void oracle_sampler_reset(oracle_sampler *s);
int oracle_sampler_sample(oracle_sampler *s, const float *logits);
double oracle_sampler_uniform(oracle_sampler *s);

#endif
