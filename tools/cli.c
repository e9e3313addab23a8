/* cli.c — shared command-line helpers (see cli.h). */
#include "tools/cli.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <dirent.h>
#include <signal.h>
#include <time.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void vreport(const char *cmd, const char *fmt, va_list ap) {
    fprintf(stderr, "tinygpt%s%s: ", cmd ? " " : "", cmd ? cmd : "");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

int cli_error(const char *cmd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vreport(cmd, fmt, ap);
    va_end(ap);
    return EXIT_RUNTIME;
}

int cli_stdout_check(const char *cmd) {
    errno = 0;
    int bad = fflush(stdout) != 0;
    int e = bad ? errno : 0;
    if (!bad && !ferror(stdout)) return EXIT_OK;
    return cli_error(cmd, "writing the standard output failed%s%s", e ? ": " : "",
                     e ? strerror(e) : "");
}

int cli_usage(const char *cmd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vreport(cmd, fmt, ap);
    va_end(ap);
    return EXIT_USAGE;
}

int cli_int(const char *cmd, const char *flag, const char *s, long lo, long hi, long *out) {
    char *end;
    errno = 0;
    long v = s ? strtol(s, &end, 10) : 0;
    if (!s || !*s || *end || errno || v < lo || v > hi) {
        cli_usage(cmd, "%s: '%s' is not an integer in [%ld, %ld]", flag, s ? s : "", lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

int cli_float(const char *cmd, const char *flag, const char *s, double lo, double hi, double *out) {
    char *end;
    errno = 0;
    double v = s ? strtod(s, &end) : 0;
    if (!s || !*s || *end || errno || !isfinite(v) || v < lo || v > hi) {
        cli_usage(cmd, "%s: '%s' is not a number in [%g, %g]", flag, s ? s : "", lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

int cli_int_list(const char *cmd, const char *flag, const char *s, long lo, long hi,
                 long *out, int max) {
    int n = 0;
    const char *p = s;
    char buf[64];
    while (p && *p) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len == 0 || len >= sizeof buf || n >= max) {
            cli_usage(cmd, "%s: '%s' is not a list of at most %d integers", flag, s, max);
            return -1;
        }
        memcpy(buf, p, len);
        buf[len] = 0;
        if (cli_int(cmd, flag, buf, lo, hi, &out[n]) < 0) return -1;
        n++;
        p = comma ? comma + 1 : NULL;
        if (comma && !*p) {
            cli_usage(cmd, "%s: '%s' ends with a comma", flag, s);
            return -1;
        }
    }
    if (n == 0) {
        cli_usage(cmd, "%s: empty list", flag);
        return -1;
    }
    return n;
}

const char *cli_value(const char *cmd, int argc, char **argv, int *i) {
    if (*i + 1 >= argc) {
        cli_usage(cmd, "%s needs a value", argv[*i]);
        return NULL;
    }
    return argv[++*i];
}

size_t cli_max_input = CLI_MAX_INPUT_DEFAULT;

int cli_parse_size(const char *cmd, const cli_opt *o, const char *flag, const char *s) {
    char *end;
    errno = 0;
    unsigned long long v = *s >= '0' && *s <= '9' ? strtoull(s, &end, 10) : 0;
    int shift = 0;
    if (v && !errno) {
        if (*end == 'K' || *end == 'k') shift = 10, end++;
        else if (*end == 'M' || *end == 'm') shift = 20, end++;
        else if (*end == 'G' || *end == 'g') shift = 30, end++;
        if (!*end && v <= (CLI_MAX_INPUT_MOST >> shift)) {
            *(size_t *)o->dst = (size_t)(v << shift);
            return 0;
        }
    }
    cli_usage(cmd, "%s: '%s' is not a size in [1, 2^40] bytes (a K, M or G suffix counts KiB, "
                   "MiB, GiB)", flag, s);
    return -1;
}

/* "64 MiB", "1.5 GiB", "100 bytes": the limit as the user gave it, roughly. */
static void size_words(char *buf, size_t cap, size_t n) {
    if (n >= (1u << 30) && n % (1u << 30) == 0) snprintf(buf, cap, "%zu GiB", n >> 30);
    else if (n >= (1u << 20) && n % (1u << 20) == 0) snprintf(buf, cap, "%zu MiB", n >> 20);
    else if (n >= (1u << 10) && n % (1u << 10) == 0) snprintf(buf, cap, "%zu KiB", n >> 10);
    else snprintf(buf, cap, "%zu bytes", n);
}

static char *too_long(const char *name, tg_err *err) {
    char lim[32];
    size_words(lim, sizeof lim, cli_max_input);
    tg_fail(err, TG_ERR_RANGE, "%s: longer than the input limit of %s (raise it with --max-input "
            "BYTES)", name, lim);
    return NULL;
}

char *cli_read_file(const char *path, size_t *len, tg_err *err) {
    int is_stdin = !strcmp(path, "-");
    const char *name = is_stdin ? "standard input" : path;
    FILE *f = is_stdin ? stdin : fopen(path, "rb");
    if (!f) {
        tg_fail(err, TG_ERR_IO, "%s: %s", path, strerror(errno));
        return NULL;
    }
    size_t limit = cli_max_input, cap = 1 << 16, n = 0;
    struct stat st;
    if (fstat(fileno(f), &st) == 0) {
        const char *what = S_ISDIR(st.st_mode) ? "is a directory" : NULL;
        if (!what && S_ISREG(st.st_mode) && (uintmax_t)st.st_size > limit) what = "";
        if (what) {
            if (!is_stdin) fclose(f);
            if (!*what) return too_long(name, err);
            tg_fail(err, TG_ERR_IO, "%s: %s", name, what);
            return NULL;
        }
        /* A regular file: one read of its size (+1 to see it grew). */
        if (S_ISREG(st.st_mode) && (uintmax_t)st.st_size + 1 > cap) cap = (size_t)st.st_size + 1;
    }
    /* Pipes, FIFOs, devices: read in growing chunks, never past limit + 1
     * bytes (so that /dev/zero is an error, not the OOM killer). */
    if (cap > limit + 1) cap = limit + 1;
    char *buf = malloc(cap + 1);
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (n < cap || n > limit) break;
        size_t ncap = cap > (limit + 1) / 2 ? limit + 1 : cap * 2;
        char *nb = realloc(buf, ncap + 1);
        if (!nb) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = nb;
        cap = ncap;
    }
    int bad = ferror(f);
    if (is_stdin) clearerr(f);
    else fclose(f);
    if (!buf) {
        tg_fail(err, TG_ERR_NOMEM, "%s: out of memory reading the file", name);
        return NULL;
    }
    if (bad) {
        free(buf);
        tg_fail(err, TG_ERR_IO, "%s: read error", name);
        return NULL;
    }
    if (n > limit) {
        free(buf);
        return too_long(name, err);
    }
    buf[n] = 0;
    *len = n;
    return buf;
}

int cli_out_open(cli_outfile *o, const char *path, tg_err *err) {
    memset(o, 0, sizeof *o);
    size_t n = strlen(path);
    o->path = strdup(path);
    o->tmp = malloc(n + 32);
    if (!o->path || !o->tmp) {
        cli_out_abort(o);
        return tg_fail(err, TG_ERR_NOMEM, "%s: out of memory", path);
    }
    snprintf(o->tmp, n + 32, "%s.tmp.XXXXXX", path);
    int fd = mkstemp(o->tmp);
    if (fd < 0) {
        tg_status s = tg_fail(err, TG_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
        free(o->tmp);
        o->tmp = NULL;
        cli_out_abort(o);
        return s;
    }
    fchmod(fd, 0644);
    o->f = fdopen(fd, "wb");
    if (!o->f) {
        close(fd);
        cli_out_abort(o);
        return tg_fail(err, TG_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
    }
    return TG_OK;
}

/* TINYGPT_TEST_FAULT=enospc:N or kill:N (tests only): the Nth
 * cli_out_finish of the process fails as on a full disk, or the process
 * SIGKILLs itself there, its temporary written but not renamed. */
static int test_fault(void) {
    static int calls;
    const char *f = getenv("TINYGPT_TEST_FAULT");
    int n = 0;
    calls++;
    if (!f) return 0;
    if (sscanf(f, "enospc:%d", &n) == 1 && n == calls) return ENOSPC;
    if (sscanf(f, "kill:%d", &n) == 1 && n == calls) {
        raise(SIGKILL);
    }
    return 0;
}

int cli_out_finish(cli_outfile *o, tg_err *err) {
    if (!o->f) return TG_OK;
    int fault = test_fault();
    int bad = fflush(o->f) != 0 || ferror(o->f) || fsync(fileno(o->f)) != 0;
    int e = bad ? errno : fault;
    bad |= fclose(o->f) != 0 || fault;
    o->f = NULL;
    if (bad) {
        tg_status s = tg_fail(err, TG_ERR_IO, "%s: write failed: %s", o->path, strerror(e ? e : EIO));
        cli_out_abort(o);
        return s;
    }
    return TG_OK;
}

int cli_out_commit(cli_outfile *o, tg_err *err) {
    if (cli_out_finish(o, err)) return TG_ERR_IO;
    if (rename(o->tmp, o->path) != 0) {
        tg_status s = tg_fail(err, TG_ERR_IO, "%s: write failed: %s", o->path, strerror(errno));
        cli_out_abort(o);
        return s;
    }
    free(o->tmp);
    free(o->path);
    o->tmp = o->path = NULL;
    return TG_OK;
}

void cli_out_abort(cli_outfile *o) {
    if (o->f) fclose(o->f);
    if (o->tmp) unlink(o->tmp);
    free(o->tmp);
    free(o->path);
    memset(o, 0, sizeof *o);
}

const char *cli_json_num(char *buf, size_t n, const char *fmt, double v) {
    if (!isfinite(v)) return "null";
    snprintf(buf, n, fmt, v);
    return buf;
}

/* Is this binary the one in the build dir (not an installed copy)? */
static int running_from_build_dir(char *exe_dir, size_t cap) {
    char exe[PATH_MAX], build[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return 0;
    exe[n] = 0;
    char *slash = strrchr(exe, '/');
    if (!slash) return 0;
    *slash = 0;
    snprintf(exe_dir, cap, "%s", exe);
    return realpath(TINYGPT_BUILD_DIR, build) && !strcmp(build, exe);
}

/* ---- output paths ------------------------------------------------------- */

static struct timespec g_start; /* zero until cli_start: then nothing is stale */

void cli_start(void) { clock_gettime(CLOCK_REALTIME, &g_start); }

/* Whether name is base + ".tmp." + six characters of mkstemp's alphabet:
 * the temporaries of cli_out_open and tg_gguf_write for that output. */
static int is_our_tmp(const char *name, const char *base) {
    size_t n = strlen(base);
    if (strncmp(name, base, n) || strncmp(name + n, ".tmp.", 5) || strlen(name + n + 5) != 6) return 0;
    for (const char *c = name + n + 5; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9'))) return 0;
    return 1;
}

/* Removes the temporaries of path that a killed run left: regular files of
 * our own name pattern, last modified before this process started (a
 * concurrent writer's are newer). Returns how many. */
static int remove_stale(const char *path) {
    if (!g_start.tv_sec) return 0;
    const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
    char dir[PATH_MAX];
    if (!slash) snprintf(dir, sizeof dir, ".");
    else if (slash == path) snprintf(dir, sizeof dir, "/");
    else snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    DIR *d = opendir(dir);
    if (!d) return 0;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (!is_our_tmp(e->d_name, base)) continue;
        struct stat st;
        if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) continue;
        int older = st.st_mtim.tv_sec < g_start.tv_sec ||
                    (st.st_mtim.tv_sec == g_start.tv_sec && st.st_mtim.tv_nsec < g_start.tv_nsec);
        if (older && unlinkat(dirfd(d), e->d_name, 0) == 0) n++;
    }
    closedir(d);
    return n;
}

char *cli_side_path(const char *out, const char *suffix) {
    size_t n = strlen(out);
    if (n > 5 && !strcmp(out + n - 5, ".gguf")) n -= 5;
    char *p = malloc(n + strlen(suffix) + 1);
    if (!p) return NULL;
    memcpy(p, out, n);
    strcpy(p + n, suffix);
    return p;
}

int cli_out_check(const char *cmd, const char *flag, const char *path) {
    if (!*path) return cli_usage(cmd, "%s: the output path is empty", flag);
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) return cli_error(cmd, "%s: %s: is a directory", flag, path);
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
        return cli_error(cmd, "%s: %s: exists and is not a regular file (it would be replaced)", flag, path);
    int n = remove_stale(path);
    if (n) fprintf(stderr, "tinygpt %s: removed %d stale temporar%s of %s (left by a killed run)\n", cmd, n,
                   n == 1 ? "y" : "ies", path);
    /* what cli_out_open and tg_gguf_write will do: a temporary beside path */
    cli_outfile o;
    tg_err err;
    if (cli_out_open(&o, path, &err)) return cli_error(cmd, "%s: %s", flag, err.msg);
    cli_out_abort(&o);
    return 0;
}

int cli_out_not_input(const char *cmd, const char *flag, const char *out, const char *in_flag, const char *in) {
    struct stat so, si;
    if (!out || !in || stat(out, &so) != 0 || stat(in, &si) != 0) return 0;
    if (so.st_dev != si.st_dev || so.st_ino != si.st_ino) return 0;
    return cli_usage(cmd, "%s %s is the input %s %s: writing it would replace what it is made from; "
                          "give another output path", flag, out, in_flag, in);
}

const char *cli_default_model(void) {
    static char buf[PATH_MAX];
    char exe_dir[PATH_MAX] = "", rel[PATH_MAX + 64] = "";
    const char *env = getenv("TINYGPT_MODEL");
    if (env && *env) return env;
    const char *in_build[] = {TINYGPT_SOURCE_DIR "/weights/shakespeare-4h.gguf", NULL};
    const char *installed[] = {rel, TINYGPT_DATA_DIR "/shakespeare-4h.gguf", NULL};
    const char **cands = installed;
    if (running_from_build_dir(exe_dir, sizeof exe_dir)) cands = in_build;
    else if (exe_dir[0]) snprintf(rel, sizeof rel, "%s/" TINYGPT_DATA_REL "/shakespeare-4h.gguf", exe_dir);
    for (size_t i = 0; cands[i]; i++) {
        if (cands[i][0] && access(cands[i], R_OK) == 0) {
            snprintf(buf, sizeof buf, "%s", cands[i]);
            return buf;
        }
    }
    return NULL;
}

/* ---- option tables (see cli.h) ------------------------------------------- */

/* v fits: the range was checked against the table, which the type holds. */
static void store_int(const cli_opt *o, long v) {
    switch (o->type) {
    case CLI_T_INT: *(int *)o->dst = (int)v; break;
    case CLI_T_LONG: *(long *)o->dst = v; break;
    case CLI_T_LLONG: *(long long *)o->dst = v; break;
    case CLI_T_ULONG: *(unsigned long *)o->dst = (unsigned long)v; break;
    case CLI_T_ULLONG: *(unsigned long long *)o->dst = (unsigned long long)v; break;
    default: break;
    }
}

int cli_opt_value(const char *cmd, const cli_opt *o, const char *flag, const char *value) {
    long l;
    double d;
    int n;
    switch (o->kind) {
    case CLI_KIND_FLAG:
        store_int(o, o->lo);
        return 0;
    case CLI_KIND_STR:
        *(const char **)o->dst = value;
        return 0;
    case CLI_KIND_INT:
        if (cli_int(cmd, flag, value, o->lo, o->hi, &l)) return -1;
        store_int(o, l);
        return 0;
    case CLI_KIND_FLOAT:
        if (cli_float(cmd, flag, value, o->flo, o->fhi, &d)) return -1;
        if (o->type == CLI_T_FLOAT) *(float *)o->dst = (float)d;
        else *(double *)o->dst = d;
        return 0;
    case CLI_KIND_LIST:
        if ((n = cli_int_list(cmd, flag, value, o->lo, o->hi, o->dst, o->max)) < 0) return -1;
        *o->n = n;
        return 0;
    default:
        return -1;
    }
}

int cli_one_arg(const char *cmd, const cli_opt *o, const char *flag, const char *value) {
    (void)flag;
    const char **dst = o->dst;
    if (*dst) {
        cli_usage(cmd, "more than one %s given (see tinygpt %s --help)", o->name, cmd);
        return -1;
    }
    *dst = value;
    return 0;
}

static const cli_opt *find_opt(const cli_opt *opts, const char *a) {
    for (const cli_opt *o = opts; o->kind != CLI_KIND_END; o++)
        if (o->kind != CLI_KIND_ARGS && (!strcmp(a, o->name) || (o->alt && !strcmp(a, o->alt))))
            return o;
    return NULL;
}

static const cli_opt *find_args(const cli_opt *opts) {
    for (const cli_opt *o = opts; o->kind != CLI_KIND_END; o++)
        if (o->kind == CLI_KIND_ARGS) return o;
    return NULL;
}

/* --list-options: one line per option, "NAME[,ALT] KIND" with KIND flag,
 * string, int, number, list or value, for the bash completion and the
 * tests that keep --help, the man page and the completion in step with the
 * tables. */
static void list_options(const cli_opt *opts) {
    static const char *const kinds[] = {
        [CLI_KIND_FLAG] = "flag", [CLI_KIND_STR] = "string", [CLI_KIND_INT] = "int",
        [CLI_KIND_FLOAT] = "number", [CLI_KIND_LIST] = "list", [CLI_KIND_CALL] = "value",
    };
    for (const cli_opt *o = opts; o->kind != CLI_KIND_END; o++) {
        if (o->kind == CLI_KIND_ARGS) continue;
        /* a callback may replace a kind's conversion; it still takes a value or not */
        printf("%s%s%s %s\n", o->name, o->alt ? "," : "", o->alt ? o->alt : "", kinds[o->kind]);
    }
    printf("-h,--help flag\n");
}

int cli_parse(const char *cmd, void (*help)(FILE *f), const cli_opt *opts, int argc, char **argv) {
    const cli_opt *args = find_args(opts);
    int only_args = 0; /* after "--" */
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = NULL;
        const cli_opt *o = NULL;
        char name[64];
        if (!only_args) {
            if (!strcmp(a, "--")) {
                only_args = 1;
                continue;
            }
            if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
                help(stdout);
                return EXIT_OK;
            }
            if (!strcmp(a, "--list-options")) {
                list_options(opts);
                return EXIT_OK;
            }
            const char *eq = a[0] == '-' && a[1] == '-' ? strchr(a, '=') : NULL;
            if (eq && (size_t)(eq - a) < sizeof name) { /* --opt=value */
                memcpy(name, a, (size_t)(eq - a));
                name[eq - a] = 0;
                if ((o = find_opt(opts, name)) && o->kind == CLI_KIND_FLAG)
                    return cli_usage(cmd, "%s takes no value (given '%s')", name, a);
                if (o) {
                    a = name;
                    v = eq + 1;
                }
            } else {
                o = find_opt(opts, a);
            }
        }
        if (!o) {
            int r = 1;
            if (args && (only_args || a[0] != '-' || !a[1]) && (r = args->call(cmd, args, NULL, a)) < 0)
                return EXIT_USAGE;
            if (r > 0 && only_args)
                return cli_usage(cmd, "unexpected argument '%s' (see tinygpt %s --help)", a, cmd);
            if (r > 0) return cli_usage(cmd, "unknown option '%s' (see tinygpt %s --help)", a, cmd);
            continue;
        }
        if (o->kind != CLI_KIND_FLAG && !v && !(v = cli_value(cmd, argc, argv, &i))) return EXIT_USAGE;
        if (o->seen) ++*o->seen;
        if ((o->call ? o->call(cmd, o, a, v) : cli_opt_value(cmd, o, a, v)) < 0) return EXIT_USAGE;
    }
    return CLI_RUN;
}
