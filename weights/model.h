/* model.h — the generic loaded checkpoint and the one loader every command
 * calls: it detects the format and the architecture, runs the reader and
 * hands the result to that architecture's binding.
 *
 *   tg_model     config (cfg.arch says which), the architecture's weights
 *                (m->w for gpt2, m->llama for llama), the vocabulary, and
 *                ownership of every byte behind them (free: tg_model_free).
 *
 * Formats, by inspecting `path`:
 *   a folder                        Hugging Face: LlamaForCausalLM
 *                                   (tg_hf_is_llama: hf_llama.c), else GPT-2 (hf.c)
 *   a llama2.c checkpoint           wt_llama2c_probe (llama_load.c): ak42, or
 *                                   a legacy header agreeing with the size
 *   anything else                   GGUF; general.architecture = gpt2 | llama
 *                                   (or "not a GGUF file", with why it is
 *                                   not a llama2.c file either)
 */
#ifndef TINYGPT_WEIGHTS_MODEL_H
#define TINYGPT_WEIGHTS_MODEL_H

#include "weights/config.h"
#include "weights/gpt2.h"   /* struct tg_model, tg_vocab, TG_LOAD_* flags */
#include "weights/llama.h"

typedef struct tg_model tg_model;

/* Loads any checkpoint (see above); flags TG_LOAD_*. On failure m is empty
 * (safe to free) and err names the file and the problem. */
tg_status tg_model_load(tg_model *m, const char *path, int flags, tg_err *err);
void tg_model_free(tg_model *m);

/* What every format needs at least: a regular file of `size` bytes under 4
 * (no format's magic or header fits) is TG_ERR_FORMAT with one line naming
 * what a model can be (a GGUF file, a llama2.c .bin checkpoint, a Hugging
 * Face folder); TG_OK otherwise. tg_model_load checks it first; callers that
 * read a file's format themselves (inspect) call it for the same words. */
tg_status tg_model_check_size(const char *path, unsigned long long size, tg_err *err);

/* Parameters of the loaded architecture (the classifier counted only when untied). */
size_t tg_model_n_params(const tg_model *m);
/* Is the classifier tied to the token embedding? */
int tg_model_tied(const tg_model *m);

#endif
