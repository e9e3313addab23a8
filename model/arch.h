/* arch.h — what an architecture gives the shared forward pass (model/gpt.c):
 * one small ops table. gpt.c owns the handle, KV cache, attention, probes,
 * head mask, threads and snapshots, and drives
 *     embed -> block(l) for every layer -> final_norm -> lm_head
 * never asking which architecture it runs. A block writes its keys and
 * values with tg_store_kv and calls tg_attention (model/gpt_internal.h).
 * A third architecture is one more table (a file in model/) and one more
 * binding (weights/), not a branch in every function. */
#ifndef TINYGPT_MODEL_ARCH_H
#define TINYGPT_MODEL_ARCH_H

#include "model/gpt.h"

typedef struct tg_arch_ops {
    tg_arch arch;
    /* Is m a complete model of this architecture (config sane, every view
     * of its shape)? Checks whoever built m, not only the binding's files. */
    tg_status (*check)(const tg_model *m, tg_err *err);
    /* Architecture state built once per handle (RoPE tables, ...), freed by
     * release (both may be NULL). */
    tg_status (*prepare)(tg_gpt *g, tg_err *err);
    void (*release)(tg_gpt *g);
    /* x[T,E] = the embedding of tokens at positions pos..pos+T-1 */
    void (*embed)(tg_gpt *g, const int *tokens, int T, int pos);
    /* x[T,E] = block l applied to x (cache written for pos..pos+T-1) */
    void (*block)(tg_gpt *g, int layer, int pos, int T);
    /* y[rows,E] = the final norm of x[rows,E] */
    void (*final_norm)(tg_gpt *g, float *y, const float *x, int rows);
    /* the classifier [V, E] */
    const tg_weight *(*lm_head)(const tg_gpt *g);
    /* the bytes of the matrices one decode step reads (blocks, classifier) */
    double (*step_weight_bytes)(const tg_model *m);
    /* op labels in the architecture's words (NULL entries: tg_op_name) */
    const char *const *op_labels;
} tg_arch_ops;

extern const tg_arch_ops tg_gpt2_ops;  /* model/gpt2.c */
extern const tg_arch_ops tg_llama_ops; /* model/llama.c */

#endif
