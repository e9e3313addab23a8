/* cmd_quantize.c — `tinygpt quantize IN OUT --type T [--keep-output T]`: a
 * GGUF (or Hugging Face folder, or llama2.c checkpoint), GPT-2 or Llama,
 * rewritten with its matrices in another weight type. Tokenizer and
 * metadata are kept; 1-D tensors stay f32 and so does GPT-2's
 * position_embd for the block types (llama.cpp's convention); a Llama
 * matrix whose rows are not a multiple of 32 stays f16 for the block types
 * (stories260K's feed-forward is 172 wide); the output is written to a
 * temporary file and renamed into place. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cli.h"
#include "weights/gguf.h"
#include "weights/gpt2.h"
#include "weights/model.h"
#include "weights/vocab.h"

static void help(FILE *f) {
    fputs("usage: tinygpt quantize IN OUT --type f32|f16|bf16|q8_0|q4_0\n"
          "                        [--keep-output TYPE]\n"
          "\n"
          "Rewrites a GPT-2 or Llama model IN (GGUF, Hugging Face folder, llama2.c\n"
          "checkpoint with --tokenizer) as the GGUF OUT with its weight matrices in\n"
          "--type (ggml's layouts, so llama.cpp reads the file):\n"
          "  --type TYPE         the matrices' type\n"
          "  --keep-output TYPE  output.weight (the LM head) in TYPE instead\n"
          "                      (default: --type); a tied Llama has none: token_embd, its\n"
          "                      LM head, takes TYPE\n"
          "  --tokenizer PATH    the vocabulary to write (a llama2.c file holds none)\n"
          "1-D tensors stay f32, and position_embd too for q8_0/q4_0. For q8_0/q4_0 a\n"
          "Llama matrix whose rows are not a multiple of 32 stays f16. The tokenizer and\n"
          "the other metadata are copied. Prints the sizes before and after.\n",
          f);
}

typedef struct paths {
    const char *p[2];
    int n;
} paths;

static int take_path(const char *cmd, const cli_opt *o, const char *flag, const char *value) {
    (void)o, (void)flag;
    paths *ps = o->dst;
    if (ps->n == 2) return cli_usage(cmd, "more than two paths given (IN OUT)"), -1;
    ps->p[ps->n++] = value;
    return 0;
}

/* bytes of the matrices (as held) and of everything */
static size_t gpt2_bytes(const tg_gpt2_model *m, size_t *matrices) {
    const tg_gpt2_weights *w = &m->w;
    const tg_gpt2_config *c = &m->cfg;
    size_t mat = (size_t)w->wte.rows * w->wte.row_bytes;
    if (!w->tied) mat += (size_t)w->lm_head.rows * w->lm_head.row_bytes;
    for (int l = 0; l < c->n_layer; l++) {
        const tg_gpt2_layer *y = &w->layers[l];
        const tg_weight *v[4] = {&y->qkv_w, &y->proj_w, &y->up_w, &y->down_w};
        for (int k = 0; k < 4; k++) mat += (size_t)v[k]->rows * v[k]->row_bytes;
    }
    size_t E = (size_t)c->n_embd, F = (size_t)c->n_ff;
    size_t vec = (size_t)c->n_layer * (4 * E + 3 * E + E + F + E) + 2 * E + (size_t)c->n_ctx * E;
    *matrices = mat;
    return mat + 4 * vec;
}

static size_t llama_bytes(const tg_model *m, size_t *matrices) {
    const tg_llama_weights *w = &m->llama;
    size_t mat = (size_t)w->tok_embd.rows * w->tok_embd.row_bytes;
    if (!w->tied) mat += (size_t)w->output.rows * w->output.row_bytes;
    for (int l = 0; l < m->cfg.n_layer; l++) {
        const tg_llama_layer *y = &w->layers[l];
        const tg_weight *v[7] = {&y->wq, &y->wk, &y->wv, &y->wo, &y->w1, &y->w3, &y->w2};
        for (int k = 0; k < 7; k++) mat += (size_t)v[k]->rows * v[k]->row_bytes;
    }
    *matrices = mat;
    return mat + 4 * (size_t)m->cfg.n_embd * (2 * (size_t)m->cfg.n_layer + 1); /* the RMSNorm gains */
}

static size_t model_bytes(const tg_model *m, size_t *matrices) {
    return m->cfg.arch == TG_ARCH_LLAMA ? llama_bytes(m, matrices) : gpt2_bytes(m, matrices);
}

int cmd_quantize(int argc, char **argv) {
    const char *type_s = NULL, *out_s = NULL, *tok_s = NULL;
    paths ps = {{NULL, NULL}, 0};
    const cli_opt opts[] = {
        {CLI_STR("--type", NULL, &type_s)},
        {CLI_STR("--keep-output", NULL, &out_s)},
        {CLI_STR("--tokenizer", NULL, &tok_s)},
        {CLI_ARGS(take_path, &ps)},
        {0},
    };
    int parsed = cli_parse("quantize", help, opts, argc, argv);
    if (parsed != CLI_RUN) return parsed;
    if (ps.n != 2) return cli_usage("quantize", "IN and OUT are required (see tinygpt quantize --help)");
    if (!type_s) return cli_usage("quantize", "--type is required (f32, f16, bf16, q8_0 or q4_0)");
    tg_dtype dt, odt;
    if (tg_dtype_parse(type_s, &dt))
        return cli_usage("quantize", "--type must be f32, f16, bf16, q8_0 or q4_0, not '%s'", type_s);
    odt = dt;
    if (out_s && tg_dtype_parse(out_s, &odt))
        return cli_usage("quantize", "--keep-output must be f32, f16, bf16, q8_0 or q4_0, not '%s'", out_s);
    int oc = cli_out_check("quantize", "OUT", ps.p[1]); /* before any work, as convert's -o */
    if (!oc) oc = cli_out_not_input("quantize", "OUT", ps.p[1], "IN", ps.p[0]);
    if (!oc) oc = cli_out_not_input("quantize", "OUT", ps.p[1], "--tokenizer", tok_s);
    if (oc) return oc;

    tg_err err = {{0}};
    tg_model m;
    if (tg_model_load(&m, ps.p[0], 0, &err)) return cli_error("quantize", "%s", err.msg);
    int llama = m.cfg.arch == TG_ARCH_LLAMA;
    if (tok_s) {
        tg_vocab v;
        if (tg_vocab_load(&v, tok_s, &err)) {
            tg_model_free(&m);
            return cli_error("quantize", "--tokenizer: %s", err.msg);
        }
        tg_vocab_free(&m.vocab);
        m.vocab = v;
    }
    if (llama && !m.vocab.n_tokens) {
        tg_model_free(&m);
        return cli_error("quantize", "%s holds no vocabulary: give one with --tokenizer (llama2.c: tokenizer.bin)",
                         ps.p[0]);
    }
    const tg_vocab *vocab = &m.vocab;
    size_t mat_in, all_in = model_bytes(&m, &mat_in);
    tg_gguf_writer *gw = NULL;
    int n_fallback = 0;
    tg_status s = tg_gguf_writer_new(&gw, &err);
    /* the source's own keys first; the architecture's writer then sets
     * (replaces) the config, tokenizer and general.file_type */
    const tg_gguf *src = tg_gpt2_gguf(&m);
    for (int64_t i = 0; !s && src && i < tg_gguf_n_kv(src); i++) {
        const tg_gguf_kv *kv = tg_gguf_kv_at(src, i);
        if (!strcmp(kv->key, "general.alignment")) continue;
        if (tok_s && !strncmp(kv->key, "tokenizer.", 10)) continue; /* replaced whole */
        s = tg_gguf_set_kv_from(gw, src, kv, &err);
    }
    if (!s && llama)
        s = tg_llama_to_gguf_ex(gw, &m.cfg, &m.llama, vocab, dt, odt, TG_WRITE_F16_FALLBACK, &n_fallback,
                                &err);
    else if (!s)
        s = tg_gpt2_to_gguf_ex(gw, &m.cfg, &m.w, vocab, dt, odt, TG_WRITE_F16_FALLBACK, &n_fallback, &err);
    if (!s) s = tg_gguf_write(gw, ps.p[1], &err);
    tg_gguf_writer_free(gw);
    tg_model_free(&m);
    if (s) return cli_error("quantize", "%s", err.msg);
    tg_model q;
    if (tg_model_load(&q, ps.p[1], 0, &err)) return cli_error("quantize", "reading back %s: %s", ps.p[1], err.msg);
    size_t mat_out, all_out = model_bytes(&q, &mat_out);
    tg_model_free(&q);
    printf("quantize: %s -> %s (%s%s%s)\n", ps.p[0], ps.p[1], type_s, out_s ? ", output " : "", out_s ? out_s : "");
    printf("  matrices  %10.2f MB -> %10.2f MB (%.2fx)\n", mat_in * 1e-6, mat_out * 1e-6,
           mat_out ? (double)mat_in / mat_out : 0.0);
    printf("  weights   %10.2f MB -> %10.2f MB (%.2fx)\n", all_in * 1e-6, all_out * 1e-6,
           all_out ? (double)all_in / all_out : 0.0);
    if (n_fallback)
        printf("  %d matri%s kept in f16: rows not a multiple of 32, %s's block\n", n_fallback,
               n_fallback == 1 ? "x" : "ces", type_s);
    return EXIT_OK;
}
