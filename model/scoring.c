/* scoring.c — log-likelihoods and divergences from logits (see scoring.h). */
#include "model/scoring.h"

#include <math.h>

/* log Σ exp(x) with the max subtracted */
static double logsumexp(const float *x, int V, double *max_out) {
    double mx = -INFINITY;
    for (int i = 0; i < V; i++) mx = x[i] > mx ? x[i] : mx;
    double sum = 0.0;
    for (int i = 0; i < V; i++) sum += exp((double)x[i] - mx);
    if (max_out) *max_out = mx;
    return mx + log(sum);
}

double tg_nll(const float *logits, int V, int target) {
    return logsumexp(logits, V, 0) - (double)logits[target];
}

int tg_argmax(const float *logits, int V) {
    int best = 0;
    for (int i = 1; i < V; i++)
        if (logits[i] > logits[best]) best = i;
    return best;
}

/* Σ p_i (log p_i - log q_i) with log p_i = a_i - lse(a), log q_i = b_i - lse(b) */
double tg_kl(const float *a, const float *b, int V) {
    double la = logsumexp(a, V, 0), lb = logsumexp(b, V, 0), kl = 0.0;
    for (int i = 0; i < V; i++) {
        double lp = (double)a[i] - la, lq = (double)b[i] - lb;
        double p = exp(lp);
        if (p > 0.0) kl += p * (lp - lq);
    }
    return kl > 0.0 ? kl : 0.0;
}
