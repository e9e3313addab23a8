/* gpt.h — a decoder at run time, whatever its architecture (GPT-2, Llama):
 * forward pass (prefill and decode) over a KV cache, and the probe hook the
 * profiler and the head comparison build on. `tg_gpt` is the handle of any
 * architecture; what differs is one ops table per architecture
 * (model/arch.h: model/gpt2.c, model/llama.c), what is shared — KV cache,
 * attention, probes, head mask, threads, snapshots — is written once.
 *
 * Dimension legend (model/): L layers, H query heads, KVH key/value heads
 * (H % KVH == 0; query head h reads KV head h / (H/KVH), its KV group),
 * E width, HS head size (E/H for GPT-2), F feed-forward width,
 * V vocabulary, C context, T tokens in a batch, P positions in the KV cache.
 */
#ifndef TINYGPT_MODEL_GPT_H
#define TINYGPT_MODEL_GPT_H

#include <stdint.h>

#include "engine/engine.h"
#include "weights/gpt2.h"
#include "weights/model.h"

/* The ops of a forward pass, in order; the profiler's rows. Llama maps its
 * ops onto the same rows (attn_norm -> ln_1, q/k/v + RoPE -> qkv, ffn_norm
 * -> ln_2, gate and up -> mlp_up, SiLU·mul -> gelu, RMSNorm -> ln_f), so
 * every profile table reads the same for both; tg_op_label names the row
 * for the architecture. */
typedef enum tg_op {
    TG_OP_EMBED = 0,     /* token + position embedding */
    TG_OP_LN1,           /* ln_1 */
    TG_OP_QKV,           /* fused QKV projection  [T,E] -> [T,3E] */
    TG_OP_ATTN_SCORES,   /* q·Kᵀ·scale per head */
    TG_OP_ATTN_SOFTMAX,  /* softmax over the scores */
    TG_OP_ATTN_MIX,      /* p·V per head */
    TG_OP_ATTN_PROJ,     /* output projection + residual add */
    TG_OP_LN2,           /* ln_2 */
    TG_OP_MLP_UP,        /* [T,E] -> [T,F] */
    TG_OP_GELU,
    TG_OP_MLP_DOWN,      /* [T,F] -> [T,E] + residual add */
    TG_OP_LNF,           /* final layernorm */
    TG_OP_LM_HEAD,       /* [T,E] -> [T,V] */
    TG_OP_SAMPLE,        /* sampler (timed by the caller) */
    TG_OP_COUNT
} tg_op;

const char *tg_op_name(tg_op op); /* "embed", "ln_1", "qkv", "attn_scores", ... */
/* The op's name in an architecture's own words ("attn_norm", "swiglu", ...
 * for llama; tg_op_name for gpt2). */
const char *tg_op_label(tg_arch arch, tg_op op);

/* The probe hook: off (NULL) by default and then free. When set, the forward
 * pass calls op_begin/op_end around every op (layer = -1 outside the blocks;
 * head = -1 unless the op is per head; ith = worker thread), and, if
 * attn is set, hands over the attention weights of every query:
 * p[n_pos] for (layer, head, query position qpos). With a probe attached,
 * attention runs unfused (scores, softmax, mix) so each part is timed and
 * the weights exist. Callbacks run on worker threads: they must only touch
 * memory indexed by ith (or their own locks). */
typedef struct tg_probe {
    void *user;
    void (*op_begin)(void *user, tg_op op, int layer, int head, int ith);
    void (*op_end)(void *user, tg_op op, int layer, int head, int ith);
    void (*attn)(void *user, int layer, int head, int qpos, const float *p, int n_pos);
    /* Optional: ends `prev` and begins `next` at one clock reading, so a run
     * of short ops (attention, query by query) leaves no untimed gaps.
     * NULL: op_end then op_begin. */
    void (*op_next)(void *user, tg_op prev, tg_op next, int layer, int head, int ith);
} tg_probe;

typedef struct tg_gpt_opts {
    int n_threads;      /* >= 1 */
    const char *isa;    /* NULL: $TINYGPT_ISA or the best the CPU has */
    int n_ctx;          /* KV cache length; 0 = the model's context */
    tg_wtype kv_type;   /* KV cache elements: TG_WTYPE_F32 (0, the default) or
                           TG_WTYPE_F16 (half the bytes; attention widens
                           them as it loads them, or block by block); any
                           other is TG_ERR_ARG */
} tg_gpt_opts;

typedef struct tg_gpt tg_gpt; /* engine, pool, weights view, KV cache, scratch */

/* Builds the forward pass of a loaded model of any architecture (m->cfg.arch
 * picks the ops table; m must outlive g: the weights are views). */
tg_status tg_gpt_create(tg_gpt **out, const tg_model *m, const tg_gpt_opts *opts,
                        tg_err *err);
void tg_gpt_free(tg_gpt *g);

/* The config, with the 0 defaults resolved: n_kv_head, head_dim,
 * rope_theta and rope_dim hold their values; n_layer, n_head, n_embd,
 * n_ctx (the model's), n_vocab, n_ff mean what they always did. */
const tg_gpt2_config *tg_gpt_config(const tg_gpt *g);
/* The views it runs on: GPT-2's (zeroed for another architecture) and,
 * for any architecture, the model it was created from. */
const tg_gpt2_weights *tg_gpt_weights(const tg_gpt *g);
const tg_model *tg_gpt_model(const tg_gpt *g);
tg_arch tg_gpt_arch(const tg_gpt *g);
/* KV-cache bytes per position (all layers, K and V: 2·L·KVH·HS elements of
 * the cache's type) and for the whole cache (times C). */
size_t tg_gpt_kv_bytes_per_token(const tg_gpt *g);
size_t tg_gpt_kv_bytes(const tg_gpt *g);
const tg_engine *tg_gpt_engine(const tg_gpt *g);
tg_pool *tg_gpt_pool(tg_gpt *g);
int tg_gpt_n_ctx(const tg_gpt *g); /* C: the KV cache length */
tg_wtype tg_gpt_kv_type(const tg_gpt *g); /* TG_WTYPE_F32 or TG_WTYPE_F16 */

/* Runs tokens[T] at positions pos..pos+T-1, appending their keys/values to
 * the cache, which must already hold positions 0..pos-1: pos <= P (the
 * positions held, tg_gpt_n_pos). pos < P rewrites from pos: the positions
 * from pos on are forgotten, and P becomes pos + T. T > 1 is the prefill
 * (GEMM path), T == 1 a decode step. Writes logits[T,V] when all_logits,
 * else only the last token's logits[V]. pos > P or pos + T beyond the cache
 * length is TG_ERR_RANGE; token ids outside [0,V) are TG_ERR_ARG (the cache
 * is then unchanged). A NaN or inf among the logits written is
 * TG_ERR_NUMERIC naming the first (the logits are then garbage; the KV cache
 * holds the batch, P = pos + T). */
tg_status tg_gpt_forward(tg_gpt *g, const int *tokens, int T, int pos, float *logits,
                         int all_logits, tg_err *err);

/* P: how many positions the KV cache holds (0 after create). */
int tg_gpt_n_pos(const tg_gpt *g);
/* Forgets the positions from n_pos on (0 <= n_pos <= P; else TG_ERR_RANGE). */
tg_status tg_gpt_truncate(tg_gpt *g, int n_pos, tg_err *err);

/* A copy of the first P positions of a KV cache, to fork a context: prefill
 * once, snapshot, and restore before each continuation (or into another
 * tg_gpt of the same model and a context of at least P). [L, KVH, P, HS]
 * for K and for V. */
typedef struct tg_kv_snapshot tg_kv_snapshot;
tg_status tg_gpt_snapshot(const tg_gpt *g, tg_kv_snapshot **out, tg_err *err);
/* Makes g's cache hold exactly the snapshot's positions (P = its count).
 * TG_ERR_ARG if the shapes differ, TG_ERR_RANGE if g's context is shorter. */
tg_status tg_gpt_restore(tg_gpt *g, const tg_kv_snapshot *s, tg_err *err);
int tg_kv_snapshot_n_pos(const tg_kv_snapshot *s);
void tg_kv_snapshot_free(tg_kv_snapshot *s);

/* Attaches (or, with NULL, detaches) a probe. */
void tg_gpt_set_probe(tg_gpt *g, const tg_probe *probe);

/* fn(ctx) is asked at the start of every later forward pass (NULL: never);
 * non-zero makes that pass return TG_ERR_INTERRUPTED with the cache
 * unchanged, so a long analysis (many passes) stops within one pass. */
void tg_gpt_set_interrupt(tg_gpt *g, int (*fn)(void *ctx), void *ctx);

/* Head ablation for the comparison tools: mask[L*H] over query heads, 0
 * zeroes that head's output before the projection; NULL keeps every head.
 * Copied. */
tg_status tg_gpt_set_head_mask(tg_gpt *g, const uint8_t *mask, tg_err *err);

#endif
