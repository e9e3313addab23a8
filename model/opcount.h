/* opcount.h — the work of every op of a forward pass, from formulas kept in
 * this one place (model/opcount.c documents each): flops, and the bytes the
 * op reads, split into weights, KV cache and activations. The profiler and
 * the bench both divide these by measured times, and by the roofline.
 *
 * Conventions (legend of model/gpt.h; S = Σ_t (pos + t + 1), the number of
 * (query, key) pairs of a causal step of T tokens after pos cached ones):
 *  - a multiply or an add is one flop, an FMA two; exp and tanh count one,
 *    as do max and compare; divisions and square roots once per row are not
 *    counted;
 *  - bytes are what the op must read if nothing were cached: every input
 *    element counted once per call (weights and the KV cache as f32, 4
 *    bytes; tg_typed_bytes below gives the real types), writes not
 *    counted. Activations are usually in cache, so weights + KV bytes are
 *    the DRAM traffic of a decode step;
 *  - ln_f and lm_head run on n_logits rows (1, or T with all logits);
 *  - sample is the caller's sampler over one row of V logits;
 *  - a Llama config (cfg.arch) counts its own ops in the same rows: RMSNorm
 *    for ln_*, q/k/v + RoPE for qkv, gate and up for mlp_up, SiLU·mul for
 *    gelu, attention over KVH cached heads (kv_bytes drop by H/KVH).
 */
#ifndef TINYGPT_MODEL_OPCOUNT_H
#define TINYGPT_MODEL_OPCOUNT_H

#include "model/gpt.h"

typedef struct tg_opcost {
    double flops;
    double weight_bytes;  /* parameters read */
    double kv_bytes;      /* K/V cache read */
    double act_bytes;     /* activations read (inputs, scores, probabilities) */
} tg_opcost;

/* Cost of `op` in one forward step of T tokens at positions pos..pos+T-1:
 * for the ops inside a block (ln_1 .. mlp_down) the cost of ONE layer (all
 * heads); for embed, ln_f, lm_head and sample the whole op. Zero cost for
 * an op outside [0, TG_OP_COUNT). */
tg_opcost tg_opcost_layer(const tg_gpt2_config *c, tg_op op, int T, int pos, int n_logits);

/* The op over the whole step: tg_opcost_layer times L for block ops. */
tg_opcost tg_opcost_step(const tg_gpt2_config *c, tg_op op, int T, int pos, int n_logits);

/* The whole forward pass (every op but sample). */
tg_opcost tg_opcost_forward(const tg_gpt2_config *c, int T, int pos, int n_logits);

double tg_opcost_bytes(tg_opcost k);    /* weights + KV + activations */

/* The counts above take every weight as f32. For typed matrices (f16, bf16,
 * q8_0, q4_0: weights/gpt2.h) this is what a forward step's matrices (the
 * blocks' four and the LM head) really read minus that f32 figure: add it
 * to weight_bytes once per forward step. 0 for an all-f32 model. */
double tg_opcost_typed_delta(const tg_gpt2_config *c, const tg_gpt2_weights *w);
/* The same for a model of any architecture (Llama: its seven matrices per
 * block and the classifier). */
double tg_opcost_typed_delta_model(const tg_model *m);

/* The real bytes of a model's weights per op, where they differ from the
 * f32 count above (matrices in f16, bf16, q8_0, q4_0): step[op] is added
 * once per forward step (the op's matrices over all layers: qkv, attn_proj,
 * mlp_up, mlp_down, lm_head), token[op] once per token (embed: one row of
 * token_embd in its type). 1-D tensors and position_embd are held as f32
 * (the loader converts them), as counted. All zero for an all-f32 model. */
typedef struct tg_typed_bytes {
    double step[TG_OP_COUNT];
    double token[TG_OP_COUNT];
    double kv_scale; /* the KV cache's bytes per element / 4: 1 (f32), 0.5 (f16); 0 = 1 */
} tg_typed_bytes;
void tg_typed_bytes_of(const tg_model *m, tg_typed_bytes *out);
/* tg_typed_bytes_of(the handle's model), with the handle's KV cache type. */
void tg_typed_bytes_of_gpt(const tg_gpt *g, tg_typed_bytes *out);
/* kv_scale of a KV cache type (TG_WTYPE_F32 or TG_WTYPE_F16). */
double tg_kv_scale(tg_wtype kv_type);
/* tg_opcost_step with the model's real weight and KV bytes (tb NULL: as f32). */
tg_opcost tg_opcost_step_typed(const tg_gpt2_config *c, const tg_typed_bytes *tb, tg_op op, int T,
                               int pos, int n_logits);
tg_opcost tg_opcost_add(tg_opcost a, tg_opcost b);
tg_opcost tg_opcost_scale(tg_opcost a, double s);

int tg_op_in_block(tg_op op);  /* ln_1 .. mlp_down: once per layer */
int tg_op_per_head(tg_op op);  /* attn_scores, attn_softmax, attn_mix */

#endif
