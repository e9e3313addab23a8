/* train_check.h — what the trainer's PyTorch comparisons share
 * (test_train.c: GPT-2, test_train_llama.c: Llama): running an oracle
 * script on a case file, the per-tensor relative error, and the elements
 * whose AdamW step is rounding noise. */
#ifndef TINYGPT_TESTS_TRAIN_CHECK_H
#define TINYGPT_TESTS_TRAIN_CHECK_H

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "model/train.h"

/* Writes hdr (the oracle's header), the parameters, tokens[BT] and
 * targets[BT] to a case file, runs `/usr/bin/python3 TEST_SRC_DIR/script
 * CASE OUT` and reads the float64 loss, float64 gradients[n] and float32
 * parameters after the oracle's AdamW steps[n]. */
static inline void train_oracle(const char *script, const void *hdr, size_t hdr_bytes, tg_trainer *tr,
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
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s/%s %s %s", TEST_SRC_DIR, script, in, out);
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

#endif
