/* quant_tmpl.h — the x86 typed-weight kernels written once (256-bit vectors),
 * included by quant_avx2.c, quant_avxvnni.c and quant_avx512.c, each built
 * with its own flags, after defining:
 *
 *   DOT32(acc, u, s)   acc (8 × int32) += Σ of 4 adjacent u8·s8 products
 *                      per lane: vpmaddubsw + vpmaddwd (AVX2), vpdpbusd
 *                      (AVX-VNNI / AVX512-VNNI on ymm)
 *   MATMUL_HALF        the ISA's f32 matmul for F16/BF16 weights, T > 1
 *                      (tg_matmul_half_*, matmul_tmpl.h); left undefined,
 *                      the table keeps the F16/BF16 kernels it had
 *   SUFFIX             the name suffix of the init function
 *
 * Y[T,OUT] = X · W[OUT,IN]ᵀ + b, columns o0..o1-1 (tg_kernels.matmul_w):
 *
 *   T == 1, Q8_0/Q4_0  the decode GEMV on integer dot products: per block
 *          the signed products are made unsigned × signed (|w| · sign(w)x,
 *          exact), summed in int32, converted and scaled by d_w·d_x into
 *          one of two f32 accumulators: one weight row at a time, a single
 *          sequential stream.
 *   T == 1, F16/BF16   the weights widened to f32 in registers (F16C
 *          vcvtph2ps; bfloat16 by a 16-bit shift), four FMA chains.
 *   T > 1, Q8_0/Q4_0 (QL defined: every file) the int8 GEMM (qgemm_tmpl.h)
 *          on vpdpbusd with VNNI (quant_avx512.c, quant_avxvnni.c); on plain
 *          AVX2 (quant_avx2.c) on vpmaddubsw + vpmaddwd: Q4_0 two groups
 *          summed in int16, Q8_0 with the sign trick per product
 *          (QGEMM_Q8_SIGNED).
 *   T > 1, F16/BF16  the ISA's f32 matmul with W widened to f32 where it
 *          is loaded (into the GEMM's packed panels, or in few_tokens'
 *          vector loads): the f32 GEMM's speed on half of W's bytes (no
 *          instruction multiplies halves faster than f32 FMAs here;
 *          AVX512-BF16 has its own GEMM, bf16_avx512.c).
 *
 * Results do not depend on o0/o1: each row is computed by the same
 * operations wherever it falls. */
#include <stdlib.h>
#include <string.h>

#include "engine/x86/half_avx.h"
#include "engine/x86/x86.h"

#ifndef QL
#error "quant_tmpl.h: define the int8 GEMM's vocabulary (QL, QMR, qdpbusd ...) first"
#endif

#define ALWAYS_INLINE static inline __attribute__((always_inline))

static inline float hsum8(__m256 v) {
    __m128 b = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    b = _mm_add_ps(b, _mm_movehl_ps(b, b));
    b = _mm_add_ss(b, _mm_movehdup_ps(b));
    return _mm_cvtss_f32(b);
}

/* IEEE half -> f32 of one scale (F16C) */
static inline float h2f(uint16_t h) { return _cvtsh_ss(h); }

/* 32 int8 of a Q4_0 block: elements 0..15 are the low nibbles, 16..31 the
 * high ones, minus 8 */
ALWAYS_INLINE __m256i q4_unpack(const uint8_t *qs) {
    __m128i b = _mm_loadu_si128((const __m128i *)qs);
    __m128i lo = _mm_and_si128(b, _mm_set1_epi8(15));
    __m128i hi = _mm_and_si128(_mm_srli_epi16(b, 4), _mm_set1_epi8(15));
    __m256i q = _mm256_set_m128i(hi, lo);
    return _mm256_sub_epi8(q, _mm256_set1_epi8(8));
}

/* 8 int32 partial sums of Σ_j w_j·x_j over one block (w, x int8, exact) */
ALWAYS_INLINE __m256i block_dot(__m256i w, __m256i x) {
    __m256i u = _mm256_sign_epi8(w, w); /* |w| (w = -128 gives 128 as u8) */
    __m256i s = _mm256_sign_epi8(x, w); /* x·sign(w) */
    __m256i acc = _mm256_setzero_si256();
    DOT32(acc, u, s);
    return acc;
}

/* Q8_0 weights as unsigned bytes w + 128 in the GEMV only where the dot
 * products do not saturate: vpdpbusd sums u8·s8 in int32, vpmaddubsw pairs
 * in int16 (255·127·2 does not fit; Q4_0's 15·127·2 does). With VNNI, Q4_0
 * keeps its high nibbles in place (q & 0xF0 = 16·q, 240·127·4 fits int32;
 * pairs of 240·128 would not fit vpmaddubsw's int16): lanes 4..7 of a
 * block then hold 16× their sums, exactly, undone once per row. */
#ifndef QGEMM_Q8_SIGNED
#define GEMV_Q8_UNSIGNED 1
#define GEMV_Q4_HI16 1
#else
#define GEMV_Q8_UNSIGNED 0
#define GEMV_Q4_HI16 0
#endif

/* the 32 unsigned nibbles q of a Q4_0 block (element j: q - 8), low ones in
 * the low 128 bits; with GEMV_Q4_HI16 the high ones as 16·q */
ALWAYS_INLINE __m256i q4_gemv_nibbles(const uint8_t *qs) {
    __m256i b = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)qs));
    if (GEMV_Q4_HI16)
        return _mm256_and_si256(b, _mm256_setr_epi64x(0x0f0f0f0f0f0f0f0fLL, 0x0f0f0f0f0f0f0f0fLL,
                                                      (long long)0xf0f0f0f0f0f0f0f0ULL,
                                                      (long long)0xf0f0f0f0f0f0f0f0ULL));
    b = _mm256_srlv_epi32(b, _mm256_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4));
    return _mm256_and_si256(b, _mm256_set1_epi8(15));
}

/* the f16 scales of 8 consecutive blocks (stride bs bytes) as 8 words: the
 * 16 bytes at j·(bs - 2) hold block j's scale as their word j, so 8 loads
 * and 7 word blends (no gather: microcoded and slow on Zen 4) */
ALWAYS_INLINE __m128i scales8_f16(const char *p, int bs) {
    const size_t st = (size_t)bs - 2;
#define SC8_LOAD(j) _mm_loadu_si128((const __m128i *)(p + (j) * st))
    __m128i h = SC8_LOAD(0);
    h = _mm_blend_epi16(h, SC8_LOAD(1), 0x02);
    h = _mm_blend_epi16(h, SC8_LOAD(2), 0x04);
    h = _mm_blend_epi16(h, SC8_LOAD(3), 0x08);
    h = _mm_blend_epi16(h, SC8_LOAD(4), 0x10);
    h = _mm_blend_epi16(h, SC8_LOAD(5), 0x20);
    h = _mm_blend_epi16(h, SC8_LOAD(6), 0x40);
    h = _mm_blend_epi16(h, SC8_LOAD(7), 0x80);
#undef SC8_LOAD
    return h;
}

/* sc[k] = d_w[k]·d_x[k] for the nb blocks of one weight row (stride bs) */
ALWAYS_INLINE void row_scales(float *sc, const char *wo, int bs, const float *xd, int nb) {
    int k = 0;
    for (; k + 8 <= nb; k += 8) {
        __m128i h = scales8_f16(wo + (size_t)k * bs, bs);
        _mm256_storeu_ps(sc + k, _mm256_mul_ps(_mm256_cvtph_ps(h), _mm256_loadu_ps(xd + k)));
    }
    for (; k < nb; k++) {
        uint16_t d;
        memcpy(&d, wo + (size_t)k * bs, 2);
        sc[k] = h2f(d) * xd[k];
    }
}

/* acc (8 × int32) = the dot products of block k of a weight row (at wb)
 * with x's block k, per lane (see gemv_q) */
ALWAYS_INLINE __m256i gemv_block(int q4, int unsig, const char *wb, __m256i xq, __m256i xc) {
    __m256i acc = xc;
    if (q4) {
        DOT32(acc, q4_gemv_nibbles((const uint8_t *)wb + 2), xq);
    } else if (unsig) {
        __m256i wq = _mm256_loadu_si256((const __m256i *)(wb + 2));
        DOT32(acc, _mm256_xor_si256(wq, _mm256_set1_epi8((char)0x80)), xq);
    } else {
        acc = block_dot(_mm256_loadu_si256((const __m256i *)(wb + 2)), xq);
    }
    return acc;
}

/* y[o0..o1) = W · x for one token, W in Q8_0 (q4 = 0) or Q4_0 (q4 = 1).
 * Q4_0 (and Q8_0 with VNNI) multiply the weights as unsigned bytes (the
 * nibble q = w + 8; w ^ 0x80 = w + 128) by x, each int32 lane of a block
 * starting at its own share of the correction, -8·Σx (-128·Σx) over the 4
 * bytes that lane sums: no sign trick per block. Per lane, not all in lane
 * 0: the lanes then hold exactly the signed partial sums Σ w·x of the sign
 * trick, small numbers, where one lane of -128·Σx against seven of
 * (w+128)·x cancels in f32 after the conversion (that lost ~1e-5 relative
 * and failed torch_llama's f32-tolerance share for q8_0). x's bytes (copied
 * to aligned memory: its 34-byte blocks straddle cache lines), the
 * corrections and x's scales are prepared once per call for all rows; a
 * row's block scales d_w·d_x eight at a time before its dot products. */
#define GEMV_STACK_BLOCKS 256
ALWAYS_INLINE void gemv_q_tile(int q4, float *y, const tg_block_q8_0 *xb, const char *w, size_t ldw,
                               const float *b, int nb, int o0, int o1, int acc) {
    __m256i xq[GEMV_STACK_BLOCKS], xc[GEMV_STACK_BLOCKS];
    _Alignas(32) float xd[GEMV_STACK_BLOCKS];
    float sc[GEMV_STACK_BLOCKS];
    int unsig = q4 || GEMV_Q8_UNSIGNED, hi16 = q4 && GEMV_Q4_HI16;
    const int bs = q4 ? (int)sizeof(tg_block_q4_0) : (int)sizeof(tg_block_q8_0);
    for (int k = 0; k < nb; k++) {
        xq[k] = _mm256_loadu_si256((const __m256i *)xb[k].qs);
        xd[k] = h2f(xb[k].d);
    }
    if (unsig) {
        /* per lane c = -(8, 16·8 or 128)·Σx over its 4 bytes: the same
         * DOT32 of a constant (8·127·2 fits vpmaddubsw's int16; 128 is only
         * used with VNNI's int32 sums) */
        const __m256i u = q4 ? (hi16 ? _mm256_setr_epi64x(0x0808080808080808LL, 0x0808080808080808LL,
                                                          (long long)0x8080808080808080ULL,
                                                          (long long)0x8080808080808080ULL)
                                     : _mm256_set1_epi8(8))
                             : _mm256_set1_epi8((char)0x80);
        for (int k = 0; k < nb; k++) {
            __m256i c = _mm256_setzero_si256();
            DOT32(c, u, xq[k]);
            xc[k] = _mm256_sub_epi32(_mm256_setzero_si256(), c);
        }
    }
    /* lanes 4..7 of the accumulators carry 16× where hi16 */
    const __m256 lane_w = _mm256_setr_ps(1, 1, 1, 1, hi16 ? 0.0625f : 1, hi16 ? 0.0625f : 1,
                                         hi16 ? 0.0625f : 1, hi16 ? 0.0625f : 1);
    for (int o = o0; o < o1; o++) {
        const char *wo = w + (size_t)o * ldw;
        __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        int k = 0;
        tg_prefetch_row(wo, (size_t)nb * bs);
#define GEMV_STEP(acc, kk, d)                                                                 \
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(gemv_block(q4, unsig, wo + (size_t)(kk) * bs,   \
                                                        xq[kk], unsig ? xc[kk] : xq[kk])), \
                          (d), acc)
#ifdef GEMV_SCALES8
        /* eight blocks' scales in a register, each block's broadcast by a
         * lane permute (a load per block was the loop's limit) */
        for (; k + 8 <= nb; k += 8) {
            __m256 s8 = _mm256_mul_ps(_mm256_cvtph_ps(GEMV_SCALES8(q4, wo + (size_t)k * bs)),
                                      _mm256_load_ps(xd + k));
#define GEMV_LANE(j) _mm256_permutexvar_ps(_mm256_set1_epi32(j), s8)
            GEMV_STEP(a0, k, GEMV_LANE(0));
            GEMV_STEP(a1, k + 1, GEMV_LANE(1));
            GEMV_STEP(a2, k + 2, GEMV_LANE(2));
            GEMV_STEP(a3, k + 3, GEMV_LANE(3));
            GEMV_STEP(a0, k + 4, GEMV_LANE(4));
            GEMV_STEP(a1, k + 5, GEMV_LANE(5));
            GEMV_STEP(a2, k + 6, GEMV_LANE(6));
            GEMV_STEP(a3, k + 7, GEMV_LANE(7));
#undef GEMV_LANE
        }
#endif
#ifdef GEMV_SCALES4
        for (; k + 4 <= nb; k += 4) {
            __m256 s4 = _mm256_castps128_ps256(
                _mm_mul_ps(_mm_cvtph_ps(GEMV_SCALES4(q4, wo + (size_t)k * bs)), _mm_load_ps(xd + k)));
#define GEMV_LANE(j) _mm256_permutexvar_ps(_mm256_set1_epi32(j), s4)
            GEMV_STEP(a0, k, GEMV_LANE(0));
            GEMV_STEP(a1, k + 1, GEMV_LANE(1));
            GEMV_STEP(a2, k + 2, GEMV_LANE(2));
            GEMV_STEP(a3, k + 3, GEMV_LANE(3));
#undef GEMV_LANE
        }
#endif
        row_scales(sc + k, wo + (size_t)k * bs, bs, xd + k, nb - k);
        for (; k + 4 <= nb; k += 4) {
            GEMV_STEP(a0, k, _mm256_broadcast_ss(sc + k));
            GEMV_STEP(a1, k + 1, _mm256_broadcast_ss(sc + k + 1));
            GEMV_STEP(a2, k + 2, _mm256_broadcast_ss(sc + k + 2));
            GEMV_STEP(a3, k + 3, _mm256_broadcast_ss(sc + k + 3));
        }
        for (; k < nb; k++) GEMV_STEP(a0, k, _mm256_broadcast_ss(sc + k));
#undef GEMV_STEP
        __m256 a01 = _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3));
        float v = hsum8(_mm256_mul_ps(a01, lane_w));
        y[o] = acc ? y[o] + v : b ? v + b[o] : v;
    }
}

/* x's prepared form (72 bytes per 32 inputs) lives on the stack for at
 * most GEMV_STACK_BLOCKS blocks; longer rows go in tiles of that many
 * blocks, each tile's partial dot products added to y in tile order: the
 * same operations for a row wherever it falls (no heap: a kernel cannot
 * fail) */
ALWAYS_INLINE void gemv_q(int q4, float *y, const tg_block_q8_0 *xb, const char *w, size_t ldw,
                          const float *b, int nb, int o0, int o1) {
    const size_t bs = q4 ? sizeof(tg_block_q4_0) : sizeof(tg_block_q8_0);
    for (int k0 = 0; k0 < nb; k0 += GEMV_STACK_BLOCKS)
        gemv_q_tile(q4, y, xb + k0, w + (size_t)k0 * bs, ldw, b,
                    nb - k0 < GEMV_STACK_BLOCKS ? nb - k0 : GEMV_STACK_BLOCKS, o0, o1, k0 > 0);
}

#include "engine/x86/qgemv_small_tmpl.h"

/* y[o0..o1) = W · x for one token, W in IEEE half (h16) or bfloat16 */
ALWAYS_INLINE void gemv_half(int h16, float *y, const float *x, const char *w, size_t ldw,
                             const float *b, int in, int o0, int o1) {
    for (int o = o0; o < o1; o++) {
        const uint16_t *wo = (const uint16_t *)(w + (size_t)o * ldw);
        __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
        __m256 a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
        int i = 0;
        for (; i + 32 <= in; i += 32) {
            a0 = _mm256_fmadd_ps(tg_half8_ps(h16, wo + i), _mm256_loadu_ps(x + i), a0);
            a1 = _mm256_fmadd_ps(tg_half8_ps(h16, wo + i + 8), _mm256_loadu_ps(x + i + 8), a1);
            a2 = _mm256_fmadd_ps(tg_half8_ps(h16, wo + i + 16), _mm256_loadu_ps(x + i + 16), a2);
            a3 = _mm256_fmadd_ps(tg_half8_ps(h16, wo + i + 24), _mm256_loadu_ps(x + i + 24), a3);
        }
        for (; i + 8 <= in; i += 8)
            a0 = _mm256_fmadd_ps(tg_half8_ps(h16, wo + i), _mm256_loadu_ps(x + i), a0);
        float v = hsum8(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
        for (; i < in; i++) v += tg_half_ps1(h16, wo[i]) * x[i]; /* tail: 1..7 */
        y[o] = b ? v + b[o] : v;
    }
}

/* ---- T > 1 on integer dot products ------------------------------------------ */

#include "engine/x86/qgemm_tmpl.h"
Q_TILE(1) Q_TILE(2)
#if QMR >= 3
Q_TILE(3)
#endif
#if QMR >= 6
Q_TILE(4) Q_TILE(5) Q_TILE(6)
static const q_tile_fn q_tiles[QMR + 1] = {NULL, q_tile_1, q_tile_2, q_tile_3,
                                           q_tile_4, q_tile_5, q_tile_6};
#elif QMR == 3
static const q_tile_fn q_tiles[QMR + 1] = {NULL, q_tile_1, q_tile_2, q_tile_3};
#else
static const q_tile_fn q_tiles[QMR + 1] = {NULL, q_tile_1, q_tile_2};
#endif
#if QGEMM_Q8_SIGNED /* plain AVX2: Q8_0's w + 128 would saturate vpmaddubsw */
Q_TILE_S(1) Q_TILE_S(2) Q_TILE_S(3)
static const q_tile_fn q_tiles_s[QMR + 1] = {NULL, q_tile_s1, q_tile_s2, q_tile_s3};
#define GEMM_Q(q4, y, x, w, ldw, b, T, in, out, o0, o1, ws) \
    qgemm_run(q4, (q4) ? q_tiles : q_tiles_s, y, x, w, ldw, b, T, in, out, o0, o1, ws)
#else
#define GEMM_Q(q4, y, x, w, ldw, b, T, in, out, o0, o1, ws) \
    qgemm_run(q4, q_tiles, y, x, w, ldw, b, T, in, out, o0, o1, ws)
#endif

/* ---- the table entries ------------------------------------------------------ */

/* the ISA's GEMV for long rows of Q8_0 (q4 = 0) or Q4_0, where it has one:
 * 1 if it took the rows */
#ifndef GEMV_Q8_WIDE
#define GEMV_Q8_WIDE(y, x, w, ldw, b, nb, o0, o1) 0
#endif
#ifndef GEMV_Q4_WIDE
#define GEMV_Q4_WIDE(y, x, w, ldw, b, nb, o0, o1) 0
#endif

ALWAYS_INLINE void matmul_q(int q4, float *y, const void *x, const void *w, size_t ldw,
                            const float *b, int T, int in, int out, int o0, int o1, void *ws) {
    const int nb = in / TG_QK;
    if (T > 1) GEMM_Q(q4, y, x, w, ldw, b, T, in, out, o0, o1, ws);
    else if (in <= GEMV_SMALL_NB * TG_QK) gemv_q_small(q4, y, x, w, ldw, b, nb, o0, o1);
    else if (!(q4 ? GEMV_Q4_WIDE(y, x, w, ldw, b, nb, o0, o1) : GEMV_Q8_WIDE(y, x, w, ldw, b, nb, o0, o1)))
        gemv_q(q4, y, x, w, ldw, b, nb, o0, o1);
}

static void matmul_q8_0(float *y, const void *x, const void *w, size_t ldw, const float *b, int T,
                        int in, int out, int o0, int o1, void *ws) {
    matmul_q(0, y, x, w, ldw, b, T, in, out, o0, o1, ws);
}

static void matmul_q4_0(float *y, const void *x, const void *w, size_t ldw, const float *b, int T,
                        int in, int out, int o0, int o1, void *ws) {
    matmul_q(1, y, x, w, ldw, b, T, in, out, o0, o1, ws);
}

/* F16/BF16 where this table has them (MATMUL_HALF defined: the AVX2 and
 * AVX-VNNI tables; the AVX-512 table's are matmul_avx512.c's, installed
 * with its f32 GEMM whatever VNNI the CPU has) */
#ifdef MATMUL_HALF
static void matmul_f16(float *y, const void *x, const void *w, size_t ldw, const float *b, int T,
                       int in, int out, int o0, int o1, void *ws) {
    if (T == 1) gemv_half(1, y, x, w, ldw, b, in, o0, o1);
    else MATMUL_HALF(1, y, x, w, ldw, b, T, in, out, o0, o1, ws);
}

static void matmul_bf16(float *y, const void *x, const void *w, size_t ldw, const float *b, int T,
                        int in, int out, int o0, int o1, void *ws) {
    if (T == 1) gemv_half(0, y, x, w, ldw, b, in, o0, o1);
    else MATMUL_HALF(0, y, x, w, ldw, b, T, in, out, o0, o1, ws);
}
#endif

/* q[N/32] = Q8_0(x[N]), bit for bit the reference's rule: d = amax/127 and
 * 1/d in scalar f32, x·(1/d) rounded to nearest even (vroundps). A block
 * with a non-finite value goes through the reference. */
static void quantize_q8_0(tg_block_q8_0 *q, const float *x, int n) {
    const __m256 sign = _mm256_set1_ps(-0.0f), big = _mm256_set1_ps(3.4028234663852886e38f);
    const __m256i perm = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    for (int bk = 0; bk < n / TG_QK; bk++) {
        const float *xb = x + (size_t)bk * TG_QK;
        __m256 v[4], m = _mm256_setzero_ps();
        int bad = 0;
        for (int j = 0; j < 4; j++) {
            v[j] = _mm256_loadu_ps(xb + 8 * j);
            __m256 a = _mm256_andnot_ps(sign, v[j]);
            bad |= _mm256_movemask_ps(_mm256_cmp_ps(a, big, _CMP_NLE_UQ)); /* NaN or inf */
            m = _mm256_max_ps(m, a);
        }
        if (bad) {
            tg_quantize_row(TG_WTYPE_Q8_0, q + bk, xb, TG_QK);
            continue;
        }
        __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
        h = _mm_max_ps(h, _mm_movehl_ps(h, h));
        h = _mm_max_ss(h, _mm_movehdup_ps(h));
        float amax = _mm_cvtss_f32(h);
        float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
        q[bk].d = (uint16_t)_cvtss_sh(d, _MM_FROUND_TO_NEAREST_INT); /* F16C: tg_f32_to_f16 of a finite d */
        __m256 vid = _mm256_set1_ps(id);
        __m256i i32[4];
        for (int j = 0; j < 4; j++)
            i32[j] = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v[j], vid),
                                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
        __m256i p16a = _mm256_packs_epi32(i32[0], i32[1]), p16b = _mm256_packs_epi32(i32[2], i32[3]);
        __m256i p8 = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(p16a, p16b), perm);
        _mm256_storeu_si256((__m256i *)q[bk].qs, p8);
    }
}

#define GEMV_BF16_NAME_(s) tg_gemv_bf16_##s
#define GEMV_BF16_NAME(s) GEMV_BF16_NAME_(s)
/* the BF16 GEMV for other files' tables (x86.h) */
void GEMV_BF16_NAME(SUFFIX)(float *y, const float *x, const void *w, size_t ldw, const float *b,
                            int in, int o0, int o1);
void GEMV_BF16_NAME(SUFFIX)(float *y, const float *x, const void *w, size_t ldw, const float *b,
                            int in, int o0, int o1) {
    gemv_half(0, y, x, w, ldw, b, in, o0, o1);
}

#define INIT_NAME_(s) tg_kernels_init_quant_##s
#define INIT_NAME(s) INIT_NAME_(s)
void INIT_NAME(SUFFIX)(tg_kernels *k) {
#ifdef MATMUL_HALF
    k->matmul_w[TG_WTYPE_F16] = matmul_f16;
    k->matmul_w[TG_WTYPE_BF16] = matmul_bf16;
#endif
    k->matmul_w[TG_WTYPE_Q8_0] = matmul_q8_0;
    k->matmul_w[TG_WTYPE_Q4_0] = matmul_q4_0;
    k->quantize_q8_0 = quantize_q8_0;
}
