/* train_avx2.c — the training kernels with AVX2 + FMA: a packed GEMM
 * (6×16 register tile, panels of A and B packed from any strides) and the
 * backward of layernorm, GELU and softmax. */
#include <immintrin.h>
#include <math.h>
#include <sleef.h>
#include <string.h>

#include "engine/x86/x86.h"

/* GEMM blocking: MR×NR register tile, KC deep slices, MC×KC block of A in
 * L2, KC×NC panel of B. */
enum { MR = 6, NR = 16, KC = 256, MC = 96, NC = 256 };
_Static_assert(MC % MR == 0 && NC % NR == 0, "blocks hold whole tiles");
_Static_assert(MC * KC + KC * NC <= TG_GEMM_WS, "TG_GEMM_WS holds the packed panels");

/* dst = A[mc,kc] as ceil(mc/MR) panels of kc columns of MR values, zero-padded */
static void pack_a(float *dst, const float *a, ptrdiff_t rsa, ptrdiff_t csa, int mc, int kc) {
    for (int i = 0; i < mc; i += MR) {
        int mr = mc - i < MR ? mc - i : MR;
        const float *ai = a + i * rsa;
        for (int k = 0; k < kc; k++) {
            const float *src = ai + k * csa;
            int r = 0;
            for (; r < mr; r++) dst[r] = src[r * rsa];
            for (; r < MR; r++) dst[r] = 0.0f;
            dst += MR;
        }
    }
}

/* dst = B[kc,nc] as ceil(nc/NR) panels of kc rows of NR values, zero-padded */
static void pack_b(float *dst, const float *b, ptrdiff_t rsb, ptrdiff_t csb, int kc, int nc) {
    for (int j = 0; j < nc; j += NR) {
        int nr = nc - j < NR ? nc - j : NR;
        const float *bj = b + j * csb;
        for (int k = 0; k < kc; k++) {
            const float *src = bj + k * rsb;
            if (csb == 1 && nr == NR) {
                _mm256_storeu_ps(dst, _mm256_loadu_ps(src));
                _mm256_storeu_ps(dst + 8, _mm256_loadu_ps(src + 8));
            } else {
                int c = 0;
                for (; c < nr; c++) dst[c] = src[c * csb];
                for (; c < NR; c++) dst[c] = 0.0f;
            }
            dst += NR;
        }
    }
}

/* c[MR,NR] (rows ldc apart) = (load ? c : 0) + pa[kc,MR]ᵀ·pb[kc,NR], one FMA chain per element */
static void tile_6x16(int kc, const float *pa, const float *pb, float *c, ptrdiff_t ldc, int load) {
    __m256 c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51;
    if (load) {
        c00 = _mm256_loadu_ps(c + 0 * ldc), c01 = _mm256_loadu_ps(c + 0 * ldc + 8);
        c10 = _mm256_loadu_ps(c + 1 * ldc), c11 = _mm256_loadu_ps(c + 1 * ldc + 8);
        c20 = _mm256_loadu_ps(c + 2 * ldc), c21 = _mm256_loadu_ps(c + 2 * ldc + 8);
        c30 = _mm256_loadu_ps(c + 3 * ldc), c31 = _mm256_loadu_ps(c + 3 * ldc + 8);
        c40 = _mm256_loadu_ps(c + 4 * ldc), c41 = _mm256_loadu_ps(c + 4 * ldc + 8);
        c50 = _mm256_loadu_ps(c + 5 * ldc), c51 = _mm256_loadu_ps(c + 5 * ldc + 8);
    } else {
        c00 = c01 = c10 = c11 = c20 = c21 = _mm256_setzero_ps();
        c30 = c31 = c40 = c41 = c50 = c51 = _mm256_setzero_ps();
    }
    for (int k = 0; k < kc; k++, pa += MR, pb += NR) {
        __m256 b0 = _mm256_loadu_ps(pb), b1 = _mm256_loadu_ps(pb + 8), a;
        a = _mm256_broadcast_ss(pa + 0);
        c00 = _mm256_fmadd_ps(a, b0, c00), c01 = _mm256_fmadd_ps(a, b1, c01);
        a = _mm256_broadcast_ss(pa + 1);
        c10 = _mm256_fmadd_ps(a, b0, c10), c11 = _mm256_fmadd_ps(a, b1, c11);
        a = _mm256_broadcast_ss(pa + 2);
        c20 = _mm256_fmadd_ps(a, b0, c20), c21 = _mm256_fmadd_ps(a, b1, c21);
        a = _mm256_broadcast_ss(pa + 3);
        c30 = _mm256_fmadd_ps(a, b0, c30), c31 = _mm256_fmadd_ps(a, b1, c31);
        a = _mm256_broadcast_ss(pa + 4);
        c40 = _mm256_fmadd_ps(a, b0, c40), c41 = _mm256_fmadd_ps(a, b1, c41);
        a = _mm256_broadcast_ss(pa + 5);
        c50 = _mm256_fmadd_ps(a, b0, c50), c51 = _mm256_fmadd_ps(a, b1, c51);
    }
    _mm256_storeu_ps(c + 0 * ldc, c00), _mm256_storeu_ps(c + 0 * ldc + 8, c01);
    _mm256_storeu_ps(c + 1 * ldc, c10), _mm256_storeu_ps(c + 1 * ldc + 8, c11);
    _mm256_storeu_ps(c + 2 * ldc, c20), _mm256_storeu_ps(c + 2 * ldc + 8, c21);
    _mm256_storeu_ps(c + 3 * ldc, c30), _mm256_storeu_ps(c + 3 * ldc + 8, c31);
    _mm256_storeu_ps(c + 4 * ldc, c40), _mm256_storeu_ps(c + 4 * ldc + 8, c41);
    _mm256_storeu_ps(c + 5 * ldc, c50), _mm256_storeu_ps(c + 5 * ldc + 8, c51);
}

/* A partial tile (mr < MR or nr < NR) goes through a full tile on the stack. */
static void tile_edge(int kc, const float *pa, const float *pb, float *c, int ldc, int mr,
                      int nr, int load) {
    float t[MR * NR];
    if (load)
        for (int r = 0; r < mr; r++) memcpy(t + r * NR, c + (size_t)r * ldc, sizeof(float) * nr);
    tile_6x16(kc, pa, pb, t, NR, load);
    for (int r = 0; r < mr; r++) memcpy(c + (size_t)r * ldc, t + r * NR, sizeof(float) * nr);
}

static void gemm_avx2(float *c, int ldc, const float *a, ptrdiff_t rsa, ptrdiff_t csa,
                      const float *b, ptrdiff_t rsb, ptrdiff_t csb, int M, int N, int K,
                      int m0, int m1, int acc, float *ws) {
    (void)M;
    if (K == 0) {
        if (!acc)
            for (int m = m0; m < m1; m++) memset(c + (size_t)m * ldc, 0, sizeof(float) * N);
        return;
    }
    float *pa = ws, *pb = ws + MC * KC;
    for (int jc = 0; jc < N; jc += NC) {
        int nc = N - jc < NC ? N - jc : NC;
        for (int pc = 0; pc < K; pc += KC) {
            int kc = K - pc < KC ? K - pc : KC;
            int load = acc || pc > 0;
            pack_b(pb, b + pc * rsb + jc * csb, rsb, csb, kc, nc);
            for (int ic = m0; ic < m1; ic += MC) {
                int mc = m1 - ic < MC ? m1 - ic : MC;
                pack_a(pa, a + ic * rsa + pc * csa, rsa, csa, mc, kc);
                for (int jr = 0; jr < nc; jr += NR) {
                    int nr = nc - jr < NR ? nc - jr : NR;
                    const float *pbj = pb + (size_t)jr * kc;
                    for (int ir = 0; ir < mc; ir += MR) {
                        int mr = mc - ir < MR ? mc - ir : MR;
                        float *cij = c + (size_t)(ic + ir) * ldc + jc + jr;
                        const float *pai = pa + (size_t)ir * kc;
                        if (mr == MR && nr == NR)
                            tile_6x16(kc, pai, pbj, cij, ldc, load);
                        else
                            tile_edge(kc, pai, pbj, cij, ldc, mr, nr, load);
                    }
                }
            }
        }
    }
}

static inline float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* sum of x[N] */
static float sum_row(const float *x, int n) {
    __m256 acc = _mm256_setzero_ps();
    int i = 0;
    for (; i + 8 <= n; i += 8) acc = _mm256_add_ps(acc, _mm256_loadu_ps(x + i));
    float s = hsum(acc);
    for (; i < n; i++) s += x[i];
    return s;
}

/* dx[T,N] += layernorm backward; dg[N], db[N] += row sums */
static void layernorm_bwd_avx2(float *dx, float *dg, float *db, const float *dy,
                               const float *x, const float *g, int T, int n, float eps) {
    for (int t = 0; t < T; t++) {
        const float *xt = x + (size_t)t * n, *dyt = dy + (size_t)t * n;
        float *dxt = dx + (size_t)t * n;
        float mean = sum_row(xt, n) / (float)n;
        __m256 vm = _mm256_set1_ps(mean), acc = _mm256_setzero_ps();
        int i = 0;
        for (; i + 8 <= n; i += 8) {
            __m256 d = _mm256_sub_ps(_mm256_loadu_ps(xt + i), vm);
            acc = _mm256_fmadd_ps(d, d, acc);
        }
        float var = hsum(acc);
        for (; i < n; i++) var += (xt[i] - mean) * (xt[i] - mean);
        float rstd = 1.0f / sqrtf(var / (float)n + eps);
        __m256 vr = _mm256_set1_ps(rstd), su = _mm256_setzero_ps(), sux = _mm256_setzero_ps();
        for (i = 0; i + 8 <= n; i += 8) {
            __m256 xh = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(xt + i), vm), vr);
            __m256 d = _mm256_loadu_ps(dyt + i), u = _mm256_mul_ps(_mm256_loadu_ps(g + i), d);
            su = _mm256_add_ps(su, u);
            sux = _mm256_fmadd_ps(u, xh, sux);
            _mm256_storeu_ps(dg + i, _mm256_fmadd_ps(d, xh, _mm256_loadu_ps(dg + i)));
            _mm256_storeu_ps(db + i, _mm256_add_ps(d, _mm256_loadu_ps(db + i)));
        }
        float s1 = hsum(su), s2 = hsum(sux);
        for (int j = i; j < n; j++) {
            float xh = (xt[j] - mean) * rstd, u = g[j] * dyt[j];
            s1 += u;
            s2 += u * xh;
            dg[j] += dyt[j] * xh;
            db[j] += dyt[j];
        }
        s1 /= (float)n;
        s2 /= (float)n;
        __m256 v1 = _mm256_set1_ps(s1), v2 = _mm256_set1_ps(s2);
        for (i = 0; i + 8 <= n; i += 8) {
            __m256 xh = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(xt + i), vm), vr);
            __m256 u = _mm256_mul_ps(_mm256_loadu_ps(g + i), _mm256_loadu_ps(dyt + i));
            __m256 r = _mm256_sub_ps(_mm256_sub_ps(u, v1), _mm256_mul_ps(xh, v2));
            _mm256_storeu_ps(dxt + i, _mm256_fmadd_ps(vr, r, _mm256_loadu_ps(dxt + i)));
        }
        for (; i < n; i++) {
            float xh = (xt[i] - mean) * rstd;
            dxt[i] += rstd * (g[i] * dyt[i] - s1 - xh * s2);
        }
    }
}

/* dx[N] = dy · GELU'(x) */
static void gelu_bwd_avx2(float *dx, const float *x, const float *dy, int n) {
    const float c = 0.7978845608028654f, k = 0.044715f;
    const __m256 vc = _mm256_set1_ps(c), vk = _mm256_set1_ps(k), vk3 = _mm256_set1_ps(3.0f * k);
    const __m256 half = _mm256_set1_ps(0.5f), one = _mm256_set1_ps(1.0f);
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(x + i), v2 = _mm256_mul_ps(v, v);
        __m256 th = Sleef_tanhf8_u10avx2(_mm256_mul_ps(vc, _mm256_fmadd_ps(_mm256_mul_ps(vk, v2), v, v)));
        __m256 du = _mm256_mul_ps(vc, _mm256_fmadd_ps(vk3, v2, one));
        __m256 a = _mm256_mul_ps(half, _mm256_add_ps(one, th));
        __m256 bq = _mm256_mul_ps(_mm256_mul_ps(half, v), _mm256_fnmadd_ps(th, th, one));
        __m256 d = _mm256_fmadd_ps(bq, du, a);
        _mm256_storeu_ps(dx + i, _mm256_mul_ps(_mm256_loadu_ps(dy + i), d));
    }
    for (; i < n; i++) {
        float v = x[i];
        float th = tanhf(c * (v + k * v * v * v));
        float du = c * (1.0f + 3.0f * k * v * v);
        dx[i] = dy[i] * (0.5f * (1.0f + th) + 0.5f * v * (1.0f - th * th) * du);
    }
}

/* dx[N] = scale · p ⊙ (dy - Σ p⊙dy) */
static void softmax_bwd_avx2(float *dx, const float *p, const float *dy, int n, float scale) {
    __m256 acc = _mm256_setzero_ps();
    int i = 0;
    for (; i + 8 <= n; i += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(p + i), _mm256_loadu_ps(dy + i), acc);
    float s = hsum(acc);
    for (; i < n; i++) s += p[i] * dy[i];
    __m256 vs = _mm256_set1_ps(s), vsc = _mm256_set1_ps(scale);
    for (i = 0; i + 8 <= n; i += 8) {
        __m256 d = _mm256_sub_ps(_mm256_loadu_ps(dy + i), vs);
        _mm256_storeu_ps(dx + i, _mm256_mul_ps(vsc, _mm256_mul_ps(_mm256_loadu_ps(p + i), d)));
    }
    for (; i < n; i++) dx[i] = scale * p[i] * (dy[i] - s);
}

void tg_kernels_init_train_avx2(tg_kernels *k) {
    k->gemm = gemm_avx2;
    k->layernorm_bwd = layernorm_bwd_avx2;
    k->gelu_bwd = gelu_bwd_avx2;
    k->softmax_bwd = softmax_bwd_avx2;
}
