/* task_cli.c — training on and scoring synthetic tasks (see task_cli.h).
 *
 * `train --task` draws fresh sequences every step from the task's seeded
 * generator, with the loss on answer positions only (masked targets), and
 * checks itself on a fixed held-out set of sequences from another stream.
 * `eval --task` runs the inference engine (model/gpt.h) over N fresh
 * sequences and reports answer accuracy per token and per sequence, the
 * loss on answers and chance level.
 */
#include "tools/task_cli.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model/train.h"
#include "tools/cli.h"
#include "tools/run.h"
#include "weights/gguf.h"

int task_cli_arg(int argc, char **argv, const char *sh, const char *lg, const char **value) {
    size_t ll = lg ? strlen(lg) : 0;
    for (int i = 1; i < argc && strcmp(argv[i], "--"); i++) {
        const char *a = argv[i];
        if ((sh && !strcmp(a, sh)) || (lg && !strcmp(a, lg))) {
            if (value) *value = i + 1 < argc ? argv[i + 1] : NULL;
            return 1;
        }
        if (lg && !strncmp(a, lg, ll) && a[ll] == '=') {
            if (value) *value = a + ll + 1;
            return 1;
        }
    }
    return 0;
}

int task_cli_wants(int argc, char **argv) { return task_cli_arg(argc, argv, NULL, "--task", NULL); }

int task_recorded(const tg_gpt2_model *m, tg_task *t, tg_err *err) {
    const tg_gguf *g = tg_gpt2_gguf(m);
    if (!g || !tg_gguf_find_kv(g, "tinygpt.task.name")) return 0;
    const char *name, *opts = "";
    size_t nl, ol = 0;
    char nbuf[64], obuf[512];
    if (tg_gguf_get_str(g, "tinygpt.task.name", &name, &nl, err) != TG_OK) return -1;
    if (tg_gguf_find_kv(g, "tinygpt.task.opts") &&
        tg_gguf_get_str(g, "tinygpt.task.opts", &opts, &ol, err) != TG_OK)
        return -1;
    if (nl >= sizeof nbuf || ol >= sizeof obuf) {
        tg_fail(err, TG_ERR_FORMAT, "tinygpt.task.* metadata is too long");
        return -1;
    }
    memcpy(nbuf, name, nl), nbuf[nl] = 0;
    memcpy(obuf, opts, ol), obuf[ol] = 0;
    tg_err e2;
    if (tg_task_parse(t, nbuf, obuf, &e2) != TG_OK) {
        tg_fail(err, TG_ERR_FORMAT, "the recorded task does not parse: %s", e2.msg);
        return -1;
    }
    return 1;
}

int task_model_open(task_model *tm, const char *cmd, const char *path, const char *task_name,
                    const char *task_opts, int n_threads, const char *isa) {
    memset(tm, 0, sizeof *tm);
    tm->path = path;
    tg_err err;
    tg_task given;
    if (task_name && tg_task_parse(&given, task_name, task_opts, &err) != TG_OK)
        return cli_usage(cmd, "--task: %s", err.msg);
    if (!task_name && task_opts) return cli_usage(cmd, "--task-opts needs --task NAME");
    if (!path) return cli_usage(cmd, "-m MODEL is required for a task (a model trained with train --task)");
    if (tg_gpt2_load(&tm->m, path, 0, &err) != TG_OK) return cli_error(cmd, "%s", err.msg);
    int rec = task_recorded(&tm->m, &tm->task, &err);
    int code = EXIT_OK;
    if (rec < 0) {
        code = cli_error(cmd, "%s: %s", path, err.msg);
        goto fail;
    }
    if (task_name) tm->task = given;
    else if (!rec) {
        code = cli_usage(cmd, "%s records no task: give --task NAME", path);
        goto fail;
    }
    const tg_gpt2_config *c = &tm->m.cfg;
    if (c->n_vocab != tm->task.V) {
        code = cli_error(cmd, "%s has a vocabulary of %d tokens, task %s has %d", path, c->n_vocab,
                         tg_task_kind_name(tm->task.kind), tm->task.V);
        goto fail;
    }
    if (c->n_ctx < tm->task.n - 1) {
        code = cli_error(cmd, "%s has a context of %d tokens, task %s needs %d", path, c->n_ctx,
                         tg_task_kind_name(tm->task.kind), tm->task.n - 1);
        goto fail;
    }
    tg_gpt_opts go = {.n_threads = n_threads, .isa = isa, .n_ctx = 0};
    if (tg_gpt_create(&tm->g, &tm->m, &go, &err) != TG_OK) {
        code = cli_error(cmd, "%s", err.msg);
        goto fail;
    }
    return EXIT_OK;
fail:
    tg_gpt2_free(&tm->m);
    return code;
}

void task_model_close(task_model *tm) {
    tg_gpt_free(tm->g);
    tg_gpt2_free(&tm->m);
    memset(tm, 0, sizeof *tm);
}

tg_status task_score_run(tg_gpt *g, const tg_task *t, tg_rng r, long n_seqs, task_score *sc,
                         task_seq_fn fn, void *user, tg_err *err) {
    return tg_task_score_run(g, t, r, n_seqs, sc, fn, user, err);
}

/* ---- train --task ------------------------------------------------------------ */

const char *task_names_wrapped(char *buf, size_t cap, int col, int indent) {
    const char *s = tg_task_names();
    size_t n = 0;
    buf[0] = 0;
    while (*s) {
        const char *e = strstr(s, ", ");
        size_t len = e ? (size_t)(e - s) + 1 : strlen(s); /* a name and its comma */
        if (n && col + 1 + (int)len > 80) {
            n += (size_t)snprintf(buf + n, n < cap ? cap - n : 0, "\n%*s", indent, "");
            col = indent;
        } else if (n) {
            n += (size_t)snprintf(buf + n, n < cap ? cap - n : 0, " ");
            col++;
        }
        n += (size_t)snprintf(buf + n, n < cap ? cap - n : 0, "%.*s", (int)len, s);
        col += (int)len;
        s += len + (e ? 1 : 0);
    }
    return buf;
}

static void train_help(FILE *f) {
    char names[256];
    fprintf(f,
            "usage: tinygpt train --task NAME -o OUT.gguf [options]\n"
            "  --task NAME          a synthetic task: %s\n"
            "  --task-opts K=V,...  its options, comma-separated (tinygpt task --help lists\n"
            "                       them; default: the task's)\n"
            "  -o, --output OUT.gguf  the trained model (it records the task); OUT.csv beside\n"
            "                       it (required)\n"
            "  --layers L           transformer blocks, [1, 64] (default 1)\n"
            "  --heads H            attention heads, [1, 256]; must divide --embd (default 4)\n"
            "  --embd E             width, [1, 4096] (default 64)\n"
            "  --ctx C              context, [2, 8192]; at least the task's input length\n"
            "                       (default: that length)\n"
            "  --batch B            sequences per step, fresh every step, [1, 4096]\n"
            "                       (default 32)\n"
            "  --steps S            optimizer steps, [1, 10^8] (default 1500)\n"
            "  --lr LR              peak learning rate, [1e-9, 10] (default 3e-3)\n"
            "  --lr-min LR          final learning rate of the cosine decay, [0, 10]\n"
            "                       (default LR/10)\n"
            "  --warmup W           linear warmup steps, [0, 10^8] (default min(100, S/10))\n"
            "  --weight-decay WD    AdamW weight decay, [0, 10] (default 0.1)\n"
            "  --grad-clip G        clip the global gradient norm, [0, 1e6]; 0 = off\n"
            "                       (default 1.0)\n"
            "  --seed S             initialisation and sequences, [0, 2^32-1] (default 1)\n"
            "  --eval-every K       held-out answer accuracy every K steps, [1, 10^8]\n"
            "                       (default 100)\n"
            "  --eval-seqs N        held-out sequences for it, [1, 10^6] (default 256)\n"
            "  -t, --threads N      worker threads, [1, 1024]\n"
            "                       (default 1; results do not depend on it)\n"
            "  -f, --file FILE      refused: a task makes its own data\n"
            "  --resume CKPT        refused: task runs are short (run again)\n"
            "The loss is on answer positions only; the held-out sequences come from a\n"
            "stream of the seed that training never draws from.\n",
            task_names_wrapped(names, sizeof names, 41, 23));
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The task's vocabulary as a tokenizer table of its token names (not a
 * byte-level BPE: text commands refuse such a model with a clear error). */
static tg_status task_vocab(const tg_task *t, tg_vocab *v, tg_err *err) {
    memset(v, 0, sizeof *v);
    v->bos_id = v->eos_id = -1;
    v->tokens = calloc((size_t)t->V, sizeof *v->tokens);
    if (!v->tokens) return tg_fail(err, TG_ERR_NOMEM, "out of memory");
    v->n_tokens = t->V;
    for (int i = 0; i < t->V; i++) {
        char b[32];
        tg_task_token_name(t, i, b, sizeof b);
        if (!(v->tokens[i] = strdup(b))) {
            tg_vocab_free(v);
            return tg_fail(err, TG_ERR_NOMEM, "out of memory");
        }
    }
    return TG_OK;
}

typedef struct task_run {
    tg_task t;
    int32_t layers, heads, embd, ctx, batch;
    long steps, warmup, eval_every, eval_seqs;
    unsigned long long seed;
    float lr, lr_min, wd, clip;
} task_run;

static tg_status save_model(const char *out, tg_trainer *tr, const task_run *o, double acc,
                            tg_err *err) {
    const tg_gpt2_config *cfg = tg_trainer_config(tr);
    tg_gpt2_layer *layers = calloc((size_t)cfg->n_layer, sizeof *layers);
    tg_vocab v;
    if (!layers) return tg_fail(err, TG_ERR_NOMEM, "out of memory");
    tg_status st = task_vocab(&o->t, &v, err);
    if (st) {
        free(layers);
        return st;
    }
    tg_gpt2_weights w;
    tg_trainer_weights(tr, &w, layers);
    tg_gguf_writer *gw = NULL;
    char opts[512];
    tg_task_opts_string(&o->t, opts, sizeof opts);
    if (!(st = tg_gguf_writer_new(&gw, err)) &&
        !(st = tg_gpt2_to_gguf(gw, cfg, &w, &v, TG_DTYPE_F32, err)) &&
        !(st = tg_gguf_set_str(gw, "tinygpt.task.name", tg_task_kind_name(o->t.kind), err)) &&
        !(st = tg_gguf_set_str(gw, "tinygpt.task.opts", opts, err)) &&
        !(st = tg_gguf_set_u64(gw, "tinygpt.task.train.seed", o->seed, err)) &&
        !(st = tg_gguf_set_u64(gw, "tinygpt.task.train.steps", (uint64_t)o->steps, err)) &&
        !(st = tg_gguf_set_u32(gw, "tinygpt.task.train.batch", (uint32_t)o->batch, err)) &&
        !(st = tg_gguf_set_f32(gw, "tinygpt.task.train.lr", o->lr, err)) &&
        !(st = tg_gguf_set_f32(gw, "tinygpt.task.train.heldout_accuracy", (float)acc, err)))
        st = tg_gguf_write(gw, out, err);
    tg_gguf_writer_free(gw);
    tg_vocab_free(&v);
    free(layers);
    return st;
}

/* Loss and answer accuracy of the trainer on n sequences of stream r. */
static tg_status heldout(tg_trainer *tr, const tg_task *t, tg_rng r, long n, int B, int *tok,
                         int *tgt, double *loss, double *acc, tg_err *err) {
    int T = t->n - 1, V = t->V;
    double nll = 0;
    long answers = 0, correct = 0;
    for (long done = 0; done < n; done += B) {
        int nb = n - done < B ? (int)(n - done) : B;
        tg_task_batch(t, &r, nb, tok, tgt);
        float l;
        tg_status st = tg_trainer_forward(tr, tok, tgt, nb, T, &l, NULL, err);
        if (st) return st;
        const float *p = tg_trainer_probs(tr);
        for (int i = 0; i < nb * T; i++) {
            if (tgt[i] < 0) continue;
            const float *row = p + (size_t)i * V;
            int am = 0;
            for (int v = 1; v < V; v++)
                if (row[v] > row[am]) am = v;
            correct += am == tgt[i];
            answers++;
            nll += -log((double)row[tgt[i]] > 1e-30 ? (double)row[tgt[i]] : 1e-30);
        }
    }
    *loss = answers ? nll / answers : NAN;
    *acc = answers ? (double)correct / answers : NAN;
    return TG_OK;
}

int task_train(int argc, char **argv) {
    static const char *const CMD = "train";
    task_run o = {.layers = 1, .heads = 4, .embd = 64, .ctx = 0, .batch = 32, .steps = 1500,
                  .warmup = -1, .eval_every = 100, .eval_seqs = 256, .seed = 1, .lr = 3e-3f,
                  .lr_min = -1.0f, .wd = 0.1f, .clip = 1.0f};
    const char *name = NULL, *topts = NULL, *out = NULL, *text = NULL, *resume = NULL;
    long threads = 1;
    const cli_opt opts[] = {
        {CLI_STR("--task", NULL, &name)},
        {CLI_STR("--task-opts", NULL, &topts)},
        {CLI_STR("-o", "--output", &out)},
        {CLI_STR("-f", "--file", &text)},
        {CLI_STR("--resume", NULL, &resume)},
        {CLI_INT("--layers", NULL, &o.layers, 1, 64)},
        {CLI_INT("--heads", NULL, &o.heads, 1, 256)},
        {CLI_INT("--embd", NULL, &o.embd, 1, 4096)},
        {CLI_INT("--ctx", NULL, &o.ctx, 2, 8192)},
        {CLI_INT("--batch", NULL, &o.batch, 1, 4096)},
        {CLI_INT("--steps", NULL, &o.steps, 1, 100000000)},
        {CLI_FLOAT("--lr", NULL, &o.lr, 1e-9, 10.0)},
        {CLI_FLOAT("--lr-min", NULL, &o.lr_min, 0.0, 10.0)},
        {CLI_INT("--warmup", NULL, &o.warmup, 0, 100000000)},
        {CLI_FLOAT("--weight-decay", NULL, &o.wd, 0.0, 10.0)},
        {CLI_FLOAT("--grad-clip", NULL, &o.clip, 0.0, 1e6)},
        {CLI_INT("--seed", NULL, &o.seed, 0, 4294967295L)},
        {CLI_INT("--eval-every", NULL, &o.eval_every, 1, 100000000)},
        {CLI_INT("--eval-seqs", NULL, &o.eval_seqs, 1, 1000000)},
        {CLI_INT("-t", "--threads", &threads, 1, 1024)},
        {0},
    };
    int parsed = cli_parse(CMD, train_help, opts, argc, argv);
    if (parsed != CLI_RUN) return parsed;
    if (!name) return cli_usage(CMD, "--task NAME is required");
    if (text) return cli_usage(CMD, "--task and -f exclude each other (a task makes its own data)");
    if (resume) return cli_usage(CMD, "--resume is not supported with --task (runs are short: rerun)");
    if (!out) return cli_usage(CMD, "-o OUT.gguf is required");
    tg_err err;
    if (tg_task_parse(&o.t, name, topts, &err) != TG_OK) return cli_usage(CMD, "--task: %s", err.msg);
    if (o.embd % o.heads)
        return cli_usage(CMD, "--embd %d is not divisible by --heads %d", o.embd, o.heads);
    int T = o.t.n - 1;
    if (o.ctx == 0) o.ctx = T;
    if (o.ctx < T) return cli_usage(CMD, "--ctx %d is shorter than the task's %d input tokens", o.ctx, T);
    if (o.warmup < 0) o.warmup = o.steps / 10 < 100 ? o.steps / 10 : 100;
    if (o.lr_min < 0) o.lr_min = o.lr / 10;

    char *csv_path = cli_side_path(out, ".csv");
    if (!csv_path) return cli_error(CMD, "out of memory");
    int rc = EXIT_RUNTIME;
    const char *outs[] = {out, csv_path};
    for (int k = 0; k < 2; k++) {
        cli_outfile of;
        if (cli_out_open(&of, outs[k], &err) != 0) {
            rc = cli_error(CMD, "cannot write the output: %s", err.msg);
            free(csv_path);
            return rc;
        }
        cli_out_abort(&of);
    }

    tg_gpt2_config cfg = {.n_layer = o.layers, .n_head = o.heads, .n_embd = o.embd,
                          .n_ctx = o.ctx, .n_vocab = o.t.V, .n_ff = 4 * o.embd, .ln_eps = 1e-5f};
    tg_trainer *tr = NULL;
    int B = o.batch;
    int *tok = malloc(sizeof(int) * (size_t)B * T), *tgt = malloc(sizeof(int) * (size_t)B * T);
    size_t n_rows = (size_t)(o.steps / o.eval_every + 2);
    double *rows = malloc(sizeof(double) * 7 * n_rows);
    size_t nr = 0;
    if (!tok || !tgt || !rows) {
        rc = cli_error(CMD, "out of memory");
        goto done;
    }
    if (tg_trainer_create(&tr, &cfg, B, T, (int)threads, NULL, &err) != TG_OK) {
        rc = cli_error(CMD, "%s", err.msg);
        goto done;
    }
    tg_trainer_init_params(tr, o.seed);
    char ostr[512];
    tg_task_opts_string(&o.t, ostr, sizeof ostr);
    fprintf(stderr, "train: task %s (%s): V %d, %d input tokens, %d answer%s per sequence, chance %.4g\n",
            name, ostr, o.t.V, T, o.t.n_answers, o.t.n_answers == 1 ? "" : "s", o.t.chance);
    fprintf(stderr, "train: %zu parameters, L%d H%d E%d C%d, batch %d, %ld steps\n",
            tg_trainer_n_params(tr), o.layers, o.heads, o.embd, o.ctx, B, o.steps);
    tg_rng rng = task_stream(o.seed, TASK_STREAM_TRAIN);
    tg_rng ev = task_stream(o.seed, TASK_STREAM_TRAIN_EVAL);
    tg_adamw opt = {0.9f, 0.95f, 1e-8f, o.wd};
    double t0 = now_s(), loss_acc = 0, last_acc = NAN;
    long n_acc = 0;
    rc = EXIT_OK;
    for (long s = 0; s < o.steps; s++) {
        tg_task_batch(&o.t, &rng, B, tok, tgt);
        float loss;
        if (tg_trainer_forward(tr, tok, tgt, B, T, &loss, NULL, &err) != TG_OK) {
            rc = cli_error(CMD, "%s", err.msg);
            goto done;
        }
        float lr = tg_train_lr(s, o.steps, o.warmup, o.lr, o.lr_min);
        tg_trainer_zero_grad(tr);
        tg_trainer_backward(tr);
        float gn = tg_trainer_step(tr, &opt, lr, o.clip);
        if (!isfinite(loss) || !isfinite(gn)) {
            rc = cli_error(CMD, "the %s is not finite at step %ld: stopping (try a lower --lr)",
                           isfinite(loss) ? "gradient norm" : "loss", s + 1);
            goto done;
        }
        loss_acc += loss, n_acc++;
        if ((s + 1) % o.eval_every == 0 || s + 1 == o.steps) {
            double hl, ha;
            if (heldout(tr, &o.t, ev, o.eval_seqs, B, tok, tgt, &hl, &ha, &err) != TG_OK) {
                rc = cli_error(CMD, "%s", err.msg);
                goto done;
            }
            double el = now_s() - t0;
            double *row = rows + 7 * nr++;
            row[0] = (double)(s + 1), row[1] = loss_acc / n_acc, row[2] = hl, row[3] = ha;
            row[4] = lr, row[5] = gn, row[6] = el;
            last_acc = ha;
            fprintf(stderr, "step %ld/%ld loss %.4f heldout_loss %.4f heldout_acc %.4f %.1fs\n", s + 1,
                    o.steps, loss_acc / n_acc, hl, ha, el);
            loss_acc = 0, n_acc = 0;
        }
    }
    double wall = now_s() - t0;
    if (save_model(out, tr, &o, last_acc, &err) != TG_OK) {
        rc = cli_error(CMD, "%s", err.msg);
        goto done;
    }
    cli_outfile of;
    if (cli_out_open(&of, csv_path, &err) != 0) {
        rc = cli_error(CMD, "%s", err.msg);
        goto done;
    }
    fprintf(of.f, "step,train_loss,heldout_loss,heldout_accuracy,lr,grad_norm,elapsed_s\n");
    for (size_t i = 0; i < nr; i++) {
        const double *row = rows + 7 * i;
        fprintf(of.f, "%.0f,%.6g,%.6g,%.6g,%.6g,%.6g,%.2f\n", row[0], row[1], row[2], row[3],
                row[4], row[5], row[6]);
    }
    if (cli_out_commit(&of, &err) != 0) {
        rc = cli_error(CMD, "%s", err.msg);
        goto done;
    }
    fprintf(stderr, "train: wrote %s (%ld steps, %.1fs); held-out answer accuracy %.4f (chance %.4g)\n",
            out, o.steps, wall, last_acc, o.t.chance);
done:
    tg_trainer_free(tr);
    free(tok), free(tgt), free(rows), free(csv_path);
    return rc;
}

/* ---- eval --task ------------------------------------------------------------- */

static void eval_help(FILE *f) {
    char names[256];
    fprintf(f,
            "usage: tinygpt eval -m MODEL [--task NAME [--task-opts K=V,...]] [-n N]\n"
            "                    [--seed S] [--json] [-t THREADS] [--isa ISA]\n"
            "  -m, --model MODEL    a model trained with train --task\n"
            "                       (required; its task is the default)\n"
            "  --task NAME          the task to score: %s\n"
            "  --task-opts K=V,...  its options, comma-separated (tinygpt task --help lists\n"
            "                       them; default: the task's); only with --task\n"
            "  -n N                 fresh sequences, [1, 10^8] (default 1000), from a stream\n"
            "                       of --seed that training never draws from\n"
            "  --seed S             their seed, [0, 2^32-1] (default 1)\n"
            "  --json               print {task, opts, sequences, answers, correct, accuracy,\n"
            "                       sequence_accuracy, loss, chance, seed}\n"
            "  -t, --threads N      worker threads, [1, 1024] (default 1)\n"
            "  --isa ISA            scalar|avx2|avx512|neon\n"
            "                       (default: $TINYGPT_ISA or the best this CPU supports)\n"
            "  -f, --file TEXT      refused with --task (eval -f TEXT scores a text)\n",
            task_names_wrapped(names, sizeof names, 41, 23));
}

int task_path_records(const char *path) {
    if (!path) return 0;
    tg_gpt2_model m;
    tg_err err;
    if (tg_gpt2_load(&m, path, 1, &err) != TG_OK) return 0;
    tg_task t;
    int r = task_recorded(&m, &t, &err);
    tg_gpt2_free(&m);
    return r != 0;
}

int task_eval_maybe(int argc, char **argv) {
    static const char *const CMD = "eval";
    const char *mpath = NULL;
    task_cli_arg(argc, argv, "-m", "--model", &mpath);
    if (!task_cli_wants(argc, argv) &&
        (task_cli_arg(argc, argv, "-f", "--file", NULL) || !task_path_records(mpath)))
        return -1;
    const char *model = NULL, *name = NULL, *topts = NULL, *isa = NULL, *text = NULL;
    long n = 1000, threads = 1;
    unsigned long long seed = 1;
    int json = 0;
    const cli_opt opts[] = {
        {CLI_STR("-m", "--model", &model)},
        {CLI_STR("--task", NULL, &name)},
        {CLI_STR("--task-opts", NULL, &topts)},
        {CLI_STR("-f", "--file", &text)},
        {CLI_INT("-n", NULL, &n, 1, 100000000)},
        {CLI_INT("--seed", NULL, &seed, 0, 4294967295L)},
        {CLI_FLAG("--json", NULL, &json, 1)},
        {CLI_INT("-t", "--threads", &threads, 1, 1024)},
        {CLI_STR("--isa", NULL, &isa)},
        {0},
    };
    int parsed = cli_parse(CMD, eval_help, opts, argc, argv);
    if (parsed != CLI_RUN) return parsed;
    if (text) return cli_usage(CMD, "--task and -f exclude each other");
    task_model tm;
    int code = task_model_open(&tm, CMD, model, name, topts, (int)threads, isa);
    if (code) return code;
    task_score sc = {0};
    tg_err err;
    double t0 = run_now();
    if (task_score_run(tm.g, &tm.task, task_stream(seed, TASK_STREAM_EVAL), n, &sc, NULL, NULL,
                       &err) != TG_OK) {
        code = cli_error(CMD, "%s", err.msg);
        goto done;
    }
    char ostr[512];
    tg_task_opts_string(&tm.task, ostr, sizeof ostr);
    double acc = (double)sc.correct / sc.answers, sacc = (double)sc.correct_seqs / sc.seqs;
    double loss = sc.nll / sc.answers;
    if (json)
        printf("{\"task\": \"%s\", \"opts\": \"%s\", \"sequences\": %ld, \"answers\": %ld, "
               "\"correct\": %ld, \"accuracy\": %.9g, \"sequence_accuracy\": %.9g, "
               "\"loss\": %.9g, \"chance\": %.9g, \"seed\": %llu}\n",
               tg_task_kind_name(tm.task.kind), ostr, sc.seqs, sc.answers, sc.correct, acc, sacc,
               loss, tm.task.chance, seed);
    else
        printf("task %s (%s)\nsequences %ld  answers %ld\nanswer accuracy %.4f (per token)  "
               "%.4f (per sequence)  chance %.4g\nloss %.4f nats/answer\n",
               tg_task_kind_name(tm.task.kind), ostr, sc.seqs, sc.answers, acc, sacc,
               tm.task.chance, loss);
    if (!(code = cli_stdout_check(CMD)))
        fprintf(stderr, "scored %ld sequences in %.2fs\n", sc.seqs, run_now() - t0);
done:
    task_model_close(&tm);
    return code;
}
