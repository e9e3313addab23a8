/* matmul_tmpl.h — the x86 matmul written once over a small SIMD vocabulary
 * (ggml's pattern). Included by matmul_avx2.c and matmul_avx512.c, each
 * built with its own ISA flags, after defining:
 *
 *   vec, vmask              the vector type (LANES floats) and a lane mask
 *   LANES                   floats per vector
 *   vzero() vload(p) vstore(p,v) vfma(a,b,c)=a*b+c vadd(a,b) vbcast(p)
 *   vmask_n(n)              lanes 0..n-1 on (0 <= n <= LANES)
 *   vload_m(p,m) vstore_m(p,v,m)   masked (no access to masked-off lanes)
 *   vload_h(h16,p)          LANES IEEE halves (h16) or bfloat16 at p as f32
 *   hsum(v)                 horizontal sum in a fixed order
 *   MR                      token rows per GEMM micro-tile (NR = 2·LANES columns)
 *   MT_ROWS                 weight rows per few_tokens step (MT_ROWS·T accumulators)
 *
 * Y[T,OUT] = X[T,IN] · W[OUT,IN]ᵀ + b, columns o0..o1-1 only.
 *
 *   T == 1  GEMV, memory-bound: one weight row at a time (one sequential
 *           stream); two accumulators hide the FMA latency.
 *   T 2..8  few_tokens: up to 4 tokens share each load of w (no packing).
 *   T > 8   GEMM, Goto/BLIS style: X is packed per (MC × KC) block into
 *           MR-row micro-panels, W per (KC × NR) panel (transposed so that a
 *           k step is one contiguous NR-float row); an MR × NR register tile
 *           accumulates over k with broadcasts of x and loads of w.
 *
 * The same paths take F16 and BF16 weights for T > 1 (matmul_half_by_shape:
 * the typed table's prefill where the CPU has no instruction that
 * multiplies halves): each weight is widened exactly to f32 where it is
 * loaded, in few_tokens' vector loads and into the GEMM's packed W panels.
 * So a half matrix costs the f32 GEMM's time with half of W's bytes, and
 * gives the bits of the f32 matmul on the widened matrix.
 *
 * Why results do not depend on o0/o1 (or the thread count): in the GEMV and
 * in few_tokens every row is summed by the same sequence of operations
 * whichever row group or tail path it falls in; in the GEMM every output is one lane of one
 * accumulator, fed k = 0..IN-1 in order (later K blocks reload the partial
 * sum from y), then + b. Padding lanes and padding rows never mix in. */
#include <stdalign.h>
#include <string.h>

#include "engine/x86/half_avx.h"
#include "engine/x86/tr8_avx.h"
#include "engine/x86/x86.h"

#define NR (2 * LANES)
#define KC 256 /* k depth of a packed block: a W panel is KC·NR floats (L1) */
#define MC 128 /* token rows per packed X block: MC·KC floats (L2) */
/* F16/BF16 W: token rows per X block. W's panels are widened once per
 * block, so twice MC halves that work; the block (256 KB) comes from the
 * caller's scratch, not the stack. Zen 5, bench_kernels matmul_w f16 gpt2
 * T = 512 (load 5-6, two rounds): speedup over our f32 1.04-1.07x at 128
 * tokens, 1.04-1.09x at 256, 1.08-1.10x at 512 (AVX-512); plain AVX2
 * 1.02-1.03x, 1.04-1.06x, 1.01-1.06x. */
#define MC_HALF 256

#define ALWAYS_INLINE static inline __attribute__((always_inline))
/* unroll the row loops early, so the accumulator arrays become registers */
#define UNROLL _Pragma("GCC unroll 16")

/* W's element type in few_tokens and the GEMM: f32, or IEEE half / bfloat16
 * widened as it is loaded; ldw and offsets count elements */
enum { TW_F32, TW_F16, TW_BF16 };
#define TW_SIZE(wt) ((wt) == TW_F32 ? 4 : 2)

/* row pointer: element i of W */
ALWAYS_INLINE const void *w_at(int wt, const void *w, size_t i) {
    return (const char *)w + i * TW_SIZE(wt);
}

/* LANES weights from element i of w, as f32 */
ALWAYS_INLINE vec wload(int wt, const void *w, size_t i) {
    if (wt == TW_F32) return vload((const float *)w + i);
    return vload_h(wt == TW_F16, (const uint16_t *)w + i);
}

/* the n < LANES weights from element i of w, zeros after them (vload_m's
 * lanes): nothing past them is read */
ALWAYS_INLINE vec wload_tail(int wt, const void *w, size_t i, int n, vmask m) {
    if (wt == TW_F32) return vload_m((const float *)w + i, m);
    uint16_t t[LANES] = {0};
    memcpy(t, (const uint16_t *)w + i, (size_t)n * sizeof(uint16_t));
    return vload_h(wt == TW_F16, t);
}

/* element k of a row of W, as f32 */
ALWAYS_INLINE float w_elem(int wt, const void *row, int k) {
    if (wt == TW_F32) return ((const float *)row)[k];
    return tg_half_ps1(wt == TW_F16, ((const uint16_t *)row)[k]);
}

/* ---- GEMV: y[OUT] = W[OUT,IN] · x[IN] + b ------------------------------------ */

/* One row's partial sums: vector k of each group of four goes to a[k];
 * the remaining full vectors and then the masked tail to a[0], a[1], ...
 * in turn (a fixed order), returned as one vector a0 + a1 + a2 + a3. Four
 * chains: a 2 KB row (mlp_down of a 128-wide model) is 128 dependent FMAs
 * on one chain of two, which out-of-order execution overlaps with the next
 * row only partly. */
ALWAYS_INLINE vec gemv_row_acc(const float *x, const float *w, int in) {
    vec a0 = vzero(), a1 = vzero(), a2 = vzero(), a3 = vzero();
    int i = 0;
    for (; i + 4 * LANES <= in; i += 4 * LANES) {
        a0 = vfma(vload(w + i), vload(x + i), a0);
        a1 = vfma(vload(w + i + LANES), vload(x + i + LANES), a1);
        a2 = vfma(vload(w + i + 2 * LANES), vload(x + i + 2 * LANES), a2);
        a3 = vfma(vload(w + i + 3 * LANES), vload(x + i + 3 * LANES), a3);
    }
    if (i + LANES <= in) {
        a0 = vfma(vload(w + i), vload(x + i), a0);
        i += LANES;
    }
    if (i + LANES <= in) {
        a1 = vfma(vload(w + i), vload(x + i), a1);
        i += LANES;
    }
    if (i + LANES <= in) {
        a2 = vfma(vload(w + i), vload(x + i), a2);
        i += LANES;
    }
    if (i < in) { /* tail: 1..LANES-1 floats */
        vmask m = vmask_n(in - i);
        a3 = vfma(vload_m(w + i, m), vload_m(x + i, m), a3);
    }
    return vadd(vadd(a0, a1), vadd(a2, a3));
}

ALWAYS_INLINE void gemv_row(float *y, const float *x, const float *w, const float *b, int in) {
    float s = hsum(gemv_row_acc(x, w, in));
    *y = b ? s + *b : s;
}

/* y[o0..o1) of one token row, one weight row after the other: the weights
 * are then read as one sequential stream, which the hardware prefetchers
 * follow best. Measured on Zen 4 (bench/README.md), against the earlier
 * 4-8 rows sharing each load of x (with software prefetch of the next
 * rows): from L3 (the tiny model) 54 -> 95 GB/s, from DRAM 21 -> 23-25
 * GB/s; software prefetching of any distance or hint only lost.
 * Rows in aligned groups of 8 (row index a multiple of 8, all 8 inside the
 * range) keep that order of loads but add up their 8 partial-sum vectors
 * in one transposing reduction (hsum8) instead of 8 horizontal sums, which
 * cost as much as the FMAs of a 64-wide row (a Llama's short rows: the
 * stories260K decode spent ~45% of its GEMV time in hsum). Whether a row
 * is in a group depends only on its index and OUT (ranges start at
 * multiples of TG_ROW_BLOCK and end at one or at OUT), so its value does
 * not depend on o0/o1. */
ALWAYS_INLINE void gemv_body(float *y, const float *x, const float *w, const float *b,
                             const int in, int o0, int o1) {
    int o = o0;
    for (; o < o1 && (o & 7); o++) gemv_row(y + o, x, w + (size_t)o * in, b ? b + o : NULL, in);
    for (; o + 8 <= o1; o += 8) {
        vec acc[8];
        UNROLL
        for (int r = 0; r < 8; r++) acc[r] = gemv_row_acc(x, w + (size_t)(o + r) * in, in);
        __m256 s = hsum8(acc);
        if (b) s = _mm256_add_ps(s, _mm256_loadu_ps(b + o));
        _mm256_storeu_ps(y + o, s);
    }
    for (; o < o1; o++) gemv_row(y + o, x, w + (size_t)o * in, b ? b + o : NULL, in);
}

/* The short rows of small models with IN a constant: the row loops unroll
 * fully and the 8 rows of a group share x's loads (x stays in registers),
 * where a variable IN reloads x for every row (stories260K's 64-wide rows:
 * as many loads of x as of w). Same operations in the same order, so the
 * same bits as the general case. */
static void gemv(float *y, const float *x, const float *w, const float *b, int in, int o0,
                 int o1) {
    switch (in) {
    case 64: gemv_body(y, x, w, b, 64, o0, o1); break;
    case 128: gemv_body(y, x, w, b, 128, o0, o1); break;
    default: gemv_body(y, x, w, b, in, o0, o1); break;
    }
}

/* ---- Few tokens: Y[T,OUT] for T = 2..FEW_T_MAX ------------------------------ */

/* For a few tokens the GEMM would pack (transpose) every W panel for a
 * handful of FMAs per weight; here each weight vector is loaded once and
 * used by all T tokens. One accumulator per (row, token), vector steps of
 * LANES then a masked tail, then hsum: the same operations for every row
 * whether it comes in a group of MT_ROWS or alone, so no row's value
 * depends on o0/o1. */
#define MT_MAX 4
/* prefetch the next row group into L2 while it is at most 512 KB (half of
 * Zen 4's L2) */
#define FEW_PF_MAX_IN (512 * 1024 / (MT_ROWS * (int)sizeof(float)))
ALWAYS_INLINE void few_rows(int wt, int R, int T, int pf, float *y, size_t ldy, const float *x,
                            const void *w, size_t ldw, const float *b, int in) {
    vec acc[MT_ROWS][MT_MAX];
    UNROLL
    for (int r = 0; r < R; r++) {
        UNROLL
        for (int t = 0; t < T; t++) acc[r][t] = vzero();
    }
    int i = 0;
    for (; i + LANES <= in; i += LANES) {
        vec xv[MT_MAX];
        UNROLL
        for (int t = 0; t < T; t++) xv[t] = vload(x + (size_t)t * in + i);
        if (pf) {
            UNROLL
            for (int r = 0; r < R; r++)
                if ((size_t)i * TW_SIZE(wt) % 64 == 0) /* one prefetch per 64-byte line */
                    _mm_prefetch((const char *)w_at(wt, w, (size_t)(r + R) * ldw + (size_t)i), _MM_HINT_T1);
        }
        UNROLL
        for (int r = 0; r < R; r++) {
            vec wv = wload(wt, w, (size_t)r * ldw + (size_t)i);
            UNROLL
            for (int t = 0; t < T; t++) acc[r][t] = vfma(wv, xv[t], acc[r][t]);
        }
    }
    if (i < in) { /* tail: 1..LANES-1 floats */
        vmask m = vmask_n(in - i);
        vec xv[MT_MAX];
        UNROLL
        for (int t = 0; t < T; t++) xv[t] = vload_m(x + (size_t)t * in + i, m);
        UNROLL
        for (int r = 0; r < R; r++) {
            vec wv = wload_tail(wt, w, (size_t)r * ldw + (size_t)i, in - i, m);
            UNROLL
            for (int t = 0; t < T; t++) acc[r][t] = vfma(wv, xv[t], acc[r][t]);
        }
    }
    UNROLL
    for (int r = 0; r < R; r++) {
        UNROLL
        for (int t = 0; t < T; t++) {
            float v = hsum(acc[r][t]);
            y[t * ldy + r] = b ? v + b[r] : v;
        }
    }
}

/* Y[T, o0..o1) for a constant T (one instantiation per T and wt) */
ALWAYS_INLINE void few_tokens_t(int wt, int T, float *y, const float *x, const void *w,
                                size_t ldw, const float *b, int in, int out, int o0, int o1) {
    const int R = MT_ROWS;
    int o = o0;
    if (in <= FEW_PF_MAX_IN)
        for (; o + 2 * R <= o1; o += R)
            few_rows(wt, R, T, 1, y + o, (size_t)out, x, w_at(wt, w, (size_t)o * ldw), ldw,
                     b ? b + o : NULL, in);
    for (; o + R <= o1; o += R)
        few_rows(wt, R, T, 0, y + o, (size_t)out, x, w_at(wt, w, (size_t)o * ldw), ldw,
                 b ? b + o : NULL, in);
    for (; o < o1; o++) /* tail: 1..MT_ROWS-1 rows */
        few_rows(wt, 1, T, 0, y + o, (size_t)out, x, w_at(wt, w, (size_t)o * ldw), ldw,
                 b ? b + o : NULL, in);
}

/* T = 2..FEW_T_MAX tokens in chunks of 2..MT_MAX (W streamed once per
 * chunk). Measured against the packed GEMM: 2-3x faster at T = 2..4, 1.3-2x
 * at T = 5..8 (twice over W still beats packing it); by T = 17 the GEMM
 * wins. */
#define FEW_T_MAX (2 * MT_MAX)
ALWAYS_INLINE void few_tokens_w(int wt, float *y, const float *x, const void *w, size_t ldw,
                                const float *b, int T, int in, int out, int o0, int o1) {
    while (T > 0) {
        int n = T <= MT_MAX ? T : T - MT_MAX >= 2 ? MT_MAX : MT_MAX - 1; /* never leave 1 */
        switch (n) {
        case 2: few_tokens_t(wt, 2, y, x, w, ldw, b, in, out, o0, o1); break;
        case 3: few_tokens_t(wt, 3, y, x, w, ldw, b, in, out, o0, o1); break;
        default: few_tokens_t(wt, 4, y, x, w, ldw, b, in, out, o0, o1); break;
        }
        y += (size_t)n * out, x += (size_t)n * in, T -= n;
    }
}

/* ---- GEMM packing ------------------------------------------------------------ */

/* xp[ceil(mc/MR)][kc][MR] = X[t0.., k0..]; rows past mc are zero. */
static void pack_x(float *xp, const float *x, int in, int mc, int kc) {
    for (int t0 = 0; t0 < mc; t0 += MR, xp += (size_t)kc * MR) {
        int mr = mc - t0 < MR ? mc - t0 : MR;
        for (int r = 0; r < MR; r++) {
            const float *xr = x + (size_t)(t0 + r) * in;
            if (r < mr)
                for (int k = 0; k < kc; k++) xp[(size_t)k * MR + r] = xr[k];
            else
                for (int k = 0; k < kc; k++) xp[(size_t)k * MR + r] = 0.0f;
        }
    }
}

/* wp[kc][NR] = W[o.., k0..]ᵀ for nr <= NR rows of W (ldw elements apart, of
 * type wt, widened to f32); columns nr..NR-1 are zero. */
ALWAYS_INLINE void pack_w_t(int wt, float *wp, const void *w, size_t ldw, int nr, int kc) {
    const int h16 = wt == TW_F16;
    for (int j0 = 0; j0 < NR; j0 += 8) {
        const void *r[8];
        int live = 0;
        for (int j = 0; j < 8; j++) {
            int row = j0 + j;
            r[j] = row < nr ? w_at(wt, w, (size_t)row * ldw) : NULL;
            live += row < nr;
        }
        if (!live) {
            for (int k = 0; k < kc; k++) memset(wp + (size_t)k * NR + j0, 0, 8 * sizeof(float));
            continue;
        }
        int k = 0;
        if (live == 8 && wt == TW_F32) {
            const float *rf[8];
            for (int j = 0; j < 8; j++) rf[j] = r[j];
            for (; k + 8 <= kc; k += 8) tg_tr8_avx(wp + (size_t)k * NR + j0, NR, rf, k);
        } else if (live == 8) {
            const uint16_t *rh[8];
            for (int j = 0; j < 8; j++) rh[j] = r[j];
            for (; k + 8 <= kc; k += 8)
                tg_tr8_avx_regs(wp + (size_t)k * NR + j0, NR, tg_half8_ps(h16, rh[0] + k),
                                tg_half8_ps(h16, rh[1] + k), tg_half8_ps(h16, rh[2] + k),
                                tg_half8_ps(h16, rh[3] + k), tg_half8_ps(h16, rh[4] + k),
                                tg_half8_ps(h16, rh[5] + k), tg_half8_ps(h16, rh[6] + k),
                                tg_half8_ps(h16, rh[7] + k));
        }
        for (; k < kc; k++) /* tail: k steps past the last 8, or a partial group */
            for (int j = 0; j < 8; j++) wp[(size_t)k * NR + j0 + j] = r[j] ? w_elem(wt, r[j], k) : 0.0f;
    }
}

/* ---- GEMM micro-kernel -------------------------------------------------------- */

/* y[mr, nr] (ldy apart) (+)= xp[kc][MR] · wp[kc][NR]; `first` starts from 0
 * instead of y; b (when given) is added at the end. nr < NR columns go through
 * masked loads/stores, so nothing past column nr is touched. */
ALWAYS_INLINE void ukernel(int mr, const float *xp, const float *wp, int kc, float *y,
                           size_t ldy, int nr, int first, const float *b) {
    vec c0[MR], c1[MR];
    vmask m0 = vmask_n(nr < LANES ? nr : LANES), m1 = vmask_n(nr > LANES ? nr - LANES : 0);
    int full = nr == NR;
    if (first) {
        UNROLL
        for (int r = 0; r < mr; r++) c0[r] = c1[r] = vzero();
    } else if (full) {
        UNROLL
        for (int r = 0; r < mr; r++) {
            c0[r] = vload(y + r * ldy);
            c1[r] = vload(y + r * ldy + LANES);
        }
    } else {
        UNROLL
        for (int r = 0; r < mr; r++) {
            c0[r] = vload_m(y + r * ldy, m0);
            c1[r] = vload_m(y + r * ldy + LANES, m1);
        }
    }
    for (int k = 0; k < kc; k++, xp += MR, wp += NR) {
        vec w0 = vload(wp), w1 = vload(wp + LANES);
        UNROLL
        for (int r = 0; r < mr; r++) {
            vec xb = vbcast(xp + r);
            c0[r] = vfma(xb, w0, c0[r]);
            c1[r] = vfma(xb, w1, c1[r]);
        }
    }
    if (b) {
        vec b0 = full ? vload(b) : vload_m(b, m0);
        vec b1 = full ? vload(b + LANES) : vload_m(b + LANES, m1);
        UNROLL
        for (int r = 0; r < mr; r++) {
            c0[r] = vadd(c0[r], b0);
            c1[r] = vadd(c1[r], b1);
        }
    }
    if (full) {
        UNROLL
        for (int r = 0; r < mr; r++) {
            vstore(y + r * ldy, c0[r]);
            vstore(y + r * ldy + LANES, c1[r]);
        }
    } else {
        UNROLL
        for (int r = 0; r < mr; r++) {
            vstore_m(y + r * ldy, c0[r], m0);
            vstore_m(y + r * ldy + LANES, c1[r], m1);
        }
    }
}

/* One call per row count, so each is compiled with mr a constant and its
 * accumulators in registers. */
#define UK(n)                                                                            \
    static void ukernel_##n(const float *xp, const float *wp, int kc, float *y, size_t ldy, \
                            int nr, int first, const float *b) {                         \
        ukernel(n, xp, wp, kc, y, ldy, nr, first, b);                                    \
    }
typedef void (*ukernel_fn)(const float *, const float *, int, float *, size_t, int, int,
                           const float *);

/* ---- GEMM driver ---------------------------------------------------------------- */

/* xp: room for X blocks of mcb tokens, (mcb + MR - 1) / MR · MR · KC floats */
ALWAYS_INLINE void gemm_w(int wt, int mcb, const ukernel_fn uk[MR + 1], float *y, const float *x,
                          const void *w, size_t ldw, const float *b, int T, int in, int out,
                          int o0, int o1, float *xp) {
    alignas(64) float wp[KC * NR];
    for (int t0 = 0; t0 < T; t0 += mcb) {
        int mc = T - t0 < mcb ? T - t0 : mcb;
        for (int k0 = 0; k0 < in; k0 += KC) {
            int kc = in - k0 < KC ? in - k0 : KC;
            int first = k0 == 0, last = k0 + kc == in;
            pack_x(xp, x + (size_t)t0 * in + k0, in, mc, kc);
            for (int o = o0; o < o1; o += NR) {
                int nr = o1 - o < NR ? o1 - o : NR;
                pack_w_t(wt, wp, w_at(wt, w, (size_t)o * ldw + (size_t)k0), ldw, nr, kc);
                const float *bo = last && b ? b + o : NULL;
                for (int t = 0; t < mc; t += MR) {
                    int mr = mc - t < MR ? mc - t : MR;
                    uk[mr](xp + (size_t)t * kc, wp, kc, y + (size_t)(t0 + t) * out + o,
                           (size_t)out, nr, first, bo);
                }
            }
        }
    }
}

/* the f32 instances (and below the half ones), each a function of its own */
static void few_tokens(float *y, const float *x, const float *w, const float *b, int T, int in,
                       int out, int o0, int o1) {
    few_tokens_w(TW_F32, y, x, w, (size_t)in, b, T, in, out, o0, o1);
}
static void gemm(const ukernel_fn uk[MR + 1], float *y, const float *x, const float *w,
                 const float *b, int T, int in, int out, int o0, int o1) {
    alignas(64) float xp[(MC + MR - 1) / MR * MR * KC]; /* MR-row panels, the last padded */
    gemm_w(TW_F32, MC, uk, y, x, w, (size_t)in, b, T, in, out, o0, o1, xp);
}

/* Y[T,OUT] = X[T,IN] · W[OUT,IN]ᵀ + b, columns o0..o1-1: the path by token
 * count (GEMV, few tokens sharing each weight load, packed GEMM), with the
 * ISA's microkernels uk[1..MR]. */
static void matmul_by_shape(const ukernel_fn uk[MR + 1], float *y, const float *x, const float *w,
                            const float *b, int T, int in, int out, int o0, int o1) {
    if (in == 0) { /* an empty sum: y = b */
        tg_bias_rows(y, b, T, out, o0, o1);
    } else if (T == 1) {
        gemv(y, x, w, b, in, o0, o1);
    } else if (T <= FEW_T_MAX) {
        few_tokens(y, x, w, b, T, in, out, o0, o1);
    } else {
        gemm(uk, y, x, w, b, T, in, out, o0, o1);
    }
}

/* The same for T > 1 with W in IEEE half (h16) or bfloat16, rows ldw bytes
 * apart: every output gets the operations matmul_by_shape gives it on the
 * widened matrix (same path for the same T, same order), so the same bits. */
static void few_tokens_f16(float *y, const float *x, const void *w, size_t ldw, const float *b,
                           int T, int in, int out, int o0, int o1) {
    few_tokens_w(TW_F16, y, x, w, ldw, b, T, in, out, o0, o1);
}
static void few_tokens_bf16(float *y, const float *x, const void *w, size_t ldw, const float *b,
                            int T, int in, int out, int o0, int o1) {
    few_tokens_w(TW_BF16, y, x, w, ldw, b, T, in, out, o0, o1);
}
static void gemm_f16(const ukernel_fn uk[MR + 1], float *y, const float *x, const void *w,
                     size_t ldw, const float *b, int T, int in, int out, int o0, int o1, float *xp) {
    gemm_w(TW_F16, MC_HALF, uk, y, x, w, ldw, b, T, in, out, o0, o1, xp);
}
static void gemm_bf16(const ukernel_fn uk[MR + 1], float *y, const float *x, const void *w,
                      size_t ldw, const float *b, int T, int in, int out, int o0, int o1, float *xp) {
    gemm_w(TW_BF16, MC_HALF, uk, y, x, w, ldw, b, T, in, out, o0, o1, xp);
}

/* T > 1; ws: tg_matmul_w_scratch's "x86 F16/BF16" bytes (engine/dispatch.c) */
static void matmul_half_by_shape(const ukernel_fn uk[MR + 1], int h16, float *y, const float *x,
                                 const void *w, size_t ldw, const float *b, int T, int in, int out,
                                 int o0, int o1, void *ws) {
    size_t ld = ldw / sizeof(uint16_t);
    if (in == 0) { /* an empty sum: y = b */
        tg_bias_rows(y, b, T, out, o0, o1);
    } else if (T <= FEW_T_MAX) {
        if (h16) few_tokens_f16(y, x, w, ld, b, T, in, out, o0, o1);
        else few_tokens_bf16(y, x, w, ld, b, T, in, out, o0, o1);
    } else {
        char *p = ws;
        float *xp = tg_ws_take(&p, sizeof(float) * (size_t)((MC_HALF + MR - 1) / MR * MR) * KC);
        if (h16) gemm_f16(uk, y, x, w, ld, b, T, in, out, o0, o1, xp);
        else gemm_bf16(uk, y, x, w, ld, b, T, in, out, o0, o1, xp);
    }
}
