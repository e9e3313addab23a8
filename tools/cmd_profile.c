/* cmd_profile.c — `tinygpt profile`: where a forward pass spends its time.
 *
 * Runs a prompt (prefill) and a few generated tokens (decode) with the
 * profiler attached (model/profiler.h) and prints, per phase, one row per
 * op: calls, total ms, % of the phase's wall time, µs per call, GFLOP/s and
 * GB/s from model/opcount.h, and the fraction of the machine's roofline
 * (engine/roofline.h, measured in the same run). --per-layer and
 * --per-head break rows down; --ctx-sweep times decode at growing context
 * lengths to show attention's quadratic part take over; --trace writes a
 * Chrome/Perfetto trace-event file. The runs and their tables come from
 * the library (model/measure.h); this file parses, calls and prints. */
#include <stdlib.h>
#include <string.h>

#include "engine/roofline.h"
#include "model/gpt.h"
#include "model/measure.h"
#include "model/tokenizer.h"
#include "tools/cli.h"
#include "tools/perf.h"
#include "tools/run.h"

#define CMD "profile"
enum { MAX_SWEEP = 64 };
enum { FMT_TEXT, FMT_JSON, FMT_CSV };

typedef struct profile_args {
    const char *model, *isa, *trace;
    const char *prompt;  /* -p TEXT, or NULL: random tokens */
    long prompt_tokens;  /* -1: default */
    long gen, threads, sweep_steps, seed, reps;
    int per_layer, per_head, format, roofline;
    double probe_seconds;
    long sweep[MAX_SWEEP];
    int n_sweep;
    int no_check;
    const char *kv_type; /* --kv-type, NULL: f32 */
} profile_args;

/* What every column of the text tables means: under the tables and in --help. */
static const char op_legend[] =
    "columns: calls = how often the op was timed (once per step and layer; the\n"
    "attention parts once per step, layer and head); total ms = wall time inside the\n"
    "op; % phase = its share of the phase's wall time; µs/call = total / calls;\n"
    "GFLOP/s = its floating-point operations (model/opcount.h) per second; GB/s =\n"
    "every byte it reads (weights, KV cache, activations) per second; % roof = the\n"
    "roofline bound max(flops / FMA peak, (weight + KV cache bytes) / DRAM\n"
    "bandwidth) over its time ('-': no roofline, or an op with no cost model).\n"
    "(outside ops) = the phase's time no op was running: glue, the probe's clock\n"
    "reads, dispatch, wake-ups.\n";
static const char sweep_legend[] =
    "columns: ctx = positions in the cache; step µs = median decode step; attn µs =\n"
    "its attention (scores + softmax + mix, all layers and heads); attn % = attn /\n"
    "step; µs/head = attn µs / (layers x heads); scores, softmax, mix = the three\n"
    "parts in µs per step; GFLOP/s = attention's flops per second; % roof = its\n"
    "roofline bound; KV KiB = the K/V cache bytes one step's attention reads (KV\n"
    "heads x head size x positions x layers x 2 x 4 bytes, 2 with --kv-type f16:\n"
    "grouped-query and multi-query models read less).\n";

static void usage_text(FILE *f) {
    fprintf(f,
            "usage: tinygpt profile [-m MODEL] [-p PROMPT | --prompt-tokens N] [-n GEN]\n"
            "                       [-r REPEAT] [-t THREADS] [--isa ISA] [--per-layer]\n"
            "                       [--per-head] [--json | --csv] [--trace FILE.json]\n"
            "                       [--ctx-sweep 32,64,...] [--sweep-steps N]\n"
            "                       [--no-roofline] [--probe-seconds S] [--seed N]\n"
            "\n"
            "Profiles a prefill of the prompt (PROMPT's tokens, or N random tokens, default\n"
            "128) and GEN decode steps (default 32), one row per op. Times are wall time:\n"
            "when threads run ops at once, each instant is shared among them. GB/s counts\n"
            "every byte an op reads (weights, KV cache, activations). '%% roof' is the\n"
            "roofline bound max(flops / FMA peak, DRAM bytes / DRAM bandwidth) over the\n"
            "measured time, where DRAM bytes are weights + KV cache\n"
            "(activations are taken to be in cache); peak and bandwidth are measured on\n"
            "this machine first (--no-roofline skips).\n"
            "  -m, --model MODEL     GGUF, HF GPT-2/Llama folder or llama2.c .bin (default:\n"
            "                        the shipped model, or $TINYGPT_MODEL)\n"
            "  -p, --prompt PROMPT   the prompt to prefill (default: random tokens)\n"
            "  --prompt-tokens N     prefill N random tokens instead, [1, the context - GEN]\n"
            "                        (default 128, fewer if the context is short)\n"
            "  -n, --gen, --n-predict GEN  decode steps after the prompt, each followed by\n"
            "                        the sampler, [0, 2^20] and within the context\n"
            "                        (default 32)\n"
            "  -r, --repeat REPEAT   run the whole prefill + decode REPEAT times, [1, 10000]\n"
            "                        (default 1); the tables add them up\n"
            "                        (steadier on a busy machine)\n"
            "  -t, --threads N       worker threads, [1, 256] (default 1)\n"
            "  --isa ISA             scalar|avx2|avx512|neon\n"
            "                        (default: $TINYGPT_ISA or the best this CPU supports)\n"
            "  --per-layer           rows per layer as well\n"
            "  --per-head            attention rows per head (summed over layers)\n"
            "  --json                every number as one JSON object\n"
            "  --csv                 the rows as CSV (phase, op, layer, head, ...)\n"
            "  --trace FILE.json     Chrome trace events (ui.perfetto.dev): one track\n"
            "                        per thread\n"
            "  --ctx-sweep LIST      decode at each context length instead, each in [1, the\n"
            "                        context - 1], at most 64: attention's share of the step\n"
            "                        and its µs per head\n"
            "  --sweep-steps N       decode steps timed at each --ctx-sweep length\n"
            "                        (their median is reported), [1, 100000] (default 8)\n"
            "  --no-roofline         skip the bandwidth and FMA probes (no %% roof column)\n"
            "  --probe-seconds S     time each roofline probe runs, [0.01, 60] (default 1)\n"
            "  --seed N              seed of the random prompt tokens and of the sampler,\n"
            "                        [0, 2^62] (default 0)\n"
            "  --no-check            do not scan the weights for NaN/inf at load\n"
            "  --kv-type TYPE        KV cache elements: f32 or f16 (half the bytes)\n"
            "                        (default f32)\n"
            "\n");
    fputs(op_legend, f);
    fputs("With --ctx-sweep, its table's\n", f);
    fputs(sweep_legend, f);
}

/* --json or --csv, at once an error when the other one was given before */
static int set_format(const char *cmd, const cli_opt *o, const char *flag, const char *v) {
    int *format = o->dst;
    if (*format != FMT_TEXT && *format != o->lo)
        return cli_usage(cmd, "--json and --csv are exclusive"), -1;
    return cli_opt_value(cmd, o, flag, v);
}

/* CLI_RUN, or the exit code. */
static int parse_args(int argc, char **argv, profile_args *a) {
    *a = (profile_args){.prompt_tokens = -1, .gen = 32, .threads = 1, .sweep_steps = 8, .reps = 1,
                        .roofline = 1, .probe_seconds = 1.0};
    const cli_opt opts[] = {
        {CLI_STR("-m", "--model", &a->model)},
        {CLI_STR("--isa", NULL, &a->isa)},
        {CLI_FLAG("--no-check", NULL, &a->no_check, 1)},
        {CLI_STR("--kv-type", NULL, &a->kv_type)},
        {CLI_STR("-p", "--prompt", &a->prompt)},
        {CLI_STR("--trace", NULL, &a->trace)},
        {CLI_INT("--prompt-tokens", NULL, &a->prompt_tokens, 1, 1 << 20)},
        {CLI_INT("-n", "--gen", &a->gen, 0, 1 << 20)},
        {CLI_INT("--n-predict", NULL, &a->gen, 0, 1 << 20)}, /* llama.cpp's name for -n */
        {CLI_INT("-t", "--threads", &a->threads, 1, 256)},
        {CLI_INT("-r", "--repeat", &a->reps, 1, 10000)},
        {CLI_INT("--sweep-steps", NULL, &a->sweep_steps, 1, 100000)},
        {CLI_INT("--seed", NULL, &a->seed, 0, 1L << 62)},
        {CLI_FLOAT("--probe-seconds", NULL, &a->probe_seconds, 0.01, 60)},
        {CLI_LIST("--ctx-sweep", NULL, a->sweep, &a->n_sweep, MAX_SWEEP, 1, 1 << 20)},
        {CLI_FLAG("--per-layer", NULL, &a->per_layer, 1)},
        {CLI_FLAG("--per-head", NULL, &a->per_head, 1)},
        {CLI_FLAG("--no-roofline", NULL, &a->roofline, 0)},
        {CLI_FLAG("--json", NULL, &a->format, FMT_JSON), .call = set_format},
        {CLI_FLAG("--csv", NULL, &a->format, FMT_CSV), .call = set_format},
        {0},
    };
    int parsed = cli_parse(CMD, usage_text, opts, argc, argv);
    if (parsed != CLI_RUN) return parsed;
    if (a->prompt && a->prompt_tokens >= 0)
        return cli_usage(CMD, "-p and --prompt-tokens are exclusive");
    if (a->prompt && !*a->prompt) return cli_usage(CMD, "-p: the prompt is empty");
    if (a->prompt && a->n_sweep) return cli_usage(CMD, "--ctx-sweep uses random tokens: drop -p");
    if (a->trace && a->n_sweep)
        return cli_usage(CMD, "--trace traces a prefill + decode run, not --ctx-sweep");
    if (a->trace) {
        int oc = cli_out_check(CMD, "--trace", a->trace);
        if (!oc) oc = cli_out_not_input(CMD, "--trace", a->trace, "-m", a->model ? a->model : cli_default_model());
        if (oc) return oc;
    }
    return CLI_RUN;
}

/* The prompt's token ids (malloc'd) with the model's tokenizer. */
static int encode_prompt(const tg_gpt2_model *m, const char *text, int **ids, int *n) {
    tg_err err;
    tg_tokenizer *tok;
    if (m->vocab.n_tokens == 0) return cli_error(CMD, "%s: has no vocabulary to encode -p with "
                                                      "(use --prompt-tokens N)", m->path);
    if (tg_tokenizer_create(&tok, &m->vocab, &err)) return cli_error(CMD, "%s", err.msg);
    size_t n_ids = 0;
    tg_status s = tg_tokenizer_encode(tok, text, strlen(text), 0, ids, &n_ids, &err);
    tg_tokenizer_free(tok);
    if (s) return cli_error(CMD, "%s", err.msg);
    for (size_t i = 0; i < n_ids; i++)
        if ((*ids)[i] >= m->cfg.n_vocab) {
            int bad = (*ids)[i];
            free(*ids);
            *ids = NULL;
            return cli_error(CMD, "%s: token %d is outside the model's vocabulary of %d",
                             m->path, bad, m->cfg.n_vocab);
        }
    *n = n_ids > (size_t)1 << 30 ? 1 << 30 : (int)n_ids;
    return EXIT_OK;
}

/* ---- one row of a table -------------------------------------------------------- */

/* A row of a phase table: model/measure.h's. */
typedef tg_profile_row row;

static void print_row_text(FILE *f, const char *label, const row *r) {
    fprintf(f, "%-22s %7.0f %10.3f %7.1f%% %10.2f", label, r->calls, r->ns * 1e-6, r->pct,
            r->calls > 0 ? r->ns * 1e-3 / r->calls : 0.0);
    if (r->ns > 0 && r->flops > 0)
        fprintf(f, " %9.2f", r->flops / r->ns);
    else
        fprintf(f, " %9s", "-");
    if (r->ns > 0 && r->bytes > 0)
        fprintf(f, " %8.2f", r->bytes / r->ns);
    else
        fprintf(f, " %8s", "-");
    if (r->roof_pct >= 0)
        fprintf(f, " %7.1f%%\n", r->roof_pct);
    else
        fprintf(f, " %8s\n", "-");
}

static void print_header_text(FILE *f) {
    fprintf(f, "%-22s %7s %10s %8s %10s %9s %8s %8s\n", "op", "calls", "total ms", "% phase",
            "µs/call", "GFLOP/s", "GB/s", "% roof");
}

static void print_row_json(FILE *f, const row *r, int first) {
    fprintf(f, "%s\n      {\"op\": \"%s\"", first ? "" : ",", r->name);
    if (r->layer != TG_PROF_ALL) fprintf(f, ", \"layer\": %d", r->layer);
    if (r->head != TG_PROF_ALL) fprintf(f, ", \"head\": %d", r->head);
    fprintf(f,
            ", \"calls\": %.0f, \"total_ms\": %.6f, \"pct_phase\": %s, \"us_per_call\": %.4f, "
            "\"flops\": %.17g, \"bytes\": %.17g, \"weight_bytes\": %.17g, \"kv_bytes\": %.17g, "
            "\"act_bytes\": %.17g, \"gflops\": %s, \"gbs\": %s, \"roofline_pct\": ",
            r->calls, r->ns * 1e-6, CLI_JNUM("%.4f", r->pct),
            r->calls > 0 ? r->ns * 1e-3 / r->calls : 0.0, r->flops, r->bytes, r->weight_bytes,
            r->kv_bytes, r->act_bytes, CLI_JNUM("%.6g", r->ns > 0 ? r->flops / r->ns : 0.0),
            CLI_JNUM("%.6g", r->ns > 0 ? r->bytes / r->ns : 0.0));
    if (r->roof_pct >= 0)
        fprintf(f, "%s}", CLI_JNUM("%.6g", r->roof_pct)); /* %g: the sampler's share can be < 1e-4 % */
    else
        fprintf(f, "null}");
}

static void print_row_csv(FILE *f, const char *phase, const row *r) {
    fprintf(f, "%s,%s,", phase, r->name);
    if (r->layer == TG_PROF_ALL) fprintf(f, "all,");
    else fprintf(f, "%d,", r->layer);
    if (r->head == TG_PROF_ALL) fprintf(f, "all,");
    else fprintf(f, "%d,", r->head);
    fprintf(f, "%.0f,%.6f,%.4f,%.4f,%.17g,%.17g,%.6g,%.6g,", r->calls, r->ns * 1e-6, r->pct,
            r->calls > 0 ? r->ns * 1e-3 / r->calls : 0.0, r->flops, r->bytes,
            r->ns > 0 ? r->flops / r->ns : 0.0, r->ns > 0 ? r->bytes / r->ns : 0.0);
    if (r->roof_pct >= 0) fprintf(f, "%.4f\n", r->roof_pct);
    else fprintf(f, "\n");
}

/* ---- the phase tables ----------------------------------------------------------- */

typedef struct report {
    const profile_args *a;
    const tg_gpt2_config *cfg;
    const tg_profile *prof;   /* the run's tables (NULL for --ctx-sweep) */
    const tg_roofline *roof;  /* NULL: not measured */
    const char *model_path;
    const char *isa;
    int n_threads;
    const char *cache_note;   /* perf_cache_note, or NULL */
    size_t kv_bytes_per_token; /* the KV cache's bytes per position (all layers, K and V) */
} report;

/* The rows of a phase in the requested breakdowns, in print order. kind:
 * 0 ops, 1 per layer, 2 per head. */
typedef void (*row_fn)(void *ctx, int kind, const row *r);

static void phase_rows(const report *rp, tg_phase ph, row_fn fn, void *ctx) {
    const tg_profile_phase *pp = &rp->prof->phase[ph];
    for (int i = 0; i < TG_OP_COUNT; i++) fn(ctx, 0, &pp->ops[i]);
    for (int i = 0; i < pp->n_layers; i++) fn(ctx, 1, &pp->layers[i]);
    for (int i = 0; i < pp->n_heads; i++) fn(ctx, 2, &pp->heads[i]);
}

typedef struct text_ctx {
    FILE *f;
    int last_kind;
} text_ctx;

static void text_row(void *ctx, int kind, const row *r) {
    text_ctx *t = ctx;
    char label[64];
    if (kind != t->last_kind) {
        fprintf(t->f, "\n%s\n", kind == 1 ? "per layer:" : "attention per head (all layers):");
        print_header_text(t->f);
        t->last_kind = kind;
    }
    if (kind == 0)
        snprintf(label, sizeof label, "%s", r->name);
    else if (kind == 1)
        snprintf(label, sizeof label, "L%-3d %s", r->layer, r->name);
    else
        snprintf(label, sizeof label, "h%-3d %s", r->head, r->name);
    print_row_text(t->f, label, r);
}

static void print_phase_text(const report *rp, tg_phase ph, FILE *f) {
    if (!rp->prof->has_phase[ph]) return;
    const tg_profile_phase *pp = &rp->prof->phase[ph];
    tg_prof_phase st = pp->info;
    fprintf(f, "\n%s: %ld token%s in %d step%s, %.3f ms (%.1f tok/s); the caller thread had a CPU "
               "%.0f%% of that time\n",
            tg_phase_name(ph), st.tokens, st.tokens == 1 ? "" : "s", st.steps,
            st.steps == 1 ? "" : "s", st.wall_ns * 1e-6,
            st.wall_ns > 0 ? st.tokens / (st.wall_ns * 1e-9) : 0.0,
            st.wall_ns > 0 ? (st.cpu_ns < st.wall_ns ? 100 * st.cpu_ns / st.wall_ns : 100.0) : 0.0);
    print_header_text(f);
    text_ctx t = {f, 0};
    phase_rows(rp, ph, text_row, &t);
    if (t.last_kind) fprintf(f, "\n");
    /* The whole phase: the op rows plus the time no op was running: glue
     * between kernels, the probe's own clock reads, dispatch, wake-ups. */
    print_row_text(f, pp->outside.name, &pp->outside);
    print_row_text(f, "total (per step)", &pp->total);
    fprintf(f, "barrier wait (caller thread): %.3f ms (%.1f%%); probed time per thread "
               "(workers time attention only):",
            st.wait_ns * 1e-6, st.wall_ns > 0 ? 100 * st.wait_ns / st.wall_ns : 0.0);
    for (int i = 0; i < rp->n_threads; i++)
        fprintf(f, " t%d %.1f%%", i, st.wall_ns > 0 ? 100 * st.busy_ns[i] / st.wall_ns : 0.0);
    fprintf(f, "\n");
}

typedef struct json_ctx {
    FILE *f;
    int kind, first;
} json_ctx;

static void json_row(void *ctx, int kind, const row *r) {
    json_ctx *j = ctx;
    if (kind != j->kind) return;
    print_row_json(j->f, r, j->first);
    j->first = 0;
}

static void print_phase_json(const report *rp, tg_phase ph, FILE *f, int first) {
    tg_prof_phase st = rp->prof->phase[ph].info;
    fprintf(f,
            "%s\n    {\"phase\": \"%s\", \"steps\": %d, \"tokens\": %ld, \"wall_ms\": %.6f, "
            "\"op_ms\": %.6f, \"outside_ms\": %.6f, \"barrier_wait_ms\": %.6f, "
            "\"caller_cpu_ms\": %.6f, \"thread_busy_ms\": [",
            first ? "" : ",", tg_phase_name(ph), st.steps, st.tokens, st.wall_ns * 1e-6,
            st.op_ns * 1e-6, (st.wall_ns - st.op_ns) * 1e-6, st.wait_ns * 1e-6, st.cpu_ns * 1e-6);
    for (int i = 0; i < rp->n_threads; i++) fprintf(f, "%s%.6f", i ? ", " : "", st.busy_ns[i] * 1e-6);
    fprintf(f, "],\n     \"ops\": [");
    const char *keys[3] = {"ops", "layers", "heads"};
    for (int kind = 0; kind < 3; kind++) {
        if (kind == 1 && !rp->a->per_layer) continue;
        if (kind == 2 && !rp->a->per_head) continue;
        if (kind) fprintf(f, "],\n     \"%s\": [", keys[kind]);
        json_ctx j = {f, kind, 1};
        phase_rows(rp, ph, json_row, &j);
    }
    fprintf(f, "]}");
}

typedef struct csv_ctx {
    FILE *f;
    const char *phase;
} csv_ctx;

static void csv_row(void *ctx, int kind, const row *r) {
    (void)kind;
    csv_ctx *c = ctx;
    print_row_csv(c->f, c->phase, r);
}

static void print_config_json(const report *rp, FILE *f) {
    const tg_gpt2_config *c = rp->cfg;
    fprintf(f, "{\n  \"model\": ");
    perf_json_str(f, rp->model_path);
    fprintf(f,
            ",\n  \"config\": {\"n_layer\": %d, \"n_head\": %d, \"n_embd\": %d, \"n_ff\": %d, "
            "\"n_vocab\": %d, \"n_ctx\": %d, \"n_kv_head\": %d, \"head_size\": %d, "
            "\"kv_bytes_per_token\": %zu, \"kv_bytes_per_context\": %zu},\n  \"isa\": \"%s\",\n"
            "  \"threads\": %d,\n  \"roofline\": ",
            c->n_layer, c->n_head, c->n_embd, c->n_ff, c->n_vocab, c->n_ctx, tg_config_n_kv_head(c),
            tg_config_head_dim(c), rp->kv_bytes_per_token, rp->kv_bytes_per_token * (size_t)c->n_ctx, rp->isa,
            rp->n_threads);
    if (rp->roof)
        fprintf(f, "{\"threads\": %d, \"dram_gbs\": %.6g, \"peak_gflops\": %.6g}",
                rp->roof->n_threads, rp->roof->dram_gbs, rp->roof->peak_gflops);
    else
        fprintf(f, "null");
}

static void print_header_lines(const report *rp, FILE *f) {
    const tg_gpt2_config *c = rp->cfg;
    fprintf(f, "tinygpt profile: %s (L=%d H=%d E=%d HS=%d F=%d V=%d C=%d), %d thread%s, %s\n",
            rp->model_path, c->n_layer, c->n_head, c->n_embd, tg_config_head_dim(c), c->n_ff,
            c->n_vocab, c->n_ctx, rp->n_threads, rp->n_threads == 1 ? "" : "s", rp->isa);
    if (rp->roof) {
        fprintf(f, "roofline (%d thread%s, measured): DRAM read %.1f GB/s, FMA peak %.1f GFLOP/s\n",
                rp->roof->n_threads, rp->roof->n_threads == 1 ? "" : "s", rp->roof->dram_gbs,
                rp->roof->peak_gflops);
        if (rp->cache_note) fprintf(f, "%s\n", rp->cache_note);
    }
}

/* ---- trace ---------------------------------------------------------------------- */

static int write_trace(const report *rp, const char *path) {
    cli_outfile o;
    tg_err err;
    if (cli_out_open(&o, path, &err)) return cli_error(CMD, "%s", err.msg);
    FILE *f = o.f;
    size_t n_ev, n_steps;
    int truncated;
    const tg_prof_event *ev = tg_profiler_events(rp->prof->profiler, &n_ev, &truncated);
    const tg_prof_step *steps = tg_profiler_steps(rp->prof->profiler, &n_steps);
    fprintf(f, "{\"displayTimeUnit\": \"ms\", \"otherData\": {\"model\": ");
    perf_json_str(f, rp->model_path);
    fprintf(f, ", \"isa\": \"%s\", \"truncated\": %s},\n\"traceEvents\": [\n", rp->isa,
            truncated ? "true" : "false");
    fprintf(f, "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": 1, \"tid\": 0, "
               "\"args\": {\"name\": \"tinygpt profile\"}}");
    for (int i = 0; i < rp->n_threads; i++)
        fprintf(f, ",\n{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 1, \"tid\": %d, "
                   "\"args\": {\"name\": \"thread %d\"}}", i, i);
    /* Steps enclose the ops of thread 0, so they nest on its track. */
    for (size_t i = 0; i < n_steps; i++)
        fprintf(f, ",\n{\"name\": \"%s\", \"cat\": \"step\", \"ph\": \"X\", \"ts\": %.3f, "
                   "\"dur\": %.3f, \"pid\": 1, \"tid\": 0, \"args\": {\"T\": %d, \"pos\": %d}}",
                tg_phase_name((tg_phase)steps[i].phase), steps[i].t0 * 1e-3,
                (steps[i].t1 - steps[i].t0) * 1e-3, steps[i].T, steps[i].pos);
    for (size_t i = 0; i < n_ev; i++) {
        const tg_prof_event *e = &ev[i];
        fprintf(f, ",\n{\"name\": \"%s\", \"cat\": \"op\", \"ph\": \"X\", \"ts\": %.3f, "
                   "\"dur\": %.3f, \"pid\": 1, \"tid\": %d, \"args\": {\"layer\": %d, \"head\": %d}}",
                tg_op_name((tg_op)e->op), e->t0 * 1e-3, (e->t1 - e->t0) * 1e-3, e->ith, e->layer,
                e->head);
    }
    fprintf(f, "\n]}\n");
    if (cli_out_commit(&o, &err)) return cli_error(CMD, "%s", err.msg);
    if (truncated)
        fprintf(stderr, "tinygpt profile: %s: trace truncated (too many events)\n", path);
    return EXIT_OK;
}

/* ---- context sweep ---------------------------------------------------------------- */

typedef tg_sweep_row sweep_row;

static int cmp_long(const void *x, const void *y) {
    long a = *(const long *)x, b = *(const long *)y;
    return (a > b) - (a < b);
}

static void print_sweep(const report *rp, const sweep_row *rows, int n, FILE *f) {
    const tg_gpt2_config *c = rp->cfg;
    if (rp->a->format == FMT_CSV) {
        fprintf(f, "ctx,steps,step_us,attn_us,attn_pct,us_per_head,scores_us,softmax_us,mix_us,"
                   "attn_gflops,attn_roofline_pct,kv_bytes\n");
        for (int i = 0; i < n; i++) {
            const sweep_row *r = &rows[i];
            fprintf(f, "%d,%d,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.6g,", r->ctx, r->steps, r->step_us,
                    r->attn_us, r->attn_pct, r->us_per_head, r->part_us[0], r->part_us[1],
                    r->part_us[2], r->attn_gflops);
            if (r->attn_roof_pct >= 0) fprintf(f, "%.4f", r->attn_roof_pct);
            fprintf(f, ",%.0f\n", r->kv_bytes);
        }
        return;
    }
    if (rp->a->format == FMT_JSON) {
        print_config_json(rp, f);
        fprintf(f, ",\n  \"ctx_sweep\": [");
        for (int i = 0; i < n; i++) {
            const sweep_row *r = &rows[i];
            fprintf(f,
                    "%s\n    {\"ctx\": %d, \"steps\": %d, \"step_us\": %.4f, \"attn_us\": %.4f, "
                    "\"attn_pct\": %s, \"us_per_head\": %.4f, \"scores_us\": %.4f, "
                    "\"softmax_us\": %.4f, \"mix_us\": %.4f, \"attn_gflops\": %s, "
                    "\"attn_roofline_pct\": ",
                    i ? "," : "", r->ctx, r->steps, r->step_us, r->attn_us,
                    CLI_JNUM("%.4f", r->attn_pct), r->us_per_head, r->part_us[0], r->part_us[1],
                    r->part_us[2], CLI_JNUM("%.6g", r->attn_gflops));
            if (r->attn_roof_pct >= 0) fprintf(f, "%s", CLI_JNUM("%.4f", r->attn_roof_pct));
            else fprintf(f, "null");
            fprintf(f, ", \"kv_bytes\": %.0f}", r->kv_bytes);
        }
        fprintf(f, "\n  ]\n}\n");
        return;
    }
    print_header_lines(rp, f);
    fprintf(f, "\ndecode at growing context (median of %ld steps each; attention = scores + "
               "softmax + mix, %d heads of %d per layer, %d KV heads):\n",
            rp->a->sweep_steps, c->n_head, tg_config_head_dim(c), tg_config_n_kv_head(c));
    fprintf(f, "%7s %10s %10s %7s %9s %9s %9s %9s %9s %7s %10s\n", "ctx", "step µs", "attn µs",
            "attn %", "µs/head", "scores", "softmax", "mix", "GFLOP/s", "% roof", "KV KiB");
    for (int i = 0; i < n; i++) {
        const sweep_row *r = &rows[i];
        fprintf(f, "%7d %10.1f %10.1f %6.1f%% %9.3f %9.1f %9.1f %9.1f %9.2f", r->ctx, r->step_us,
                r->attn_us, r->attn_pct, r->us_per_head, r->part_us[0], r->part_us[1],
                r->part_us[2], r->attn_gflops);
        if (r->attn_roof_pct >= 0) fprintf(f, " %6.1f%%", r->attn_roof_pct);
        else fprintf(f, " %7s", "-");
        fprintf(f, " %10.1f\n", r->kv_bytes / 1024.0);
    }
    fprintf(f, "\n%s", sweep_legend);
}

/* ---- main ------------------------------------------------------------------------- */

int cmd_profile(int argc, char **argv) {
    profile_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc != CLI_RUN) return rc;
    if (a.n_sweep) {
        qsort(a.sweep, (size_t)a.n_sweep, sizeof a.sweep[0], cmp_long);
        for (int i = 1; i < a.n_sweep; i++)
            if (a.sweep[i] == a.sweep[i - 1])
                return cli_usage(CMD, "--ctx-sweep: %ld is listed twice", a.sweep[i]);
    }
    tg_err err;
    tg_isa isa;
    tg_wtype kv_type;
    if ((rc = run_kv_type(CMD, a.kv_type, &kv_type))) return rc;
    tg_gpt2_model m;
    if ((rc = perf_load(CMD, a.isa, a.model, a.no_check, &isa, &m))) return rc;
    const tg_gpt2_config *c = &m.cfg;
    int *prompt = NULL;
    const int C = c->n_ctx; /* c points into m: the messages below come after freeing m */
    /* Validate lengths against the model before any work. */
    if (a.n_sweep) {
        if (a.sweep[a.n_sweep - 1] > c->n_ctx - 1) {
            tg_gpt2_free(&m);
            return cli_usage(CMD, "--ctx-sweep: %ld does not fit the model's %d-position context "
                                  "(at most %d)", a.sweep[a.n_sweep - 1], C, C - 1);
        }
    } else {
        if (a.gen > c->n_ctx - 1) {
            tg_gpt2_free(&m);
            return cli_usage(CMD, "-n %ld does not fit the model's %d-position context", a.gen, C);
        }
        if (a.prompt) {
            int n = 0;
            if ((rc = encode_prompt(&m, a.prompt, &prompt, &n))) {
                tg_gpt2_free(&m);
                return rc;
            }
            a.prompt_tokens = n;
            if (n == 0) {
                free(prompt);
                tg_gpt2_free(&m);
                return cli_usage(CMD, "-p: the prompt encodes to no tokens");
            }
        }
        if (a.prompt_tokens < 0) {
            a.prompt_tokens = 128;
            if (a.prompt_tokens > c->n_ctx - a.gen) a.prompt_tokens = c->n_ctx - a.gen;
        } else if (a.prompt && a.prompt_tokens > c->n_ctx) {
            /* a text too long is a runtime error (exit 1), as in generate */
            free(prompt);
            tg_gpt2_free(&m);
            return cli_error(CMD, "the prompt is %ld tokens, longer than the context of %d tokens",
                             a.prompt_tokens, C);
        } else if (a.prompt_tokens + a.gen > c->n_ctx) {
            free(prompt);
            tg_gpt2_free(&m);
            return cli_usage(CMD, "%ld prompt tokens + %ld decode steps do not fit the model's "
                                  "%d-position context", a.prompt_tokens, a.gen, C);
        }
    }

    tg_gpt_opts opts = {.n_threads = (int)a.threads, .isa = tg_isa_name(isa), .n_ctx = 0,
                        .kv_type = kv_type};
    tg_gpt *g = NULL;
    tg_profile prof = {0};
    sweep_row *sweep = NULL;
    int *ctxs = NULL;
    tg_roofline roof;
    const tg_roofline *roofp = NULL;
    if (tg_gpt_create(&g, &m, &opts, &err)) {
        rc = cli_error(CMD, "%s", err.msg);
        goto done;
    }
    int n_prompt = a.n_sweep ? 1 : (int)a.prompt_tokens;
    if (!prompt) {
        if ((prompt = malloc((size_t)n_prompt * sizeof *prompt)))
            tg_random_tokens(prompt, n_prompt, c->n_vocab, (uint64_t)a.seed);
    }
    sweep = calloc(MAX_SWEEP, sizeof *sweep);
    ctxs = calloc(MAX_SWEEP, sizeof *ctxs);
    if (!prompt || !sweep || !ctxs) {
        rc = cli_error(CMD, "out of memory");
        goto done;
    }
    if (a.roofline) {
        if ((rc = perf_roofline(CMD, isa, (int)a.threads, a.probe_seconds, &roof))) goto done;
        roofp = &roof;
    }
    char note[256];
    report rp = {&a, c, &prof, roofp, m.path ? m.path : "model", tg_isa_name(isa), (int)a.threads,
                 perf_cache_note(&m, note, sizeof note), tg_gpt_kv_bytes_per_token(g)};

    if (a.n_sweep) {
        for (int i = 0; i < a.n_sweep; i++) ctxs[i] = (int)a.sweep[i];
        if (tg_profile_sweep(g, ctxs, a.n_sweep, (int)a.sweep_steps, (uint64_t)a.seed, roofp, sweep,
                             &err)) {
            rc = cli_error(CMD, "%s", err.msg);
            goto done;
        }
        print_sweep(&rp, sweep, a.n_sweep, stdout);
    } else {
        tg_profile_opts po = {.prompt = prompt, .n_prompt = n_prompt, .gen = (int)a.gen,
                              .reps = (int)a.reps, .seed = (uint64_t)a.seed,
                              .per_layer = a.per_layer, .per_head = a.per_head,
                              .keep_events = a.trace != NULL, .roof = roofp};
        if (tg_profile_run(g, &po, &prof, &err)) {
            rc = cli_error(CMD, "%s", err.msg);
            goto done;
        }
        if (a.format == FMT_JSON) {
            print_config_json(&rp, stdout);
            fprintf(stdout, ",\n  \"phases\": [");
            int first = 1;
            for (int ph = 0; ph < TG_PHASE_COUNT; ph++) {
                if (!prof.has_phase[ph]) continue;
                print_phase_json(&rp, (tg_phase)ph, stdout, first);
                first = 0;
            }
            fprintf(stdout, "\n  ]\n}\n");
        } else if (a.format == FMT_CSV) {
            fprintf(stdout, "phase,op,layer,head,calls,total_ms,pct_phase,us_per_call,flops,bytes,"
                            "gflops,gbs,roofline_pct\n");
            for (int ph = 0; ph < TG_PHASE_COUNT; ph++) {
                if (!prof.has_phase[ph]) continue;
                csv_ctx cc = {stdout, tg_phase_name((tg_phase)ph)};
                phase_rows(&rp, (tg_phase)ph, csv_row, &cc);
            }
        } else {
            print_header_lines(&rp, stdout);
            for (int ph = 0; ph < TG_PHASE_COUNT; ph++) print_phase_text(&rp, (tg_phase)ph, stdout);
            printf("\n%s", op_legend);
        }
    }
    if ((rc = cli_stdout_check(CMD))) goto done;
    if (a.trace) rc = write_trace(&rp, a.trace);
done:
    free(sweep);
    free(ctxs);
    free(prompt);
    tg_profile_free(&prof);
    tg_gpt_free(g);
    tg_gpt2_free(&m);
    return rc;
}
