/* gpt2.h — a GPT-2 checkpoint in memory: configuration, typed weight views and
 * the tokenizer vocabulary, loaded from GGUF (llama.cpp's `gpt2`
 * architecture) or a Hugging Face GPT-2 folder, and written back as GGUF.
 *
 * Dimension legend: L layers, E embedding width, H heads, HS = E/H head size,
 * F feed-forward width (4E for GPT-2), V vocabulary, C context length.
 * Weight matrices are [OUT, IN] row-major (y = x · Wᵀ + b).
 */
#ifndef TINYGPT_WEIGHTS_GPT2_H
#define TINYGPT_WEIGHTS_GPT2_H

#include <stddef.h>
#include <stdint.h>

#include "engine/engine.h"
#include "engine/status.h"
#include "weights/config.h"
#include "weights/llama.h"
#include "weights/vocab.h"

/* tg_gpt2_config (the config of every architecture) is in weights/config.h. */

/* Matrices are typed views (engine/engine.h: f32, f16, bf16, q8_0, q4_0, as
 * the file stores them); layernorm gains, biases and the position
 * embedding are f32 (converted at load when a file stores them otherwise). */
typedef struct tg_gpt2_layer {
    const float *ln1_w, *ln1_b;   /* attn_norm   [E], [E] */
    tg_weight qkv_w;              /* attn_qkv    [3E, E]: rows Q, K, V, head-major */
    const float *qkv_b;           /*             [3E] */
    tg_weight proj_w;             /* attn_output [E, E] */
    const float *proj_b;          /*             [E] */
    const float *ln2_w, *ln2_b;   /* ffn_norm    [E], [E] */
    tg_weight up_w;               /* ffn_up      [F, E] */
    const float *up_b;            /*             [F] */
    tg_weight down_w;             /* ffn_down    [E, F] */
    const float *down_b;          /*             [E] */
} tg_gpt2_layer;

typedef struct tg_gpt2_weights {
    tg_weight wte;                 /* token_embd    [V, E] */
    const float *wpe;              /* position_embd [C, E] */
    tg_gpt2_layer *layers;         /* [L] */
    const float *lnf_w, *lnf_b;    /* output_norm   [E], [E] */
    tg_weight lm_head;             /* output        [V, E]; == wte when tied */
    int tied;                      /* 1 when output.weight was absent */
} tg_gpt2_weights;

/* The tokenizer vocabulary (struct tg_vocab, its readers and writer):
 * weights/vocab.h. */

/* A loaded checkpoint of any architecture (struct tg_model; the old name
 * tg_gpt2_model is the same type): owns the mapping/allocations behind
 * every pointer. cfg.arch says which weights are filled: `w` for GPT-2,
 * `llama` for Llama (the other stays zeroed). GGUF matrices (F32, F16,
 * BF16, Q8_0, Q4_0) are views straight into a read-only memory map, in the
 * file's type: never write through them. weights/model.h is the header new
 * code includes (tg_model, tg_model_load). */
typedef struct tg_model {
    tg_gpt2_config cfg;
    tg_gpt2_weights w;     /* arch GPT2; all NULL for a vocab-only file */
    tg_vocab vocab;
    int has_weights;
    char *path;
    void *priv;            /* format-specific storage (weights/internal.h) */
    tg_llama_weights llama; /* arch LLAMA */
} tg_gpt2_model;

/* Flags of tg_gpt2_load; 0 loads everything, checked. */
enum {
    TG_LOAD_VOCAB_ONLY = 1, /* tensors are neither required nor loaded */
    TG_LOAD_NO_CHECK = 2,   /* skip the scan for non-finite values (huge files) */
};

/* tg_model_load (weights/model.h) restricted to GPT-2: a checkpoint of
 * another architecture is TG_ERR_UNSUPPORTED naming it, for the callers
 * that handle GPT-2 weights themselves (convert, quantize, train).
 * Loads a GGUF file, or a Hugging Face GPT-2 folder (config.json,
 * model.safetensors, vocab.json, merges.txt), by inspecting `path`.
 * GGUF matrices stay in their type (F32, F16, BF16, Q8_0, Q4_0; no
 * conversion); 1-D tensors and the position embedding are converted to f32
 * when stored otherwise. Unless TG_LOAD_NO_CHECK, every tensor is scanned
 * once: a NaN or inf value is TG_ERR_NUMERIC naming the tensor and the first
 * bad index. flags: TG_LOAD_* (1 is TG_LOAD_VOCAB_ONLY, as the old
 * vocab_only argument). */
tg_status tg_gpt2_load(tg_gpt2_model *m, const char *path, int flags, tg_err *err);
void tg_gpt2_free(tg_gpt2_model *m);

/* The type matrices are written in (values are ggml type codes). */
typedef enum tg_dtype {
    TG_DTYPE_F32 = 0, TG_DTYPE_F16 = 1, TG_DTYPE_Q4_0 = 2, TG_DTYPE_Q8_0 = 8, TG_DTYPE_BF16 = 30
} tg_dtype;
/* Parses "f32|f16|bf16|q8_0|q4_0"; TG_ERR_ARG on anything else. */
tg_status tg_dtype_parse(const char *name, tg_dtype *out);

/* Writes a gpt2 GGUF v3 (32-byte alignment, output.weight written even when
 * tied, tokenizer metadata) to a temporary file beside `path`, then renames
 * it into place. For extra key/values or tensors, see tg_gpt2_to_gguf. */
tg_status tg_gpt2_save(const char *path, const tg_gpt2_config *cfg,
                       const tg_gpt2_weights *w, const tg_vocab *vocab,
                       tg_dtype dtype, tg_err *err);

/* Number of parameters (lm_head counted only when untied). */
size_t tg_gpt2_n_params(const tg_gpt2_config *cfg, int tied);

/* ---- additions (weights issue #3) ---------------------------------------- */

struct tg_gguf;
struct tg_gguf_writer;

/* The GGUF file behind a loaded model (for extra keys and tensors, see
 * weights/gguf.h), or NULL when it came from a Hugging Face folder. */
const struct tg_gguf *tg_gpt2_gguf(const tg_gpt2_model *m);

/* Checks a configuration: positive sizes, E % H == 0, sane limits. */
tg_status tg_gpt2_config_check(const tg_gpt2_config *cfg, const char *where, tg_err *err);

/* Adds the gpt2 metadata, the tokenizer (if vocab has tokens) and every
 * tensor (w may be NULL for a vocab-only file) to a GGUF writer; the caller
 * may add its own keys and tensors before writing it with tg_gguf_write.
 * This is tg_gpt2_save with extras (e.g. a trainer's step count and
 * optimizer state). Weights are borrowed until the write. With
 * TG_DTYPE_F16 or BF16, matrices are stored in that type and 1-D tensors
 * F32 (llama.cpp's convention); with Q8_0 or Q4_0 the position embedding
 * stays F32 too (E and F must then be multiples of 32). A matrix already in
 * the wanted type is written as it is; any other is decoded to f32 (exact)
 * and encoded. A tied model gets an explicit output.weight plus the key
 * `tinygpt.tied_embeddings = true`, which makes the loader tie it again. */
tg_status tg_gpt2_to_gguf(struct tg_gguf_writer *gw, const tg_gpt2_config *cfg,
                          const tg_gpt2_weights *w, const tg_vocab *vocab, tg_dtype dtype,
                          tg_err *err);

/* tg_gpt2_to_gguf with output.weight in its own type (e.g. f32 or q8_0 while
 * the other matrices are q4_0). A tied model then keeps the key but loads
 * untied when the bytes differ from token_embd's. flags and *n_fallback as
 * for tg_llama_to_gguf_ex: with TG_WRITE_F16_FALLBACK a matrix whose rows
 * are not a multiple of 32 is written in F16 instead of Q8_0/Q4_0. */
tg_status tg_gpt2_to_gguf_ex(struct tg_gguf_writer *gw, const tg_gpt2_config *cfg,
                             const tg_gpt2_weights *w, const tg_vocab *vocab, tg_dtype dtype,
                             tg_dtype out_dtype, int flags, int *n_fallback, tg_err *err);

/* Frees a vocabulary's strings and arrays (not the struct), leaving it empty. */
void tg_vocab_free(tg_vocab *v);
/* A byte-level vocabulary: the 256 GPT-2 byte tokens (ids = byte values in
 * GPT-2's byte→unicode order, i.e. token i is the byte i) and
 * "<|endoftext|>" as id 256 (bos = eos = 256), no merges. */
tg_status tg_vocab_bytes(tg_vocab *v, tg_err *err);
/* Loads vocab.json + merges.txt from a Hugging Face folder. n_min pads the
 * vocabulary to at least that many tokens ("[PADi]", as llama.cpp does). */
tg_status tg_vocab_load_hf(tg_vocab *v, const char *dir, int n_min, tg_err *err);

#include "weights/model.h" /* tg_model_load, for every includer of this header */

#endif
