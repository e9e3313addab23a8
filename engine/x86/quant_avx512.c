/* quant_avx512.c — the typed-weight kernels for the AVX-512 table with
 * AVX512-VNNI (vpdpbusd, EVEX on ymm: the decode GEMV streams 256-bit
 * loads, as the f32 one does) and the AVX-512 f32 GEMM behind T > 1
 * (quant_tmpl.h). */
#include <immintrin.h>

#include "engine/x86/x86.h"

#define DOT32(acc, u, s) (acc) = _mm256_dpbusd_epi32((acc), (u), (s))
#define MATMUL_F32 tg_matmul_avx512
#define SUFFIX avx512vnni
#include "engine/x86/quant_tmpl.h"
