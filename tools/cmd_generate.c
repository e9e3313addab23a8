/* cmd_generate.c — `tinygpt generate`: prefill the prompt, then sample and
 * decode token by token, streaming the text to stdout (never splitting a
 * UTF-8 character) and a stats line to stderr. Past the context it keeps
 * going from the last --keep tokens; --stop cuts the text at a string;
 * --json / --jsonl give every token with its log-probability; -s forks N
 * continuations off one prefill; -i is a small REPL. */
#include <errno.h>
#include <math.h>
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

enum { MAX_STOPS = 64, MAX_STOP_LEN = 4096, MAX_TOP_LOGPROBS = 100, MAX_SAMPLES = 1000 };

static void help(FILE *f) {
    fprintf(f,
            "usage: tinygpt generate [-m MODEL] [-p PROMPT | -f FILE | --prompt-ids IDS]\n"
            "                        [-n N] [options]\n"
            "  -m, --model MODEL     GGUF, HF GPT-2/Llama folder or llama2.c .bin (default:\n"
            "                        the shipped model, or $TINYGPT_MODEL)\n"
            "  -p, --prompt PROMPT   the prompt; <|endoftext|> spelled out is that token\n"
            "  -f, --file FILE       the prompt from a file; '-' is standard input (default:\n"
            "                        standard input when it is not a terminal and neither -p\n"
            "                        nor -f is given; else empty: start from <|endoftext|>)\n"
            "  --prompt-ids IDS      the prompt as token ids, '1,2,3'\n"
            "                        (each in [0, vocabulary))\n"
            "  --max-input BYTES     read at most BYTES of FILE, [1, 2^40]; K, M, G = KiB,\n"
            "                        MiB, GiB (default 64M)\n"
            "  -n, --n-predict N     tokens to generate per continuation, [-1, 1000000000];\n"
            "                        -1 = until <|endoftext|> or Ctrl-C (default 256)\n"
            "  --temp, --temperature T  temperature, 0 (greedy) or [1.2e-38, 100]\n"
            "                        (default 0.8)\n"
            "  --top-k K             keep the K most likely, [0, 1000000]; 0 = off\n"
            "                        (default 40)\n"
            "  --top-p P             nucleus mass, [0, 1]; 1 = off (default 0.95)\n"
            "  --min-p P             keep p >= P * p_max, [0, 1]; 0 = off (default 0.05)\n"
            "  --repeat-penalty R    penalty on recent tokens, [1, 10]; 1 = off (default 1)\n"
            "  --repeat-window, --repeat-last-n N  how many recent tokens, [0, 1048576]\n"
            "                        (default 64)\n"
            "  --seed S              RNG seed, [0, 2^64-1] (default: from the clock); sample\n"
            "                        i of -s uses S + i, the text --seed S+i gives alone\n"
            "  -t, --threads N       worker threads, [1, 1024] (default 1)\n"
            "  --isa ISA             scalar|avx2|avx512|neon\n"
            "                        (default: $TINYGPT_ISA or the best this CPU supports)\n"
            "  -c, --ctx N           context length, [1, the model's] (default: the model's)\n"
            "  --keep N              when the context is full, run its last N tokens again as\n"
            "                        a new prompt and go on, [0, context-1]; 0 = stop there\n"
            "                        instead (default: half the context)\n"
            "  --stop STR            stop when the text ends with STR (repeatable, up to %d,\n"
            "                        each 1 to %d bytes); STR itself is not printed\n"
            "  --ignore-eos          keep going past <|endoftext|>\n"
            "  --truncate            keep the end of a prompt longer than the context\n"
            "  --no-echo             do not print the prompt before the continuation\n"
            "  -s, --samples N       N continuations of the same prompt, prefilled once,\n"
            "                        [1, %d] (default 1)\n"
            "  --json                print one JSON document at the end instead of the text:\n"
            "                        every token with its log-probability, and the stats\n"
            "  --jsonl               print a JSON line per token as it comes instead of the\n"
            "                        text\n"
            "  --top-logprobs K      with --json/--jsonl: also the K most likely tokens at\n"
            "                        each step with theirs, [0, %d] (default 0)\n"
            "  -i, --interactive     a REPL: type a line, the model continues the\n"
            "                        conversation (kept in the context as shown: a --stop\n"
            "                        string is not); an empty line continues, a line ending\n"
            "                        in \\ adds no newline; Ctrl-C stops a continuation,\n"
            "                        Ctrl-D exits\n"
            RUN_HELP_NO_CHECK
            RUN_HELP_TOKENIZER
            RUN_HELP_KV_TYPE
            "\n"
            "The stats line on stderr names the stop reason: length (-n tokens), eos\n"
            "(<|endoftext|>, or a Llama model's EOS or BOS), stop (a --stop string),\n"
            "context (full, with --keep 0) or interrupted (Ctrl-C). A log-probability is\n"
            "the model's own: log-softmax of the raw logits, before the repetition\n"
            "penalty, the temperature and any truncation; a token's \"bytes\" are exact,\n"
            "its \"piece\" and every \"text\" are UTF-8 with each invalid byte as U+FFFD.\n",
            MAX_STOPS, MAX_STOP_LEN, MAX_SAMPLES, MAX_TOP_LOGPROBS);
}

/* ---- options ---------------------------------------------------------------- */

typedef struct gen_opts {
    const char *model_path, *prompt, *prompt_file;
    long n_gen, top_k, threads, ctx, window, keep, samples, top_logprobs;
    double temp, top_p, min_p, penalty;
    uint64_t seed;
    int have_seed, have_keep, ignore_eos, truncate, echo, json, jsonl, interactive;
    const char *stops[MAX_STOPS];
    int n_stops;
    int *ids; /* --prompt-ids */
    size_t n_ids;
    int have_ids;
    run_opts ro;
} gen_opts;

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

static int parse_stop(const char *cmd, const cli_opt *o, const char *flag, const char *s) {
    gen_opts *g = o->dst;
    size_t n = strlen(s);
    if (n < 1 || n > MAX_STOP_LEN) {
        cli_usage(cmd, "%s: a stop string is 1 to %d bytes, not %zu", flag, MAX_STOP_LEN, n);
        return -1;
    }
    if (g->n_stops == MAX_STOPS) {
        cli_usage(cmd, "%s: at most %d stop strings", flag, MAX_STOPS);
        return -1;
    }
    g->stops[g->n_stops++] = s;
    return 0;
}

/* "1,2,3": ids, checked against the vocabulary once the model is loaded. */
static int parse_ids(const char *cmd, const cli_opt *o, const char *flag, const char *s) {
    gen_opts *g = o->dst;
    free(g->ids);
    g->ids = NULL;
    g->n_ids = 0;
    g->have_ids = 1;
    size_t cap = 1;
    for (const char *p = s; *p; p++) cap += *p == ',';
    if (!(g->ids = malloc(cap * sizeof *g->ids))) {
        cli_usage(cmd, "%s: out of memory", flag);
        return -1;
    }
    const char *p = s;
    while (*p) {
        char *end;
        errno = 0;
        long v = *p >= '0' && *p <= '9' ? strtol(p, &end, 10) : -1;
        if (v < 0 || errno || v > 1 << 30 || (*end && *end != ',') || (*end == ',' && !end[1])) {
            cli_usage(cmd, "%s: '%s' is not a list of token ids (integers >= 0, comma-separated)",
                      flag, s);
            return -1;
        }
        g->ids[g->n_ids++] = (int)v;
        p = *end ? end + 1 : end;
    }
    return 0;
}

/* ---- JSON ------------------------------------------------------------------- */

/* Length of the valid UTF-8 character at s[n] (1-4), or 0 if it is not one. */
static size_t utf8_char(const unsigned char *s, size_t n) {
    unsigned c = s[0], lo = 0x80, hi = 0xBF;
    size_t need;
    if (c < 0x80) return 1;
    if (c < 0xC2) return 0;
    if (c < 0xE0) need = 2;
    else if (c < 0xF0) need = 3, lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
    else if (c < 0xF5) need = 4, lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
    else return 0;
    if (n < need || s[1] < lo || s[1] > hi) return 0;
    for (size_t i = 2; i < need; i++)
        if ((s[i] & 0xC0) != 0x80) return 0;
    return need;
}

/* A JSON string of p[n]: valid UTF-8 as is, each invalid byte as U+FFFD,
 * control characters (NUL included) escaped. */
static void json_str(FILE *f, const char *p, size_t n) {
    const unsigned char *s = (const unsigned char *)p;
    fputc('"', f);
    for (size_t i = 0; i < n;) {
        size_t k = utf8_char(s + i, n - i);
        if (k == 0) {
            fputs("\\ufffd", f);
            i++;
        } else if (k > 1) {
            fwrite(s + i, 1, k, f);
            i += k;
        } else {
            unsigned c = s[i++];
            if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
            else if (c == '\n') fputs("\\n", f);
            else if (c == '\t') fputs("\\t", f);
            else if (c < 0x20 || c == 0x7F) fprintf(f, "\\u%04x", c);
            else fputc((int)c, f);
        }
    }
    fputc('"', f);
}

static void json_bytes(FILE *f, const char *p, size_t n) {
    fputc('[', f);
    for (size_t i = 0; i < n; i++) fprintf(f, "%s%u", i ? "," : "", (unsigned char)p[i]);
    fputc(']', f);
}

/* A number, or null when it is not finite (JSON has no NaN or Infinity). */
static void json_num(FILE *f, double v) {
    if (isfinite(v)) fprintf(f, "%.9g", v);
    else fputs("null", f);
}

/* ---- the generator ----------------------------------------------------------- */

typedef struct gen {
    const gen_opts *o;
    run_ctx *rc;
    int C, V, eos, keep;
    int bos;                 /* a sampled BOS ends the text too (-1: none) */
    float *logits;           /* [V] next-token logits */
    int *hist;               /* every token of the text so far; the cache holds */
    size_t n_hist, cap_hist; /* the last P of them */
    int said_shift, n_shifts;
    tg_err err;
} gen;

static int text_stdout(const gen_opts *o) { return !o->json && !o->jsonl; }

static tg_status push_hist(gen *g, const int *t, size_t n) {
    if (g->n_hist + n > g->cap_hist) {
        size_t cap = (g->n_hist + n) * 2;
        int *h = realloc(g->hist, cap * sizeof *h);
        if (!h) return tg_fail(&g->err, TG_ERR_NOMEM, "out of memory for the token history");
        g->hist = h;
        g->cap_hist = cap;
    }
    memcpy(g->hist + g->n_hist, t, n * sizeof *t);
    g->n_hist += n;
    return TG_OK;
}

/* Appends t[n] to the text and runs it through the model, so that logits
 * are the next token's. When the cache cannot take them, its content is
 * replaced by the last max(keep, n) tokens of the text (at most C), run as
 * a new prefill from position 0 — the way nanoGPT crops its context. The
 * caller checks keep > 0 first. */
static tg_status feed(gen *g, const int *t, int n) {
    tg_status s = push_hist(g, t, (size_t)n);
    if (s) return s;
    int P = tg_gpt_n_pos(g->rc->gpt);
    if (P + n <= g->C) return tg_gpt_forward(g->rc->gpt, t, n, P, g->logits, 0, &g->err);
    int K = n > g->keep ? n : g->keep;
    if (K > g->C) K = g->C;
    if (!g->said_shift) {
        fflush(stdout); /* the text so far before the note (the stream batches flushes) */
        /* else the caller says the output failed, and only that */
        const char *nl = text_stdout(g->o) && isatty(STDOUT_FILENO) ? "\n" : "";
        if (!ferror(stdout) && K == g->keep)
            fprintf(stderr, "%stinygpt generate: the context of %d tokens is full; each time it "
                            "fills, its last %d tokens run again as a new prompt (--keep)\n", nl, g->C, K);
        else if (!ferror(stdout)) /* a turn longer than --keep: all of it (at most C) goes first */
            fprintf(stderr, "%stinygpt generate: the context of %d tokens is full; its last %d tokens run "
                            "again as a new prompt, and each time it fills again its last %d (--keep)\n",
                    nl, g->C, K, g->keep);
        g->said_shift = 1;
    }
    g->n_shifts++;
    return tg_gpt_forward(g->rc->gpt, g->hist + g->n_hist - K, K, 0, g->logits, 0, &g->err);
}

static volatile sig_atomic_t interrupted;
static void on_sigint(int sig) {
    (void)sig;
    interrupted = 1;
}

/* Where one continuation's text goes: the UTF-8-safe stream on stdout, and
 * (for JSON) a copy of every byte printed. */
typedef struct sink {
    int to_stdout;
    text_stream ts;
    char *text;
    size_t n, cap;
    int oom;
    char last; /* last byte printed */
} sink;

static void sink_emit(void *user, const char *p, size_t n) {
    sink *k = user;
    if (!n) return;
    k->last = p[n - 1];
    if (k->to_stdout) stream_put(&k->ts, p, n);
    if (k->n + n > k->cap) {
        size_t cap = (k->n + n) * 2;
        char *t = realloc(k->text, cap);
        if (!t) {
            k->oom = 1;
            return;
        }
        k->text = t;
        k->cap = cap;
    }
    memcpy(k->text + k->n, p, n);
    k->n += n;
}

/* One continuation's record. */
typedef struct cont {
    int n_out;
    const char *stop;
    double seconds;
    FILE *tokens; /* --json: the token objects, comma-separated */
    char *tokens_buf;
    size_t tokens_len;
    char pend[8]; /* bytes of a character no token has finished yet */
    size_t n_pend;
    int prev;     /* the token before the next one, or -1 (a SentencePiece piece after BOS
                     drops its dummy-prefix space) */
} cont;

typedef struct cand {
    int id;
    float logit;
} cand;

/* The log-probabilities of one step: chosen token, then the top K. */
static void token_json(FILE *f, gen *g, cont *c, int tok) {
    const float *l = g->logits;
    double mx = -INFINITY, sum = 0;
    for (int i = 0; i < g->V; i++) mx = l[i] > mx ? l[i] : mx;
    for (int i = 0; i < g->V; i++) sum += exp((double)l[i] - mx);
    double lse = mx + log(sum);
    size_t plen = 0;
    const char *piece = tg_tokenizer_piece(g->rc->tok, tok, &plen);
    if (!piece) piece = "", plen = 0;
    fprintf(f, "\"id\":%d,\"piece\":", tok);
    json_str(f, piece, plen);
    fputs(",\"bytes\":", f);
    json_bytes(f, piece, plen);
    /* "text": the characters this token completes */
    char buf[64];
    const char *all = buf;
    size_t m = c->n_pend + plen;
    char *heap = NULL;
    if (m > sizeof buf) all = heap = malloc(m);
    if (all) {
        memcpy((char *)all, c->pend, c->n_pend);
        memcpy((char *)all + c->n_pend, piece, plen);
        size_t done = tg_utf8_complete(all, m);
        fputs(",\"text\":", f);
        json_str(f, all, done);
        c->n_pend = m - done; /* <= 3 */
        memcpy(c->pend, all + done, c->n_pend);
    }
    free(heap);
    fputs(",\"logprob\":", f);
    json_num(f, (double)l[tok] - lse);
    int K = (int)g->o->top_logprobs;
    if (K > g->V) K = g->V;
    if (K > 0) {
        cand top[MAX_TOP_LOGPROBS];
        int n = 0;
        for (int i = 0; i < g->V; i++) { /* insertion into the K best, ties to the lower id */
            if (n == K && !(l[i] > top[n - 1].logit)) continue;
            int j = n < K ? n++ : n - 1;
            while (j > 0 && l[i] > top[j - 1].logit) {
                top[j] = top[j - 1];
                j--;
            }
            top[j] = (cand){i, l[i]};
        }
        fputs(",\"top_logprobs\":[", f);
        for (int j = 0; j < n; j++) {
            size_t ql = 0;
            const char *q = tg_tokenizer_piece(g->rc->tok, top[j].id, &ql);
            if (!q) q = "", ql = 0;
            fprintf(f, "%s{\"id\":%d,\"piece\":", j ? "," : "", top[j].id);
            json_str(f, q, ql);
            fputs(",\"bytes\":", f);
            json_bytes(f, q, ql);
            fputs(",\"logprob\":", f);
            json_num(f, (double)top[j].logit - lse);
            fputc('}', f);
        }
        fputc(']', f);
    }
}

/* Samples up to -n tokens from g->logits on: prints them through the stop
 * filter into k, records them in c, and feeds each one back (in the
 * REPL also the last, so the conversation holds every token shown; not one
 * that completed a stop string, see keep_shown). */
static tg_status continue_text(gen *g, tg_sampler *smp, stop_filter *sf, sink *k, cont *c,
                               int sample) {
    const gen_opts *o = g->o;
    tg_status st = TG_OK;
    double t0 = run_now();
    c->stop = "length";
    while (o->n_gen < 0 || c->n_out < o->n_gen) {
        if (interrupted) {
            c->stop = "interrupted";
            break;
        }
        int tok = tg_sampler_sample(smp, g->logits);
        if (tok < 0) {
            st = tg_fail(&g->err, TG_ERR_NUMERIC,
                         "no logit is a number above -inf: nothing to sample");
            break;
        }
        /* BOS starts the next text: llama2.c's TinyStories models end a
         * story with it, and run.c stops there */
        if ((tok == g->eos || tok == g->bos) && !o->ignore_eos) {
            c->stop = "eos";
            break;
        }
        if (o->jsonl) {
            printf("{\"type\":\"token\",\"sample\":%d,\"index\":%d,", sample, c->n_out);
            token_json(stdout, g, c, tok);
            fputs("}\n", stdout);
            fflush(stdout);
        } else if (o->json) {
            fputs(c->n_out ? ",{" : "{", c->tokens);
            token_json(c->tokens, g, c, tok);
            fputc('}', c->tokens);
        }
        tg_sampler_accept(smp, tok);
        c->n_out++;
        size_t plen = 0;
        const char *piece = tg_tokenizer_piece_after(g->rc->tok, c->prev, tok, &plen);
        c->prev = tok;
        int hit = stop_put(sf, piece ? piece : "", piece ? plen : 0);
        if (hit < 0 || k->oom) {
            st = tg_fail(&g->err, TG_ERR_NOMEM, "out of memory");
            break;
        }
        if ((k->to_stdout || o->jsonl) && ferror(stdout)) break; /* the caller says it */
        int last = hit || c->n_out == o->n_gen;
        if (hit) c->stop = "stop";
        if (hit || (last && !o->interactive)) break;
        if (g->keep == 0 && tg_gpt_n_pos(g->rc->gpt) == g->C) {
            if (!last) {
                c->stop = "context";
                fflush(stdout);
                if (!ferror(stdout)) /* else the caller says the output failed */
                    fprintf(stderr, "%stinygpt generate: the context is full (%d tokens); stopping\n",
                            text_stdout(o) ? "\n" : "", g->C);
            }
            break;
        }
        if ((st = feed(g, &tok, 1)) || last) break;
    }
    stop_finish(sf);
    c->seconds = run_now() - t0;
    return st;
}

/* ---- the run ------------------------------------------------------------------- */

static void print_stats(const gen *g, int n_prompt, double t_prefill, const cont *c,
                        uint64_t seed, const char *label) {
    fflush(stdout);
    fprintf(stderr,
            "%sprompt: %d token%s, %.1f tok/s | generated: %d token%s, %.1f tok/s | stop: %s | "
            "seed %llu | %d thread%s, %s\n",
            label, n_prompt, n_prompt == 1 ? "" : "s", t_prefill > 0 ? n_prompt / t_prefill : 0.0,
            c->n_out, c->n_out == 1 ? "" : "s", c->seconds > 0 ? c->n_out / c->seconds : 0.0, c->stop,
            (unsigned long long)seed,
            (int)g->o->threads, g->o->threads == 1 ? "" : "s",
            tg_isa_name(tg_gpt_engine(g->rc->gpt)->isa));
}

static tg_status make_sampler(const gen *g, tg_sampler **out, uint64_t seed, tg_err *err) {
    const gen_opts *o = g->o;
    tg_sampler_params sp = {(float)o->temp, (int)o->top_k, (float)o->top_p, (float)o->min_p,
                            (float)o->penalty, (int)o->window, seed};
    tg_status s = tg_sampler_create(out, &sp, g->V, err);
    if (s) return s;
    for (size_t i = 0; i < g->n_hist; i++) tg_sampler_accept(*out, g->hist[i]);
    return TG_OK;
}

/* Prints the prompt (-s N, --json, --jsonl): the text, or a JSON header. */
static void print_prompt(const gen *g, const char *text, size_t len, const int *ids, int n,
                         int start_eos, FILE *f) {
    fputs("\"prompt\":", f);
    json_str(f, start_eos ? "" : text, start_eos ? 0 : len);
    fputs(",\"prompt_ids\":[", f);
    for (int i = 0; i < n; i++) fprintf(f, "%s%d", i ? "," : "", ids[i]);
    fprintf(f, "],\"prompt_tokens\":%d,\"n_ctx\":%d,\"keep\":%d,\"model\":", n, g->C, g->keep);
    json_str(f, g->rc->model_path, strlen(g->rc->model_path));
}

static void set_sigint(int restart) {
    struct sigaction sa = {0};
    sa.sa_handler = on_sigint;
    sa.sa_flags = restart ? SA_RESTART : 0;
    sigaction(SIGINT, &sa, NULL);
}

/* -s N (N >= 1) continuations of the prompt in the cache, each from a
 * snapshot of it, or one continuation per line in the REPL. */
static int run_samples(gen *g, const char *ptext, size_t plen, const int *pids, int n_prompt,
                       int start_eos, double t_prefill, uint64_t seed) {
    const gen_opts *o = g->o;
    int code = EXIT_OK;
    tg_kv_snapshot *snap = NULL;
    float *logits0 = malloc((size_t)g->V * sizeof *logits0);
    size_t hist0 = g->n_hist;
    if (!logits0 || tg_gpt_snapshot(g->rc->gpt, &snap, &g->err)) {
        free(logits0);
        return cli_error(CMD, "%s", logits0 ? g->err.msg : "out of memory");
    }
    memcpy(logits0, g->logits, (size_t)g->V * sizeof *logits0);
    if (o->json) {
        printf("{");
        print_prompt(g, ptext, plen, pids, n_prompt, start_eos, stdout);
        printf(",\"seed\":%llu,\"prefill_s\":", (unsigned long long)seed);
        json_num(stdout, t_prefill);
        printf(",\"samples\":[");
    } else if (o->jsonl) {
        printf("{\"type\":\"prompt\",");
        print_prompt(g, ptext, plen, pids, n_prompt, start_eos, stdout);
        printf(",\"seed\":%llu}\n", (unsigned long long)seed);
    }
    int total = 0, was_interrupted = 0;
    double seconds = 0;
    for (long i = 0; i < o->samples && code == EXIT_OK && !was_interrupted; i++) {
        uint64_t si = seed + (uint64_t)i;
        if (i > 0) {
            tg_gpt_restore(g->rc->gpt, snap, &g->err); /* same gpt, same shape: cannot fail */
            memcpy(g->logits, logits0, (size_t)g->V * sizeof *logits0);
            g->n_hist = hist0;
        }
        tg_sampler *smp = NULL;
        if (make_sampler(g, &smp, si, &g->err)) {
            code = cli_error(CMD, "%s", g->err.msg);
            break;
        }
        sink k = {.to_stdout = text_stdout(o)};
        stream_init(&k.ts, stdout);
        k.ts.flush_ns = STREAM_FLUSH_NS;
        stop_filter sf;
        cont c = {0};
        c.prev = n_prompt > 0 ? pids[n_prompt - 1] : -1;
        if (o->json) c.tokens = open_memstream(&c.tokens_buf, &c.tokens_len);
        if (stop_init(&sf, o->stops, o->n_stops, sink_emit, &k) || (o->json && !c.tokens)) {
            code = cli_error(CMD, "out of memory");
            tg_sampler_free(smp);
            stop_free(&sf);
            break;
        }
        if (k.to_stdout) {
            if (o->samples > 1)
                printf("%s--- sample %ld of %ld (seed %llu) ---\n", i ? "\n" : "", i + 1,
                       o->samples, (unsigned long long)si);
            if (o->echo && !start_eos) stream_put(&k.ts, ptext, plen);
        }
        tg_status st = continue_text(g, smp, &sf, &k, &c, (int)i);
        if (k.to_stdout) {
            stream_finish(&k.ts); /* a character the model left unfinished: its bytes */
            fputc('\n', stdout);
        }
        if (c.tokens) fclose(c.tokens);
        if (!st && (o->json || o->jsonl)) {
            if (o->json) printf("%s{\"index\":%ld,", i ? "," : "", i);
            else printf("{\"type\":\"done\",\"sample\":%ld,", i);
            printf("\"seed\":%llu,\"text\":", (unsigned long long)si);
            json_str(stdout, k.text ? k.text : "", k.n);
            printf(",\"stop\":\"%s\"", c.stop);
            if (sf.hit >= 0) {
                printf(",\"stop_string\":");
                json_str(stdout, o->stops[sf.hit], strlen(o->stops[sf.hit]));
            }
            printf(",\"n_tokens\":%d,\"decode_s\":", c.n_out);
            json_num(stdout, c.seconds);
            printf(",\"tok_per_s\":");
            json_num(stdout, c.seconds > 0 ? c.n_out / c.seconds : 0.0);
            printf(",\"context_shifts\":%d", g->n_shifts);
            if (o->json) {
                fputs(",\"tokens\":[", stdout);
                if (c.tokens_buf) fwrite(c.tokens_buf, 1, c.tokens_len, stdout);
                fputs("]}", stdout);
            } else {
                printf("}\n");
            }
        }
        fflush(stdout);
        free(c.tokens_buf);
        free(k.text);
        stop_free(&sf);
        tg_sampler_free(smp);
        if (st) {
            code = cli_error(CMD, "%s", g->err.msg);
            break;
        }
        if ((code = cli_stdout_check(CMD))) break; /* no stats after a failed output */
        char label[48] = "";
        if (o->samples > 1) snprintf(label, sizeof label, "sample %ld: ", i + 1);
        print_stats(g, n_prompt, t_prefill, &c, si, label);
        total += c.n_out;
        seconds += c.seconds;
        g->n_shifts = 0;
        was_interrupted = interrupted;
    }
    if (o->json && code == EXIT_OK) {
        printf("],\"stats\":{\"samples\":%ld,\"tokens\":%d,\"decode_s\":", o->samples, total);
        json_num(stdout, seconds);
        printf(",\"tok_per_s\":");
        json_num(stdout, seconds > 0 ? total / seconds : 0.0);
        printf(",\"prefill_tok_per_s\":");
        json_num(stdout, t_prefill > 0 ? n_prompt / t_prefill : 0.0);
        printf(",\"threads\":%ld,\"isa\":\"%s\"}}\n", o->threads,
               tg_isa_name(tg_gpt_engine(g->rc->gpt)->isa));
    }
    tg_kv_snapshot_free(snap);
    free(logits0);
    return code == EXIT_OK && was_interrupted ? EXIT_RUNTIME : code;
}

/* The REPL after a stop string: the conversation goes on from the text
 * shown, shown[n_shown] of the tokens hist[h0..) and one more that completed
 * the stop string (not fed). The tokens printed whole stay; the others (held
 * back as a partial match, then cut) leave the text and the cache, and the
 * shown bytes of the first of them come back encoded; then the logits are
 * those after the kept text again, and the sampler recalls its tokens. */
static tg_status keep_shown(gen *g, tg_sampler *smp, size_t h0, const char *shown,
                            size_t n_shown) {
    size_t n = h0, at = 0; /* tokens kept; bytes of shown they print */
    for (int prev = -1; n < g->n_hist; n++) {
        size_t plen = 0;
        const char *piece = tg_tokenizer_piece_after(g->rc->tok, prev, g->hist[n], &plen);
        if (!piece || at + plen > n_shown) break;
        at += plen;
        prev = g->hist[n];
    }
    int *rest = NULL;
    size_t n_rest = 0;
    tg_status s = tg_tokenizer_encode_ex(g->rc->tok, at < n_shown ? shown + at : "",
                                         n_shown - at, TG_ENCODE_NO_PREFIX, &rest, &n_rest,
                                         &g->err);
    size_t drop = g->n_hist - n;
    int P = tg_gpt_n_pos(g->rc->gpt);
    g->n_hist = n;
    if (s || drop == 0) {
        /* the logits are the kept text's already (or rest's, below) */
    } else if ((size_t)P > drop) { /* the cache holds hist[n-1] */
        s = tg_gpt_truncate(g->rc->gpt, P - (int)drop - (n_rest ? 0 : 1), &g->err);
        if (!s && !n_rest) { /* run hist[n-1] again for its logits */
            int last = g->hist[--g->n_hist];
            s = feed(g, &last, 1);
        }
    } else { /* a context shift fell among the dropped tokens: crop the kept text */
        int K = (int)(n < (size_t)g->keep ? n : (size_t)g->keep);
        if (K < 1) K = (int)(n < (size_t)g->C ? n : (size_t)g->C);
        s = tg_gpt_truncate(g->rc->gpt, 0, &g->err);
        if (!s) s = tg_gpt_forward(g->rc->gpt, g->hist + n - K, K, 0, g->logits, 0, &g->err);
    }
    if (!s && n_rest) s = feed(g, rest, (int)n_rest);
    free(rest);
    if (s) return s;
    tg_sampler_forget(smp);
    size_t w = (size_t)g->o->window, from = g->n_hist > w ? g->n_hist - w : 0;
    for (size_t i = from; i < g->n_hist; i++) tg_sampler_accept(smp, g->hist[i]);
    return TG_OK;
}

/* The REPL: each line typed is added to the conversation and continued. */
static int run_interactive(gen *g, int have_prompt, int n_prompt, double t_prefill,
                           uint64_t seed) {
    const gen_opts *o = g->o;
    tg_sampler *smp = NULL;
    if (make_sampler(g, &smp, seed, &g->err)) return cli_error(CMD, "%s", g->err.msg);
    sink k = {.to_stdout = 1, .last = '\n'};
    stream_init(&k.ts, stdout);
    stop_filter sf;
    if (stop_init(&sf, o->stops, o->n_stops, sink_emit, &k)) {
        tg_sampler_free(smp);
        return cli_error(CMD, "out of memory");
    }
    int code = EXIT_OK, turns = 0;
    cont total = {0};
    char *line = NULL;
    size_t cap = 0;
    fprintf(stderr, "tinygpt generate: interactive; type a line and Enter (an empty line "
                    "continues, a line ending in \\ adds no newline), Ctrl-C stops a "
                    "continuation, Ctrl-D exits\n");
    for (int want = have_prompt;; want = 1) {
        if (want && tg_gpt_n_pos(g->rc->gpt) > 0) { /* logits are there to sample from */
            cont c = {0};
            c.prev = -1;
            stop_reset(&sf);
            k.n = 0;
            size_t h0 = g->n_hist;
            tg_status st = continue_text(g, smp, &sf, &k, &c, turns++);
            if (!st && sf.hit >= 0) st = keep_shown(g, smp, h0, k.text, k.n);
            stream_finish(&k.ts);
            total.n_out += c.n_out;
            total.seconds += c.seconds;
            total.stop = c.stop;
            if (st) {
                code = cli_error(CMD, "%s", g->err.msg);
                break;
            }
            if ((code = cli_stdout_check(CMD))) break;
            interrupted = 0;
        }
    read_again:
        fputs(k.last == '\n' ? "> " : "\n> ", stdout);
        fflush(stdout);
        set_sigint(0); /* Ctrl-C interrupts the read */
        errno = 0;
        ssize_t n = getline(&line, &cap, stdin);
        int eintr = n < 0 && errno == EINTR;
        set_sigint(1);
        if (n < 0 && eintr) { /* Ctrl-C at the prompt drops the line */
            clearerr(stdin);
            interrupted = 0;
            fputc('\n', stdout);
            k.last = '\n';
            goto read_again;
        }
        if (n < 0) {
            fputc('\n', stdout);
            break; /* Ctrl-D */
        }
        k.last = '\n';
        if (n >= 2 && line[n - 2] == '\\' && line[n - 1] == '\n') n -= 2;
        if (n == 1 && line[0] == '\n') n = 0; /* an empty line: go on */
        if (n > 0) {
            int *ids = NULL;
            size_t n_ids = 0;
            /* BOS (SentencePiece) only at the start of the conversation */
            int fl = TG_ENCODE_SPECIAL |
                     (tg_gpt_n_pos(g->rc->gpt) == 0 ? tg_tokenizer_default_flags(g->rc->tok) : 0);
            tg_status st = tg_tokenizer_encode_ex(g->rc->tok, line, (size_t)n, fl, &ids, &n_ids,
                                                  &g->err);
            if (!st && n_ids > 0) {
                if (g->keep == 0 && tg_gpt_n_pos(g->rc->gpt) + (int)n_ids > g->C)
                    st = tg_fail(&g->err, TG_ERR_RANGE, "the context is full (%d tokens; "
                                 "--keep 0)", g->C);
                else st = feed(g, ids, (int)n_ids);
            }
            for (size_t i = 0; !st && i < n_ids; i++) tg_sampler_accept(smp, ids[i]);
            free(ids);
            if (st) {
                code = cli_error(CMD, "%s", g->err.msg);
                break;
            }
        }
    }
    free(line);
    free(k.text);
    stop_free(&sf);
    tg_sampler_free(smp);
    if (code == EXIT_OK && !(code = cli_stdout_check(CMD))) {
        if (!total.stop) total.stop = "length";
        print_stats(g, n_prompt, t_prefill, &total, seed, "");
    }
    return code;
}

int cmd_generate(int argc, char **argv) {
    gen_opts o = {.n_gen = 256, .top_k = 40, .threads = 1, .window = 64, .samples = 1,
                  .temp = 0.8, .top_p = 0.95, .min_p = 0.05, .penalty = 1.0, .echo = 1};
    const cli_opt opts[] = {
        {CLI_STR("-m", "--model", &o.model_path)},
        {CLI_STR("-p", "--prompt", &o.prompt)},
        {CLI_STR("-f", "--file", &o.prompt_file)},
        {CLI_CALL("--prompt-ids", NULL, parse_ids, &o)},
        {CLI_MAX_INPUT_OPT},
        {CLI_INT("-n", "--n-predict", &o.n_gen, -1, 1000000000)},
        {CLI_FLOAT("--temp", "--temperature", &o.temp, 0, 100)},
        {CLI_INT("--top-k", NULL, &o.top_k, 0, 1000000)},
        {CLI_FLOAT("--top-p", NULL, &o.top_p, 0, 1)},
        {CLI_FLOAT("--min-p", NULL, &o.min_p, 0, 1)},
        {CLI_FLOAT("--repeat-penalty", NULL, &o.penalty, 1, 10)},
        {CLI_INT("--repeat-window", "--repeat-last-n", &o.window, 0, 1 << 20)},
        {CLI_CALL("--seed", NULL, parse_seed, &o.seed), .seen = &o.have_seed},
        {CLI_INT("-t", "--threads", &o.threads, 1, 1024)},
        {CLI_STR("--isa", NULL, &o.ro.isa)},
        {CLI_INT("-c", "--ctx", &o.ctx, 1, 1 << 24)},
        {CLI_INT("--keep", NULL, &o.keep, 0, 1 << 24), .seen = &o.have_keep},
        {CLI_CALL("--stop", NULL, parse_stop, &o)},
        {CLI_FLAG("--ignore-eos", NULL, &o.ignore_eos, 1)},
        {CLI_FLAG("--truncate", NULL, &o.truncate, 1)},
        {CLI_FLAG("--no-echo", NULL, &o.echo, 0)},
        {CLI_INT("-s", "--samples", &o.samples, 1, MAX_SAMPLES)},
        {CLI_FLAG("--json", NULL, &o.json, 1)},
        {CLI_FLAG("--jsonl", NULL, &o.jsonl, 1)},
        {CLI_INT("--top-logprobs", NULL, &o.top_logprobs, 0, MAX_TOP_LOGPROBS)},
        {CLI_FLAG("-i", "--interactive", &o.interactive, 1)},
        {RUN_OPT_NO_CHECK(&o.ro.no_check)},
        {RUN_OPT_TOKENIZER(&o.ro.tokenizer)},
        {RUN_OPT_KV_TYPE(&o.ro.kv_type)},
        {0},
    };
    int parsed = cli_parse(CMD, help, opts, argc, argv);
    if (parsed != CLI_RUN) {
        free(o.ids);
        return parsed;
    }
    int code = EXIT_OK;
    if (o.temp > 0 && o.temp < TG_SAMPLER_MIN_TEMP)
        code = cli_usage(CMD, "--temp: %g is below the smallest usable temperature %g (1/T "
                              "overflows); use 0 for greedy", o.temp, (double)TG_SAMPLER_MIN_TEMP);
    else if (!!o.prompt + !!o.prompt_file + o.have_ids > 1)
        code = cli_usage(CMD, "give the prompt with one of -p, -f or --prompt-ids");
    else if (o.json && o.jsonl)
        code = cli_usage(CMD, "--json and --jsonl exclude each other");
    else if (o.top_logprobs && !o.json && !o.jsonl)
        code = cli_usage(CMD, "--top-logprobs needs --json or --jsonl");
    else if (o.interactive && (o.json || o.jsonl || o.samples > 1))
        code = cli_usage(CMD, "-i is a text REPL: it does not take --json, --jsonl or -s");
    else if (o.interactive && o.prompt_file && !strcmp(o.prompt_file, "-"))
        code = cli_usage(CMD, "-i reads the conversation from standard input: -f - cannot "
                              "be the prompt too");
    if (code) {
        free(o.ids);
        return code;
    }
    /* A prompt piped in is the prompt (not in the REPL, whose input it is). */
    if (!o.prompt && !o.prompt_file && !o.have_ids && !o.interactive && !isatty(STDIN_FILENO))
        o.prompt_file = "-";
    if (!o.have_seed) o.seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
    o.ro.n_threads = (int)o.threads;
    o.ro.n_ctx = (int)o.ctx;

    /* The prompt text. */
    tg_err err = {{0}};
    char *file_text = NULL;
    const char *prompt = o.prompt;
    size_t prompt_len = 0;
    if (o.prompt_file) {
        if (!(file_text = cli_read_file(o.prompt_file, &prompt_len, &err))) {
            free(o.ids);
            return cli_error(CMD, "%s", err.msg);
        }
        prompt = file_text;
    } else if (prompt) {
        prompt_len = strlen(prompt);
    } else {
        prompt = "";
    }
    int have_prompt = o.prompt || o.prompt_file || o.have_ids;

    run_ctx rc;
    if ((code = run_open(&rc, CMD, o.model_path, &o.ro))) {
        free(file_text);
        free(o.ids);
        return code;
    }
    gen g = {.o = &o, .rc = &rc, .C = tg_gpt_n_ctx(rc.gpt), .V = tg_gpt_config(rc.gpt)->n_vocab,
             .eos = rc.eos, .bos = tg_tokenizer_bos(rc.tok)};
    int C = g.C;
    int *ids = NULL;
    char *ids_text = NULL;
    if (o.have_keep && o.keep > C - 1) {
        code = cli_usage(CMD, "--keep: %ld is outside [0, %d] (the context less one)", o.keep,
                         C - 1);
        goto done;
    }
    g.keep = o.have_keep ? (int)o.keep : C / 2;

    /* Tokens: the prompt (special tokens spelled out are parsed), or
     * <|endoftext|> alone for an empty prompt. */
    size_t n_ids = 0;
    if (o.have_ids) {
        for (size_t i = 0; i < o.n_ids; i++)
            if (o.ids[i] >= g.V) {
                code = cli_usage(CMD, "--prompt-ids: %d is outside [0, %d) (the vocabulary)",
                                 o.ids[i], g.V);
                goto done;
            }
        ids = o.ids;
        o.ids = NULL;
        n_ids = o.n_ids;
        if (tg_tokenizer_decode(rc.tok, ids, n_ids, &ids_text, &prompt_len, &err)) {
            code = cli_error(CMD, "%s", err.msg);
            goto done;
        }
        prompt = ids_text;
    } else if (tg_tokenizer_encode(rc.tok, prompt, prompt_len, 1, &ids, &n_ids, &err)) {
        code = cli_error(CMD, "%s", err.msg);
        goto done;
    }
    int start_eos = 0;
    if (n_ids == 0) {
        if (g.eos < 0) {
            if (!o.interactive) {
                code = cli_error(CMD, "empty prompt, and %s has no <|endoftext|> token to start "
                                 "from", rc.model_path);
                goto done;
            }
        } else {
            free(ids);
            if (!(ids = malloc(sizeof *ids))) {
                code = cli_error(CMD, "out of memory");
                goto done;
            }
            ids[0] = g.eos;
            n_ids = 1;
            start_eos = 1;
        }
    }
    size_t skip = 0;
    if (n_ids > (size_t)C) {
        if (!o.truncate) {
            code = cli_error(CMD,
                             "the prompt is %zu tokens, longer than the context of %d tokens "
                             "(shorten it, or pass --truncate to keep its last tokens)",
                             n_ids, C);
            goto done;
        }
        /* Keep the end, leaving room to generate (up to half the context). */
        long room = o.n_gen >= 0 && o.n_gen < C / 2 ? o.n_gen : C / 2;
        size_t keep = (size_t)(C - room);
        if (keep < 1) keep = 1;
        skip = n_ids - keep;
        fprintf(stderr, "tinygpt generate: prompt truncated from %zu to its last %zu token%s\n",
                n_ids, keep, keep == 1 ? "" : "s");
    }
    int n_prompt = (int)(n_ids - skip);
    const int *prompt_ids = ids + skip;
    char *kept_text = NULL;
    if (skip) { /* the echo shows what the model sees */
        size_t tl;
        if (tg_tokenizer_decode(rc.tok, prompt_ids, (size_t)n_prompt, &kept_text, &tl, &err)) {
            code = cli_error(CMD, "%s", err.msg);
            goto done;
        }
        prompt = kept_text;
        prompt_len = tl;
    }

    if (!(g.logits = malloc((size_t)g.V * sizeof *g.logits))) {
        free(kept_text);
        code = cli_error(CMD, "out of memory");
        goto done;
    }
    interrupted = 0;
    set_sigint(1);
    double t0 = run_now(), t_prefill = 0;
    tg_status st = TG_OK;
    if (n_prompt > 0) {
        st = feed(&g, prompt_ids, n_prompt);
        t_prefill = run_now() - t0;
    }
    if (st) {
        code = cli_error(CMD, "%s", g.err.msg);
    } else if (o.interactive) {
        if (have_prompt && o.echo && !start_eos) {
            fwrite(prompt, 1, prompt_len, stdout);
            fflush(stdout);
        }
        code = run_interactive(&g, have_prompt && n_prompt > 0, n_prompt, t_prefill, o.seed);
    } else {
        code = run_samples(&g, prompt, prompt_len, prompt_ids, n_prompt, start_eos, t_prefill,
                           o.seed);
    }
    signal(SIGINT, SIG_DFL);
    free(kept_text);
    if (code == EXIT_OK) code = cli_stdout_check(CMD);
done:
    free(g.logits);
    free(g.hist);
    free(ids);
    free(ids_text);
    free(o.ids);
    free(file_text);
    run_close(&rc);
    return code;
}
