/* llama.h — the `llama` binding: a Llama-family checkpoint's typed weight
 * views, checked against its config (weights/config.h), from any reader's
 * tensor set (weights/tensors.h), and the llama GGUF writer.
 *
 * Dimension legend: weights/config.h (L, E, H, KVH, HS, F, V, C).
 * Matrices are [OUT, IN] row-major typed views (y = x · Wᵀ), no biases.
 */
#ifndef TINYGPT_WEIGHTS_LLAMA_H
#define TINYGPT_WEIGHTS_LLAMA_H

#include <stddef.h>

#include "engine/engine.h"
#include "engine/status.h"
#include "weights/config.h"
#include "weights/tensors.h"

struct tg_model;
struct tg_vocab;
struct tg_gguf;
struct tg_gguf_writer;

typedef struct tg_llama_layer {
    const float *attn_norm;  /* attn_norm   [E]        RMSNorm gain */
    tg_weight wq;            /* attn_q      [H·HS, E]  rows in cfg.rope_pairs order */
    tg_weight wk;            /* attn_k      [KVH·HS, E] */
    tg_weight wv;            /* attn_v      [KVH·HS, E] */
    tg_weight wo;            /* attn_output [E, H·HS] */
    const float *ffn_norm;   /* ffn_norm    [E] */
    tg_weight w1;            /* ffn_gate    [F, E]  SiLU(x·w1ᵀ) */
    tg_weight w3;            /* ffn_up      [F, E]  ⊙ x·w3ᵀ */
    tg_weight w2;            /* ffn_down    [E, F] */
} tg_llama_layer;

typedef struct tg_llama_weights {
    tg_weight tok_embd;      /* token_embd  [V, E] */
    tg_llama_layer *layers;  /* [L] (owned by the model) */
    const float *out_norm;   /* output_norm [E] */
    tg_weight output;        /* output      [V, E]; == tok_embd when tied */
    int tied;                /* 1 when output.weight was absent (or tied on purpose) */
} tg_llama_weights;

/* A llama config's sanity: positive sizes, H % KVH == 0, E, HS, F, V, C
 * within limits, rope_dim even and <= HS, θ and eps positive and finite.
 * `where` names the file in the message. */
tg_status tg_llama_config_check(const tg_model_config *c, const char *where, tg_err *err);

/* llama.* metadata -> c (arch = LLAMA, rope_pairs = ADJACENT, n_vocab from
 * llama.vocab_size when present, else left 0 for the binding to take from
 * token_embd). Required: context_length, embedding_length, block_count,
 * feed_forward_length, attention.head_count. Optional with defaults:
 * attention.head_count_kv (= H), attention.layer_norm_rms_epsilon (1e-5),
 * rope.freq_base (10000), rope.dimension_count (HS), attention.key_length
 * (E / H). */
tg_status tg_llama_config_from_gguf(tg_model_config *c, const struct tg_gguf *g,
                                    const char *path, tg_err *err);

/* The binding: m->cfg was filled by the reader (arch LLAMA; n_vocab 0 means
 * "token_embd's rows"), m->priv is the reader's store (weights/internal.h),
 * which keeps the views' bytes alive and receives the f32 copies of 1-D
 * gains stored in another type. Looks every tensor up by name in ts, checks
 * its shape against the config and its type, scans it for NaN/inf unless
 * flags has TG_LOAD_NO_CHECK, and fills m->llama (and m->has_weights).
 * Tensors of layers >= L are an error (the metadata and the weights
 * disagree); an absent output.weight ties the classifier. */
tg_status tg_llama_bind(struct tg_model *m, const tg_tensor_set *ts, int flags, tg_err *err);

/* What tg_llama_bind keeps for each view of ts, in bytes: out[i] =
 * ts->t[i].nbytes where the model reads the view where it is (a matrix whose
 * data is aligned for its type, an aligned F32 vector), 4 per element where
 * it converts it to f32 (any other vector, an unaligned matrix), 0 where no
 * tensor of the layout of c reads it. For `inspect`; c as tg_llama_bind
 * would have it (the layer count and names matter, not the sizes). */
tg_status tg_llama_resident(const tg_model_config *c, const tg_tensor_set *ts, uint64_t *out,
                            tg_err *err);

/* Parameters (output counted only when untied). */
size_t tg_llama_n_params(const tg_model_config *c, int tied);

/* Adds general.architecture = llama, the llama.* metadata, the tokenizer
 * (if vocab has tokens: whatever the vocabulary writer of weights/ writes
 * for it) and every tensor under llama.cpp's names to a GGUF writer.
 * Matrices go in `dtype` (a tg_dtype: F32, F16, BF16, Q8_0, Q4_0; a matrix
 * already in that type is copied as it is), 1-D gains F32. Q/K rows in
 * TG_ROPE_HALVES order (Hugging Face) are permuted into ADJACENT order,
 * which is what GGUF `llama` means; the file always says ADJACENT. A tied
 * model is written without output.weight (llama.cpp ties it then). Weights
 * are borrowed until tg_gguf_write. */
tg_status tg_llama_to_gguf(struct tg_gguf_writer *gw, const tg_model_config *cfg,
                           const tg_llama_weights *w, const struct tg_vocab *vocab, int dtype,
                           tg_err *err);

/* tg_llama_to_gguf with the classifier in out_dtype (output.weight; for a
 * tied model token_embd, which is the classifier then, as llama.cpp's
 * quantize does) and, with flags TG_LLAMA_WRITE_F16_FALLBACK, a matrix whose
 * rows are not a multiple of 32 written in F16 instead of a 32-block type
 * (Q8_0, Q4_0) rather than refusing the model; *n_fallback (may be NULL)
 * counts those matrices. */
#define TG_WRITE_F16_FALLBACK 1 /* the same flag and rule for tg_gpt2_to_gguf_ex */
#define TG_LLAMA_WRITE_F16_FALLBACK TG_WRITE_F16_FALLBACK
tg_status tg_llama_to_gguf_ex(struct tg_gguf_writer *gw, const tg_model_config *cfg,
                              const tg_llama_weights *w, const struct tg_vocab *vocab, int dtype,
                              int out_dtype, int flags, int *n_fallback, tg_err *err);

/* tg_llama_to_gguf, then written to a temporary beside path and renamed. */
tg_status tg_llama_save(const char *path, const tg_model_config *cfg, const tg_llama_weights *w,
                        const struct tg_vocab *vocab, int dtype, tg_err *err);

#endif
