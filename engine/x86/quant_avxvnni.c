/* quant_avxvnni.c — the typed-weight kernels with AVX-VNNI (vpdpbusd on
 * ymm, VEX-encoded: Intel Alder Lake and later, AMD Zen 5), for the AVX2
 * table where the CPU has it (quant_tmpl.h). */
#include <immintrin.h>

#include "engine/x86/x86.h"

#define DOT32(acc, u, s) (acc) = _mm256_dpbusd_avx_epi32((acc), (u), (s))
#define MATMUL_F32 tg_matmul_avx2
#define SUFFIX avxvnni
#include "engine/x86/quant_tmpl.h"
