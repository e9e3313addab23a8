/* kernels_ref.c — the portable C reference for every kernel: the fallback on
 * any CPU and the oracle every SIMD version is tested against. Plain loops,
 * free of cleverness; accumulation order is the obvious one. */
#include <math.h>

#include "engine/engine.h"

/* Y[T,OUT] = X[T,IN] · W[OUT,IN]ᵀ + b[OUT], columns o0..o1-1 */
void tg_matmul_ref(float *y, const float *x, const float *w, const float *b, int T, int in,
                   int out, int o0, int o1) {
    for (int t = 0; t < T; t++) {
        const float *xt = x + (size_t)t * in;
        for (int o = o0; o < o1; o++) {
            const float *wo = w + (size_t)o * in;
            float acc = 0.0f;
            for (int i = 0; i < in; i++) acc += xt[i] * wo[i];
            y[(size_t)t * out + o] = b ? acc + b[o] : acc;
        }
    }
}

/* x[N] = softmax(x[N]); -inf -> 0, all -inf -> all 0, any NaN -> all NaN.
 * The max skips NaN; a NaN then poisons the sum and so the whole row. A row
 * with no finite max (only -inf and NaN) is all 0, or all NaN if it holds a
 * NaN, so a NaN never turns into a clean 0. */
static void softmax_ref(float *x, int n) {
    float max = -INFINITY;
    for (int i = 0; i < n; i++) max = x[i] > max ? x[i] : max;
    if (max == -INFINITY) {
        int nan = 0;
        for (int i = 0; i < n; i++) nan |= isnan(x[i]);
        for (int i = 0; i < n; i++) x[i] = nan ? NAN : 0.0f;
        return;
    }
    float sum = 0.0f;
    for (int i = 0; i < n; i++) {
        x[i] = expf(x[i] - max);
        sum += x[i];
    }
    float inv = 1.0f / sum;
    for (int i = 0; i < n; i++) x[i] *= inv;
}

/* y[T,N] = layernorm(x[T,N]) * g + b, two-pass mean/variance */
static void layernorm_ref(float *y, const float *x, const float *g, const float *b,
                          int T, int n, float eps) {
    for (int t = 0; t < T; t++) {
        const float *xt = x + (size_t)t * n;
        float *yt = y + (size_t)t * n;
        float mean = 0.0f;
        for (int i = 0; i < n; i++) mean += xt[i];
        mean /= (float)n;
        float var = 0.0f;
        for (int i = 0; i < n; i++) {
            float d = xt[i] - mean;
            var += d * d;
        }
        var /= (float)n;
        float rstd = 1.0f / sqrtf(var + eps);
        for (int i = 0; i < n; i++) yt[i] = (xt[i] - mean) * rstd * g[i] + b[i];
    }
}

/* y[N] = GELU(x[N]), tanh form */
static void gelu_ref(float *y, const float *x, int n) {
    const float c = 0.7978845608028654f; /* sqrt(2/pi) */
    for (int i = 0; i < n; i++) {
        float v = x[i];
        y[i] = 0.5f * v * (1.0f + tanhf(c * (v + 0.044715f * v * v * v)));
    }
}

/* y[N] = a[N] + b[N] */
static void add_ref(float *y, const float *a, const float *b, int n) {
    for (int i = 0; i < n; i++) y[i] = a[i] + b[i];
}

/* s[P] = q[HS] · K[P,HS]ᵀ · scale */
static void attn_scores_ref(float *s, const float *q, const float *k, int n_pos,
                            int hs, int ldk, float scale) {
    for (int j = 0; j < n_pos; j++) {
        const float *kj = k + (size_t)j * ldk;
        float acc = 0.0f;
        for (int i = 0; i < hs; i++) acc += q[i] * kj[i];
        s[j] = acc * scale;
    }
}

/* o[HS] = p[P] · V[P,HS] */
static void attn_mix_ref(float *o, const float *p, const float *v, int n_pos, int hs,
                         int ldk) {
    for (int i = 0; i < hs; i++) o[i] = 0.0f;
    for (int j = 0; j < n_pos; j++) {
        const float *vj = v + (size_t)j * ldk;
        for (int i = 0; i < hs; i++) o[i] += p[j] * vj[i];
    }
}

/* o[HS] = softmax(q·Kᵀ·scale) · V over P positions; p[P] = the weights */
static void attn_decode_ref(float *o, float *p, const float *q, const float *k,
                            const float *v, int n_pos, int hs, int ldk, float scale) {
    attn_scores_ref(p, q, k, n_pos, hs, ldk, scale);
    softmax_ref(p, n_pos);
    attn_mix_ref(o, p, v, n_pos, hs, ldk);
}

/* A K or V head of the cache: rows ld elements apart, in f32 or IEEE half.
 * The attention references below read it through kv_row, so one body
 * serves both caches. */
typedef struct kv_rows {
    const float *f32;    /* the f32 rows, or NULL: */
    const uint16_t *f16; /* the f16 rows */
    size_t ld;
    float *buf;          /* [hs]: an f16 row widened */
} kv_rows;

/* Row j as f32: where it is, or each element widened (tg_f16_to_f32, exact)
 * into buf; so the f16 result is the f32 one's on the widened cache. */
static const float *kv_row(const kv_rows *r, int j, int hs) {
    if (r->f32) return r->f32 + (size_t)j * r->ld;
    const uint16_t *h = r->f16 + (size_t)j * r->ld;
    for (int i = 0; i < hs; i++) r->buf[i] = tg_f16_to_f32(h[i]);
    return r->buf;
}

/* T causal queries; query t sees positions 0..pos0+t. The reference uses the
 * online-softmax recurrence one key at a time (no T×P buffer). */
static void attn_prefill_kv(float *o, const float *q, const kv_rows *k, const kv_rows *v, int T,
                            int pos0, int hs, int ldq, int ldo, float scale) {
    for (int t = 0; t < T; t++) {
        const float *qt = q + (size_t)t * ldq;
        float *ot = o + (size_t)t * ldo;
        float m = -INFINITY, l = 0.0f;
        for (int i = 0; i < hs; i++) ot[i] = 0.0f;
        for (int j = 0; j <= pos0 + t; j++) {
            const float *kj = kv_row(k, j, hs);
            float s = 0.0f;
            for (int i = 0; i < hs; i++) s += qt[i] * kj[i];
            s *= scale;
            if (s == -INFINITY) continue;
            const float *vj = kv_row(v, j, hs);
            float m_new = s > m ? s : m;
            float corr = expf(m - m_new); /* exp(-inf) = 0 on the first key */
            float e = expf(s - m_new);
            l = l * corr + e;
            for (int i = 0; i < hs; i++) ot[i] = ot[i] * corr + e * vj[i];
            m = m_new;
        }
        float inv = l > 0.0f ? 1.0f / l : 0.0f;
        for (int i = 0; i < hs; i++) ot[i] *= inv;
    }
}

static void attn_prefill_ref(float *o, const float *q, const float *k, const float *v,
                             int T, int pos0, int hs, int ldq, int ldk, int ldo,
                             float scale) {
    kv_rows K = {k, NULL, (size_t)ldk, NULL}, V = {v, NULL, (size_t)ldk, NULL};
    attn_prefill_kv(o, q, &K, &V, T, pos0, hs, ldq, ldo, scale);
}

/* y[T,N] = x / sqrt(mean(x²) + eps) · g */
static void rmsnorm_ref(float *y, const float *x, const float *g, int T, int n, float eps) {
    for (int t = 0; t < T; t++) {
        const float *xt = x + (size_t)t * n;
        float *yt = y + (size_t)t * n;
        float ss = 0.0f;
        for (int i = 0; i < n; i++) ss += xt[i] * xt[i];
        float r = 1.0f / sqrtf(ss / (float)n + eps);
        for (int i = 0; i < n; i++) yt[i] = xt[i] * r * g[i];
    }
}

/* y[N] = a / (1 + exp(-a)) · b */
static void silu_mul_ref(float *y, const float *a, const float *b, int n) {
    for (int i = 0; i < n; i++) y[i] = a[i] / (1.0f + expf(-a[i])) * b[i];
}

/* x[n_head, HS]: pair i of every head turned by (cs[i], sn[i]) */
static void rope_ref(float *x, const float *cs, const float *sn, int n_head, int hs, int d,
                     int halves) {
    int half = d / 2;
    for (int h = 0; h < n_head; h++) {
        float *xh = x + (size_t)h * hs;
        for (int i = 0; i < half; i++) {
            float *a = halves ? xh + i : xh + 2 * i;
            float *b = halves ? xh + i + half : xh + 2 * i + 1;
            float x0 = *a, x1 = *b;
            *a = x0 * cs[i] - x1 * sn[i];
            *b = x0 * sn[i] + x1 * cs[i];
        }
    }
}

/* G queries over one K/V head; each K and V row is read once for all G */
static void attn_decode_gqa_kv(float *o, float *p, const float *q, const kv_rows *k,
                               const kv_rows *v, int n_pos, int hs, int g, float scale) {
    for (int j = 0; j < n_pos; j++) {
        const float *kj = kv_row(k, j, hs);
        for (int r = 0; r < g; r++) {
            const float *qr = q + (size_t)r * hs;
            float s = 0.0f;
            for (int i = 0; i < hs; i++) s += qr[i] * kj[i];
            p[(size_t)r * n_pos + j] = s * scale;
        }
    }
    for (int r = 0; r < g; r++) softmax_ref(p + (size_t)r * n_pos, n_pos);
    for (int i = 0; i < g * hs; i++) o[i] = 0.0f;
    for (int j = 0; j < n_pos; j++) {
        const float *vj = kv_row(v, j, hs);
        for (int r = 0; r < g; r++) {
            float pj = p[(size_t)r * n_pos + j];
            float *orow = o + (size_t)r * hs;
            for (int i = 0; i < hs; i++) orow[i] += pj * vj[i];
        }
    }
}

static void attn_decode_gqa_ref(float *o, float *p, const float *q, const float *k,
                                const float *v, int n_pos, int hs, int g, float scale) {
    kv_rows K = {k, NULL, (size_t)hs, NULL}, V = {v, NULL, (size_t)hs, NULL};
    attn_decode_gqa_kv(o, p, q, &K, &V, n_pos, hs, g, scale);
}

/* The same over an f16 cache (rows hs apart): ws holds the widened K and V
 * rows (TG_KV16_WS(hs) >= 2·hs floats). */
static void attn_decode_gqa_f16_ref(float *o, float *p, const float *q, const uint16_t *k,
                                    const uint16_t *v, int n_pos, int hs, int g, float scale,
                                    float *ws) {
    kv_rows K = {NULL, k, (size_t)hs, ws}, V = {NULL, v, (size_t)hs, ws + hs};
    attn_decode_gqa_kv(o, p, q, &K, &V, n_pos, hs, g, scale);
}

static void attn_prefill_f16_ref(float *o, const float *q, const uint16_t *k, const uint16_t *v,
                                 int T, int pos0, int hs, int ldq, int ldo, float scale,
                                 float *ws) {
    kv_rows K = {NULL, k, (size_t)hs, ws}, V = {NULL, v, (size_t)hs, ws + hs};
    attn_prefill_kv(o, q, &K, &V, T, pos0, hs, ldq, ldo, scale);
}

static void f32_to_f16_ref(uint16_t *y, const float *x, int n) {
    for (int i = 0; i < n; i++) y[i] = tg_f32_to_f16(x[i]);
}

void tg_kernels_init_ref(tg_kernels *k) {
    k->matmul = tg_matmul_ref;
    k->softmax = softmax_ref;
    k->layernorm = layernorm_ref;
    k->gelu = gelu_ref;
    k->add = add_ref;
    k->attn_scores = attn_scores_ref;
    k->attn_mix = attn_mix_ref;
    k->attn_decode = attn_decode_ref;
    k->attn_prefill = attn_prefill_ref;
    k->rmsnorm = rmsnorm_ref;
    k->silu_mul = silu_mul_ref;
    k->rope = rope_ref;
    k->attn_decode_gqa = attn_decode_gqa_ref;
    k->attn_decode_gqa_f16 = attn_decode_gqa_f16_ref;
    k->attn_prefill_f16 = attn_prefill_f16_ref;
    k->attn_decode_stream = attn_decode_ref;
    k->attn_decode_gqa_stream = attn_decode_gqa_ref;
    k->attn_decode_gqa_f16_stream = attn_decode_gqa_f16_ref;
    k->f32_to_f16 = f32_to_f16_ref;
    tg_kernels_init_train_ref(k);
    tg_kernels_init_quant_ref(k);
}
