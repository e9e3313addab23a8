/* test_train_llama.c — model/train_llama.c against PyTorch
 * (tests/model/train_ref.py llama): random small Llamas with MHA, GQA and
 * MQA, odd sizes, tied and untied, both RoPE pair conventions and partial
 * rotary dimensions; the loss, every parameter's gradient (float64
 * autograd) and the parameters after a few AdamW steps (float32 torch.optim),
 * on every ISA this CPU runs; bit-identical results for any thread count;
 * shape errors. Suite 'train'. */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/train.h"
#include "tests/model/train_check.h"

typedef struct lcase {
    const char *name; /* the fields after untied, B, T are filled by make_case */
    tg_model_config cfg;
    int untied, B, T;
    int *tok, *tgt;
} lcase;

#define LLAMA(L, H, KVH, E, HS, D, F, V, C, eps, theta, pairs)                                   \
    {.n_layer = L, .n_head = H, .n_embd = E, .n_ctx = C, .n_vocab = V, .n_ff = F, .ln_eps = eps, \
     .arch = TG_ARCH_LLAMA, .n_kv_head = KVH, .head_dim = HS, .rope_theta = theta,              \
     .rope_dim = D, .rope_pairs = pairs}

static lcase make_case(int which) {
    lcase cs[] = {
        {"mha-untied", LLAMA(2, 4, 4, 32, 8, 8, 72, 67, 40, 1e-5f, 10000.0f, TG_ROPE_ADJACENT), 1, 2, 33, NULL, NULL},
        {"gqa-tied", LLAMA(2, 6, 2, 48, 8, 8, 100, 53, 40, 1e-6f, 10000.0f, TG_ROPE_ADJACENT), 0, 2, 37, NULL, NULL},
        /* H·HS = 40 = E, but HS = 10 with 6 rotated dimensions, HF pairs */
        {"mqa-untied-halves-partial", LLAMA(1, 4, 1, 40, 10, 6, 76, 61, 24, 1e-5f, 500000.0f, TG_ROPE_HALVES), 1, 3, 21, NULL, NULL},
    };
    lcase c = cs[which];
    c.tok = malloc(sizeof(int) * c.B * c.T);
    c.tgt = malloc(sizeof(int) * c.B * c.T);
    tg_rng r = {7 + (uint64_t)which};
    for (int i = 0; i < c.B * c.T; i++) {
        c.tok[i] = (int)(tg_rng_next(&r) % (uint64_t)c.cfg.n_vocab);
        c.tgt[i] = i % 11 == 5 ? -1 : (int)(tg_rng_next(&r) % (uint64_t)c.cfg.n_vocab);
    }
    return c;
}

/* The Llama init, perturbed (train_perturb_init): matrices scaled up, the
 * RMSNorm gains perturbed. */
static tg_trainer *make_trainer(const lcase *c, int threads, const char *isa) {
    tg_trainer *tr;
    tg_err err;
    cr_assert_eq(tg_trainer_create_ex(&tr, &c->cfg, c->untied ? TG_TRAIN_UNTIED : 0, c->B, c->T,
                                      threads, isa, &err),
                 TG_OK, "%s", err.msg);
    train_perturb_init(tr);
    return tr;
}

static void run_oracle(const lcase *c, tg_trainer *tr, double *loss, double *grads, float *stepped) {
    const tg_model_config *k = &c->cfg;
    struct {
        int32_t i[16];
        float f[10];
    } hdr = {{k->n_layer, k->n_head, k->n_kv_head, k->n_embd, k->head_dim, k->n_ctx, k->n_vocab, k->n_ff,
              c->B, c->T, STEPS, WARMUP, !c->untied, k->rope_dim, k->rope_pairs == TG_ROPE_HALVES, 0},
             {LR, LR_MIN, train_opt.beta1, train_opt.beta2, train_opt.eps, train_opt.weight_decay,
              CLIP, k->rope_theta, k->ln_eps, 0}};
    train_oracle("llama", &hdr, sizeof hdr, tr, c->tok, c->tgt, c->B * c->T, loss, grads,
                 stepped);
}

/* float32 rounding through the network: each of the 2L + 2 matmul/norm
 * stages adds ~sqrt(K)·eps relative (K its longest sum: BT for a weight
 * gradient, V, F or E otherwise); 16x margin for softmax and the residual
 * stream's growth (the errors seen are ~1e-6, 10-20x below). */
static double grad_tol(const lcase *c) {
    int K = c->B * c->T;
    int others[3] = {c->cfg.n_vocab, c->cfg.n_ff, c->cfg.n_embd};
    for (int i = 0; i < 3; i++) K = others[i] > K ? others[i] : K;
    return 4.0 * (2 * c->cfg.n_layer + 2) * sqrt((double)K) * FLT_EPSILON;
}

static void check_case(int which) {
    lcase c = make_case(which);
    tg_trainer *tr = make_trainer(&c, 2, NULL);
    size_t n = tg_trainer_n_params(tr);
    double ref_loss, *ref_g = malloc(sizeof(double) * n);
    float *ref_p = malloc(sizeof(float) * n);
    run_oracle(&c, tr, &ref_loss, ref_g, ref_p);
    cr_expect(fabs(ref_loss - log(c.cfg.n_vocab)) > 0.3, "%s: trivial case: loss %.3f ~ log V", c.name, ref_loss);
    double tol = grad_tol(&c);

    /* loss and gradients on every ISA */
    for (int isa = 0; isa < TG_ISA_COUNT; isa++) {
        if (!tg_isa_supported((tg_isa)isa)) continue;
        const char *iname = tg_isa_name((tg_isa)isa);
        tg_trainer *t2 = make_trainer(&c, 2, iname);
        float loss;
        tg_err err;
        cr_assert_eq(tg_trainer_forward(t2, c.tok, c.tgt, c.B, c.T, &loss, NULL, &err), TG_OK, "%s", err.msg);
        cr_expect(fabs(loss - ref_loss) < tol * ref_loss, "%s %s: loss %.8f vs PyTorch %.8f", c.name,
                  iname, loss, ref_loss);
        tg_trainer_zero_grad(t2);
        tg_trainer_backward(t2);
        char what[128];
        snprintf(what, sizeof what, "%s %s grad", iname, c.name);
        train_check_tensors(t2, tg_trainer_grads(t2), ref_g, tol, what, NULL);
        tg_trainer_free(t2);
    }

    /* STEPS AdamW steps on the same batch: the parameter change */
    tg_trainer *t0 = make_trainer(&c, 1, NULL);
    train_check_adamw(tr, tg_trainer_params(t0), c.tok, c.tgt, c.B, c.T, ref_p, ref_g, 3 * tol, c.name);
    tg_trainer_free(t0);
    tg_trainer_free(tr);
    free(ref_g), free(ref_p), free(c.tok), free(c.tgt);
}

Test(train_llama, mha_untied_matches_pytorch, .timeout = 120) { check_case(0); }
Test(train_llama, gqa_tied_matches_pytorch, .timeout = 120) { check_case(1); }
Test(train_llama, mqa_halves_partial_matches_pytorch, .timeout = 120) { check_case(2); }

Test(train_llama, thread_count_does_not_change_results) {
    for (int which = 1; which < 3; which++) {
        lcase c = make_case(which);
        train_expect_thread_independent(make_trainer(&c, 1, NULL), make_trainer(&c, 3, NULL), c.tok,
                                        c.tgt, c.B, c.T, c.name);
        free(c.tok), free(c.tgt);
    }
}

/* The saved views are the table's rows: wq/wk/wv and w1/w3 split the
 * fused tensors, a tied output is the embedding. */
Test(train_llama, weights_views) {
    for (int which = 0; which < 2; which++) {
        lcase c = make_case(which);
        tg_trainer *tr = make_trainer(&c, 1, NULL);
        tg_train_llama_params p = tg_trainer_llama_table(tr);
        tg_llama_layer layers[2];
        tg_llama_weights w;
        tg_trainer_llama_weights(tr, &w, layers);
        int HS = c.cfg.head_dim, Q = c.cfg.n_head * HS, KV = c.cfg.n_kv_head * HS, E = c.cfg.n_embd;
        int F = c.cfg.n_ff;
        const tg_llama_layer *y = &layers[1];
        const float *qkv1 = p.wqkv + (size_t)(Q + 2 * KV) * E, *w13 = p.w13 + (size_t)2 * F * E;
        cr_expect(y->wq.data == qkv1 && y->wq.rows == Q && y->wq.cols == E);
        cr_expect(y->wk.data == qkv1 + (size_t)Q * E && y->wk.rows == KV);
        cr_expect(y->wv.data == qkv1 + (size_t)(Q + KV) * E && y->wv.rows == KV);
        cr_expect(y->w1.data == w13 && y->w3.data == w13 + (size_t)F * E && y->w3.rows == F);
        cr_expect(y->w2.rows == E && y->w2.cols == F && y->wo.rows == E && y->wo.cols == Q);
        cr_expect_eq(w.tied, !c.untied);
        cr_expect_eq(w.output.data == w.tok_embd.data, !c.untied, "%s: output/tok_embd sharing", c.name);
        cr_expect_eq(tg_trainer_n_tensors(tr), c.untied ? 9 : 8);
        tg_trainer_free(tr);
        free(c.tok), free(c.tgt);
    }
}

Test(train_llama, rejects_bad_shapes) {
    tg_trainer *tr;
    tg_err err;
    tg_model_config cfg = LLAMA(1, 6, 4, 48, 8, 8, 64, 20, 16, 1e-5f, 10000.0f, TG_ROPE_ADJACENT);
    cr_expect_neq(tg_trainer_create(&tr, &cfg, 1, 16, 1, NULL, &err), TG_OK, "4 KV heads for 6 heads");
    cfg.n_kv_head = 3;
    cfg.rope_dim = 9;
    cr_expect_neq(tg_trainer_create(&tr, &cfg, 1, 16, 1, NULL, &err), TG_OK, "odd rotary dimensions");
    cfg.rope_dim = 8;
    cr_assert_eq(tg_trainer_create(&tr, &cfg, 1, 16, 1, NULL, &err), TG_OK, "%s", err.msg);
    tg_trainer_free(tr);
    tg_model_config g2 = {.n_layer = 1, .n_head = 4, .n_embd = 32, .n_ctx = 16, .n_vocab = 10,
                          .n_ff = 128, .ln_eps = 1e-5f};
    cr_expect_eq(tg_trainer_create_ex(&tr, &g2, TG_TRAIN_UNTIED, 1, 16, 1, NULL, &err), TG_ERR_ARG);
    cr_expect(strstr(err.msg, "untied") != NULL, "%s", err.msg);
}
