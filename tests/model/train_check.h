/* train_check.h — what the trainer's PyTorch comparisons share
 * (test_train.c: GPT-2, test_train_llama.c: Llama): the perturbed initial
 * parameters, the AdamW settings, running the oracle (train_ref.py) on a
 * case file, the per-tensor relative error, the elements whose AdamW step
 * is rounding noise, the check of the parameters after STEPS steps, and
 * the thread-count comparison. */
#ifndef TINYGPT_TESTS_TRAIN_CHECK_H
#define TINYGPT_TESTS_TRAIN_CHECK_H

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/train.h"

/* The AdamW run both tests compare: STEPS steps on one batch, warmup then
 * cosine from LR to LR_MIN, gradient norm clipped at CLIP. */
static const tg_adamw train_opt = {0.9f, 0.95f, 1e-8f, 0.1f};
#define STEPS 3
#define LR 1e-2f
#define LR_MIN 1e-3f
#define WARMUP 1
#define CLIP 1.0f

/* The trainer's own init (seed 42), then the matrices scaled up 8x (the
 * loss far from log V, attention far from uniform) and every parameter
 * without decay (biases, norm gains) perturbed, so that all gradients are
 * generic. */
static inline void train_perturb_init(tg_trainer *tr) {
    tg_trainer_init_params(tr, 42);
    tg_rng r = {99};
    float *p = tg_trainer_params(tr);
    size_t off = 0;
    for (int i = 0; i < tg_trainer_n_tensors(tr); i++) {
        tg_train_tensor t = tg_trainer_tensor(tr, i);
        for (size_t j = 0; j < t.n; j++) {
            if (t.decay) p[off + j] *= 8.0f;
            else p[off + j] += 0.3f * tg_rng_normal(&r);
        }
        off += t.n;
    }
}

/* Writes hdr (the oracle's header for arch), the parameters, tokens[BT]
 * and targets[BT] to a case file, runs `/usr/bin/python3
 * TEST_SRC_DIR/train_ref.py ARCH CASE OUT` and reads the float64 loss,
 * float64 gradients[n] and float32 parameters after the oracle's AdamW
 * steps[n]. */
static inline void train_oracle(const char *arch, const void *hdr, size_t hdr_bytes, tg_trainer *tr,
                                const int *tok, const int *tgt, int BT, double *loss, double *grads,
                                float *stepped) {
    size_t n = tg_trainer_n_params(tr);
    char in[] = "/tmp/tg_train_caseXXXXXX", out[] = "/tmp/tg_train_refXXXXXX";
    int fi = mkstemp(in), fo = mkstemp(out);
    cr_assert(fi >= 0 && fo >= 0);
    close(fo);
    FILE *f = fdopen(fi, "wb");
    fwrite(hdr, 1, hdr_bytes, f);
    fwrite(tg_trainer_params(tr), sizeof(float), n, f);
    fwrite(tok, sizeof(int), (size_t)BT, f);
    fwrite(tgt, sizeof(int), (size_t)BT, f);
    fclose(f);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s/train_ref.py %s %s %s", TEST_SRC_DIR, arch, in, out);
    int rc = system(cmd);
    unlink(in);
    cr_assert_eq(rc, 0, "the PyTorch oracle failed: %s", cmd);
    f = fopen(out, "rb");
    cr_assert(f);
    cr_assert_eq(fread(loss, sizeof(double), 1, f), 1);
    cr_assert_eq(fread(grads, sizeof(double), n, f), n);
    cr_assert_eq(fread(stepped, sizeof(float), n, f), n);
    fclose(f);
    unlink(out);
}

/* ||a - ref|| / ||ref|| per tensor of the table must stay below tol
 * (elements with skip[j] left out; skip may be NULL) */
static inline void train_check_tensors(tg_trainer *tr, const float *a, const double *ref, double tol,
                                       const char *what, const uint8_t *skip) {
    size_t off = 0;
    for (int i = 0; i < tg_trainer_n_tensors(tr); i++) {
        tg_train_tensor t = tg_trainer_tensor(tr, i);
        double d2 = 0, r2 = 0;
        for (size_t j = off; j < off + t.n; j++) {
            if (skip && skip[j]) continue;
            d2 += ((double)a[j] - ref[j]) * ((double)a[j] - ref[j]);
            r2 += ref[j] * ref[j];
        }
        cr_assert(r2 > 0, "%s %s: the reference is all zero", what, t.name);
        double rel = sqrt(d2 / r2);
        if (getenv("TG_TEST_VERBOSE")) fprintf(stderr, "%s %s: %.3g (tolerance %.2g)\n", what, t.name, rel, tol);
        cr_expect(rel < tol, "%s %s: relative error %.3g (tolerance %.2g)", what, t.name, rel, tol);
        off += t.n;
    }
}

/* Adam divides by |g|, so an element whose exact gradient is zero but
 * computes as rounding noise (the key bias: softmax ignores a constant
 * added to a row of scores) moves by ±lr in either implementation. Such
 * elements — 0 < |g| < 1e-6 of the tensor's RMS in the float64 oracle —
 * are marked (calloc'd array, caller frees); *skipped counts them. Exact
 * zeros (rows of tokens not in the batch) stay: they move by decay alone. */
static inline uint8_t *train_noise_skip(tg_trainer *tr, const double *ref_g, size_t *skipped) {
    uint8_t *skip = calloc(tg_trainer_n_params(tr), 1);
    size_t off = 0;
    *skipped = 0;
    for (int i = 0; i < tg_trainer_n_tensors(tr); i++) {
        size_t tn = tg_trainer_tensor(tr, i).n;
        double r2 = 0;
        for (size_t j = off; j < off + tn; j++) r2 += ref_g[j] * ref_g[j];
        double rms = sqrt(r2 / tn);
        for (size_t j = off; j < off + tn; j++)
            if (ref_g[j] != 0 && fabs(ref_g[j]) < 1e-6 * rms) skip[j] = 1, (*skipped)++;
        off += tn;
    }
    return skip;
}

/* Runs STEPS AdamW steps of tr on the batch, then compares each tensor's
 * change from p0 (the parameters before them) with the oracle's
 * (ref_p - p0) within tol, leaving out the noise elements of ref_g; name
 * starts the messages. */
static inline void train_check_adamw(tg_trainer *tr, const float *p0, const int *tok, const int *tgt,
                                     int B, int T, const float *ref_p, const double *ref_g,
                                     double tol, const char *name) {
    for (int s = 0; s < STEPS; s++) {
        float loss;
        cr_assert_eq(tg_trainer_forward(tr, tok, tgt, B, T, &loss, NULL, NULL), TG_OK);
        tg_trainer_zero_grad(tr);
        tg_trainer_backward(tr);
        tg_trainer_step(tr, &train_opt, tg_train_lr(s, STEPS, WARMUP, LR, LR_MIN), CLIP);
    }
    size_t n = tg_trainer_n_params(tr);
    const float *p = tg_trainer_params(tr);
    double *dref = malloc(sizeof(double) * n);
    float *dp = malloc(sizeof(float) * n);
    cr_assert(dref && dp);
    for (size_t i = 0; i < n; i++) {
        dref[i] = (double)ref_p[i] - p0[i];
        dp[i] = (float)((double)p[i] - p0[i]);
    }
    size_t skipped;
    uint8_t *skip = train_noise_skip(tr, ref_g, &skipped);
    cr_expect(skipped < n / 50, "%s: %zu of %zu gradients are ~0", name, skipped, n);
    char what[96];
    snprintf(what, sizeof what, "%s AdamW update", name);
    train_check_tensors(tr, dp, dref, tol, what, skip);
    free(skip);
    free(dref);
    free(dp);
}

/* One forward and backward of t1 and of t3 (the same model and init on 1
 * and 3 threads; both freed here) on the batch: the losses and every
 * gradient must be bit-identical. */
static inline void train_expect_thread_independent(tg_trainer *t1, tg_trainer *t3, const int *tok,
                                                   const int *tgt, int B, int T, const char *name) {
    tg_trainer *tr[2] = {t1, t3};
    float loss[2], *g[2];
    size_t n = tg_trainer_n_params(t1);
    cr_assert_eq(tg_trainer_n_params(t3), n);
    for (int k = 0; k < 2; k++) {
        cr_assert_eq(tg_trainer_forward(tr[k], tok, tgt, B, T, &loss[k], NULL, NULL), TG_OK);
        tg_trainer_zero_grad(tr[k]);
        tg_trainer_backward(tr[k]);
        g[k] = malloc(sizeof(float) * n);
        cr_assert(g[k]);
        memcpy(g[k], tg_trainer_grads(tr[k]), sizeof(float) * n);
        tg_trainer_free(tr[k]);
    }
    cr_expect_eq(memcmp(&loss[0], &loss[1], sizeof(float)), 0, "%s: loss %.9g vs %.9g", name, loss[0], loss[1]);
    cr_expect_eq(memcmp(g[0], g[1], sizeof(float) * n), 0, "%s: gradients differ between 1 and 3 threads", name);
    free(g[0]);
    free(g[1]);
}

#endif
