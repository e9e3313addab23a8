/* tr8_avx.h — the 8 × 8 float transpose the x86 GEMMs pack with (AVX, so
 * both the AVX2 and the AVX-512 builds use it). Include only from files
 * built with -mavx2. */
#ifndef TINYGPT_TR8_AVX_H
#define TINYGPT_TR8_AVX_H

#include <immintrin.h>
#include <stddef.h>

/* dst[j·ld + i] = lane j of a[i] for i, j < 8: eight vectors, transposed */
static inline __attribute__((always_inline)) void tg_tr8_avx_regs(float *dst, size_t ld,
                                                                 __m256 a0, __m256 a1, __m256 a2,
                                                                 __m256 a3, __m256 a4, __m256 a5,
                                                                 __m256 a6, __m256 a7) {
    __m256 t0 = _mm256_unpacklo_ps(a0, a1), t1 = _mm256_unpackhi_ps(a0, a1);
    __m256 t2 = _mm256_unpacklo_ps(a2, a3), t3 = _mm256_unpackhi_ps(a2, a3);
    __m256 t4 = _mm256_unpacklo_ps(a4, a5), t5 = _mm256_unpackhi_ps(a4, a5);
    __m256 t6 = _mm256_unpacklo_ps(a6, a7), t7 = _mm256_unpackhi_ps(a6, a7);
    __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
    __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    _mm256_storeu_ps(dst + 0 * ld, _mm256_permute2f128_ps(u0, u4, 0x20));
    _mm256_storeu_ps(dst + 1 * ld, _mm256_permute2f128_ps(u1, u5, 0x20));
    _mm256_storeu_ps(dst + 2 * ld, _mm256_permute2f128_ps(u2, u6, 0x20));
    _mm256_storeu_ps(dst + 3 * ld, _mm256_permute2f128_ps(u3, u7, 0x20));
    _mm256_storeu_ps(dst + 4 * ld, _mm256_permute2f128_ps(u0, u4, 0x31));
    _mm256_storeu_ps(dst + 5 * ld, _mm256_permute2f128_ps(u1, u5, 0x31));
    _mm256_storeu_ps(dst + 6 * ld, _mm256_permute2f128_ps(u2, u6, 0x31));
    _mm256_storeu_ps(dst + 7 * ld, _mm256_permute2f128_ps(u3, u7, 0x31));
}

/* dst[j·ld + i] = r[i][k + j] for i, j < 8: eight rows of 8 floats, transposed */
static inline __attribute__((always_inline)) void tg_tr8_avx(float *dst, size_t ld,
                                                            const float *const r[8],
                                                            ptrdiff_t k) {
    tg_tr8_avx_regs(dst, ld, _mm256_loadu_ps(r[0] + k), _mm256_loadu_ps(r[1] + k),
                    _mm256_loadu_ps(r[2] + k), _mm256_loadu_ps(r[3] + k), _mm256_loadu_ps(r[4] + k),
                    _mm256_loadu_ps(r[5] + k), _mm256_loadu_ps(r[6] + k), _mm256_loadu_ps(r[7] + k));
}

#endif
