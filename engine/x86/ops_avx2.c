/* ops_avx2.c — softmax, layernorm, GELU, add and the attention core for
 * AVX2 + FMA: the shared templates instantiated with the AVX2 vocabulary. */
#include "engine/x86/x86.h"
#include "engine/x86/vec_avx2.h"
#include "engine/simd/ops_tmpl.h"
#include "engine/simd/attn_tmpl.h"
#include "engine/simd/llama_tmpl.h"

void tg_kernels_init_ops_avx2(tg_kernels *k) {
    k->softmax = softmax_avx2;
    k->layernorm = layernorm_avx2;
    k->gelu = gelu_avx2;
    k->add = add_avx2;
    k->attn_scores = attn_scores_avx2;
    k->attn_mix = attn_mix_avx2;
    k->attn_decode = attn_decode_avx2;
    k->attn_prefill = attn_prefill_avx2;
    k->rmsnorm = rmsnorm_avx2;
    k->silu_mul = silu_mul_avx2;
    k->rope = rope_avx2;
    k->attn_decode_gqa = attn_decode_gqa_avx2;
    k->attn_decode_gqa_f16 = attn_decode_gqa_f16_avx2;
    k->attn_decode_stream = attn_decode_stream_avx2;
    k->attn_decode_gqa_stream = attn_decode_gqa_stream_avx2;
    k->attn_decode_gqa_f16_stream = attn_decode_gqa_f16_stream_avx2;
    k->attn_prefill_f16 = attn_prefill_f16_avx2;
    k->f32_to_f16 = f32_to_f16_avx2;
}
