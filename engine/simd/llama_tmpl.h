/* llama_tmpl.h — the Llama-family kernels (RMSNorm, SiLU·mul, RoPE,
 * grouped-query decode attention), written once in the SIMD vocabulary of
 * a vec_<isa>.h; included after ops_tmpl.h and attn_tmpl.h (it uses FN,
 * softmax, attn_scores and mix). The C references are in
 * engine/ref/kernels_ref.c. */

/* y[T,N] = x / sqrt(mean(x²) + eps) · g */
static void FN(rmsnorm)(float *y, const float *x, const float *g, int T, int n, float eps) {
    const vmask tail = vmask_first(n % VL);
    const int nv = n - n % VL;
    for (int t = 0; t < T; t++) {
        const float *xt = x + (size_t)t * n;
        float *yt = y + (size_t)t * n;
        vf a0 = vzero(), a1 = vzero(), a2 = vzero(), a3 = vzero();
        int i = 0;
        for (; i + 4 * VL <= nv; i += 4 * VL) {
            vf x0 = vld(xt + i), x1 = vld(xt + i + VL), x2 = vld(xt + i + 2 * VL),
               x3 = vld(xt + i + 3 * VL);
            a0 = vfma(x0, x0, a0);
            a1 = vfma(x1, x1, a1);
            a2 = vfma(x2, x2, a2);
            a3 = vfma(x3, x3, a3);
        }
        for (; i < nv; i += VL) {
            vf x0 = vld(xt + i);
            a0 = vfma(x0, x0, a0);
        }
        if (nv < n) {
            vf x0 = vld_m(xt + nv, tail);
            a1 = vfma(x0, x0, a1);
        }
        const float ss = vsum(vadd(vadd(a0, a1), vadd(a2, a3)));
        const vf r = vset(1.0f / sqrtf(ss / (float)n + eps));
        for (i = 0; i < nv; i += VL) vst(yt + i, vmul(vmul(vld(xt + i), r), vld(g + i)));
        if (nv < n) vst_m(yt + nv, tail, vmul(vmul(vld_m(xt + nv, tail), r), vld_m(g + nv, tail)));
    }
}

/* silu(a) · b = a / (1 + e^(-a)) · b of one vector */
static inline vf FN(silu_mul_v)(vf a, vf b) {
    return vmul(vdiv(a, vadd(vset(1.0f), vexp(vsub(vzero(), a)))), b);
}

/* y[N] = silu(a) · b (y may alias a or b) */
static void FN(silu_mul)(float *y, const float *a, const float *b, int n) {
    const int nv = n - n % VL;
    for (int i = 0; i < nv; i += VL) vst(y + i, FN(silu_mul_v)(vld(a + i), vld(b + i)));
    if (nv < n) {
        const vmask tail = vmask_first(n % VL);
        vst_m(y + nv, tail, FN(silu_mul_v)(vld_m(a + nv, tail), vld_m(b + nv, tail)));
    }
}

/* RoPE of n_head heads x[n_head, HS] at one position (cs, sn: [D/2]).
 * Halves: pairs (i, i + D/2) are two aligned runs, plain vector math.
 * Adjacent: pairs (2i, 2i+1) sit in neighbouring lanes; with the angles
 * spread to c2 = (c0, c0, c1, c1, ...) and s2 = (-s0, s0, -s1, s1, ...)
 * (built once per call, shared by the heads) a pair is
 *   y = x · c2 + swap_pairs(x) · s2. */
static void FN(rope)(float *x, const float *cs, const float *sn, int n_head, int hs, int d,
                     int halves) {
    const int half = d / 2;
    if (halves) {
        const int nv = half - half % VL;
        const vmask tail = vmask_first(half % VL);
        for (int h = 0; h < n_head; h++) {
            float *a = x + (size_t)h * hs, *b = a + half;
            for (int i = 0; i < nv; i += VL) {
                vf x0 = vld(a + i), x1 = vld(b + i), c = vld(cs + i), s = vld(sn + i);
                vst(a + i, vsub(vmul(x0, c), vmul(x1, s)));
                vst(b + i, vfma(x0, s, vmul(x1, c)));
            }
            if (nv < half) {
                vf x0 = vld_m(a + nv, tail), x1 = vld_m(b + nv, tail);
                vf c = vld_m(cs + nv, tail), s = vld_m(sn + nv, tail);
                vst_m(a + nv, tail, vsub(vmul(x0, c), vmul(x1, s)));
                vst_m(b + nv, tail, vfma(x0, s, vmul(x1, c)));
            }
        }
        return;
    }
    float c2[1024], s2[1024]; /* d <= HS <= 1024 (tg_llama_config_check) */
    for (int i = 0; i < half; i++) {
        c2[2 * i] = c2[2 * i + 1] = cs[i];
        s2[2 * i] = -sn[i];
        s2[2 * i + 1] = sn[i];
    }
    const int nv = d - d % VL;
    const vmask tail = vmask_first(d % VL); /* d and VL even: whole pairs */
    for (int h = 0; h < n_head; h++) {
        float *xh = x + (size_t)h * hs;
        for (int i = 0; i < nv; i += VL) {
            vf v = vld(xh + i);
            vst(xh + i, vfma(vswap_pairs(v), vld(s2 + i), vmul(v, vld(c2 + i))));
        }
        if (nv < d) {
            vf v = vld_m(xh + nv, tail);
            vst_m(xh + nv, tail, vfma(vswap_pairs(v), vld_m(s2 + nv, tail), vmul(v, vld_m(c2 + nv, tail))));
        }
    }
}

/* Keys per chunk of the grouped decode: a chunk's K (then V) rows stay in
 * L1 while the G queries of the group use them, so each row comes from
 * memory once per group. The mix accumulates chunk by chunk (its sums, so
 * its bits, depend on the chunk); a score does not, and 64 is a multiple of
 * every VL, so the scores may take longer chunks than the mix with the same
 * bits. Small heads take long chunks: fewer calls, each with fewer tails
 * (stories260K, HS = 8: one scores call per query up to 512 keys).
 *   scores, f32 K: up to 4096 floats (16 KB) of K, at least 64 keys
 *   scores, f16 K: also at most 2·TG_KV16_BLOCK keys (TG_KV16_WS(hs) floats
 *                  of scratch hold 2·TG_KV16_BLOCK widened rows)
 *   mix (f32 and f16 alike): 2·TG_KV16_BLOCK keys for HS <= 32, else 64 */
#define GQA_CH 64
static inline int FN(gqa_score_ch)(int hs) {
    const int c = (4096 / hs) & ~(GQA_CH - 1);
    return c > GQA_CH ? c : GQA_CH;
}
static inline int FN(gqa_mix_ch)(int hs) { return hs <= 32 ? 2 * TG_KV16_BLOCK : GQA_CH; }

/* G query heads q[G,HS] over one K/V head (rows hs apart): p[G,P] weights,
 * o[G,HS] outputs. Scores chunk by chunk for every query, softmax per
 * query, then the mix chunk by chunk (accumulated in place). pf (a
 * constant): K and V prefetched ahead (the _stream entry). */
static inline __attribute__((always_inline)) void
FN(gqa_any)(float *o, float *p, const float *q, const float *k, const float *v, int n_pos, int hs,
            int g, float scale, const int pf) {
    const int sch = FN(gqa_score_ch)(hs), mch = FN(gqa_mix_ch)(hs);
    for (int j0 = 0; j0 < n_pos; j0 += sch) {
        const int nk = n_pos - j0 < sch ? n_pos - j0 : sch;
        for (int r = 0; r < g; r++) {
            float *pr = p + (size_t)r * n_pos + j0;
            const float *qr = q + (size_t)r * hs, *kc = k + (size_t)j0 * hs;
            (pf ? FN(attn_scores_pf) : FN(attn_scores))(pr, qr, kc, nk, hs, hs, scale);
        }
    }
    for (int r = 0; r < g; r++) FN(softmax)(p + (size_t)r * n_pos, n_pos);
    for (int j0 = 0; j0 < n_pos; j0 += mch) {
        const int nk = n_pos - j0 < mch ? n_pos - j0 : mch;
        for (int r = 0; r < g; r++) {
            float *orow = o + (size_t)r * hs;
            const float *pr = p + (size_t)r * n_pos + j0, *vc = v + (size_t)j0 * hs;
            (pf ? FN(mix_pf) : FN(mix))(orow, pr, vc, nk, hs, hs, 1.0f, j0 > 0);
        }
    }
}
static void FN(attn_decode_gqa)(float *o, float *p, const float *q, const float *k,
                                const float *v, int n_pos, int hs, int g, float scale) {
    FN(gqa_any)(o, p, q, k, v, n_pos, hs, g, scale, 0);
}
static void FN(attn_decode_gqa_stream)(float *o, float *p, const float *q, const float *k,
                                       const float *v, int n_pos, int hs, int g, float scale) {
    FN(gqa_any)(o, p, q, k, v, n_pos, hs, g, scale, 1);
}

/* attn_decode_gqa over an f16 cache, with attn_decode_gqa's chunks and
 * order, so the same bits as attn_decode_gqa on the widened K/V. The
 * common head sizes (h16_scores_ok, h16_mix_ok) read the halves where they
 * are, widened in the register inside the score and mix loops; only the
 * last n % VL keys of a chunk's scores, and every row of other head sizes,
 * are widened into ws first (at most 2·TG_KV16_BLOCK rows at a time). pf
 * (a constant): the halves read in place prefetched ahead. */
static inline __attribute__((always_inline)) void
FN(gqa_f16_any)(float *o, float *p, const float *q, const uint16_t *k, const uint16_t *v,
                int n_pos, int hs, int g, float scale, float *ws, const int pf) {
    _Static_assert(GQA_CH <= 2 * TG_KV16_BLOCK, "a chunk fits the f16 scratch");
    const int sch0 = FN(gqa_score_ch)(hs), mch = FN(gqa_mix_ch)(hs);
    const int sch = sch0 < 2 * TG_KV16_BLOCK ? sch0 : 2 * TG_KV16_BLOCK;
    const int ks = FN(h16_scores_ok)(hs), vs = FN(h16_mix_ok)(hs);
    for (int j0 = 0; j0 < n_pos; j0 += sch) {
        const int nk = n_pos - j0 < sch ? n_pos - j0 : sch;
        const int nd = ks ? nk / VL * VL : 0; /* keys read as halves */
        const uint16_t *kc = k + (size_t)j0 * hs;
        if (nd < nk) FN(h2f_row)(ws, kc + (size_t)nd * hs, (size_t)(nk - nd) * hs);
        for (int r = 0; r < g; r++) {
            float *pr = p + (size_t)r * n_pos + j0;
            const float *qr = q + (size_t)r * hs;
            if (nd) FN(scores_h16)(pr, qr, kc, nd / VL, hs, scale, pf);
            if (nd < nk) FN(attn_scores)(pr + nd, qr, ws, nk - nd, hs, hs, scale);
        }
    }
    for (int r = 0; r < g; r++) FN(softmax)(p + (size_t)r * n_pos, n_pos);
    for (int j0 = 0; j0 < n_pos; j0 += mch) {
        const int nk = n_pos - j0 < mch ? n_pos - j0 : mch;
        const uint16_t *vc = v + (size_t)j0 * hs;
        if (!vs) FN(h2f_row)(ws, vc, (size_t)nk * hs);
        for (int r = 0; r < g; r++) {
            float *orow = o + (size_t)r * hs;
            const float *pr = p + (size_t)r * n_pos + j0;
            if (vs)
                FN(mix_h16)(orow, pr, vc, nk, hs, 1.0f, j0 > 0, pf);
            else
                FN(mix)(orow, pr, ws, nk, hs, hs, 1.0f, j0 > 0);
        }
    }
}
static void FN(attn_decode_gqa_f16)(float *o, float *p, const float *q, const uint16_t *k,
                                    const uint16_t *v, int n_pos, int hs, int g, float scale,
                                    float *ws) {
    FN(gqa_f16_any)(o, p, q, k, v, n_pos, hs, g, scale, ws, 0);
}
static void FN(attn_decode_gqa_f16_stream)(float *o, float *p, const float *q, const uint16_t *k,
                                           const uint16_t *v, int n_pos, int hs, int g,
                                           float scale, float *ws) {
    FN(gqa_f16_any)(o, p, q, k, v, n_pos, hs, g, scale, ws, 1);
}
