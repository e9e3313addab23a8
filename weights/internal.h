/* internal.h — what the files of weights/ share and nobody else needs. */
#ifndef TINYGPT_WEIGHTS_INTERNAL_H
#define TINYGPT_WEIGHTS_INTERNAL_H

#include <stddef.h>

#include "weights/gguf.h"
#include "weights/gpt2.h"

/* tg_gpt2_model.priv: whatever the weight pointers point into. */
/* tg_model.priv of every architecture and reader (the name is historical). */
typedef struct gpt2_store {
    tg_gguf *gguf;       /* kept mapped: aligned F32 tensors are used in place */
    float **bufs;        /* converted or transposed tensors we allocated */
    size_t n_bufs, cap_bufs;
    void *reader;        /* another reader's handle the views point into
                            (llama2.c file, HF Llama folder), or NULL */
    void (*reader_close)(void *reader); /* frees it with the model */
} gpt2_store;

/* Allocates n floats owned by the store (freed with the model). */
float *store_alloc(gpt2_store *st, size_t n);

/* Reads a whole regular file; NULL + err on failure (a directory, a missing
 * file, more than max bytes). The buffer is NUL-terminated. */
char *wt_read_file(const char *path, size_t max, size_t *len, tg_err *err);

/* cJSON parse of exactly n bytes; NULL if invalid or followed by anything
 * but whitespace. */
struct cJSON;
struct cJSON *wt_json_parse(const char *s, size_t n);
/* A JSON object from n bytes with hf.c's checks (no \u0000 in a string, no
 * key twice); path names it in errors. */
tg_status wt_json_object(const char *txt, size_t len, const char *path, struct cJSON **out, tg_err *err);

/* GPT-2's byte→unicode table: the UTF-8 of the code point byte b maps to
 * (at most 2 bytes + NUL). */
void gpt2_byte_token(int b, char out[3]);

/* One tensor of the gpt2 layout: its GGUF name, numpy-order shape, and the
 * weights field it fills. */
typedef struct gpt2_slot {
    char name[48];
    int n_dims;
    int64_t shape[2];    /* numpy order: [rows, cols] or [n] */
    const float **dst;   /* the f32 field it fills, or NULL for a matrix: */
    tg_weight *wdst;     /* the typed view it fills */
    int layer;           /* -1 outside the blocks */
    const char *part;    /* the name without "blk.N." */
} gpt2_slot;

/* Fills slots (at least gpt2_n_slots(cfg) of them), output.weight last.
 * Returns the count. */
int gpt2_n_slots(const tg_gpt2_config *cfg);
int gpt2_slots(const tg_gpt2_config *cfg, tg_gpt2_weights *w, gpt2_slot *slots);
/* Points a slot at f32 data (a contiguous view for a matrix). */
void gpt2_slot_set_f32(const gpt2_slot *s, const float *data);
/* The slot's current data (a matrix's view data), or NULL. */
const void *gpt2_slot_data(const gpt2_slot *s);

/* The GGUF path of tg_gpt2_load over a caller-owned buffer (fuzzing);
 * flags: TG_LOAD_*. */
tg_status gpt2_load_gguf_buffer(tg_gpt2_model *m, const void *buf, size_t len, int flags, tg_err *err);

/* Binds an open GGUF (in m->priv's store) by its general.architecture:
 * gpt2 (gpt2.c) or llama (llama.c); flags: TG_LOAD_*. */
tg_status wt_bind_gguf(tg_gpt2_model *m, const char *path, int flags, tg_err *err);
tg_status gpt2_bind_gguf(tg_gpt2_model *m, const char *path, int flags, tg_err *err);
tg_status llama_bind_gguf(tg_gpt2_model *m, const char *path, int flags, tg_err *err);

/* tokenizer.ggml.* -> v (gpt2.c; the vocabulary readers of every
 * tokenizer.ggml.model hang off it). required: a missing tokenizer is an
 * error, else an empty vocabulary. */
tg_status wt_vocab_from_gguf(tg_vocab *v, const tg_gguf *g, const char *path, int required,
                             tg_err *err);
/* tokenizer.ggml.* <- v (the writer side of the same). */
/* The type a matrix with rows of `cols` is written in, by both writers:
 * dt, or F16 when dt is a 32-block type (Q8_0, Q4_0) the rows do not divide
 * into and the caller allows the fallback (counted in *n, may be NULL). */
int wt_pick_dtype(int dt, int cols, int fallback, int *n);
tg_status wt_vocab_to_gguf(struct tg_gguf_writer *gw, const tg_vocab *v, tg_err *err);

/* Loads a Hugging Face GPT-2 folder into m (hf.c); flags: TG_LOAD_*. */
tg_status hf_load(tg_gpt2_model *m, const char *dir, int flags, tg_err *err);

/* The load-time finiteness check of one tensor of GGML type `type`
 * (weights/finite.h): TG_ERR_NUMERIC naming path, the tensor and the first
 * bad index. The one place the loaders call it from, per tensor. */
tg_status gpt2_check_finite(uint32_t type, const void *data, uint64_t n, const char *path,
                            const char *name, tg_err *err);

/* The parsers behind tg_vocab_load_hf and the folder's config.json, on
 * bytes in memory (dir and path only name them in errors; fuzzing). */
tg_status hf_vocab_parse(tg_vocab *v, const char *vocab_json, size_t vocab_len, const char *merges,
                         size_t merges_len, int n_min, const char *dir, tg_err *err);
tg_status hf_config_parse(tg_gpt2_config *c, int *bos, int *eos, const char *json, size_t len, const char *path,
                          tg_err *err);


/* ---- Llama-family files other than GGUF (weights/llama_load.c) ---------- */

/* The llama2.c hook of tg_model_load: when the regular file at path is a
 * llama2.c checkpoint (the ak42 magic, or a legacy 7-int header whose sizes
 * agree exactly with the file's length), loads it into m (config, the
 * reader kept in m->priv's store, tg_llama_bind) and sets *claimed = 1.
 * Otherwise *claimed = 0, TG_OK, and `why` (if non-NULL) says why the
 * first bytes are not a legacy header, for the loader's "not a GGUF file"
 * message. m->priv must be a gpt2_store. A llama2.c file has no
 * vocabulary: m->vocab stays empty (the caller's --tokenizer gives one). */
tg_status wt_llama2c_probe(struct tg_model *m, const char *path, int flags, int *claimed, char *why, size_t why_cap,
                           tg_err *err);
/* A Hugging Face LlamaForCausalLM folder (weights/hf_llama.h) into m, the
 * vocabulary from its tokenizer.json when there is one (bos/eos from
 * config.json when it names them). m->priv must be a gpt2_store. */
tg_status hf_llama_load(struct tg_model *m, const char *dir, int flags, tg_err *err);

#endif
