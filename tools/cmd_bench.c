/* cmd_bench.c — `tinygpt bench`: prompt processing and text generation
 * throughput, llama-bench style. One row per (threads, test): ppN is one
 * prefill of N tokens, tgN is N decode steps from an empty cache (no
 * sampling); tok/s is the mean ± sample standard deviation over the
 * repetitions, after one warm-up run. Each row also gives the achieved
 * GFLOP/s and GB/s (weights + KV cache read, model/opcount.h) and their
 * fraction of this machine's roofline, measured in the same run at that
 * thread count (--no-roofline skips the probes). The rows are measured by
 * the library (tg_bench_run, model/measure.h); this file parses, calls and
 * prints. */
#include <stdlib.h>
#include <string.h>

#include "engine/roofline.h"
#include "model/gpt.h"
#include "model/measure.h"
#include "tools/cli.h"
#include "tools/perf.h"
#include "tools/run.h"

#define CMD "bench"
enum { MAX_LIST = 16, MAX_REPS = TG_BENCH_MAX_REPS };

typedef struct bench_args {
    const char *model, *isa;
    long threads[MAX_LIST], pp[MAX_LIST], tg[MAX_LIST];
    int n_threads, n_pp, n_tg;
    long reps;
    int json, roofline, no_check;
    const char *kv_type; /* --kv-type, NULL: f32 */
    double probe_seconds;
} bench_args;

static void usage_text(FILE *f) {
    fprintf(f,
            "usage: tinygpt bench [-m MODEL] [-t 1,2] [-p 128,512] [-n 128] [-r 5]\n"
            "                     [--isa ISA] [--json] [--no-roofline] [--probe-seconds S]\n"
            "  -m, --model MODEL        GGUF, HF GPT-2/Llama folder or llama2.c .bin\n"
            "                           (default: the shipped model, or $TINYGPT_MODEL)\n"
            "  -t, --threads LIST       thread counts, each in [1, 256], at most 16\n"
            "                           (default 1)\n"
            "  -p, --n-prompt LIST      prompt lengths: one prefill of N tokens per run, each\n"
            "                           in [1, the context] (default 128; 0 skips)\n"
            "  -n, --n-gen LIST         generation lengths: N decode steps per run, each in\n"
            "                           [1, the context] (default 128; 0 skips)\n"
            "  -r, --repetitions N      repetitions after one warm-up run, [1, 1000]\n"
            "                           (default 5)\n"
            "  --isa ISA                scalar|avx2|avx512|neon\n"
            "                           (default: $TINYGPT_ISA or the best this CPU supports)\n"
            "  --json                   print every row and every repetition's time as JSON\n"
            "  --no-roofline            skip the bandwidth and FMA probes (no roof column)\n"
            "  --probe-seconds S        time each roofline probe runs, [0.01, 60] (default 1)\n"
            "  --no-check               do not scan the weights for NaN/inf at load\n"
            "  --kv-type TYPE           KV cache elements: f32 or f16 (half the bytes)\n"
            "                           (default f32)\n"
            "columns: threads; test (ppN: one prefill of N tokens, tgN: N decode steps from\n"
            "an empty cache, no sampling); t/s = tokens per second, mean ± sample standard\n"
            "deviation over the repetitions; GFLOP/s = floating-point operations the test\n"
            "does (model/opcount.h) per second; GB/s = weights + KV cache bytes read per\n"
            "second; roof = the roofline bound max(flops / FMA peak, bytes / DRAM bandwidth)\n"
            "over the time, i.e. the larger of GFLOP/s / peak and GB/s / bandwidth, with\n"
            "peak and bandwidth measured first at each thread count (--json has both).\n");
}

/* A list flag where 0 alone means "none". */
static int list_or_none(const char *cmd, const cli_opt *o, const char *flag, const char *v) {
    if (strcmp(v, "0")) return cli_opt_value(cmd, o, flag, v);
    *o->n = 0;
    return 0;
}

/* CLI_RUN, or the exit code. */
static int parse_args(int argc, char **argv, bench_args *a) {
    *a = (bench_args){.threads = {1}, .n_threads = 1, .pp = {128}, .n_pp = 1, .tg = {128},
                      .n_tg = 1, .reps = 5, .roofline = 1, .probe_seconds = 1.0};
    const cli_opt opts[] = {
        {CLI_STR("-m", "--model", &a->model)},
        {CLI_STR("--isa", NULL, &a->isa)},
        {CLI_LIST("-t", "--threads", a->threads, &a->n_threads, MAX_LIST, 1, 256)},
        {CLI_LIST("-p", "--n-prompt", a->pp, &a->n_pp, MAX_LIST, 1, 1 << 20), .call = list_or_none},
        {CLI_LIST("-n", "--n-gen", a->tg, &a->n_tg, MAX_LIST, 1, 1 << 20), .call = list_or_none},
        {CLI_INT("-r", "--repetitions", &a->reps, 1, MAX_REPS)},
        {CLI_FLOAT("--probe-seconds", NULL, &a->probe_seconds, 0.01, 60)},
        {CLI_FLAG("--json", NULL, &a->json, 1)},
        {CLI_FLAG("--no-roofline", NULL, &a->roofline, 0)},
        {CLI_FLAG("--no-check", NULL, &a->no_check, 1)},
        {CLI_STR("--kv-type", NULL, &a->kv_type)},
        {0},
    };
    int parsed = cli_parse(CMD, usage_text, opts, argc, argv);
    if (parsed != CLI_RUN) return parsed;
    if (!a->n_pp && !a->n_tg) return cli_usage(CMD, "nothing to run: -p 0 and -n 0");
    return CLI_RUN;
}

/* A row of the table: model/measure.h's. */
typedef tg_bench_row bench_row;

static void print_row(const bench_row *r) {
    char test[32], ts[48], roof[16];
    snprintf(test, sizeof test, "%s%d", r->is_pp ? "pp" : "tg", r->n);
    snprintf(ts, sizeof ts, "%.2f ± %.2f", r->tok_s, r->tok_s_sd);
    if (r->roof_frac >= 0) snprintf(roof, sizeof roof, "%.1f%%", 100 * r->roof_frac);
    else snprintf(roof, sizeof roof, "-");
    printf("| %7d | %6s | %20s | %8.2f | %7.2f | %6s |\n", r->threads, test, ts, r->gflops, r->gbs,
           roof);
    fflush(stdout);
}

static void print_json_row(const bench_row *r, int first) {
    printf("%s\n    {\"threads\": %d, \"test\": \"%s%d\", \"n_tokens\": %d, \"reps\": %d, "
           "\"tok_s\": %s, \"tok_s_sd\": %s, \"gflops\": %s, \"gbs\": %s, "
           "\"flops_per_run\": %.17g, \"bytes_per_run\": %.17g, \"roofline_frac\": ",
           first ? "" : ",", r->threads, r->is_pp ? "pp" : "tg", r->n, r->n, r->reps,
           CLI_JNUM("%.6g", r->tok_s), CLI_JNUM("%.6g", r->tok_s_sd), CLI_JNUM("%.6g", r->gflops),
           CLI_JNUM("%.6g", r->gbs), r->cost.flops, r->cost.weight_bytes + r->cost.kv_bytes);
    if (r->roof_frac >= 0)
        printf("%s, \"peak_frac\": %s, \"dram_frac\": %s", CLI_JNUM("%.6g", r->roof_frac),
               CLI_JNUM("%.6g", r->flops_frac), CLI_JNUM("%.6g", r->bw_frac));
    else
        printf("null, \"peak_frac\": null, \"dram_frac\": null");
    printf(", \"ms\": [");
    for (int i = 0; i < r->reps; i++) printf("%s%s", i ? ", " : "", CLI_JNUM("%.6f", r->ms[i]));
    printf("]}");
}

int cmd_bench(int argc, char **argv) {
    bench_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc != CLI_RUN) return rc;
    tg_err err;
    tg_isa isa;
    tg_wtype kv_type;
    if ((rc = run_kv_type(CMD, a.kv_type, &kv_type))) return rc;
    tg_gpt2_model m;
    if ((rc = perf_load(CMD, a.isa, a.model, a.no_check, &isa, &m))) return rc;
    const tg_gpt2_config *c = &m.cfg;
    long max_n = 1;
    for (int i = 0; i < a.n_pp; i++) max_n = a.pp[i] > max_n ? a.pp[i] : max_n;
    for (int i = 0; i < a.n_tg; i++) max_n = a.tg[i] > max_n ? a.tg[i] : max_n;
    if (max_n > c->n_ctx) {
        int C = c->n_ctx; /* c points into m: read it before freeing m */
        tg_gpt2_free(&m);
        return cli_usage(CMD, "%ld tokens do not fit the model's %d-position context", max_n, C);
    }
    int *tokens = malloc((size_t)max_n * sizeof *tokens);
    if (!tokens) {
        rc = cli_error(CMD, "out of memory");
        goto done;
    }
    perf_tokens(tokens, (int)max_n, c->n_vocab, 1);
    bench_row *rows = calloc((size_t)a.n_threads * (a.n_pp + a.n_tg), sizeof *rows);
    tg_roofline *roofs = calloc((size_t)a.n_threads, sizeof *roofs);
    int n_rows = 0;
    if (!rows || !roofs) {
        free(rows);
        free(roofs);
        rc = cli_error(CMD, "out of memory");
        goto done;
    }
    /* The machine first, at every thread count, before the model's pages
     * are hot (the probes use their own buffers). */
    for (int ti = 0; ti < a.n_threads && a.roofline && rc == EXIT_OK; ti++)
        rc = perf_roofline(CMD, isa, (int)a.threads[ti], a.probe_seconds, &roofs[ti]);
    if (rc == EXIT_OK && !a.json) {
        const tg_gpt2_config *cf = &m.cfg;
        size_t params = tg_gpt2_n_params(cf, m.w.tied);
        printf("model: %s (L=%d H=%d E=%d F=%d V=%d C=%d, %.2f M params, %.1f MiB f32), %s\n",
               m.path ? m.path : "model", cf->n_layer, cf->n_head, cf->n_embd, cf->n_ff,
               cf->n_vocab, cf->n_ctx, params * 1e-6, params * 4.0 / (1 << 20), tg_isa_name(isa));
        for (int ti = 0; ti < a.n_threads && a.roofline; ti++)
            printf("roofline, %ld thread%s: DRAM read %.1f GB/s, FMA peak %.1f GFLOP/s\n",
                   a.threads[ti], a.threads[ti] == 1 ? "" : "s", roofs[ti].dram_gbs,
                   roofs[ti].peak_gflops);
        char note[256];
        if (a.roofline && perf_cache_note(&m, note, sizeof note)) printf("%s\n", note);
        printf("\n| threads |   test |                  t/s |  GFLOP/s |    GB/s |   roof |\n");
        printf("| ------: | -----: | -------------------: | -------: | ------: | -----: |\n");
    }
    for (int ti = 0; ti < a.n_threads && rc == EXIT_OK; ti++) {
        int nth = (int)a.threads[ti];
        tg_gpt_opts opts = {.n_threads = nth, .isa = tg_isa_name(isa), .n_ctx = (int)max_n,
                            .kv_type = kv_type};
        tg_gpt *g;
        if (tg_gpt_create(&g, &m, &opts, &err)) {
            rc = cli_error(CMD, "%s", err.msg);
            break;
        }
        const tg_roofline *roof = a.roofline ? &roofs[ti] : NULL;
        for (int k = 0; k < a.n_pp + a.n_tg && rc == EXIT_OK; k++) {
            bench_row *r = &rows[n_rows];
            int is_pp = k < a.n_pp, n = (int)(is_pp ? a.pp[k] : a.tg[k - a.n_pp]);
            if (tg_bench_run(g, is_pp, n, (int)a.reps, tokens, roof, r, &err)) {
                rc = cli_error(CMD, "%s", err.msg);
                break;
            }
            n_rows++;
            if (!a.json) print_row(r);
        }
        tg_gpt_free(g);
    }
    if (rc == EXIT_OK && a.json) {
        printf("{\n  \"model\": ");
        perf_json_str(stdout, m.path ? m.path : "model");
        printf(",\n  \"config\": {\"n_layer\": %d, \"n_head\": %d, \"n_embd\": %d, "
               "\"n_ff\": %d, \"n_vocab\": %d, \"n_ctx\": %d},\n  \"isa\": \"%s\",\n"
               "  \"machine\": [",
               c->n_layer, c->n_head, c->n_embd, c->n_ff, c->n_vocab, c->n_ctx, tg_isa_name(isa));
        for (int ti = 0; ti < a.n_threads && a.roofline; ti++)
            printf("%s\n    {\"threads\": %ld, \"dram_gbs\": %.6g, \"peak_gflops\": %.6g}",
                   ti ? "," : "", a.threads[ti], roofs[ti].dram_gbs, roofs[ti].peak_gflops);
        printf("\n  ],\n  \"rows\": [");
        for (int i = 0; i < n_rows; i++) print_json_row(&rows[i], i == 0);
        printf("\n  ]\n}\n");
    }
    free(rows);
    free(roofs);
    if (rc == EXIT_OK) rc = cli_stdout_check(CMD);
done:
    free(tokens);
    tg_gpt2_free(&m);
    return rc;
}
