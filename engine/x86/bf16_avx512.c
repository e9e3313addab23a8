/* bf16_avx512.c — BF16 weights on AVX512-BF16 (vdpbf16ps), for the AVX-512
 * table where the CPU has it (engine/cpu.c: TG_CPU_AVX512_BF16).
 *
 * Y[T,OUT] = X[T,IN] · W[OUT,IN]ᵀ + b, columns o0..o1-1 (tg_kernels.matmul_w):
 *
 *   T == 1  the decode GEMV keeps X in f32 and widens W exactly
 *           (tg_gemv_half_avx512, 16 weights per zmm): it is bound by W's bytes, which vdpbf16ps
 *           would not shrink, and its result stays within f32's tolerance.
 *   T 2..8  X rounded to bfloat16 as below, then the f32 few-token path
 *           with W widened as it is loaded (few_bf16): vdpbf16ps' tile of
 *           16 or 32 tokens would waste most of its lanes.
 *   T > 8   the prefill GEMM on vdpbf16ps: X rounded once to bfloat16 (to
 *           nearest even, vcvtne2ps2bf16), W read as it is in the file;
 *           each instruction does 32 multiply-adds against an f32 FMA's 16.
 *           Products of two bfloat16 are exact in f32, summed in f32 in k
 *           order, pair by pair. The one new error is X's rounding: each
 *           x moves by at most 2^-8·|x| (half a step of an 8-bit
 *           significand), so |Y - Y_exact| <= (2^-8 + (IN + 8)·eps)·Σ|w·x|
 *           (+ |b|·eps); bfloat16 subnormals (|x| < 2^-126) count as 0.
 *           tg_engine.bf16_act says so to the tests.
 *
 * X is packed, not W: per block of XB = 32 tokens, for each pair p of
 * inputs (k = 2p, 2p+1) one dword per token, 32 tokens = two zmm (an 8 × 8
 * dword transpose of the rounded rows), once per call. W's pairs are
 * broadcast straight from its rows (no packing of W: gathering 32 strided
 * rows per panel from DRAM was ~a quarter of the GEMM's time at T = 128
 * under perf, and the f32 GEMM pays the same). The register tile is
 * NROW = 8 rows × 32 tokens (16 accumulators): one broadcast of a row's
 * pair feeds two vdpbf16ps. vdpbf16ps has a latency of 6 cycles and two
 * issue per cycle on Zen 5 (12 in flight). Each tile prefetches the next
 * 8 rows (contiguous in W) into L2, 8 lines per 16 pairs; X is taken in
 * chunks of at most XCHUNK bytes (as even as whole blocks allow), each
 * packed just before every row passes over it, so it is in L2 (W is
 * re-read once per chunk: GPT-2's mlp_down at T = 512, 16 times from L3).
 * The accumulators are transposed to token rows in registers (unpack,
 * shuffle, a two-source permute: 24 shuffles per 16 tokens, two token rows
 * per zmm) and stored from there; through a stack buffer (16 stores, four
 * 8 × 8 transposes, 32 loads) the epilogue cost ~5% of the GEMM at T = 512
 * (a driver: 231 -> 219 ms for the 48 GEMMs of a 512-token GPT-2-small
 * prefill, W hot; the bits are the same). The tile asks for its output
 * lines (prefetchw) when it starts, so that 32 stores to lines of y not in
 * cache do not wait at its end.
 *
 * Zen 5, a driver timing gemm_bf16 alone (random data, hot W, 25
 * interleaved calls per variant, 3 rounds, load 6.5), median GFLOP/s at
 * T = 512 before / after the per-chunk packing, even chunks and y's
 * prefetch: 768>2304 386-392 / 395-400, 768>3072 380-387 / 380-386 (its
 * 32 output lines, 12 KB apart, share one L1 set: the prefetch cannot
 * hold them), 3072>768 378-383 / 390-394; T = 128 within 1%. Peak of
 * vdpbf16ps there ~430-460.
 *
 * Every output is one lane of one accumulator fed the pairs in order
 * whatever tile, chunk or range it falls in: results do not depend on
 * o0/o1 (nor on the thread count). */
#include <immintrin.h>
#include <stdalign.h>
#include <string.h>

#include "engine/x86/tr8_avx.h"
#include "engine/x86/x86.h"

#define ALWAYS_INLINE static inline __attribute__((always_inline))
#define XB 32       /* tokens per block of packed X (two zmm) */
#define NROW 8      /* W rows per register tile */
#define XCHUNK (256 * 1024) /* bytes of packed X kept in L2 while W rows pass over it */
/* T = 2..FEW_T take few_bf16: the tile's 16 or 32 lanes of tokens would
 * be mostly empty */
#define FEW_T 8

/* 8 pairs (16 inputs from k = 2p) of a token row rounded to bfloat16
 * (to nearest even); n < 16 inputs left: the rest read as 0 */
static inline __m256 round16(const float *x, int n) {
    __m512 v = n >= 16 ? _mm512_loadu_ps(x) : _mm512_maskz_loadu_ps((__mmask16)((1u << n) - 1u), x);
    return _mm256_castsi256_ps((__m256i)_mm512_cvtneps_pbh(v));
}

/* xp[p·XB + i] = the bf16 pair p of token t0 + i (i < XB; tokens past T
 * read zeros), for one block of XB tokens: per 8 tokens and 8 pairs, the
 * rounded rows (one ymm each) transposed in registers */
static void pack_x(uint32_t *xp, const float *x, int in, int t0, int T) {
    int P = (in + 1) / 2;
    for (int j0 = 0; j0 < XB; j0 += 8) {
        const float *r[8];
        int nt = T - t0 - j0; /* rows of these 8 that are tokens */
        for (int j = 0; j < 8; j++) r[j] = x + (size_t)(j < nt ? t0 + j0 + j : t0) * in;
        const __m256 z = _mm256_setzero_ps();
        int p = 0;
        for (; p + 8 <= P; p += 8) {
            int n = in - 2 * p;
            __m256 v[8];
            for (int j = 0; j < 8; j++) v[j] = j < nt ? round16(r[j] + 2 * p, n) : z;
            tg_tr8_avx_regs((float *)xp + (size_t)p * XB + j0, XB, v[0], v[1], v[2], v[3], v[4],
                            v[5], v[6], v[7]);
        }
        if (p < P) { /* the last P % 8 pairs, through a small buffer */
            alignas(32) float tt[8][8];
            int n = in - 2 * p;
            __m256 v[8];
            for (int j = 0; j < 8; j++) v[j] = j < nt ? round16(r[j] + 2 * p, n) : z;
            tg_tr8_avx_regs(tt[0], 8, v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]);
            for (int q = 0; p + q < P; q++)
                _mm256_storeu_ps((float *)xp + (size_t)(p + q) * XB + j0, _mm256_load_ps(tt[q]));
        }
    }
}

static inline int ld32(const char *p) {
    int v;
    memcpy(&v, p, 4);
    return v;
}

/* y[mr tokens, nr rows] (ldy apart) = the tile's tokens (xp: their pairs,
 * XB apart) · the NROW rows wr (each np whole pairs; odd: one more
 * bfloat16) + b. NV = 2: 32 tokens, NV = 1: 16. */
ALWAYS_INLINE void tile(int NV, float *y, size_t ldy, int mr, const uint32_t *xp,
                        const char *const *wr, int np, int odd, const float *b, int nr,
                        const char *pf) {
    __m512 a[NROW][2];
    for (int j = 0; j < NROW; j++) a[j][0] = a[j][1] = _mm512_setzero_ps();
    /* the tile's output lines, for writing: they arrive while it computes */
    for (int t = 0; t < mr; t++) _mm_prefetch((const char *)(y + (size_t)t * ldy), _MM_HINT_ET0);
    for (int p0 = 0; p0 < np; p0 += 16) {
        /* 8 lines of the next NROW rows per 16 pairs: all of them by the end */
        for (int i = 0; i < 8; i++) _mm_prefetch(pf + ((size_t)p0 / 2 + (size_t)i) * 64, _MM_HINT_T1);
        int pe = np - p0 < 16 ? np : p0 + 16;
        for (int p = p0; p < pe; p++) {
            __m512bh x0 = (__m512bh)_mm512_load_si512(xp + (size_t)p * XB);
            __m512bh x1 = NV == 2 ? (__m512bh)_mm512_load_si512(xp + (size_t)p * XB + 16) : x0;
            for (int j = 0; j < NROW; j++) {
                __m512bh w = (__m512bh)_mm512_set1_epi32(ld32(wr[j] + (size_t)p * 4));
                a[j][0] = _mm512_dpbf16_ps(a[j][0], x0, w);
                if (NV == 2) a[j][1] = _mm512_dpbf16_ps(a[j][1], x1, w);
            }
        }
    }
    if (odd) { /* the last pair: w's second half 0 (the row ends before it) */
        __m512bh x0 = (__m512bh)_mm512_load_si512(xp + (size_t)np * XB);
        __m512bh x1 = NV == 2 ? (__m512bh)_mm512_load_si512(xp + (size_t)np * XB + 16) : x0;
        for (int j = 0; j < NROW; j++) {
            uint16_t h;
            memcpy(&h, wr[j] + (size_t)np * 4, 2);
            __m512bh w = (__m512bh)_mm512_set1_epi32((int)h);
            a[j][0] = _mm512_dpbf16_ps(a[j][0], x0, w);
            if (NV == 2) a[j][1] = _mm512_dpbf16_ps(a[j][1], x1, w);
        }
    }
    /* a[j][v] lane i = y[16·v + i][j]: transposed in registers, two
     * tokens per vector (tokens i and i + 4 in its halves) */
    __mmask8 m = (__mmask8)((1u << nr) - 1u);
    __m512 bv = _mm512_setzero_ps();
    if (b) bv = _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_maskz_loadu_ps(m, b)),
                                   _mm256_maskz_loadu_ps(m, b), 1);
    const __m512i lo = _mm512_set_epi32(23, 22, 21, 20, 7, 6, 5, 4, 19, 18, 17, 16, 3, 2, 1, 0);
    const __m512i hi = _mm512_set_epi32(31, 30, 29, 28, 15, 14, 13, 12, 27, 26, 25, 24, 11, 10, 9, 8);
    for (int v = 0; v < NV; v++) {
        __m512 t0 = _mm512_unpacklo_ps(a[0][v], a[1][v]), t1 = _mm512_unpackhi_ps(a[0][v], a[1][v]);
        __m512 t2 = _mm512_unpacklo_ps(a[2][v], a[3][v]), t3 = _mm512_unpackhi_ps(a[2][v], a[3][v]);
        __m512 t4 = _mm512_unpacklo_ps(a[4][v], a[5][v]), t5 = _mm512_unpackhi_ps(a[4][v], a[5][v]);
        __m512 t6 = _mm512_unpacklo_ps(a[6][v], a[7][v]), t7 = _mm512_unpackhi_ps(a[6][v], a[7][v]);
        __m512 u[8];
        u[0] = _mm512_shuffle_ps(t0, t2, 0x44), u[1] = _mm512_shuffle_ps(t0, t2, 0xEE);
        u[2] = _mm512_shuffle_ps(t1, t3, 0x44), u[3] = _mm512_shuffle_ps(t1, t3, 0xEE);
        u[4] = _mm512_shuffle_ps(t4, t6, 0x44), u[5] = _mm512_shuffle_ps(t4, t6, 0xEE);
        u[6] = _mm512_shuffle_ps(t5, t7, 0x44), u[7] = _mm512_shuffle_ps(t5, t7, 0xEE);
        /* u[c] lane L: token 4L + c, rows 0..3 (c < 4) or 4..7 (u[c + 4]) */
        for (int c = 0; c < 4; c++) {
            for (int g = 0; g < 2; g++) { /* tokens c, c + 4 (g = 0) and c + 8, c + 12 */
                __m512 r = _mm512_permutex2var_ps(u[c], g ? hi : lo, u[c + 4]);
                if (b) r = _mm512_add_ps(r, bv);
                int t = 16 * v + 8 * g + c;
                if (t < mr) _mm256_mask_storeu_ps(y + (size_t)t * ldy, m, _mm512_castps512_ps256(r));
                if (t + 4 < mr) _mm256_mask_storeu_ps(y + (size_t)(t + 4) * ldy, m, _mm512_extractf32x8_ps(r, 1));
            }
        }
    }
}

static void tile_32(float *y, size_t ldy, int mr, const uint32_t *xp, const char *const *wr,
                    int np, int odd, const float *b, int nr, const char *pf) {
    tile(2, y, ldy, mr, xp, wr, np, odd, b, nr, pf);
}
static void tile_16(float *y, size_t ldy, int mr, const uint32_t *xp, const char *const *wr,
                    int np, int odd, const float *b, int nr, const char *pf) {
    tile(1, y, ldy, mr, xp, wr, np, odd, b, nr, pf);
}

/* ws: tg_matmul_w_scratch's "BF16 GEMM" (engine/dispatch.c) */
static void gemm_bf16(float *y, const float *x, const char *w, size_t ldw, const float *b, int T,
                      int in, int out, int o0, int o1, void *ws) {
    int P = (in + 1) / 2, np = in / 2, odd = in & 1;
    size_t ldx = ((size_t)P + 15) / 16 * 16;
    int nblk = (T + XB - 1) / XB;
    char *p = ws;
    /* chunks of X that stay in L2 while every row of W passes over them,
     * as even as whole blocks allow (no small last chunk re-reading all of W) */
    size_t blk_bytes = sizeof(uint32_t) * XB * (size_t)P;
    int cblk = XCHUNK / blk_bytes > 1 ? (int)(XCHUNK / blk_bytes) : 1;
    cblk = cblk < nblk ? cblk : nblk;
    int nch = (nblk + cblk - 1) / cblk;
    cblk = (nblk + nch - 1) / nch;
    uint32_t *xp = tg_ws_take(&p, blk_bytes * (size_t)cblk);
    uint32_t *zero = tg_ws_take(&p, sizeof(uint32_t) * (ldx + 8));
    memset(zero, 0, sizeof(uint32_t) * (ldx + 8));
    for (int c0 = 0; c0 < nblk; c0 += cblk) {
        int c1 = nblk - c0 < cblk ? nblk : c0 + cblk;
        /* packed per chunk, just before use: it is in L2 for the first rows */
        for (int k = c0; k < c1; k++)
            pack_x(xp + (size_t)(k - c0) * XB * P, x, in, k * XB, T);
        for (int o = o0; o < o1; o += NROW) {
            int nr = o1 - o < NROW ? o1 - o : NROW;
            const char *wr[NROW];
            for (int j = 0; j < NROW; j++) wr[j] = j < nr ? w + (size_t)(o + j) * ldw : (const char *)zero;
            /* the next NROW rows (contiguous) into L2 while these run */
            const char *pf = w + (size_t)(o + NROW) * ldw;
            for (int k = c0; k < c1; k++) {
                int t = k * XB, mr = T - t < XB ? T - t : XB;
                const uint32_t *xk = xp + (size_t)(k - c0) * XB * P;
                float *yt = y + (size_t)t * out + o;
                const float *bo = b ? b + o : NULL;
                if (mr > 16) tile_32(yt, (size_t)out, mr, xk, wr, np, odd, bo, nr, pf);
                else tile_16(yt, (size_t)out, mr, xk, wr, np, odd, bo, nr, pf);
            }
        }
    }
}

/* T = 2..FEW_T: X rounded to bfloat16 as the GEMM rounds it (vcvtneps2bf16,
 * kept as f32, in ws), then the f32 few-token path with W widened as it is
 * loaded (tg_matmul_half_avx512): every product is the GEMM's, exact, only
 * summed in another order, so a prompt prefilled in chunks of any size
 * agrees with one prefill to f32's rounding */
static void few_bf16(float *y, const float *x, const void *w, size_t ldw, const float *b, int T,
                     int in, int out, int o0, int o1, void *ws) {
    char *p = ws;
    size_t n = (size_t)T * (size_t)in;
    float *xr = tg_ws_take(&p, sizeof(float) * n);
    for (size_t i = 0; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1u);
        __m256i h = (__m256i)_mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(m, x + i));
        _mm512_mask_storeu_ps(xr + i, m, _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)));
    }
    tg_matmul_half_avx512(0, y, xr, w, ldw, b, T, in, out, o0, o1, NULL);
}

static void matmul_bf16(float *y, const void *x, const void *w, size_t ldw, const float *b, int T,
                        int in, int out, int o0, int o1, void *ws) {
    if (T == 1) tg_gemv_half_avx512(0, y, x, w, ldw, b, in, o0, o1);
    else if (T <= FEW_T) few_bf16(y, x, w, ldw, b, T, in, out, o0, o1, ws);
    else gemm_bf16(y, x, w, ldw, b, T, in, out, o0, o1, ws);
}

void tg_kernels_init_bf16_avx512bf16(tg_kernels *k) {
    k->matmul_w[TG_WTYPE_BF16] = matmul_bf16; /* tg_arch_bf16_act says so */
}
