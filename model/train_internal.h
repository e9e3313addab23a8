/* train_internal.h — what the trainer's architectures share (model/train.c)
 * and what each gives it: one small ops table per architecture
 * (model/train_gpt2.c, model/train_llama.c), as model/arch.h does for the
 * inference forward pass.
 *
 * train.c owns the trainer, the parameter arena, the threaded gemm, the
 * matmul forward and backward, causal attention forward and backward over
 * heads and key/value groups, the token (and position) embedding, the
 * classifier with the cross-entropy, AdamW and gradient clipping. An
 * architecture carves its table out of the arena, initialises it, and runs
 * its blocks and final norm forward (res[0] -> lnf) and backward
 * (dln = dL/dlnf -> dres = dL/dres[0]).
 *
 * Dimension legend: model/train.h, plus KVH key/value heads (G = H/KVH
 * query heads per K/V head), Q = H·HS and KV = KVH·HS query and key widths,
 * QKV = Q + 2·KV the fused projection's width, FU the up projection's width
 * (F for GPT-2, 2F for Llama's fused gate and up).
 */
#ifndef TINYGPT_MODEL_TRAIN_INTERNAL_H
#define TINYGPT_MODEL_TRAIN_INTERNAL_H

#include "model/train.h"

/* Rows per chunk of a norm backward's partial gain/bias sums: fixed, so
 * that the sum order does not depend on the thread count. */
#define TG_TR_CHUNK 64
#define TG_TR_MAX_TENSORS 16

typedef struct tg_train_arch {
    tg_arch arch;
    /* element counts of the tensors, in table order; returns their number */
    int (*sizes)(const tg_model_config *c, int tied, size_t *s);
    const char *const *names;
    const int *decay;
    /* the table views over tr->params and tr->grads, and the embedding,
     * position and classifier pointers (tok_*, pos_* (NULL: none), cls_*) */
    void (*carve)(tg_trainer *tr);
    /* gains 1, the rest zero (at creation) / the architecture's init */
    void (*reset)(tg_trainer *tr);
    void (*init)(tg_trainer *tr, tg_rng *r);
    void (*forward)(tg_trainer *tr, int B, int T);
    void (*backward)(tg_trainer *tr, int B, int T);
} tg_train_arch;

extern const tg_train_arch tg_train_gpt2;  /* model/train_gpt2.c */
extern const tg_train_arch tg_train_llama; /* model/train_llama.c */

struct tg_trainer {
    tg_model_config cfg;
    const tg_train_arch *arch;
    int tied;
    int maxB, maxT;
    tg_engine eng;
    tg_pool *pool;
    int nth;
    int n_tensors;
    size_t n_params;
    size_t sizes[TG_TR_MAX_TENSORS];
    float *params, *grads, *m, *v;
    tg_train_params p, g;              /* GPT-2's table */
    tg_train_llama_params lp, lg;      /* Llama's table */
    float *tok_w, *tok_g;              /* [V, E] */
    float *pos_w, *pos_g;              /* [C, E] or NULL */
    float *cls_w, *cls_g;              /* [V, E] (tok_* when tied) */
    long adam_t;

    /* widths (legend above) */
    int E, H, KVH, HS, Q, KV, QKV, F, FU;
    float *rope_cos, *rope_sin, *rope_nsin; /* [C, D/2] (Llama) */

    /* activations of the last forward (B, T as used) */
    int B, T;
    int *tokens, *targets;  /* [BT]; a target of -1 is not scored */
    int n_scored;           /* targets that are not -1 */
    float *res;             /* [L+1, BT, E] residual stream entering each layer (and the final) */
    float *mid;             /* [L, BT, E] residual after attention */
    float *ln1, *ln2;       /* [L, BT, E] the norms' outputs */
    float *qkv;             /* [L, BT, QKV] (Llama: Q and K after RoPE) */
    float *att;             /* [L, B, H, T, T] attention weights (causal rows) */
    float *atty;            /* [L, BT, Q] heads' outputs, before the projection */
    float *up;              /* [L, BT, FU] the up projection (GPT-2: before GELU) */
    float *act;             /* [L, BT, F] the activation (GELU, or silu(gate)·up) */
    float *lnf;             /* [BT, E] */
    float *probs;           /* [BT, V] softmax of the logits; dlogits in the backward */
    float *nll;             /* [BT] */

    /* backward scratch */
    float *dres;            /* [BT, E] gradient of the residual stream */
    float *dln;             /* [BT, E] */
    float *datty;           /* [BT, Q] */
    float *dqkv;            /* [BT, QKV] */
    float *dup;             /* [BT, FU] */
    float *dact;            /* [BT, F] (Llama) */
    float *ln_part;         /* [ceil(BT/TG_TR_CHUNK), 2E] norm partial sums */
    float *ws;              /* [nth, TG_GEMM_WS] gemm scratch */
    float *dp;              /* [nth, T, T] attention backward scratch */
};

/* Every tensor AdamW decays (matrices, embeddings) drawn from N(0, 0.02),
 * in table order; the two residual projections resid_a, resid_b (stacked
 * over L) from N(0, 0.02/√(2L)). */
void tg_tr_init_normals(tg_trainer *tr, tg_rng *r, const float *resid_a, const float *resid_b);

/* out[BT,OUT] = b + inp[BT,IN] · wᵀ  (b may be NULL) */
void tg_tr_matmul_forward(tg_trainer *tr, float *out, const float *inp, const float *w,
                          const float *b, int BT, int in, int out_n);
/* dinp[BT,IN] = dout·w (overwritten; skipped if NULL), dw[OUT,IN] += doutᵀ·inp,
 * db[OUT] += Σ_t dout (skipped if NULL) */
void tg_tr_matmul_backward(tg_trainer *tr, float *dinp, float *dw, float *db, const float *dout,
                           const float *inp, const float *w, int BT, int in, int out_n);
/* out[BT,Q] = causal attention of qkv[BT,QKV] (rows Q heads, K heads, V
 * heads; query head h reads K/V head h/G); att[B,H,T,T] kept */
void tg_tr_attention_forward(tg_trainer *tr, float *out, float *att, const float *qkv, int B,
                             int T);
/* dqkv[BT,QKV] (overwritten) from dout[BT,Q]; a K/V head's gradient sums
 * its G query heads in head order */
void tg_tr_attention_backward(tg_trainer *tr, float *dqkv, const float *dout, const float *qkv,
                              const float *att, int B, int T);
/* out[n] = a + b */
void tg_tr_residual(float *out, const float *a, const float *b, size_t n);

/* A norm backward over chunks of TG_TR_CHUNK rows run in parallel: fn(ctx,
 * t0, t1, part) adds its rows' gain (part[0,E)) and bias (part[E,2E])
 * sums into part (zeroed first); the partials are then added to dg (and db
 * if non-NULL) in chunk order. */
typedef void (*tg_tr_chunk_fn)(const void *ctx, int t0, int t1, float *part);
void tg_tr_norm_backward(tg_trainer *tr, int BT, double work, tg_tr_chunk_fn fn,
                         const void *ctx, float *dg, float *db);

#endif
