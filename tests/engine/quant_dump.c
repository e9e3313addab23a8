/* quant_dump.c — the engine's reference encoders and decoders on files, for
 * quant_oracle.py (which checks them against numpy):
 *   quant_dump enc TYPE IN.f32 OUT.bin   f32 values -> bytes of TYPE
 *   quant_dump dec TYPE IN.bin OUT.f32   bytes of TYPE -> f32 values
 * TYPE is f32|f16|bf16|q8_0|q4_0; a row is the whole file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"

static void *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *b = malloc(len > 0 ? (size_t)len : 1);
    *n = b && fread(b, 1, (size_t)len, f) == (size_t)len ? (size_t)len : 0;
    fclose(f);
    return b;
}

int main(int argc, char **argv) {
    tg_wtype t;
    if (argc != 5 || tg_wtype_parse(argv[2], &t) != TG_OK) {
        fprintf(stderr, "usage: quant_dump enc|dec TYPE IN OUT\n");
        return 2;
    }
    size_t n_in;
    void *in = slurp(argv[3], &n_in);
    if (!in) return 1;
    int enc = !strcmp(argv[1], "enc");
    int n = 0;
    if (enc) {
        n = (int)(n_in / 4);
    } else {
        size_t blk = tg_wtype_row_bytes(t, tg_wtype_block(t));
        n = (int)(n_in / blk) * tg_wtype_block(t);
    }
    size_t out_bytes = enc ? tg_wtype_row_bytes(t, n) : (size_t)n * 4;
    void *out = malloc(out_bytes ? out_bytes : 1);
    if (enc) tg_quantize_row(t, out, in, n);
    else tg_dequantize_row(t, out, in, n);
    FILE *f = fopen(argv[4], "wb");
    int ok = f && fwrite(out, 1, out_bytes, f) == out_bytes;
    if (f) ok &= fclose(f) == 0;
    free(in);
    free(out);
    return ok ? 0 : 1;
}
