/* quant_avxvnni.c — the typed-weight kernels with AVX-VNNI (vpdpbusd on
 * ymm, VEX-encoded: Intel Alder Lake and later, AMD Zen 4/5), for the AVX2
 * table where the CPU has it: the decode GEMV and the prefill GEMM of
 * Q8_0/Q4_0 (quant_tmpl.h, qgemm_tmpl.h; Q4_0's long rows on
 * qgemv_ymm_tmpl.h's two-blocks-per-ymm GEMV). */
#include <immintrin.h>

#include "engine/x86/x86.h"

#define DOT32(acc, u, s) (acc) = _mm256_dpbusd_avx_epi32((acc), (u), (s))
#define MATMUL_HALF tg_matmul_half_avx2
#define SUFFIX avxvnni

/* the int8 GEMM (qvocab_ymm.h): 3 tokens × 16 rows on vpdpbusd */
#define QMR 3
#define qdpbusd(acc, u, s) _mm256_dpbusd_avx_epi32((acc), (u), (s))
/* the long-row Q4_0 decode GEMV of qgemv_ymm_tmpl.h (two blocks per ymm,
 * two rows per pass), its two nibble dot products as two vpdpbusd into the
 * int32 lanes (no int16 step to fit) */
#define DOT_NIB2(acc, u1, s1, u2, s2) \
    (acc) = _mm256_dpbusd_avx_epi32(_mm256_dpbusd_avx_epi32((acc), (u1), (s1)), (u2), (s2))
#include "engine/x86/qvocab_ymm.h"

#include "engine/x86/quant_tmpl.h"
#include "engine/x86/qgemv_ymm_tmpl.h"
