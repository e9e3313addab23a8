/* main.c — `tinygpt COMMAND ...`: dispatch to the subcommands, the global
 * help and --version. */
#include <stdio.h>
#include <string.h>

#include "engine/engine.h"
#include "tools/cli.h"
#include "tools/version.h"

/* The compiler that built this binary ("gcc 12.2.0"; clang's __VERSION__ names itself). */
#if defined(__GNUC__) && !defined(__clang__)
#define COMPILER "gcc " __VERSION__
#else
#define COMPILER __VERSION__
#endif

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *help;
} command;

static const command commands[] = {
    {"generate", cmd_generate, "generate text from a prompt"},
    {"eval", cmd_eval, "score a text: nats/token, perplexity, nats/byte"},
    {"tokenize", cmd_tokenize, "print the token ids of a text"},
    {"inspect", cmd_inspect, "describe a model file or folder"},
    {"convert", cmd_convert, "convert a Hugging Face folder or llama2.c checkpoint to GGUF"},
    {"init", cmd_init, "write a randomly initialised GPT-2 or Llama"},
    {"quantize", cmd_quantize, "rewrite a model's matrices as f16/bf16/q8_0/q4_0"},
    {"train", cmd_train, "train a GPT-2 or a Llama on a text file"},
    {"bench", cmd_bench, "prompt and generation throughput"},
    {"profile", cmd_profile, "where a forward pass spends its time"},
    {"compare", cmd_compare, "compare two checkpoints (single vs multi-head)"},
    {"attention", cmd_attention, "show what each head attends to"},
    {"serve", cmd_serve, "serve the API and the page over HTTP (OpenAI-style)"},
    {"task", cmd_task, "show a synthetic task's sequences (train --task, eval --task)"},
};
enum { N_COMMANDS = sizeof commands / sizeof commands[0] };

static void usage(FILE *f) {
    fprintf(f, "usage: tinygpt COMMAND [options]\n"
               "       tinygpt help [COMMAND]   tinygpt --version\n\ncommands:\n");
    for (size_t i = 0; i < N_COMMANDS; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].help);
    fputs("\n"
          "every command takes -h/--help (its options, ranges and defaults; also\n"
          "`tinygpt help COMMAND`), --opt=value as well as --opt value, and -- to end\n"
          "the options; --list-options prints its options for scripts (bash completion).\n"
          "\n"
          "environment:\n"
          "  TINYGPT_MODEL  the model when -m is not given (default: the shipped\n"
          "                 shakespeare-4h.gguf, see tinygpt --version)\n"
          "  TINYGPT_ISA    scalar|avx2|avx512|neon: the kernels to use when --isa is\n"
          "                 not given (default: the best this CPU supports)\n"
          "  TINYGPT_CPU_MASK  optional CPU features to ignore, comma-separated:\n"
          "                 f16c, avx_vnni, avx512_vnni, avx512_bf16, avx512_fp16,\n"
          "                 dotprod, fp16, amx_tile (all of AMX), amx_int8, amx_bf16, or\n"
          "                 all (default: none); tinygpt --version lists those in use\n"
          "\n"
          "exit status: 0 success, 1 runtime error (a bad file, a prompt longer than the\n"
          "context, an unwritable output), 2 usage error; each error is one line on\n"
          "stderr naming the problem. Outputs are written to a temporary file and\n"
          "renamed into place; an output that is one of the inputs is refused.\n"
          "See man tinygpt.\n",
          f);
}

static void print_isas(const char *what, int (*has)(tg_isa)) {
    printf("%s:", what);
    for (int i = 0; i < TG_ISA_COUNT; i++)
        if (has((tg_isa)i)) printf(" %s", tg_isa_name((tg_isa)i));
    putchar('\n');
}

static int version(void) {
    const char *model = cli_default_model();
    printf("tinygpt %s\n", TINYGPT_VERSION);
    printf("git revision: %s\n", TINYGPT_GIT_REVISION);
    printf("compiler: %s\n", COMPILER);
    print_isas("ISAs compiled in", tg_isa_compiled);
    print_isas("this CPU supports", tg_isa_supported);
    printf("best ISA: %s\n", tg_isa_name(tg_isa_best()));
    /* the optional instructions detected (cpuid + XGETBV + the OS's
     * permission for AMX), less those named in $TINYGPT_CPU_MASK */
    printf("CPU features:");
    int any = 0;
    for (int f = 0; f < TG_CPU_FEATURE_COUNT; f++)
        if (tg_cpu_has((tg_cpu_feature)f)) printf(" %s", tg_cpu_feature_name((tg_cpu_feature)f)), any = 1;
    printf("%s\n", any ? "" : " (none)");
    printf("default model: %s\n", model ? model : "(none found)");
    return EXIT_OK; /* main checks stdout */
}

static const command *find(const char *name) {
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (!strcmp(name, commands[i].name)) return &commands[i];
    return NULL;
}

/* Every command's standard output is checked here, after it returns, so none
 * can forget: a full disk or a closed pipe is exit 1, not a silent 0. */
static int check_stdout(const char *cmd, int rc) {
    if (rc == EXIT_OK) return cli_stdout_check(cmd);
    fflush(stdout); /* already failed and said why */
    return rc;
}

int main(int argc, char **argv) {
    cli_start();
    if (argc < 2) {
        usage(stderr);
        return EXIT_USAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
        (!strcmp(argv[1], "help") && argc == 2)) {
        usage(stdout);
        return check_stdout(NULL, EXIT_OK);
    }
    if (!strcmp(argv[1], "help")) {
        const command *c = find(argv[2]);
        if (argc > 3) return cli_usage(NULL, "help takes one COMMAND (see tinygpt help)");
        if (!c) return cli_usage(NULL, "help: unknown command '%s' (see tinygpt help)", argv[2]);
        static char help_flag[] = "--help";
        char *hargv[] = {argv[2], help_flag, NULL};
        return check_stdout(c->name, c->run(2, hargv));
    }
    if (!strcmp(argv[1], "--version")) return check_stdout(NULL, version());
    const command *c = find(argv[1]);
    if (c) return check_stdout(c->name, c->run(argc - 1, argv + 1));
    fprintf(stderr, "tinygpt: unknown command '%s' (see tinygpt --help)\n", argv[1]);
    return EXIT_USAGE;
}
