/* cmd_eval.c — `tinygpt eval`: how well a model predicts a text. The text is
 * tokenized whole and read through windows of at most N tokens (N = --ctx,
 * default the model's context); in each window the tokens in [s0, e) are
 * scored by the negative log-likelihood of the token given the ones before
 * it in the window. Three ways to place the windows:
 *   default       consecutive, non-overlapping windows [kN, kN+N) (the last
 *                 may be shorter; under 2 tokens it is skipped); s0 = b + 1:
 *                 every token but each window's first, with 0..N-1 tokens
 *                 of context (mean about N/2)
 *   --stride S    windows [kS, kS+N) until one reaches the end; each scores
 *                 the tokens the one before did not (s0 = max(previous e,
 *                 b + 1)): every token but the first, exactly once, with at
 *                 least N-S tokens of context once past the first window
 *                 (Hugging Face's perplexity recipe; S = N is the default
 *                 scheme, S = 1 gives every token N-1 tokens of context)
 *   --first-half  the full non-overlapping windows only (a short tail is
 *                 dropped), scoring their second half, s0 = b + N/2 + 1:
 *                 what llama.cpp's llama-perplexity scores */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/gpt.h"
#include "model/tokenizer.h"
#include "tools/cli.h"
#include "tools/run.h"
#include "tools/task_cli.h"

static const char *const CMD = "eval";

/* Logits are produced for this many tokens at a time (a chunked prefill
 * through the KV cache), so memory stays [CHUNK, V] for any window. */
enum { CHUNK = 128 };

static void help(FILE *f) {
    fprintf(f,
            "usage: tinygpt eval [-m MODEL] -f TEXT [--ctx N] [--stride S | --first-half]\n"
            "                    [--json] [-t THREADS] [--isa ISA]\n"
            "  -m, --model MODEL   GGUF, HF GPT-2/Llama folder or llama2.c .bin (default:\n"
            "                      the shipped model, or $TINYGPT_MODEL)\n"
            "  -f, --file TEXT     the text to score ('-': standard input)\n"
            "  --max-input B       read at most B bytes of TEXT, [1, 2^40]; K/M/G suffixes\n"
            "                      (default 64M)\n"
            "  --ctx N             window length in tokens, [2, the model's context]\n"
            "                      (default: the context)\n"
            "  --stride S          sliding windows of N tokens advancing by S, [1, N]; each\n"
            "                      scores only the tokens not scored before, so every token\n"
            "                      has at least N-S tokens of context (Hugging Face's recipe;\n"
            "                      default: off, non-overlapping windows)\n"
            "  --first-half        non-overlapping full windows, scoring only the second half\n"
            "                      of each (every scored token has N/2 to N-1 tokens of\n"
            "                      context), as llama.cpp's llama-perplexity does\n"
            "                      (default: off)\n"
            "  --json              print {tokens, nats_per_token, perplexity, nats_per_byte,\n"
            "                      bits_per_byte, bytes, window, scheme, stride, windows}\n"
            "  -t, --threads N     worker threads, [1, 1024] (default 1)\n"
            "  --isa ISA           scalar|avx2|avx512|neon (default: $TINYGPT_ISA or the best\n"
            "                      this CPU supports)\n"
            "  --no-check          do not scan the weights for NaN/inf at load (huge files; a\n"
            "                      non-finite logit still stops the run)\n"
            "  --tokenizer PATH    use this vocabulary instead of the model's: llama2.c\n"
            "                      tokenizer.bin, GGUF, tokenizer.json or HF folder\n"
            "  --kv-type TYPE      KV cache elements: f32 or f16 (half the bytes)\n"
            "                      (default f32)\n"
            "  --task NAME         score the answers of a synthetic task instead\n"
            "                      (tinygpt task --help lists them), with options of its\n"
            "                      own: eval --task NAME --help\n"
            "By default the windows do not overlap and each scores every token but its\n"
            "first, so a token has 0 to N-1 tokens of context (N/2 on average) and the\n"
            "perplexity is higher than with --stride or --first-half.\n"
            "A model trained with train --task (and no -f) scores the answers of its task,\n"
            "as with --task.\n");
}

/* -log softmax(logits[V])[target], in double */
static double nll(const float *logits, int V, int target) {
    double mx = -INFINITY;
    for (int i = 0; i < V; i++) mx = logits[i] > mx ? logits[i] : mx;
    double sum = 0.0;
    for (int i = 0; i < V; i++) sum += exp((double)logits[i] - mx);
    return mx + log(sum) - (double)logits[target];
}

/* One window: tokens [b, e) of the text, scoring targets [s0, e). */
typedef struct window {
    size_t b, e, s0;
} window;

/* The i-th window of the scheme (see the top of the file), or 0 when there
 * are no more. stride 0: the default scheme; first_half: llama-perplexity's. */
static int next_window(window *w, size_t n_ids, size_t N, size_t stride, int first_half,
                       size_t prev_e) {
    if (first_half) {
        size_t b = prev_e;
        if (b + N > n_ids) return 0;
        *w = (window){b, b + N, b + N / 2 + 1};
        return 1;
    }
    if (stride == 0) {
        size_t b = prev_e;
        if (b + 2 > n_ids) return 0;
        *w = (window){b, b + N < n_ids ? b + N : n_ids, b + 1};
        return 1;
    }
    /* sliding: windows start at multiples of the stride; the first window
     * whose end passes prev_e is the next one, and the last reaches n_ids */
    if (prev_e >= n_ids || n_ids < 2) return 0;
    size_t b = prev_e == 0 ? 0 : (prev_e - (N < prev_e ? N : prev_e) + stride) / stride * stride;
    size_t e = b + N < n_ids ? b + N : n_ids;
    *w = (window){b, e, prev_e > b + 1 ? prev_e : b + 1};
    return 1;
}

int cmd_eval(int argc, char **argv) {
    int task_rc = task_eval_maybe(argc, argv); /* a task model or --task: tools/task_cli.c */
    if (task_rc >= 0) return task_rc;
    const char *model_path = NULL, *text_path = NULL;
    long ctx = 0, threads = 1, stride = 0;
    int json = 0, first_half = 0;
    run_opts ro = {0};
    const char *task_name = NULL; /* TASK_CLI_OPT: never parsed here */
    const cli_opt opts[] = {
        {CLI_STR("-m", "--model", &model_path)},
        {CLI_STR("-f", "--file", &text_path)},
        {CLI_MAX_INPUT_OPT},
        {CLI_INT("--ctx", NULL, &ctx, 2, 1 << 24)},
        {CLI_INT("--stride", NULL, &stride, 1, 1 << 24)},
        {CLI_FLAG("--first-half", NULL, &first_half, 1)},
        {CLI_INT("-t", "--threads", &threads, 1, 1024)},
        {CLI_STR("--isa", NULL, &ro.isa)},
        {RUN_OPT_NO_CHECK(&ro.no_check)},
        {RUN_OPT_TOKENIZER(&ro.tokenizer)},
        {RUN_OPT_KV_TYPE(&ro.kv_type)},
        {CLI_FLAG("--json", NULL, &json, 1)},
        {TASK_CLI_OPT(&task_name)},
        {0},
    };
    int parsed = cli_parse(CMD, help, opts, argc, argv);
    if (parsed != CLI_RUN) return parsed;
    if (!text_path) return cli_usage(CMD, "-f TEXT is required (the text to score)");
    if (stride && first_half) return cli_usage(CMD, "give --stride or --first-half, not both");
    ro.n_threads = (int)threads;

    tg_err err = {{0}};
    size_t len;
    char *text = cli_read_file(text_path, &len, &err);
    if (!text) return cli_error(CMD, "%s", err.msg);

    run_ctx rc;
    ro.n_ctx = (int)ctx;
    ro.ctx_min = 2;
    int code = run_open(&rc, CMD, model_path, &ro);
    if (code) {
        free(text);
        return code;
    }
    int N = tg_gpt_n_ctx(rc.gpt), V = tg_gpt_config(rc.gpt)->n_vocab;

    int *ids = NULL;
    size_t n_ids = 0;
    float *logits = NULL;
    if (stride > N) {
        code = cli_usage(CMD, "--stride: %ld is outside [1, %d] (the window length)", stride, N);
        goto done;
    }
    /* The text is data: "<|endoftext|>" in it is ordinary text. */
    if (tg_tokenizer_encode(rc.tok, text, len, 0, &ids, &n_ids, &err)) {
        code = cli_error(CMD, "%s: %s", text_path, err.msg);
        goto done;
    }
    if (first_half && n_ids < (size_t)N) {
        code = cli_error(CMD, "%s has %zu tokens; --first-half needs at least one window of %d",
                         text_path, n_ids, N);
        goto done;
    }
    if (!(logits = malloc((size_t)CHUNK * V * sizeof *logits))) {
        code = cli_error(CMD, "out of memory");
        goto done;
    }

    double nats = 0.0, t0 = run_now();
    size_t scored = 0, bytes = 0, n_windows = 0, evaluated = 0;
    window w;
    for (size_t prev_e = 0; next_window(&w, n_ids, (size_t)N, (size_t)stride, first_half, prev_e);
         prev_e = w.e) {
        const int *win = ids + w.b;
        int n = (int)(w.e - w.b), first = (int)(w.s0 - w.b) - 1; /* first input scored */
        /* logits of input t predict token t+1; the last token is no input */
        for (int c0 = 0; c0 < n - 1; c0 += CHUNK) {
            int T = n - 1 - c0 < CHUNK ? n - 1 - c0 : CHUNK;
            if (tg_gpt_forward(rc.gpt, win + c0, T, c0, logits, c0 + T > first, &err)) {
                code = cli_error(CMD, "%s", err.msg);
                goto done;
            }
            for (int t = c0 < first ? first - c0 : 0; t < T; t++) {
                int target = win[c0 + t + 1];
                nats += nll(logits + (size_t)t * V, V, target);
                size_t plen = 0;
                tg_tokenizer_piece(rc.tok, target, &plen);
                bytes += plen;
                scored++;
            }
        }
        n_windows++;
        evaluated += (size_t)n - 1;
    }
    double secs = run_now() - t0;
    if (scored == 0) {
        code = cli_error(CMD, "%s has %zu token%s; at least 2 are needed to score one", text_path,
                         n_ids, n_ids == 1 ? "" : "s");
        goto done;
    }
    const char *scheme = first_half ? "first-half" : stride ? "stride" : "windows";
    double npt = nats / (double)scored, npb = bytes ? nats / (double)bytes : 0.0;
    if (json)
        printf("{\"tokens\": %zu, \"nats_per_token\": %s, \"perplexity\": %s, "
               "\"nats_per_byte\": %s, \"bits_per_byte\": %s, \"bytes\": %zu, "
               "\"window\": %d, \"scheme\": \"%s\", \"stride\": %ld, \"windows\": %zu}\n",
               scored, CLI_JNUM("%.9g", npt), CLI_JNUM("%.9g", exp(npt)), CLI_JNUM("%.9g", npb),
               CLI_JNUM("%.9g", npb / log(2.0)), bytes, N, scheme, stride ? stride : N,
               n_windows);
    else
        printf("tokens %zu  nats/token %.4f  perplexity %.3f  nats/byte %.4f  bits/byte %.4f\n",
               scored, npt, exp(npt), npb, npb / log(2.0));
    if ((code = cli_stdout_check(CMD))) goto done;
    fprintf(stderr, "scored %zu token%s (%zu byte%s) in %zu window%s of %d (%s", scored, scored == 1 ? "" : "s",
            bytes, bytes == 1 ? "" : "s", n_windows, n_windows == 1 ? "" : "s", N, scheme);
    if (stride) fprintf(stderr, " %ld", stride);
    fprintf(stderr, "), %.1f tok/s evaluated\n", secs > 0 ? (double)evaluated / secs : 0.0);
done:
    free(logits);
    free(ids);
    free(text);
    run_close(&rc);
    return code;
}
