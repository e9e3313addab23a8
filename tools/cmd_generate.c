/* cmd_generate.c — `tinygpt generate`: prefill the prompt, then sample and
 * decode token by token, streaming the text to stdout (never splitting a
 * UTF-8 character) and a stats line to stderr. */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "model/gpt.h"
#include "model/sampler.h"
#include "model/tokenizer.h"
#include "tools/cli.h"
#include "tools/run.h"
#include "tools/stream.h"

static const char *const CMD = "generate";

static void help(FILE *f) {
    fprintf(f,
            "usage: tinygpt generate [-m MODEL] [-p PROMPT | -f FILE] [-n N] [options]\n"
            "  -m MODEL              GGUF file or Hugging Face GPT-2 folder (default: the\n"
            "                        shipped model, or $TINYGPT_MODEL)\n"
            "  -p PROMPT | -f FILE   the prompt (default: empty, starts from <|endoftext|>)\n"
            "  -n N                  tokens to generate, [0, 1000000] (default 256)\n"
            "  --temp T              temperature, 0 (greedy) or [1.2e-38, 100] (default 0.8)\n"
            "  --top-k K             keep the K most likely, [0, 1000000]; 0 = off (default 40)\n"
            "  --top-p P             nucleus mass, [0, 1]; 1 = off (default 0.95)\n"
            "  --min-p P             keep p >= P * p_max, [0, 1]; 0 = off (default 0.05)\n"
            "  --repeat-penalty R    penalty on recent tokens, [1, 10]; 1 = off (default 1)\n"
            "  --repeat-window N     how many recent tokens, [0, 1048576] (default 64)\n"
            "  --seed S              RNG seed, [0, 2^64-1] (default: from the clock)\n"
            "  -t THREADS            worker threads, [1, 1024] (default 1)\n"
            "  --isa ISA             scalar|avx2|avx512|neon (default: $TINYGPT_ISA or the best)\n"
            "  --ctx N               context length, [1, the model's] (default: the model's)\n"
            "  --ignore-eos          keep going past <|endoftext|>\n"
            "  --truncate            keep the end of a prompt longer than the context\n"
            "  --no-echo             do not print the prompt before the continuation\n"
            RUN_HELP_NO_CHECK);
}

static volatile sig_atomic_t interrupted;
static void on_sigint(int sig) {
    (void)sig;
    interrupted = 1;
}

/* --seed takes the whole uint64 range, beyond cli_int's long. */
static int parse_seed(const char *cmd, const cli_opt *o, const char *flag, const char *s) {
    if (*s && *s != '-') {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(s, &end, 10);
        if (!*end && !errno) {
            *(uint64_t *)o->dst = (uint64_t)v;
            return 0;
        }
    }
    cli_usage(cmd, "%s: '%s' is not an integer in [0, 18446744073709551615]", flag, s);
    return -1;
}

int cmd_generate(int argc, char **argv) {
    const char *model_path = NULL, *prompt = NULL, *prompt_file = NULL;
    long n_gen = 256, top_k = 40, threads = 1, ctx = 0, window = 64;
    double temp = 0.8, top_p = 0.95, min_p = 0.05, penalty = 1.0;
    uint64_t seed = 0;
    int have_seed = 0, ignore_eos = 0, truncate = 0, echo = 1;
    run_opts ro = {0};
    const cli_opt opts[] = {
        {CLI_STR("-m", NULL, &model_path)},
        {CLI_STR("-p", NULL, &prompt)},
        {CLI_STR("-f", NULL, &prompt_file)},
        {CLI_INT("-n", NULL, &n_gen, 0, 1000000)},
        {CLI_FLOAT("--temp", NULL, &temp, 0, 100)},
        {CLI_INT("--top-k", NULL, &top_k, 0, 1000000)},
        {CLI_FLOAT("--top-p", NULL, &top_p, 0, 1)},
        {CLI_FLOAT("--min-p", NULL, &min_p, 0, 1)},
        {CLI_FLOAT("--repeat-penalty", NULL, &penalty, 1, 10)},
        {CLI_INT("--repeat-window", NULL, &window, 0, 1 << 20)},
        {CLI_CALL("--seed", NULL, parse_seed, &seed), .seen = &have_seed},
        {CLI_INT("-t", NULL, &threads, 1, 1024)},
        {CLI_STR("--isa", NULL, &ro.isa)},
        {CLI_INT("--ctx", NULL, &ctx, 1, 1 << 24)},
        {CLI_FLAG("--ignore-eos", NULL, &ignore_eos, 1)},
        {CLI_FLAG("--truncate", NULL, &truncate, 1)},
        {CLI_FLAG("--no-echo", NULL, &echo, 0)},
        {RUN_OPT_NO_CHECK(&ro.no_check)},
        {0},
    };
    int parsed = cli_parse(CMD, help, opts, argc, argv);
    if (parsed != CLI_RUN) return parsed;
    if (prompt && prompt_file) return cli_usage(CMD, "give the prompt with -p or -f, not both");
    if (temp > 0 && temp < TG_SAMPLER_MIN_TEMP)
        return cli_usage(CMD, "--temp: %g is below the smallest usable temperature %g (1/T "
                              "overflows); use 0 for greedy", temp, (double)TG_SAMPLER_MIN_TEMP);
    if (!have_seed) seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
    ro.n_threads = (int)threads;
    ro.n_ctx = (int)ctx;

    /* The prompt text. */
    tg_err err = {{0}};
    char *file_text = NULL;
    size_t prompt_len = 0;
    if (prompt_file) {
        if (!(file_text = cli_read_file(prompt_file, &prompt_len, &err)))
            return cli_error(CMD, "%s", err.msg);
        prompt = file_text;
    } else if (prompt) {
        prompt_len = strlen(prompt);
    } else {
        prompt = "";
    }

    run_ctx rc;
    int code = run_open(&rc, CMD, model_path, &ro);
    if (code) {
        free(file_text);
        return code;
    }
    int C = tg_gpt_n_ctx(rc.gpt), V = tg_gpt_config(rc.gpt)->n_vocab;
    int eos = rc.eos;

    /* Tokens: the prompt (special tokens spelled out are parsed), or
     * <|endoftext|> alone for an empty prompt. */
    int *ids = NULL;
    size_t n_ids = 0;
    if (tg_tokenizer_encode(rc.tok, prompt, prompt_len, 1, &ids, &n_ids, &err)) {
        code = cli_error(CMD, "%s", err.msg);
        goto done;
    }
    int start_eos = 0;
    if (n_ids == 0) {
        if (eos < 0) {
            code = cli_error(CMD, "empty prompt, and %s has no <|endoftext|> token to start from",
                             rc.model_path);
            goto done;
        }
        free(ids);
        if (!(ids = malloc(sizeof *ids))) {
            code = cli_error(CMD, "out of memory");
            goto done;
        }
        ids[0] = eos;
        n_ids = 1;
        start_eos = 1;
    }
    size_t skip = 0;
    if (n_ids > (size_t)C) {
        if (!truncate) {
            code = cli_error(CMD,
                             "the prompt is %zu tokens, longer than the context of %d tokens "
                             "(shorten it, or pass --truncate to keep its last tokens)",
                             n_ids, C);
            goto done;
        }
        /* Keep the end, leaving room to generate (up to half the context). */
        long room = n_gen < C / 2 ? n_gen : C / 2;
        size_t keep = (size_t)(C - room);
        if (keep < 1) keep = 1;
        skip = n_ids - keep;
        fprintf(stderr, "tinygpt generate: prompt truncated from %zu to its last %zu tokens\n",
                n_ids, keep);
    }
    int n_prompt = (int)(n_ids - skip);
    const int *prompt_ids = ids + skip;

    tg_sampler_params sp = {(float)temp, (int)top_k, (float)top_p, (float)min_p,
                            (float)penalty, (int)window, seed};
    tg_sampler *smp = NULL;
    float *logits = malloc((size_t)V * sizeof *logits);
    if (!logits || tg_sampler_create(&smp, &sp, V, &err)) {
        code = cli_error(CMD, "%s", logits ? err.msg : "out of memory");
        free(logits);
        goto done;
    }
    for (int i = 0; i < n_prompt; i++) tg_sampler_accept(smp, prompt_ids[i]);

    text_stream out;
    stream_init(&out, stdout);
    if (echo && !start_eos) {
        if (skip == 0) {
            stream_put(&out, prompt, prompt_len);
        } else {
            char *text;
            size_t tl;
            if (tg_tokenizer_decode(rc.tok, prompt_ids, (size_t)n_prompt, &text, &tl, &err) == TG_OK) {
                stream_put(&out, text, tl);
                free(text);
            }
        }
    }

    struct sigaction sa = {0}, old_sa;
    sa.sa_handler = on_sigint;
    sigaction(SIGINT, &sa, &old_sa);

    double t0 = run_now();
    tg_status st = tg_gpt_forward(rc.gpt, prompt_ids, n_prompt, 0, logits, 0, &err);
    double t_prefill = run_now() - t0;
    int pos = n_prompt, n_out = 0;
    const char *stop = "length";
    double t1 = run_now();
    while (st == TG_OK && n_out < n_gen) {
        if (interrupted) {
            stop = "interrupted";
            break;
        }
        int tok = tg_sampler_sample(smp, logits);
        if (tok < 0) {
            st = tg_fail(&err, TG_ERR_NUMERIC, "no logit is a number above -inf: nothing to sample");
            break;
        }
        if (tok == eos && !ignore_eos) {
            stop = "end of text";
            break;
        }
        tg_sampler_accept(smp, tok);
        size_t plen;
        const char *piece = tg_tokenizer_piece(rc.tok, tok, &plen);
        if (piece) stream_put(&out, piece, plen);
        n_out++;
        if (n_out == n_gen) break;
        if (pos >= C) {
            stop = "context full";
            fprintf(stderr, "\ntinygpt generate: the context is full (%d tokens); stopping\n", C);
            break;
        }
        st = tg_gpt_forward(rc.gpt, &tok, 1, pos++, logits, 0, &err);
    }
    double t_decode = run_now() - t1;
    sigaction(SIGINT, &old_sa, NULL);
    stream_finish(&out); /* a character the model left unfinished: its bytes */
    fputc('\n', stdout);
    fflush(stdout);

    if (st != TG_OK) {
        code = cli_error(CMD, "%s", err.msg);
    } else if (ferror(stdout)) {
        code = cli_error(CMD, "writing the output failed");
    } else {
        fprintf(stderr,
                "prompt: %d tokens, %.1f tok/s | generated: %d tokens, %.1f tok/s | stop: %s | "
                "seed %llu | %d thread%s, %s\n",
                n_prompt, t_prefill > 0 ? n_prompt / t_prefill : 0.0, n_out,
                t_decode > 0 ? n_out / t_decode : 0.0, stop, (unsigned long long)seed,
                (int)threads, threads == 1 ? "" : "s", tg_isa_name(tg_gpt_engine(rc.gpt)->isa));
        code = interrupted ? EXIT_RUNTIME : EXIT_OK;
    }
    tg_sampler_free(smp);
    free(logits);
done:
    free(ids);
    free(file_text);
    run_close(&rc);
    return code;
}
