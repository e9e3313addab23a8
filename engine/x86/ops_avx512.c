/* ops_avx512.c — softmax, layernorm, GELU, add and the attention core for
 * AVX-512F: the shared templates instantiated with the AVX-512 vocabulary. */
#include "engine/x86/x86.h"
#include "engine/x86/vec_avx512.h"
#include "engine/simd/ops_tmpl.h"
#include "engine/simd/attn_tmpl.h"
#include "engine/simd/llama_tmpl.h"

void tg_kernels_init_ops_avx512(tg_kernels *k) {
    k->softmax = softmax_avx512;
    k->layernorm = layernorm_avx512;
    k->gelu = gelu_avx512;
    k->add = add_avx512;
    k->attn_scores = attn_scores_avx512;
    k->attn_mix = attn_mix_avx512;
    k->attn_decode = attn_decode_avx512;
    k->attn_prefill = attn_prefill_avx512;
    k->rmsnorm = rmsnorm_avx512;
    k->silu_mul = silu_mul_avx512;
    k->rope = rope_avx512;
    k->attn_decode_gqa = attn_decode_gqa_avx512;
    k->attn_decode_gqa_f16 = attn_decode_gqa_f16_avx512;
    k->attn_decode_stream = attn_decode_stream_avx512;
    k->attn_decode_gqa_stream = attn_decode_gqa_stream_avx512;
    k->attn_decode_gqa_f16_stream = attn_decode_gqa_f16_stream_avx512;
    k->attn_prefill_f16 = attn_prefill_f16_avx512;
    k->f32_to_f16 = f32_to_f16_avx512;
}
