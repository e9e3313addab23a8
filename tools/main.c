/* main.c — `tinygpt COMMAND ...`: dispatch to the subcommands. */
#include <stdio.h>
#include <string.h>

#include "tools/cli.h"

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
    {"convert", cmd_convert, "convert a Hugging Face GPT-2 folder to GGUF"},
    {"init", cmd_init, "write a randomly initialised GPT-2"},
    {"train", cmd_train, "train a GPT-2 on a text file"},
    {"bench", cmd_bench, "prompt and generation throughput"},
    {"profile", cmd_profile, "where a forward pass spends its time"},
    {"compare", cmd_compare, "compare two checkpoints (single vs multi-head)"},
    {"attention", cmd_attention, "show what each head attends to"},
    {"task", cmd_task, "show a synthetic task's sequences (train --task, eval --task)"},
};

static void usage(FILE *f) {
    fprintf(f, "usage: tinygpt COMMAND [options]   (tinygpt COMMAND --help for its options)\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].help);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return EXIT_USAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return EXIT_OK;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("tinygpt %s\n", TINYGPT_VERSION);
        return EXIT_OK;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name)) return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "tinygpt: unknown command '%s' (see tinygpt --help)\n", argv[1]);
    return EXIT_USAGE;
}
