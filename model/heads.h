/* heads.h — what an attention head does, measured from its weights.
 *
 * Each query of a head gives a distribution p[P] over the positions it can
 * see (0..qpos). Accumulated over queries, per (layer, head):
 *   entropy     H(p) / ln(P), normalised to [0, 1]   (queries with P >= 2)
 *   confidence  max_j p[j]
 *   sink        p[0], the weight parked on the first position
 *   prev        p[qpos-1], the previous token        (queries with qpos >= 1)
 *   local       weight on the last TG_HEAD_LOCAL_WINDOW positions before
 *               and at the query
 *   induction   on a sequence R R (a random token block repeated), from the
 *               second copy's query at qpos = n + i to position i + 1, the
 *               token that followed the earlier occurrence of the same token
 */
#ifndef TINYGPT_MODEL_HEADS_H
#define TINYGPT_MODEL_HEADS_H

#define TG_HEAD_LOCAL_WINDOW 4

typedef struct tg_head_stats {
    double entropy, confidence, sink, prev, local, induction; /* sums, then means */
    long n_entropy, n_queries, n_prev, n_induction;          /* how many summed */
} tg_head_stats;

/* Adds one query's weights p[n_pos] (n_pos = qpos + 1 positions). */
void tg_head_stats_add(tg_head_stats *s, const float *p, int n_pos, int qpos);

/* Adds one query's weight for the induction score, for a sequence made of a
 * block of `block` tokens repeated: queries in the second copy
 * (qpos >= block, qpos + 1 - block < block) look at qpos + 1 - block. */
void tg_head_stats_add_induction(tg_head_stats *s, const float *p, int qpos, int block);

/* Turns the sums into means (a metric with no queries becomes 0). */
void tg_head_stats_finish(tg_head_stats *s);

/* A short label for what the head mostly does: "previous-token", "sink",
 * "induction", "local" or "broad" ("mixed" when nothing dominates). */
const char *tg_head_class(const tg_head_stats *s);

#endif
