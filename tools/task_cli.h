/* task_cli.h — the synthetic tasks (model/task.h) in the `tinygpt` commands:
 * `train --task`, `eval --task`, `task`, and the task parts of `compare`
 * and `attention`. A model trained on a task records it in its GGUF as
 * tinygpt.task.name and tinygpt.task.opts (every option, canonical), so
 * the other commands pick it up. */
#ifndef TINYGPT_TOOLS_TASK_CLI_H
#define TINYGPT_TOOLS_TASK_CLI_H

#include <stdint.h>

#include "model/analysis.h"
#include "model/gpt.h"
#include "model/task.h"
#include "weights/gpt2.h"

/* The --task entry of train's, eval's and attention's own option tables.
 * Those commands hand a command line with --task to the task code
 * (task_train, task_eval_maybe, task_attention_maybe) before parsing it, so
 * the entry is never parsed: it puts --task in their --help rows,
 * --list-options, the man page and the completion. dst: a const char *. */
#define TASK_CLI_OPT(dst) CLI_STR("--task", NULL, dst)

/* The sequence streams of one seed (model/task.h) the commands use. */
enum { TASK_STREAM_TRAIN = TG_TASK_STREAM_TRAIN, TASK_STREAM_TRAIN_EVAL = TG_TASK_STREAM_HELDOUT,
       TASK_STREAM_EVAL = TG_TASK_STREAM_EVAL, TASK_STREAM_SAMPLE = TG_TASK_STREAM_SAMPLE,
       TASK_STREAM_COMPARE = TG_TASK_STREAM_COMPARE };
#define task_stream tg_task_stream

/* A loaded task model. */
typedef struct task_model {
    tg_gpt2_model m;
    tg_gpt *g;
    tg_task task;
    const char *path;
} task_model;

/* The task recorded in a loaded model: 1 and *t filled, 0 if none, -1 if
 * the recorded task does not parse (err filled). */
int task_recorded(const tg_gpt2_model *m, tg_task *t, tg_err *err);
/* Does the model at path (NULL: no) record a task? A failed load: no. */
int task_path_records(const char *path);

/* Loads path and its task (task_name given: that task with task_opts,
 * else the recorded one) and checks that they fit each other. Returns
 * EXIT_OK or the exit code after printing a one-line error. */
int task_model_open(task_model *tm, const char *cmd, const char *path, const char *task_name,
                    const char *task_opts, int n_threads, const char *isa);
void task_model_close(task_model *tm);

/* Answer accuracy and loss over fresh sequences (model/analysis.h's). */
typedef tg_task_score task_score;

/* Called after each sequence's forward pass with its logits[n-1, V]. */
typedef tg_task_seq_fn task_seq_fn;

/* Runs n_seqs sequences of stream r through g (with whatever probe and
 * head mask g has) and adds them to *sc; fn (optional) sees each one
 * (tg_task_score_run). */
tg_status task_score_run(tg_gpt *g, const tg_task *t, tg_rng r, long n_seqs, task_score *sc,
                         task_seq_fn fn, void *user, tg_err *err);

/* `tinygpt train --task ...` (cmd_train hands over when --task is given). */
int task_train(int argc, char **argv);

/* The task names (tg_task_names) for a help row's description starting at
 * column `col`: wrapped to 80 columns, later lines indented by `indent`
 * spaces. Returns buf. */
const char *task_names_wrapped(char *buf, size_t cap, int col, int indent);
/* cmd_train: is this a task run (is --task among the arguments)? */
int task_cli_wants(int argc, char **argv);
/* Whether option sh or lg (lg may be NULL) is among the arguments before
 * "--", as "-x V", "--long V" or "--long=V"; its value (NULL when none
 * follows) in *value if value is not NULL. The dispatchers' look at a
 * command line before it is parsed. */
int task_cli_arg(int argc, char **argv, const char *sh, const char *lg, const char **value);

/* `tinygpt eval` on a task: with --task, or with no -f and a model that
 * records a task. Returns -1 when it is not a task evaluation. */
int task_eval_maybe(int argc, char **argv);

/* `tinygpt compare A B` when both record a task; -1 otherwise. */
int task_compare_maybe(int argc, char **argv);

/* `tinygpt attention` with --task or on a model that records a task; -1
 * otherwise. */
int task_attention_maybe(int argc, char **argv);

#endif
