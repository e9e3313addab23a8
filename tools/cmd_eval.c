/* cmd_eval.c — `tinygpt eval`: how well a model predicts a text. The text is
 * tokenized whole and cut into consecutive, non-overlapping windows of N
 * tokens (the last may be shorter; windows under 2 tokens are skipped);
 * positions 1..n-1 of each window are scored by the negative log-likelihood
 * of the token given the ones before it in the window. */
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
            "usage: tinygpt eval [-m MODEL] -f TEXT [--ctx N] [--json] [-t THREADS] [--isa ISA]\n"
            "  -m MODEL      GGUF file or Hugging Face GPT-2 folder (default: the shipped model)\n"
            "  -f TEXT       the text to score\n"
            "  --ctx N       window length in tokens, [2, the model's context] (default: the context)\n"
            "  --json        print {tokens, nats_per_token, perplexity, nats_per_byte, bits_per_byte}\n"
            "  -t THREADS    worker threads, [1, 1024] (default 1)\n"
            "  --isa ISA     scalar|avx2|avx512|neon\n"
            "  --task NAME   score answers of a synthetic task instead (eval --task NAME --help)\n");
}

/* -log softmax(logits[V])[target], in double */
static double nll(const float *logits, int V, int target) {
    double mx = -INFINITY;
    for (int i = 0; i < V; i++) mx = logits[i] > mx ? logits[i] : mx;
    double sum = 0.0;
    for (int i = 0; i < V; i++) sum += exp((double)logits[i] - mx);
    return mx + log(sum) - (double)logits[target];
}

int cmd_eval(int argc, char **argv) {
    int task_rc = task_eval_maybe(argc, argv); /* a task model or --task: tools/task_cli.c */
    if (task_rc >= 0) return task_rc;
    const char *model_path = NULL, *text_path = NULL;
    long ctx = 0, threads = 1;
    int json = 0;
    run_opts ro = {0};
    const cli_opt opts[] = {
        {CLI_STR("-m", NULL, &model_path)},
        {CLI_STR("-f", NULL, &text_path)},
        {CLI_INT("--ctx", NULL, &ctx, 2, 1 << 24)},
        {CLI_INT("-t", NULL, &threads, 1, 1024)},
        {CLI_STR("--isa", NULL, &ro.isa)},
        {CLI_FLAG("--json", NULL, &json, 1)},
        {0},
    };
    int parsed = cli_parse(CMD, help, opts, argc, argv);
    if (parsed != CLI_RUN) return parsed;
    if (!text_path) return cli_usage(CMD, "-f TEXT is required (the text to score)");
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
    /* The text is data: "<|endoftext|>" in it is ordinary text. */
    if (tg_tokenizer_encode(rc.tok, text, len, 0, &ids, &n_ids, &err)) {
        code = cli_error(CMD, "%s: %s", text_path, err.msg);
        goto done;
    }
    if (!(logits = malloc((size_t)CHUNK * V * sizeof *logits))) {
        code = cli_error(CMD, "out of memory");
        goto done;
    }

    double nats = 0.0, t0 = run_now();
    size_t scored = 0, bytes = 0;
    for (size_t w0 = 0; w0 < n_ids; w0 += (size_t)N) {
        int n = n_ids - w0 < (size_t)N ? (int)(n_ids - w0) : N;
        if (n < 2) break;
        const int *win = ids + w0;
        /* logits of position t predict token t+1; the last is not needed */
        for (int c0 = 0; c0 < n - 1; c0 += CHUNK) {
            int T = n - 1 - c0 < CHUNK ? n - 1 - c0 : CHUNK;
            if (tg_gpt_forward(rc.gpt, win + c0, T, c0, logits, 1, &err)) {
                code = cli_error(CMD, "%s", err.msg);
                goto done;
            }
            for (int t = 0; t < T; t++) {
                int target = win[c0 + t + 1];
                nats += nll(logits + (size_t)t * V, V, target);
                size_t plen = 0;
                tg_tokenizer_piece(rc.tok, target, &plen);
                bytes += plen;
            }
            scored += (size_t)T;
        }
    }
    double secs = run_now() - t0;
    if (scored == 0) {
        code = cli_error(CMD, "%s has %zu token%s; at least 2 are needed to score one", text_path,
                         n_ids, n_ids == 1 ? "" : "s");
        goto done;
    }
    double npt = nats / (double)scored, npb = bytes ? nats / (double)bytes : 0.0;
    if (json)
        printf("{\"tokens\": %zu, \"nats_per_token\": %.9g, \"perplexity\": %.9g, "
               "\"nats_per_byte\": %.9g, \"bits_per_byte\": %.9g, \"bytes\": %zu, "
               "\"window\": %d}\n",
               scored, npt, exp(npt), npb, npb / log(2.0), bytes, N);
    else
        printf("tokens %zu  nats/token %.4f  perplexity %.3f  nats/byte %.4f  bits/byte %.4f\n",
               scored, npt, exp(npt), npb, npb / log(2.0));
    fprintf(stderr, "scored %zu tokens (%zu bytes) in windows of %d, %.1f tok/s\n", scored, bytes,
            N, secs > 0 ? scored / secs : 0.0);
    fflush(stdout);
    if (ferror(stdout)) code = cli_error(CMD, "writing the output failed");
done:
    free(logits);
    free(ids);
    free(text);
    run_close(&rc);
    return code;
}
