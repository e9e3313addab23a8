/* cmd_compare.c — `tinygpt compare A B`: two checkpoints side by side,
 * typically one single-head and one multi-head model of the same size.
 *
 *   1. configuration          layers, heads, kv heads, head size, width, context, KV bytes, ...
 *   2. quality on a text      nats/token, perplexity, nats/byte, loss by
 *                             position in the window, in-context score
 *   3. speed                  prefill and decode tok/s at the same context,
 *                             attention's share of the step
 *   4. heads                  per layer × head: entropy, confidence, sink,
 *                             previous-token, induction, ablation Δloss, class
 *   5. one head per layer     loss keeping only the best head of a layer,
 *                             next to keeping a random one
 *   6. agreement              top-1 agreement and KL(A‖B) on the text
 *
 * The numbers come from the library (model/analysis.h: quality, heads,
 * agreement; model/measure.h: speed); this file parses, calls and prints.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/analysis.h"
#include "model/measure.h"
#include "tools/attnviz.h"
#include "tools/cli.h"
#include "tools/run.h"
#include "tools/task_cli.h"

static const char *const CMD = "compare";
static const char *const DEFAULT_PROMPT = "The researcher who wrote the paper said it was wrong.";

enum { SPEED_REPS = 3 };

/* What every row and column of the text output means: in --help and under it. */
static const char legend[] =
    "rows and columns:\n"
    "  2. tokens scored: the text's tokens predicted, in non-overlapping windows of N\n"
    "     (tinygpt eval's default scheme); nats/token: mean negative log-likelihood;\n"
    "     perplexity: e^(nats/token); nats/byte: the same nats over the text's bytes;\n"
    "     loss @ pos a-b: nats/token of the positions a..b of the windows;\n"
    "     in-context score: the last bucket's loss minus the first's\n"
    "     (negative = the context helps)\n"
    "  3. prefill / decode tok/s: N tokens prefilled, N steps decoded (median of 3);\n"
    "     attention, prefill / decode: attention's share of the phase (profiled)\n"
    "  4. per layer and head, over the first --head-tokens tokens: entropy = the\n"
    "     normalised entropy of its weights (0 = one position, 1 = uniform); conf =\n"
    "     the mean largest weight; sink = the mean weight on position 0; prev = on\n"
    "     the previous token; induct = on the token after the earlier copy of the\n"
    "     current one, on repeated random sequences; Δloss = nats/token lost when the\n"
    "     head is zeroed; class = induction (induct >= 0.3), previous-token\n"
    "     (prev >= 0.5), sink (sink >= 0.5), local (>= 0.6 on the last 4 positions),\n"
    "     broad (entropy >= 0.6), else mixed\n"
    "  5. all heads: the model's loss; best head / random head: the loss keeping only\n"
    "     the layer's best head / the mean over keeping each one; best is: its index\n"
    "  6. top-1 agreement: the fraction of positions where A and B predict the same\n"
    "     token; mean KL(A||B): in nats, over the same positions\n";

static void help(FILE *f) {
    fprintf(f,
            "usage: tinygpt compare A B -f TEXT [-p PROMPT] [--ctx N] [--svg DIR] [--json]\n"
            "                        [--head-tokens N] [--seed S] [--no-agreement]\n"
            "                        [-t THREADS] [--isa ISA]\n"
            "  A, B                two models (GGUF, HF GPT-2/Llama folders, llama2.c .bin)\n"
            "  -f, --file TEXT     the text both are scored on (e.g. held-out data; '-':\n"
            "                      standard input)\n"
            "  --max-input B       read at most B bytes of TEXT, [1, 2^40]; K/M/G suffixes\n"
            "                      (default 64M)\n"
            "  -p, --prompt PROMPT\n"
            "                      the prompt of the attention maps (with --svg; default:\n"
            "                      \"%s\")\n"
            "  --ctx N             window length in tokens, [2, the smaller context]\n"
            "                      (default: the smaller context)\n"
            "  --svg DIR           write DIR/A.svg and DIR/B.svg: attention heatmaps of the\n"
            "                      prompt (default: none)\n"
            "  --json              print everything as one JSON object\n"
            "  --head-tokens N     tokens of the text used for the per-head metrics and\n"
            "                      ablations, [2, 10^7] (default 2048)\n"
            "  --seed S            seed of the random induction sequences, [0, 2^31-1]\n"
            "                      (default 1)\n"
            "  --no-agreement      skip part 6 (needed when the vocabularies differ)\n"
            "  -t, --threads N     worker threads, [1, 1024] (default 1)\n"
            "  --isa ISA           scalar|avx2|avx512|neon (default: $TINYGPT_ISA or the best\n"
            "                      this CPU supports)\n"
            "  --no-check          do not scan the weights for NaN/inf at load (huge files; a\n"
            "                      non-finite logit still stops the run)\n"
            "  --kv-type TYPE      KV cache elements: f32 or f16 (half the bytes)\n"
            "                      (default f32)\n"
            "Two models trained with train --task get the task comparison instead\n"
            "(-n N, --seed S).\n"
            "\n%s",
            DEFAULT_PROMPT, legend);
}

/* ---- one model --------------------------------------------------------------- */

typedef struct side {
    const char *path;
    char name[8];            /* "A" or "B" */
    run_ctx rc;
    const tg_gpt2_config *cfg;
    size_t n_params;
    int *ids;                /* the text, tokenized by this model */
    size_t n_ids;
    tg_text_quality q;       /* part 2 */
    tg_speed sp;             /* part 3 */
    tg_head_analysis ha;     /* parts 4 and 5 */
} side;

/* ---- both models -------------------------------------------------------------- */

/* Same vocabulary: the same token strings in the same order. */
static int same_vocab(const tg_vocab *a, const tg_vocab *b) {
    if (a->n_tokens != b->n_tokens) return 0;
    for (int i = 0; i < a->n_tokens; i++)
        if (strcmp(a->tokens[i], b->tokens[i])) return 0;
    return 1;
}

/* ---- output -------------------------------------------------------------------- */

static void print_text(side *sd[2], int N, int do_agree, const tg_agreement *ag,
                       size_t head_tokens) {
    printf("== 1. configuration\n%-22s %14s %14s\n", "", "A", "B");
    const char *rows[] = {"layers", "heads", "kv heads", "head size", "width", "context", "vocab",
                          "parameters", "KV bytes/token", "KV bytes/context"};
    for (int r = 0; r < 10; r++) {
        printf("%-22s", rows[r]);
        for (int i = 0; i < 2; i++) {
            const tg_gpt2_config *c = sd[i]->cfg;
            long kvt = (long)tg_gpt_kv_bytes_per_token(sd[i]->rc.gpt);
            long v[] = {c->n_layer, c->n_head, tg_config_n_kv_head(c), tg_config_head_dim(c),
                        c->n_embd, c->n_ctx, c->n_vocab, (long)sd[i]->n_params, kvt,
                        kvt * c->n_ctx};
            printf(" %14ld", v[r]);
        }
        printf("\n");
    }
    printf("A = %s\nB = %s\n", sd[0]->path, sd[1]->path);
    if (sd[0]->cfg->n_embd != sd[1]->cfg->n_embd || sd[0]->n_params != sd[1]->n_params)
        printf("warning: width or parameter count differ: the comparison is confounded\n");

    printf("\n== 2. quality on the text (windows of %d tokens)\n%-22s %14s %14s\n", N, "", "A", "B");
    printf("%-22s %14zu %14zu\n", "tokens scored", sd[0]->q.tokens, sd[1]->q.tokens);
    printf("%-22s %14.4f %14.4f\n", "nats/token", sd[0]->q.nats_per_token, sd[1]->q.nats_per_token);
    printf("%-22s %14.3f %14.3f\n", "perplexity", sd[0]->q.perplexity, sd[1]->q.perplexity);
    printf("%-22s %14.4f %14.4f\n", "nats/byte", sd[0]->q.nats_per_byte, sd[1]->q.nats_per_byte);
    for (int k = 0; k < TG_LOSS_BUCKETS; k++) {
        char label[48];
        const tg_loss_bucket *bk = &sd[0]->q.by_position[k];
        snprintf(label, sizeof label, "loss @ pos %d-%d", bk->from, bk->to);
        printf("%-22s", label);
        for (int i = 0; i < 2; i++) printf(" %14.4f", sd[i]->q.by_position[k].nats_per_token);
        printf("\n");
    }
    printf("%-22s", "in-context score");
    for (int i = 0; i < 2; i++) printf(" %14.4f", sd[i]->q.in_context_score);
    printf("\n  (late-window loss minus early-window loss: negative = the context helps)\n");

    printf("\n== 3. speed at context %d\n%-22s %14s %14s\n", N, "", "A", "B");
    printf("%-22s %14.0f %14.0f\n", "prefill tok/s", sd[0]->sp.prefill_tok_s, sd[1]->sp.prefill_tok_s);
    printf("%-22s %14.0f %14.0f\n", "decode tok/s", sd[0]->sp.decode_tok_s, sd[1]->sp.decode_tok_s);
    printf("%-22s %13.1f%% %13.1f%%\n", "attention, prefill", 100 * sd[0]->sp.prefill_attn_share,
           100 * sd[1]->sp.prefill_attn_share);
    printf("%-22s %13.1f%% %13.1f%%\n", "attention, decode", 100 * sd[0]->sp.decode_attn_share,
           100 * sd[1]->sp.decode_attn_share);

    printf("\n== 4. heads (metrics on the first %zu tokens; induction on repeated random tokens)\n",
           head_tokens);
    for (int i = 0; i < 2; i++) {
        side *s = sd[i];
        printf("%s: baseline loss %.4f\n", s->name, s->ha.baseline_loss);
        printf("  %5s %4s %3s %8s %8s %8s %8s %8s %8s  %s\n", "layer", "head", "kv", "entropy",
               "conf", "sink", "prev", "induct", "Δloss", "class");
        for (int l = 0; l < s->cfg->n_layer; l++)
            for (int h = 0; h < s->cfg->n_head; h++) {
                const tg_head_result *r = &s->ha.heads[l * s->cfg->n_head + h];
                const tg_head_stats *hs = &r->stats;
                printf("  %5d %4d %3d %8.3f %8.3f %8.3f %8.3f %8.3f %+8.4f  %s\n", l, h, r->kv_head,
                       hs->entropy,
                       hs->confidence, hs->sink, hs->prev, hs->induction, r->ablation_delta,
                       r->cls);
            }
    }

    printf("\n== 5. one head per layer (loss on the same tokens)\n");
    for (int i = 0; i < 2; i++) {
        side *s = sd[i];
        int H = s->cfg->n_head;
        if (H == 1) {
            printf("%s: single-head model, nothing to choose\n", s->name);
            continue;
        }
        printf("%s: %5s %12s %12s %12s %10s\n", s->name, "layer", "all heads", "best head",
               "random head", "best is");
        for (int l = 0; l < s->ha.n_layers; l++) {
            const tg_layer_result *r = &s->ha.layers[l];
            printf("   %5d %12.4f %12.4f %12.4f %10d\n", l, r->all_heads_loss, r->best_head_loss,
                   r->random_head_loss, r->best_head);
        }
    }
    printf("  (random head: the mean over the layer's heads, the expected loss of a random pick)\n");

    printf("\n== 6. agreement on the text\n");
    if (!do_agree)
        printf("skipped (--no-agreement)\n");
    else
        printf("top-1 agreement %.4f   mean KL(A||B) %.5f nats   over %zu positions\n",
               ag->top1, ag->kl, ag->positions);
    printf("\n%s", legend);
}

/* JSON numbers: NaN (an empty bucket) becomes null. */
static void jnum(const char *key, double v, int comma) {
    if (isfinite(v)) printf("\"%s\": %.9g%s", key, v, comma ? ", " : "");
    else printf("\"%s\": null%s", key, comma ? ", " : "");
}

static void json_str(const char *s) {
    putchar('"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') printf("\\%c", *s);
        else if ((unsigned char)*s < 0x20) printf("\\u%04x", *s);
        else putchar(*s);
    }
    putchar('"');
}

static void print_json(side *sd[2], int N, int do_agree, const tg_agreement *ag,
                       size_t head_tokens) {
    printf("{\"window\": %d, \"head_tokens\": %zu, \"models\": [", N, head_tokens);
    for (int i = 0; i < 2; i++) {
        side *s = sd[i];
        const tg_gpt2_config *c = s->cfg;
        int H = c->n_head;
        printf("%s{\"name\": \"%s\", \"path\": ", i ? ", " : "", s->name);
        json_str(s->path);
        size_t kvt = tg_gpt_kv_bytes_per_token(s->rc.gpt);
        printf(", \"n_layer\": %d, \"n_head\": %d, \"head_size\": %d, \"n_embd\": %d, "
               "\"n_ctx\": %d, \"n_vocab\": %d, \"n_params\": %zu, \"n_kv_head\": %d, "
               "\"kv_bytes_per_token\": %zu, \"kv_bytes_per_context\": %zu, ",
               c->n_layer, H, tg_config_head_dim(c), c->n_embd, c->n_ctx, c->n_vocab, s->n_params,
               tg_config_n_kv_head(c), kvt, kvt * (size_t)c->n_ctx);
        printf("\"quality\": {\"tokens\": %zu, \"bytes\": %zu, ", s->q.tokens, s->q.bytes);
        jnum("nats_per_token", s->q.nats_per_token, 1);
        jnum("perplexity", s->q.perplexity, 1);
        jnum("nats_per_byte", s->q.nats_per_byte, 1);
        printf("\"by_position\": [");
        for (int k = 0; k < TG_LOSS_BUCKETS; k++) {
            const tg_loss_bucket *bk = &s->q.by_position[k];
            printf("%s{\"from\": %d, \"to\": %d, \"tokens\": %zu, ", k ? ", " : "", bk->from,
                   bk->to, bk->tokens);
            jnum("nats_per_token", bk->nats_per_token, 0);
            printf("}");
        }
        printf("], ");
        jnum("in_context_score", s->q.in_context_score, 0);
        printf("}, \"speed\": {");
        jnum("prefill_tok_s", s->sp.prefill_tok_s, 1);
        jnum("decode_tok_s", s->sp.decode_tok_s, 1);
        jnum("prefill_attention_share", s->sp.prefill_attn_share, 1);
        jnum("decode_attention_share", s->sp.decode_attn_share, 0);
        printf("}, ");
        jnum("baseline_loss", s->ha.baseline_loss, 1);
        printf("\"heads\": [");
        for (int l = 0; l < c->n_layer; l++)
            for (int h = 0; h < H; h++) {
                const tg_head_result *r = &s->ha.heads[l * H + h];
                const tg_head_stats *hs = &r->stats;
                printf("%s{\"layer\": %d, \"head\": %d, \"kv_head\": %d, ", l || h ? ", " : "", l, h,
                       r->kv_head);
                jnum("entropy", hs->entropy, 1);
                jnum("confidence", hs->confidence, 1);
                jnum("sink", hs->sink, 1);
                jnum("prev", hs->prev, 1);
                jnum("local", hs->local, 1);
                jnum("induction", hs->induction, 1);
                jnum("ablation_loss", r->ablation_loss, 1);
                jnum("ablation_delta", r->ablation_delta, 1);
                if (H > 1) jnum("only_head_loss", r->only_loss, 1);
                printf("\"class\": \"%s\"}", r->cls);
            }
        printf("], \"layers\": [");
        for (int l = 0; l < s->ha.n_layers; l++) {
            const tg_layer_result *r = &s->ha.layers[l];
            printf("%s{\"layer\": %d, \"best_head\": %d, ", l ? ", " : "", l, r->best_head);
            jnum("best_head_loss", r->best_head_loss, 1);
            jnum("random_head_loss", r->random_head_loss, 0);
            printf("}");
        }
        printf("]}");
    }
    printf("], \"agreement\": ");
    if (!do_agree) {
        printf("null}\n");
        return;
    }
    printf("{\"positions\": %zu, ", ag->positions);
    jnum("top1", ag->top1, 1);
    jnum("kl", ag->kl, 0);
    printf("}}\n");
}

/* ---- the command --------------------------------------------------------------- */

static void side_free(side *s) {
    free(s->ids);
    tg_head_analysis_free(&s->ha);
    run_close(&s->rc);
}

static int write_maps(side *s, const char *dir, const char *prompt, tg_err *err) {
    int *ids = NULL;
    size_t n = 0;
    attn_map m = {0};
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.svg", dir, s->name);
    tg_status st = tg_tokenizer_encode(s->rc.tok, prompt, strlen(prompt), 1, &ids, &n, err);
    if (!st && (n == 0 || n > (size_t)tg_gpt_n_ctx(s->rc.gpt)))
        st = tg_fail(err, TG_ERR_RANGE, "compare: the prompt has %zu tokens (need 1..%d)", n,
                     tg_gpt_n_ctx(s->rc.gpt));
    if (!st) st = attn_capture(&m, s->rc.gpt, s->rc.tok, ids, (int)n, err);
    attn_svg_opts so = {.title = s->path, .layer = -1, .head = -1};
    if (!st) st = attn_write_svg(&m, path, &so, err);
    if (!st) fprintf(stderr, "wrote %s\n", path);
    attn_map_free(&m);
    free(ids);
    return st;
}

/* A and B; a lone "-" is no model name. */
static int take_model(const char *cmd, const cli_opt *o, const char *flag, const char *a) {
    (void)flag;
    const char **paths = o->dst;
    if (a[0] == '-') return 1;
    if (*o->n == 2) return cli_usage(cmd, "three models given ('%s'); compare takes two", a), -1;
    paths[(*o->n)++] = a;
    return 0;
}

int cmd_compare(int argc, char **argv) {
    int task_rc = task_compare_maybe(argc, argv); /* two task models: tools/task_heads.c */
    if (task_rc >= 0) return task_rc;
    const char *paths[2] = {NULL, NULL}, *text_path = NULL, *prompt = DEFAULT_PROMPT, *svg = NULL;
    long ctx = 0, threads = 1, head_tokens = 2048, seed = 1;
    int json = 0, do_agree = 1, n_paths = 0;
    run_opts ro = {.no_tokenizer_opt = 1};
    const cli_opt opts[] = {
        {CLI_STR("-f", "--file", &text_path)},
        {CLI_MAX_INPUT_OPT},
        {CLI_STR("-p", "--prompt", &prompt)},
        {CLI_INT("--ctx", NULL, &ctx, 2, 1 << 24)},
        {CLI_STR("--svg", NULL, &svg)},
        {CLI_FLAG("--json", NULL, &json, 1)},
        {CLI_INT("--head-tokens", NULL, &head_tokens, 2, 10000000)},
        {CLI_INT("--seed", NULL, &seed, 0, 0x7fffffffL)},
        {CLI_FLAG("--no-agreement", NULL, &do_agree, 0)},
        {CLI_INT("-t", "--threads", &threads, 1, 1024)},
        {CLI_STR("--isa", NULL, &ro.isa)},
        {RUN_OPT_NO_CHECK(&ro.no_check)},
        {RUN_OPT_KV_TYPE(&ro.kv_type)},
        {CLI_ARGS(take_model, paths), .n = &n_paths},
        {0},
    };
    int parsed = cli_parse(CMD, help, opts, argc, argv);
    if (parsed != CLI_RUN) return parsed;
    if (n_paths != 2) return cli_usage(CMD, "two models are needed (tinygpt compare A B -f TEXT)");
    if (!text_path) return cli_usage(CMD, "-f TEXT is required (the text both models are scored on)");
    if (svg && !*svg) return cli_usage(CMD, "--svg: the folder name is empty");
    for (int i = 0; svg && i < 2; i++) { /* the names write_maps derives */
        char p[4096];
        snprintf(p, sizeof p, "%s/%c.svg", svg, 'A' + i);
        if ((parsed = cli_out_check(CMD, "--svg", p))) return parsed;
    }
    ro.n_threads = (int)threads;

    tg_err err = {{0}};
    size_t len = 0;
    char *text = cli_read_file(text_path, &len, &err);
    if (!text) return cli_error(CMD, "%s", err.msg);

    side S[2];
    side *sd[2] = {&S[0], &S[1]};
    memset(S, 0, sizeof S);
    int code = EXIT_OK;
    for (int i = 0; i < 2; i++) {
        S[i].path = paths[i];
        snprintf(S[i].name, sizeof S[i].name, "%c", 'A' + i);
    }
    for (int i = 0; i < 2; i++)
        if ((code = run_open(&S[i].rc, CMD, paths[i], &ro))) goto done;
    int N = tg_gpt_n_ctx(S[0].rc.gpt) < tg_gpt_n_ctx(S[1].rc.gpt) ? tg_gpt_n_ctx(S[0].rc.gpt)
                                                                   : tg_gpt_n_ctx(S[1].rc.gpt);
    if (ctx > N) {
        code = cli_usage(CMD, "--ctx: %ld is larger than the smaller context, %d", ctx, N);
        goto done;
    }
    if (ctx) N = (int)ctx;
    if (do_agree && !same_vocab(&S[0].rc.model.vocab, &S[1].rc.model.vocab)) {
        code = cli_error(CMD,
                         "%s and %s have different vocabularies: agreement (top-1, KL) needs "
                         "the same tokens; pass --no-agreement to compare the rest",
                         paths[0], paths[1]);
        goto done;
    }
    for (int i = 0; i < 2; i++) {
        side *s = &S[i];
        s->cfg = tg_gpt_config(s->rc.gpt);
        s->n_params = tg_model_n_params(&s->rc.model);
        if (tg_tokenizer_encode(s->rc.tok, text, len, 0, &s->ids, &s->n_ids, &err)) {
            code = cli_error(CMD, "%s: %s", text_path, err.msg);
            goto done;
        }
        if (s->n_ids < 2) {
            code = cli_error(CMD, "%s is %zu token%s long for %s; at least 2 are needed", text_path,
                             s->n_ids, s->n_ids == 1 ? "" : "s", s->path);
            goto done;
        }
    }
    tg_head_opts ho = {.window = N, .head_tokens = (size_t)head_tokens, .seed = (uint64_t)seed};
    for (int i = 0; i < 2; i++) {
        side *s = &S[i];
        if (tg_text_quality_run(s->rc.gpt, s->rc.tok, s->ids, s->n_ids, N, &s->q, &err) ||
            tg_speed_run(s->rc.gpt, s->ids, s->n_ids, N, SPEED_REPS, &s->sp, &err) ||
            tg_head_analyse(s->rc.gpt, s->rc.tok, s->ids, s->n_ids, &ho, &s->ha, &err)) {
            code = cli_error(CMD, "%s: %s", s->path, err.msg);
            goto done;
        }
    }
    tg_agreement ag = {0};
    if (do_agree && tg_agreement_run(S[0].rc.gpt, S[1].rc.gpt, S[0].ids, S[0].n_ids, N, &ag, &err)) {
        code = cli_error(CMD, "%s", err.msg);
        goto done;
    }
    if (json) print_json(sd, N, do_agree, &ag, (size_t)head_tokens);
    else print_text(sd, N, do_agree, &ag, (size_t)head_tokens);
    if ((code = cli_stdout_check(CMD))) goto done;
    for (int i = 0; i < 2 && svg; i++)
        if (write_maps(&S[i], svg, prompt, &err)) {
            code = cli_error(CMD, "%s", err.msg);
            goto done;
        }
done:
    for (int i = 0; i < 2; i++) side_free(&S[i]);
    free(text);
    return code;
}
