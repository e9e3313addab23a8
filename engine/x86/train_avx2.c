/* train_avx2.c — the training kernels with AVX2 + FMA: the packed gemm of
 * train_gemm_tmpl.h with a 6 × 16 register tile (12 accumulators of 16 ymm),
 * and the shared template's backward of layernorm, GELU and softmax, AdamW. */
#include <immintrin.h>

#include "engine/x86/x86.h"
#include "engine/x86/vec_avx2.h"

#define MR 6
#include "engine/x86/train_gemm_tmpl.h"
#include "engine/simd/train_tmpl.h"

void tg_kernels_init_train_avx2(tg_kernels *k) {
    init_train_tmpl_avx2(k);
    k->gemm = gemm_avx2;
}
