/* quant_avx512.c — the typed-weight kernels for the AVX-512 table with
 * AVX512-VNNI (vpdpbusd, EVEX on ymm: the decode GEMV streams 256-bit
 * loads, as the f32 one does; on zmm in the prefill GEMM of Q8_0/Q4_0)
 * (quant_tmpl.h, qgemm_tmpl.h). F16/BF16 are matmul_avx512.c's, installed
 * with the AVX-512 f32 GEMM whether or not the CPU has VNNI. */
#include <immintrin.h>

#include <string.h>

#include "engine/x86/x86.h"

#define DOT32(acc, u, s) (acc) = _mm256_dpbusd_epi32((acc), (u), (s))
#define SUFFIX avx512vnni

/* the int8 GEMM's vocabulary (qvocab_zmm.h): 6 tokens × 32 rows on vpdpbusd */
#include "engine/x86/qvocab_zmm.h"
#define qdpbusd(acc, u, s) _mm512_dpbusd_epi32((acc), (u), (s))

/* Pins v in a register: GCC otherwise folds each use of a loaded vector
 * into its instruction as a memory operand again (a vpermt2w overwrites its
 * table, so a second use means a second load). The decode GEMVs' W loads
 * are unaligned; every repeat is another one or two cache-line accesses
 * (and from DRAM, another wait on a line in flight). */
#define PIN_ZMM(v) __asm__("" : "+v"(v))

/* the f16 scales of 8 consecutive Q4_0 blocks as 8 words, from the zmm
 * loads of their bytes 0..63 (l0) and 64..127 (l1): the scales are words
 * 9·j */
static inline __m128i q4_scales8(__m512i l0, __m512i l1) {
    const __m512i i9 = _mm512_setr_epi32(9 << 16, 27 << 16 | 18, 45 << 16 | 36, 63 << 16 | 54, 0, 0,
                                         0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    return _mm512_castsi512_si128(_mm512_permutex2var_epi16(l0, i9, l1));
}

/* the f16 scales of 8 consecutive Q8_0 blocks as 8 words, from the zmm
 * loads of their bytes 0..255 (l0..l3): words 0, 17, 34, 51 of l0:l1 into
 * words 0..3; 68, 85, 102, 119 (4, 21, 38, 55 of l2:l3) into words 4..7 */
static inline __m128i q8_scales8(__m512i l0, __m512i l1, __m512i l2, __m512i l3) {
    const __m512i ia = _mm512_setr_epi32(17 << 16, 51 << 16 | 34, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                         0, 0, 0, 0);
    const __m512i ib = _mm512_setr_epi32(0, 0, 21 << 16 | 4, 55 << 16 | 38, 0, 0, 0, 0, 0, 0, 0,
                                         0, 0, 0, 0, 0);
    __m128i a = _mm512_castsi512_si128(_mm512_permutex2var_epi16(l0, ia, l1));
    __m128i b = _mm512_castsi512_si128(_mm512_permutex2var_epi16(l2, ib, l3));
    return _mm_blend_epi16(a, b, 0xf0);
}

/* the f16 scales of 8 consecutive Q4_0 (q4) or Q8_0 blocks from p as 8
 * words: word permutes across two zmm loads (Q4_0: the scales are words
 * 9·j of the 144 bytes; Q8_0: words 17·j of 272, two permutes), reading
 * only bytes of those 8 blocks */
static inline __m128i gemv_scales8(int q4, const char *p) {
    const __m512i l0 = _mm512_loadu_si512(p), l1 = _mm512_loadu_si512(p + 64);
    if (q4) return q4_scales8(l0, l1);
    return q8_scales8(l0, l1, _mm512_loadu_si512(p + 128), _mm512_loadu_si512(p + 192));
}
#define GEMV_SCALES8(q4, p) gemv_scales8((q4), (p))

/* the same for 4 blocks (a row of IN = 128: the tiny models), read under a
 * mask so that no byte past the 4 blocks is touched */
static inline __m128i gemv_scales4(int q4, const char *p) {
    int words = q4 ? 4 * 9 : 4 * 17; /* 72 or 136 bytes */
    __m512i l0 = _mm512_maskz_loadu_epi16((__mmask32)(words >= 32 ? ~0u : (1u << words) - 1u), p);
    __m512i l1 = words > 32 ? _mm512_maskz_loadu_epi16((__mmask32)((1ull << (words - 32)) - 1u), p + 64)
                            : _mm512_setzero_si512();
    const __m512i i = q4 ? _mm512_setr_epi32(9 << 16, 27 << 16 | 18, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
                         : _mm512_setr_epi32(17 << 16, 51 << 16 | 34, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    return _mm512_castsi512_si128(_mm512_permutex2var_epi16(l0, i, l1));
}
#define GEMV_SCALES4(q4, p) gemv_scales4((q4), (p))

/* the short-row GEMV two blocks per zmm (qgemv_small_tmpl.h) */
#define GEMV_SMALL_ZMM 1

/* ---- the Q4_0 decode GEMV for long rows: four blocks per zmm --------------------
 *
 * y[o0..o1) = W · x for one token, W[OUT, IN] in Q4_0, x in Q8_0 blocks,
 * IN a multiple of 256 (8 blocks: 144 bytes, read as three zmm loads at
 * bytes 0, 64 and 80 of them, nothing outside). The ymm GEMV (gemv_q)
 * spends ~7 instructions per 18-byte block and is compute-bound on Zen 5
 * (~65% of the DRAM roofline); here one vpermt2w gathers the 64 nibble
 * bytes of four blocks into a zmm, whose low and high nibbles are two
 * vpdpbusd against x's bytes laid out to match (xlo: elements 0..15 of
 * each of the four blocks, xhi: 16..31), into 16 int32 lanes, four per
 * block; a lane starts at -8·Σ of its 8 x bytes (the nibble offset), so
 * it holds exactly Σ (q - 8)·x of its 8 elements (|.| <= 8·128·8, exact
 * in f32). Then per lane × d_w·d_x of its block and an fma into one of
 * two f32 accumulators (blocks 0-3 and 4-7 of each 8). Each row is
 * computed by the same operations wherever it falls, so results do not
 * depend on o0/o1; against the reference only the order of the f32 sums
 * differs. */
/* rows o0..o1 of gemv_q4_wide on its prepared x (one instantiation per
 * common row length, so the block loop unrolls: GPT-2's 24 and 96) */
static inline __attribute__((always_inline)) void
q4w_rows(float *y, const char *w, size_t ldw, const float *b, const int nb, int o0, int o1,
         const __m512i *xlo, const __m512i *xhi, const __m512i *xc, const float *xd,
         __m512i idx_a, __m512i idx_b, __m512i lanes_a, __m512i lanes_b, int acc) {
    const __m512i nib = _mm512_set1_epi8(15);
    for (int o = o0; o < o1; o++) {
        const char *wo = w + (size_t)o * ldw;
        __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();
        tg_prefetch_row(wo, (size_t)nb * sizeof(tg_block_q4_0));
        for (int k = 0; k < nb; k += 8) {
            const char *p = wo + (size_t)k * sizeof(tg_block_q4_0);
            __m512i l0 = _mm512_loadu_si512(p), l1 = _mm512_loadu_si512(p + 64);
            __m512i l2 = _mm512_loadu_si512(p + 80);
            PIN_ZMM(l0); /* three loads, not six */
            PIN_ZMM(l1);
            PIN_ZMM(l2);
            __m512 s8 = _mm512_castps256_ps512(
                _mm256_mul_ps(_mm256_cvtph_ps(q4_scales8(l0, l1)), _mm256_load_ps(xd + k)));
            __m512i qa = _mm512_permutex2var_epi16(l0, idx_a, l1);
            __m512i qb = _mm512_permutex2var_epi16(l1, idx_b, l2);
            int g = k / 4;
            __m512i da = _mm512_dpbusd_epi32(xc[g], _mm512_and_si512(qa, nib), xlo[g]);
            da = _mm512_dpbusd_epi32(da, _mm512_and_si512(_mm512_srli_epi16(qa, 4), nib), xhi[g]);
            __m512i db = _mm512_dpbusd_epi32(xc[g + 1], _mm512_and_si512(qb, nib), xlo[g + 1]);
            db = _mm512_dpbusd_epi32(db, _mm512_and_si512(_mm512_srli_epi16(qb, 4), nib), xhi[g + 1]);
            a0 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(da), _mm512_permutexvar_ps(lanes_a, s8), a0);
            a1 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(db), _mm512_permutexvar_ps(lanes_b, s8), a1);
        }
        float v = _mm512_reduce_add_ps(_mm512_add_ps(a0, a1));
        y[o] = acc ? y[o] + v : b ? v + b[o] : v;
    }
}

/* x's prepared form for at most Q4W_TILE blocks (27 KB of stack); longer
 * rows go in tiles of that many blocks, each tile's partial dot products
 * added to y in tile order (acc): the same operations for a row wherever
 * it falls, and for rows of up to 16384 inputs exactly one tile (no heap:
 * a kernel cannot fail). Not inlined into the tile loop: there GCC keeps
 * all of x's vectors in registers, and the register copies that vpdpbusd's
 * accumulate-into-xc then needs made the 768-input rows ~25% slower from
 * L2 than loads from the stack (Zen 5). */
#define Q4W_TILE 512
static __attribute__((noinline)) void q4w_tile(float *y, const tg_block_q8_0 *xb, const char *w,
                                               size_t ldw, const float *b, int nb, int o0, int o1,
                                               int acc) {
    __m512i xlo[Q4W_TILE / 4], xhi[Q4W_TILE / 4], xc[Q4W_TILE / 4];
    _Alignas(64) float xd[Q4W_TILE];
    const __m512i eight = _mm512_set1_epi8(8);
    for (int g = 0; g < nb / 4; g++) {
        _Alignas(64) int8_t lo[64], hi[64];
        for (int j = 0; j < 4; j++) {
            memcpy(lo + 16 * j, xb[4 * g + j].qs, 16);
            memcpy(hi + 16 * j, xb[4 * g + j].qs + 16, 16);
            xd[4 * g + j] = _cvtsh_ss(xb[4 * g + j].d);
        }
        xlo[g] = _mm512_load_si512(lo);
        xhi[g] = _mm512_load_si512(hi);
        __m512i c = _mm512_dpbusd_epi32(_mm512_setzero_si512(), eight, xlo[g]);
        c = _mm512_dpbusd_epi32(c, eight, xhi[g]);
        xc[g] = _mm512_sub_epi32(_mm512_setzero_si512(), c);
    }
    /* word 8j + i of a group <- word i of block j's qs (a block's qs start
     * at an even byte, 18j + 2): blocks 0-3 of an 8 from words 0..63 (two
     * loads), blocks 4-7 from bytes 64..127 and 80..143 (the second index
     * set: < 32 from the first source) */
    _Alignas(64) uint16_t ia[32], ib[32];
    for (int j = 0; j < 4; j++)
        for (int i = 0; i < 8; i++) {
            int wa = 9 * j + 1 + i, wb = 36 + 9 * j + 1 + i;
            ia[8 * j + i] = (uint16_t)wa;                                  /* l0:l1 */
            ib[8 * j + i] = (uint16_t)(wb < 64 ? wb - 32 : 32 + wb - 40); /* l1:l2 */
        }
    const __m512i idx_a = _mm512_load_si512(ia), idx_b = _mm512_load_si512(ib);
    /* the scale of block j over its 4 lanes */
    const __m512i lanes_a = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
    const __m512i lanes_b = _mm512_add_epi32(lanes_a, _mm512_set1_epi32(4));
    switch (nb) {
    case 24: q4w_rows(y, w, ldw, b, 24, o0, o1, xlo, xhi, xc, xd, idx_a, idx_b, lanes_a, lanes_b, acc); break;
    case 96: q4w_rows(y, w, ldw, b, 96, o0, o1, xlo, xhi, xc, xd, idx_a, idx_b, lanes_a, lanes_b, acc); break;
    default: q4w_rows(y, w, ldw, b, nb, o0, o1, xlo, xhi, xc, xd, idx_a, idx_b, lanes_a, lanes_b, acc); break;
    }
}

/* The wide GEMVs' rows o0..o1 over x in tiles of `tile` blocks (W's
 * blocks bsz bytes): tile_fn (q4w_tile or q8w_tile) per tile, each tile's
 * partial dot products added to y in tile order. Always inlined with
 * constant arguments, so each call is a direct call of its tile function. */
typedef void wide_tile_fn(float *y, const tg_block_q8_0 *xb, const char *w, size_t ldw,
                          const float *b, int nb, int o0, int o1, int acc);
static inline __attribute__((always_inline)) void
gemv_wide(wide_tile_fn *tile_fn, const int tile, const size_t bsz, float *y,
          const tg_block_q8_0 *xb, const char *w, size_t ldw, const float *b, int nb, int o0,
          int o1) {
    for (int k0 = 0; k0 < nb; k0 += tile)
        tile_fn(y, xb + k0, w + (size_t)k0 * bsz, ldw, b, nb - k0 < tile ? nb - k0 : tile, o0, o1,
                k0 > 0);
}
/* rows of 8·k blocks, longer than the small models' (q15's gemv_q path) */
#define GEMV_WIDE(tile_fn, tile, bsz, y, x, w, ldw, b, nb, o0, o1)                               \
    ((nb) % 8 == 0 && (nb) > 16                                                                   \
         ? (gemv_wide(tile_fn, tile, bsz, (y), (x), (w), (ldw), (b), (nb), (o0), (o1)), 1)      \
         : 0)
#define GEMV_Q4_WIDE(y, x, w, ldw, b, nb, o0, o1) \
    GEMV_WIDE(q4w_tile, Q4W_TILE, sizeof(tg_block_q4_0), y, x, w, ldw, b, nb, o0, o1)

/* ---- the Q8_0 decode GEMV for long rows: two blocks per zmm ----------------------
 *
 * y[o0..o1) = W · x for one token, W[OUT, IN] in Q8_0, x in Q8_0 blocks,
 * IN a multiple of 256 (8 blocks, 272 bytes, read as five zmm loads at
 * bytes 0, 64, 128, 192 and 208 of them, nothing outside). gemv_q (ymm,
 * one block per step) costs ~8 instructions and 3.6
 * loads per 34-byte block and reads only ~35 GB/s from L2 on Zen 5, below
 * what one core streams from DRAM (up to ~41 GB/s). Here blocks 2p and
 * 2p+1 of a row go side by side into one zmm (one vpermt2w of their quant
 * words from two of the five loads; the 8 scales, two more, from the first
 * four), made unsigned (w + 128), one vpdpbusd against x's
 * pair starting at its per-lane correction -128·Σx (exact: each int32
 * lane then holds Σ w·x of its 4 bytes), one conversion, one FMA with the
 * pair's scales d_w·d_x (lanes 0-7 block 2p's, 8-15 block 2p+1's, by a
 * permute of the 8 scales of the group); four FMA chains, one horizontal
 * sum per row. Each row is computed by the same operations wherever it
 * falls, so results do not depend on o0/o1. */
static inline __attribute__((always_inline)) void
q8w_rows(float *y, const char *w, size_t ldw, const float *b, const int nb, int o0, int o1,
         const __m512i *xq, const __m512i *xc, const float *xd, int acc) {
    const __m512i u128 = _mm512_set1_epi8((char)0x80);
    const __m512i s01 = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
    const __m512i two = _mm512_set1_epi32(2);
    const __m512i s23 = _mm512_add_epi32(s01, two), s45 = _mm512_add_epi32(s23, two);
    const __m512i s67 = _mm512_add_epi32(s45, two);
    const size_t bs = sizeof(tg_block_q8_0);
    /* pair n's 64 quant bytes from the loads at bytes 64n and 64n + 64 of
     * the group (n < 3), at 192 and 208 (n = 3) */
    __m512i pidx[4];
    for (int n = 0; n < 4; n++) {
        _Alignas(64) uint16_t ix[32];
        for (int i = 0; i < 16; i++) {
            ix[i] = (uint16_t)(2 * n + 1 + i);
            ix[16 + i] = (uint16_t)(n < 3 ? 2 * n + 18 + i : i < 8 ? 24 + i : 48 + i);
        }
        pidx[n] = _mm512_load_si512(ix);
    }
    for (int o = o0; o < o1; o++) {
        const char *wo = w + (size_t)o * ldw;
        tg_prefetch_row(wo, (size_t)nb * bs);
        __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        for (int k = 0; k < nb; k += 8) {
            const char *p = wo + (size_t)k * bs;
            __m512i l0 = _mm512_loadu_si512(p), l1 = _mm512_loadu_si512(p + 64);
            __m512i l2 = _mm512_loadu_si512(p + 128), l3 = _mm512_loadu_si512(p + 192);
            __m512i l4 = _mm512_loadu_si512(p + 208);
            PIN_ZMM(l0); /* five loads of the 272 bytes, each once */
            PIN_ZMM(l1);
            PIN_ZMM(l2);
            PIN_ZMM(l3);
            PIN_ZMM(l4);
            __m512 s8 = _mm512_castps256_ps512(
                _mm256_mul_ps(_mm256_cvtph_ps(q8_scales8(l0, l1, l2, l3)), _mm256_load_ps(xd + k)));
            const int pk = k / 2;
#define Q8W_PAIR(acc, n, sl, la, lb)                                                          \
    do {                                                                                      \
        __m512i wq = _mm512_permutex2var_epi16(la, pidx[n], lb);                              \
        __m512i d = _mm512_dpbusd_epi32(xc[pk + (n)], _mm512_xor_si512(wq, u128), xq[pk + (n)]); \
        acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d), _mm512_permutexvar_ps(sl, s8), acc);     \
    } while (0)
            Q8W_PAIR(a0, 0, s01, l0, l1);
            Q8W_PAIR(a1, 1, s23, l1, l2);
            Q8W_PAIR(a2, 2, s45, l2, l3);
            Q8W_PAIR(a3, 3, s67, l3, l4);
#undef Q8W_PAIR
        }
        float v = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
        y[o] = acc ? y[o] + v : b ? v + b[o] : v;
    }
}

/* x's prepared form for at most Q8W_TILE blocks (17 KB of stack); longer
 * rows in tiles as gemv_q4_wide's (and not inlined into the tile loop, as
 * q4w_tile) */
#define Q8W_TILE 256
static __attribute__((noinline)) void q8w_tile(float *y, const tg_block_q8_0 *xb, const char *w,
                                               size_t ldw, const float *b, int nb, int o0, int o1,
                                               int acc) {
    __m512i xq[Q8W_TILE / 2], xc[Q8W_TILE / 2];
    _Alignas(64) float xd[Q8W_TILE];
    const __m512i u128 = _mm512_set1_epi8((char)0x80);
    for (int p = 0; p < nb / 2; p++) {
        _Alignas(64) int8_t q[64];
        memcpy(q, xb[2 * p].qs, 32);
        memcpy(q + 32, xb[2 * p + 1].qs, 32);
        xd[2 * p] = _cvtsh_ss(xb[2 * p].d);
        xd[2 * p + 1] = _cvtsh_ss(xb[2 * p + 1].d);
        xq[p] = _mm512_load_si512(q);
        xc[p] = _mm512_sub_epi32(_mm512_setzero_si512(),
                                 _mm512_dpbusd_epi32(_mm512_setzero_si512(), u128, xq[p]));
    }
    switch (nb) { /* GPT-2's row lengths unrolled */
    case 24: q8w_rows(y, w, ldw, b, 24, o0, o1, xq, xc, xd, acc); break;
    case 96: q8w_rows(y, w, ldw, b, 96, o0, o1, xq, xc, xd, acc); break;
    default: q8w_rows(y, w, ldw, b, nb, o0, o1, xq, xc, xd, acc); break;
    }
}

#define GEMV_Q8_WIDE(y, x, w, ldw, b, nb, o0, o1) \
    GEMV_WIDE(q8w_tile, Q8W_TILE, sizeof(tg_block_q8_0), y, x, w, ldw, b, nb, o0, o1)

#include "engine/x86/quant_tmpl.h"

/* The decode GEMVs (T == 1) of Q8_0 (q4 = 0) and Q4_0 (q4 = 1) on this
 * table, for the AMX table's entries (amx.c, x86.h). */
void tg_matmul_q_decode_avx512vnni(int q4, float *y, const void *x, const void *w, size_t ldw,
                                   const float *b, int in, int out, int o0, int o1) {
    (q4 ? matmul_q4_0 : matmul_q8_0)(y, x, w, ldw, b, 1, in, out, o0, o1, NULL);
}
