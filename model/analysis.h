/* analysis.h — what a model does on a text, as plain result structs: the
 * quality (loss, loss by window position, in-context score), the head
 * analysis (per-head attention metrics, ablation Δloss, keep-best /
 * keep-random head per layer), the agreement of two models (top-1, KL),
 * and the attention weights of a prompt (layer × head × query × key).
 *
 * `tinygpt compare` and `tinygpt attention`, the C API and the Python
 * binding all print or serialise these same structs; nothing here prints.
 * Everything runs forward passes through the tg_gpt handle only (the probe
 * hook for attention weights, the head mask for ablations), so it does
 * not ask which architecture it has. Each function uses the handle's KV
 * cache (it is left holding the last window run) and leaves no probe or
 * head mask attached, on success or failure. One handle per thread.
 *
 * Scoring scheme (tinygpt eval's default): the text's ids are cut into
 * non-overlapping windows of N tokens; in each window of n tokens the
 * positions 1..n-1 are predicted from the ones before (window position
 * wpos = 1..n-1). Losses are in nats (natural log), means over the
 * positions scored. A mean over no positions is NaN.
 *
 * Legend: L layers, H heads, T prompt tokens, N window.
 */
#ifndef TINYGPT_MODEL_ANALYSIS_H
#define TINYGPT_MODEL_ANALYSIS_H

#include <stddef.h>
#include <stdint.h>

#include "model/gpt.h"
#include "model/heads.h"
#include "model/task.h"
#include "model/tokenizer.h"

/* ---- quality on a text -------------------------------------------------------- */

enum { TG_LOSS_BUCKETS = 4 };

/* Window positions [from, to] (inclusive), and the loss over them. */
typedef struct tg_loss_bucket {
    int from, to;
    size_t tokens;         /* positions scored in the bucket */
    double nats;           /* their summed loss */
    double nats_per_token; /* nats / tokens (NaN: none) */
} tg_loss_bucket;

typedef struct tg_text_quality {
    int window;             /* N */
    size_t tokens;          /* positions scored */
    size_t bytes;           /* bytes of the scored tokens' pieces */
    double nats;            /* summed loss */
    double nats_per_token;  /* nats / tokens */
    double perplexity;      /* e^nats_per_token */
    double nats_per_byte;   /* nats / bytes */
    /* buckets 1..N/8-1, N/8..N/4-1, N/4..N/2-1, N/2..N-1 (kept at least one
     * position wide, clipped to N-1 for short windows) */
    tg_loss_bucket by_position[TG_LOSS_BUCKETS];
    /* last bucket's nats/token minus the first's: negative = the context helps */
    double in_context_score;
} tg_text_quality;

/* The bucket edges of a window of N tokens: bucket i is [b[i], b[i+1]). */
void tg_loss_bucket_edges(int N, int b[TG_LOSS_BUCKETS + 1]);

/* Scores ids[n_ids] in windows of N (2 <= N <= the handle's context; n_ids
 * >= 2). tok (may be NULL: bytes stay 0) gives each target's piece length. */
tg_status tg_text_quality_run(tg_gpt *g, const tg_tokenizer *tok, const int *ids, size_t n_ids,
                              int N, tg_text_quality *out, tg_err *err);

/* ---- the head analysis -------------------------------------------------------- */

typedef struct tg_head_result {
    int layer, head;
    int kv_head;            /* the KV head it reads: head / (H / KVH) (= head for MHA) */
    tg_head_stats stats;    /* entropy, confidence, sink, prev, local, induction (means) */
    const char *cls;        /* tg_head_class(&stats): static string */
    double ablation_loss;   /* the loss with this head zeroed */
    double ablation_delta;  /* ablation_loss - baseline_loss */
    double only_loss;       /* the loss keeping only this head of its layer (NaN when H == 1) */
} tg_head_result;

typedef struct tg_layer_result {
    int layer;
    int best_head;          /* the head whose only_loss is lowest (the first on ties) */
    double all_heads_loss;  /* = baseline_loss */
    double best_head_loss;  /* its only_loss */
    double random_head_loss; /* the mean only_loss over the layer's heads */
} tg_layer_result;

typedef struct tg_head_opts {
    int window;             /* N, [2, the handle's context] */
    size_t head_tokens;     /* positions scored for the metrics and ablations (>= 1) */
    uint64_t seed;          /* of the random induction sequences */
} tg_head_opts;

typedef struct tg_head_analysis {
    int n_layer, n_head, n_kv_head; /* KVH: n_head for MHA, fewer for GQA/MQA */
    int window;
    size_t head_tokens;     /* as asked (the text may hold fewer) */
    uint64_t seed;
    size_t tokens;          /* positions actually scored */
    double baseline_loss;   /* all heads, over those positions */
    tg_head_result *heads;  /* [L*H], layer-major */
    tg_layer_result *layers; /* [n_layers]: one per layer when H > 1, else NULL */
    int n_layers;
} tg_head_analysis;

/* Attention statistics on the first head_tokens scored positions of ids,
 * induction on 4 sequences of a random block (min(N/2, 64) ordinary
 * tokens: tok's specials are skipped; tok may be NULL) repeated twice, the
 * loss with each head zeroed, and (H > 1) the loss keeping only one head of
 * a layer. out is zeroed first; free with tg_head_analysis_free (also after
 * a failure). */
tg_status tg_head_analyse(tg_gpt *g, const tg_tokenizer *tok, const int *ids, size_t n_ids,
                          const tg_head_opts *o, tg_head_analysis *out, tg_err *err);
void tg_head_analysis_free(tg_head_analysis *a);

/* ---- two models ------------------------------------------------------------------ */

typedef struct tg_agreement {
    size_t positions;       /* positions compared */
    size_t top1_same;       /* where both argmaxes are the same token */
    double kl_sum;          /* Σ KL(A‖B) in nats */
    double top1;            /* top1_same / positions (NaN: none) */
    double kl;              /* kl_sum / positions (NaN: none) */
} tg_agreement;

/* Both models over the same windows of ids[n_ids] (ids valid for both;
 * the vocabularies must mean the same tokens: the caller checks), over the
 * first min(V_a, V_b) logits. */
tg_status tg_agreement_run(tg_gpt *a, tg_gpt *b, const int *ids, size_t n_ids, int N,
                           tg_agreement *out, tg_err *err);

/* ---- task models (model/task.h) ------------------------------------------------ */

/* Answer accuracy and loss over fresh sequences of a task. */
typedef struct tg_task_score {
    long seqs, answers, correct, correct_seqs;
    double nll;             /* summed over answers, nats */
} tg_task_score;

/* Called after each sequence's forward pass with its logits[n-1, V]. */
typedef void (*tg_task_seq_fn)(void *user, const tg_task_seq *s, const float *logits);

/* Runs n_seqs sequences of stream r through g (with whatever probe and
 * head mask g has) and adds them to *sc; fn (optional) sees each one. The
 * model's vocabulary must be the task's (t->V) and its context hold n-1
 * tokens, else TG_ERR_ARG. */
tg_status tg_task_score_run(tg_gpt *g, const tg_task *t, tg_rng r, long n_seqs, tg_task_score *sc,
                            tg_task_seq_fn fn, void *user, tg_err *err);

typedef struct tg_task_head_result {
    int layer, head, kv_head;      /* kv_head: the KV head it reads, head / (H / KVH) */
    /* at the queries that predict an answer, means over them: the weight on
     * each item of the answer (copy tasks: [0] the source position, [1] the
     * one before it), and how often the item got the most weight among items */
    double weight[TG_TASK_MAX_K], top_share[TG_TASK_MAX_K];
    double ablated_accuracy;       /* answer accuracy with this head zeroed */
    double keep_only_accuracy;     /* with only this head of its layer */
} tg_task_head_result;

typedef struct tg_task_layer_result {
    int layer;
    double keep_best_accuracy, keep_random_accuracy;
} tg_task_layer_result;

typedef struct tg_task_heads {
    int n_layer, n_head;
    int n_items;                   /* K: the task's items, or 2 for copy tasks */
    long n_queries;                /* answer queries seen */
    tg_task_score full;            /* all heads */
    double accuracy, sequence_accuracy, loss; /* of full: per answer, per sequence, nats/answer */
    tg_task_head_result *heads;    /* [L*H] */
    /* [L]: the accuracy keeping only the layer's best head (the highest
     * keep_only_accuracy) and a random one (the mean over its heads) */
    tg_task_layer_result *layers;
} tg_task_heads;

/* The per-head analysis of a task model on n fresh sequences of the
 * compare stream of seed (tg_task_stream(seed, TG_TASK_STREAM_COMPARE)),
 * the same sequences for every mask. out is zeroed first; free with
 * tg_task_heads_free (also after a failure). */
tg_status tg_task_heads_analyse(tg_gpt *g, const tg_task *t, uint64_t seed, long n,
                                tg_task_heads *out, tg_err *err);
void tg_task_heads_free(tg_task_heads *h);

/* ---- attention weights of a prompt --------------------------------------------- */

typedef struct tg_attention {
    int n_layer, n_head, n_tokens; /* L, H, T */
    float *w;               /* [L, H, T, T]: w[l][h][q][k] for k <= q, 0 above the diagonal */
} tg_attention;

/* Runs ids[T] at positions 0..T-1 (1 <= T <= the handle's context) with a
 * capturing probe. out is zeroed first; free with tg_attention_free. */
tg_status tg_attention_capture(tg_gpt *g, const int *ids, int T, tg_attention *out, tg_err *err);
void tg_attention_free(tg_attention *a);

/* The same into the caller's w[L*H*T*T] (zeroed first), and the last
 * token's logits[V] when logits is not NULL (for a C API that owns its
 * buffers). */
tg_status tg_attention_capture_into(tg_gpt *g, const int *ids, int T, float *w, float *logits,
                                    tg_err *err);

/* Query q's weights over keys 0..T-1 of (layer l, head h). */
static inline const float *tg_attention_row(const tg_attention *a, int l, int h, int q) {
    return a->w + (((size_t)l * a->n_head + h) * a->n_tokens + q) * a->n_tokens;
}

#endif
