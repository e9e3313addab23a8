/* hf_llama.h — Hugging Face LlamaForCausalLM folders, the reader side of
 * weights/tensors.h: config.json (cJSON, the checks of hf.c's parser:
 * no \u0000, no duplicate keys) -> tg_model_config, model.safetensors ->
 * views under llama.cpp's names in the file's type (F32, F16, BF16 as
 * GGML types, straight into the mapping).
 *
 *   model.embed_tokens.weight                  token_embd.weight
 *   model.layers.N.input_layernorm.weight      blk.N.attn_norm.weight
 *   model.layers.N.self_attn.{q,k,v,o}_proj    blk.N.attn_{q,k,v,output}
 *   model.layers.N.post_attention_layernorm    blk.N.ffn_norm
 *   model.layers.N.mlp.{gate,up,down}_proj     blk.N.ffn_{gate,up,down}
 *   model.norm.weight                          output_norm.weight
 *   lm_head.weight                             output.weight (dropped when
 *                                              tie_word_embeddings is true)
 *
 * Hugging Face's rotary embedding rotates halves (rotate_half: pairs
 * (i, i + HS/2)): the config says TG_ROPE_HALVES and Q/K rows are left as
 * they are (the GGUF writer permutes them, as llama.cpp's converter does).
 * What this reader cannot run faithfully is refused by name: rope_scaling,
 * attention or MLP biases, an activation other than silu. */
#ifndef TINYGPT_WEIGHTS_HF_LLAMA_H
#define TINYGPT_WEIGHTS_HF_LLAMA_H

#include <stddef.h>

#include "engine/status.h"
#include "weights/config.h"
#include "weights/safetensors.h"
#include "weights/tensors.h"

typedef struct tg_hf_llama {
    tg_model_config cfg;
    int bos_id, eos_id;  /* -1 when config.json has none */
    int tie;             /* tie_word_embeddings */
    tg_st *st;           /* model.safetensors */
    char (*names)[48];   /* the llama.cpp names of st's tensors, by index */
    char *dir;
} tg_hf_llama;

/* 1 when dir/config.json names a Llama (model_type "llama" or
 * architectures[0] "LlamaForCausalLM"); 0 otherwise, also on any error
 * (the GPT-2 reader then reports it). */
int tg_hf_is_llama(const char *dir);

/* config.json's text -> cfg (arch LLAMA, rope_pairs HALVES), ids and the
 * tie flag; path names it in errors. */
tg_status tg_hf_llama_config_parse(tg_model_config *cfg, int *bos, int *eos, int *tie, const char *json, size_t len,
                                   const char *path, tg_err *err);

/* Reads dir/config.json and maps dir/model.safetensors, naming every tensor
 * (an unknown name, or a layer past num_hidden_layers, is an error). */
tg_status tg_hf_llama_open(tg_hf_llama **out, const char *dir, tg_err *err);
void tg_hf_llama_close(tg_hf_llama *h);

/* The views (names and bytes live until tg_hf_llama_close; ts->t is
 * malloc'd: tg_tensor_set_free). */
tg_status tg_hf_llama_tensor_set(const tg_hf_llama *h, tg_tensor_set *ts, tg_err *err);

#endif
