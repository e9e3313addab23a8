/* run.c — load a model for a command (see run.h). */
#include "tools/run.h"

#include <string.h>
#include <time.h>

#include "tools/cli.h"

double run_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static const char *vocab_kind(const tg_vocab *v) {
    return v->kind == TG_VOCAB_SPM ? "SentencePiece-style BPE" : "gpt2 byte-level BPE";
}

int run_use_tokenizer(const char *cmd, tg_vocab *vocab, const char *path, const char *model_path, int n_vocab) {
    if (!path) return EXIT_OK;
    tg_vocab v;
    tg_err err = {{0}};
    if (tg_vocab_load(&v, path, &err)) return cli_error(cmd, "--tokenizer: %s", err.msg);
    /* Another model's tokenizer runs without complaint and makes garbage:
     * it must be the model's own kind and size (the model's own tokenizer,
     * or for a checkpoint without one, as many tokens as it has ids, as
     * llama2.c reads them and as convert writes them). */
    const char *why = NULL;
    char msg[160];
    if (n_vocab > 0 && vocab->n_tokens > 0 && (v.kind != vocab->kind || v.n_tokens != vocab->n_tokens)) {
        snprintf(msg, sizeof msg, "%d tokens of %s, but the model's own tokenizer has %d of %s", v.n_tokens,
                 vocab_kind(&v), vocab->n_tokens, vocab_kind(vocab));
        why = msg;
    } else if (n_vocab > 0 && !vocab->n_tokens && v.n_tokens != n_vocab) {
        snprintf(msg, sizeof msg, "%d tokens, but the model has %d token ids", v.n_tokens, n_vocab);
        why = msg;
    }
    if (why) {
        tg_vocab_free(&v);
        return cli_error(cmd, "--tokenizer: %s: %s: not a tokenizer of %s", path, why, model_path);
    }
    tg_vocab_free(vocab);
    *vocab = v;
    return EXIT_OK;
}

int run_need_vocab(const char *cmd, const char *path, const tg_vocab *vocab, int has_tokenizer_opt) {
    if (vocab->n_tokens > 0) return EXIT_OK;
    return cli_error(cmd, "%s holds no tokenizer (llama2.c keeps it in tokenizer.bin, Hugging Face in tokenizer.json): %s",
                     path, has_tokenizer_opt ? "pass --tokenizer PATH (a tokenizer.bin, tokenizer.json or GGUF)"
                                       : "convert it to GGUF with its tokenizer (tinygpt convert --tokenizer)");
}

int run_kv_type(const char *cmd, const char *name, tg_wtype *out) {
    *out = TG_WTYPE_F32;
    if (!name || !strcmp(name, "f32")) return EXIT_OK;
    if (!strcmp(name, "f16")) {
        *out = TG_WTYPE_F16;
        return EXIT_OK;
    }
    return cli_usage(cmd, "--kv-type: '%s' is not one of f32, f16", name);
}

int run_open(run_ctx *rc, const char *cmd, const char *model_path, const run_opts *o) {
    memset(rc, 0, sizeof *rc);
    rc->eos = -1;
    tg_isa isa;
    if (o->isa && tg_isa_parse(o->isa, &isa) != TG_OK)
        return cli_usage(cmd, "--isa: '%s' is not one of scalar, avx2, avx512, neon", o->isa);
    tg_wtype kv_type;
    int kc = run_kv_type(cmd, o->kv_type, &kv_type);
    if (kc != EXIT_OK) return kc;
    if (!model_path && !(model_path = cli_default_model()))
        return cli_error(cmd,
                         "no model given and the default model weights/shakespeare-4h.gguf "
                         "is not there yet (it is trained by `tinygpt train`); pass -m MODEL: "
                         "a GGUF file, a Hugging Face GPT-2 or Llama folder, or a llama2.c "
                         "checkpoint (with --tokenizer), or set $TINYGPT_MODEL");
    rc->model_path = model_path;
    tg_err err = {{0}};
    /* --isa, $TINYGPT_ISA and $TINYGPT_CPU_MASK before the model loads: a
     * usage error of its own, not one about the model file */
    tg_isa isa_sel;
    if (tg_isa_select(o->isa, &isa_sel, &err)) return cli_usage(cmd, "%s", err.msg);
    if (tg_model_load(&rc->model, model_path, o->no_check ? TG_LOAD_NO_CHECK : 0, &err)) {
        memset(&rc->model, 0, sizeof rc->model);
        return cli_error(cmd, "%s", err.msg);
    }
    int rt = run_use_tokenizer(cmd, &rc->model.vocab, o->tokenizer, model_path, rc->model.cfg.n_vocab);
    if (rt != EXIT_OK) {
        run_close(rc);
        return rt;
    }
    int C = rc->model.cfg.n_ctx;
    if (o->n_ctx > C) {
        run_close(rc);
        return cli_usage(cmd, "--ctx: %d is outside [%d, %d] (the context of %s)", o->n_ctx,
                         o->ctx_min > 0 ? o->ctx_min : 1, C, model_path);
    }
    if ((rt = run_need_vocab(cmd, model_path, &rc->model.vocab, !o->no_tokenizer_opt)) != EXIT_OK) {
        run_close(rc);
        return rt;
    }
    if (tg_tokenizer_create(&rc->tok, &rc->model.vocab, &err)) {
        run_close(rc);
        return cli_error(cmd, "%s: %s", o->tokenizer ? o->tokenizer : model_path, err.msg);
    }
    /* A model may pad its vocabulary past the tokenizer's (ids without a
     * piece print nothing), but every id the tokenizer makes must exist. */
    int nt = tg_tokenizer_n_vocab(rc->tok), V = rc->model.cfg.n_vocab;
    if (nt > V) {
        run_close(rc);
        return cli_error(cmd, "%s: the tokenizer has %d tokens but the model only %d",
                         o->tokenizer ? o->tokenizer : model_path, nt, V);
    }
    rc->eos = tg_tokenizer_eos(rc->tok);
    if (rc->eos < 0) rc->eos = tg_tokenizer_token_id(rc->tok, "<|endoftext|>");
    tg_gpt_opts go = {o->n_threads, o->isa, o->n_ctx, kv_type};
    if (tg_gpt_create(&rc->gpt, &rc->model, &go, &err)) {
        run_close(rc);
        return cli_error(cmd, "%s: %s", model_path, err.msg);
    }
    return EXIT_OK;
}

void run_close(run_ctx *rc) {
    tg_gpt_free(rc->gpt);
    tg_tokenizer_free(rc->tok);
    tg_gpt2_free(&rc->model);
    memset(rc, 0, sizeof *rc);
    rc->eos = -1;
}
