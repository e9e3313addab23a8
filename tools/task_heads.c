/* task_heads.c — what the heads of task models do: the task part of
 * `compare` (two models that record the same task) and of `attention`
 * (an example sequence of the task, its marked items labelled).
 *
 * compare, on the same fresh sequences for both models:
 *   1. answer accuracy (per token, per sequence), loss, chance;
 *   2. per head, at the queries that predict an answer: the mean weight on
 *      each item of the answer (mark j in order, mark j, offset j) and the
 *      item it fixes on most; for copy tasks the weight on the source
 *      position (the token to copy) and the one before it;
 *   3. ablation: answer accuracy with that one head zeroed, as a change;
 *   4. per layer: accuracy keeping only its best head / a random head (the
 *      mean over its heads), the other layers intact.
 * The numbers come from tg_task_heads_analyse (model/analysis.h); this file
 * parses, calls and prints.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/attnviz.h"
#include "tools/cli.h"
#include "tools/run.h"
#include "tools/task_cli.h"

/* ---- one side of the comparison ----------------------------------------------- */

typedef struct tside {
    task_model tm;
    tg_task_heads th;  /* model/analysis.h */
} tside;

static void tside_free(tside *sd) {
    tg_task_heads_free(&sd->th);
    task_model_close(&sd->tm);
}

/* ---- output ------------------------------------------------------------------ */

static void print_text(tside sd[2], long n, uint64_t seed) {
    const tg_task *t = &sd[0].tm.task;
    char ostr[512];
    tg_task_opts_string(t, ostr, sizeof ostr);
    printf("task %s (%s): %ld fresh sequences (seed %llu), chance %.4g\n", tg_task_kind_name(t->kind),
           ostr, n, (unsigned long long)seed, t->chance);
    printf("A = %s\nB = %s\n\n", sd[0].tm.path, sd[1].tm.path);
    printf("%-34s %12s %12s\n", "", "A", "B");
    const tg_gpt2_config *ca = tg_gpt_config(sd[0].tm.g), *cb = tg_gpt_config(sd[1].tm.g);
    printf("%-34s %5d x %-6d %5d x %-6d\n", "layers x heads", ca->n_layer, ca->n_head, cb->n_layer, cb->n_head);
    printf("%-34s %12zu %12zu\n", "parameters", tg_gpt2_n_params(ca, 1), tg_gpt2_n_params(cb, 1));
    printf("%-34s %12.4f %12.4f\n", "answer accuracy (per token)", sd[0].th.accuracy, sd[1].th.accuracy);
    printf("%-34s %12.4f %12.4f\n", "answer accuracy (per sequence)", sd[0].th.sequence_accuracy,
           sd[1].th.sequence_accuracy);
    printf("%-34s %12.4f %12.4f\n", "loss (nats/answer)", sd[0].th.loss, sd[1].th.loss);
    for (int k = 0; k < 2; k++) {
        const tg_task_heads *a = &sd[k].th;
        int items = t->n_items > 0, K = a->n_items;
        printf("\n%c: per head, at the %ld queries that predict an answer\n", 'A' + k, a->n_queries);
        printf("layer head  ");
        if (items)
            for (int j = 0; j < K; j++) printf("  item#%d", j + 1);
        else
            printf("  source  before");
        printf("   fixes on (share)   ablated Δacc  keep-only acc\n");
        for (int l = 0; l < a->n_layer; l++)
            for (int h = 0; h < a->n_head; h++) {
                const tg_task_head_result *r = &a->heads[l * a->n_head + h];
                int best = 0;
                for (int j = 1; j < K; j++)
                    if (r->top_share[j] > r->top_share[best]) best = j;
                printf("%5d %4d  ", l, h);
                for (int j = 0; j < K; j++) printf("  %6.3f", r->weight[j]);
                if (items)
                    printf("   #%d (%5.1f%%)      ", best + 1, 100.0 * r->top_share[best]);
                else
                    printf("   %-6s (%5.1f%%)  ", best ? "before" : "source", 100.0 * r->top_share[best]);
                printf("  %+12.4f  %13.4f\n", r->ablated_accuracy - a->accuracy, r->keep_only_accuracy);
            }
        for (int l = 0; l < a->n_layer; l++)
            printf("layer %d: keep-best-head accuracy %.4f, keep-random-head %.4f (mean over %d), all heads %.4f\n",
                   l, a->layers[l].keep_best_accuracy, a->layers[l].keep_random_accuracy, a->n_head,
                   a->accuracy);
    }
}

static void print_json(tside sd[2], long n, uint64_t seed) {
    const tg_task *t = &sd[0].tm.task;
    char ostr[512];
    tg_task_opts_string(t, ostr, sizeof ostr);
    printf("{\"task\": \"%s\", \"opts\": \"%s\", \"sequences\": %ld, \"seed\": %llu, \"chance\": %.9g, \"models\": [",
           tg_task_kind_name(t->kind), ostr, n, (unsigned long long)seed, t->chance);
    for (int k = 0; k < 2; k++) {
        const tg_task_heads *a = &sd[k].th;
        const tg_gpt2_config *c = tg_gpt_config(sd[k].tm.g);
        printf("%s\n{\"path\": \"%s\", \"layers\": %d, \"heads\": %d, \"params\": %zu, "
               "\"accuracy\": %.9g, \"sequence_accuracy\": %.9g, \"loss\": %.9g, \"queries\": %ld, \"heads_detail\": [",
               k ? "," : "", sd[k].tm.path, c->n_layer, c->n_head, tg_gpt2_n_params(c, 1),
               a->accuracy, a->sequence_accuracy, a->loss, a->n_queries);
        for (int l = 0; l < a->n_layer; l++)
            for (int h = 0; h < a->n_head; h++) {
                const tg_task_head_result *r = &a->heads[l * a->n_head + h];
                printf("%s{\"layer\": %d, \"head\": %d, \"kv_head\": %d, \"weight\": [", l + h ? ", " : "", l,
                       h, r->kv_head);
                for (int j = 0; j < a->n_items; j++) printf("%s%.6g", j ? ", " : "", r->weight[j]);
                printf("], \"top_share\": [");
                for (int j = 0; j < a->n_items; j++) printf("%s%.6g", j ? ", " : "", r->top_share[j]);
                printf("], \"ablated_accuracy\": %.9g, \"keep_only_accuracy\": %.9g}",
                       r->ablated_accuracy, r->keep_only_accuracy);
            }
        printf("]}");
    }
    printf("]}\n");
}

static void compare_help(FILE *f) {
    fprintf(f,
            "usage: tinygpt compare A B [-n N] [--seed S] [--json] [-t THREADS] [--isa ISA]\n"
            "For two models trained on the same task (train --task): answer accuracy side by\n"
            "side, per head the weight on each item of the answer at the answer's query,\n"
            "Δaccuracy when the head is zeroed, and keep-best / keep-random-head accuracy.\n"
            "  A, B             the two task models\n"
            "  -n N             fresh sequences, [1, 10^7] (default 1000)\n"
            "  --seed S         their seed, [0, 2^32-1] (default 1)\n"
            "  --json           print the same numbers as one JSON object\n"
            "  -t, --threads N  worker threads, [1, 1024] (default 1)\n"
            "  --isa ISA        scalar|avx2|avx512|neon (default: $TINYGPT_ISA or the best\n"
            "                   this CPU supports)\n");
}

static int take(const char *cmd, const cli_opt *o, const char *flag, const char *a) {
    (void)flag;
    const char **paths = o->dst;
    if (a[0] == '-') return 1;
    if (*o->n == 2) return cli_usage(cmd, "three models given ('%s'); compare takes two", a), -1;
    paths[(*o->n)++] = a;
    return 0;
}

int task_compare_maybe(int argc, char **argv) {
    static const char *const CMD = "compare";
    int n_task = 0;
    for (int i = 1; i < argc; i++)
        if (argv[i][0] != '-' && task_path_records(argv[i])) n_task++;
    if (n_task == 0) return -1;
    const char *paths[2] = {NULL, NULL}, *isa = NULL;
    long n = 1000, threads = 1;
    unsigned long long seed = 1;
    int json = 0, n_paths = 0;
    const cli_opt opts[] = {
        {CLI_INT("-n", NULL, &n, 1, 10000000)},
        {CLI_INT("--seed", NULL, &seed, 0, 4294967295L)},
        {CLI_FLAG("--json", NULL, &json, 1)},
        {CLI_INT("-t", "--threads", &threads, 1, 1024)},
        {CLI_STR("--isa", NULL, &isa)},
        {CLI_ARGS(take, paths), .n = &n_paths},
        {0},
    };
    int parsed = cli_parse(CMD, compare_help, opts, argc, argv);
    if (parsed != CLI_RUN) return parsed;
    if (n_paths != 2) return cli_usage(CMD, "two task models are needed (tinygpt compare A B)");
    if (n_task != 2) return cli_usage(CMD, "only one of the two models records a task");
    tside sd[2];
    memset(sd, 0, sizeof sd);
    tg_err err;
    int code = EXIT_OK;
    for (int k = 0; k < 2 && !code; k++)
        code = task_model_open(&sd[k].tm, CMD, paths[k], NULL, NULL, (int)threads, isa);
    if (code) goto done;
    char oa[512], ob[512];
    tg_task_opts_string(&sd[0].tm.task, oa, sizeof oa);
    tg_task_opts_string(&sd[1].tm.task, ob, sizeof ob);
    if (sd[0].tm.task.kind != sd[1].tm.task.kind || strcmp(oa, ob)) {
        code = cli_error(CMD, "the models record different tasks: %s (%s) and %s (%s)",
                         tg_task_kind_name(sd[0].tm.task.kind), oa, tg_task_kind_name(sd[1].tm.task.kind), ob);
        goto done;
    }
    for (int k = 0; k < 2; k++)
        if (tg_task_heads_analyse(sd[k].tm.g, &sd[k].tm.task, seed, n, &sd[k].th, &err) != TG_OK) {
            code = cli_error(CMD, "%s", err.msg);
            goto done;
        }
    if (json) print_json(sd, n, seed);
    else print_text(sd, n, seed);
    code = cli_stdout_check(CMD);
done:
    for (int k = 0; k < 2; k++) tside_free(&sd[k]);
    return code;
}

/* ---- attention on a task example ------------------------------------------------- */

static void attention_help(FILE *f) {
    char names[256];
    fprintf(f,
            "usage: tinygpt attention -m MODEL [--task NAME [--task-opts K=V,...]] [--seed S]\n"
            "                         [--layer L] [--head H] [--query I] [--svg FILE] [--log]\n"
            "                         [--json] [-t THREADS] [--isa ISA]\n"
            "On one example sequence of the model's task (or --task): each head's weights for\n"
            "the query that predicts the (first) answer, marked items labelled token#j.\n"
            "  -m, --model MODEL    a model trained with train --task\n"
            "                       (required; its task is the default)\n"
            "  --task NAME          the task of the example: %s\n"
            "  --task-opts K=V,...  its options, comma-separated (tinygpt task --help lists\n"
            "                       them; default: the task's); only with --task\n"
            "  --seed S             which example, [0, 2^32-1] (default 1)\n"
            "  --layer L            show only layer L, [0, layers-1] (default: all)\n"
            "  --head H             show only head H, [0, heads-1] (default: all)\n"
            "  --query I            the query position, 0-based, [0, inputs-1] (default: the\n"
            "                       one that predicts the first answer)\n"
            "  --svg FILE           write the heatmaps as in attention --svg (default: none)\n"
            "  --log                colour the heatmaps by log10 weight (default: linear)\n"
            "  --json               print every weight as JSON instead of bars\n"
            "  -t, --threads N      worker threads, [1, 1024] (default 1)\n"
            "  --isa ISA            scalar|avx2|avx512|neon\n"
            "                       (default: $TINYGPT_ISA or the best this CPU supports)\n"
            "  -p, --prompt PROMPT  refused: the example comes from --seed\n",
            task_names_wrapped(names, sizeof names, 48, 23));
}

int task_attention_maybe(int argc, char **argv) {
    static const char *const CMD = "attention";
    const char *mpath = NULL;
    task_cli_arg(argc, argv, "-m", "--model", &mpath);
    if (!task_cli_wants(argc, argv) && !(mpath && task_path_records(mpath))) return -1;
    const char *model = NULL, *name = NULL, *topts = NULL, *svg = NULL, *isa = NULL, *prompt = NULL;
    long layer = -1, head = -1, query = -1, threads = 1;
    unsigned long long seed = 1;
    int log_scale = 0, json = 0;
    const cli_opt opts[] = {
        {CLI_STR("-m", "--model", &model)},
        {CLI_STR("--task", NULL, &name)},
        {CLI_STR("--task-opts", NULL, &topts)},
        {CLI_STR("-p", "--prompt", &prompt)},
        {CLI_INT("--seed", NULL, &seed, 0, 4294967295L)},
        {CLI_INT("--layer", NULL, &layer, 0, 1 << 20)},
        {CLI_INT("--head", NULL, &head, 0, 1 << 20)},
        {CLI_INT("--query", NULL, &query, 0, 1 << 24)},
        {CLI_STR("--svg", NULL, &svg)},
        {CLI_FLAG("--log", NULL, &log_scale, 1)},
        {CLI_FLAG("--json", NULL, &json, 1)},
        {CLI_INT("-t", "--threads", &threads, 1, 1024)},
        {CLI_STR("--isa", NULL, &isa)},
        {0},
    };
    int parsed = cli_parse(CMD, attention_help, opts, argc, argv);
    if (parsed != CLI_RUN) return parsed;
    if (prompt) return cli_usage(CMD, "-p does not apply to a task model (the example comes from --seed)");
    if (svg && (parsed = cli_out_check(CMD, "--svg", svg))) return parsed; /* as cmd_attention */
    if ((parsed = cli_out_not_input(CMD, "--svg", svg, "-m", model))) return parsed;
    task_model tm;
    int code = task_model_open(&tm, CMD, model, name, topts, (int)threads, isa);
    if (code) return code;
    const tg_gpt2_config *c = tg_gpt_config(tm.g);
    const tg_task *t = &tm.task;
    int T = t->n - 1;
    attn_map m = {0};
    tg_err err;
    tg_task_seq *s = malloc(sizeof *s);
    float *logits = malloc(sizeof(float) * (size_t)T * t->V);
    if (!s || !logits) {
        code = cli_error(CMD, "out of memory");
        goto done;
    }
    if ((code = attn_check_selection(CMD, c->n_layer, c->n_head, layer, head))) goto done;
    if (query >= T) {
        code = cli_usage(CMD, "--query: %ld is outside [0, %d] (the example's inputs)", query, T - 1);
        goto done;
    }
    tg_rng r = task_stream(seed, TASK_STREAM_SAMPLE);
    tg_task_sample(t, &r, s);
    int first = 1;
    while (first < t->n && !s->answer[first]) first++;
    int q = query >= 0 ? (int)query : first - 1;
    if (attn_capture(&m, tm.g, NULL, s->seq, T, &err) ||
        tg_gpt_forward(tm.g, s->seq, T, 0, logits, 1, &err)) {
        code = cli_error(CMD, "%s", err.msg);
        goto done;
    }
    for (int i = 0; i < T; i++) {
        char tn[32], lab[48];
        tg_task_token_name(t, s->seq[i], tn, sizeof tn);
        if (s->role[i]) snprintf(lab, sizeof lab, "%s#%d", tn, s->role[i]);
        else snprintf(lab, sizeof lab, "%s", tn);
        free(m.labels[i]);
        if (!(m.labels[i] = strdup(lab))) {
            code = cli_error(CMD, "out of memory");
            goto done;
        }
    }
    if (json) {
        attn_print_json(stdout, &m);
    } else {
        char tn[32];
        printf("%s: task %s, %d layers x %d heads; example (seed %llu):\n ", tm.path,
               tg_task_kind_name(t->kind), c->n_layer, c->n_head, seed);
        for (int i = 0; i < t->n; i++) {
            tg_task_token_name(t, s->seq[i], tn, sizeof tn);
            printf(" %s%s%s", s->answer[i] ? "[" : "", i < T ? m.labels[i] : tn, s->answer[i] ? "]" : "");
        }
        if (q + 1 < t->n && s->answer[q + 1]) {
            const float *l = logits + (size_t)q * t->V;
            int am = 0;
            for (int v = 1; v < t->V; v++)
                if (l[v] > l[am]) am = v;
            tg_task_token_name(t, am, tn, sizeof tn);
            printf("\nquery %d \"%s\" predicts %s (%s)\n", q, m.labels[q], tn,
                   am == s->seq[q + 1] ? "right" : "wrong");
        } else {
            printf("\nquery %d \"%s\"\n", q, m.labels[q]);
        }
        if (t->n_items) {
            printf("\nweight on each item of the answer (query %d):\n", q);
            for (int l = 0; l < c->n_layer; l++)
                for (int h = 0; h < c->n_head; h++) {
                    if ((layer >= 0 && l != layer) || (head >= 0 && h != head)) continue;
                    const float *row = attn_row(&m, l, h, q);
                    double w[TG_TASK_MAX_K] = {0};
                    for (int j = 0; j <= q; j++)
                        if (s->role[j] > 0) w[s->role[j] - 1] += row[j];
                    int best = 0;
                    printf("  layer %d head %d:", l, h);
                    for (int j = 0; j < t->n_items; j++) {
                        printf("  #%d %.3f", j + 1, w[j]);
                        if (w[j] > w[best]) best = j;
                    }
                    printf("   fixes on #%d\n", best + 1);
                }
        }
        printf("\n");
        attn_print_bars(stdout, &m, (int)layer, (int)head, q);
    }
    attn_svg_opts so = {tm.path, log_scale, (int)layer, (int)head};
    code = attn_finish(CMD, &m, svg, &so);
done:
    free(s), free(logits);
    attn_map_free(&m);
    task_model_close(&tm);
    return code;
}
