/* test_train_llama_cli.c — `tinygpt train --arch llama` end to end (suite
 * 'train'): a GQA/MQA Llama with the learned BPE, resumed at other thread
 * counts bit-identically, scored by `tinygpt eval` exactly as the trainer's
 * own validation; llama2.c's tokenizer.bin and a llama GGUF as
 * --tokenizer-from, untied, --ff, --rope-theta, --f16 in the written file;
 * one-line errors for the bad combinations. Runs the built binary on a
 * small generated text (a few seconds). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/tools/cli_dir.h"

static size_t text_len;

static void setup(void) {
    cli_dir_make("/tmp/tg_train_llamaXXXXXX");
    static const char *const w[] = {"Once", "upon", "a", "time", "there", "was", "little", "girl",
                                    "named", "Lily.", "She", "liked", "to", "play", "\n", "the"};
    text_len = cli_write_text("text.txt", w, 777, 6000, 9, ".\n");
}

TestSuite(train_llama_cli, .init = setup, .fini = cli_dir_remove, .timeout = 120);

/* the CSV's step, train and val loss columns (tokens/s vary) */
static char *loss_columns(const char *name) { return csv_columns(name, 3); }

#define LLAMA "train --arch llama --layers 2 --heads 4 --embd 32 --ctx 32 --batch 4 --steps 12 " \
              "--eval-every 6 --val-frac 0.25 -f text.txt "

Test(train_llama_cli, bpe_gqa_resume_eval) {
    cr_assert_eq(tinygpt_run(LLAMA "--kv-heads 2 --vocab 280 -o full.gguf -t 1"), 0, "%s", slurp("err.txt", NULL));
    char *err = slurp("err.txt", NULL);
    cr_expect(strstr(err, "train: llama, ") && strstr(err, "KVH2"), "%s", err);
    free(err);
    /* stopped with 3 threads, resumed with 2 (the checkpoint holds the architecture) */
    cr_assert_eq(tinygpt_run(LLAMA "--kv-heads 2 --vocab 280 -o part.gguf -t 3 --stop-at 5"), 1);
    cr_assert_eq(tinygpt_run("train -f text.txt -o part.gguf -t 2 --resume part.ckpt"), 0, "%s", slurp("err.txt", NULL));
    cr_expect(same_file("full.gguf", "part.gguf"), "the resumed run's GGUF differs");
    char *a = loss_columns("full.csv"), *b = loss_columns("part.csv");
    cr_expect_str_eq(a, b);
    free(a), free(b);

    cr_assert_eq(tinygpt_run("inspect full.gguf"), 0);
    char *info = slurp("out.txt", NULL);
    cr_expect(strstr(info, "architecture:  llama") && strstr(info, "kv heads 2 (GQA)") &&
              strstr(info, "feed-forward 96") && strstr(info, "output tied"), "%s", info);
    free(info);

    /* eval of the held-out quarter scores it as the trainer's validation did */
    char cmd[256];
    snprintf(cmd, sizeof cmd, "cd %s && tail -c %zu text.txt > val.txt", dir, (size_t)(text_len * 0.25));
    cr_assert_eq(system(cmd), 0);
    cr_assert_eq(tinygpt_run("eval -m full.gguf -f val.txt"), 0, "%s", slurp("err.txt", NULL));
    char *ev = slurp("out.txt", NULL), *csv = slurp("full.csv", NULL);
    const char *at = strstr(ev, "nats/token");
    cr_assert(at, "%s", ev);
    double ours = atof(at + strlen("nats/token"));
    const char *last = strrchr(csv, '\n');
    while (last > csv && last[-1] != '\n') last--;
    double step, tl, vl;
    cr_assert_eq(sscanf(last, "%lf,%lf,%lf", &step, &tl, &vl), 3, "%s", last);
    cr_expect(step == 12 && fabs(ours - vl) < 1e-4 * vl, "eval %.6f vs the trainer's validation %.6f", ours, vl);
    free(ev), free(csv);
}

static int have_tok512(char *path, size_t n) {
    const char *cands[] = {SOURCE_ROOT "/../shared/data/stories260K/tok512.bin",
                           SOURCE_ROOT "/../../shared/data/stories260K/tok512.bin"};
    for (int i = 0; i < 2; i++)
        if (access(cands[i], R_OK) == 0) {
            snprintf(path, n, "%s", cands[i]);
            return 1;
        }
    return 0;
}

Test(train_llama_cli, spm_untied_f16) {
    char tok[512], args[1024];
    if (!have_tok512(tok, sizeof tok)) {
        /* a failure when TINYGPT_REQUIRE_DATA is set (.ci/run), else skipped */
        const char *req = getenv("TINYGPT_REQUIRE_DATA");
        if (req && *req) cr_assert_fail("../shared/data/stories260K/tok512.bin is missing");
        cr_skip_test("../shared/data/stories260K/tok512.bin is missing");
    }
    snprintf(args, sizeof args, LLAMA "--kv-heads 1 --untied --ff 40 --rope-theta 5000 --f16 "
             "--tokenizer-from %s -o spm.gguf", tok);
    cr_assert_eq(tinygpt_run(args), 0, "%s", slurp("err.txt", NULL));
    cr_assert_eq(tinygpt_run("inspect spm.gguf"), 0);
    char *info = slurp("out.txt", NULL);
    cr_expect(strstr(info, "kv heads 1 (MQA)") && strstr(info, "feed-forward 40") &&
              strstr(info, "rope theta 5000") && strstr(info, "separate output.weight") &&
              strstr(info, "SentencePiece") && strstr(info, "512 tokens") && strstr(info, "F16"),
              "%s", info);
    free(info);
    cr_assert_eq(tinygpt_run("generate -m spm.gguf -p \"Once upon a time\" -n 8 --temp 0"), 0, "%s", slurp("err.txt", NULL));
    /* a llama GGUF as the tokenizer's source */
    cr_assert_eq(tinygpt_run(LLAMA "--steps 2 --tokenizer-from spm.gguf -o again.gguf"), 0, "%s", slurp("err.txt", NULL));
    cr_assert_eq(tinygpt_run("inspect again.gguf"), 0);
    info = slurp("out.txt", NULL);
    cr_expect(strstr(info, "SentencePiece") && strstr(info, "512 tokens"), "%s", info);
    free(info);
    /* a GPT-2 cannot take it */
    cr_expect_eq(tinygpt_run("train --layers 1 --heads 2 --embd 16 --ctx 16 --steps 1 -f text.txt "
                    "--tokenizer-from spm.gguf -o g.gguf"), 1);
    char *err = slurp("err.txt", NULL);
    cr_expect(strstr(err, "is a Llama model") && strstr(err, "--arch llama"), "%s", err);
    free(err);
}

/* exit code and one line naming the problem */
static void expect_usage(const char *args, int code, const char *needle) {
    char cmd[512];
    snprintf(cmd, sizeof cmd, "train -f text.txt -o bad.gguf %s", args);
    cr_expect_eq(tinygpt_run(cmd), code, "%s", args);
    char *err = slurp("err.txt", NULL);
    cr_expect(strstr(err, needle) != NULL, "%s: %s", args, err);
    char *nl = strchr(err, '\n');
    cr_expect(nl && nl[1] == 0, "%s: not one line: %s", args, err);
    free(err);
}

Test(train_llama_cli, bad_combinations) {
    expect_usage("--ff 64", 2, "need --arch llama");
    expect_usage("--kv-heads 2", 2, "need --arch llama");
    expect_usage("--arch gpt2 --untied", 2, "need --arch llama");
    expect_usage("--arch llama --heads 4 --kv-heads 3", 2, "--kv-heads 3 does not divide --heads 4");
    expect_usage("--arch mamba", 2, "--arch must be gpt2 or llama");
    expect_usage("--arch llama --rope-theta 0", 2, "--rope-theta");
    cr_assert_eq(tinygpt_run(LLAMA "--steps 2 --vocab 280 --stop-at 1 -o r.gguf"), 1);
    expect_usage("--resume r.ckpt --kv-heads 1", 2, "--resume takes the model");
}
