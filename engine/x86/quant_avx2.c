/* quant_avx2.c — the typed-weight kernels with AVX2 + FMA + F16C: integer
 * block dots on vpmaddubsw + vpmaddwd (quant_tmpl.h), and the long-row
 * decode GEMVs of qgemv_ymm_tmpl.h. */
#include <immintrin.h>

#include "engine/x86/x86.h"

/* acc += Σ of 4 adjacent u8·s8 products per int32 lane (pairs first, in
 * int16: |w|·|x| <= 128·127, two of them fit) */
#define DOT32(acc, u, s) \
    (acc) = _mm256_add_epi32((acc), _mm256_madd_epi16(_mm256_maddubs_epi16((u), (s)), _mm256_set1_epi16(1)))
/* acc += Σ of 4 adjacent u1·s1 and 4 u2·s2 products per int32 lane, u1 and
 * u2 at most 15 (nibbles): the two vpmaddubsw added in int16 (each lane at
 * most 2·15·128 in magnitude, the sum 7680) before one vpmaddwd */
#define DOT_NIB2(acc, u1, s1, u2, s2)                                                        \
    (acc) = _mm256_add_epi32((acc), _mm256_madd_epi16(_mm256_add_epi16(_mm256_maddubs_epi16((u1), (s1)), \
                                                                       _mm256_maddubs_epi16((u2), (s2))), \
                                                      _mm256_set1_epi16(1)))
#define MATMUL_HALF tg_matmul_half_avx2
#define SUFFIX avx2

/* the int8 GEMM (qgemm_tmpl.h): Q4_0's nibbles (u <= 15) times x
 * (|x| <= 127) fit vpmaddubsw's int16 pairs (15·127·2), and two groups'
 * pairs added in int16 still do; Q8_0's w + 128 would not, so its W stays
 * signed and each product is |w| · sign(w)·x (128·127·2 fits).
 * ymm, QMR tokens × 16 rows. */
#define QGEMM_Q8_SIGNED 1
#define qdpbusd_s(acc, w, x)                                                                 \
    _mm256_add_epi32((acc), _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_sign_epi8((w), (w)), \
                                                                   _mm256_sign_epi8((x), (w))), \
                                              _mm256_set1_epi16(1)))
#define qdpbusd(acc, u, s) \
    _mm256_add_epi32((acc), _mm256_madd_epi16(_mm256_maddubs_epi16((u), (s)), _mm256_set1_epi16(1)))
/* two groups: each lane's two vpmaddubsw pairs (<= 2·15·127 each) added in
 * int16 (<= 7620) before one vpmaddwd */
#define qdpbusd2(acc, u1, s1, u2, s2)                                                     \
    _mm256_add_epi32((acc), _mm256_madd_epi16(_mm256_add_epi16(_mm256_maddubs_epi16((u1), (s1)), \
                                                               _mm256_maddubs_epi16((u2), (s2))), \
                                              _mm256_set1_epi16(1)))
#include "engine/x86/qvocab_ymm.h"

#ifndef Q8Y_OFF
static void gemv_q8_ymm(float *y, const tg_block_q8_0 *xb, const char *w, size_t ldw,
                        const float *b, int nb, int o0, int o1);
#define GEMV_Q8_WIDE(y, x, w, ldw, b, nb, o0, o1) \
    ((nb) % 8 == 0 && (nb) > 16 ? (gemv_q8_ymm((y), (x), (w), (ldw), (b), (nb), (o0), (o1)), 1) : 0)
#endif

#include "engine/x86/quant_tmpl.h"
#include "engine/x86/qgemv_ymm_tmpl.h"

#ifndef Q8Y_OFF
/* gemv_q with GPT-2's row lengths as constants (the block loop unrolled) */
static void gemv_q8_ymm(float *y, const tg_block_q8_0 *xb, const char *w, size_t ldw,
                        const float *b, int nb, int o0, int o1) {
    switch (nb) {
    case 24: gemv_q(0, y, xb, w, ldw, b, 24, o0, o1); break;
    case 96: gemv_q(0, y, xb, w, ldw, b, 96, o0, o1); break;
    default: gemv_q(0, y, xb, w, ldw, b, nb, o0, o1); break;
    }
}
#endif

/* The decode GEMVs (T == 1) of Q8_0 (q4 = 0) and Q4_0 (q4 = 1) on this
 * table, for the AVX-512 table without VNNI (quant_avx512bw.c, x86.h). */
void tg_matmul_q_decode_avx2(int q4, float *y, const void *x, const void *w, size_t ldw,
                             const float *b, int in, int out, int o0, int o1) {
    (q4 ? matmul_q4_0 : matmul_q8_0)(y, x, w, ldw, b, 1, in, out, o0, o1, NULL);
}
