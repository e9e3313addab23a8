/* scoring.h — what a row of logits says about the next token: its negative
 * log-likelihood, the argmax, and how far two models' predictions are apart.
 * All in double, from logits[V]. */
#ifndef TINYGPT_MODEL_SCORING_H
#define TINYGPT_MODEL_SCORING_H

/* -log softmax(logits)[target] */
double tg_nll(const float *logits, int V, int target);

/* argmax (the lowest index on ties) */
int tg_argmax(const float *logits, int V);

/* KL(softmax(a) || softmax(b)) in nats */
double tg_kl(const float *a, const float *b, int V);

#endif
