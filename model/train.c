/* train.c — what the trainer's architectures share (see train.h and
 * train_internal.h): the parameter arena, the threaded gemm, matmul and
 * causal attention forward and backward over heads and key/value groups,
 * embeddings, the classifier with the cross-entropy, AdamW.
 *
 * Every op is layer_forward(out, ..., inp, weight, bias, ...) and
 * layer_backward(dinp, dweight, dbias, dout, inp, weight, ...) over [BT, ·]
 * arrays; the matmuls and attention go through the engine's gemm kernel,
 * split over the pool by rows (the gemm's result does not depend on the
 * split), and the few reductions across rows (norm gains and biases,
 * matmul biases, embeddings, the loss, a K/V head's query heads) run in a
 * fixed order.
 */
#include "model/train_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- RNG and schedule ------------------------------------------------------ */

uint64_t tg_rng_next(tg_rng *r) {
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

double tg_rng_uniform(tg_rng *r) { return (double)(tg_rng_next(r) >> 11) * (1.0 / 9007199254740992.0); }

float tg_rng_normal(tg_rng *r) {
    double u1 = tg_rng_uniform(r), u2 = tg_rng_uniform(r);
    if (u1 < 1e-300) u1 = 1e-300;
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

float tg_train_lr(long s, long steps, long warmup, float lr_max, float lr_min) {
    if (s < warmup) return lr_max * (float)(s + 1) / (float)warmup;
    if (steps <= warmup) return lr_max;
    double frac = (double)(s - warmup) / (double)(steps - warmup);
    if (frac > 1.0) frac = 1.0;
    return lr_min + (float)(0.5 * (1.0 + cos(3.141592653589793 * frac))) * (lr_max - lr_min);
}

/* ---- The parameter table ----------------------------------------------------- */

const tg_gpt2_config *tg_trainer_config(const tg_trainer *tr) { return &tr->cfg; }
size_t tg_trainer_n_params(const tg_trainer *tr) { return tr->n_params; }
float *tg_trainer_params(tg_trainer *tr) { return tr->params; }
float *tg_trainer_grads(tg_trainer *tr) { return tr->grads; }
float *tg_trainer_adam_m(tg_trainer *tr) { return tr->m; }
float *tg_trainer_adam_v(tg_trainer *tr) { return tr->v; }
tg_train_params tg_trainer_param_table(tg_trainer *tr) { return tr->p; }
tg_train_params tg_trainer_grad_table(tg_trainer *tr) { return tr->g; }
tg_train_llama_params tg_trainer_llama_table(tg_trainer *tr) { return tr->lp; }
tg_train_llama_params tg_trainer_llama_grad_table(tg_trainer *tr) { return tr->lg; }
int tg_trainer_n_tensors(const tg_trainer *tr) { return tr->n_tensors; }
int tg_trainer_tied(const tg_trainer *tr) { return tr->tied; }
long tg_trainer_adam_t(const tg_trainer *tr) { return tr->adam_t; }
void tg_trainer_set_adam_t(tg_trainer *tr, long t) { tr->adam_t = t; }

tg_train_tensor tg_trainer_tensor(const tg_trainer *tr, int i) {
    tg_train_tensor t = {tr->arch->names[i], tr->sizes[i], tr->arch->decay[i]};
    return t;
}

static float *falloc(size_t n) { return n ? calloc(n, sizeof(float)) : NULL; }

/* Shape checks per architecture; widths into tr. */
static tg_status check_shape(tg_trainer *tr, const tg_model_config *c, tg_err *err) {
    if (c->n_layer < 1 || c->n_head < 1 || c->n_embd < 1 || c->n_ctx < 1 || c->n_vocab < 1 ||
        c->n_ff < 1)
        return tg_fail(err, TG_ERR_ARG, "train: layers, heads, width, feed-forward, context and vocabulary must be >= 1");
    if (c->arch == TG_ARCH_GPT2) {
        if (c->n_embd % c->n_head)
            return tg_fail(err, TG_ERR_ARG, "train: width %d is not divisible by %d heads",
                           c->n_embd, c->n_head);
        if (c->n_ff != 4 * c->n_embd)
            return tg_fail(err, TG_ERR_ARG, "train: feed-forward width %d is not 4 x %d", c->n_ff,
                           c->n_embd);
        if ((c->n_kv_head && c->n_kv_head != c->n_head) || (c->head_dim && c->head_dim != c->n_embd / c->n_head))
            return tg_fail(err, TG_ERR_ARG, "train: a GPT-2 has as many key/value heads as heads, of width E/H");
        tr->arch = &tg_train_gpt2;
    } else if (c->arch == TG_ARCH_LLAMA) {
        tg_status s = tg_llama_config_check(c, "train", err);
        if (s) return s;
        tr->arch = &tg_train_llama;
    } else {
        return tg_fail(err, TG_ERR_UNSUPPORTED, "train: no trainer for architecture %s", tg_arch_name(c->arch));
    }
    tr->E = c->n_embd, tr->H = c->n_head, tr->KVH = tg_config_n_kv_head(c);
    tr->HS = tg_config_head_dim(c), tr->Q = tr->H * tr->HS, tr->KV = tr->KVH * tr->HS;
    tr->QKV = tr->Q + 2 * tr->KV, tr->F = c->n_ff;
    tr->FU = c->arch == TG_ARCH_LLAMA ? 2 * c->n_ff : c->n_ff;
    return TG_OK;
}

tg_status tg_trainer_create(tg_trainer **out, const tg_gpt2_config *cfg, int B, int T,
                            int n_threads, const char *isa, tg_err *err) {
    return tg_trainer_create_ex(out, cfg, 0, B, T, n_threads, isa, err);
}

tg_status tg_trainer_create_ex(tg_trainer **out, const tg_model_config *cfg, int flags, int B,
                               int T, int n_threads, const char *isa, tg_err *err) {
    *out = NULL;
    tg_trainer *tr = calloc(1, sizeof *tr);
    if (!tr) return tg_fail(err, TG_ERR_NOMEM, "train: out of memory");
    tg_status st = check_shape(tr, cfg, err);
    if (st == TG_OK && (flags & TG_TRAIN_UNTIED) && cfg->arch != TG_ARCH_LLAMA)
        st = tg_fail(err, TG_ERR_ARG, "train: an untied classifier needs a Llama");
    if (st == TG_OK && (B < 1 || T < 1 || T > cfg->n_ctx))
        st = tg_fail(err, TG_ERR_RANGE, "train: batch %d x %d (context %d)", B, T, cfg->n_ctx);
    size_t wide = (size_t)cfg->n_vocab;
    int widths[3] = {tr->FU, tr->QKV, tr->E};
    for (int i = 0; i < 3; i++) wide = (size_t)widths[i] > wide ? (size_t)widths[i] : wide;
    if (st == TG_OK && ((double)B * T * wide > 1e9 || (double)cfg->n_layer * B * cfg->n_head * T * T > 1e9))
        st = tg_fail(err, TG_ERR_RANGE, "train: batch %d x %d is too large for this model", B, T);
    if (st != TG_OK) {
        free(tr);
        return st;
    }
    tr->cfg = *cfg;
    tr->tied = !(flags & TG_TRAIN_UNTIED);
    tr->maxB = B, tr->maxT = T;
    tg_isa sel;
    st = tg_isa_select(isa, &sel, err);
    if (st == TG_OK) st = tg_engine_init(&tr->eng, sel, err);
    if (st == TG_OK) st = tg_pool_create(&tr->pool, n_threads, err);
    if (st != TG_OK) {
        tg_trainer_free(tr);
        return st;
    }
    tr->nth = n_threads;
    tr->n_tensors = tr->arch->sizes(cfg, tr->tied, tr->sizes);
    for (int i = 0; i < tr->n_tensors; i++) tr->n_params += tr->sizes[i];

    size_t L = cfg->n_layer, E = tr->E, V = cfg->n_vocab, H = cfg->n_head;
    size_t BT = (size_t)B * T, Qw = tr->Q, QKV = tr->QKV, F = tr->F, FU = tr->FU;
    int llama = cfg->arch == TG_ARCH_LLAMA;
    tr->params = falloc(tr->n_params);
    tr->grads = falloc(tr->n_params);
    tr->m = falloc(tr->n_params);
    tr->v = falloc(tr->n_params);
    tr->tokens = calloc(BT, sizeof(int));
    tr->targets = calloc(BT, sizeof(int));
    tr->res = falloc((L + 1) * BT * E);
    tr->mid = falloc(L * BT * E);
    tr->ln1 = falloc(L * BT * E);
    tr->ln2 = falloc(L * BT * E);
    tr->qkv = falloc(L * BT * QKV);
    tr->att = falloc(L * B * H * T * T);
    tr->atty = falloc(L * BT * Qw);
    tr->up = falloc(L * BT * FU);
    tr->act = falloc(L * BT * F);
    tr->lnf = falloc(BT * E);
    tr->probs = falloc(BT * V);
    tr->nll = falloc(BT);
    tr->dres = falloc(BT * E);
    tr->dln = falloc(BT * E);
    tr->datty = falloc(BT * Qw);
    tr->dqkv = falloc(BT * QKV);
    tr->dup = falloc(BT * FU);
    tr->dact = llama ? falloc(BT * F) : NULL;
    tr->ln_part = falloc((BT + TG_TR_CHUNK - 1) / TG_TR_CHUNK * 2 * E);
    tr->ws = falloc((size_t)n_threads * TG_GEMM_WS);
    tr->dp = falloc((size_t)n_threads * T * T);
    int ok = tr->params && tr->grads && tr->m && tr->v && tr->tokens && tr->targets &&
             tr->res && tr->mid && tr->ln1 && tr->ln2 && tr->qkv && tr->att && tr->atty &&
             tr->up && tr->act && tr->lnf && tr->probs && tr->nll && tr->dres && tr->dln &&
             tr->datty && tr->dqkv && tr->dup && (tr->dact || !llama) && tr->ln_part && tr->ws &&
             tr->dp;
    if (ok && llama) { /* cos and sin of pos · θ^(-2i/D) in double, as model/llama.c */
        int half = tg_config_rope_dim(cfg) / 2;
        size_t n = (size_t)cfg->n_ctx * half;
        tr->rope_cos = falloc(n), tr->rope_sin = falloc(n), tr->rope_nsin = falloc(n);
        ok = (tr->rope_cos && tr->rope_sin && tr->rope_nsin) || n == 0;
        double theta = tg_config_rope_theta(cfg);
        for (int i = 0; ok && i < half; i++) {
            double freq = pow(theta, -2.0 * i / tg_config_rope_dim(cfg));
            for (int p = 0; p < cfg->n_ctx; p++) {
                double a = p * freq;
                size_t at = (size_t)p * half + i;
                tr->rope_cos[at] = (float)cos(a);
                tr->rope_sin[at] = (float)sin(a);
                tr->rope_nsin[at] = -tr->rope_sin[at];
            }
        }
    }
    if (!ok) {
        tg_trainer_free(tr);
        return tg_fail(err, TG_ERR_NOMEM, "train: out of memory for a %d x %d batch", B, T);
    }
    tr->arch->carve(tr);
    tr->arch->reset(tr);
    *out = tr;
    return TG_OK;
}

void tg_trainer_free(tg_trainer *tr) {
    if (!tr) return;
    tg_pool_free(tr->pool);
    float *bufs[] = {tr->params, tr->grads, tr->m, tr->v, tr->res, tr->mid, tr->ln1,
                     tr->ln2, tr->qkv, tr->att, tr->atty, tr->up, tr->act, tr->lnf,
                     tr->probs, tr->nll, tr->dres, tr->dln, tr->datty, tr->dqkv, tr->dup,
                     tr->dact, tr->ln_part, tr->ws, tr->dp, tr->rope_cos, tr->rope_sin,
                     tr->rope_nsin};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) free(bufs[i]);
    free(tr->tokens);
    free(tr->targets);
    free(tr);
}

void tg_trainer_init_params(tg_trainer *tr, uint64_t seed) {
    tg_rng r = {seed};
    memset(tr->params, 0, tr->n_params * sizeof(float));
    tr->arch->reset(tr);
    tr->arch->init(tr, &r);
    memset(tr->m, 0, tr->n_params * sizeof(float));
    memset(tr->v, 0, tr->n_params * sizeof(float));
    tr->adam_t = 0;
}

void tg_tr_init_normals(tg_trainer *tr, tg_rng *r, const float *resid_a, const float *resid_b) {
    float resid_std = 0.02f / sqrtf(2.0f * (float)tr->cfg.n_layer);
    float *t = tr->params;
    for (int i = 0; i < tr->n_tensors; t += tr->sizes[i], i++) {
        if (!tr->arch->decay[i]) continue;
        float std = (t == resid_a || t == resid_b) ? resid_std : 0.02f;
        for (size_t j = 0; j < tr->sizes[i]; j++) t[j] = std * tg_rng_normal(r);
    }
}

/* ---- Threaded gemm ----------------------------------------------------------- */

typedef struct gemm_job {
    const tg_trainer *tr;
    float *c;
    int ldc;
    const float *a, *b;
    ptrdiff_t rsa, csa, rsb, csb;
    int M, N, K, acc;
    const float *bias;
} gemm_job;

static void gemm_rows(void *ctx, int m0, int m1, int ith) {
    const gemm_job *j = ctx;
    j->tr->eng.k.gemm(j->c, j->ldc, j->a, j->rsa, j->csa, j->b, j->rsb, j->csb, j->M, j->N,
                      j->K, TG_TRI_NONE, m0, m1, j->acc, j->bias,
                      j->tr->ws + (size_t)ith * TG_GEMM_WS);
}

/* C[M,N] = (C if acc, else bias or 0) + A·B split over the pool by rows of C */
static void gemm(tg_trainer *tr, float *c, int ldc, const float *a, ptrdiff_t rsa,
                 ptrdiff_t csa, const float *b, ptrdiff_t rsb, ptrdiff_t csb, int M, int N,
                 int K, int acc, const float *bias) {
    gemm_job j = {tr, c, ldc, a, b, rsa, csa, rsb, csb, M, N, K, acc, bias};
    tg_parallel_for(tr->pool, M, 48, 2.0 * M * N * K, gemm_rows, &j);
}

/* ---- Shared layers ------------------------------------------------------------ */

void tg_tr_matmul_forward(tg_trainer *tr, float *out, const float *inp, const float *w,
                          const float *b, int BT, int in, int outc) {
    gemm(tr, out, outc, inp, in, 1, w, 1, in, BT, outc, in, 0, b);
}

typedef struct bias_job {
    float *db;
    const float *dout;
    int BT, OUT;
} bias_job;

static void bias_cols(void *ctx, int o0, int o1, int ith) {
    (void)ith;
    const bias_job *j = ctx;
    for (int t = 0; t < j->BT; t++) {
        const float *d = j->dout + (size_t)t * j->OUT;
        for (int o = o0; o < o1; o++) j->db[o] += d[o];
    }
}

void tg_tr_matmul_backward(tg_trainer *tr, float *dinp, float *dw, float *db, const float *dout,
                           const float *inp, const float *w, int BT, int in, int out) {
    if (dinp) gemm(tr, dinp, in, dout, out, 1, w, in, 1, BT, in, out, 0, NULL);
    gemm(tr, dw, in, dout, 1, out, inp, in, 1, out, in, BT, 1, NULL);
    if (db) {
        bias_job j = {db, dout, BT, out};
        tg_parallel_for(tr->pool, out, 16, (double)BT * out, bias_cols, &j);
    }
}

void tg_tr_residual(float *out, const float *a, const float *b, size_t n) {
    for (size_t i = 0; i < n; i++) out[i] = a[i] + b[i];
}

typedef struct chunk_job {
    tg_trainer *tr;
    int BT;
    tg_tr_chunk_fn fn;
    const void *ctx;
} chunk_job;

static void norm_chunks(void *ctx, int c0, int c1, int ith) {
    (void)ith;
    const chunk_job *j = ctx;
    int E = j->tr->E;
    for (int c = c0; c < c1; c++) {
        int t0 = c * TG_TR_CHUNK, t1 = t0 + TG_TR_CHUNK < j->BT ? t0 + TG_TR_CHUNK : j->BT;
        float *part = j->tr->ln_part + (size_t)c * 2 * E;
        memset(part, 0, sizeof(float) * 2 * E);
        j->fn(j->ctx, t0, t1, part);
    }
}

void tg_tr_norm_backward(tg_trainer *tr, int BT, double work, tg_tr_chunk_fn fn,
                         const void *ctx, float *dg, float *db) {
    int chunks = (BT + TG_TR_CHUNK - 1) / TG_TR_CHUNK, E = tr->E;
    chunk_job j = {tr, BT, fn, ctx};
    tg_parallel_for(tr->pool, chunks, 1, work, norm_chunks, &j);
    for (int c = 0; c < chunks; c++) {
        const float *part = tr->ln_part + (size_t)c * 2 * E;
        for (int i = 0; i < E; i++) dg[i] += part[i];
        if (db)
            for (int i = 0; i < E; i++) db[i] += part[E + i];
    }
}

typedef struct att_job {
    tg_trainer *tr;
    float *out, *att, *dinp;
    const float *inp, *dout;
    int B, T;
} att_job;

/* One (b, h): att[T,T] = causal softmax(q·kᵀ/√HS), out[T, HS] = att · v,
 * with k and v those of K/V head h/G. The gemm's triangular cases compute
 * and read only the causal half (the upper triangle of att is never
 * written: it stays 0 from the allocation). */
static void att_fwd_items(void *ctx, int i0, int i1, int ith) {
    const att_job *j = ctx;
    const tg_trainer *tr = j->tr;
    const tg_kernels *k = &tr->eng.k;
    float *ws = tr->ws + (size_t)ith * TG_GEMM_WS;
    int T = j->T, HS = tr->HS, QKV = tr->QKV, G = tr->H / tr->KVH;
    float scale = 1.0f / sqrtf((float)HS);
    for (int item = i0; item < i1; item++) {
        int b = item / tr->H, h = item % tr->H;
        const float *row = j->inp + (size_t)b * T * QKV;
        const float *q = row + h * HS, *kk = row + tr->Q + (h / G) * HS, *v = kk + tr->KV;
        float *att = j->att + (size_t)item * T * T;
        float *out = j->out + (size_t)b * T * tr->Q + h * HS;
        k->gemm(att, T, q, QKV, 1, kk, 1, QKV, T, T, HS, TG_TRI_C_LOWER, 0, T, 0, NULL, ws);
        for (int t = 0; t < T; t++) {
            float *r = att + (size_t)t * T;
            for (int s = 0; s <= t; s++) r[s] *= scale;
            k->softmax(r, t + 1);
        }
        k->gemm(out, tr->Q, att, T, 1, v, QKV, 1, T, HS, T, TG_TRI_A_LOWER, 0, T, 0, NULL, ws);
    }
}

void tg_tr_attention_forward(tg_trainer *tr, float *out, float *att, const float *inp, int B,
                             int T) {
    att_job j = {tr, out, att, NULL, inp, NULL, B, T};
    tg_parallel_for(tr->pool, B * tr->H, 1, 4.0 * B * T * (double)T * tr->Q, att_fwd_items, &j);
}

/* One (b, K/V head) of the attention backward: for its G query heads in
 * order, given dout[T,HS] (slices of [BT,Q]), writes dq and adds to dk, dv
 * (slices of dinp[BT,QKV]). */
static void att_bwd_items(void *ctx, int i0, int i1, int ith) {
    const att_job *j = ctx;
    const tg_trainer *tr = j->tr;
    const tg_kernels *k = &tr->eng.k;
    float *ws = tr->ws + (size_t)ith * TG_GEMM_WS;
    int T = j->T, HS = tr->HS, QKV = tr->QKV, G = tr->H / tr->KVH;
    float scale = 1.0f / sqrtf((float)HS);
    float *ds = tr->dp + (size_t)ith * T * T;
    for (int item = i0; item < i1; item++) {
        int b = item / tr->KVH, kvh = item % tr->KVH;
        const float *row = j->inp + (size_t)b * T * QKV;
        float *drow = j->dinp + (size_t)b * T * QKV;
        const float *kk = row + tr->Q + kvh * HS, *v = kk + tr->KV;
        float *dk = drow + tr->Q + kvh * HS, *dv = dk + tr->KV;
        for (int gi = 0; gi < G; gi++) {
            int h = kvh * G + gi;
            const float *q = row + h * HS;
            float *dq = drow + h * HS;
            const float *att = j->att + ((size_t)b * tr->H + h) * T * T;
            const float *dout = j->dout + (size_t)b * T * tr->Q + h * HS;
            /* dP = dout · vᵀ, then dS = softmax backward (scaled), causal rows only */
            k->gemm(ds, T, dout, tr->Q, 1, v, 1, QKV, T, T, HS, TG_TRI_C_LOWER, 0, T, 0, NULL, ws);
            for (int t = 0; t < T; t++) {
                float *r = ds + (size_t)t * T;
                k->softmax_bwd(r, att + (size_t)t * T, r, t + 1, scale);
            }
            /* dq[t] = Σ_{s<=t} dS[t,s] k[s] */
            k->gemm(dq, QKV, ds, T, 1, kk, QKV, 1, T, HS, T, TG_TRI_A_LOWER, 0, T, 0, NULL, ws);
            /* dk[s] += Σ_{t>=s} dS[t,s] q[t];  dv[s] += Σ_{t>=s} P[t,s] dout[t] */
            k->gemm(dk, QKV, ds, 1, T, q, QKV, 1, T, HS, T, TG_TRI_A_UPPER, 0, T, gi > 0, NULL, ws);
            k->gemm(dv, QKV, att, 1, T, dout, tr->Q, 1, T, HS, T, TG_TRI_A_UPPER, 0, T, gi > 0, NULL, ws);
        }
    }
}

void tg_tr_attention_backward(tg_trainer *tr, float *dinp, const float *dout, const float *inp,
                              const float *att, int B, int T) {
    att_job j = {tr, NULL, (float *)att, dinp, inp, dout, B, T};
    tg_parallel_for(tr->pool, B * tr->KVH, 1, 8.0 * B * T * (double)T * tr->Q, att_bwd_items, &j);
}

/* ---- Embeddings, classifier, loss ----------------------------------------------- */

/* res[0][BT,E] = tok[tokens] (+ pos[t]) */
static void embed_forward(tg_trainer *tr, int B, int T) {
    int E = tr->E;
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            float *o = tr->res + ((size_t)b * T + t) * E;
            const float *we = tr->tok_w + (size_t)tr->tokens[b * T + t] * E;
            if (tr->pos_w) {
                const float *pe = tr->pos_w + (size_t)t * E;
                for (int i = 0; i < E; i++) o[i] = we[i] + pe[i];
            } else {
                memcpy(o, we, sizeof(float) * E);
            }
        }
}

/* the embeddings' gradients from dres, in token order */
static void embed_backward(tg_trainer *tr, int BT, int T) {
    int E = tr->E;
    for (int i = 0; i < BT; i++) {
        const float *d = tr->dres + (size_t)i * E;
        float *we = tr->tok_g + (size_t)tr->tokens[i] * E;
        for (int e = 0; e < E; e++) we[e] += d[e];
        if (tr->pos_g) {
            float *pe = tr->pos_g + (size_t)(i % T) * E;
            for (int e = 0; e < E; e++) pe[e] += d[e];
        }
    }
}

typedef struct ce_job {
    tg_trainer *tr;
    int V;
} ce_job;

/* probs[t] = softmax(logits[t]) in place; nll[t] = -log probs[t][target] */
static void ce_fwd_rows(void *ctx, int t0, int t1, int ith) {
    (void)ith;
    const ce_job *j = ctx;
    tg_trainer *tr = j->tr;
    for (int t = t0; t < t1; t++) {
        float *p = tr->probs + (size_t)t * j->V;
        tr->eng.k.softmax(p, j->V);
        tr->nll[t] = tr->targets[t] < 0 ? 0.0f : -logf(p[tr->targets[t]]);
    }
}

tg_status tg_trainer_forward(tg_trainer *tr, const int *tokens, const int *targets, int B,
                             int T, float *loss, float *nll, tg_err *err) {
    const tg_gpt2_config *c = &tr->cfg;
    if (B < 1 || T < 1 || B > tr->maxB || T > tr->maxT || (long)B * T > (long)tr->maxB * tr->maxT)
        return tg_fail(err, TG_ERR_RANGE, "train: batch %d x %d exceeds the trainer's %d x %d",
                       B, T, tr->maxB, tr->maxT);
    int BT = B * T, E = c->n_embd, V = c->n_vocab;
    for (int i = 0; i < BT; i++) {
        if (tokens[i] < 0 || tokens[i] >= V || targets[i] < -1 || targets[i] >= V)
            return tg_fail(err, TG_ERR_ARG, "train: token id %d at %d is outside [0, %d)",
                           tokens[i] < 0 || tokens[i] >= V ? tokens[i] : targets[i], i, V);
    }
    tr->n_scored = 0;
    for (int i = 0; i < BT; i++) tr->n_scored += targets[i] >= 0;
    tr->B = B, tr->T = T;
    memcpy(tr->tokens, tokens, sizeof(int) * BT);
    memcpy(tr->targets, targets, sizeof(int) * BT);

    embed_forward(tr, B, T);
    tr->arch->forward(tr, B, T);
    tg_tr_matmul_forward(tr, tr->probs, tr->lnf, tr->cls_w, NULL, BT, E, V);
    ce_job cj = {tr, V};
    tg_parallel_for(tr->pool, BT, 16, 10.0 * BT * V, ce_fwd_rows, &cj);
    double sum = 0.0;
    for (int i = 0; i < BT; i++) sum += tr->nll[i];
    if (nll) memcpy(nll, tr->nll, sizeof(float) * BT);
    *loss = tr->n_scored ? (float)(sum / tr->n_scored) : 0.0f;
    return TG_OK;
}

static void ce_bwd_rows(void *ctx, int t0, int t1, int ith) {
    (void)ith;
    const ce_job *j = ctx;
    tg_trainer *tr = j->tr;
    float inv = tr->n_scored ? 1.0f / (float)tr->n_scored : 0.0f;
    for (int t = t0; t < t1; t++) {
        float *p = tr->probs + (size_t)t * j->V;
        if (tr->targets[t] < 0) {
            memset(p, 0, sizeof(float) * j->V);
            continue;
        }
        p[tr->targets[t]] -= 1.0f;
        for (int i = 0; i < j->V; i++) p[i] *= inv;
    }
}

const float *tg_trainer_probs(const tg_trainer *tr) { return tr->probs; }

void tg_trainer_zero_grad(tg_trainer *tr) { memset(tr->grads, 0, tr->n_params * sizeof(float)); }

void tg_trainer_backward(tg_trainer *tr) {
    int B = tr->B, T = tr->T, BT = B * T, E = tr->E, V = tr->cfg.n_vocab;
    /* loss -> logits (in place over probs) -> lnf */
    ce_job cj = {tr, V};
    tg_parallel_for(tr->pool, BT, 16, 2.0 * BT * V, ce_bwd_rows, &cj);
    tg_tr_matmul_backward(tr, tr->dln, tr->cls_g, NULL, tr->probs, tr->lnf, tr->cls_w, BT, E, V);
    tr->arch->backward(tr, B, T);
    embed_backward(tr, BT, T);
}

/* ---- AdamW ----------------------------------------------------------------- */

float tg_trainer_step(tg_trainer *tr, const tg_adamw *opt, float lr, float grad_clip) {
    const tg_kernels *k = &tr->eng.k;
    float norm = (float)sqrt(k->sumsq(tr->grads, tr->n_params));
    float gscale = 1.0f;
    if (grad_clip > 0.0f && norm > grad_clip) gscale = grad_clip / (norm + 1e-6f);
    tr->adam_t++;
    /* bias corrections in double, as PyTorch computes its scalars */
    double bc1 = 1.0 - pow(opt->beta1, (double)tr->adam_t);
    double bc2 = 1.0 - pow(opt->beta2, (double)tr->adam_t);
    tg_adamw_coef c = {gscale, 1.0f, opt->beta1, opt->beta2, (float)(lr / bc1),
                       (float)sqrt(bc2), opt->eps};
    size_t off = 0;
    for (int ti = 0; ti < tr->n_tensors; ti++) {
        c.decay = tr->arch->decay[ti] ? 1.0f - lr * opt->weight_decay : 1.0f;
        k->adamw(tr->params + off, tr->m + off, tr->v + off, tr->grads + off, tr->sizes[ti], &c);
        off += tr->sizes[ti];
    }
    return norm;
}
