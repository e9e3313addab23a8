/* half_avx.h — IEEE half (F16C) and bfloat16 weights widened to f32, exactly
 * (every half and every bfloat16 is an f32). Include only from files built
 * with -mavx2 -mf16c. */
#ifndef TINYGPT_HALF_AVX_H
#define TINYGPT_HALF_AVX_H

#include <immintrin.h>
#include <stdint.h>

#include "engine/engine.h"

/* 8 weights of a half (h16) or bfloat16 row as f32 (bfloat16: the upper 16
 * bits of an f32) */
static inline __attribute__((always_inline)) __m256 tg_half8_ps(int h16, const uint16_t *p) {
    __m128i h = _mm_loadu_si128((const __m128i *)p);
    if (h16) return _mm256_cvtph_ps(h);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

/* one weight of a half (h16) or bfloat16 row as f32 */
static inline __attribute__((always_inline)) float tg_half_ps1(int h16, uint16_t v) {
    return h16 ? _cvtsh_ss(v) : tg_bf16_to_f32(v);
}

#endif
