/* cmd_attention.c — `tinygpt attention`: what every head looks at. For one
 * query token, each head's weights over the prompt as labelled bars; with
 * --svg, the whole layers × heads grid of token × token heatmaps. The
 * weights come from tg_attention_capture (model/analysis.h) through
 * attn_capture, which labels the tokens. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/attnviz.h"
#include "tools/cli.h"
#include "tools/run.h"
#include "tools/task_cli.h"

static const char *const CMD = "attention";
static const char *const DEFAULT_PROMPT = "The researcher who wrote the paper said it was wrong.";

static void help(FILE *f) {
    fprintf(f,
            "usage: tinygpt attention [-m MODEL] [-p PROMPT] [--layer L] [--head H]\n"
            "                         [--query I] [--svg FILE] [--log] [--json]\n"
            "                         [-t THREADS] [--isa ISA]\n"
            "  -m, --model MODEL     GGUF, HF GPT-2/Llama folder or llama2.c .bin (default:\n"
            "                        the shipped model, or $TINYGPT_MODEL)\n"
            "  -p, --prompt PROMPT   the text whose attention is shown, at most the context\n"
            "                        in tokens (default:\n"
            "                        \"%s\")\n"
            "  --layer L             show only layer L, [0, layers-1] (default: all), in the\n"
            "                        bars and the SVG\n"
            "  --head H              show only head H, [0, heads-1] (default: all), in the\n"
            "                        bars and the SVG\n"
            "  --query I             the query token of the bars, [0, tokens-1]\n"
            "                        (default: the last)\n"
            "  --svg FILE            write a grid of heatmaps\n"
            "                        (layers x heads, tokens x tokens) with a colour scale\n"
            "                        (default: none); up to %d tokens, each cell is an\n"
            "                        element with a tooltip; past that, each head is one\n"
            "                        embedded PNG, a pixel per cell\n"
            "  --log                 colour the heatmaps by log10 weight from 1e-4 to 1, so\n"
            "                        sinks do not wash out the rest (default: linear, 0 to 1)\n"
            "  --json                print every weight as JSON instead of bars\n"
            "  -t, --threads N       worker threads, [1, 1024] (default 1)\n"
            "  --isa ISA             scalar|avx2|avx512|neon\n"
            "                        (default: $TINYGPT_ISA or the best this CPU supports)\n"
            RUN_HELP_NO_CHECK
            RUN_HELP_TOKENIZER
            RUN_HELP_KV_TYPE
            "  --task NAME           show an example of a synthetic task instead, its marks\n"
            "                        labelled (tinygpt task --help lists the tasks), with\n"
            "                        options of its own: attention --task NAME --help\n"
            "A model trained with train --task shows an example of its task, as with --task.\n",
            DEFAULT_PROMPT, ATTN_SVG_RECT_MAX_T);
}

int cmd_attention(int argc, char **argv) {
    int task_rc = task_attention_maybe(argc, argv); /* a task example: tools/task_heads.c */
    if (task_rc >= 0) return task_rc;
    const char *model_path = NULL, *prompt = DEFAULT_PROMPT, *svg = NULL;
    long layer = -1, head = -1, query = -1, threads = 1;
    int log_scale = 0, json = 0;
    run_opts ro = {0};
    const char *task_name = NULL; /* TASK_CLI_OPT: never parsed here */
    const cli_opt opts[] = {
        {CLI_STR("-m", "--model", &model_path)},
        {CLI_STR("-p", "--prompt", &prompt)},
        {CLI_INT("--layer", NULL, &layer, 0, 1 << 20)},
        {CLI_INT("--head", NULL, &head, 0, 1 << 20)},
        {CLI_INT("--query", NULL, &query, 0, 1 << 24)},
        {CLI_STR("--svg", NULL, &svg)},
        {CLI_FLAG("--log", NULL, &log_scale, 1)},
        {CLI_FLAG("--json", NULL, &json, 1)},
        {CLI_INT("-t", "--threads", &threads, 1, 1024)},
        {CLI_STR("--isa", NULL, &ro.isa)},
        {RUN_OPT_NO_CHECK(&ro.no_check)},
        {RUN_OPT_TOKENIZER(&ro.tokenizer)},
        {RUN_OPT_KV_TYPE(&ro.kv_type)},
        {TASK_CLI_OPT(&task_name)},
        {0},
    };
    int parsed = cli_parse(CMD, help, opts, argc, argv);
    if (parsed != CLI_RUN) return parsed;
    if (svg && (parsed = cli_out_check(CMD, "--svg", svg))) return parsed;
    if ((parsed = cli_out_not_input(CMD, "--svg", svg, "-m", model_path ? model_path : cli_default_model())) ||
        (parsed = cli_out_not_input(CMD, "--svg", svg, "--tokenizer", ro.tokenizer)))
        return parsed;
    ro.n_threads = (int)threads;
    run_ctx rc;
    int code = run_open(&rc, CMD, model_path, &ro);
    if (code) return code;
    const tg_gpt2_config *c = tg_gpt_config(rc.gpt);
    tg_err err = {{0}};
    int *ids = NULL;
    size_t n = 0;
    attn_map m = {0};
    if ((code = attn_check_selection(CMD, c->n_layer, c->n_head, layer, head))) goto done;
    if (tg_tokenizer_encode(rc.tok, prompt, strlen(prompt), 1, &ids, &n, &err)) {
        code = cli_error(CMD, "%s", err.msg);
        goto done;
    }
    if (n == 0) {
        code = cli_error(CMD, "the prompt has no tokens");
        goto done;
    }
    if (n > (size_t)tg_gpt_n_ctx(rc.gpt)) {
        code = cli_error(CMD, "the prompt has %zu tokens but the context holds %d", n,
                         tg_gpt_n_ctx(rc.gpt));
        goto done;
    }
    if (query >= (long)n) {
        code = cli_usage(CMD, "--query: %ld is outside [0, %zu] (the prompt's tokens)", query, n - 1);
        goto done;
    }
    int q = query < 0 ? (int)n - 1 : (int)query;
    if (attn_capture(&m, rc.gpt, rc.tok, ids, (int)n, &err)) {
        code = cli_error(CMD, "%s", err.msg);
        goto done;
    }
    if (json) {
        attn_print_json(stdout, &m);
    } else {
        printf("%s: %d layers x %d heads, %zu tokens; query %d \"%s\"\n\n", rc.model_path,
               c->n_layer, c->n_head, n, q, m.labels[q]);
        attn_print_bars(stdout, &m, (int)layer, (int)head, q);
    }
    attn_svg_opts so = {rc.model_path, log_scale, (int)layer, (int)head};
    code = attn_finish(CMD, &m, svg, &so);
done:
    attn_map_free(&m);
    free(ids);
    run_close(&rc);
    return code;
}
