/* quant_avx2.c — the typed-weight kernels with AVX2 + FMA + F16C: integer
 * block dots on vpmaddubsw + vpmaddwd (quant_tmpl.h). */
#include <immintrin.h>

#include "engine/x86/x86.h"

/* acc += Σ of 4 adjacent u8·s8 products per int32 lane (pairs first, in
 * int16: |w|·|x| <= 128·127, two of them fit) */
#define DOT32(acc, u, s) \
    (acc) = _mm256_add_epi32((acc), _mm256_madd_epi16(_mm256_maddubs_epi16((u), (s)), _mm256_set1_epi16(1)))
#define MATMUL_F32 tg_matmul_avx2
#define SUFFIX avx2
#include "engine/x86/quant_tmpl.h"
