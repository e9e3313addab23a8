/* config.h — the shape of a decoder, whatever its architecture: what every
 * binding fills and what model/ (tg_gpt_config) hands out.
 *
 * Dimension legend: L layers, E embedding width, H query heads, KVH key/value
 * heads (H % KVH == 0; KVH == H is multi-head, 1 < KVH < H grouped-query,
 * KVH == 1 multi-query attention), HS head size, F feed-forward width,
 * V vocabulary, C context length.
 *
 * The struct keeps its old name (tg_gpt2_config) and its first seven fields
 * in their old order and meaning; the fields after them are new and 0
 * means "GPT-2's value", so every existing `{.n_layer = ...}` initializer
 * still describes the same GPT-2.
 */
#ifndef TINYGPT_WEIGHTS_CONFIG_H
#define TINYGPT_WEIGHTS_CONFIG_H

/* The architectures a binding knows (general.architecture in GGUF). A third
 * one is one more value here, one binding in weights/ and one ops table in
 * model/ (model/arch.h). */
typedef enum tg_arch {
    TG_ARCH_GPT2 = 0,   /* "gpt2": LayerNorm, fused QKV with biases, GELU MLP, learned positions */
    TG_ARCH_LLAMA = 1,  /* "llama": RMSNorm, RoPE, SwiGLU, GQA, no biases */
    TG_ARCH_COUNT
} tg_arch;

const char *tg_arch_name(tg_arch a);                        /* "gpt2", "llama", or "?" */
/* Parses "gpt2" | "llama" given as (s, len); -1 when unknown. */
int tg_arch_parse(const char *s, unsigned long len);

/* Which dimensions of a head RoPE rotates together (the sources disagree;
 * each reader says which one its Q/K rows are in, and the forward applies
 * exactly that one; the GGUF writer permutes HALVES rows into ADJACENT, as
 * llama.cpp's converter does):
 *   TG_ROPE_ADJACENT  pairs (2i, 2i+1) of each head: GGUF `llama`,
 *                     llama2.c's .bin / export (Meta's layout), run.c
 *   TG_ROPE_HALVES    pairs (i, i + HS/2): Hugging Face (rotate_half), whose
 *                     converter permuted Meta's Q and K rows
 * Pair i turns by angle pos · θ^(-2i/D), D = rope_dim (<= HS; dimensions
 * from D on are not rotated). */
typedef enum tg_rope_pairs {
    TG_ROPE_ADJACENT = 0,
    TG_ROPE_HALVES = 1,
} tg_rope_pairs;

typedef struct tg_gpt2_config {
    int n_layer;   /* L */
    int n_head;    /* H: query heads */
    int n_embd;    /* E */
    int n_ctx;     /* C */
    int n_vocab;   /* V */
    int n_ff;      /* F */
    float ln_eps;  /* the norm's epsilon: LayerNorm's (GPT-2: 1e-5) or RMSNorm's (llama) */
    /* ---- new (0 = GPT-2's value) ---- */
    tg_arch arch;        /* TG_ARCH_GPT2 (0) or TG_ARCH_LLAMA */
    int n_kv_head;       /* KVH; 0 = H */
    int head_dim;        /* HS; 0 = E / H (llama: H·HS may differ from E) */
    float rope_theta;    /* llama: RoPE base θ; 0 = 10000 */
    int rope_dim;        /* llama: rotated dimensions per head D; 0 = HS */
    tg_rope_pairs rope_pairs; /* llama: the pair convention of the Q/K rows */
} tg_gpt2_config;

/* The same struct under the name new code uses. */
typedef struct tg_gpt2_config tg_model_config;

/* The values the 0 defaults stand for. */
static inline int tg_config_n_kv_head(const tg_model_config *c) {
    return c->n_kv_head > 0 ? c->n_kv_head : c->n_head;
}
static inline int tg_config_head_dim(const tg_model_config *c) {
    return c->head_dim > 0 ? c->head_dim : (c->n_head > 0 ? c->n_embd / c->n_head : 0);
}
static inline float tg_config_rope_theta(const tg_model_config *c) {
    return c->rope_theta > 0.0f ? c->rope_theta : 10000.0f;
}
static inline int tg_config_rope_dim(const tg_model_config *c) {
    return c->rope_dim > 0 ? c->rope_dim : tg_config_head_dim(c);
}
/* Floats of K plus V per position and layer: 2 · KVH · HS. */
static inline long tg_config_kv_floats(const tg_model_config *c) {
    return 2L * tg_config_n_kv_head(c) * tg_config_head_dim(c);
}

#endif
