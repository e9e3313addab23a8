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

/* Flushes stdout; if a write to it failed (now or before), prints "tinygpt
 * CMD: writing the standard output failed[: reason]" and returns
 * EXIT_RUNTIME, else EXIT_OK. A command calls it before any line on stderr
 * that reports success (stats, "wrote FILE"), so that a failed output is
 * never followed by one; main calls it after every command. */
int cli_stdout_check(const char *cmd);

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

/* ---- option tables -------------------------------------------------------
 * A command lists its options once, as a table ended by {0}:
 *
 *     const cli_opt opts[] = {
 *         {CLI_STR("-m", "--model", &model)},
 *         {CLI_INT("-n", NULL, &n_gen, 0, 1000000)},
 *         {CLI_FLAG("--no-echo", NULL, &echo, 0), .seen = &n_echo_flags},
 *         {0},
 *     };
 *     int parsed = cli_parse(CMD, help, opts, argc, argv);
 *     if (parsed != CLI_RUN) return parsed;
 *
 * Each CLI_ macro fills the fields of one entry and leaves the braces to the
 * table, so that an entry can add .seen or .call. The ranges must fit the
 * type the destination has.
 *
 * cli_parse reads argv[1..] left to right, so the first problem is the one
 * reported. -h/--help prints help(stdout) and stops; --list-options prints
 * the table, one "NAME[,ALT] KIND" a line (KIND: flag, string, int, number,
 * list, value), and stops; a valued option
 * takes the next argument whatever it looks like, or the rest of a long
 * option after '=' (--ctx=64); "--" ends the options (what follows goes to
 * the ARGS entry); an option given twice keeps the last value. Every usage error is one line naming the flag as typed:
 *   "FLAG needs a value", "FLAG: 'V' is not an integer in [LO, HI]",
 *   "FLAG: 'V' is not a number in [LO, HI]", the cli_int_list messages,
 *   "unknown option 'A' (see tinygpt CMD --help)", "FLAG takes no value (given
 *   'A')", "unexpected argument 'A' (see tinygpt CMD --help)".
 * Rules of one command (exclusive flags, required ones) are checked by the
 * command after cli_parse, or by a callback where the order matters. */
typedef enum cli_kind {
    CLI_KIND_END = 0,  /* the {0} that ends a table */
    CLI_KIND_FLAG,     /* no value: stores lo */
    CLI_KIND_STR,      /* the value itself */
    CLI_KIND_INT,      /* an integer in [lo, hi] */
    CLI_KIND_FLOAT,    /* a finite number in [flo, fhi] */
    CLI_KIND_LIST,     /* "1,2,4": at most max integers in [lo, hi], count in *n */
    CLI_KIND_CALL,     /* a value handed to call() alone */
    CLI_KIND_ARGS,     /* the arguments that are no option (see below) */
} cli_kind;

/* What dst points to; the macros fill it in, and do not compile for any
 * other type. */
typedef enum cli_type {
    CLI_T_NONE, CLI_T_STR, CLI_T_INT, CLI_T_LONG, CLI_T_LLONG, CLI_T_ULONG, CLI_T_ULLONG,
    CLI_T_FLOAT, CLI_T_DOUBLE,
} cli_type;

typedef struct cli_opt cli_opt;
/* A callback: 0 when done, -1 after printing a usage error. For CLI_KIND_ARGS
 * it may also return 1: "not mine", reported as an unknown option. */
typedef int (*cli_call)(const char *cmd, const cli_opt *o, const char *flag, const char *value);

struct cli_opt {
    const char *name, *alt;  /* "-m" and "--model"; alt may be NULL */
    cli_kind kind;
    cli_type type;
    void *dst;
    long lo, hi;             /* INT, LIST: the range; FLAG: the value stored */
    double flo, fhi;         /* FLOAT: the range */
    int max, *n;             /* LIST: at most max values, their count */
    int *seen;               /* optional: counts the times the option is given */
    cli_call call;           /* optional for FLAG (value NULL) and valued kinds:
                                replaces the built-in conversion, which it can
                                still run with cli_opt_value */
};

#define CLI_INT_TYPE(p)                                                                       \
    _Generic((p), int *: CLI_T_INT, long *: CLI_T_LONG, long long *: CLI_T_LLONG,            \
             unsigned long *: CLI_T_ULONG, unsigned long long *: CLI_T_ULLONG)
#define CLI_FLAG(nm, al, p, v) \
    .name = (nm), .alt = (al), .kind = CLI_KIND_FLAG, .type = CLI_INT_TYPE(p), .dst = (p), .lo = (v)
#define CLI_STR(nm, al, p)                                                                    \
    .name = (nm), .alt = (al), .kind = CLI_KIND_STR,                                          \
    .type = _Generic((p), const char **: CLI_T_STR), .dst = (p)
#define CLI_INT(nm, al, p, l, h)                                                              \
    .name = (nm), .alt = (al), .kind = CLI_KIND_INT, .type = CLI_INT_TYPE(p), .dst = (p),     \
    .lo = (l), .hi = (h)
#define CLI_FLOAT(nm, al, p, l, h)                                                            \
    .name = (nm), .alt = (al), .kind = CLI_KIND_FLOAT,                                        \
    .type = _Generic((p), float *: CLI_T_FLOAT, double *: CLI_T_DOUBLE), .dst = (p),          \
    .flo = (l), .fhi = (h)
#define CLI_LIST(nm, al, p, count, most, l, h)                                                \
    .name = (nm), .alt = (al), .kind = CLI_KIND_LIST, .type = _Generic((p), long *: CLI_T_LONG), \
    .dst = (p), .n = (count), .max = (most), .lo = (l), .hi = (h)
#define CLI_CALL(nm, al, fn, p) .name = (nm), .alt = (al), .kind = CLI_KIND_CALL, .call = (fn), .dst = (p)
/* The arguments that do not look like an option (a lone "-" does not), in
 * order, each handed to fn as value (flag NULL); without such an entry they
 * are unknown options. */
#define CLI_ARGS(fn, p) .kind = CLI_KIND_ARGS, .call = (fn), .dst = (p)
/* One such argument into *p (a const char *); a second one is the usage
 * error "more than one NOUN given". */
#define CLI_ONE_ARG(noun, p) \
    .kind = CLI_KIND_ARGS, .name = (noun), .call = cli_one_arg, .dst = _Generic((p), const char **: (p))
int cli_one_arg(const char *cmd, const cli_opt *o, const char *flag, const char *value);

/* cli_parse's answer when the command should go on; otherwise it returns the
 * exit code (EXIT_OK after --help, EXIT_USAGE after a printed error). */
enum { CLI_RUN = -1 };
int cli_parse(const char *cmd, void (*help)(FILE *f), const cli_opt *opts, int argc, char **argv);
/* The built-in conversion of o's kind: value into o->dst. 0, or -1 (printed). */
int cli_opt_value(const char *cmd, const cli_opt *o, const char *flag, const char *value);

/* Reads a whole file (binary-safe; "-" is standard input; FIFOs and pipes
 * too) of at most cli_max_input bytes: a longer one is an error naming the
 * limit and --max-input, found before reading a regular file and after
 * limit + 1 bytes of anything else (-f /dev/zero stops there). Returns NULL
 * and fills err on failure. */
char *cli_read_file(const char *path, size_t *len, tg_err *err);

/* The input limit, 64 MiB unless --max-input says otherwise: far more than
 * a prompt or an evaluation text needs (64 MiB is ~20 M tokens, an hour of
 * eval on the shipped model) and little enough to hold on any machine,
 * tokens and all. A command that reads -f puts CLI_MAX_INPUT_OPT in its
 * table and a line for it in its --help. */
#define CLI_MAX_INPUT_DEFAULT ((size_t)64 << 20)
#define CLI_MAX_INPUT_MOST ((unsigned long long)1 << 40)
extern size_t cli_max_input;
/* A size: digits with an optional K, M or G suffix (KiB, MiB, GiB), in [1, 2^40]. */
int cli_parse_size(const char *cmd, const cli_opt *o, const char *flag, const char *value);
#define CLI_MAX_INPUT_OPT CLI_CALL("--max-input", NULL, cli_parse_size, &cli_max_input)

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
/* The first half of commit: flush, fsync and close the temporary (errors
 * abort it), leaving the rename to cli_out_commit; for outputs that must
 * be renamed together. */
int cli_out_finish(cli_outfile *o, tg_err *err);

/* Every output path, checked before any work: empty is a usage error; a
 * folder, a non-regular file, or a folder that takes no new file (a
 * temporary is created there and removed, as cli_out_open will) is a
 * runtime error. Temporaries of path that a killed run left (PATH.tmp.XXXXXX,
 * older than cli_start) are removed first. Prints the error naming flag;
 * returns its exit code, or 0. */
int cli_out_check(const char *cmd, const char *flag, const char *path);
/* A usage error (returns its exit code) when the output path names the same
 * file as an input (the same device and inode: a link or another spelling
 * counts), which the rename into place would replace: `train -f t.txt -o
 * t.txt`, `attention -m m.gguf --svg m.gguf`. in NULL or absent: 0. */
int cli_out_not_input(const char *cmd, const char *flag, const char *out, const char *in_flag, const char *in);

/* OUT with its ".gguf" suffix (if any) replaced by suffix ("m.gguf", ".csv":
 * "m.csv"; "m", ".csv": "m.csv"): the files written beside a model (train's
 * checkpoint, loss CSV and SVG). Malloc'd; NULL when out of memory. */
char *cli_side_path(const char *out, const char *suffix);
/* Called first by main: the time before which a temporary is stale. */
void cli_start(void);

/* Default model: $TINYGPT_MODEL; else for the binary in the build dir the
 * source tree's weights/shakespeare-4h.gguf, for an installed one
 * shakespeare-4h.gguf in its data dir (relative to the binary, then at the
 * prefix), never the source tree's; NULL if none is found. */
const char *cli_default_model(void);

/* A number for a JSON writer: v printed with fmt (e.g. "%.9g") into buf, or
 * "null" when v is NaN or infinite (JSON has no such numbers). Print it with
 * %s; CLI_JNUM gives each use its own buffer, valid to the end of the
 * enclosing block. */
const char *cli_json_num(char *buf, size_t n, const char *fmt, double v);
#define CLI_JNUM(fmt, v) cli_json_num((char[40]){0}, 40, fmt, (v))

/* The subcommands (each in tools/cmd_NAME.c). */
int cmd_generate(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_inspect(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_init(int argc, char **argv);
int cmd_quantize(int argc, char **argv);
int cmd_train(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_profile(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_attention(int argc, char **argv);
int cmd_task(int argc, char **argv);
int cmd_serve(int argc, char **argv);

#endif
