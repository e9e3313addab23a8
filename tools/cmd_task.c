/* cmd_task.c — `tinygpt task NAME`: what a synthetic task looks like.
 * Prints the task's vocabulary, sequence length, answers and chance level,
 * and --sample N example sequences (the answers in brackets, the marked
 * items numbered), or all of it as JSON for scripts (tests/tools/task_oracle.py
 * recomputes every answer from it). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/task.h"
#include "tools/cli.h"
#include "tools/task_cli.h"

static const char *const CMD = "task";

static void help(FILE *f) {
    fprintf(f,
            "usage: tinygpt task NAME [--task-opts K=V,...] [--sample N] [--seed S] [--json]\n"
            "  NAME              %s\n"
            "  --task-opts K=V,...  the task's options, comma-separated (default: as below):\n"
            "      marked-tuple  len=16 digits=3 k=4 spacing=1: k digits are marked with\n"
            "                    the same marked tokens; answer after '?': the tuple of\n"
            "                    marked digits in order\n"
            "      pair-lookup   len=16 digits=3 k=2: mark j has its own tokens\n"
            "                    (a0.., b0..); answer: (digit marked a, digit marked b, ...)\n"
            "      offsets       len=12 digits=4 offsets=3:7: answer: the digits 3 and 7\n"
            "                    before '?'\n"
            "      assoc-recall  pairs=8 queries=4 keys=16 values=16: key value ... then\n"
            "                    queried keys, each followed by its value (the answers)\n"
            "      induction     len=12 jitter=5 vocab=32: filler, then a block of\n"
            "                    distinct tokens (len-jitter..len long) twice; the last\n"
            "                    len-jitter-1 are the answers\n"
            "  --sample N        print N example sequences, [0, 10^6] (default 3)\n"
            "  --seed S          their seed, [0, 2^32-1] (default 1)\n"
            "  --json            everything as JSON: vocab, and per sample seq, answer,\n"
            "                    role, src\n",
            tg_task_names());
}

int cmd_task(int argc, char **argv) {
    const char *name = NULL, *topts = NULL;
    long n = 3;
    unsigned long long seed = 1;
    int json = 0;
    const cli_opt opts[] = {
        {CLI_ONE_ARG("task name", &name)},
        {CLI_STR("--task-opts", NULL, &topts)},
        {CLI_INT("--sample", NULL, &n, 0, 1000000)},
        {CLI_INT("--seed", NULL, &seed, 0, 4294967295L)},
        {CLI_FLAG("--json", NULL, &json, 1)},
        {0},
    };
    int parsed = cli_parse(CMD, help, opts, argc, argv);
    if (parsed != CLI_RUN) return parsed;
    if (!name) return cli_usage(CMD, "a task NAME is required (%s)", tg_task_names());
    tg_task t;
    tg_err err;
    if (tg_task_parse(&t, name, topts, &err) != TG_OK) return cli_usage(CMD, "%s", err.msg);
    char ostr[512], tn[32];
    tg_task_opts_string(&t, ostr, sizeof ostr);
    tg_rng r = task_stream(seed, TASK_STREAM_SAMPLE);
    tg_task_seq *s = malloc(sizeof *s);
    if (!s) return cli_error(CMD, "out of memory");
    if (json) {
        printf("{\"task\": \"%s\", \"opts\": \"%s\", \"vocab_size\": %d, \"n\": %d, "
               "\"answers_per_seq\": %d, \"chance\": %.9g, \"vocab\": [",
               name, ostr, t.V, t.n, t.n_answers, t.chance);
        for (int i = 0; i < t.V; i++) {
            tg_task_token_name(&t, i, tn, sizeof tn);
            printf("%s\"%s\"", i ? ", " : "", tn);
        }
        printf("], \"samples\": [");
        for (long q = 0; q < n; q++) {
            tg_task_sample(&t, &r, s);
            printf("%s\n{\"seq\": [", q ? "," : "");
            for (int i = 0; i < t.n; i++) printf("%s%d", i ? ", " : "", s->seq[i]);
            printf("], \"answer\": [");
            for (int i = 0, c = 0; i < t.n; i++)
                if (s->answer[i]) printf("%s%d", c++ ? ", " : "", i);
            printf("], \"role\": [");
            for (int i = 0; i < t.n; i++) printf("%s%d", i ? ", " : "", s->role[i]);
            printf("], \"src\": [");
            for (int i = 0; i < t.n; i++) printf("%s%d", i ? ", " : "", s->src[i]);
            printf("]}");
        }
        printf("]}\n");
    } else {
        printf("task %s (%s)\n%d tokens in the vocabulary, %d per sequence (the model reads the first %d),\n"
               "%d answer%s per sequence, chance %.4g; [answers], item#j marks item j of the answer\n",
               name, ostr, t.V, t.n, t.n - 1, t.n_answers, t.n_answers == 1 ? "" : "s", t.chance);
        for (long q = 0; q < n; q++) {
            tg_task_sample(&t, &r, s);
            printf("\n");
            for (int i = 0; i < t.n; i++) {
                tg_task_token_name(&t, s->seq[i], tn, sizeof tn);
                if (s->answer[i]) printf("[%s]", tn);
                else if (s->role[i]) printf("%s#%d", tn, s->role[i]);
                else printf("%s", tn);
                putchar(i + 1 < t.n ? ' ' : '\n');
            }
        }
    }
    free(s);
    return cli_stdout_check(CMD);
}
