/* quant_avx512bw.c — the Q8_0/Q4_0 prefill GEMM for the AVX-512 table on a
 * CPU with AVX-512F/BW but no VNNI of either kind (Skylake-X): qgemm_tmpl.h
 * on zmm, each vpdpbusd spelled vpmaddubsw + vpmaddwd as quant_avx2.c does
 * on ymm. Without it such a CPU ran AVX2's ymm GEMM for them while its f32
 * ran the AVX-512 GEMM, and a Q8_0 gpt2 prefill was 0.75-0.78x of f32
 * under TINYGPT_CPU_MASK=avx512_vnni,avx512_bf16,avx_vnni on Zen 5
 * (bench/README.md, twelfth session, sk). The decode (T == 1) stays the
 * AVX2 table's (tg_matmul_q_decode_avx2): its ymm GEMVs are what this CPU
 * streams with. Same integer sums, scales and order of f32 operations as
 * the AVX2 GEMM, so the same bits as every other x86 integer GEMM. */
#include <immintrin.h>

#include "engine/x86/x86.h"

#define ALWAYS_INLINE static inline __attribute__((always_inline))

/* IEEE half -> f32 of one scale (F16C) */
static inline float h2f(uint16_t h) { return _cvtsh_ss(h); }

/* the int8 GEMM's vocabulary (qvocab_zmm.h): QMR tokens × 32 rows */
#include "engine/x86/qvocab_zmm.h"
static inline __m512i madd1(__m512i p16) { return _mm512_madd_epi16(p16, _mm512_set1_epi16(1)); }
/* Q4_0: u = nibbles (<= 15) times x (|x| <= 127): u8·s8 pairs fit
 * vpmaddubsw's int16 (15·127·2), and two groups' pairs added in int16 too
 * (<= 7620) before one vpmaddwd */
#define qdpbusd(acc, u, s) _mm512_add_epi32((acc), madd1(_mm512_maddubs_epi16((u), (s))))
#define qdpbusd2(acc, u1, s1, u2, s2) \
    _mm512_add_epi32((acc), madd1(_mm512_add_epi16(_mm512_maddubs_epi16((u1), (s1)), \
                                                   _mm512_maddubs_epi16((u2), (s2)))))
/* Q8_0: w + 128 would not fit vpmaddubsw's pairs, so W stays signed and
 * each product is |w| · sign(w)·x (128·127·2 fits), as _mm256_sign_epi8
 * gives it on AVX2 (no zmm form: x negated under the mask of w's sign
 * bits; where w is 0, |w| is, so x's sign does not matter) */
#define QGEMM_Q8_SIGNED 1
static inline __m512i q8_dot_s(__m512i acc, __m512i w, __m512i x) {
    __m512i xs = _mm512_mask_sub_epi8(x, _mm512_movepi8_mask(w), _mm512_setzero_si512(), x);
    return _mm512_add_epi32(acc, madd1(_mm512_maddubs_epi16(_mm512_abs_epi8(w), xs)));
}
#define qdpbusd_s(acc, w, x) q8_dot_s((acc), (w), (x))

#include "engine/x86/qgemm_tmpl.h"

Q_TILE(1) Q_TILE(2) Q_TILE(3) Q_TILE(4) Q_TILE(5) Q_TILE(6)
Q_TILE_S(1) Q_TILE_S(2) Q_TILE_S(3) Q_TILE_S(4) Q_TILE_S(5) Q_TILE_S(6)
static const q_tile_fn q_tiles[QMR + 1] = {NULL,     q_tile_1, q_tile_2, q_tile_3,
                                           q_tile_4, q_tile_5, q_tile_6};
static const q_tile_fn q_tiles_s[QMR + 1] = {NULL,      q_tile_s1, q_tile_s2, q_tile_s3,
                                             q_tile_s4, q_tile_s5, q_tile_s6};

static void matmul_q8_0(float *y, const void *x, const void *w, size_t ldw, const float *b, int T,
                        int in, int out, int o0, int o1, void *ws) {
    if (T == 1) tg_matmul_q_decode_avx2(0, y, x, w, ldw, b, in, out, o0, o1);
    else qgemm_run(0, q_tiles_s, y, x, w, ldw, b, T, in, out, o0, o1, ws);
}

static void matmul_q4_0(float *y, const void *x, const void *w, size_t ldw, const float *b, int T,
                        int in, int out, int o0, int o1, void *ws) {
    if (T == 1) tg_matmul_q_decode_avx2(1, y, x, w, ldw, b, in, out, o0, o1);
    else qgemm_run(1, q_tiles, y, x, w, ldw, b, T, in, out, o0, o1, ws);
}

void tg_kernels_init_quant_avx512bw(tg_kernels *k) {
    k->matmul_w[TG_WTYPE_Q8_0] = matmul_q8_0;
    k->matmul_w[TG_WTYPE_Q4_0] = matmul_q4_0;
}
