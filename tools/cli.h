/* cli.h — what every `tinygpt` subcommand shares: exit codes, one-line
 * errors, strict number parsing, and atomic output files. Only tools/
 * prints and exits. */
#ifndef TINYGPT_CLI_H
#define TINYGPT_CLI_H

#include <stdio.h>

#include "engine/status.h"

enum { EXIT_OK = 0, EXIT_RUNTIME = 1, EXIT_USAGE = 2 };

/* Prints "tinygpt CMD: message" on stderr and returns EXIT_RUNTIME or
 * EXIT_USAGE, so a command can `return cli_usage("generate", "...")`. */
int cli_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int cli_usage(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Strict parsers: the whole string must be a number within [lo, hi]. On
 * failure they print a usage error naming the flag and the allowed range and
 * return -1. */
int cli_int(const char *cmd, const char *flag, const char *s, long lo, long hi, long *out);
int cli_float(const char *cmd, const char *flag, const char *s, double lo, double hi, double *out);
/* "1,2,4" -> out[n]; each within [lo, hi]. Returns count, or -1 (printed). */
int cli_int_list(const char *cmd, const char *flag, const char *s, long lo, long hi,
                 long *out, int max);

/* The value after a flag: argv[++*i], or a usage error if missing. */
const char *cli_value(const char *cmd, int argc, char **argv, int *i);

/* Reads a whole file (binary-safe). Returns NULL and fills err on failure. */
char *cli_read_file(const char *path, size_t *len, tg_err *err);

/* Atomic output: open a temporary file beside `path`, write, then commit
 * (fsync + rename) or abort (unlink). The user's old file is never
 * touched unless the commit succeeds. */
typedef struct cli_outfile {
    FILE *f;
    char *path, *tmp;
} cli_outfile;
int cli_out_open(cli_outfile *o, const char *path, tg_err *err);
int cli_out_commit(cli_outfile *o, tg_err *err);
void cli_out_abort(cli_outfile *o);

/* Default model: weights/shakespeare-4h.gguf next to the source tree or in
 * the installed data dir; NULL if none is found. */
const char *cli_default_model(void);

/* The subcommands (each in tools/cmd_NAME.c). */
int cmd_generate(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_inspect(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_init(int argc, char **argv);
int cmd_train(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_profile(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_attention(int argc, char **argv);

#endif
