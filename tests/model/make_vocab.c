/* make_vocab.c — test helper: trains a byte-level BPE vocabulary on a text
 * and writes it as a vocabulary-only gpt2 GGUF.
 * usage: make_vocab TEXT N OUT.gguf */
#include <stdio.h>
#include <stdlib.h>

#include "model/bpe_train.h"
#include "weights/gpt2.h"

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: make_vocab TEXT N OUT.gguf\n");
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    if (!f) {
        perror(argv[1]);
        return 1;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc((size_t)n + 1);
    size_t got = fread(text, 1, (size_t)n, f);
    fclose(f);
    tg_vocab v;
    tg_err err = {{0}};
    tg_gpt2_config cfg = {0};
    if (tg_bpe_train(text, got, atoi(argv[2]), &v, &err) ||
        tg_gpt2_save(argv[3], &cfg, NULL, &v, TG_DTYPE_F32, &err)) {
        fprintf(stderr, "make_vocab: %s\n", err.msg);
        return 1;
    }
    tg_vocab_free(&v);
    free(text);
    return 0;
}
