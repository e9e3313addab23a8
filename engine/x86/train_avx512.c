/* train_avx512.c — the training kernels with AVX-512F: the packed gemm of
 * train_gemm_tmpl.h with an 8 × 32 register tile (16 accumulators of 32 zmm;
 * 8 rows make the packing's transposes whole), and the shared template's
 * backward of layernorm, GELU and softmax, AdamW. */
#include <immintrin.h>

#include "engine/x86/x86.h"
#include "engine/x86/vec_avx512.h"

#define MR 8
#include "engine/x86/train_gemm_tmpl.h"
#include "engine/simd/train_tmpl.h"

void tg_kernels_init_train_avx512(tg_kernels *k) {
    init_train_tmpl_avx512(k);
    k->gemm = gemm_avx512;
}
