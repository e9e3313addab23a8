/* gguf.h — GGUF (v2/v3) files: a validating reader over a memory map and a
 * writer that builds a file in memory-light form and renames it into place.
 *
 * Everything read from a file is untrusted: tg_gguf_open/tg_gguf_parse check
 * every count, length, type, dimension and offset against the bytes that are
 * really there before anything is used, and fail with TG_ERR_FORMAT (or
 * TG_ERR_UNSUPPORTED) and a one-line message naming the byte offset, key or
 * tensor. After a successful open every accessor below is memory-safe.
 *
 * Shapes: `ne` is in GGUF/ggml order, innermost (contiguous) dimension first,
 * so a numpy [V, E] matrix has ne = {E, V}.
 */
#ifndef TINYGPT_WEIGHTS_GGUF_H
#define TINYGPT_WEIGHTS_GGUF_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "engine/status.h"

#define TG_GGUF_MAX_DIMS 4
#define TG_GGUF_MAX_NAME 63          /* ggml's GGML_MAX_NAME - 1 */
#define TG_GGUF_DEFAULT_ALIGNMENT 32

/* Metadata value types (gguf_type). */
typedef enum tg_gguf_vtype {
    TG_GGUF_UINT8 = 0, TG_GGUF_INT8 = 1, TG_GGUF_UINT16 = 2, TG_GGUF_INT16 = 3,
    TG_GGUF_UINT32 = 4, TG_GGUF_INT32 = 5, TG_GGUF_FLOAT32 = 6, TG_GGUF_BOOL = 7,
    TG_GGUF_STRING = 8, TG_GGUF_ARRAY = 9, TG_GGUF_UINT64 = 10, TG_GGUF_INT64 = 11,
    TG_GGUF_FLOAT64 = 12,
    TG_GGUF_VTYPE_COUNT
} tg_gguf_vtype;

/* Tensor types (ggml_type) that have a fixed layout we know. F32, F16, BF16,
 * Q8_0 and Q4_0 load; the others can be inspected, not loaded. */
typedef enum tg_ggml_type {
    TG_GGML_F32 = 0, TG_GGML_F16 = 1, TG_GGML_Q4_0 = 2, TG_GGML_Q4_1 = 3,
    TG_GGML_Q5_0 = 6, TG_GGML_Q5_1 = 7, TG_GGML_Q8_0 = 8, TG_GGML_Q8_1 = 9,
    TG_GGML_Q2_K = 10, TG_GGML_Q3_K = 11, TG_GGML_Q4_K = 12, TG_GGML_Q5_K = 13,
    TG_GGML_Q6_K = 14, TG_GGML_Q8_K = 15, TG_GGML_I8 = 24, TG_GGML_I16 = 25,
    TG_GGML_I32 = 26, TG_GGML_I64 = 27, TG_GGML_F64 = 28, TG_GGML_BF16 = 30,
} tg_ggml_type;

#define TG_Q8_0_BLOCK 32 /* Q8_0: fp16 scale d, then 32 int8 q; x = d * q */

const char *tg_gguf_vtype_name(uint32_t t);  /* "uint32", "string", ... or "?" */
const char *tg_ggml_type_name(uint32_t t);   /* "F32", "Q8_0", ... or NULL if unknown */
/* Block size (elements) and bytes per block of a known type; 0 if unknown. */
int tg_ggml_blck_size(uint32_t t);
size_t tg_ggml_type_size(uint32_t t);
int tg_ggml_type_to_f32_ok(uint32_t t);      /* F32, F16, BF16, Q8_0, Q4_0 */

typedef struct tg_gguf_kv {
    const char *key;        /* NUL-terminated copy */
    uint32_t type;          /* tg_gguf_vtype */
    uint32_t arr_type;      /* element type when type == ARRAY */
    uint64_t n;             /* array length (1 for scalars) */
    uint64_t file_offset;   /* where the value starts in the file */
    const uint8_t *data;    /* the value (scalars, numeric arrays) in the file */
    const uint64_t *str_off;/* for strings / string arrays: offsets of each
                               u64 length prefix, relative to the file start */
} tg_gguf_kv;

typedef struct tg_gguf_tensor {
    const char *name;       /* NUL-terminated copy */
    int n_dims;
    int64_t ne[TG_GGUF_MAX_DIMS]; /* innermost first; unused dims are 1 */
    uint32_t type;          /* tg_ggml_type */
    uint64_t offset;        /* from the start of the data section */
    uint64_t n_elements;
    uint64_t nbytes;
    const void *data;       /* in the mapping */
} tg_gguf_tensor;

typedef struct tg_gguf tg_gguf;

/* Maps and validates a file. */
tg_status tg_gguf_open(tg_gguf **out, const char *path, tg_err *err);
/* Validates a buffer the caller keeps alive until tg_gguf_close (fuzzing,
 * tests). `name` appears in error messages. */
tg_status tg_gguf_parse(tg_gguf **out, const void *buf, size_t len, const char *name,
                        tg_err *err);
void tg_gguf_close(tg_gguf *g);
/* Once the loader has read every tensor: the mapping re-read in 2 MiB
 * pages where the page cache had it in smaller ones (wt_map_settle in
 * weights/file.h); 1 if it re-read. Nothing for a parsed buffer. */
int tg_gguf_settle(tg_gguf *g);

uint32_t tg_gguf_version(const tg_gguf *g);
uint32_t tg_gguf_alignment(const tg_gguf *g);
size_t tg_gguf_file_size(const tg_gguf *g);
uint64_t tg_gguf_data_offset(const tg_gguf *g);  /* start of the data section */

int64_t tg_gguf_n_kv(const tg_gguf *g);
const tg_gguf_kv *tg_gguf_kv_at(const tg_gguf *g, int64_t i);   /* file order */
const tg_gguf_kv *tg_gguf_find_kv(const tg_gguf *g, const char *key); /* or NULL */

int64_t tg_gguf_n_tensors(const tg_gguf *g);
const tg_gguf_tensor *tg_gguf_tensor_at(const tg_gguf *g, int64_t i); /* file order */
const tg_gguf_tensor *tg_gguf_find_tensor(const tg_gguf *g, const char *name);

/* Typed getters. TG_ERR_FORMAT (naming the key and both types) when the key
 * exists with another type; when the key is missing they return
 * TG_ERR_ARG with "missing key" in the message, so callers can treat
 * optional keys with tg_gguf_find_kv first. get_uint accepts any unsigned
 * or non-negative signed integer type; get_float accepts f32 or f64. */
tg_status tg_gguf_get_uint(const tg_gguf *g, const char *key, uint64_t *out, tg_err *err);
tg_status tg_gguf_get_int(const tg_gguf *g, const char *key, int64_t *out, tg_err *err);
tg_status tg_gguf_get_float(const tg_gguf *g, const char *key, double *out, tg_err *err);
tg_status tg_gguf_get_bool(const tg_gguf *g, const char *key, int *out, tg_err *err);
/* A string value: pointer into the file (not NUL-terminated) and length. */
tg_status tg_gguf_get_str(const tg_gguf *g, const char *key, const char **s, size_t *len,
                          tg_err *err);
/* Element i of a string array (or i == 0 of a string). */
void tg_gguf_kv_str(const tg_gguf *g, const tg_gguf_kv *kv, uint64_t i, const char **s,
                    size_t *len);
/* Element i of a numeric array (or i == 0 of a numeric scalar) as double /
 * int64 (booleans are 0/1). */
double tg_gguf_kv_num(const tg_gguf_kv *kv, uint64_t i);
int64_t tg_gguf_kv_int(const tg_gguf_kv *kv, uint64_t i);

/* Converts a whole tensor to f32 (out holds t->n_elements floats). F32,
 * F16, BF16, Q8_0, Q4_0; other types are TG_ERR_UNSUPPORTED naming the tensor. */
tg_status tg_gguf_tensor_to_f32(const tg_gguf_tensor *t, float *out, tg_err *err);

/* Scalar conversions (IEEE half with subnormals/inf/nan, bfloat16). */
float tg_f16_to_f32(uint16_t h);
uint16_t tg_f32_to_f16(float f);    /* round to nearest even */
float tg_bf16_to_f32(uint16_t h);
uint16_t tg_f32_to_bf16(float f);   /* round to nearest even, NaN kept */

/* ---- Writer ---------------------------------------------------------------
 * Keys and tensors are written in the order added (GGUF v3, little-endian,
 * tensors packed at `alignment`). Tensor data is borrowed: it must stay
 * valid until tg_gguf_write returns. Setting an existing key replaces it. */
typedef struct tg_gguf_writer tg_gguf_writer;

tg_status tg_gguf_writer_new(tg_gguf_writer **out, tg_err *err);
void tg_gguf_writer_free(tg_gguf_writer *w);

tg_status tg_gguf_set_u32(tg_gguf_writer *w, const char *key, uint32_t v, tg_err *err);
tg_status tg_gguf_set_i32(tg_gguf_writer *w, const char *key, int32_t v, tg_err *err);
tg_status tg_gguf_set_u64(tg_gguf_writer *w, const char *key, uint64_t v, tg_err *err);
tg_status tg_gguf_set_i64(tg_gguf_writer *w, const char *key, int64_t v, tg_err *err);
tg_status tg_gguf_set_f32(tg_gguf_writer *w, const char *key, float v, tg_err *err);
tg_status tg_gguf_set_f64(tg_gguf_writer *w, const char *key, double v, tg_err *err);
tg_status tg_gguf_set_bool(tg_gguf_writer *w, const char *key, int v, tg_err *err);
tg_status tg_gguf_set_str(tg_gguf_writer *w, const char *key, const char *v, tg_err *err);
/* Arrays: copies the values. elem_type is a numeric tg_gguf_vtype; elements
 * are read from `vals` with that type's size. */
tg_status tg_gguf_set_arr(tg_gguf_writer *w, const char *key, uint32_t elem_type,
                          const void *vals, uint64_t n, tg_err *err);
tg_status tg_gguf_set_arr_str(tg_gguf_writer *w, const char *key, const char *const *vals,
                              uint64_t n, tg_err *err);
/* Copies a key/value from a file being read (e.g. to carry metadata over). */
tg_status tg_gguf_set_kv_from(tg_gguf_writer *w, const tg_gguf *g, const tg_gguf_kv *kv,
                              tg_err *err);
tg_status tg_gguf_set_alignment(tg_gguf_writer *w, uint32_t alignment, tg_err *err);

/* A tensor from f32 data, stored as `type` (F32, F16, BF16, Q8_0 or Q4_0;
 * the block types need ne[0] % 32 == 0). */
tg_status tg_gguf_add_tensor_f32(tg_gguf_writer *w, const char *name, int n_dims,
                                 const int64_t *ne, const float *data, uint32_t type,
                                 tg_err *err);
/* As tg_gguf_add_tensor_f32, but the writer takes `data` (malloc'd) and
 * frees it with itself (also when this fails). */
tg_status tg_gguf_add_tensor_f32_owned(tg_gguf_writer *w, const char *name, int n_dims,
                                       const int64_t *ne, float *data, uint32_t type, tg_err *err);
/* A tensor whose bytes are already in `type`'s layout. */
tg_status tg_gguf_add_tensor_raw(tg_gguf_writer *w, const char *name, int n_dims,
                                 const int64_t *ne, uint32_t type, const void *data,
                                 tg_err *err);

/* Writes to a temporary file beside `path`, fsyncs, renames into place. On
 * failure the old file (if any) is untouched and no temporary is left. */
tg_status tg_gguf_write(const tg_gguf_writer *w, const char *path, tg_err *err);
/* The same bytes to an open stream (the caller flushes, syncs and renames;
 * path only names it in errors). */
tg_status tg_gguf_write_to(const tg_gguf_writer *w, FILE *f, const char *path, tg_err *err);

#endif
