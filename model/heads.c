/* heads.c — per-head attention statistics (see heads.h). */
#include "model/heads.h"

#include <math.h>

void tg_head_stats_add(tg_head_stats *s, const float *p, int n_pos, int qpos) {
    double h = 0.0, max = 0.0, local = 0.0;
    for (int j = 0; j < n_pos; j++) {
        double pj = p[j];
        if (pj > 0.0) h -= pj * log(pj);
        if (pj > max) max = pj;
        if (j > qpos - TG_HEAD_LOCAL_WINDOW) local += pj;
    }
    if (n_pos >= 2) {
        s->entropy += h / log((double)n_pos);
        s->n_entropy++;
    }
    s->confidence += max;
    s->sink += p[0];
    s->local += local;
    s->n_queries++;
    if (qpos >= 1 && qpos - 1 < n_pos) {
        s->prev += p[qpos - 1];
        s->n_prev++;
    }
}

void tg_head_stats_add_induction(tg_head_stats *s, const float *p, int qpos, int block) {
    int target = qpos + 1 - block;
    if (qpos < block || target >= block || target < 1) return;
    s->induction += p[target];
    s->n_induction++;
}

static double mean(double sum, long n) { return n > 0 ? sum / (double)n : 0.0; }

void tg_head_stats_finish(tg_head_stats *s) {
    s->entropy = mean(s->entropy, s->n_entropy);
    s->confidence = mean(s->confidence, s->n_queries);
    s->sink = mean(s->sink, s->n_queries);
    s->local = mean(s->local, s->n_queries);
    s->prev = mean(s->prev, s->n_prev);
    s->induction = mean(s->induction, s->n_induction);
}

/* Thresholds: a head is labelled by the first behaviour that takes a clear
 * majority of its weight; an induction score of 0.3 is far above chance
 * (1/P) for any window worth measuring. */
const char *tg_head_class(const tg_head_stats *s) {
    if (s->induction >= 0.3) return "induction";
    if (s->prev >= 0.5) return "previous-token";
    if (s->sink >= 0.5) return "sink";
    if (s->local >= 0.6) return "local";
    if (s->entropy >= 0.6) return "broad";
    return "mixed";
}
