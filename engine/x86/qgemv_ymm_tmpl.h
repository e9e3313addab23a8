/* qgemv_ymm_tmpl.h — the Q4_0 decode GEMV for long rows on ymm without
 * AVX-512 (quant_avx2.c, and quant_avxvnni.c with DOT_NIB2 as two
 * vpdpbusd), included after quant_tmpl.h (h2f, hsum8 are that file's),
 * which reaches it through its GEMV_Q4_WIDE hook.
 *
 *   y[o0..o1) = W[OUT, IN] · x + b,  W in Q4_0, x as Q8_0 blocks,
 *   IN a multiple of 256 (groups of 8 blocks)
 *
 * Measured on Zen 5 (2 vCPU, 2026-12-03, ymm throughput of single
 * instructions): vpmaddubsw, vpmaddwd and the FMAs share two pipes,
 * vcvtdq2ps and the shifts two others, vpsignb and the lane permutes sit
 * across both. The one-block GEMV (gemv_q) spends a shift, an and, a
 * vpmaddubsw, a vpmaddwd, an add, a conversion and an FMA per 18-byte block.
 *
 * Here two blocks per ymm: blocks k and k+4 of a group of 8 (k = 0..3). The
 * pair's 32 quant bytes are two loads and a dword blend (the low 128 bits
 * of a load at block k's quants, the high 128 bits of a load ending at block
 * k+4's last byte: only bytes of the group are read); the low nibbles of
 * both blocks and the high ones (one shift) are multiplied by x's bytes laid
 * out to match (xlo: elements 0..15 of block k | of block k+4, xhi: 16..31)
 * and summed into 8 int32 lanes, 4 per block, each starting at -8·Σ of its 8
 * x bytes (the nibble offset), so exactly Σ (q - 8)·x. DOT_NIB2 is that sum:
 * two vpmaddubsw added in int16 (a lane of one is at most 2·15·128 = 3840 in
 * magnitude, of the two 7680: no saturation for any bytes) and one
 * vpmaddwd. Then one conversion and one FMA per pair; the scales d_w·d_x of
 * the group's 8 blocks in a register (the f16 scales from four 32-byte
 * loads), the pair's [d_k ×4 | d_k+4 ×4] taken by one in-lane vpermilps.
 * Q4Y_ROWS (2) rows per pass share x's vectors, one hadd reduction for
 * them (4 rows were 3-5% faster from L2 in one loaded run, not measured
 * from DRAM: kept at 2, the measured and tested setting).
 *
 * Each row is computed by the same operations wherever it falls (a pass of
 * fewer than four rows repeats its last row in the unused slots and stores
 * only its own), so results do not depend on o0/o1; against the reference
 * only the order of the f32 sums differs. */

#define YMM_STACK_BLOCKS 512 /* x prepared on the stack in tiles of IN = 16384 */

/* ---- Q4_0 ------------------------------------------------------------------- */

/* the f16 scales of 8 consecutive Q4_0 blocks at p as 8 words, from four
 * 32-byte loads at blocks 0, 2, 4, 6 (each holds its first block's scale as
 * word 0 and the next block's as word 9, word 1 of its high half), shifted
 * into place and blended: 4 loads instead of 8; only bytes of the 8 blocks
 * are read (the last load ends at byte 139 of 144) */
ALWAYS_INLINE __m128i q4_scales8(const char *p) {
    const __m256i c0 = _mm256_loadu_si256((const __m256i *)p);
    const __m256i c1 = _mm256_loadu_si256((const __m256i *)(p + 36));
    const __m256i c2 = _mm256_loadu_si256((const __m256i *)(p + 72));
    const __m256i c3 = _mm256_loadu_si256((const __m256i *)(p + 108));
    /* low halves: d0 d2 d4 d6 in words 0 2 4 6; high halves: d1 d3 d5 d7 in 1 3 5 7 */
    __m256i t = _mm256_blend_epi16(c0, _mm256_slli_si256(c1, 4), 0x0c);
    __m256i u = _mm256_blend_epi16(_mm256_slli_si256(c2, 8), _mm256_slli_si256(c3, 12), 0xc0);
    __m256i m = _mm256_blend_epi16(t, u, 0xf0);
    return _mm_blend_epi16(_mm256_castsi256_si128(m), _mm256_extracti128_si256(m, 1), 0xaa);
}

/* the quant bytes of blocks k (low 128 bits) and k+4 (high) at p = block
 * k's start, k one of 0..3 of a group of 8 (the loads end inside block k+1
 * and start inside block k+3) */
ALWAYS_INLINE __m256i q4_pair_bytes(const char *p) {
    __m256i a = _mm256_loadu_si256((const __m256i *)(p + 2));                /* qs_k | ... */
    __m256i b = _mm256_loadu_si256((const __m256i *)(p + 4 * 18 + 2 - 16)); /* ... | qs_k+4 */
    return _mm256_blend_epi32(a, b, 0xf0);
}

/* the 4 lane sums of a0..a3 (in that order), each by the same tree */
ALWAYS_INLINE __m128 ymm_reduce4(__m256 a0, __m256 a1, __m256 a2, __m256 a3) {
    __m256 t = _mm256_hadd_ps(_mm256_hadd_ps(a0, a1), _mm256_hadd_ps(a2, a3));
    return _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1));
}

/* y[o..o+n) (n <= 4) of a pass over Q4Y_ROWS rows: rows past n repeat row
 * o + n - 1 (computed, not stored), so every row sees the same operations */
#ifndef Q4Y_ROWS /* 1, 2 or 4 */
#define Q4Y_ROWS 2
#endif
ALWAYS_INLINE void q4y_pass(float *y, const char *w, size_t ldw, const float *b, const int nb,
                            int o, int n, const __m256i *xlo, const __m256i *xhi,
                            const __m256i *xc, const float *xd, int acc_y) {
    const __m256i nib = _mm256_set1_epi8(15);
    const char *wr[4];
    __m256 acc[4];
    for (int r = 0; r < Q4Y_ROWS; r++) {
        wr[r] = w + (size_t)(o + (r < n ? r : n - 1)) * ldw;
        acc[r] = _mm256_setzero_ps();
    }
    tg_prefetch_row(w + (size_t)o * ldw, (size_t)n * ldw); /* the pass's rows, 4 KB on */
    for (int k = 0; k < nb; k += 8) {
        __m256 s8[4];
        const __m256 xd8 = _mm256_load_ps(xd + k);
        for (int r = 0; r < Q4Y_ROWS; r++)
            s8[r] = _mm256_mul_ps(_mm256_cvtph_ps(q4_scales8(wr[r] + (size_t)k * sizeof(tg_block_q4_0))), xd8);
#define Q4Y_PAIR(j)                                                                                \
    do {                                                                                           \
        const __m256i xl = xlo[k / 2 + (j)], xh = xhi[k / 2 + (j)], c = xc[k / 2 + (j)];          \
        for (int r = 0; r < Q4Y_ROWS; r++) {                                                       \
            __m256i v = q4_pair_bytes(wr[r] + (size_t)(k + (j)) * sizeof(tg_block_q4_0));         \
            __m256i d = c;                                                                         \
            DOT_NIB2(d, _mm256_and_si256(v, nib), xl, _mm256_and_si256(_mm256_srli_epi16(v, 4), nib), xh); \
            acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(d), _mm256_permute_ps(s8[r], (j) * 0x55), acc[r]); \
        }                                                                                          \
    } while (0)
        Q4Y_PAIR(0);
        Q4Y_PAIR(1);
        Q4Y_PAIR(2);
        Q4Y_PAIR(3);
#undef Q4Y_PAIR
    }
    __m128 v;
    if (Q4Y_ROWS == 4) v = ymm_reduce4(acc[0], acc[1], acc[2], acc[3]);
    else if (Q4Y_ROWS == 2) v = ymm_reduce4(acc[0], acc[1], acc[0], acc[1]);
    else v = ymm_reduce4(acc[0], acc[0], acc[0], acc[0]);
    float t[4];
    _mm_storeu_ps(t, v);
    for (int r = 0; r < n; r++) y[o + r] = acc_y ? y[o + r] + t[r] : b ? t[r] + b[o + r] : t[r];
}

ALWAYS_INLINE void q4y_rows(float *y, const char *w, size_t ldw, const float *b, const int nb,
                            int o0, int o1, const __m256i *xlo, const __m256i *xhi,
                            const __m256i *xc, const float *xd, int acc_y) {
    for (int o = o0; o < o1; o += Q4Y_ROWS)
        q4y_pass(y, w, ldw, b, nb, o, o1 - o < Q4Y_ROWS ? o1 - o : Q4Y_ROWS, xlo, xhi, xc, xd,
                 acc_y);
}

/* x's prepared form for at most YMM_STACK_BLOCKS blocks (25 KB of stack);
 * longer rows go in tiles of that many blocks, each tile's partial dot
 * products added to y in tile order: the same operations for a row
 * wherever it falls (no heap: a kernel cannot fail) */
static void gemv_q4_ymm(float *y, const tg_block_q8_0 *xb, const char *w, size_t ldw,
                        const float *b, int nb, int o0, int o1) {
    __m256i xlo[YMM_STACK_BLOCKS / 2], xhi[YMM_STACK_BLOCKS / 2], xc[YMM_STACK_BLOCKS / 2];
    _Alignas(32) float xd[YMM_STACK_BLOCKS];
    const __m256i eight = _mm256_set1_epi8(8);
    for (int k0 = 0; k0 < nb; k0 += YMM_STACK_BLOCKS) {
        const int tb = nb - k0 < YMM_STACK_BLOCKS ? nb - k0 : YMM_STACK_BLOCKS, acc_y = k0 > 0;
        const tg_block_q8_0 *xt = xb + k0;
        const char *wt = w + (size_t)k0 * sizeof(tg_block_q4_0);
        /* pair p = 4g + j: blocks 8g + j (low 128 bits) and 8g + j + 4 (high) */
        for (int p = 0; p < tb / 2; p++) {
            int k = p / 4 * 8 + p % 4;
            const int8_t *q0 = xt[k].qs, *q1 = xt[k + 4].qs;
            xlo[p] = _mm256_set_m128i(_mm_loadu_si128((const __m128i *)q1),
                                      _mm_loadu_si128((const __m128i *)q0));
            xhi[p] = _mm256_set_m128i(_mm_loadu_si128((const __m128i *)(q1 + 16)),
                                      _mm_loadu_si128((const __m128i *)(q0 + 16)));
            __m256i c = _mm256_setzero_si256();
            DOT_NIB2(c, eight, xlo[p], eight, xhi[p]); /* 8·Σx per lane (8·128·4 fits int16) */
            xc[p] = _mm256_sub_epi32(_mm256_setzero_si256(), c);
        }
        for (int k = 0; k < tb; k++) xd[k] = h2f(xt[k].d);
        switch (tb) { /* GPT-2's row lengths unrolled */
        case 24: q4y_rows(y, wt, ldw, b, 24, o0, o1, xlo, xhi, xc, xd, acc_y); break;
        case 96: q4y_rows(y, wt, ldw, b, 96, o0, o1, xlo, xhi, xc, xd, acc_y); break;
        default: q4y_rows(y, wt, ldw, b, tb, o0, o1, xlo, xhi, xc, xd, acc_y); break;
        }
    }
}

