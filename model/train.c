/* train.c — GPT-2 forward and backward for training, AdamW (see train.h).
 *
 * Every op is layer_forward(out, ..., inp, weight, bias, ...) and
 * layer_backward(dinp, dweight, dbias, dout, inp, weight, ...) over [BT, ·]
 * arrays; the matmuls and attention go through the engine's gemm kernel,
 * split over the pool by rows (the gemm's result does not depend on the
 * split), and the few reductions across rows (layernorm gains and biases,
 * matmul biases, embeddings, the loss) run in a fixed order.
 */
#include "model/train.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Rows per chunk of the layernorm backward's partial gain/bias sums: fixed,
 * so that the sum order does not depend on the thread count. */
#define LN_CHUNK 64
struct tg_trainer {
    tg_gpt2_config cfg;
    int maxB, maxT;
    tg_engine eng;
    tg_pool *pool;
    int nth;
    size_t n_params;
    size_t sizes[TG_TRAIN_N_TENSORS];
    float *params, *grads, *m, *v;
    tg_train_params p, g;
    long adam_t;

    /* activations of the last forward (B, T as used) */
    int B, T;
    int *tokens, *targets;  /* [BT]; a target of -1 is not scored */
    int n_scored;           /* targets that are not -1 */
    float *res;             /* [L+1, BT, E] residual stream entering each layer (and the final) */
    float *mid;             /* [L, BT, E] residual after attention */
    float *ln1, *ln2;       /* [L, BT, E] */
    float *qkv;             /* [L, BT, 3E] */
    float *att;             /* [L, B, H, T, T] attention weights (causal rows) */
    float *atty;            /* [L, BT, E] heads' outputs, before the projection */
    float *up, *act;        /* [L, BT, F] before and after GELU */
    float *lnf;             /* [BT, E] */
    float *probs;           /* [BT, V] softmax of the logits; dlogits in the backward */
    float *nll;             /* [BT] */

    /* backward scratch */
    float *dres;            /* [BT, E] gradient of the residual stream */
    float *dln;             /* [BT, E] */
    float *datty;           /* [BT, E] */
    float *dqkv;            /* [BT, 3E] */
    float *dup;             /* [BT, F] */
    float *ln_part;         /* [ceil(BT/LN_CHUNK), 2E] layernorm partial sums */
    float *ws;              /* [nth, TG_GEMM_WS] gemm scratch */
    float *dp;              /* [nth, T, T] attention backward scratch */
};

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

static void tensor_sizes(const tg_gpt2_config *c, size_t *s) {
    size_t L = c->n_layer, E = c->n_embd, F = c->n_ff, V = c->n_vocab, C = c->n_ctx;
    size_t sz[TG_TRAIN_N_TENSORS] = {V * E, C * E, L * E, L * E, L * 3 * E * E, L * 3 * E,
                                     L * E * E, L * E, L * E, L * E, L * F * E, L * F,
                                     L * E * F, L * E, E, E};
    memcpy(s, sz, sizeof sz);
}

static const char *const tensor_names[TG_TRAIN_N_TENSORS] = {
    "wte", "wpe", "ln1_w", "ln1_b", "qkv_w", "qkv_b", "proj_w", "proj_b",
    "ln2_w", "ln2_b", "up_w", "up_b", "down_w", "down_b", "lnf_w", "lnf_b"};
static const int tensor_decay[TG_TRAIN_N_TENSORS] = {1, 1, 0, 0, 1, 0, 1, 0,
                                                     0, 0, 1, 0, 1, 0, 0, 0};

static tg_train_params carve(float *base, const size_t *s) {
    float **ptrs[TG_TRAIN_N_TENSORS];
    tg_train_params t;
    ptrs[0] = &t.wte, ptrs[1] = &t.wpe, ptrs[2] = &t.ln1_w, ptrs[3] = &t.ln1_b;
    ptrs[4] = &t.qkv_w, ptrs[5] = &t.qkv_b, ptrs[6] = &t.proj_w, ptrs[7] = &t.proj_b;
    ptrs[8] = &t.ln2_w, ptrs[9] = &t.ln2_b, ptrs[10] = &t.up_w, ptrs[11] = &t.up_b;
    ptrs[12] = &t.down_w, ptrs[13] = &t.down_b, ptrs[14] = &t.lnf_w, ptrs[15] = &t.lnf_b;
    for (int i = 0; i < TG_TRAIN_N_TENSORS; i++) {
        *ptrs[i] = base;
        base += s[i];
    }
    return t;
}

const tg_gpt2_config *tg_trainer_config(const tg_trainer *tr) { return &tr->cfg; }
size_t tg_trainer_n_params(const tg_trainer *tr) { return tr->n_params; }
float *tg_trainer_params(tg_trainer *tr) { return tr->params; }
float *tg_trainer_grads(tg_trainer *tr) { return tr->grads; }
float *tg_trainer_adam_m(tg_trainer *tr) { return tr->m; }
float *tg_trainer_adam_v(tg_trainer *tr) { return tr->v; }
tg_train_params tg_trainer_param_table(tg_trainer *tr) { return tr->p; }
tg_train_params tg_trainer_grad_table(tg_trainer *tr) { return tr->g; }
long tg_trainer_adam_t(const tg_trainer *tr) { return tr->adam_t; }
void tg_trainer_set_adam_t(tg_trainer *tr, long t) { tr->adam_t = t; }

tg_train_tensor tg_trainer_tensor(const tg_trainer *tr, int i) {
    tg_train_tensor t = {tensor_names[i], tr->sizes[i], tensor_decay[i]};
    return t;
}

static float *falloc(size_t n) { return n ? calloc(n, sizeof(float)) : NULL; }

tg_status tg_trainer_create(tg_trainer **out, const tg_gpt2_config *cfg, int B, int T,
                            int n_threads, const char *isa, tg_err *err) {
    *out = NULL;
    if (cfg->n_layer < 1 || cfg->n_head < 1 || cfg->n_embd < 1 || cfg->n_ctx < 1 ||
        cfg->n_vocab < 1)
        return tg_fail(err, TG_ERR_ARG, "train: layers, heads, width, context and vocabulary must be >= 1");
    if (cfg->n_embd % cfg->n_head)
        return tg_fail(err, TG_ERR_ARG, "train: width %d is not divisible by %d heads",
                       cfg->n_embd, cfg->n_head);
    if (cfg->n_ff != 4 * cfg->n_embd)
        return tg_fail(err, TG_ERR_ARG, "train: feed-forward width %d is not 4 x %d", cfg->n_ff,
                       cfg->n_embd);
    if (B < 1 || T < 1 || T > cfg->n_ctx)
        return tg_fail(err, TG_ERR_RANGE, "train: batch %d x %d (context %d)", B, T, cfg->n_ctx);
    if ((double)B * T * (cfg->n_vocab > 4 * cfg->n_embd ? cfg->n_vocab : 4 * cfg->n_embd) > 1e9 ||
        (double)cfg->n_layer * B * cfg->n_head * T * T > 1e9)
        return tg_fail(err, TG_ERR_RANGE, "train: batch %d x %d is too large for this model", B, T);
    tg_trainer *tr = calloc(1, sizeof *tr);
    if (!tr) return tg_fail(err, TG_ERR_NOMEM, "train: out of memory");
    tr->cfg = *cfg;
    tr->maxB = B, tr->maxT = T;
    tg_isa sel;
    tg_status st = tg_isa_select(isa, &sel, err);
    if (st == TG_OK) st = tg_engine_init(&tr->eng, sel, err);
    if (st == TG_OK) st = tg_pool_create(&tr->pool, n_threads, err);
    if (st != TG_OK) {
        tg_trainer_free(tr);
        return st;
    }
    tr->nth = n_threads;
    tensor_sizes(cfg, tr->sizes);
    for (int i = 0; i < TG_TRAIN_N_TENSORS; i++) tr->n_params += tr->sizes[i];

    size_t L = cfg->n_layer, E = cfg->n_embd, F = cfg->n_ff, V = cfg->n_vocab, H = cfg->n_head;
    size_t BT = (size_t)B * T;
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
    tr->qkv = falloc(L * BT * 3 * E);
    tr->att = falloc(L * B * H * T * T);
    tr->atty = falloc(L * BT * E);
    tr->up = falloc(L * BT * F);
    tr->act = falloc(L * BT * F);
    tr->lnf = falloc(BT * E);
    tr->probs = falloc(BT * V);
    tr->nll = falloc(BT);
    tr->dres = falloc(BT * E);
    tr->dln = falloc(BT * E);
    tr->datty = falloc(BT * E);
    tr->dqkv = falloc(BT * 3 * E);
    tr->dup = falloc(BT * F);
    tr->ln_part = falloc((BT + LN_CHUNK - 1) / LN_CHUNK * 2 * E);
    tr->ws = falloc((size_t)n_threads * TG_GEMM_WS);
    tr->dp = falloc((size_t)n_threads * T * T);
    if (!tr->params || !tr->grads || !tr->m || !tr->v || !tr->tokens || !tr->targets ||
        !tr->res || !tr->mid || !tr->ln1 || !tr->ln2 || !tr->qkv || !tr->att || !tr->atty ||
        !tr->up || !tr->act || !tr->lnf || !tr->probs || !tr->nll || !tr->dres || !tr->dln ||
        !tr->datty || !tr->dqkv || !tr->dup || !tr->ln_part || !tr->ws || !tr->dp) {
        tg_trainer_free(tr);
        return tg_fail(err, TG_ERR_NOMEM, "train: out of memory for a %d x %d batch", B, T);
    }
    tr->p = carve(tr->params, tr->sizes);
    tr->g = carve(tr->grads, tr->sizes);
    for (size_t i = 0; i < L * E; i++) tr->p.ln1_w[i] = tr->p.ln2_w[i] = 1.0f;
    for (size_t i = 0; i < E; i++) tr->p.lnf_w[i] = 1.0f;
    *out = tr;
    return TG_OK;
}

void tg_trainer_free(tg_trainer *tr) {
    if (!tr) return;
    tg_pool_free(tr->pool);
    float *bufs[] = {tr->params, tr->grads, tr->m, tr->v, tr->res, tr->mid, tr->ln1,
                     tr->ln2, tr->qkv, tr->att, tr->atty, tr->up, tr->act, tr->lnf,
                     tr->probs, tr->nll, tr->dres, tr->dln, tr->datty, tr->dqkv, tr->dup,
                     tr->ln_part, tr->ws, tr->dp};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) free(bufs[i]);
    free(tr->tokens);
    free(tr->targets);
    free(tr);
}

void tg_trainer_init_params(tg_trainer *tr, uint64_t seed) {
    tg_rng r = {seed};
    const tg_gpt2_config *c = &tr->cfg;
    float resid_std = 0.02f / sqrtf(2.0f * (float)c->n_layer);
    memset(tr->params, 0, tr->n_params * sizeof(float));
    float *base = tr->params;
    for (int i = 0; i < TG_TRAIN_N_TENSORS; i++) {
        float *t = base;
        base += tr->sizes[i];
        if (t == tr->p.ln1_w || t == tr->p.ln2_w || t == tr->p.lnf_w) {
            for (size_t j = 0; j < tr->sizes[i]; j++) t[j] = 1.0f;
        } else if (tensor_decay[i]) {
            float std = (t == tr->p.proj_w || t == tr->p.down_w) ? resid_std : 0.02f;
            for (size_t j = 0; j < tr->sizes[i]; j++) t[j] = std * tg_rng_normal(&r);
        }
    }
    memset(tr->m, 0, tr->n_params * sizeof(float));
    memset(tr->v, 0, tr->n_params * sizeof(float));
    tr->adam_t = 0;
}

void tg_trainer_weights(tg_trainer *tr, tg_gpt2_weights *w, tg_gpt2_layer *layers) {
    const tg_gpt2_config *c = &tr->cfg;
    size_t E = c->n_embd, F = c->n_ff;
    const tg_train_params *p = &tr->p;
    int iE = c->n_embd, iF = c->n_ff;
    w->wte = tg_weight_f32(p->wte, c->n_vocab, iE);
    w->wpe = p->wpe;
    w->lnf_w = p->lnf_w;
    w->lnf_b = p->lnf_b;
    w->lm_head = w->wte;
    w->tied = 1;
    w->layers = layers;
    for (int l = 0; l < c->n_layer; l++) {
        tg_gpt2_layer *y = &layers[l];
        y->ln1_w = p->ln1_w + l * E, y->ln1_b = p->ln1_b + l * E;
        y->qkv_w = tg_weight_f32(p->qkv_w + l * 3 * E * E, 3 * iE, iE), y->qkv_b = p->qkv_b + l * 3 * E;
        y->proj_w = tg_weight_f32(p->proj_w + l * E * E, iE, iE), y->proj_b = p->proj_b + l * E;
        y->ln2_w = p->ln2_w + l * E, y->ln2_b = p->ln2_b + l * E;
        y->up_w = tg_weight_f32(p->up_w + l * F * E, iF, iE), y->up_b = p->up_b + l * F;
        y->down_w = tg_weight_f32(p->down_w + l * E * F, iE, iF), y->down_b = p->down_b + l * E;
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

/* ---- Layers: forward ------------------------------------------------------- */

/* out[BT,E] = wte[tokens] + wpe[t] */
static void encoder_forward(float *out, const int *tokens, const float *wte, const float *wpe,
                            int B, int T, int E) {
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            float *o = out + ((size_t)b * T + t) * E;
            const float *we = wte + (size_t)tokens[b * T + t] * E, *pe = wpe + (size_t)t * E;
            for (int i = 0; i < E; i++) o[i] = we[i] + pe[i];
        }
}

typedef struct ln_job {
    const tg_trainer *tr;
    float *out, *dinp;
    const float *inp, *w, *b, *dout;
    int E;
} ln_job;

static void ln_fwd_rows(void *ctx, int t0, int t1, int ith) {
    (void)ith;
    const ln_job *j = ctx;
    j->tr->eng.k.layernorm(j->out + (size_t)t0 * j->E, j->inp + (size_t)t0 * j->E, j->w, j->b,
                           t1 - t0, j->E, j->tr->cfg.ln_eps);
}

/* out[BT,E] = layernorm(inp) · w + b */
static void layernorm_forward(tg_trainer *tr, float *out, const float *inp, const float *w,
                              const float *b, int BT, int E) {
    ln_job j = {tr, out, NULL, inp, w, b, NULL, E};
    tg_parallel_for(tr->pool, BT, LN_CHUNK, 8.0 * BT * E, ln_fwd_rows, &j);
}

/* out[BT,OUT] = b + inp[BT,IN] · wᵀ */
static void matmul_forward(tg_trainer *tr, float *out, const float *inp, const float *w,
                           const float *b, int BT, int in, int outc) {
    gemm(tr, out, outc, inp, in, 1, w, 1, in, BT, outc, in, 0, b);
}

typedef struct att_job {
    tg_trainer *tr;
    float *out, *att, *dinp;
    const float *inp, *dout;
    int B, T, E, H;
} att_job;

/* One (b, h): att[T,T] = causal softmax(q·kᵀ/√HS), out[T, HS] = att · v.
 * The gemm's triangular cases compute and read only the causal half (the
 * upper triangle of att is never written: it stays 0 from the allocation). */
static void att_fwd_items(void *ctx, int i0, int i1, int ith) {
    const att_job *j = ctx;
    const tg_kernels *k = &j->tr->eng.k;
    float *ws = j->tr->ws + (size_t)ith * TG_GEMM_WS;
    int T = j->T, E = j->E, HS = E / j->H, E3 = 3 * E;
    float scale = 1.0f / sqrtf((float)HS);
    for (int item = i0; item < i1; item++) {
        int b = item / j->H, h = item % j->H;
        const float *q = j->inp + (size_t)b * T * E3 + h * HS, *kk = q + E, *v = q + 2 * E;
        float *att = j->att + (size_t)item * T * T;
        float *out = j->out + (size_t)b * T * E + h * HS;
        k->gemm(att, T, q, E3, 1, kk, 1, E3, T, T, HS, TG_TRI_C_LOWER, 0, T, 0, NULL, ws);
        for (int t = 0; t < T; t++) {
            float *row = att + (size_t)t * T;
            for (int s = 0; s <= t; s++) row[s] *= scale;
            k->softmax(row, t + 1);
        }
        k->gemm(out, E, att, T, 1, v, E3, 1, T, HS, T, TG_TRI_A_LOWER, 0, T, 0, NULL, ws);
    }
}

/* out[BT,E] = multi-head causal attention of qkv[BT,3E]; att[B,H,T,T] kept */
static void attention_forward(tg_trainer *tr, float *out, float *att, const float *inp, int B,
                              int T, int E, int H) {
    att_job j = {tr, out, att, NULL, inp, NULL, B, T, E, H};
    tg_parallel_for(tr->pool, B * H, 1, 4.0 * B * T * (double)T * E, att_fwd_items, &j);
}

typedef struct ew_job {
    const tg_trainer *tr;
    float *out;
    const float *inp, *dout;
} ew_job;

static void gelu_fwd_range(void *ctx, int i0, int i1, int ith) {
    (void)ith;
    const ew_job *j = ctx;
    j->tr->eng.k.gelu(j->out + i0, j->inp + i0, i1 - i0);
}

static void gelu_forward(tg_trainer *tr, float *out, const float *inp, int n) {
    ew_job j = {tr, out, inp, NULL};
    tg_parallel_for(tr->pool, n, 1024, 20.0 * n, gelu_fwd_range, &j);
}

static void residual_forward(float *out, const float *a, const float *b, size_t n) {
    for (size_t i = 0; i < n; i++) out[i] = a[i] + b[i];
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
    int BT = B * T, L = c->n_layer, E = c->n_embd, F = c->n_ff, V = c->n_vocab, H = c->n_head;
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
    size_t sE = (size_t)BT * E, sF = (size_t)BT * F;
    const tg_train_params *p = &tr->p;

    encoder_forward(tr->res, tokens, p->wte, p->wpe, B, T, E);
    for (int l = 0; l < L; l++) {
        float *x = tr->res + l * sE, *xo = tr->res + (l + 1) * sE, *mid = tr->mid + l * sE;
        float *ln1 = tr->ln1 + l * sE, *ln2 = tr->ln2 + l * sE, *qkv = tr->qkv + l * 3 * sE;
        float *att = tr->att + (size_t)l * B * H * T * T, *atty = tr->atty + l * sE;
        float *up = tr->up + l * sF, *act = tr->act + l * sF;
        layernorm_forward(tr, ln1, x, p->ln1_w + l * E, p->ln1_b + l * E, BT, E);
        matmul_forward(tr, qkv, ln1, p->qkv_w + (size_t)l * 3 * E * E, p->qkv_b + l * 3 * E, BT, E, 3 * E);
        attention_forward(tr, atty, att, qkv, B, T, E, H);
        matmul_forward(tr, mid, atty, p->proj_w + (size_t)l * E * E, p->proj_b + l * E, BT, E, E);
        residual_forward(mid, mid, x, sE);
        layernorm_forward(tr, ln2, mid, p->ln2_w + l * E, p->ln2_b + l * E, BT, E);
        matmul_forward(tr, up, ln2, p->up_w + (size_t)l * F * E, p->up_b + l * F, BT, E, F);
        gelu_forward(tr, act, up, (int)sF);
        matmul_forward(tr, xo, act, p->down_w + (size_t)l * E * F, p->down_b + l * E, BT, F, E);
        residual_forward(xo, xo, mid, sE);
    }
    layernorm_forward(tr, tr->lnf, tr->res + L * sE, p->lnf_w, p->lnf_b, BT, E);
    matmul_forward(tr, tr->probs, tr->lnf, p->wte, NULL, BT, E, V);
    ce_job cj = {tr, V};
    tg_parallel_for(tr->pool, BT, 16, 10.0 * BT * V, ce_fwd_rows, &cj);
    double sum = 0.0;
    for (int i = 0; i < BT; i++) sum += tr->nll[i];
    if (nll) memcpy(nll, tr->nll, sizeof(float) * BT);
    *loss = tr->n_scored ? (float)(sum / tr->n_scored) : 0.0f;
    return TG_OK;
}

/* ---- Layers: backward ------------------------------------------------------ */

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

/* dinp[BT,IN] = dout·w (overwritten; skipped if NULL), dw[OUT,IN] += doutᵀ·inp,
 * db[OUT] += Σ_t dout */
static void matmul_backward(tg_trainer *tr, float *dinp, float *dw, float *db,
                            const float *dout, const float *inp, const float *w, int BT,
                            int in, int out) {
    if (dinp) gemm(tr, dinp, in, dout, out, 1, w, in, 1, BT, in, out, 0, NULL);
    gemm(tr, dw, in, dout, 1, out, inp, in, 1, out, in, BT, 1, NULL);
    if (db) {
        bias_job j = {db, dout, BT, out};
        tg_parallel_for(tr->pool, out, 16, (double)BT * out, bias_cols, &j);
    }
}

static void ln_bwd_chunks(void *ctx, int c0, int c1, int ith) {
    (void)ith;
    const ln_job *j = ctx;
    const tg_trainer *tr = j->tr;
    int BT = tr->B * tr->T, E = j->E;
    for (int c = c0; c < c1; c++) {
        int t0 = c * LN_CHUNK, t1 = t0 + LN_CHUNK < BT ? t0 + LN_CHUNK : BT;
        float *part = tr->ln_part + (size_t)c * 2 * E;
        memset(part, 0, sizeof(float) * 2 * E);
        tr->eng.k.layernorm_bwd(j->dinp + (size_t)t0 * E, part, part + E, j->dout + (size_t)t0 * E,
                                j->inp + (size_t)t0 * E, j->w, t1 - t0, E, tr->cfg.ln_eps);
    }
}

/* dinp[BT,E] += layernorm backward; dw, db += their sums (chunk partials
 * added in chunk order) */
static void layernorm_backward(tg_trainer *tr, float *dinp, float *dw, float *db,
                               const float *dout, const float *inp, const float *w, int BT,
                               int E) {
    int chunks = (BT + LN_CHUNK - 1) / LN_CHUNK;
    ln_job j = {tr, NULL, dinp, inp, w, NULL, dout, E};
    tg_parallel_for(tr->pool, chunks, 1, 20.0 * BT * E, ln_bwd_chunks, &j);
    for (int c = 0; c < chunks; c++) {
        const float *part = tr->ln_part + (size_t)c * 2 * E;
        for (int i = 0; i < E; i++) dw[i] += part[i], db[i] += part[E + i];
    }
}

/* One (b, h) of the attention backward: given dout[T,HS] (slice of [BT,E]),
 * writes dq, dk, dv (slices of dinp[BT,3E]). */
static void att_bwd_items(void *ctx, int i0, int i1, int ith) {
    const att_job *j = ctx;
    const tg_kernels *k = &j->tr->eng.k;
    float *ws = j->tr->ws + (size_t)ith * TG_GEMM_WS;
    int T = j->T, E = j->E, HS = E / j->H, E3 = 3 * E;
    float scale = 1.0f / sqrtf((float)HS);
    float *ds = j->tr->dp + (size_t)ith * T * T;
    for (int item = i0; item < i1; item++) {
        int b = item / j->H, h = item % j->H;
        const float *q = j->inp + (size_t)b * T * E3 + h * HS, *kk = q + E, *v = q + 2 * E;
        float *dq = j->dinp + (size_t)b * T * E3 + h * HS, *dk = dq + E, *dv = dq + 2 * E;
        const float *att = j->att + (size_t)item * T * T;
        const float *dout = j->dout + (size_t)b * T * E + h * HS;
        /* dP = dout · vᵀ, then dS = softmax backward (scaled), causal rows only */
        k->gemm(ds, T, dout, E, 1, v, 1, E3, T, T, HS, TG_TRI_C_LOWER, 0, T, 0, NULL, ws);
        for (int t = 0; t < T; t++) {
            float *row = ds + (size_t)t * T;
            k->softmax_bwd(row, att + (size_t)t * T, row, t + 1, scale);
        }
        /* dq[t] = Σ_{s<=t} dS[t,s] k[s] */
        k->gemm(dq, E3, ds, T, 1, kk, E3, 1, T, HS, T, TG_TRI_A_LOWER, 0, T, 0, NULL, ws);
        /* dk[s] = Σ_{t>=s} dS[t,s] q[t];  dv[s] = Σ_{t>=s} P[t,s] dout[t] */
        k->gemm(dk, E3, ds, 1, T, q, E3, 1, T, HS, T, TG_TRI_A_UPPER, 0, T, 0, NULL, ws);
        k->gemm(dv, E3, att, 1, T, dout, E, 1, T, HS, T, TG_TRI_A_UPPER, 0, T, 0, NULL, ws);
    }
}

static void attention_backward(tg_trainer *tr, float *dinp, const float *dout, const float *inp,
                               const float *att, int B, int T, int E, int H) {
    att_job j = {tr, NULL, (float *)att, dinp, inp, dout, B, T, E, H};
    tg_parallel_for(tr->pool, B * H, 1, 8.0 * B * T * (double)T * E, att_bwd_items, &j);
}

static void gelu_bwd_range(void *ctx, int i0, int i1, int ith) {
    (void)ith;
    const ew_job *j = ctx;
    j->tr->eng.k.gelu_bwd(j->out + i0, j->inp + i0, j->dout + i0, i1 - i0);
}

/* dinp[n] = dout · GELU'(inp)  (dinp may alias dout) */
static void gelu_backward(tg_trainer *tr, float *dinp, const float *inp, const float *dout, int n) {
    ew_job j = {tr, dinp, inp, dout};
    tg_parallel_for(tr->pool, n, 1024, 30.0 * n, gelu_bwd_range, &j);
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
    const tg_gpt2_config *c = &tr->cfg;
    int B = tr->B, T = tr->T, BT = B * T;
    int L = c->n_layer, E = c->n_embd, F = c->n_ff, V = c->n_vocab, H = c->n_head;
    size_t sE = (size_t)BT * E, sF = (size_t)BT * F;
    const tg_train_params *p = &tr->p;
    const tg_train_params *g = &tr->g;

    /* loss -> logits (in place over probs) -> lnf */
    ce_job cj = {tr, V};
    tg_parallel_for(tr->pool, BT, 16, 2.0 * BT * V, ce_bwd_rows, &cj);
    matmul_backward(tr, tr->dln, g->wte, NULL, tr->probs, tr->lnf, p->wte, BT, E, V);
    memset(tr->dres, 0, sizeof(float) * sE);
    layernorm_backward(tr, tr->dres, g->lnf_w, g->lnf_b, tr->dln, tr->res + L * sE, p->lnf_w, BT, E);

    for (int l = L - 1; l >= 0; l--) {
        const float *x = tr->res + l * sE, *mid = tr->mid + l * sE;
        const float *ln1 = tr->ln1 + l * sE, *ln2 = tr->ln2 + l * sE, *qkv = tr->qkv + l * 3 * sE;
        const float *att = tr->att + (size_t)l * B * H * T * T, *atty = tr->atty + l * sE;
        const float *up = tr->up + l * sF, *act = tr->act + l * sF;
        /* MLP: xo = mid + down(gelu(up(ln2(mid)))) */
        matmul_backward(tr, tr->dup, g->down_w + (size_t)l * E * F, g->down_b + l * E, tr->dres,
                        act, p->down_w + (size_t)l * E * F, BT, F, E);
        gelu_backward(tr, tr->dup, up, tr->dup, (int)sF);
        matmul_backward(tr, tr->dln, g->up_w + (size_t)l * F * E, g->up_b + l * F, tr->dup, ln2,
                        p->up_w + (size_t)l * F * E, BT, E, F);
        layernorm_backward(tr, tr->dres, g->ln2_w + l * E, g->ln2_b + l * E, tr->dln, mid,
                           p->ln2_w + l * E, BT, E);
        /* attention: mid = x + proj(attn(qkv(ln1(x)))) */
        matmul_backward(tr, tr->datty, g->proj_w + (size_t)l * E * E, g->proj_b + l * E,
                        tr->dres, atty, p->proj_w + (size_t)l * E * E, BT, E, E);
        attention_backward(tr, tr->dqkv, tr->datty, qkv, att, B, T, E, H);
        matmul_backward(tr, tr->dln, g->qkv_w + (size_t)l * 3 * E * E, g->qkv_b + l * 3 * E,
                        tr->dqkv, ln1, p->qkv_w + (size_t)l * 3 * E * E, BT, E, 3 * E);
        layernorm_backward(tr, tr->dres, g->ln1_w + l * E, g->ln1_b + l * E, tr->dln, x,
                           p->ln1_w + l * E, BT, E);
    }
    /* embeddings, in token order */
    for (int i = 0; i < BT; i++) {
        const float *d = tr->dres + (size_t)i * E;
        float *we = g->wte + (size_t)tr->tokens[i] * E, *pe = g->wpe + (size_t)(i % T) * E;
        for (int e = 0; e < E; e++) we[e] += d[e], pe[e] += d[e];
    }
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
    for (int ti = 0; ti < TG_TRAIN_N_TENSORS; ti++) {
        c.decay = tensor_decay[ti] ? 1.0f - lr * opt->weight_decay : 1.0f;
        k->adamw(tr->params + off, tr->m + off, tr->v + off, tr->grads + off, tr->sizes[ti], &c);
        off += tr->sizes[ti];
    }
    return norm;
}
