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
/* Y = X · Wᵀ + b for T > 1 with W in IEEE half (h16) or bfloat16, rows ldw
 * bytes apart, widened to f32 as it is loaded (matmul_tmpl.h): the bits of
 * the f32 matmul on the widened W. ws: tg_matmul_w_scratch's bytes. */
void tg_matmul_half_avx2(int h16, float *y, const float *x, const void *w, size_t ldw,
                         const float *b, int T, int in, int out, int o0, int o1, void *ws);
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
void tg_matmul_half_avx512(int h16, float *y, const float *x, const void *w, size_t ldw,
                           const float *b, int T, int in, int out, int o0, int o1, void *ws);
void tg_kernels_init_ops_avx512(tg_kernels *k);
void tg_kernels_init_train_avx512(tg_kernels *k);
/* The Q8_0/Q4_0 prefill GEMM on zmm without VNNI (vpmaddubsw + vpmaddwd:
 * quant_avx512bw.c), for an AVX-512 CPU with neither AVX512-VNNI nor
 * AVX-VNNI; its decode is the AVX2 table's, tg_matmul_q_decode_avx2
 * (quant_avx2.c: matmul_w with T == 1, q4 = 0 Q8_0, 1 Q4_0). */
void tg_kernels_init_quant_avx512bw(tg_kernels *k);
void tg_matmul_q_decode_avx2(int q4, float *y, const void *x, const void *w, size_t ldw,
                             const float *b, int in, int out, int o0, int o1);
/* The Q8_0 (q4 = 0) / Q4_0 decode GEMVs of the AVX512-VNNI table
 * (quant_avx512.c): matmul_w with T == 1. */
void tg_matmul_q_decode_avx512vnni(int q4, float *y, const void *x, const void *w, size_t ldw,
                                   const float *b, int in, int out, int o0, int o1);
/* The AMX prefill GEMMs: BF16 on tdpbf16ps, Q8_0/Q4_0 on tdpbssd (amx.c;
 * amx_none.c's no-ops where the compiler has no -mamx-* flags). */
void tg_kernels_init_amx_bf16(tg_kernels *k);
void tg_kernels_init_amx_int8(tg_kernels *k);
/* Software prefetch for the long-row integer decode GEMVs (quant_avx512.c,
 * quant_tmpl.h, qgemv_ymm_tmpl.h): each row asks
 * for the bytes ROW_PREFETCH ahead of it (one prefetcht0 per 64 bytes).
 * The Q4_0 kernel spends ~21 vector ops per 144 bytes, so its out-of-order
 * window holds only a few KB of the stream in flight and the hardware
 * prefetchers alone stream a GPT-2-small step from DRAM at ~0.6 of the
 * probe's rate. Zen 5 (family 26 model 2), idle, `bench_kernels --kernel
 * gemv_dram --shape "q4_0 gpt2" --isa avx512`, 6 interleaved rounds,
 * medians vs the probe of the same run: 0.60x without, 0.76x at 4 KB
 * (3.40 -> 2.92 ms); 8 KB about the same, 16 KB less. Q8_0: 4.97 -> 4.44
 * ms (5 rounds). The ymm GEMVs, `--isa avx2`, 4 rounds: with AVX-VNNI
 * Q4_0 0.56 -> 0.80x, Q8_0 0.78 -> 0.80x; plain AVX2 (TINYGPT_CPU_MASK=all)
 * Q4_0 0.52 -> 0.68x, Q8_0 0.56 -> 0.84x. The F16/BF16 GEMV (matmul_avx512.c) gained nothing from
 * it (0.87 / 0.89x both ways), nor did the cheap f32 stream GEMV. A
 * prefetch never faults, so asking past the matrix's end is harmless.
 * (__builtin_prefetch: GCC 12 dropped _mm_prefetch from this loop.) */
#define ROW_PREFETCH 4096
static inline void tg_prefetch_row(const char *row, size_t bytes) {
    for (size_t c = 0; c < bytes; c += 64) __builtin_prefetch(row + ROW_PREFETCH + c, 0, 3);
}

#endif
