/* bf16_avx512.c — BF16 weights on AVX512-BF16 (vdpbf16ps), for the AVX-512
 * table where the CPU has it (engine/cpu.c: TG_CPU_AVX512_BF16).
 *
 * Y[T,OUT] = X[T,IN] · W[OUT,IN]ᵀ + b, columns o0..o1-1 (tg_kernels.matmul_w):
 *
 *   T == 1  the decode GEMV keeps X in f32 and widens W exactly
 *           (tg_gemv_half_avx512, 16 weights per zmm): it is bound by W's bytes, which vdpbf16ps
 *           would not shrink, and its result stays within f32's tolerance.
 *   T > 1   the prefill GEMM on vdpbf16ps: X rounded once to bfloat16 (to
 *           nearest even, vcvtne2ps2bf16), W read as it is in the file;
 *           each instruction does 32 multiply-adds against an f32 FMA's 16.
 *           Products of two bfloat16 are exact in f32, summed in f32 in k
 *           order, pair by pair. The one new error is X's rounding: each
 *           x moves by at most 2^-8·|x| (half a step of an 8-bit
 *           significand), so |Y - Y_exact| <= (2^-8 + (IN + 8)·eps)·Σ|w·x|
 *           (+ |b|·eps); bfloat16 subnormals (|x| < 2^-126) count as 0.
 *           tg_engine.bf16_act says so to the tests.
 *
 * W is packed per panel of BNR = 32 rows: for each pair p of inputs
 * (k = 2p, 2p+1) one dword per row, 32 rows = two zmm (an 8 × 8 dword
 * transpose of the rows). A panel of GPT-2's mlp_down (IN = 3072) is 192 KB:
 * it stays in L2 while every token tile runs over it. The register tile is
 * BMR = 8 tokens × 32 rows (16 accumulators); one broadcast of a token's
 * pair feeds two vdpbf16ps. vdpbf16ps has a latency of 6 cycles and two
 * issue per cycle on Zen 5 (12 in flight): 6 × 32 (12 accumulators) left
 * no slack and ran ~10% slower at the kernel level. While a panel runs,
 * the next panel's rows are prefetched into L2, spread over its token
 * tiles (packing them from DRAM, 32 strided rows, was ~a quarter of the
 * GEMM's time at T = 128 under perf).
 *
 * Every output is one lane of one accumulator fed the pairs in order
 * whatever panel, tile or range it falls in: results do not depend on
 * o0/o1 (nor on the thread count). */
#include <immintrin.h>
#include <stdalign.h>
#include <string.h>

#include "engine/x86/tr8_avx.h"
#include "engine/x86/x86.h"

#define ALWAYS_INLINE static inline __attribute__((always_inline))
#define BMR 8
#define BNR 32

/* panel[p·BNR + j] = the bf16 pair p of row r0 + j (j < nr; rows past nr
 * read zeros); IN odd: the last pair's second half is 0 */
static void pack_w(uint32_t *panel, const char *w, size_t ldw, int r0, int nr, int in,
                   const uint32_t *zero) {
    int np = in / 2, P = (in + 1) / 2;
    for (int j0 = 0; j0 < BNR; j0 += 8) {
        const float *r[8];
        for (int j = 0; j < 8; j++)
            r[j] = j0 + j < nr ? (const float *)(w + (size_t)(r0 + j0 + j) * ldw) : (const float *)zero;
        int p = 0;
        for (; p + 8 <= np; p += 8) tg_tr8_avx((float *)panel + (size_t)p * BNR + j0, BNR, r, p);
        for (; p < P; p++)
            for (int j = 0; j < 8; j++) {
                const uint16_t *h = (const uint16_t *)r[j];
                uint32_t lo = h[2 * p], hi = 2 * p + 1 < in ? h[2 * p + 1] : 0;
                if (j0 + j >= nr) lo = hi = 0;
                panel[(size_t)p * BNR + j0 + j] = lo | hi << 16;
            }
    }
}

/* xb[P] = x[IN] rounded to bfloat16 pairs (to nearest even); IN odd: the
 * last pair's second half 0 */
static void round_x(uint32_t *xb, const float *x, int in) {
    int i = 0;
    for (; i + 32 <= in; i += 32) {
        __m512bh v = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(x + i + 16), _mm512_loadu_ps(x + i));
        _mm512_storeu_si512(xb + i / 2, (__m512i)v);
    }
    if (i < in) {
        int n = in - i, n0 = n < 16 ? n : 16, n1 = n - n0;
        __m512 lo = _mm512_maskz_loadu_ps((__mmask16)((1u << n0) - 1u), x + i);
        __m512 hi = _mm512_maskz_loadu_ps((__mmask16)((1u << n1) - 1u), x + i + 16);
        __m512i v = (__m512i)_mm512_cvtne2ps_pbh(hi, lo);
        int pairs = (n + 1) / 2;
        _mm512_mask_storeu_epi32(xb + i / 2, (__mmask16)((1u << pairs) - 1u), v);
    }
}

/* y[mr, nr] (ldy apart) = X[mr] · panel + b: the register tile. xb: the
 * tokens' pairs (ldx apart). */
ALWAYS_INLINE void tile(int mr, float *y, size_t ldy, const uint32_t *xb, size_t ldx,
                        const uint32_t *panel, const float *b, int P, int nr) {
    __m512 f[BMR][2];
    for (int r = 0; r < mr; r++) f[r][0] = f[r][1] = _mm512_setzero_ps();
    for (int p = 0; p < P; p++) {
        __m512bh w0 = (__m512bh)_mm512_load_si512(panel + (size_t)p * BNR);
        __m512bh w1 = (__m512bh)_mm512_load_si512(panel + (size_t)p * BNR + 16);
        for (int r = 0; r < mr; r++) {
            __m512bh x = (__m512bh)_mm512_set1_epi32((int)xb[(size_t)r * ldx + p]);
            f[r][0] = _mm512_dpbf16_ps(f[r][0], w0, x);
            f[r][1] = _mm512_dpbf16_ps(f[r][1], w1, x);
        }
    }
    int n0 = nr < 16 ? nr : 16, n1 = nr - n0;
    __mmask16 m0 = (__mmask16)((1u << n0) - 1u), m1 = (__mmask16)((1u << n1) - 1u);
    for (int r = 0; r < mr; r++) {
        float *yr = y + (size_t)r * ldy;
        __m512 v0 = f[r][0], v1 = f[r][1];
        if (b) {
            v0 = _mm512_add_ps(v0, _mm512_maskz_loadu_ps(m0, b));
            v1 = _mm512_add_ps(v1, _mm512_maskz_loadu_ps(m1, b + 16));
        }
        _mm512_mask_storeu_ps(yr, m0, v0);
        _mm512_mask_storeu_ps(yr + 16, m1, v1);
    }
}

typedef void (*tile_fn)(float *, size_t, const uint32_t *, size_t, const uint32_t *,
                        const float *, int, int);
#define TILE(n)                                                                               \
    static void tile_##n(float *y, size_t ldy, const uint32_t *xb, size_t ldx,                \
                         const uint32_t *panel, const float *b, int P, int nr) {              \
        tile(n, y, ldy, xb, ldx, panel, b, P, nr);                                           \
    }
TILE(1) TILE(2) TILE(3) TILE(4) TILE(5) TILE(6) TILE(7) TILE(8)
static const tile_fn tiles[BMR + 1] = {NULL,   tile_1, tile_2, tile_3, tile_4,
                                       tile_5, tile_6, tile_7, tile_8};

/* ws: tg_matmul_w_scratch's "BF16 GEMM" (engine/dispatch.c) */
static void gemm_bf16(float *y, const float *x, const char *w, size_t ldw, const float *b, int T,
                      int in, int out, int o0, int o1, void *ws) {
    int P = (in + 1) / 2;
    size_t ldx = ((size_t)P + 15) / 16 * 16;
    char *p = ws;
    uint32_t *xb = tg_ws_take(&p, sizeof(uint32_t) * ldx * (size_t)T);
    uint32_t *panel = tg_ws_take(&p, sizeof(uint32_t) * (size_t)P * BNR);
    uint32_t *zero = tg_ws_take(&p, sizeof(uint32_t) * (ldx + 8));
    memset(zero, 0, sizeof(uint32_t) * (ldx + 8));
    for (int t = 0; t < T; t++) round_x(xb + (size_t)t * ldx, x + (size_t)t * in, in);
    const int ntiles = (T + BMR - 1) / BMR;
    const size_t row_lines = (ldw + 63) / 64;
    for (int o = o0; o < o1; o += BNR) {
        int nr = o1 - o < BNR ? o1 - o : BNR;
        pack_w(panel, w, ldw, o, nr, in, zero);
        /* the next panel's rows into L2 while this one computes, spread
         * over its token tiles: packing them straight from DRAM (strided
         * over 32 rows) cost a quarter of the GEMM at T = 128 */
        int nn = o1 - (o + nr) < BNR ? o1 - (o + nr) : BNR;
        size_t pf_lines = (size_t)nn * row_lines, pf_step = (pf_lines + ntiles - 1) / ntiles;
        const char *pf_row = w + (size_t)(o + nr) * ldw; /* row, line: the next to fetch */
        size_t pf_line = 0;
        for (int t = 0; t < T; t += BMR) {
            int mr = T - t < BMR ? T - t : BMR;
            for (size_t i = 0; i < pf_step && pf_lines; i++, pf_lines--) {
                _mm_prefetch(pf_row + pf_line * 64, _MM_HINT_T1);
                if (++pf_line == row_lines) pf_line = 0, pf_row += ldw;
            }
            tiles[mr](y + (size_t)t * out + o, (size_t)out, xb + (size_t)t * ldx, ldx, panel,
                      b ? b + o : NULL, P, nr);
        }
    }
}

static void matmul_bf16(float *y, const void *x, const void *w, size_t ldw, const float *b, int T,
                        int in, int out, int o0, int o1, void *ws) {
    if (T == 1) tg_gemv_half_avx512(0, y, x, w, ldw, b, in, o0, o1);
    else gemm_bf16(y, x, w, ldw, b, T, in, out, o0, o1, ws);
}

void tg_kernels_init_bf16_avx512bf16(tg_kernels *k) {
    k->matmul_w[TG_WTYPE_BF16] = matmul_bf16; /* tg_arch_bf16_act says so */
}
