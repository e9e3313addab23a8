/* test_task.c — the synthetic tasks (suite 'task'): generators are
 * deterministic for a seed and their batches score answers only; `eval`
 * on a hand-built model whose prediction and loss are known in closed form;
 * a few training steps on a task lower the held-out loss and the model
 * records its task; task models work in compare and attention. The answer
 * rules themselves are checked by tests/tools/task_oracle.py. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "model/task.h"
#include "tests/tools/cli_dir.h"
#include "weights/gguf.h"
#include "weights/gpt2.h"

static void setup(void) { cli_dir_make("/tmp/tg_taskXXXXXX"); }

static double json_num(const char *js, const char *key) {
    char k[64];
    snprintf(k, sizeof k, "\"%s\": ", key);
    const char *p = strstr(js, k);
    cr_assert(p, "no %s in %s", key, js);
    return strtod(p + strlen(k), NULL);
}

Test(task, deterministic_for_a_seed) {
    const char *names[] = {"marked-tuple", "pair-lookup", "offsets", "assoc-recall", "induction"};
    for (int k = 0; k < 5; k++) {
        tg_task t;
        tg_err err;
        cr_assert_eq(tg_task_parse(&t, names[k], NULL, &err), TG_OK, "%s", err.msg);
        tg_rng a = tg_task_stream(5, TG_TASK_STREAM_TRAIN), b = tg_task_stream(5, TG_TASK_STREAM_TRAIN);
        tg_rng c = tg_task_stream(5, TG_TASK_STREAM_EVAL);
        static tg_task_seq x, y, z;
        int differ = 0;
        for (int i = 0; i < 20; i++) {
            tg_task_sample(&t, &a, &x);
            tg_task_sample(&t, &b, &y);
            tg_task_sample(&t, &c, &z);
            cr_expect_eq(memcmp(x.seq, y.seq, sizeof(int) * t.n), 0, "%s: not deterministic", names[k]);
            cr_expect_eq(memcmp(x.answer, y.answer, (size_t)t.n), 0);
            differ += memcmp(x.seq, z.seq, sizeof(int) * t.n) != 0;
        }
        cr_expect(differ >= 19, "%s: the eval stream repeats the training stream (%d of 20 differ)",
                  names[k], differ);
        /* a batch: targets are the next token at answers only */
        int T = t.n - 1, tok[4 * TG_TASK_MAX_N], tgt[4 * TG_TASK_MAX_N];
        tg_rng r1 = tg_task_stream(9, 1), r2 = tg_task_stream(9, 1);
        tg_task_batch(&t, &r1, 4, tok, tgt);
        int scored = 0;
        for (int s = 0; s < 4; s++) {
            tg_task_sample(&t, &r2, &x);
            for (int i = 0; i < T; i++) {
                cr_expect_eq(tok[s * T + i], x.seq[i]);
                cr_expect_eq(tgt[s * T + i], x.answer[i + 1] ? x.seq[i + 1] : -1);
                scored += tgt[s * T + i] >= 0;
            }
        }
        cr_expect_eq(scored, 4 * t.n_answers, "%s: %d scored targets", names[k], scored);
    }
}

Test(task, bad_options_are_errors) {
    tg_task t;
    tg_err err;
    cr_expect_eq(tg_task_parse(&t, "marked-tuple", "k=4,spacing=6", &err), TG_ERR_ARG);
    cr_expect(strstr(err.msg, "do not fit") != NULL, "%s", err.msg);
    cr_expect_eq(tg_task_parse(&t, "marked-tuple", "k=", &err), TG_ERR_ARG);
    cr_expect_eq(tg_task_parse(&t, "marked-tuple", "=3", &err), TG_ERR_ARG);
    cr_expect_eq(tg_task_parse(&t, "offsets", "offsets=1:2:3:4:5:6:7", &err), TG_ERR_ARG);
    cr_expect_eq(tg_task_parse(&t, "nope", NULL, &err), TG_ERR_ARG);
    cr_expect(strstr(err.msg, "unknown task 'nope'") != NULL, "%s", err.msg);
    cr_expect_eq(tg_task_parse(&t, NULL, NULL, &err), TG_ERR_ARG);
}

/* A model that ignores its input: zero blocks, lnf gain 0 and bias e0, and
 * an untied head whose row for "=1" has 2 in column 0. Every logit is 0
 * but that one, 2. On marked-tuple k=1 digits=2 (V = 7) it answers "=1"
 * always: accuracy = the share of answers that are "=1", loss
 * log(e² + 6) - 2 on those and log(e² + 6) on the others. */
Test(task, eval_on_a_hand_built_model, .init = setup, .fini = cli_dir_remove) {
    tg_task t;
    tg_err err;
    cr_assert_eq(tg_task_parse(&t, "marked-tuple", "k=1,digits=2,len=5", &err), TG_OK);
    cr_assert_eq(t.V, 7);
    int E = 8, C = t.n - 1, V = t.V, F = 4 * E;
    tg_gpt2_config cfg = {.n_layer = 1, .n_head = 1, .n_embd = E, .n_ctx = C, .n_vocab = V,
                          .n_ff = F, .ln_eps = 1e-5f};
    float *z = calloc((size_t)3 * E * F + 1024, sizeof(float));
    float *lnf_b = calloc((size_t)E, sizeof(float)), *head = calloc((size_t)V * E, sizeof(float));
    lnf_b[0] = 1.0f;
    int c = V - 1;
    char name[16];
    tg_task_token_name(&t, c, name, sizeof name);
    cr_assert_str_eq(name, "=1");
    head[(size_t)c * E] = 2.0f;
    tg_gpt2_layer lay = {z, z, tg_weight_f32(z, 3 * E, E), z, tg_weight_f32(z, E, E), z, z, z,
                         tg_weight_f32(z, F, E), z, tg_weight_f32(z, E, F), z};
    tg_gpt2_weights w = {.wte = tg_weight_f32(z, V, E), .wpe = z, .layers = &lay, .lnf_w = z,
                         .lnf_b = lnf_b, .lm_head = tg_weight_f32(head, V, E), .tied = 0};
    tg_vocab v = {0};
    v.n_tokens = V;
    v.bos_id = v.eos_id = -1;
    char *toks[7], bufs[7][16];
    for (int i = 0; i < V; i++) tg_task_token_name(&t, i, bufs[i], 16), toks[i] = bufs[i];
    v.tokens = toks;
    tg_gguf_writer *gw;
    char path[128];
    snprintf(path, sizeof path, "%s/hand.gguf", dir);
    cr_assert_eq(tg_gguf_writer_new(&gw, &err), TG_OK);
    cr_assert_eq(tg_gpt2_to_gguf(gw, &cfg, &w, &v, TG_DTYPE_F32, &err), TG_OK, "%s", err.msg);
    cr_assert_eq(tg_gguf_set_str(gw, "tinygpt.task.name", "marked-tuple", &err), TG_OK);
    cr_assert_eq(tg_gguf_set_str(gw, "tinygpt.task.opts", "k=1,digits=2,len=5", &err), TG_OK);
    cr_assert_eq(tg_gguf_write(gw, path, &err), TG_OK, "%s", err.msg);
    tg_gguf_writer_free(gw);

    /* the sequences eval scores: -n 400 --seed 3 of the eval stream */
    tg_rng r = tg_task_stream(3, TG_TASK_STREAM_EVAL);
    static tg_task_seq s;
    int ones = 0, N = 400;
    for (int i = 0; i < N; i++) {
        tg_task_sample(&t, &r, &s);
        ones += s.seq[t.n - 1] == c;
    }
    cr_assert(ones > 100 && ones < 300, "%d of %d answers are =1", ones, N);
    double lz = log(exp(2.0) + 6.0);
    double want_loss = (ones * (lz - 2.0) + (N - ones) * lz) / N;
    cr_assert_eq(tinygpt_run("eval -m hand.gguf -n 400 --seed 3 --json"), 0, "%s", slurp("err.txt", NULL));
    char *js = slurp("out.txt", NULL);
    cr_expect(fabs(json_num(js, "accuracy") - (double)ones / N) < 1e-9, "accuracy in %s, want %d/%d", js, ones, N);
    cr_expect(fabs(json_num(js, "sequence_accuracy") - (double)ones / N) < 1e-9, "%s", js);
    cr_expect(fabs(json_num(js, "loss") - want_loss) < 1e-5 * want_loss, "loss in %s, want %.9g", js, want_loss);
    cr_expect(fabs(json_num(js, "chance") - 0.5) < 1e-9, "%s", js);
    cr_expect_eq((long)json_num(js, "answers"), N);
    free(js);
    /* the recorded task is the default, and another --task must fit the model */
    cr_expect_eq(tinygpt_run("eval -m hand.gguf -n 10"), 0);
    cr_expect_eq(tinygpt_run("eval -m hand.gguf --task marked-tuple --task-opts k=2,digits=2,len=5"), 1);
    js = slurp("err.txt", NULL);
    cr_expect(strstr(js, "vocabulary of 7 tokens") != NULL, "%s", js);
    free(js);
    cr_expect_eq(tinygpt_run("eval -m hand.gguf --task marked-tuple --task-opts k=1,digits=2,len=50"), 1);
    cr_expect_eq(tinygpt_run("eval -m hand.gguf --task marked-tuple --task-opts k=1,digits=2,len=5,x=1"), 2);
    /* a text command on a task model: a clear error, no crash */
    cr_expect_eq(tinygpt_run("generate -m hand.gguf -p 1 -n 2"), 1);
    free(z), free(lnf_b), free(head);
}

Test(task, training_lowers_the_loss_and_records_the_task, .init = setup, .fini = cli_dir_remove, .timeout = 120) {
    cr_assert_eq(tinygpt_run("train --task marked-tuple --task-opts k=2,digits=2,len=6 --layers 1 --heads 2 "
                     "--embd 32 --batch 16 --steps 120 --eval-every 20 --lr 1e-2 -o m.gguf"),
                 0, "%s", slurp("err.txt", NULL));
    char *csv = slurp("m.csv", NULL);
    cr_assert(csv);
    /* step,train_loss,heldout_loss,heldout_accuracy,... */
    double first = NAN, last = NAN, acc = NAN;
    int rows = 0;
    for (char *line = strchr(csv, '\n'); line && line[1]; line = strchr(line + 1, '\n')) {
        double st, tl, hl, ha;
        if (sscanf(line + 1, "%lf,%lf,%lf,%lf", &st, &tl, &hl, &ha) != 4) break;
        if (rows++ == 0) first = hl;
        last = hl, acc = ha;
    }
    cr_expect_eq(rows, 6, "%s", csv);
    cr_expect(last < first - 0.3, "held-out loss %.4f -> %.4f: training did not lower it", first, last);
    cr_expect(acc > 0.25 + 0.1, "held-out accuracy %.3f (chance 0.25)", acc);
    free(csv);
    cr_expect_eq(tinygpt_run("eval -m m.gguf --json -n 300"), 0);
    char *js = slurp("out.txt", NULL);
    cr_expect(json_num(js, "accuracy") > 0.35, "%s", js);
    cr_expect(strstr(js, "\"opts\": \"len=6,digits=2,k=2,spacing=1\"") != NULL, "%s", js);
    free(js);
    /* compare and attention pick the task up */
    cr_assert_eq(tinygpt_run("train --task marked-tuple --task-opts k=2,digits=2,len=6 --heads 1 --embd 32 "
                     "--batch 16 --steps 20 -o m1.gguf"), 0);
    cr_expect_eq(tinygpt_run("compare m1.gguf m.gguf -n 200 --json"), 0, "%s", slurp("err.txt", NULL));
    js = slurp("out.txt", NULL);
    cr_expect(strstr(js, "\"keep_only_accuracy\"") != NULL && strstr(js, "\"heads\": 2") != NULL, "%s", js);
    free(js);
    cr_expect_eq(tinygpt_run("attention -m m.gguf --seed 4"), 0, "%s", slurp("err.txt", NULL));
    js = slurp("out.txt", NULL);
    cr_expect(strstr(js, "#1") != NULL && strstr(js, "fixes on") != NULL, "%s", js);
    free(js);
    /* deterministic, whatever the thread count */
    cr_assert_eq(tinygpt_run("train --task offsets --embd 32 --batch 8 --steps 15 -t 1 -o o1.gguf"), 0);
    cr_assert_eq(tinygpt_run("train --task offsets --embd 32 --batch 8 --steps 15 -t 2 -o o2.gguf"), 0);
    char cmp[256];
    snprintf(cmp, sizeof cmp, "cmp -s %s/o1.gguf %s/o2.gguf", dir, dir);
    cr_expect_eq(system(cmp), 0, "train --task -t 1 and -t 2 wrote different models");
    /* usage errors */
    cr_expect_eq(tinygpt_run("train --task marked-tuple -f x.txt -o y.gguf"), 2);
    cr_expect_eq(tinygpt_run("train --task marked-tuple --heads 3 -o y.gguf"), 2);
    cr_expect_eq(tinygpt_run("train --task marked-tuple --task-opts len=8 --ctx 4 -o y.gguf"), 2);
    cr_expect_eq(tinygpt_run("compare m.gguf -n 10"), 2);
}
