/* qgemv_small_tmpl.h — the Q8_0/Q4_0 decode GEMV for short rows (IN <= 512,
 * at most GEMV_SMALL_NB blocks: the tiny models' 128- and 512-wide
 * matmuls), included by quant_tmpl.h (DOT32, gemv_block, the unsigned
 * weight conventions and their corrections are that file's).
 *
 *   y[o0..o1) = W[OUT, IN] · x + b,  x as Q8_0 blocks [IN/32]
 *
 * At IN = 128 a row is 4 blocks, so gemv_q's per-row fixed costs (building
 * the scale vector through masked word permutes, a horizontal sum, a scalar
 * store) were most of the work. Here:
 *   - four rows per pass, each with two f32 chains (even and odd blocks),
 *     x's blocks and per-lane corrections shared from L1;
 *   - a row's nb block scales d_w are fetched by ceil(nb/8) groups of 16-byte
 *     loads + word blends (load j at byte j·(bs - 2) holds block j's scale
 *     as its word j; no byte outside the row is read), times d_x once, and
 *     each block's scale taken from that register by vpermps;
 *   - one horizontal reduction for the four rows (hadd tree), one 4-float
 *     store.
 * A row's arithmetic is the same whichever pass, tail or range it falls
 * in (the tail passes zero rows in the unused slots, and x + 0 is exact),
 * so results do not depend on o0/o1. */

#define GEMV_SMALL_NB 16 /* blocks per row: IN <= 512 */
#define SMALL_CHUNK 32   /* rows whose scales are computed ahead (a multiple of 4) */

/* words 0..n-1 = the f16 scales of n (1..8) consecutive blocks at p,
 * stride bs; the other words are whatever load 0 read */
ALWAYS_INLINE __m128i small_scales_f16(const char *p, int bs, int n) {
    const size_t st = (size_t)bs - 2;
#define SS_LOAD(j) _mm_loadu_si128((const __m128i *)(p + (j) * st))
    __m128i h = SS_LOAD(0);
    if (n > 1) h = _mm_blend_epi16(h, SS_LOAD(1), 0x02);
    if (n > 2) h = _mm_blend_epi16(h, SS_LOAD(2), 0x04);
    if (n > 3) h = _mm_blend_epi16(h, SS_LOAD(3), 0x08);
    if (n > 4) h = _mm_blend_epi16(h, SS_LOAD(4), 0x10);
    if (n > 5) h = _mm_blend_epi16(h, SS_LOAD(5), 0x20);
    if (n > 6) h = _mm_blend_epi16(h, SS_LOAD(6), 0x40);
    if (n > 7) h = _mm_blend_epi16(h, SS_LOAD(7), 0x80);
#undef SS_LOAD
    return h;
}

/* the x side of a call, prepared once: quants (aligned), per-lane
 * corrections (unsigned weights), scales d_x (zero past nb) */
typedef struct small_x {
    _Alignas(64) __m256i q[GEMV_SMALL_NB], c[GEMV_SMALL_NB];
    _Alignas(64) float d[GEMV_SMALL_NB];
} small_x;

/* sc[0..nb) = d_w·d_x of row wo's blocks (sc 32-byte aligned, 16 floats) */
ALWAYS_INLINE void small_row_scales(float *sc, const char *wo, int bs, const small_x *x, int nb) {
    _mm256_store_ps(sc, _mm256_mul_ps(_mm256_cvtph_ps(small_scales_f16(wo, bs, nb < 8 ? nb : 8)),
                                      _mm256_load_ps(x->d)));
    if (nb > 8)
        _mm256_store_ps(sc + 8, _mm256_mul_ps(_mm256_cvtph_ps(small_scales_f16(wo + 8 * (size_t)bs, bs,
                                                                               nb - 8)),
                                              _mm256_load_ps(x->d + 8)));
}

/* acc (8 floats) = Σ_k of row wo's block products times d_w·d_x, per lane,
 * lanes 4..7 already weighted by lane_w */
ALWAYS_INLINE __m256 small_row(int q4, int unsig, const char *wo, int bs, const small_x *x,
                               const float *sc, int nb, __m256 lane_w) {
    __m256 s0 = _mm256_load_ps(sc), s1 = nb > 8 ? _mm256_load_ps(sc + 8) : s0;
    __m256 a0 = _mm256_setzero_ps(), a1 = a0;
    for (int k = 0; k < nb; k++) {
        __m256 sk = _mm256_permutevar8x32_ps(k < 8 ? s0 : s1, _mm256_set1_epi32(k & 7));
        __m256 p = _mm256_cvtepi32_ps(
            gemv_block(q4, unsig, wo + (size_t)k * bs, x->q[k], unsig ? x->c[k] : x->q[k]));
        if (k & 1) a1 = _mm256_fmadd_ps(p, sk, a1);
        else a0 = _mm256_fmadd_ps(p, sk, a0);
    }
    return _mm256_mul_ps(_mm256_add_ps(a0, a1), lane_w);
}

#ifdef GEMV_SMALL_ZMM
/* small_row on zmm for even nb (AVX512-VNNI; weights unsigned): blocks k
 * and k+1 side by side in one register, so one xor, vpdpbusd, conversion,
 * scale permute and FMA per two blocks; the two halves added at the end
 * (lane j of the result sums lanes j and j + 8, lane_w as small_row's) */
ALWAYS_INLINE __m256i small_ubytes(int q4, const char *wb) {
    if (q4) return q4_gemv_nibbles((const uint8_t *)wb + 2);
    return _mm256_loadu_si256((const __m256i *)(wb + 2));
}

ALWAYS_INLINE __m256 small_row_zmm(int q4, const char *wo, int bs, const small_x *x,
                                   const float *sc, int nb, __m256 lane_w) {
    __m512 sv = nb > 8 ? _mm512_load_ps(sc) : _mm512_castps256_ps512(_mm256_load_ps(sc));
    __m512 a0 = _mm512_setzero_ps(), a1 = a0;
    for (int k = 0; k < nb; k += 2) {
        __m512i wv = _mm512_inserti64x4(_mm512_castsi256_si512(small_ubytes(q4, wo + (size_t)k * bs)),
                                        small_ubytes(q4, wo + (size_t)(k + 1) * bs), 1);
        if (!q4) wv = _mm512_xor_si512(wv, _mm512_set1_epi8((char)0x80));
        __m512i acc = _mm512_dpbusd_epi32(_mm512_loadu_si512(x->c + k), wv,
                                          _mm512_loadu_si512(x->q + k));
        __m512i idx = _mm512_inserti64x4(_mm512_set1_epi32(k), _mm256_set1_epi32(k + 1), 1);
        __m512 p = _mm512_cvtepi32_ps(acc), sk = _mm512_permutexvar_ps(idx, sv);
        if (k & 2) a1 = _mm512_fmadd_ps(p, sk, a1);
        else a0 = _mm512_fmadd_ps(p, sk, a0);
    }
    __m512 a = _mm512_add_ps(a0, a1);
    __m256 r = _mm256_add_ps(_mm512_castps512_ps256(a), _mm512_extractf32x8_ps(a, 1));
    return _mm256_mul_ps(r, lane_w);
}
#define SMALL_ROW(q4, unsig, wo, bs, x, sc, nb, lane_w)                                  \
    ((nb) % 2 == 0 ? small_row_zmm((q4), (wo), (bs), (x), (sc), (nb), (lane_w))         \
                   : small_row((q4), (unsig), (wo), (bs), (x), (sc), (nb), (lane_w)))
#else
#define SMALL_ROW(q4, unsig, wo, bs, x, sc, nb, lane_w) \
    small_row((q4), (unsig), (wo), (bs), (x), (sc), (nb), (lane_w))
#endif

/* the 4 lane sums of a0..a3 (in that order) */
ALWAYS_INLINE __m128 small_reduce4(__m256 a0, __m256 a1, __m256 a2, __m256 a3) {
    __m256 t = _mm256_hadd_ps(_mm256_hadd_ps(a0, a1), _mm256_hadd_ps(a2, a3));
    return _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1));
}

ALWAYS_INLINE void gemv_q_small_nb(int q4, float *y, const tg_block_q8_0 *xb, const char *w,
                                size_t ldw, const float *b, int nb, int o0, int o1) {
    small_x x;
    int unsig = q4 || GEMV_Q8_UNSIGNED, hi16 = q4 && GEMV_Q4_HI16;
    const int bs = q4 ? (int)sizeof(tg_block_q4_0) : (int)sizeof(tg_block_q8_0);
    const __m256i u = q4 ? (hi16 ? _mm256_setr_epi64x(0x0808080808080808LL, 0x0808080808080808LL,
                                                      (long long)0x8080808080808080ULL,
                                                      (long long)0x8080808080808080ULL)
                                 : _mm256_set1_epi8(8))
                         : _mm256_set1_epi8((char)0x80);
    for (int k = 0; k < GEMV_SMALL_NB; k++) x.d[k] = k < nb ? h2f(xb[k].d) : 0.0f;
    for (int k = 0; k < nb; k++) {
        x.q[k] = _mm256_loadu_si256((const __m256i *)xb[k].qs);
        /* per lane -(8, 16·8 or 128)·Σx over its 4 bytes (gemv_q's rule) */
        __m256i c = _mm256_setzero_si256();
        if (unsig) DOT32(c, u, x.q[k]);
        x.c[k] = _mm256_sub_epi32(_mm256_setzero_si256(), c);
    }
    const __m256 lane_w = _mm256_setr_ps(1, 1, 1, 1, hi16 ? 0.0625f : 1, hi16 ? 0.0625f : 1,
                                         hi16 ? 0.0625f : 1, hi16 ? 0.0625f : 1);
    const __m256 z = _mm256_setzero_ps();
    /* the rows' scales a chunk ahead of their dot products: computed in the
     * same pass they made each row's FMAs wait on a ~25-cycle chain of
     * loads, blends, conversion and multiply */
    _Alignas(64) float sc[SMALL_CHUNK][GEMV_SMALL_NB];
    for (int oc = o0; oc < o1; oc += SMALL_CHUNK) {
        int oe = o1 - oc < SMALL_CHUNK ? o1 : oc + SMALL_CHUNK;
        for (int o = oc; o < oe; o++) small_row_scales(sc[o - oc], w + (size_t)o * ldw, bs, &x, nb);
        for (int o = oc; o < oe; o += 4) {
            int n = oe - o < 4 ? oe - o : 4;
            const char *wo = w + (size_t)o * ldw;
            const float *so = sc[o - oc];
            __m256 a0 = SMALL_ROW(q4, unsig, wo, bs, &x, so, nb, lane_w);
            __m256 a1 = n > 1 ? SMALL_ROW(q4, unsig, wo + ldw, bs, &x, so + GEMV_SMALL_NB, nb, lane_w) : z;
            __m256 a2 = n > 2 ? SMALL_ROW(q4, unsig, wo + 2 * ldw, bs, &x, so + 2 * GEMV_SMALL_NB, nb, lane_w) : z;
            __m256 a3 = n > 3 ? SMALL_ROW(q4, unsig, wo + 3 * ldw, bs, &x, so + 3 * GEMV_SMALL_NB, nb, lane_w) : z;
            __m128 v = small_reduce4(a0, a1, a2, a3);
            if (n == 4) {
                if (b) v = _mm_add_ps(v, _mm_loadu_ps(b + o));
                _mm_storeu_ps(y + o, v);
            } else {
                float t[4];
                _mm_storeu_ps(t, v);
                for (int i = 0; i < n; i++) y[o + i] = b ? t[i] + b[o + i] : t[i];
            }
        }
    }
}

/* nb as a constant for the tiny models' widths (the block loop unrolled) */
ALWAYS_INLINE void gemv_q_small(int q4, float *y, const tg_block_q8_0 *xb, const char *w,
                                size_t ldw, const float *b, int nb, int o0, int o1) {
    switch (nb) {
    case 4: gemv_q_small_nb(q4, y, xb, w, ldw, b, 4, o0, o1); break;
    case 16: gemv_q_small_nb(q4, y, xb, w, ldw, b, 16, o0, o1); break;
    default: gemv_q_small_nb(q4, y, xb, w, ldw, b, nb, o0, o1); break;
    }
}
