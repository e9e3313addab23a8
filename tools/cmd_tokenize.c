/* cmd_tokenize.c — `tinygpt tokenize`: the token ids of a text under a
 * model's tokenizer (only the vocabulary is loaded). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/tokenizer.h"
#include "tools/cli.h"
#include "tools/run.h"
#include "tools/utf8.h"
#include "weights/gpt2.h"

static const char *const CMD = "tokenize";

static void help(FILE *f) {
    fprintf(f,
            "usage: tinygpt tokenize [-m MODEL | --tokenizer PATH] (-p TEXT | -f FILE)\n"
            "                        [--json] [--verbose] [--no-parse-special]\n"
            "  -m, --model MODEL   GGUF file (a vocabulary-only one will do) or Hugging Face\n"
            "                      GPT-2 folder (vocab.json, merges.txt) or Llama folder\n"
            "                      (tokenizer.json); a llama2.c .bin holds no vocabulary:\n"
            "                      --tokenizer (default: the shipped model, or\n"
            "                      $TINYGPT_MODEL)\n"
            "  -p, --prompt TEXT   the text\n"
            "  -f, --file FILE     the text, read from FILE ('-': standard input)\n"
            "  --max-input BYTES   read at most BYTES of FILE, [1, 2^40]; K/M/G suffixes\n"
            "                      (default 64M)\n"
            "  --json              print {\"ids\": [...]} (with --verbose also \"pieces\", each\n"
            "                      token as spelled in the vocabulary, e.g. \"Ġthe\")\n"
            "  --verbose           one token per line: id and its bytes, escaped\n"
            "  --no-parse-special  treat \"<|endoftext|>\" in the text as plain text\n"
            "                      (as the reference GPT-2 encoder does); by default it is\n"
            "                      the special token, as in `generate`\n"
            "  --tokenizer PATH    use this vocabulary instead of a model's (not with -m):\n"
            "                      llama2.c tokenizer.bin, GGUF, tokenizer.json or HF folder\n");
}

/* Bytes as a C-like literal: printable ASCII and valid UTF-8 as is, the
 * rest escaped, so a token's exact bytes are visible. */
static void put_escaped(FILE *f, const char *p, size_t n) {
    const unsigned char *s = (const unsigned char *)p;
    for (size_t i = 0; i < n;) {
        unsigned char c = s[i];
        if (c == '\n') fputs("\\n", f);
        else if (c == '\t') fputs("\\t", f);
        else if (c == '\r') fputs("\\r", f);
        else if (c == '\\' || c == '\'') fprintf(f, "\\%c", c);
        else if (c >= 0x20 && c < 0x7F) fputc(c, f);
        else if (c >= 0x80) {
            size_t len = utf8_char_len(s + i, n - i);
            if (len) {
                fwrite(s + i, 1, len, f);
                i += len;
                continue;
            }
            fprintf(f, "\\x%02x", c);
        } else fprintf(f, "\\x%02x", c);
        i++;
    }
}

/* A JSON string of valid UTF-8 (vocabulary strings are). */
static void put_json_str(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

int cmd_tokenize(int argc, char **argv) {
    const char *model_path = NULL, *prompt = NULL, *file = NULL, *tok_path = NULL;
    int json = 0, verbose = 0, parse_special = 1;
    const cli_opt opts[] = {
        {CLI_STR("-m", "--model", &model_path)},
        {CLI_STR("-p", "--prompt", &prompt)},
        {CLI_STR("-f", "--file", &file)},
        {CLI_MAX_INPUT_OPT},
        {CLI_FLAG("--json", NULL, &json, 1)},
        {CLI_FLAG("--verbose", NULL, &verbose, 1)},
        {CLI_FLAG("--no-parse-special", NULL, &parse_special, 0)},
        {CLI_STR("--tokenizer", NULL, &tok_path)},
        {0},
    };
    int parsed = cli_parse(CMD, help, opts, argc, argv);
    if (parsed != CLI_RUN) return parsed;
    if (!prompt == !file) return cli_usage(CMD, "give the text with exactly one of -p TEXT or -f FILE");
    if (model_path && tok_path)
        return cli_usage(CMD, "-m and --tokenizer are exclusive: tokenize reads one vocabulary, the model's "
                              "(-m MODEL) or --tokenizer PATH's");
    if (!tok_path && !model_path && !(model_path = cli_default_model()))
        return cli_error(CMD, "no model given and the default model weights/shakespeare-4h.gguf is not "
                              "there; pass -m MODEL (a GGUF file or a Hugging Face folder)");

    tg_err err = {{0}};
    size_t len = 0;
    char *text = NULL;
    if (file) {
        if (!(text = cli_read_file(file, &len, &err))) return cli_error(CMD, "%s", err.msg);
    } else {
        len = strlen(prompt);
    }
    const char *src = file ? text : prompt;

    tg_gpt2_model m;
    tg_tokenizer *tok = NULL;
    int *ids = NULL;
    size_t n_ids = 0;
    int code = EXIT_OK;
    if (tok_path) { /* the vocabulary alone: no model needed */
        memset(&m, 0, sizeof m);
        if ((code = run_use_tokenizer(CMD, &m.vocab, tok_path, NULL, 0)) != EXIT_OK) {
            free(text);
            return code;
        }
        model_path = tok_path;
    } else if (tg_model_load(&m, model_path, 1, &err)) {
        free(text);
        return cli_error(CMD, "%s", err.msg);
    }
    if ((code = run_need_vocab(CMD, model_path, &m.vocab, 1)) != EXIT_OK) goto done;
    if (tg_tokenizer_create(&tok, &m.vocab, &err)) {
        code = cli_error(CMD, "%s: %s", model_path, err.msg);
        goto done;
    }
    if (tg_tokenizer_encode(tok, src, len, parse_special, &ids, &n_ids, &err)) {
        code = cli_error(CMD, "%s", err.msg);
        goto done;
    }

    if (json) {
        fputs("{\"ids\": [", stdout);
        for (size_t i = 0; i < n_ids; i++) printf(i ? ", %d" : "%d", ids[i]);
        fputc(']', stdout);
        if (verbose) {
            fputs(", \"pieces\": [", stdout);
            for (size_t i = 0; i < n_ids; i++) {
                if (i) fputs(", ", stdout);
                put_json_str(stdout, m.vocab.tokens[ids[i]]);
            }
            fputc(']', stdout);
        }
        fputs("}\n", stdout);
    } else if (verbose) {
        for (size_t i = 0; i < n_ids; i++) {
            size_t pl;
            const char *piece = tg_tokenizer_piece(tok, ids[i], &pl);
            if (pl == 0 && tg_tokenizer_is_special(tok, ids[i])) { /* <s>: no bytes, show its name */
                piece = m.vocab.tokens[ids[i]];
                pl = strlen(piece);
            }
            printf("%6d '", ids[i]);
            put_escaped(stdout, piece, pl);
            fputs("'\n", stdout);
        }
    } else {
        for (size_t i = 0; i < n_ids; i++) printf(i ? " %d" : "%d", ids[i]);
        fputc('\n', stdout);
    }
    code = cli_stdout_check(CMD);
    if (!code && verbose && !json) fprintf(stderr, "%zu tokens, %zu bytes\n", n_ids, len);
done:
    free(ids);
    tg_tokenizer_free(tok);
    tg_gpt2_free(&m);
    free(text);
    return code;
}
