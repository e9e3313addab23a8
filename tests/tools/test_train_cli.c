/* test_train_cli.c — `tinygpt train` end to end (suite 'train'): resume is
 * bit-identical to an uninterrupted run (at another thread count), a signal
 * leaves a resumable checkpoint, and bad input fails cleanly before any
 * training, and the loss curve SVG has its parts (title, axis labels,
 * gridlines, validation points, the learning rate on a second axis). Runs
 * the built binary on a small generated text. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/tools/cli_dir.h"

/* A deterministic pseudo-text of ~40 KB (words from a small list). */
static void setup(void) {
    cli_dir_make("/tmp/tg_train_cliXXXXXX");
    static const char *const w[] = {"the", "king", "shall", "not", "speak", "of", "love", "and",
                                    "death", "my", "lord", "ROMEO:", "thou", "art", "\n", "sweet"};
    cli_write_text("text.txt", w, 12345, 8000, 7, ",\n");
}

#define SMALL "--layers 2 --heads 2 --embd 32 --ctx 32 --vocab 280 --batch 4 --steps 24 --eval-every 6"

/* Runs `tinygpt train ARGS` in dir (stderr to err.txt); the exit code. */
static int run(const char *args) {
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "train %s", args);
    return tinygpt_run(cmd);
}

/* the CSV's step and loss columns (tokens/s differ from run to run) */
static char *loss_columns(const char *name) { return csv_columns(name, 4); }

TestSuite(train_cli, .init = setup, .fini = cli_dir_remove, .timeout = 120);

Test(train_cli, resume_is_bit_identical) {
    cr_assert_eq(run("-f text.txt -o full.gguf -t 1 " SMALL), 0);
    cr_assert_eq(run("-f text.txt -o part.gguf -t 2 --stop-at 9 " SMALL), 1);
    char *err = slurp("err.txt", NULL);
    cr_expect(strstr(err, "stopped at step 9") != NULL, "%s", err);
    free(err);
    char *half = loss_columns("part.csv");
    cr_expect_eq(strlen(half) > 0, 1);
    cr_assert_eq(run("-f text.txt -o part.gguf -t 3 --resume part.ckpt"), 0);
    char *a = loss_columns("full.csv"), *b = loss_columns("part.csv");
    cr_expect(strncmp(a, half, strlen(half)) == 0, "the first 9 steps differ");
    cr_expect_str_eq(a, b, "the loss curves differ:\n%s\nvs\n%s", a, b);
    size_t na = 0, nb = 1;
    char *ga = slurp("full.gguf", &na), *gb = slurp("part.gguf", &nb);
    cr_expect(na == nb && memcmp(ga, gb, na) == 0, "the final GGUFs differ");
    cr_expect(exists("full.svg"));
    if (system("command -v xmllint > /dev/null 2>&1") == 0) {
        char cmd[256];
        snprintf(cmd, sizeof cmd, "xmllint --noout %s/full.svg", dir);
        cr_expect_eq(system(cmd), 0, "the SVG loss curve is not well-formed XML");
    }
    free(a), free(b), free(half), free(ga), free(gb);
}

Test(train_cli, resume_rejects_other_text_and_flags) {
    cr_assert_eq(run("-f text.txt -o m.gguf --stop-at 2 " SMALL), 1);
    char p[128];
    snprintf(p, sizeof p, "%s/other.txt", dir);
    FILE *f = fopen(p, "w");
    fputs("a different text", f);
    fclose(f);
    cr_expect_eq(run("-f other.txt -o m.gguf --resume m.ckpt"), 1);
    char *err = slurp("err.txt", NULL);
    cr_expect(strstr(err, "is not the text") != NULL, "%s", err);
    free(err);
    cr_expect_eq(run("-f text.txt -o m.gguf --resume m.ckpt --layers 3"), 2);
    cr_expect_eq(run("-f text.txt -o m.gguf --resume text.txt"), 1);
    /* a truncated checkpoint, and one whose batch size is absurd */
    char cmd[512];
    snprintf(cmd, sizeof cmd, "cd %s && head -c 5000 m.ckpt > cut.ckpt && cp m.gguf cut.gguf && "
             "cp m.ckpt big.ckpt && cp m.gguf big.gguf && "
             "printf '\\377\\377\\377\\177' | dd of=big.ckpt bs=1 seek=36 conv=notrunc 2>/dev/null", dir);
    cr_assert_eq(system(cmd), 0);
    cr_expect_eq(run("-f text.txt -o cut.gguf --resume cut.ckpt"), 1);
    err = slurp("err.txt", NULL);
    cr_expect(strstr(err, "truncated") != NULL, "%s", err);
    free(err);
    cr_expect_eq(run("-f text.txt -o big.gguf --resume big.ckpt"), 1);
    err = slurp("err.txt", NULL);
    cr_expect(strstr(err, "out of range") != NULL, "%s", err);
    free(err);
}

Test(train_cli, signal_leaves_a_resumable_checkpoint) {
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        if (chdir(dir) != 0) _exit(99);
        freopen("err.txt", "w", stderr);
        execl(TINYGPT_EXE, "tinygpt", "train", "-f", "text.txt", "-o", "sig.gguf", "--layers", "2",
              "--heads", "2", "--embd", "32", "--ctx", "32", "--vocab", "280", "--steps",
              "1000000", "--eval-every", "1000000", (char *)NULL);
        _exit(98);
    }
    struct timespec ts = {0, 300 * 1000 * 1000};
    nanosleep(&ts, NULL);
    kill(pid, SIGTERM);
    int st;
    waitpid(pid, &st, 0);
    cr_assert(WIFEXITED(st), "killed by the signal instead of stopping");
    cr_expect_eq(WEXITSTATUS(st), 1);
    char *err = slurp("err.txt", NULL);
    cr_expect(strstr(err, "interrupted at step") != NULL, "%s", err);
    free(err);
    cr_expect(exists("sig.ckpt") && exists("sig.gguf") && exists("sig.csv"));
    cr_expect_eq(run("-f text.txt -o sig.gguf --resume sig.ckpt --stop-at 1"), 1);
}

static void expect_fail_n(const char *args, int code, const char *msg, int one_line) {
    cr_expect_eq(run(args), code, "%s", args);
    char *err = slurp("err.txt", NULL);
    cr_expect(err && strstr(err, msg) != NULL, "'%s': expected '%s' in: %s", args, msg, err);
    if (one_line) cr_expect(err && strchr(err, '\n') == err + strlen(err) - 1, "not one line: %s", err);
    free(err);
}
#define expect_fail(args, code, msg) expect_fail_n(args, code, msg, 1)

Test(train_cli, bad_input) {
    char p[128];
    snprintf(p, sizeof p, "%s/tiny.txt", dir);
    FILE *f = fopen(p, "w");
    fputs("To be, or not to be: that is the question.", f);
    fclose(f);
    expect_fail("-f tiny.txt -o t.gguf " SMALL, 1, "too short");
    expect_fail("-f missing.txt -o t.gguf " SMALL, 1, "missing.txt");
    expect_fail("-f text.txt -o /nonexistent/dir/t.gguf " SMALL, 1, "cannot write");
    expect_fail("-f text.txt -o t.gguf --embd 30 --heads 4", 2, "not divisible");
    expect_fail("-f text.txt -o t.gguf --vocab 300 --tokenizer-from x.gguf", 2, "exclude");
    expect_fail("-f text.txt -o t.gguf --steps 0", 2, "--steps");
    expect_fail("-f text.txt -o t.gguf --val-frac 0.9", 2, "--val-frac");
    expect_fail("-o t.gguf", 2, "-f TEXT");
    cr_expect(!exists("t.gguf") && !exists("t.ckpt"), "a failed run left outputs");
}

Test(train_cli, nan_loss_keeps_the_last_good_checkpoint) {
    char cmd[256];
    snprintf(cmd, sizeof cmd, "-f text.txt -o n.gguf --save-every 5 " SMALL);
    setenv("TINYGPT_TRAIN_INJECT_NAN", "7", 1);
    expect_fail_n(cmd, 1, "NaN at step 8", 0);
    unsetenv("TINYGPT_TRAIN_INJECT_NAN");
    char *err = slurp("err.txt", NULL);
    cr_expect(strstr(err, "(step 5)") != NULL, "%s", err);
    free(err);
    /* the checkpoint is the step-5 one and resumes */
    cr_expect_eq(run("-f text.txt -o n.gguf --resume n.ckpt --stop-at 6"), 1);
    err = slurp("err.txt", NULL);
    cr_expect(strstr(err, "resuming n.ckpt at step 5") != NULL, "%s", err);
    free(err);
}

/* `xmllint --xpath EXPR dir/NAME` (names without namespace: local-name()). */
static char *xpath(const char *name, const char *expr) {
    char cmd[512];
    snprintf(cmd, sizeof cmd, "xmllint --xpath \"%s\" %s/%s 2>/dev/null", expr, dir, name);
    FILE *p = popen(cmd, "r");
    cr_assert(p);
    char *buf = calloc(1, 1 << 20);
    size_t n = fread(buf, 1, (1 << 20) - 1, p);
    buf[n] = 0;
    pclose(p);
    return buf;
}

static long xcount(const char *name, const char *expr) {
    char e[256];
    snprintf(e, sizeof e, "count(%s)", expr);
    char *s = xpath(name, e);
    long v = strtol(s, NULL, 10);
    free(s);
    return v;
}

#define CHILD(n) "/*[local-name()='" n "']"
#define ID(n) "//*[@id='" n "']"

/* The loss curve: well-formed, a title naming the model, labelled axes
 * (step, loss, the learning rate on the right), gridlines, a point per
 * validation and the learning-rate schedule with a point per step. */
Test(train_cli, loss_curve_svg_has_its_parts) {
    cr_assert_eq(run("-f text.txt -o curve.gguf --warmup 4 " SMALL), 0);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "xmllint --noout %s/curve.svg", dir);
    cr_assert_eq(system(cmd), 0, "the SVG loss curve is not well-formed XML");
    char *t = xpath("curve.svg", "string(" ID("title") ")");
    cr_expect(strstr(t, "curve.gguf") != NULL, "title %s", t);
    free(t);
    const char *labels[][2] = {{"xlabel", "step"}, {"ylabel", "loss"}, {"lrlabel", "learning rate"}};
    for (int i = 0; i < 3; i++) {
        char e[128];
        snprintf(e, sizeof e, "string(//*[@id='%s'])", labels[i][0]);
        char *s = xpath("curve.svg", e);
        cr_expect(strstr(s, labels[i][1]) != NULL, "%s: '%s'", labels[i][0], s);
        free(s);
    }
    /* 24 steps, validation every 6: steps 6, 12, 18, 24 (and the CSV agrees) */
    char *csv = slurp("curve.csv", NULL);
    long rows = 0, vals = 0;
    for (char *line = strtok(csv, "\n"); line; line = strtok(NULL, "\n")) {
        if (!strncmp(line, "step", 4)) continue;
        rows++;
        char *c = strchr(line, ',');
        c = c ? strchr(c + 1, ',') : NULL;
        vals += c && c[1] != ',';
    }
    free(csv);
    cr_expect_eq(rows, 24);
    cr_expect_geq(vals, 4);
    cr_expect_eq(xcount("curve.svg", ID("val-points") CHILD("circle")), vals);
    cr_expect_geq(xcount("curve.svg", ID("grid") CHILD("line")), 8, "gridlines");
    /* the polylines have a point per step (24 < the downsampling threshold) */
    const char *lines[] = {"lr", "train"};
    for (int i = 0; i < 2; i++) {
        char e[128];
        snprintf(e, sizeof e, "string(//*[@id='%s']/@points)", lines[i]);
        char *s = xpath("curve.svg", e);
        long n = 0;
        for (char *p = s; *p; p++) n += *p == ',';
        cr_expect_eq(n, 24, "%s has %ld points", lines[i], n);
        free(s);
    }
    /* the learning rate rises during the warmup and falls after: the y of
     * its first point is below (larger than) the peak's, and so is the last */
    char *s = xpath("curve.svg", "string(" ID("lr") "/@points)");
    double ys[64];
    int n = 0;
    for (char *p = strtok(s, " "); p && n < 64; p = strtok(NULL, " ")) {
        char *c = strchr(p, ',');
        if (c) ys[n++] = strtod(c + 1, NULL);
    }
    free(s);
    cr_assert_eq(n, 24);
    double top = ys[0];
    for (int i = 0; i < n; i++) top = ys[i] < top ? ys[i] : top;
    cr_expect(ys[0] > top + 1 && ys[n - 1] > top + 1, "lr: first %g peak %g last %g", ys[0], top, ys[n - 1]);
    cr_expect_eq(ys[3], top, "the peak is at the end of the 4 warmup steps");
}

/* ---- leftovers and consistency (#16 item 7) ---------------------------- */

static int n_temporaries(const char *prefix) {
    char cmd[256];
    snprintf(cmd, sizeof cmd, "ls %s | grep -c '^%s.*\\.tmp\\.' > %s/count.txt", dir, prefix, dir);
    if (system(cmd) < 0) return -1;
    char *c = slurp("count.txt", NULL);
    int n = c ? atoi(c) : -1;
    free(c);
    return n;
}

static void touch(const char *name, time_t mtime) {
    char p[128];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    cr_assert(f);
    fputs("x", f);
    fclose(f);
    struct timespec t[2] = {{mtime, 0}, {mtime, 0}};
    cr_assert_eq(utimensat(AT_FDCWD, p, t, 0), 0);
}

Test(train_cli, killed_write_leaves_temporaries_the_next_run_removes) {
    /* the process SIGKILLs itself in its 5th output write (step 12's
     * checkpoint): its temporaries are written but never renamed */
    setenv("TINYGPT_TEST_FAULT", "kill:5", 1);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "cd %s && %s train -f text.txt -o k.gguf %s 2> err.txt", dir, TINYGPT_EXE, SMALL);
    int st = system(cmd);
    unsetenv("TINYGPT_TEST_FAULT");
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 128 + SIGKILL, "not killed: status %d", st);
    cr_assert_geq(n_temporaries("k"), 2, "the killed run left no temporaries: the test tests nothing");
    /* not ours to remove: another output's, a name not of our pattern, a
     * temporary newer than the next run (a concurrent writer's) */
    touch("other.gguf.tmp.ABCDEF", 1000000000);
    touch("k.gguf.tmp.ABCDE", 1000000000);
    touch("k.gguf.tmp.ABCDEFG", 1000000000);
    touch("k.gguf.tmp.AB-DEF", 1000000000);
    touch("k.gguf.tmp.ZZZZZZ", time(NULL) + 3600);
    touch("k.gguf.tmp.OLD123", 1000000000); /* ours, stale */
    cr_assert_eq(run("-f text.txt -o k.gguf --stop-at 1 " SMALL), 1);
    char *err = slurp("err.txt", NULL);
    cr_expect(strstr(err, "stale temporar") != NULL, "%s", err);
    free(err);
    cr_expect(!exists("k.gguf.tmp.OLD123"), "a stale temporary was kept");
    cr_expect(exists("other.gguf.tmp.ABCDEF") && exists("k.gguf.tmp.ABCDE") && exists("k.gguf.tmp.ABCDEFG") &&
              exists("k.gguf.tmp.AB-DEF") && exists("k.gguf.tmp.ZZZZZZ"), "a file that is not ours was removed");
    cr_expect_eq(n_temporaries("k"), 4, "the killed run's temporaries were kept");
}

/* The step each output records: the checkpoint's header, the CSV's last
 * row, the GGUF's tinygpt.train.step. */
static void expect_steps(const char *stem, long want) {
    char name[64];
    size_t n;
    snprintf(name, sizeof name, "%s.ckpt", stem);
    char *ck = slurp(name, &n);
    cr_assert(ck && n > 64, "%s missing", name);
    int64_t step;
    /* the header's step: magic 8, version 4, header_size 4, options 88,
     * text_len 8, text_hash 8 bytes before it */
    memcpy(&step, ck + 120, sizeof step);
    free(ck);
    cr_expect_eq(step, want, "%s holds step %lld, want %ld", name, (long long)step, want);
    snprintf(name, sizeof name, "%s.csv", stem);
    char *csv = slurp(name, &n);
    cr_assert(csv && n > 2, "%s missing", name);
    char *last = csv + n - 2;
    while (last > csv && last[-1] != '\n') last--;
    cr_expect_eq(atol(last), want, "%s ends at step %ld, want %ld", name, atol(last), want);
    free(csv);
    snprintf(name, sizeof name, "%s.gguf", stem);
    char *g = slurp(name, &n);
    cr_assert(g, "%s missing", name);
    const char key[] = "tinygpt.train.step";
    char *k = memmem(g, n, key, sizeof key - 1);
    cr_assert(k, "%s records no step", name);
    uint32_t type;
    uint64_t v;
    memcpy(&type, k + sizeof key - 1, 4);
    memcpy(&v, k + sizeof key - 1 + 4, 8);
    cr_expect(type == 10 && v == (uint64_t)want, "%s holds step %llu, want %ld", name, (unsigned long long)v, want);
    free(g);
}

Test(train_cli, disk_full_at_a_checkpoint_keeps_the_outputs_together) {
    /* SMALL checkpoints every 6 steps, three writes each (GGUF, checkpoint,
     * CSV): a full disk at each of the second checkpoint's writes */
    for (int w = 4; w <= 6; w++) {
        char fault[32], stem[16], args[512];
        snprintf(fault, sizeof fault, "enospc:%d", w);
        snprintf(stem, sizeof stem, "full%d", w);
        snprintf(args, sizeof args, "-f text.txt -o %s.gguf " SMALL, stem);
        setenv("TINYGPT_TEST_FAULT", fault, 1);
        expect_fail_n(args, 1, "checkpoint at step 12", 0);
        unsetenv("TINYGPT_TEST_FAULT");
        char *err = slurp("err.txt", NULL);
        cr_expect(strstr(err, "No space left on device") && strstr(err, "still hold step 6"), "%s", err);
        free(err);
        expect_steps(stem, 6);
        cr_expect_eq(n_temporaries(stem), 0, "a failed checkpoint left temporaries");
    }
    cr_assert_eq(run("-f text.txt -o ok.gguf " SMALL), 0);
    expect_steps("ok", 24);
}

Test(train_cli, diverged_parameters_are_never_checkpointed) {
    /* step 8's update makes a weight NaN while its loss is finite: the
     * step-8 checkpoint must not be written, the step-4 one is kept */
    setenv("TINYGPT_TRAIN_INJECT_NAN", "after:8", 1);
    expect_fail_n("-f text.txt -o d.gguf --save-every 4 " SMALL, 1, "training diverged at step 8", 0);
    unsetenv("TINYGPT_TRAIN_INJECT_NAN");
    char *err = slurp("err.txt", NULL);
    cr_expect(strstr(err, "(step 4)") != NULL, "%s", err);
    free(err);
    expect_steps("d", 4);
    cr_expect_eq(run("-f text.txt -o d.gguf --resume d.ckpt --stop-at 5"), 1);
    err = slurp("err.txt", NULL);
    cr_expect(strstr(err, "resuming d.ckpt at step 4") != NULL, "%s", err);
    free(err);

    /* a real divergence: a learning rate of 10 with weight decay 10 */
    expect_fail_n("-f text.txt -o h.gguf --lr 10 --weight-decay 10 --grad-clip 0 --warmup 0 --save-every 1 " SMALL,
                  1, "last good checkpoint (step 1)", 0);
    cr_expect_eq(run("-f text.txt -o h.gguf --resume h.ckpt --stop-at 2"), 1);
    err = slurp("err.txt", NULL);
    cr_expect(strstr(err, "resuming h.ckpt at step 1") != NULL, "the last good checkpoint is not: %s", err);
    free(err);

    /* a checkpoint holding a NaN parameter is refused on resume */
    char cmd[512];
    snprintf(cmd, sizeof cmd, "cd %s && cp h.ckpt nan.ckpt && cp h.gguf nan.gguf && "
             "printf '\\000\\000\\300\\177' | dd of=nan.ckpt bs=1 seek=$(($(od -An -tu4 -j12 -N4 h.ckpt))) "
             "conv=notrunc 2>/dev/null", dir);
    cr_assert_eq(system(cmd), 0);
    expect_fail_n("-f text.txt -o nan.gguf --resume nan.ckpt", 1, "non-finite parameters", 0);
}
