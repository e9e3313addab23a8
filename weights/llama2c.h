/* llama2c.h — a validating reader for llama2.c checkpoints (Karpathy's
 * run.c / runq.c files, as export.py writes them):
 *
 *   legacy .bin   7 int32 (dim, hidden_dim, n_layers, n_heads, n_kv_heads,
 *                 vocab_size, seq_len), then fp32 weights in run.c's order:
 *                 token embedding, attention norms, wq, wk, wv, wo, ffn norms,
 *                 w1, w2, w3, final norm, the rope tables freq_cis_real and
 *                 freq_cis_imag [seq_len, head_size/2] (skipped), and, when
 *                 vocab_size < 0, the untied classifier. There is no magic:
 *                 a file is one when the header's sizes agree exactly with
 *                 its length.
 *   "ak42" v1     u32 magic 0x616b3432, i32 version 1, the 7 int32, u8
 *                 shared_classifier, zero padding to 256 bytes; fp32 norms
 *                 (attention norms, ffn norms, final norm), then token
 *                 embedding, wq, wk, wv, wo, w1, w2, w3 (each for every
 *                 layer), and the classifier when not shared.
 *   "ak42" v2     as v1 with version 2 and an i32 group_size after the flag;
 *                 the norms fp32, every matrix symmetric int8 in groups of
 *                 group_size consecutive elements: int8 q[n], then fp32
 *                 s[n / group_size], x = q · s.
 *
 * Every count and offset is checked against the file size before anything
 * is used (sizes in uint64 with overflow checks), and the file must end
 * exactly where the header says. Errors are TG_ERR_FORMAT or
 * TG_ERR_UNSUPPORTED with a one-line message naming the file and the field.
 *
 * The model is a Llama: RMSNorm (eps 1e-5), rotary embeddings over adjacent
 * pairs (x[2i], x[2i+1]) with theta 10000 (llama2.c's model.py: the same
 * convention as llama.cpp's GGUF, so nothing is permuted), SwiGLU
 * (w2 · (silu(w1 x) * w3 x)), n_kv_heads dividing n_heads.
 *
 * Tensors are exposed under llama.cpp's GGUF names with numpy-order shapes
 * [rows, cols] (weights [OUT, IN]), pointing into the mapping. */
#ifndef TINYGPT_WEIGHTS_LLAMA2C_H
#define TINYGPT_WEIGHTS_LLAMA2C_H

#include <stddef.h>
#include <stdint.h>

#include "engine/status.h"
#include "weights/config.h"
#include "weights/file.h"
#include "weights/tensors.h"

#define TG_L2C_MAGIC 0x616b3432u /* "ak42" as export.py packs it (struct 'I') */
#define TG_L2C_HEADER 256        /* bytes of a versioned header */
#define TG_L2C_LEGACY_HEADER 28  /* 7 int32 */
#define TG_L2C_MAX_DIM (1 << 20) /* a sanity bound on every size of the header */

typedef enum tg_l2c_version {
    TG_L2C_LEGACY = 0, /* run.c's .bin */
    TG_L2C_V1 = 1,     /* ak42 fp32 */
    TG_L2C_V2 = 2,     /* ak42 int8 groups */
} tg_l2c_version;

typedef struct tg_l2c_config {
    int dim;          /* E */
    int hidden_dim;   /* F */
    int n_layers;     /* L */
    int n_heads;      /* H */
    int n_kv_heads;   /* KV, divides H */
    int vocab_size;   /* V (positive; the legacy sign is in `shared`) */
    int seq_len;      /* C */
    int shared;       /* 1: classifier tied to the token embedding */
    int group_size;   /* v2: elements per int8 group; 0 otherwise */
    tg_l2c_version version;
} tg_l2c_config;

typedef enum tg_l2c_kind {
    TG_L2C_F32 = 0,   /* n fp32 at data (4-byte aligned) */
    TG_L2C_Q8G = 1,   /* n int8 at data, then n / group_size fp32 scales at
                         scales (not necessarily aligned: read with memcpy) */
} tg_l2c_kind;

typedef struct tg_l2c_tensor {
    char name[32];         /* llama.cpp's name: "blk.3.attn_q.weight", ... */
    int n_dims;            /* 1 or 2 */
    int64_t shape[2];      /* numpy order: [rows, cols] or [n] */
    uint64_t n_elements;
    tg_l2c_kind kind;
    uint64_t offset;       /* of data, from the start of the file */
    const void *data;
    const uint8_t *scales; /* TG_L2C_Q8G only */
} tg_l2c_tensor;

typedef struct tg_l2c {
    tg_l2c_config cfg;
    tg_l2c_tensor *tensors; /* token_embd, blk.*, output_norm, output (untied) */
    int n_tensors;
    const uint8_t *base;
    size_t size;
    wt_map map;             /* the file's mapping (open); map.fd -1 for a buffer */
    char *name;
    float **deq;            /* v2 tensors dequantized (or repacked as Q8_0) by tg_l2c_tensor_set */
    int n_deq;
    int n_repacked;         /* of them, the ones repacked as Q8_0 (tg_l2c_q8_0_fits) */
} tg_l2c;

/* What the first bytes of a file say: TG_L2C_V1/V2 for the ak42 magic with
 * that version, -2 for the magic with another version, TG_L2C_LEGACY when
 * a 7-int header's sizes agree exactly with file_size, -1 otherwise. `head`
 * holds the first n bytes (n >= 28 for legacy detection). */
int tg_l2c_sniff(const void *head, size_t n, uint64_t file_size);

/* For an error message when a file is nothing we know: why its first 28
 * bytes are not a legacy llama2.c header ("its 7-int header implies
 * 1056540 bytes, the file has 1056000", "dim 0 is not positive", ...). */
void tg_l2c_legacy_why(const void *head, size_t n, uint64_t file_size, char *out, size_t cap);

/* Maps and validates a file (a regular file only, weights/file.h). */
tg_status tg_l2c_open(tg_l2c **out, const char *path, tg_err *err);
/* Validates a caller-owned buffer (kept alive until tg_l2c_close); name
 * appears in messages. A buffer without the magic is read as legacy. */
tg_status tg_l2c_parse(tg_l2c **out, const void *buf, size_t len, const char *name, tg_err *err);
void tg_l2c_close(tg_l2c *c);

const tg_l2c_tensor *tg_l2c_find(const tg_l2c *c, const char *name);
/* A whole tensor as f32 (out holds n_elements floats). F32 is copied; Q8G
 * is q · s per element, the product rounded once to f32 (|q| <= 128 has 8
 * significant bits and s 24, so the product can need 32: the f32 is the
 * nearest one, relative error <= 2^-24). */
tg_status tg_l2c_to_f32(const tg_l2c *c, const tg_l2c_tensor *t, float *out, tg_err *err);
/* TG_ERR_NUMERIC naming the tensor and index of the first NaN or inf value
 * (a Q8G tensor's scales stand for their groups). */
tg_status tg_l2c_check_finite(const tg_l2c *c, tg_err *err);

/* Can v2 tensor t run natively as ggml Q8_0? group_size and its rows are
 * multiples of 32 and every group scale rounds to f16 within 2^-11 of
 * itself (zero or a normal half): the int8 values are kept exactly, so
 * each weight moves by at most 2^-11 relative. */
int tg_l2c_q8_0_fits(const tg_l2c *c, const tg_l2c_tensor *t);

/* The reader side of weights/tensors.h: c's header as a tg_model_config
 * (arch llama, rope_pairs ADJACENT, rope_theta 10000, ln_eps 1e-5, n_ctx =
 * seq_len, n_kv_head, head_dim = dim / n_heads) and a set of views under
 * llama.cpp's names: fp32 tensors straight into the mapping (F32); v2 int8
 * groups repacked as Q8_0 blocks when tg_l2c_q8_0_fits (so the int8
 * kernels run them), else dequantized to F32 (tg_l2c_to_f32) — both into
 * buffers c owns (c->n_repacked counts the Q8_0 ones). The views and their
 * names live until tg_l2c_close; ts->t is freed with tg_tensor_set_free. */
tg_status tg_l2c_tensor_set(tg_l2c *c, tg_model_config *cfg, tg_tensor_set *ts, tg_err *err);

#endif
