/* cmd_convert.c — `tinygpt convert PATH -o OUT.gguf [--dtype f32|f16|bf16|q8_0|q4_0]
 * [--tokenizer PATH]`: any model tinygpt loads (a Hugging Face GPT-2 or Llama
 * folder, a llama2.c checkpoint, a GGUF) to a GGUF of its architecture, as
 * llama.cpp names and lays it out (Llama: Q/K rows in adjacent-pair order,
 * permuted from Hugging Face's halves as llama.cpp's converter does). */
#include <stdio.h>
#include <string.h>

#include "tools/cli.h"
#include "weights/gpt2.h"
#include "weights/model.h"

static const char *usage_text =
    "usage: tinygpt convert MODEL -o OUT.gguf [--dtype TYPE] [--tokenizer PATH]\n"
    "  MODEL               a Hugging Face GPT-2 folder (config.json,\n"
    "                      model.safetensors, vocab.json, merges.txt) or Llama\n"
    "                      folder (config.json, model.safetensors, tokenizer.json),\n"
    "                      a llama2.c checkpoint (.bin, ak42 v1/v2), or a GGUF file\n"
    "                      to re-encode\n"
    "  -o, --output OUT    the GGUF file to write (required)\n"
    "  --dtype TYPE        how the matrices are stored: f32|f16|bf16|q8_0|q4_0\n"
    "                      (default f32; vectors and position_embd stay f32)\n"
    "  --tokenizer PATH    the vocabulary to write: llama2.c tokenizer.bin, GGUF,\n"
    "                      tokenizer.json or Hugging Face folder (a llama2.c\n"
    "                      checkpoint holds none, so it needs one)\n"
    "  --no-check          do not scan the weights for NaN/inf at load\n"
    "                      (they are copied as they are)\n";

static void help(FILE *f) { fputs(usage_text, f); }

int cmd_convert(int argc, char **argv) {
    const char *in = NULL, *out = NULL, *dtype_s = "f32", *tok = NULL;
    int no_check = 0;
    const cli_opt opts[] = {
        {CLI_STR("-o", "--output", &out)},
        {CLI_STR("--dtype", NULL, &dtype_s)},
        {CLI_FLAG("--no-check", NULL, &no_check, 1)},
        {CLI_STR("--tokenizer", NULL, &tok)},
        {CLI_ONE_ARG("input", &in)},
        {0},
    };
    int parsed = cli_parse("convert", help, opts, argc, argv);
    if (parsed != CLI_RUN) return parsed;
    if (!in || !out) return cli_usage("convert", "an input and -o OUT.gguf are required (see tinygpt convert --help)");
    tg_dtype dtype;
    if (tg_dtype_parse(dtype_s, &dtype))
        return cli_usage("convert", "--dtype must be f32, f16, bf16, q8_0 or q4_0, not '%s'", dtype_s);
    int oc = cli_out_check("convert", "-o", out);
    if (!oc) oc = cli_out_not_input("convert", "-o", out, "MODEL", in);
    if (!oc) oc = cli_out_not_input("convert", "-o", out, "--tokenizer", tok);
    if (oc) return oc;

    tg_err err = {{0}};
    tg_model m;
    if (tg_model_load(&m, in, no_check ? TG_LOAD_NO_CHECK : 0, &err))
        return cli_error("convert", "%s", err.msg);
    if (tok) {
        tg_vocab v;
        if (tg_vocab_load(&v, tok, &err)) {
            tg_model_free(&m);
            return cli_error("convert", "--tokenizer: %s", err.msg);
        }
        tg_vocab_free(&m.vocab);
        m.vocab = v;
    }
    int llama = m.cfg.arch == TG_ARCH_LLAMA;
    if (llama && !m.vocab.n_tokens) {
        tg_model_free(&m);
        return cli_error("convert", "%s holds no vocabulary: give one with --tokenizer (llama2.c: tokenizer.bin)", in);
    }
    tg_status s = llama ? tg_llama_save(out, &m.cfg, &m.llama, &m.vocab, (int)dtype, &err)
                        : tg_gpt2_save(out, &m.cfg, &m.w, &m.vocab, dtype, &err);
    size_t n = tg_model_n_params(&m);
    tg_model_free(&m);
    if (s) return cli_error("convert", "%s", err.msg);
    fprintf(stderr, "tinygpt convert: wrote %s (%zu parameters, %s)\n", out, n, dtype_s);
    return EXIT_OK;
}
