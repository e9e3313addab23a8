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

/* The rows of a 4-row unit at wo, stride *ld: in place when all 4 exist
 * (n == 4); else the last n rows copied into tail (4 rows of rb bytes)
 * with zero rows after them, and *ld = rb. */
ALWAYS_INLINE const char *small_unit_rows(char *tail, const char *wo, size_t *ld, int n,
                                          size_t rb) {
    if (n == 4) return wo;
    memset(tail, 0, 4 * rb);
    for (int i = 0; i < n; i++) memcpy(tail + i * rb, wo + (size_t)i * *ld, rb);
    *ld = rb;
    return tail;
}

/* y[o..o+n) = the unit's first n sums v (+ b): one store for a whole unit */
ALWAYS_INLINE void small_unit_store(float *y, const float *b, int o, int n, __m128 v) {
    if (n == 4) {
        if (b) v = _mm_add_ps(v, _mm_loadu_ps(b + o));
        _mm_storeu_ps(y + o, v);
    } else {
        float t[4];
        _mm_storeu_ps(t, v);
        for (int i = 0; i < n; i++) y[o + i] = b ? t[i] + b[o + i] : t[i];
    }
}

#ifdef GEMV_SMALL_ZMM
/* ---- Q8_0 at IN = 128 and 512 on AVX512-VNNI: 16 blocks per reduction ----
 *
 * small_row_zmm still spends, per pair of blocks, a conversion, a scale
 * permute and an FMA, and per row a scale fetch, two adds and a reduction
 * of 16 lanes: at 4 blocks a row those are most of the work. Here a unit
 * is 16 blocks of 4 "virtual rows" v (4 blocks each: 4 weight rows at
 * IN = 128, the 4 quarters of one row at IN = 512): 8 vpdpbusd (two blocks
 * each), then their int32 lanes are summed exactly into one zmm of 16 block
 * sums (unpack/add twice, one 128-bit shuffle/add: 21 instructions), and
 * one conversion, one multiply by the 16 d_w·d_x and two shuffle/adds give
 * the 4 virtual rows' sums, each ((b0·s0 + b2·s2) + (b1·s1 + b3·s3)).
 * Every virtual row's result comes from its own lanes only, so a row's
 * arithmetic does not depend on its neighbours, on o0/o1 or on ldw. */

/* the 16 block sums of virtual rows vr[0..3] (block b of v at vr[v] + b·34)
 * against x blocks xk[v]..xk[v]+3, in S16 order, as f32:
 * lanes 0-3 (v0 b0, v0 b2, v1 b0, v1 b2), 4-7 the same for b1, b3, 8-15 as 0-7 for v2, v3 */
ALWAYS_INLINE __m512 small16_sums(const char *const vr[4], const small_x *x, const int xk[4]) {
    const __m512i m80 = _mm512_set1_epi8((char)0x80);
    const size_t bs = sizeof(tg_block_q8_0);
    __m512i acc[8];
    for (int p = 0; p < 8; p++) {
        const char *wb = vr[p >> 1] + (size_t)(p & 1) * 2 * bs;
        int k = xk[p >> 1] + 2 * (p & 1);
        __m512i wv = _mm512_inserti64x4(
            _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(wb + 2))),
            _mm256_loadu_si256((const __m256i *)(wb + bs + 2)), 1);
        acc[p] = _mm512_dpbusd_epi32(_mm512_load_si512(x->c + k), _mm512_xor_si512(wv, m80),
                                     _mm512_load_si512(x->q + k));
    }
    /* acc[p]: 128-bit lanes 0,1 block 2p's 8 sums, lanes 2,3 block 2p+1's */
    __m512i t[4], u[2];
    for (int i = 0; i < 4; i++)
        t[i] = _mm512_add_epi32(_mm512_unpacklo_epi32(acc[2 * i], acc[2 * i + 1]),
                                _mm512_unpackhi_epi32(acc[2 * i], acc[2 * i + 1]));
    for (int m = 0; m < 2; m++) /* lane l: acc[4m..4m+3] summed over lane l's 4 */
        u[m] = _mm512_add_epi32(_mm512_unpacklo_epi64(t[2 * m], t[2 * m + 1]),
                                _mm512_unpackhi_epi64(t[2 * m], t[2 * m + 1]));
    __m512i v = _mm512_add_epi32(_mm512_shuffle_i32x4(u[0], u[1], 0x88),
                                 _mm512_shuffle_i32x4(u[0], u[1], 0xDD));
    return _mm512_cvtepi32_ps(v);
}

/* the 4 virtual rows' sums at lanes 0, 2, 8, 10, from the block sums f
 * and their d_w·d_x sc (both in S16 order) */
ALWAYS_INLINE __m512 small16_rows(__m512 f, __m512 sc) {
    __m512 p = _mm512_mul_ps(f, sc);
    __m512 q = _mm512_add_ps(p, _mm512_permute_ps(p, 0xB1));
    return _mm512_add_ps(q, _mm512_shuffle_f32x4(q, q, 0xB1));
}

ALWAYS_INLINE __m128 small16_pick(__m512 r) {
    return _mm512_castps512_ps128(
        _mm512_permutexvar_ps(_mm512_setr_epi32(0, 2, 8, 10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), r));
}

/* 16 f16 scales (natural order) times dx (natural order), in S16 order */
ALWAYS_INLINE __m512 small16_scales(__m256i h, __m512 dx) {
    return _mm512_permutexvar_ps(_mm512_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7, 8, 10, 12, 14, 9, 11, 13, 15),
                                 _mm512_mul_ps(_mm512_cvtph_ps(h), dx));
}

/* IN = 128: 4 rows a unit */
static void gemv_q8_small4(float *y, const small_x *x, const char *w, size_t ldw, const float *b,
                           int o0, int o1) {
    const size_t bs = sizeof(tg_block_q8_0), rb = 4 * bs;
    const __m512 dx = _mm512_broadcast_f32x4(_mm_load_ps(x->d));
    const int xk[4] = {0, 0, 0, 0};
    _Alignas(64) char tail[4 * 4 * sizeof(tg_block_q8_0)];
    for (int o = o0; o < o1; o += 4) {
        int n = o1 - o < 4 ? o1 - o : 4;
        size_t ld = ldw;
        const char *wo = small_unit_rows(tail, w + (size_t)o * ldw, &ld, n, rb);
        const char *vr[4] = {wo, wo + ld, wo + 2 * ld, wo + 3 * ld};
        __m256i h;
        if (ld == rb) { /* the 16 blocks back to back */
            h = _mm256_inserti128_si256(_mm256_castsi128_si256(GEMV_SCALES8(0, wo)),
                                        GEMV_SCALES8(0, wo + 8 * bs), 1);
        } else {
            __m128i s01 = _mm_unpacklo_epi64(GEMV_SCALES4(0, vr[0]), GEMV_SCALES4(0, vr[1]));
            __m128i s23 = _mm_unpacklo_epi64(GEMV_SCALES4(0, vr[2]), GEMV_SCALES4(0, vr[3]));
            h = _mm256_inserti128_si256(_mm256_castsi128_si256(s01), s23, 1);
        }
        __m512 r = small16_rows(small16_sums(vr, x, xk), small16_scales(h, dx));
        small_unit_store(y, b, o, n, small16_pick(r));
    }
}

/* IN = 512: a row's 4 quarters a unit, 4 rows a store */
static void gemv_q8_small16(float *y, const small_x *x, const char *w, size_t ldw, const float *b,
                            int o0, int o1) {
    const size_t bs = sizeof(tg_block_q8_0);
    const __m512 dx = _mm512_load_ps(x->d);
    const int xk[4] = {0, 4, 8, 12};
    for (int o = o0; o < o1; o += 4) {
        int n = o1 - o < 4 ? o1 - o : 4;
        __m128 rs[4];
        for (int i = 0; i < 4; i++) {
            if (i >= n) {
                rs[i] = _mm_setzero_ps();
                continue;
            }
            const char *wo = w + (size_t)(o + i) * ldw;
            const char *vr[4] = {wo, wo + 4 * bs, wo + 8 * bs, wo + 12 * bs};
            __m256i h = _mm256_inserti128_si256(_mm256_castsi128_si256(GEMV_SCALES8(0, wo)),
                                                GEMV_SCALES8(0, wo + 8 * bs), 1);
            rs[i] = small16_pick(small16_rows(small16_sums(vr, x, xk), small16_scales(h, dx)));
        }
        /* row i: (q0 + q1) + (q2 + q3) */
        __m128 v = _mm_hadd_ps(_mm_hadd_ps(rs[0], rs[1]), _mm_hadd_ps(rs[2], rs[3]));
        small_unit_store(y, b, o, n, v);
    }
}
#endif

#ifndef GEMV_SMALL_ZMM
/* ---- Q8_0 at IN = 128 on ymm (AVX2, AVX-VNNI): 8 blocks per reduction ----
 *
 * The ymm form of the zmm path below: a unit is 2 rows of 4 blocks; the 8
 * blocks' int32 lanes (gemv_block) are summed exactly into one ymm of 8
 * block sums (unpack/add twice, one 128-bit permute/add), then one
 * conversion, one multiply by the 8 d_w·d_x and two shuffle/adds give each
 * row's ((b0·s0 + b1·s1) + (b2·s2 + b3·s3)) in lanes 0 and 4. A row's
 * arithmetic depends on its own lanes only. */

/* rows r0, r1 (4 blocks each, at a and a2): their sums in lanes 0 and 4 */
ALWAYS_INLINE __m256 small8_rows(int unsig, const char *a, const char *a2, const small_x *x,
                                 __m256 dx) {
    const int bs = (int)sizeof(tg_block_q8_0);
    __m256i acc[8];
    for (int i = 0; i < 8; i++) {
        int k = i & 3;
        acc[i] = gemv_block(0, unsig, (i < 4 ? a : a2) + (size_t)k * bs, x->q[k],
                            unsig ? x->c[k] : x->q[k]);
    }
    __m256i t[4], u[2];
    for (int i = 0; i < 4; i++)
        t[i] = _mm256_add_epi32(_mm256_unpacklo_epi32(acc[2 * i], acc[2 * i + 1]),
                                _mm256_unpackhi_epi32(acc[2 * i], acc[2 * i + 1]));
    for (int m = 0; m < 2; m++)
        u[m] = _mm256_add_epi32(_mm256_unpacklo_epi64(t[2 * m], t[2 * m + 1]),
                                _mm256_unpackhi_epi64(t[2 * m], t[2 * m + 1]));
    /* lanes 0-3: row 0's blocks 0-3, lanes 4-7: row 1's */
    __m256i v = _mm256_add_epi32(_mm256_permute2x128_si256(u[0], u[1], 0x20),
                                 _mm256_permute2x128_si256(u[0], u[1], 0x31));
    __m128i h = _mm_unpacklo_epi64(small_scales_f16(a, bs, 4), small_scales_f16(a2, bs, 4));
    __m256 p = _mm256_mul_ps(_mm256_cvtepi32_ps(v), _mm256_mul_ps(_mm256_cvtph_ps(h), dx));
    __m256 q = _mm256_add_ps(p, _mm256_permute_ps(p, 0xB1));
    return _mm256_add_ps(q, _mm256_permute_ps(q, 0x4E));
}

static void gemv_q8_small4_ymm(int unsig, float *y, const small_x *x, const char *w, size_t ldw,
                               const float *b, int o0, int o1) {
    const size_t rb = 4 * sizeof(tg_block_q8_0);
    const __m256 dx = _mm256_setr_m128(_mm_load_ps(x->d), _mm_load_ps(x->d));
    const __m256i pick = _mm256_setr_epi32(0, 4, 1, 5, 0, 0, 0, 0);
    _Alignas(32) char tail[4 * 4 * sizeof(tg_block_q8_0)];
    for (int o = o0; o < o1; o += 4) {
        int n = o1 - o < 4 ? o1 - o : 4;
        size_t ld = ldw;
        const char *wo = small_unit_rows(tail, w + (size_t)o * ldw, &ld, n, rb);
        __m256 ra = small8_rows(unsig, wo, wo + ld, x, dx);
        __m256 rc = small8_rows(unsig, wo + 2 * ld, wo + 3 * ld, x, dx);
        /* [r0, r2, r0, r2 | r1, r3, r1, r3] -> r0, r1, r2, r3 */
        __m128 v = _mm256_castps256_ps128(_mm256_permutevar8x32_ps(_mm256_unpacklo_ps(ra, rc), pick));
        small_unit_store(y, b, o, n, v);
    }
}
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
#ifdef GEMV_SMALL_ZMM
    if (!q4 && (nb == 4 || nb == 16)) {
        if (nb == 4) gemv_q8_small4(y, &x, w, ldw, b, o0, o1);
        else gemv_q8_small16(y, &x, w, ldw, b, o0, o1);
        return;
    }
#else
    if (!q4 && nb == 4) {
        gemv_q8_small4_ymm(unsig, y, &x, w, ldw, b, o0, o1);
        return;
    }
#endif
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
            small_unit_store(y, b, o, n, small_reduce4(a0, a1, a2, a3));
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
