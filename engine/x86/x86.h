/* x86.h — the per-ISA upgrade steps on x86-64 (each in files built with that
 * ISA's flags only). */
#ifndef TINYGPT_X86_H
#define TINYGPT_X86_H
#include "engine/engine.h"
void tg_kernels_init_matmul_avx2(tg_kernels *k);
/* The AVX2 matmul itself (tg_kernels.matmul's contract), for the AVX-512
 * table's GEMV. */
void tg_matmul_avx2(float *y, const float *x, const float *w, const float *b, int T, int in,
                    int out, int o0, int o1);
void tg_kernels_init_ops_avx2(tg_kernels *k);
void tg_kernels_init_train_avx2(tg_kernels *k);
void tg_kernels_init_matmul_avx512(tg_kernels *k);
/* The AVX-512 matmul (tg_kernels.matmul's contract). */
void tg_matmul_avx512(float *y, const float *x, const float *w, const float *b, int T, int in,
                      int out, int o0, int o1);
/* The typed-weight kernels (quant_*.c): AVX2, AVX2 + AVX-VNNI, AVX-512 +
 * AVX512-VNNI. */
void tg_kernels_init_quant_avx2(tg_kernels *k);
void tg_kernels_init_quant_avxvnni(tg_kernels *k);
void tg_kernels_init_quant_avx512vnni(tg_kernels *k);
/* BF16 on AVX512-BF16 (vdpbf16ps): the prefill GEMM (bf16_avx512.c). */
void tg_kernels_init_bf16_avx512bf16(tg_kernels *k);
/* The BF16 decode GEMV (quant_avx2.c; T == 1 of tg_kernels.matmul_w with
 * f32 x): y[o0..o1) = W · x + b. */
void tg_gemv_bf16_avx2(float *y, const float *x, const void *w, size_t ldw, const float *b, int in,
                       int o0, int o1);
/* The F16 (h16) / BF16 decode GEMV on zmm (matmul_avx512.c; AVX-512F/BW):
 * y[o0..o1) = W · x + b, x f32, W's rows ldw bytes apart. */
void tg_gemv_half_avx512(int h16, float *y, const float *x, const void *w, size_t ldw,
                         const float *b, int in, int o0, int o1);
void tg_kernels_init_ops_avx512(tg_kernels *k);
void tg_kernels_init_train_avx512(tg_kernels *k);
/* The Q8_0 (q4 = 0) / Q4_0 decode GEMVs of the AVX512-VNNI table
 * (quant_avx512.c): matmul_w with T == 1. */
void tg_matmul_q_decode_avx512vnni(int q4, float *y, const void *x, const void *w, size_t ldw,
                                   const float *b, int in, int out, int o0, int o1);
/* The AMX prefill GEMMs: BF16 on tdpbf16ps, Q8_0/Q4_0 on tdpbssd (amx.c;
 * amx_none.c's no-ops where the compiler has no -mamx-* flags). */
void tg_kernels_init_amx_bf16(tg_kernels *k);
void tg_kernels_init_amx_int8(tg_kernels *k);
#endif
