/* train_avx512.c — the training kernels with AVX-512F: the shared
 * template's backward of layernorm, GELU and softmax and AdamW (the gemm is
 * AVX2's until this file has its own). */
#include "engine/x86/x86.h"
#include "engine/x86/vec_avx512.h"
#include "engine/simd/train_tmpl.h"

void tg_kernels_init_train_avx512(tg_kernels *k) { init_train_tmpl_avx512(k); }
