/* train.h — GPT-2 and Llama training in C: forward and backward over a
 * batch, AdamW.
 *
 * Dimension legend (model/): L layers, H heads, E width, HS = E/H head size,
 * F = 4E feed-forward width, V vocabulary, C context; a batch is B sequences
 * of T <= C tokens, BT = B·T rows.
 *
 * The shape follows llm.c: the parameters (and their gradients, and AdamW's
 * two moments) are one allocation each, carved into the table below; every
 * layer is a layer_forward/layer_backward(out, ..., inp, weight, bias, ...)
 * function over plain arrays, built on the engine's kernel table. Results are
 * deterministic for a given seed, and do not depend on the thread count:
 * every element has one fixed accumulation order.
 */
#ifndef TINYGPT_MODEL_TRAIN_H
#define TINYGPT_MODEL_TRAIN_H

#include <stddef.h>
#include <stdint.h>

#include "engine/engine.h"
#include "weights/gpt2.h"
#include "weights/llama.h"

/* The parameter table: views into one allocation, in this order. Per-layer
 * tensors are stacked over L. Matrices are [OUT, IN] (GGUF order); the LM
 * head is tied to wte. */
typedef struct tg_train_params {
    float *wte;          /* [V, E] */
    float *wpe;          /* [C, E] */
    float *ln1_w, *ln1_b;   /* [L, E] */
    float *qkv_w;        /* [L, 3E, E]: rows Q, K, V, head-major */
    float *qkv_b;        /* [L, 3E] */
    float *proj_w;       /* [L, E, E] */
    float *proj_b;       /* [L, E] */
    float *ln2_w, *ln2_b;   /* [L, E] */
    float *up_w;         /* [L, F, E] */
    float *up_b;         /* [L, F] */
    float *down_w;       /* [L, E, F] */
    float *down_b;       /* [L, E] */
    float *lnf_w, *lnf_b;   /* [E] */
} tg_train_params;

enum { TG_TRAIN_N_TENSORS = 16 };

/* A Llama's table (cfg.arch == TG_ARCH_LLAMA), in this order; per-layer
 * tensors stacked over L. Q = H·HS, KV = KVH·HS. */
typedef struct tg_train_llama_params {
    float *tok_embd;     /* [V, E] */
    float *attn_norm;    /* [L, E] */
    float *wqkv;         /* [L, Q + 2KV, E]: rows wq, wk, wv (pairs in cfg.rope_pairs order) */
    float *wo;           /* [L, E, Q] */
    float *ffn_norm;     /* [L, E] */
    float *w13;          /* [L, 2F, E]: rows w1 (gate), then w3 (up) */
    float *w2;           /* [L, E, F] */
    float *out_norm;     /* [E] */
    float *output;       /* [V, E]; == tok_embd when tied (not a tensor of its own then) */
} tg_train_llama_params;

/* Name, element count and whether AdamW decays it, for tensor i of the table. */
typedef struct tg_train_tensor {
    const char *name;
    size_t n;
    int decay;
} tg_train_tensor;

typedef struct tg_adamw {
    float beta1, beta2, eps, weight_decay;
} tg_adamw;

typedef struct tg_trainer tg_trainer;

/* A trainer for cfg (n_ff must be 4E, n_embd % n_head == 0) and batches of
 * up to B×T tokens (T <= n_ctx), on n_threads threads and the given ISA
 * (NULL: $TINYGPT_ISA or the best). Parameters start at zero: call
 * tg_trainer_init_params or write them through tg_trainer_params.
 * cfg.arch TG_ARCH_LLAMA trains a Llama (tied classifier; any n_ff,
 * n_kv_head dividing n_head, head_dim, rope_dim <= head_dim, either
 * rope_pairs). */
tg_status tg_trainer_create(tg_trainer **out, const tg_gpt2_config *cfg, int B, int T,
                            int n_threads, const char *isa, tg_err *err);
/* flags of tg_trainer_create_ex */
enum { TG_TRAIN_UNTIED = 1 /* Llama: a classifier of its own */ };
tg_status tg_trainer_create_ex(tg_trainer **out, const tg_model_config *cfg, int flags, int B,
                               int T, int n_threads, const char *isa, tg_err *err);
void tg_trainer_free(tg_trainer *tr);

const tg_gpt2_config *tg_trainer_config(const tg_trainer *tr);
size_t tg_trainer_n_params(const tg_trainer *tr);
/* All parameters, gradients and AdamW moments as flat arrays of
 * tg_trainer_n_params floats (the table's order). */
float *tg_trainer_params(tg_trainer *tr);
float *tg_trainer_grads(tg_trainer *tr);
float *tg_trainer_adam_m(tg_trainer *tr);
float *tg_trainer_adam_v(tg_trainer *tr);
/* The table over params (or over grads). */
tg_train_params tg_trainer_param_table(tg_trainer *tr);
tg_train_params tg_trainer_grad_table(tg_trainer *tr);
/* Tensor i < tg_trainer_n_tensors of the table (TG_TRAIN_N_TENSORS for
 * GPT-2; a Llama's: 8, or 9 untied). */
tg_train_tensor tg_trainer_tensor(const tg_trainer *tr, int i);
int tg_trainer_n_tensors(const tg_trainer *tr);
/* A Llama trainer's tables. */
tg_train_llama_params tg_trainer_llama_table(tg_trainer *tr);
tg_train_llama_params tg_trainer_llama_grad_table(tg_trainer *tr);
int tg_trainer_tied(const tg_trainer *tr);

/* GPT-2's initialisation: N(0, 0.02) for weights and embeddings, 0.02/√(2L)
 * for the two residual projections, zero biases, unit layernorm gains.
 * A Llama's: the same normals (wo and w2 the residual projections), unit
 * RMSNorm gains (llama2.c's model.py, tinygpt init --arch llama). */
void tg_trainer_init_params(tg_trainer *tr, uint64_t seed);

/* Forward over tokens[B,T] with targets[B,T]; *loss = mean cross-entropy
 * (nats/token) over the targets that are not -1 (a masked target is not
 * scored and gets no gradient, as PyTorch's ignore_index; all masked: loss
 * 0). Keeps the activations for tg_trainer_backward. If nll is non-NULL it
 * receives the per-token losses [B,T] (0 where masked). Token ids outside
 * [0,V) (targets outside [-1,V)) are TG_ERR_ARG; B, T beyond the sizes given
 * at creation TG_ERR_RANGE. */
tg_status tg_trainer_forward(tg_trainer *tr, const int *tokens, const int *targets, int B,
                             int T, float *loss, float *nll, tg_err *err);

/* The softmax of the last forward's logits, [B,T,V] (valid until
 * tg_trainer_backward, which overwrites it). */
const float *tg_trainer_probs(const tg_trainer *tr);

/* Zeroes the gradients. */
void tg_trainer_zero_grad(tg_trainer *tr);
/* Adds d(loss)/d(params) of the last forward to the gradients. */
void tg_trainer_backward(tg_trainer *tr);

/* One AdamW step (PyTorch's decoupled form, weight decay only on the
 * tensors marked decay) after clipping the global gradient norm to
 * grad_clip (0: no clipping). Returns the norm before clipping. The step
 * counter (for bias correction) lives in the trainer. */
float tg_trainer_step(tg_trainer *tr, const tg_adamw *opt, float lr, float grad_clip);
long tg_trainer_adam_t(const tg_trainer *tr);
void tg_trainer_set_adam_t(tg_trainer *tr, long t);

/* Weight views over the parameters, for tg_gpt2_save (layers[L] is
 * caller-owned; lm_head = wte, tied). */
void tg_trainer_weights(tg_trainer *tr, tg_gpt2_weights *w, tg_gpt2_layer *layers);
/* The same for a Llama trainer, for tg_llama_save (layers[L] caller-owned;
 * wq/wk/wv and w1/w3 are row ranges of the fused tensors). */
void tg_trainer_llama_weights(tg_trainer *tr, tg_llama_weights *w, tg_llama_layer *layers);

/* Learning rate at step s (0-based): linear warmup over `warmup` steps to
 * lr_max, then cosine decay to lr_min at step `steps`. */
float tg_train_lr(long s, long steps, long warmup, float lr_max, float lr_min);

/* A small deterministic RNG (splitmix64) for init and batch sampling. */
typedef struct tg_rng {
    uint64_t s;
} tg_rng;
uint64_t tg_rng_next(tg_rng *r);
double tg_rng_uniform(tg_rng *r);   /* [0, 1) */
float tg_rng_normal(tg_rng *r);     /* N(0, 1), Box-Muller */

#endif
