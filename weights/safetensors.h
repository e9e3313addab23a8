/* safetensors.h — a validating reader for Hugging Face .safetensors files:
 * u64 little-endian header length N, N bytes of JSON, then the data.
 *
 * The header is checked like a GGUF: N against the file size, the JSON
 * parsed with cJSON, every entry's dtype known, shape non-negative with no
 * overflow, data_offsets inside the data and equal to shape × dtype size,
 * names unique, and the tensors tiling the data with no gap or overlap (as
 * the reference implementation requires). */
#ifndef TINYGPT_WEIGHTS_SAFETENSORS_H
#define TINYGPT_WEIGHTS_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "engine/status.h"
#include "weights/file.h"

#define TG_ST_MAX_DIMS 8
#define TG_ST_MAX_HEADER (100u << 20) /* the reference implementation's limit */

typedef struct tg_st_tensor {
    char *name;
    char dtype[8];          /* "F32", "F16", "BF16", ... */
    int elem_size;          /* bytes */
    int n_dims;
    int64_t shape[TG_ST_MAX_DIMS]; /* numpy order (outermost first) */
    uint64_t n_elements;
    uint64_t begin, end;    /* byte range inside the data section */
    const uint8_t *data;
} tg_st_tensor;

typedef struct tg_st {
    tg_st_tensor *tensors;  /* sorted by name */
    int n_tensors;
    const uint8_t *base;
    size_t size;
    wt_map map;             /* the file's mapping (open); map.fd -1 for a buffer */
    char *name;
} tg_st;

tg_status tg_st_open(tg_st **out, const char *path, tg_err *err);
/* Validates a caller-owned buffer (kept alive until tg_st_close). */
tg_status tg_st_parse(tg_st **out, const void *buf, size_t len, const char *name, tg_err *err);
void tg_st_close(tg_st *st);

/* Why a Hugging Face folder has no model.safetensors tinygpt can read: a
 * phrase naming the weights it holds instead (pytorch_model.bin, sharded
 * safetensors, TensorFlow or Flax files) and what to do, or NULL when it has
 * model.safetensors or none of those. */
const char *tg_st_folder_why(const char *dir);

const tg_st_tensor *tg_st_find(const tg_st *st, const char *name);
/* F32, F16 and BF16 to f32 (out holds n_elements floats). */
tg_status tg_st_to_f32(const tg_st_tensor *t, float *out, tg_err *err);

#endif
