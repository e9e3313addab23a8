/* tensors.h — the reader -> binding contract of weights/ (DESIGN.md).
 *
 * A reader (GGUF, llama2.c .bin, safetensors + HF folder) turns bytes into
 *   1. metadata: a tg_model_config (weights/config.h) it fills from its own
 *      keys — GGUF `llama.*` (tg_llama_config_from_gguf), the llama2.c
 *      header, config.json — with `arch` and `rope_pairs` set; and
 *   2. a tg_tensor_set: named, typed, bounds-checked views of the tensors,
 *      under llama.cpp's names (below), in ggml's type codes and GGUF's
 *      shape order (ne[0] innermost: a [rows, cols] matrix is ne = {cols, rows}).
 * A binding (tg_llama_bind, weights/llama.h) turns the two into the
 * architecture's weight struct, checking every shape against the config.
 * Readers do not know architectures' shapes; bindings do not parse bytes.
 *
 * For GGUF the set is the file's tensor table as it is (tg_tensor_set_gguf).
 * A reader of another format presents the same: views straight into its
 * memory map where the bytes are already in a ggml layout (llama2.c fp32
 * weights are F32 [rows, cols] row-major, exactly ggml's F32), otherwise
 * into buffers it converted (e.g. llama2.c's int8 groups to Q8_0 or F32),
 * which it keeps alive as long as the model (tg_model.priv); the name is
 * the llama.cpp name whatever the source called it. Per-layer tensors in
 * a stacked source (llama2.c stores wq as [L, E, E]) are one view per layer.
 *
 * Llama tensor names (shapes numpy order, [rows, cols]; HS = head_dim):
 *   token_embd.weight          [V, E]
 *   blk.N.attn_norm.weight     [E]          RMSNorm gain before attention
 *   blk.N.attn_q.weight        [H·HS, E]    rows in cfg.rope_pairs order
 *   blk.N.attn_k.weight        [KVH·HS, E]  rows in cfg.rope_pairs order
 *   blk.N.attn_v.weight        [KVH·HS, E]
 *   blk.N.attn_output.weight   [E, H·HS]
 *   blk.N.ffn_norm.weight      [E]
 *   blk.N.ffn_gate.weight      [F, E]       w1 (SiLU side)
 *   blk.N.ffn_up.weight        [F, E]       w3
 *   blk.N.ffn_down.weight      [E, F]       w2
 *   output_norm.weight         [E]
 *   output.weight              [V, E]       absent: tied to token_embd
 * Types: matrices F32, F16, BF16, Q8_0, Q4_0 (kept as they are); 1-D gains
 * F32/F16/BF16 (the binding converts them to f32).
 */
#ifndef TINYGPT_WEIGHTS_TENSORS_H
#define TINYGPT_WEIGHTS_TENSORS_H

#include <stdint.h>

#include "engine/status.h"

struct tg_gguf;

typedef struct tg_tensor_view {
    const char *name;   /* llama.cpp's name, NUL-terminated (owned by the reader) */
    int n_dims;         /* 1..4 */
    int64_t ne[4];      /* innermost first; unused dims are 1 */
    uint32_t type;      /* tg_ggml_type (weights/gguf.h) */
    const void *data;   /* nbytes readable bytes, in that type's layout */
    uint64_t nbytes;    /* exactly the bytes ne and type call for */
} tg_tensor_view;

typedef struct tg_tensor_set {
    int n;
    tg_tensor_view *t;  /* [n], names unique */
} tg_tensor_set;

/* The view named `name`, or NULL. */
const tg_tensor_view *tg_tensor_set_find(const tg_tensor_set *s, const char *name);

/* The tensor table of an open GGUF as a set (views into its mapping; the
 * array is malloc'd: free it with tg_tensor_set_free, the file stays open). */
tg_status tg_tensor_set_gguf(tg_tensor_set *s, const struct tg_gguf *g, tg_err *err);

/* Frees the array (not the bytes the views point at, nor the names). */
void tg_tensor_set_free(tg_tensor_set *s);

#endif
