/* ops_neon.c — softmax, layernorm, GELU, add and the attention core for
 * aarch64 Advanced SIMD: the shared templates (engine/simd/) instantiated
 * with the NEON vocabulary (4-float vectors, SLEEF's advsimd exp/tanh). */
#include "engine/arm/arm.h"
#include "engine/arm/vec_neon.h"
#include "engine/simd/ops_tmpl.h"
#include "engine/simd/attn_tmpl.h"
#include "engine/simd/llama_tmpl.h"

void tg_kernels_init_ops_neon(tg_kernels *k) {
    k->softmax = softmax_neon;
    k->layernorm = layernorm_neon;
    k->gelu = gelu_neon;
    k->add = add_neon;
    k->attn_scores = attn_scores_neon;
    k->attn_mix = attn_mix_neon;
    k->attn_decode = attn_decode_neon;
    k->attn_prefill = attn_prefill_neon;
    k->rmsnorm = rmsnorm_neon;
    k->silu_mul = silu_mul_neon;
    k->rope = rope_neon;
    k->attn_decode_gqa = attn_decode_gqa_neon;
    k->attn_decode_gqa_f16 = attn_decode_gqa_f16_neon;
    k->attn_decode_stream = attn_decode_stream_neon;
    k->attn_decode_gqa_stream = attn_decode_gqa_stream_neon;
    k->attn_decode_gqa_f16_stream = attn_decode_gqa_f16_stream_neon;
    k->attn_prefill_f16 = attn_prefill_f16_neon;
    k->f32_to_f16 = f32_to_f16_neon;
}
