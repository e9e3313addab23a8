/* amx_bf16_avx512.c — vcvtne2ps2bf16 itself (built with -mavx512bf16 in its
 * own library, tests/engine/meson.build), for test_amx to check the AMX
 * kernels' rounding of X against the instruction the AVX512-BF16 GEMM
 * uses, where the CPU has it. */
#include <immintrin.h>
#include <stdint.h>

void tg_test_cvtne2ps2bf16(uint16_t *y, const float *x, int n);
/* y[N] = x[N] as bfloat16 by vcvtne2ps2bf16 (N a multiple of 32) */
void tg_test_cvtne2ps2bf16(uint16_t *y, const float *x, int n) {
    for (int i = 0; i + 32 <= n; i += 32) {
        __m512bh v = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(x + i + 16), _mm512_loadu_ps(x + i));
        _mm512_storeu_si512(y + i, (__m512i)v);
    }
}
