/* attn_tmpl.h — the attention core of one head (scores, mix, decode, and the
 * tiled causal prefill), written once in the SIMD vocabulary of a
 * vec_<isa>.h and included after ops_tmpl.h (it uses FN and softmax). */
#include <float.h>
#include <math.h>

/* Keys per block of the prefill: one block's K and V tiles (PF_BK × HS each)
 * stay in L1/L2 while the PF_BQ queries of a block all visit them. */
#define PF_BQ 8
/* Unroll the accumulator loops fully, so the accumulator arrays become
 * registers instead of stack slots written back every step. */
#ifndef TG_UNROLL8
#define TG_UNROLL8 _Pragma("GCC unroll 8")
#endif
#define PF_BK 64

/* The decode kernels for a cache out of cache (the *_stream entries: a
 * decode step's weights pass has evicted it) prefetch each head's K and V
 * rows, one prefetch per 64 bytes KV_PREFETCH ahead of the rows being
 * read: more of the stream in flight than the hardware prefetchers keep
 * for these short (one head's n_pos rows) streams.
 * bench_kv16 1024 64 144 1 (gpt2-small's cache at its context, from DRAM),
 * Zen 5 AVX-512, CPU time: f32 3.1-3.7 -> 2.1-2.8 ms at 4 KB (2 and 8 KB
 * less); P = 100 (L3) 0.19-0.22 -> 0.12-0.15 ms; but from L1/L2
 * (bench_kernels --kernel attn) 10-15% slower. A prefetch never faults,
 * so asking past the cache's end is harmless. Not in the prefill, whose
 * blocks of keys are reused by a block of queries. */
#define KV_PREFETCH 4096
static inline __attribute__((always_inline)) void FN(prefetch_kv)(const void *p, size_t bytes) {
    for (size_t c = 0; c < bytes; c += 64) __builtin_prefetch((const char *)p + KV_PREFETCH + c, 0, 3);
}

/* Scores of one query against up to VL keys: lane r = q[HS] · row[r][HS].
 * Callers with fewer than VL keys repeat the last row and drop those lanes. */
static inline vf FN(dot_rows)(const float *q, const float *const row[VL], int hs) {
    vf acc[VL];
    for (int r = 0; r < VL; r++) acc[r] = vzero();
    const int nv = hs - hs % VL;
    for (int i = 0; i < nv; i += VL) {
        const vf qv = vld(q + i);
        for (int r = 0; r < VL; r++) acc[r] = vfma(qv, vld(row[r] + i), acc[r]);
    }
    if (nv < hs) {
        const vmask tail = vmask_first(hs % VL);
        const vf qv = vld_m(q + nv, tail);
        for (int r = 0; r < VL; r++) acc[r] = vfma(qv, vld_m(row[r] + nv, tail), acc[r]);
    }
    return vsum_lanes(acc);
}

/* VL elements of a K or V row at element i of p: floats, or IEEE halves
 * widened in the register (h16, a constant at each call: the f16 KV cache
 * read where it is, the same values as its widened copy). */
static inline __attribute__((always_inline)) vf FN(ld_kv)(const void *p, size_t i, const int h16) {
    return h16 ? vld_h((const uint16_t *)p + i) : vld((const float *)p + i);
}

/* dot_rows for VL keys stored back to back (ldk == hs), hs a constant at
 * each call site: the keys are one contiguous block at fixed offsets, so no
 * row pointers (which spill at VL = 16) and no loop. Same operations in the
 * same order as dot_rows, so the same bits (for f16 keys, h16: those of
 * the widened keys). */
static inline __attribute__((always_inline)) vf FN(dot_block)(const float *q, const void *k,
                                                             const int hs, const int h16) {
    vf acc[VL];
    for (int r = 0; r < VL; r++) acc[r] = vzero();
    for (int i = 0; i < hs; i += VL) {
        const vf qv = vld(q + i);
        for (int r = 0; r < VL; r++) acc[r] = vfma(qv, FN(ld_kv)(k, (size_t)r * hs + i, h16), acc[r]);
    }
    return vsum_lanes(acc);
}

/* Full blocks of VL contiguous keys (floats, or halves if h16): s[0, nb·VL);
 * pf (a constant): prefetch KV_PREFETCH ahead (the decode). */
static inline __attribute__((always_inline)) void
FN(scores_blocks)(float *s, const float *q, const void *k, int nb, const int hs, vf vscale,
                  const int h16, const int pf) {
    const size_t esz = h16 ? sizeof(uint16_t) : sizeof(float), blk = (size_t)VL * hs * esz;
    for (int b = 0; b < nb; b++) {
        const char *kb = (const char *)k + (size_t)b * blk;
        if (pf) FN(prefetch_kv)(kb, blk);
        vst(s + b * VL, vmul(FN(dot_block)(q, kb, hs, h16), vscale));
    }
}

/* Head size VL/2 (8 on AVX-512, a small Llama's heads), keys back to back:
 * two keys fill one vector, so a block of VL keys is VL/2 full loads, each
 * multiplied by q repeated in both halves, and one transposing reduction
 * (vsum_halves) gives the VL scores: s[0, nb·VL). */
static void FN(scores_halves)(float *s, const float *q, const float *k, int nb, vf vscale) {
    float qq[VL];
    for (int i = 0; i < VL / 2; i++) qq[i] = qq[i + VL / 2] = q[i];
    const vf qv = vld(qq);
    for (int b = 0; b < nb; b++) {
        const float *kb = k + (size_t)b * VL * (VL / 2);
        vf a[VL / 2];
        for (int m = 0; m < VL / 2; m++) a[m] = vmul(qv, vld(kb + m * VL));
        vst(s + b * VL, vmul(vsum_halves(a), vscale));
    }
}

/* s[P] = q[HS] · K[P,HS]ᵀ · scale; pf (a constant): prefetch K's rows ahead */
static inline __attribute__((always_inline)) void
FN(scores_any)(float *s, const float *q, const float *k, int n_pos, int hs, int ldk, float scale,
               const int pf) {
    const vf vscale = vset(scale);
    int j0 = 0;
    if (ldk == hs && 2 * hs == VL) {
        FN(scores_halves)(s, q, k, n_pos / VL, vscale);
        j0 = n_pos / VL * VL;
    } else if (ldk == hs) { /* the head-major KV cache: the common head sizes unrolled */
        const int nb = n_pos / VL;
        switch (hs) {
        case 8: /* whole vectors only (AVX2, NEON); AVX-512 took the branch above */
            if (8 % VL == 0) FN(scores_blocks)(s, q, k, nb, 8, vscale, 0, pf), j0 = nb * VL;
            break;
        case 16:
            if (16 % VL == 0) FN(scores_blocks)(s, q, k, nb, 16, vscale, 0, pf), j0 = nb * VL;
            break;
        case 32: FN(scores_blocks)(s, q, k, nb, 32, vscale, 0, pf), j0 = nb * VL; break;
        case 64: FN(scores_blocks)(s, q, k, nb, 64, vscale, 0, pf), j0 = nb * VL; break;
        case 128: FN(scores_blocks)(s, q, k, nb, 128, vscale, 0, pf), j0 = nb * VL; break;
        default: break;
        }
    }
    for (; j0 < n_pos; j0 += VL) {
        const int nk = n_pos - j0 < VL ? n_pos - j0 : VL;
        const float *row[VL];
        for (int r = 0; r < VL; r++) row[r] = k + (size_t)(j0 + (r < nk ? r : nk - 1)) * ldk;
        const vf sv = vmul(FN(dot_rows)(q, row, hs), vscale);
        if (nk == VL)
            vst(s + j0, sv);
        else
            vst_m(s + j0, vmask_first(nk), sv);
    }
}

static void FN(attn_scores)(float *s, const float *q, const float *k, int n_pos, int hs, int ldk,
                            float scale) {
    FN(scores_any)(s, q, k, n_pos, hs, ldk, scale, 0);
}
/* attn_scores for the decode: K's rows prefetched ahead (the same results) */
static void FN(attn_scores_pf)(float *s, const float *q, const float *k, int n_pos, int hs,
                               int ldk, float scale) {
    FN(scores_any)(s, q, k, n_pos, hs, ldk, scale, 1);
}

/* The head sizes whose whole blocks of keys scores_h16 reads as halves:
 * those attn_scores (ldk == hs) runs on scores_blocks, and 48 (stories15M),
 * where attn_scores' dot_rows does the same operations per key as
 * dot_block (whole vectors, no tail). */
static inline int FN(h16_scores_ok)(int hs) {
    if (2 * hs == VL) return 0;
    return hs == 32 || hs == 48 || hs == 64 || hs == 128 || (hs == 16 && 16 % VL == 0) ||
           (hs == 8 && 8 % VL == 0);
}

/* attn_scores' first nb·VL scores over f16 keys (rows hs apart, hs an
 * h16_scores_ok size), each key's halves widened in the register: the same
 * operations, so the same bits, as attn_scores on the widened keys; pf (a
 * constant): prefetched ahead. */
static inline __attribute__((always_inline)) void
FN(scores_h16)(float *s, const float *q, const uint16_t *k, int nb, int hs, float scale,
               const int pf) {
    const vf vscale = vset(scale);
    switch (hs) {
    case 8: FN(scores_blocks)(s, q, k, nb, 8, vscale, 1, pf); break;
    case 16: FN(scores_blocks)(s, q, k, nb, 16, vscale, 1, pf); break;
    case 32: FN(scores_blocks)(s, q, k, nb, 32, vscale, 1, pf); break;
    case 48: FN(scores_blocks)(s, q, k, nb, 48, vscale, 1, pf); break;
    case 64: FN(scores_blocks)(s, q, k, nb, 64, vscale, 1, pf); break;
    default: FN(scores_blocks)(s, q, k, nb, 128, vscale, 1, pf); break;
    }
}

/* Columns [0, nv·VL) of o (the last vector masked by `last`):
 *   o = (keep ? o·corr : 0) + Σ_j p[j] · V[j]   over n rows of V, ldk apart.
 * Always inlined with a constant nv, so the accumulators live in registers.
 * Narrow chunks would wait on the FMA latency (one chain per vector), so
 * they take nu = 8/nv rows of V at a time into nu separate sets of
 * accumulators, added together at the end. */
static inline __attribute__((always_inline)) void
FN(mix_cols)(float *o, const float *p, const void *v, int n, int ldk, const int nv,
             vmask last, const int full, float corr, int keep, const int h16, const int pf) {
    /* full (a constant): the last vector is whole, plain loads (AVX2's
     * masked load costs more than the FMA it feeds). h16 (a constant): V's
     * rows are IEEE halves, widened in the register; only with full. pf (a
     * constant): each row's columns prefetched KV_PREFETCH ahead. */
    const size_t esz = h16 ? sizeof(uint16_t) : sizeof(float);
#define MIX_LAST_LD(ptr) (full ? vld(ptr) : vld_m((ptr), last))
#define MIX_V_LAST(i) (full ? FN(ld_kv)(v, (i), h16) : vld_m((const float *)v + (i), last))
    enum { MAX_ACC = 8 };
    const int nu = MAX_ACC / nv;
    vf acc[MAX_ACC]; /* set a, vector u at a·nv + u (nu·nv <= 8: all registers) */
    TG_UNROLL8
    for (int i = 0; i < nu * nv; i++) acc[i] = vzero();
    if (keep) {
        const vf vcorr = vset(corr);
        TG_UNROLL8
        for (int u = 0; u < nv; u++)
            acc[u] = vmul(u == nv - 1 ? MIX_LAST_LD(o + u * VL) : vld(o + u * VL), vcorr);
    }
    int j = 0;
    for (; j + nu <= n; j += nu)
        TG_UNROLL8
        for (int a = 0; a < nu; a++) {
            const vf pj = vset(p[j + a]);
            const size_t vj = (size_t)(j + a) * ldk;
            if (pf) FN(prefetch_kv)((const char *)v + vj * esz, (size_t)nv * VL * esz);
            TG_UNROLL8
            for (int u = 0; u < nv - 1; u++)
                acc[a * nv + u] = vfma(pj, FN(ld_kv)(v, vj + u * VL, h16), acc[a * nv + u]);
            acc[a * nv + nv - 1] = vfma(pj, MIX_V_LAST(vj + (nv - 1) * VL), acc[a * nv + nv - 1]);
        }
    for (; j < n; j++) {
        const vf pj = vset(p[j]);
        const size_t vj = (size_t)j * ldk;
        if (pf) FN(prefetch_kv)((const char *)v + vj * esz, (size_t)nv * VL * esz);
        TG_UNROLL8
        for (int u = 0; u < nv - 1; u++) acc[u] = vfma(pj, FN(ld_kv)(v, vj + u * VL, h16), acc[u]);
        acc[nv - 1] = vfma(pj, MIX_V_LAST(vj + (nv - 1) * VL), acc[nv - 1]);
    }
    /* Pairwise tree over the sets. Loop bounds constant at each level (a
     * doubling induction variable defeats GCC's complete unrolling, and the
     * accumulators then live on the stack, stored at every step). */
    const int levels = nu >= 8 ? 3 : nu >= 4 ? 2 : nu >= 2 ? 1 : 0; /* log2(nu) */
    TG_UNROLL8
    for (int lv = 0; lv < levels; lv++) {
        /* the stride hoisted: a shift in the inner loop's header, checked
         * by UBSan, made it no longer a simple loop for `GCC unroll` */
        const int half = 1 << lv;
        TG_UNROLL8
        for (int a = 0; a < nu - half; a += 2 * half)
            TG_UNROLL8
            for (int u = 0; u < nv; u++)
                acc[a * nv + u] = vadd(acc[a * nv + u], acc[(a + half) * nv + u]);
    }
    TG_UNROLL8
    for (int u = 0; u < nv - 1; u++) vst(o + u * VL, acc[u]);
    if (full)
        vst(o + (nv - 1) * VL, acc[nv - 1]);
    else
        vst_m(o + (nv - 1) * VL, last, acc[nv - 1]);
#undef MIX_LAST_LD
#undef MIX_V_LAST
}

/* mix for head size VL/2 with rows back to back: o[VL/2] = (keep ? o·corr :
 * 0) + p[N] · V[N, VL/2], two rows of V per vector (p[j] broadcast to the
 * low half, p[j+1] to the high one), four chains, the halves added at the
 * end. */
static void FN(mix_halves)(float *o, const float *p, const float *v, int n, float corr,
                           int keep) {
    enum { HS2 = VL / 2 };
    const vmask half = vmask_first(HS2);
    vf a0 = keep ? vmul(vld_m(o, half), vset(corr)) : vzero();
    vf a1 = vzero(), a2 = vzero(), a3 = vzero();
    int j = 0;
    for (; j + 8 <= n; j += 8) {
        a0 = vfma(vbcast_pair(p + j), vld(v + (size_t)j * HS2), a0);
        a1 = vfma(vbcast_pair(p + j + 2), vld(v + (size_t)(j + 2) * HS2), a1);
        a2 = vfma(vbcast_pair(p + j + 4), vld(v + (size_t)(j + 4) * HS2), a2);
        a3 = vfma(vbcast_pair(p + j + 6), vld(v + (size_t)(j + 6) * HS2), a3);
    }
    for (; j + 2 <= n; j += 2) a0 = vfma(vbcast_pair(p + j), vld(v + (size_t)j * HS2), a0);
    if (j < n) a1 = vfma(vset(p[j]), vld_m(v + (size_t)j * HS2, half), a1);
    vst_m(o, half, vfold_halves(vadd(vadd(a0, a1), vadd(a2, a3))));
}

/* o[HS] = (keep ? o·corr : 0) + p[P] · V[P,HS], in column chunks of up to 8
 * vectors: each chunk is one pass over the rows of V. pf (a constant): V's
 * rows prefetched ahead (the decode). */
static inline __attribute__((always_inline)) void
FN(mix_any)(float *o, const float *p, const float *v, int n, int hs, int ldk, float corr,
            int keep, const int pf) {
    if (2 * hs == VL && ldk == hs) {
        FN(mix_halves)(o, p, v, n, corr, keep);
        return;
    }
    for (int c = 0; c < hs; c += 8 * VL) {
        const int w = hs - c < 8 * VL ? hs - c : 8 * VL;
        const int nv = (w + VL - 1) / VL;
        const vmask last = vmask_first(w - (nv - 1) * VL);
        float *oc = o + c;
        const float *vc = v + c;
        if (w == nv * VL) /* whole vectors: head sizes that are multiples of VL */
            switch (nv) {
            case 1: FN(mix_cols)(oc, p, vc, n, ldk, 1, last, 1, corr, keep, 0, pf); break;
            case 2: FN(mix_cols)(oc, p, vc, n, ldk, 2, last, 1, corr, keep, 0, pf); break;
            case 4: FN(mix_cols)(oc, p, vc, n, ldk, 4, last, 1, corr, keep, 0, pf); break;
            case 8: FN(mix_cols)(oc, p, vc, n, ldk, 8, last, 1, corr, keep, 0, pf); break;
            default: goto masked;
            }
        else
        masked:
            switch (nv) {
            case 1: FN(mix_cols)(oc, p, vc, n, ldk, 1, last, 0, corr, keep, 0, pf); break;
            case 2: FN(mix_cols)(oc, p, vc, n, ldk, 2, last, 0, corr, keep, 0, pf); break;
            case 3: FN(mix_cols)(oc, p, vc, n, ldk, 3, last, 0, corr, keep, 0, pf); break;
            case 4: FN(mix_cols)(oc, p, vc, n, ldk, 4, last, 0, corr, keep, 0, pf); break;
            case 5: FN(mix_cols)(oc, p, vc, n, ldk, 5, last, 0, corr, keep, 0, pf); break;
            case 6: FN(mix_cols)(oc, p, vc, n, ldk, 6, last, 0, corr, keep, 0, pf); break;
            case 7: FN(mix_cols)(oc, p, vc, n, ldk, 7, last, 0, corr, keep, 0, pf); break;
            default: FN(mix_cols)(oc, p, vc, n, ldk, 8, last, 0, corr, keep, 0, pf); break;
            }
    }
}

static void FN(mix)(float *o, const float *p, const float *v, int n, int hs, int ldk,
                    float corr, int keep) {
    FN(mix_any)(o, p, v, n, hs, ldk, corr, keep, 0);
}
/* mix for the decode: V's rows prefetched ahead (the same results) */
static void FN(mix_pf)(float *o, const float *p, const float *v, int n, int hs, int ldk,
                       float corr, int keep) {
    FN(mix_any)(o, p, v, n, hs, ldk, corr, keep, 1);
}

/* The head sizes whose V mix_h16 reads as halves: multiples of VL (mix's
 * chunks of 3, 5, 6 or 7 whole vectors take its masked loads under an
 * all-lanes mask: the same values, the same FMAs as plain loads). */
static inline int FN(h16_mix_ok)(int hs) { return hs % VL == 0; }

/* mix over f16 V rows (hs apart, hs an h16_mix_ok size), each row's halves
 * widened in the register: the same operations, so the same bits, as mix
 * on the widened rows; pf (a constant): prefetched ahead. */
static inline __attribute__((always_inline)) void
FN(mix_h16)(float *o, const float *p, const uint16_t *v, int n, int hs, float corr, int keep,
            const int pf) {
    const vmask last = vmask_first(VL);
    for (int c = 0; c < hs; c += 8 * VL) {
        const int nv = (hs - c) / VL < 8 ? (hs - c) / VL : 8;
        float *oc = o + c;
        const uint16_t *vc = v + c;
        switch (nv) {
        case 1: FN(mix_cols)(oc, p, vc, n, hs, 1, last, 1, corr, keep, 1, pf); break;
        case 2: FN(mix_cols)(oc, p, vc, n, hs, 2, last, 1, corr, keep, 1, pf); break;
        case 3: FN(mix_cols)(oc, p, vc, n, hs, 3, last, 1, corr, keep, 1, pf); break;
        case 4: FN(mix_cols)(oc, p, vc, n, hs, 4, last, 1, corr, keep, 1, pf); break;
        case 5: FN(mix_cols)(oc, p, vc, n, hs, 5, last, 1, corr, keep, 1, pf); break;
        case 6: FN(mix_cols)(oc, p, vc, n, hs, 6, last, 1, corr, keep, 1, pf); break;
        case 7: FN(mix_cols)(oc, p, vc, n, hs, 7, last, 1, corr, keep, 1, pf); break;
        default: FN(mix_cols)(oc, p, vc, n, hs, 8, last, 1, corr, keep, 1, pf); break;
        }
    }
}

/* o[HS] = p[P] · V[P,HS] */
static void FN(attn_mix)(float *o, const float *p, const float *v, int n_pos, int hs,
                         int ldk) {
    FN(mix)(o, p, v, n_pos, hs, ldk, 0.0f, 0);
}

/* o[HS] = softmax(q·Kᵀ·scale) · V over P positions; p[P] = the weights;
 * pf (a constant): K and V prefetched ahead (attn_decode_stream) */
static inline __attribute__((always_inline)) void
FN(decode_any)(float *o, float *p, const float *q, const float *k, const float *v, int n_pos,
               int hs, int ldk, float scale, const int pf) {
    (pf ? FN(attn_scores_pf) : FN(attn_scores))(p, q, k, n_pos, hs, ldk, scale);
    FN(softmax)(p, n_pos);
    (pf ? FN(mix_pf) : FN(mix))(o, p, v, n_pos, hs, ldk, 0.0f, 0);
}
static void FN(attn_decode)(float *o, float *p, const float *q, const float *k,
                            const float *v, int n_pos, int hs, int ldk, float scale) {
    FN(decode_any)(o, p, q, k, v, n_pos, hs, ldk, scale, 0);
}
static void FN(attn_decode_stream)(float *o, float *p, const float *q, const float *k,
                                   const float *v, int n_pos, int hs, int ldk, float scale) {
    FN(decode_any)(o, p, q, k, v, n_pos, hs, ldk, scale, 1);
}

/* s[N] = exp(s - m) in place; returns Σ s. m is finite. */
static float FN(exp_sum)(float *s, int n, float m) {
    const vf vm = vset(m);
    const int nv = n - n % VL;
    vf acc = vzero();
    for (int i = 0; i < nv; i += VL) {
        vf e = vexp(vsub(vld(s + i), vm));
        vst(s + i, e);
        acc = vadd(acc, e);
    }
    if (nv < n) {
        const vmask tail = vmask_first(n % VL);
        vf e = vexp(vsub(vld_m_or(s + nv, tail, vset(-INFINITY)), vm));
        vst_m(s + nv, tail, e);
        acc = vadd(acc, e);
    }
    return vsum(acc);
}

/* max of s[N], NaN skipped; -inf if none */
static float FN(max_of)(const float *s, int n) {
    const vf ninf = vset(-INFINITY);
    const int nv = n - n % VL;
    vf acc = ninf;
    for (int i = 0; i < nv; i += VL) acc = vmax(acc, vld(s + i));
    if (nv < n) acc = vmax(acc, vld_m_or(s + nv, vmask_first(n % VL), ninf));
    return vhmax(acc);
}

/* y[N] = IEEE halves x[N] widened (whole vectors, then one at a time) */
static void FN(h2f_row)(float *y, const uint16_t *x, size_t n) {
    size_t i = 0;
    for (; i + VL <= n; i += VL) vst(y + i, vld_h(x + i));
    for (; i < n; i++) y[i] = tg_f16_to_f32(x[i]);
}

/* y[N] = x[N] as IEEE halves, round to nearest even */
static void FN(f32_to_f16)(uint16_t *y, const float *x, int n) {
    int i = 0;
    for (; i + VL <= n; i += VL) vst_h(y + i, vld(x + i));
    for (; i < n; i++) y[i] = tg_f32_to_f16(x[i]);
}

/* T causal queries, one at a time (head sizes above PF_HS_MAX, whose
 * transposed tiles would not fit the stack); query t (row t of q, ldq apart)
 * sees keys 0..pos0+t.
 * Queries go in blocks of PF_BQ and keys in blocks of PF_BK; for each
 * (query, key block) the running max m, sum l and output row are rescaled
 * by exp(m_old - m_new) (the online softmax), so only PF_BK scores exist at
 * a time and each K/V tile is reused by every query of the block. */
/* kh, vh non-NULL (a constant at each call): K and V are IEEE halves, rows
 * hs apart, and each key block is widened into ws (K then V, PF_BK·hs
 * floats each) once for the PF_BQ queries that visit it. */
static inline __attribute__((always_inline)) void
FN(prefill_rows)(float *o, const float *q, const float *k, const float *v, const uint16_t *kh,
                 const uint16_t *vh, float *ws, int T, int pos0, int hs, int ldq, int ldk,
                 int ldo, float scale) {
    float s[PF_BK], m[PF_BQ], l[PF_BQ];
    for (int t0 = 0; t0 < T; t0 += PF_BQ) {
        const int nq = T - t0 < PF_BQ ? T - t0 : PF_BQ;
        for (int r = 0; r < nq; r++) {
            m[r] = -INFINITY;
            l[r] = 0.0f;
        }
        const int kend = pos0 + t0 + nq; /* keys seen by the block's last query */
        for (int j0 = 0; j0 < kend; j0 += PF_BK) {
            const float *kb = k + (size_t)j0 * ldk, *vb = v + (size_t)j0 * ldk;
            if (kh) {
                const size_t nb = (size_t)(kend - j0 < PF_BK ? kend - j0 : PF_BK) * hs;
                FN(h2f_row)(ws, kh + (size_t)j0 * hs, nb);
                FN(h2f_row)(ws + (size_t)PF_BK * hs, vh + (size_t)j0 * hs, nb);
                kb = ws;
                vb = ws + (size_t)PF_BK * hs;
            }
            for (int r = 0; r < nq; r++) {
                const int t = t0 + r;
                const int seen = pos0 + t + 1 - j0; /* keys of this block query t sees */
                if (seen <= 0) continue;
                const int nk = seen < PF_BK ? seen : PF_BK;
                const float *qt = q + (size_t)t * ldq;
                float *ot = o + (size_t)t * ldo;

                FN(attn_scores)(s, qt, kb, nk, hs, ldk, scale);
                const float bm = FN(max_of)(s, nk);
                const float m_new = bm > m[r] ? bm : m[r];
                /* all -inf so far: exponents relative to 0 give exp(-inf) = 0 */
                const float m_ref = m_new == -INFINITY ? 0.0f : m_new;
                const float corr = expf(m[r] - m_ref);
                l[r] = l[r] * corr + FN(exp_sum)(s, nk, m_ref);
                FN(mix)(ot, s, vb, nk, hs, ldk, corr, j0 > 0);
                m[r] = m_new;
            }
        }
        for (int r = 0; r < nq; r++) {
            float *ot = o + (size_t)(t0 + r) * ldo;
            const vf inv = vset(l[r] > 0.0f ? 1.0f / l[r] : 0.0f);
            const int nv = hs - hs % VL;
            for (int i = 0; i < nv; i += VL) vst(ot + i, vmul(vld(ot + i), inv));
            if (nv < hs) {
                const vmask tail = vmask_first(hs % VL);
                vst_m(ot + nv, tail, vmul(vld_m(ot + nv, tail), inv));
            }
        }
    }
}

/* ---- The prefill tile: queries in the lanes ----------------------------------
 * A tile is PF_TQ = PF_QV·VL queries, query r of the tile in lane r. Its
 * queries are transposed once into Qt[HS][TQ]; its outputs accumulate
 * transposed in Ot[HS][TQ]. For each block of up to PF_BK keys:
 *   S[j]  = scale · Σ_d K[j][d] · Qt[d]            (a vector of TQ scores)
 *   m, l  = the running max and sum of each lane (the online softmax)
 *   P[j]  = exp(S[j] - m),  corr = exp(m_old - m)
 *   Ot[d] = Ot[d] · corr + Σ_j V[j][d] · P[j]
 * Every FMA is a broadcast element of K or V times a vector of queries, in
 * register blocks of PF_KR keys (or PF_DR columns) × PF_QV vectors: each
 * K/V element is read once per tile instead of once per query, and nothing
 * is reduced across lanes. Every operation is lane-wise, so a query's bits
 * do not depend on its lane or on the other queries of its tile: keys a
 * lane does not see (the causal diagonal, or blocks past its last key)
 * score -inf, weigh exp(-inf) = 0, and are left out of its FMAs by a
 * select, so for that lane they change nothing (corr = exp(0) = 1). Block
 * boundaries are absolute key positions (multiples of PF_BK). */
#ifndef PF_QV
#define PF_QV (16 / VL) /* vectors of queries per tile: 16 queries */
#endif
#define PF_TQ (PF_QV * VL)
/* accumulator registers of the FMA blocks (zmm: 32 registers, ymm: 16, NEON: 32) */
#ifndef PF_ACC
#define PF_ACC (VL == 16 ? 16 : VL == 8 ? 12 : 24)
#endif
#define PF_KR (PF_ACC / PF_QV) /* keys per block of the scores */
#define PF_DR (PF_ACC / PF_QV) /* columns per block of the mix */
#define PF_HS_MAX 256          /* head sizes the tile takes: Qt and Ot on the stack */
#define PF_UNROLL _Pragma("GCC unroll 32")

/* s[n][TQ] = scale · K[n, HS] · Qtᵀ (rows of K ldk apart), n a constant:
 * lane r of row i = q_r · k_i, one FMA chain per lane over d ascending. */
static inline __attribute__((always_inline)) void
FN(tile_qk)(float *s, const float *qt, const float *k, const int ldk, const int hs, const int n,
            vf vscale) {
    vf acc[PF_KR * PF_QV];
    PF_UNROLL
    for (int i = 0; i < n * PF_QV; i++) acc[i] = vzero();
    for (int d = 0; d < hs; d++) {
        vf qv[PF_QV];
        PF_UNROLL
        for (int u = 0; u < PF_QV; u++) qv[u] = vld(qt + (size_t)d * PF_TQ + u * VL);
        PF_UNROLL
        for (int i = 0; i < n; i++) {
            const vf kb = vset(k[(size_t)i * ldk + d]);
            PF_UNROLL
            for (int u = 0; u < PF_QV; u++)
                acc[i * PF_QV + u] = vfma(kb, qv[u], acc[i * PF_QV + u]);
        }
    }
    PF_UNROLL
    for (int i = 0; i < n * PF_QV; i++) vst(s + (size_t)i * VL, vmul(acc[i], vscale));
}

/* s[nk][TQ]: the scores of keys [0, nk) in groups of PF_KR; a last partial
 * group is redone as the whole group ending at nk (the same bits for the
 * keys computed twice), smaller blocks only when nk < PF_KR. */
static inline __attribute__((always_inline)) void
FN(tile_scores_ld)(float *s, const float *qt, const float *k, const int ldk, const int hs,
                   int nk, vf vscale) {
    int j = 0;
    for (; j + PF_KR <= nk; j += PF_KR)
        FN(tile_qk)(s + (size_t)j * PF_TQ, qt, k + (size_t)j * ldk, ldk, hs, PF_KR, vscale);
    if (j == nk) return;
    if (nk >= PF_KR) {
        j = nk - PF_KR;
        FN(tile_qk)(s + (size_t)j * PF_TQ, qt, k + (size_t)j * ldk, ldk, hs, PF_KR, vscale);
        return;
    }
    if (PF_KR > 8 && nk - j >= 8)
        FN(tile_qk)(s + (size_t)j * PF_TQ, qt, k + (size_t)j * ldk, ldk, hs, 8, vscale), j += 8;
    if (PF_KR > 4 && nk - j >= 4)
        FN(tile_qk)(s + (size_t)j * PF_TQ, qt, k + (size_t)j * ldk, ldk, hs, 4, vscale), j += 4;
    if (nk - j >= 2)
        FN(tile_qk)(s + (size_t)j * PF_TQ, qt, k + (size_t)j * ldk, ldk, hs, 2, vscale), j += 2;
    if (nk - j >= 1) FN(tile_qk)(s + (size_t)j * PF_TQ, qt, k + (size_t)j * ldk, ldk, hs, 1, vscale);
}

/* tile_scores_ld with the row stride a constant for the head-major cache's
 * common head sizes (one pointer for all PF_KR rows, no spilled row bases) */
static void FN(tile_scores)(float *s, const float *qt, const float *k, int ldk, int hs, int nk,
                            vf vscale) {
    if (ldk == hs) switch (hs) {
        case 32: FN(tile_scores_ld)(s, qt, k, 32, 32, nk, vscale); return;
        case 64: FN(tile_scores_ld)(s, qt, k, 64, 64, nk, vscale); return;
        case 128: FN(tile_scores_ld)(s, qt, k, 128, 128, nk, vscale); return;
        default: break;
        }
    FN(tile_scores_ld)(s, qt, k, ldk, hs, nk, vscale);
}

/* Lane mask of the lanes of vector u that do not see a key `hidden` lanes
 * hide (lanes r < hidden of the tile). */
static inline vmask FN(tile_hidden)(int hidden, int u) {
    int c = hidden - u * VL;
    return vmask_first(c < 0 ? 0 : c > VL ? VL : c);
}

/* Columns [0, n) of Ot (ot, rows TQ apart), n a constant:
 *   ot = ot·corr + Σ_j v[j][0, n) ⊗ p[j]   keys j < nk, rows ldk apart,
 * keys j >= na only in the lanes r >= j - diag (the others keep their sum). */
static inline __attribute__((always_inline)) void
FN(tile_pv)(float *ot, const float *p, const float *v, int ldk, int na, int nk, int diag,
            const vf *corr, const int n) {
    vf acc[PF_DR * PF_QV];
    PF_UNROLL
    for (int i = 0; i < n; i++)
        PF_UNROLL
        for (int u = 0; u < PF_QV; u++)
            acc[i * PF_QV + u] = vmul(vld(ot + (size_t)i * PF_TQ + u * VL), corr[u]);
    for (int j = 0; j < na; j++) {
        const float *vj = v + (size_t)j * ldk;
        vf pj[PF_QV];
        PF_UNROLL
        for (int u = 0; u < PF_QV; u++) pj[u] = vld(p + (size_t)j * PF_TQ + u * VL);
        PF_UNROLL
        for (int i = 0; i < n; i++) {
            const vf vb = vset(vj[i]);
            PF_UNROLL
            for (int u = 0; u < PF_QV; u++)
                acc[i * PF_QV + u] = vfma(vb, pj[u], acc[i * PF_QV + u]);
        }
    }
    for (int j = na; j < nk; j++) {
        const float *vj = v + (size_t)j * ldk;
        vf pj[PF_QV];
        vmask hide[PF_QV];
        PF_UNROLL
        for (int u = 0; u < PF_QV; u++) {
            pj[u] = vld(p + (size_t)j * PF_TQ + u * VL);
            hide[u] = FN(tile_hidden)(j - diag, u);
        }
        PF_UNROLL
        for (int i = 0; i < n; i++) {
            const vf vb = vset(vj[i]);
            PF_UNROLL
            for (int u = 0; u < PF_QV; u++)
                acc[i * PF_QV + u] = vsel(hide[u], acc[i * PF_QV + u],
                                          vfma(vb, pj[u], acc[i * PF_QV + u]));
        }
    }
    PF_UNROLL
    for (int i = 0; i < n; i++)
        PF_UNROLL
        for (int u = 0; u < PF_QV; u++) vst(ot + (size_t)i * PF_TQ + u * VL, acc[i * PF_QV + u]);
}

/* All HS columns of Ot, PF_DR at a time, then 8/4/2/1 for the rest */
static void FN(tile_mix)(float *ot, const float *p, const float *v, int ldk, int hs, int na,
                         int nk, int diag, const vf *corr) {
    int d = 0;
    for (; d + PF_DR <= hs; d += PF_DR)
        FN(tile_pv)(ot + (size_t)d * PF_TQ, p, v + d, ldk, na, nk, diag, corr, PF_DR);
    if (PF_DR > 8 && hs - d >= 8)
        FN(tile_pv)(ot + (size_t)d * PF_TQ, p, v + d, ldk, na, nk, diag, corr, 8), d += 8;
    if (PF_DR > 4 && hs - d >= 4)
        FN(tile_pv)(ot + (size_t)d * PF_TQ, p, v + d, ldk, na, nk, diag, corr, 4), d += 4;
    if (hs - d >= 2) FN(tile_pv)(ot + (size_t)d * PF_TQ, p, v + d, ldk, na, nk, diag, corr, 2), d += 2;
    if (hs - d >= 1) FN(tile_pv)(ot + (size_t)d * PF_TQ, p, v + d, ldk, na, nk, diag, corr, 1);
}

/* The online softmax of one block, lane-wise: s[nk][TQ] scores in, weights
 * out; m, l the running max and sum, corr the factor for the old sums. */
static void FN(tile_softmax)(float *s, int nk, vf *m, vf *l, vf *corr) {
    for (int u = 0; u < PF_QV; u++) {
        float *su = s + u * VL;
        vf mb = vset(-INFINITY);
        for (int j = 0; j < nk; j++) mb = vmax(mb, vld(su + (size_t)j * PF_TQ));
        const vf m_new = vmax(m[u], mb);
        /* a lane with only -inf so far: exponents relative to -FLT_MAX give
         * exp(-inf) = 0 for its weights and its (zero) old sums */
        const vf m_ref = vmax(m_new, vset(-FLT_MAX));
        corr[u] = vexp(vsub(m[u], m_ref));
        vf b0 = vzero(), b1 = vzero(), b2 = vzero(), b3 = vzero();
        int j = 0;
        for (; j + 4 <= nk; j += 4) {
            float *sj = su + (size_t)j * PF_TQ;
            const vf e0 = vexp(vsub(vld(sj), m_ref)), e1 = vexp(vsub(vld(sj + PF_TQ), m_ref));
            const vf e2 = vexp(vsub(vld(sj + 2 * PF_TQ), m_ref));
            const vf e3 = vexp(vsub(vld(sj + 3 * PF_TQ), m_ref));
            vst(sj, e0), vst(sj + PF_TQ, e1), vst(sj + 2 * PF_TQ, e2), vst(sj + 3 * PF_TQ, e3);
            b0 = vadd(b0, e0), b1 = vadd(b1, e1), b2 = vadd(b2, e2), b3 = vadd(b3, e3);
        }
        for (; j < nk; j++) { /* keys j ≡ 0, 1, 2 (mod 4) of the block: sums b0, b1, b2 */
            float *sj = su + (size_t)j * PF_TQ;
            const vf e = vexp(vsub(vld(sj), m_ref));
            vst(sj, e);
            if (j % 4 == 0) b0 = vadd(b0, e);
            else if (j % 4 == 1) b1 = vadd(b1, e);
            else b2 = vadd(b2, e);
        }
        l[u] = vadd(vmul(l[u], corr[u]), vadd(vadd(b0, b1), vadd(b2, b3)));
        m[u] = m_new;
    }
}

/* qt[d][r] = q[r][d] (rows ldq apart) for the tile's nq queries, 0 for
 * r >= nq (zero: at least hs zeros); out: o[r][d] = ot[d][r] (rows ldo
 * apart) for r < nq. With the vocabulary's VTR8 (x86), 8 × 8 blocks
 * transposed in registers when hs % 8 == 0 (and, out, a whole tile);
 * element by element otherwise (same values either way: plain copies). */
#ifdef VTR8
#define PF_TR8 1
#else /* NEON: element by element only; the blocks below are dead code */
#define PF_TR8 0
#define VTR8(dst, ldd, r, k) ((void)(dst), (void)(ldd), (void)(r), (void)(k))
#endif
static inline __attribute__((always_inline)) void
FN(tile_q_in)(float *qt, const float *q, int nq, int hs, int ldq, const float *zero) {
    if (PF_TR8 && hs % 8 == 0) {
        for (int r0 = 0; r0 < PF_TQ; r0 += 8) {
            const float *r[8];
            for (int i = 0; i < 8; i++) r[i] = r0 + i < nq ? q + (size_t)(r0 + i) * ldq : zero;
            for (int d = 0; d < hs; d += 8) VTR8(qt + (size_t)d * PF_TQ + r0, PF_TQ, r, d);
        }
        return;
    }
    for (int r = 0; r < PF_TQ; r++)
        for (int d = 0; d < hs; d++) qt[(size_t)d * PF_TQ + r] = r < nq ? q[(size_t)r * ldq + d] : 0.0f;
}
static inline __attribute__((always_inline)) void
FN(tile_o_out)(float *o, const float *ot, int nq, int hs, int ldo) {
    if (PF_TR8 && hs % 8 == 0 && nq == PF_TQ) {
        for (int d0 = 0; d0 < hs; d0 += 8) {
            const float *r[8];
            for (int i = 0; i < 8; i++) r[i] = ot + (size_t)(d0 + i) * PF_TQ;
            for (int r0 = 0; r0 < PF_TQ; r0 += 8) VTR8(o + (size_t)r0 * ldo + d0, (size_t)ldo, r, r0);
        }
        return;
    }
    for (int r = 0; r < nq; r++)
        for (int d = 0; d < hs; d++) o[(size_t)r * ldo + d] = ot[(size_t)d * PF_TQ + r];
}

/* T causal queries in tiles of PF_TQ (hs <= PF_HS_MAX); kh, vh as in
 * prefill_rows. */
static inline __attribute__((always_inline)) void
FN(prefill_tiles)(float *o, const float *q, const float *k, const float *v, const uint16_t *kh,
                  const uint16_t *vh, float *ws, int T, int pos0, int hs, int ldq, int ldk,
                  int ldo, float scale) {
    float qt[PF_HS_MAX * PF_TQ] __attribute__((aligned(64)));
    float ot[PF_HS_MAX * PF_TQ] __attribute__((aligned(64)));
    float s[PF_BK * PF_TQ] __attribute__((aligned(64)));
    const vf vscale = vset(scale);
    for (int t0 = 0; t0 < T; t0 += PF_TQ) {
        const int nq = T - t0 < PF_TQ ? T - t0 : PF_TQ;
        for (size_t i = 0; i < (size_t)hs * PF_TQ; i += VL) vst(ot + i, vzero());
        FN(tile_q_in)(qt, q + (size_t)t0 * ldq, nq, hs, ldq, ot); /* ot: zeros for r >= nq */
        vf m[PF_QV], l[PF_QV], corr[PF_QV];
        for (int u = 0; u < PF_QV; u++) m[u] = vset(-INFINITY), l[u] = vzero();
        const int base = pos0 + t0;  /* lane r sees keys 0..base + r */
        const int kend = base + nq; /* keys the last query sees */
        for (int j0 = 0; j0 < kend; j0 += PF_BK) {
            const int nk = kend - j0 < PF_BK ? kend - j0 : PF_BK;
            const float *kb = k + (size_t)j0 * ldk, *vb = v + (size_t)j0 * ldk;
            if (kh) {
                FN(h2f_row)(ws, kh + (size_t)j0 * hs, (size_t)nk * hs);
                FN(h2f_row)(ws + (size_t)PF_BK * hs, vh + (size_t)j0 * hs, (size_t)nk * hs);
                kb = ws;
                vb = ws + (size_t)PF_BK * hs;
            }
            /* block key j is seen by lanes r >= j - diag: by all for j < na */
            const int diag = base - j0;
            const int na = diag + 1 < 0 ? 0 : diag + 1 > nk ? nk : diag + 1;
            FN(tile_scores)(s, qt, kb, ldk, hs, nk, vscale);
            for (int j = na; j < nk; j++)
                for (int u = 0; u < PF_QV; u++) {
                    float *sj = s + (size_t)j * PF_TQ + u * VL;
                    vst(sj, vsel(FN(tile_hidden)(j - diag, u), vset(-INFINITY), vld(sj)));
                }
            FN(tile_softmax)(s, nk, m, l, corr);
            FN(tile_mix)(ot, s, vb, ldk, hs, na, nk, diag, corr);
        }
        /* o[t0 + r] = Ot[:, r] / l_r (0 where l_r = 0: every key masked) */
        float inv[PF_TQ];
        for (int u = 0; u < PF_QV; u++) vst(inv + u * VL, l[u]);
        for (int r = 0; r < PF_TQ; r++) inv[r] = inv[r] > 0.0f ? 1.0f / inv[r] : 0.0f;
        for (int u = 0; u < PF_QV; u++) {
            const vf vi = vld(inv + u * VL);
            for (int d = 0; d < hs; d++) {
                float *od = ot + (size_t)d * PF_TQ + u * VL;
                vst(od, vmul(vld(od), vi));
            }
        }
        FN(tile_o_out)(o + (size_t)t0 * ldo, ot, nq, hs, ldo);
    }
}

static inline __attribute__((always_inline)) void
FN(prefill_core)(float *o, const float *q, const float *k, const float *v, const uint16_t *kh,
                 const uint16_t *vh, float *ws, int T, int pos0, int hs, int ldq, int ldk,
                 int ldo, float scale) {
    if (hs <= PF_HS_MAX)
        FN(prefill_tiles)(o, q, k, v, kh, vh, ws, T, pos0, hs, ldq, ldk, ldo, scale);
    else
        FN(prefill_rows)(o, q, k, v, kh, vh, ws, T, pos0, hs, ldq, ldk, ldo, scale);
}

static void FN(attn_prefill)(float *o, const float *q, const float *k, const float *v,
                             int T, int pos0, int hs, int ldq, int ldk, int ldo,
                             float scale) {
    FN(prefill_core)(o, q, k, v, NULL, NULL, NULL, T, pos0, hs, ldq, ldk, ldo, scale);
}

/* attn_prefill over an f16 cache (rows hs apart), blocks widened into ws */
static void FN(attn_prefill_f16)(float *o, const float *q, const uint16_t *k, const uint16_t *v,
                                 int T, int pos0, int hs, int ldq, int ldo, float scale,
                                 float *ws) {
    FN(prefill_core)(o, q, NULL, NULL, k, v, ws, T, pos0, hs, ldq, hs, ldo, scale);
}
