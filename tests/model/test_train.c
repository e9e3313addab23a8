/* test_train.c — model/train.c against PyTorch (tests/model/train_ref.py gpt2):
 * for a small random model and batch, the loss, every parameter's gradient
 * and the parameters after a few AdamW steps; and bit-identical gradients
 * for any thread count. Suite 'train'. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/train.h"
#include "tests/model/train_check.h"

typedef struct tcase {
    tg_gpt2_config cfg;
    int B, T;
    int *tok, *tgt;
} tcase;

/* E = 48 with 4 heads (HS = 12: partial SIMD tiles), T = 70 > one attention
 * row block, V = 67 (not a multiple of anything). */
static tcase make_case(void) {
    tcase c = {{.n_layer = 2, .n_head = 4, .n_embd = 48, .n_ctx = 80, .n_vocab = 67,
                .n_ff = 192, .ln_eps = 1e-5f},
               2, 70, NULL, NULL};
    c.tok = malloc(sizeof(int) * c.B * c.T);
    c.tgt = malloc(sizeof(int) * c.B * c.T);
    tg_rng r = {7};
    for (int i = 0; i < c.B * c.T; i++) {
        c.tok[i] = (int)(tg_rng_next(&r) % (uint64_t)c.cfg.n_vocab);
        c.tgt[i] = (int)(tg_rng_next(&r) % (uint64_t)c.cfg.n_vocab);
    }
    return c;
}

/* GPT-2 init, perturbed (train_perturb_init): every bias and layernorm
 * parameter non-trivial so that all gradients are generic. */
static tg_trainer *make_trainer(const tcase *c, int threads, const char *isa) {
    tg_trainer *tr;
    tg_err err;
    cr_assert_eq(tg_trainer_create(&tr, &c->cfg, c->B, c->T, threads, isa, &err), TG_OK, "%s",
                 err.msg);
    train_perturb_init(tr);
    return tr;
}

/* Runs the oracle on c with the trainer's parameters; fills loss, grads[n] and
 * the parameters after STEPS AdamW steps. */
static void run_oracle(const tcase *c, tg_trainer *tr, double *loss, double *grads,
                       float *stepped) {
    struct {
        int32_t i[12];
        float f[8];
    } hdr = {{c->cfg.n_layer, c->cfg.n_head, c->cfg.n_embd, c->cfg.n_ctx, c->cfg.n_vocab, c->B, c->T,
              STEPS, WARMUP, 1, 0, 0},
             {LR, LR_MIN, train_opt.beta1, train_opt.beta2, train_opt.eps, train_opt.weight_decay,
              CLIP, 0}};
    train_oracle("gpt2", &hdr, sizeof hdr, tr, c->tok, c->tgt, c->B * c->T, loss, grads, stepped);
}

Test(train, matches_pytorch, .timeout = 120) {
    tcase c = make_case();
    tg_trainer *tr = make_trainer(&c, 2, NULL);
    size_t n = tg_trainer_n_params(tr);
    double ref_loss, *ref_g = malloc(sizeof(double) * n);
    float *ref_p = malloc(sizeof(float) * n);
    run_oracle(&c, tr, &ref_loss, ref_g, ref_p);

    /* loss and gradients, with the best ISA and with the C reference */
    const char *isas[] = {NULL, "scalar"};
    for (int k = 0; k < 2; k++) {
        tg_trainer *t2 = make_trainer(&c, 2, isas[k]);
        float loss;
        tg_err err;
        cr_assert_eq(tg_trainer_forward(t2, c.tok, c.tgt, c.B, c.T, &loss, NULL, &err), TG_OK);
        cr_expect(fabs(loss - ref_loss) < 1e-5 * ref_loss, "loss %.8f vs PyTorch %.8f", loss, ref_loss);
        cr_expect(fabs(ref_loss - log(c.cfg.n_vocab)) > 0.3, "the case is trivial: loss %.3f ~ log V", ref_loss);
        tg_trainer_zero_grad(t2);
        tg_trainer_backward(t2);
        train_check_tensors(t2, tg_trainer_grads(t2), ref_g, 1e-4, isas[k] ? "grad (scalar)" : "grad", NULL);
        tg_trainer_free(t2);
    }

    /* STEPS AdamW steps on the same batch; compare the parameter change */
    tg_trainer *t0 = make_trainer(&c, 1, NULL);
    train_check_adamw(tr, tg_trainer_params(t0), c.tok, c.tgt, c.B, c.T, ref_p, ref_g, 3e-4, "gpt2");
    tg_trainer_free(t0);
    tg_trainer_free(tr);
    free(ref_g), free(ref_p), free(c.tok), free(c.tgt);
}

Test(train, thread_count_does_not_change_results) {
    tcase c = make_case();
    train_expect_thread_independent(make_trainer(&c, 1, NULL), make_trainer(&c, 3, NULL), c.tok, c.tgt,
                                    c.B, c.T, "gpt2");
    free(c.tok), free(c.tgt);
}

Test(train, rejects_bad_shapes_and_tokens) {
    tg_trainer *tr;
    tg_err err;
    tg_gpt2_config cfg = {.n_layer = 1, .n_head = 3, .n_embd = 32, .n_ctx = 16, .n_vocab = 10,
                          .n_ff = 128, .ln_eps = 1e-5f};
    cr_expect_eq(tg_trainer_create(&tr, &cfg, 1, 16, 1, NULL, &err), TG_ERR_ARG);
    cr_expect(strstr(err.msg, "not divisible") != NULL, "%s", err.msg);
    cfg.n_head = 4;
    cr_expect_eq(tg_trainer_create(&tr, &cfg, 1, 17, 1, NULL, &err), TG_ERR_RANGE);
    cr_assert_eq(tg_trainer_create(&tr, &cfg, 1, 16, 1, NULL, &err), TG_OK);
    int tok[16] = {0}, tgt[16] = {0};
    tok[5] = 10;
    float loss;
    cr_expect_eq(tg_trainer_forward(tr, tok, tgt, 1, 16, &loss, NULL, &err), TG_ERR_ARG);
    cr_expect(strstr(err.msg, "token id 10") != NULL, "%s", err.msg);
    tg_trainer_free(tr);
}

/* Masked targets (-1): the loss is the mean over the scored positions and
 * the gradient is PyTorch's cross_entropy(ignore_index=-1) gradient. A
 * third of the targets are masked, and every one of sequence 1's. */
Test(train, masked_targets_match_pytorch, .timeout = 120) {
    tcase c = make_case();
    int BT = c.B * c.T, n_scored = 0;
    for (int i = 0; i < BT; i++) {
        if (i % 3 == 1 || i >= c.T) c.tgt[i] = -1;
        n_scored += c.tgt[i] >= 0;
    }
    tg_trainer *tr = make_trainer(&c, 2, NULL);
    size_t n = tg_trainer_n_params(tr);
    double ref_loss, *ref_g = malloc(sizeof(double) * n);
    float *ref_p = malloc(sizeof(float) * n);
    run_oracle(&c, tr, &ref_loss, ref_g, ref_p);

    float loss, *nll = malloc(sizeof(float) * BT);
    tg_err err;
    cr_assert_eq(tg_trainer_forward(tr, c.tok, c.tgt, c.B, c.T, &loss, nll, &err), TG_OK, "%s", err.msg);
    cr_expect(fabs(loss - ref_loss) < 1e-5 * ref_loss, "loss %.8f vs PyTorch %.8f", loss, ref_loss);
    /* the loss is the mean of the scored positions' nll; masked ones are 0 */
    double sum = 0;
    for (int i = 0; i < BT; i++) {
        if (c.tgt[i] < 0) cr_expect_eq(nll[i], 0.0f, "masked position %d has nll %g", i, nll[i]);
        sum += nll[i];
    }
    cr_expect(fabs(sum / n_scored - loss) < 1e-6 * loss, "mean of scored nll %.8f vs loss %.8f",
              sum / n_scored, loss);
    tg_trainer_zero_grad(tr);
    tg_trainer_backward(tr);
    train_check_tensors(tr, tg_trainer_grads(tr), ref_g, 1e-4, "masked grad", NULL);

    /* sequence 1 is wholly masked, so the gradient is that of sequence 0
     * alone: its tokens contribute nothing */
    float *g2 = malloc(sizeof(float) * n);
    memcpy(g2, tg_trainer_grads(tr), sizeof(float) * n);
    float loss1;
    cr_assert_eq(tg_trainer_forward(tr, c.tok, c.tgt, 1, c.T, &loss1, NULL, &err), TG_OK);
    cr_expect(fabs(loss1 - loss) < 1e-6 * loss, "loss of sequence 0 alone %.8f vs %.8f", loss1, loss);
    tg_trainer_zero_grad(tr);
    tg_trainer_backward(tr);
    double *g1 = malloc(sizeof(double) * n);
    for (size_t i = 0; i < n; i++) g1[i] = tg_trainer_grads(tr)[i];
    train_check_tensors(tr, g2, g1, 1e-5, "grad without the masked sequence", NULL);

    /* all masked: loss 0, zero gradient */
    for (int i = 0; i < BT; i++) c.tgt[i] = -1;
    cr_assert_eq(tg_trainer_forward(tr, c.tok, c.tgt, c.B, c.T, &loss, NULL, &err), TG_OK);
    cr_expect_eq(loss, 0.0f);
    tg_trainer_zero_grad(tr);
    tg_trainer_backward(tr);
    double g2sum = 0;
    for (size_t i = 0; i < n; i++) g2sum += fabs(tg_trainer_grads(tr)[i]);
    cr_expect_eq(g2sum, 0.0, "all targets masked, yet the gradient is not zero (sum |g| %g)", g2sum);
    /* -2 is not a target */
    c.tgt[3] = -2;
    cr_expect_eq(tg_trainer_forward(tr, c.tok, c.tgt, c.B, c.T, &loss, NULL, &err), TG_ERR_ARG);
    tg_trainer_free(tr);
    free(nll), free(g2), free(g1), free(ref_g), free(ref_p), free(c.tok), free(c.tgt);
}
