/* gguf.c — the validating GGUF reader (see gguf.h). The writer is in
 * gguf_write.c.
 *
 * Reading is a single forward pass with a cursor that knows how many bytes
 * remain; nothing read from the file is used as a size, count or offset
 * before it has been checked against those bytes. */
#include "weights/gguf.h"
#include "weights/file.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define GGUF_MAGIC "GGUF"

struct tg_gguf {
    const uint8_t *base;
    size_t size;
    wt_map map;             /* the file's mapping (tg_gguf_open); map.fd -1 otherwise */
    char *name;
    uint32_t version, alignment;
    uint64_t data_off;
    int64_t n_kv, n_tensors;
    tg_gguf_kv *kv;
    tg_gguf_tensor *tensors;
    const tg_gguf_kv **kv_by_key;          /* sorted by key */
    const tg_gguf_tensor **t_by_name;      /* sorted by name */
};

/* ---- type tables ---------------------------------------------------------- */

static const char *const vtype_names[TG_GGUF_VTYPE_COUNT] = {
    "uint8", "int8", "uint16", "int16", "uint32", "int32", "float32",
    "bool", "string", "array", "uint64", "int64", "float64"};
/* bytes of a fixed-size value; 0 for string/array */
static const size_t vtype_size[TG_GGUF_VTYPE_COUNT] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};

const char *tg_gguf_vtype_name(uint32_t t) {
    return t < TG_GGUF_VTYPE_COUNT ? vtype_names[t] : "?";
}

typedef struct ggml_type_info {
    const char *name;
    int blck;
    size_t size;
} ggml_type_info;

static const ggml_type_info ggml_types[] = {
    [TG_GGML_F32] = {"F32", 1, 4},       [TG_GGML_F16] = {"F16", 1, 2},
    [TG_GGML_Q4_0] = {"Q4_0", 32, 18},   [TG_GGML_Q4_1] = {"Q4_1", 32, 20},
    [TG_GGML_Q5_0] = {"Q5_0", 32, 22},   [TG_GGML_Q5_1] = {"Q5_1", 32, 24},
    [TG_GGML_Q8_0] = {"Q8_0", 32, 34},   [TG_GGML_Q8_1] = {"Q8_1", 32, 36},
    [TG_GGML_Q2_K] = {"Q2_K", 256, 84},  [TG_GGML_Q3_K] = {"Q3_K", 256, 110},
    [TG_GGML_Q4_K] = {"Q4_K", 256, 144}, [TG_GGML_Q5_K] = {"Q5_K", 256, 176},
    [TG_GGML_Q6_K] = {"Q6_K", 256, 210}, [TG_GGML_Q8_K] = {"Q8_K", 256, 292},
    [TG_GGML_I8] = {"I8", 1, 1},         [TG_GGML_I16] = {"I16", 1, 2},
    [TG_GGML_I32] = {"I32", 1, 4},       [TG_GGML_I64] = {"I64", 1, 8},
    [TG_GGML_F64] = {"F64", 1, 8},       [TG_GGML_BF16] = {"BF16", 1, 2},
};
#define N_GGML_TYPES (sizeof ggml_types / sizeof ggml_types[0])

const char *tg_ggml_type_name(uint32_t t) { return t < N_GGML_TYPES ? ggml_types[t].name : NULL; }
int tg_ggml_blck_size(uint32_t t) { return tg_ggml_type_name(t) ? ggml_types[t].blck : 0; }
size_t tg_ggml_type_size(uint32_t t) { return tg_ggml_type_name(t) ? ggml_types[t].size : 0; }
int tg_ggml_type_to_f32_ok(uint32_t t) {
    return t == TG_GGML_F32 || t == TG_GGML_F16 || t == TG_GGML_BF16 || t == TG_GGML_Q8_0 ||
           t == TG_GGML_Q4_0;
}

/* ---- scalar conversions ---------------------------------------------------- */

static float bits_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* tg_f16_to_f32, tg_f32_to_f16, tg_bf16_to_f32, tg_f32_to_bf16: engine/weight.c */

/* ---- the cursor ------------------------------------------------------------ */

typedef struct cursor {
    const uint8_t *p;
    size_t size, pos;
    const char *name;
    tg_err *err;
} cursor;

static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t rd32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t rd64(const uint8_t *p) { return rd32(p) | (uint64_t)rd32(p + 4) << 32; }

static size_t remaining(const cursor *c) { return c->size - c->pos; }

static tg_status need(cursor *c, size_t n, const char *what) {
    if (remaining(c) < n)
        return tg_fail(c->err, TG_ERR_FORMAT,
                       "%s: truncated at byte %zu: %s needs %zu bytes, %zu left", c->name,
                       c->pos, what, n, remaining(c));
    return TG_OK;
}

static tg_status get_u32(cursor *c, uint32_t *v, const char *what) {
    tg_status s = need(c, 4, what);
    if (s) return s;
    *v = rd32(c->p + c->pos);
    c->pos += 4;
    return TG_OK;
}

static tg_status get_u64(cursor *c, uint64_t *v, const char *what) {
    tg_status s = need(c, 8, what);
    if (s) return s;
    *v = rd64(c->p + c->pos);
    c->pos += 8;
    return TG_OK;
}

/* A length-prefixed string; checks the length against the bytes left. */
static tg_status get_str(cursor *c, const char **s, uint64_t *len, const char *what) {
    size_t at = c->pos;
    tg_status st = get_u64(c, len, what);
    if (st) return st;
    if (*len > remaining(c))
        return tg_fail(c->err, TG_ERR_FORMAT,
                       "%s: byte %zu: %s has length %" PRIu64 " but only %zu bytes remain",
                       c->name, at, what, *len, remaining(c));
    *s = (const char *)c->p + c->pos;
    c->pos += (size_t)*len;
    return TG_OK;
}

static char *dup_name(const char *s, uint64_t len) {
    char *d = malloc((size_t)len + 1);
    if (!d) return NULL;
    memcpy(d, s, (size_t)len);
    d[len] = 0;
    return d;
}

/* ---- metadata -------------------------------------------------------------- */

static tg_status check_bools(cursor *c, const uint8_t *v, uint64_t n, const char *key) {
    for (uint64_t i = 0; i < n; i++)
        if (v[i] > 1)
            return tg_fail(c->err, TG_ERR_FORMAT, "%s: key '%s': bool value %u is not 0 or 1",
                           c->name, key, v[i]);
    return TG_OK;
}

/* Reads the value of kv (type already read) at the cursor. */
static tg_status read_value(cursor *c, tg_gguf_kv *kv) {
    tg_status s;
    kv->file_offset = c->pos;
    kv->n = 1;
    if (kv->type == TG_GGUF_STRING) {
        uint64_t *off = malloc(sizeof *off);
        if (!off) return tg_fail(c->err, TG_ERR_NOMEM, "%s: out of memory", c->name);
        kv->str_off = off;
        off[0] = c->pos;
        const char *str;
        uint64_t len;
        return get_str(c, &str, &len, "string value");
    }
    if (kv->type != TG_GGUF_ARRAY) {
        size_t sz = vtype_size[kv->type];
        if ((s = need(c, sz, "value"))) return s;
        kv->data = c->p + c->pos;
        if (kv->type == TG_GGUF_BOOL && (s = check_bools(c, kv->data, 1, kv->key))) return s;
        c->pos += sz;
        return TG_OK;
    }
    size_t at = c->pos;
    if ((s = get_u32(c, &kv->arr_type, "array type"))) return s;
    if (kv->arr_type >= TG_GGUF_VTYPE_COUNT)
        return tg_fail(c->err, TG_ERR_FORMAT, "%s: byte %zu: key '%s': array element type %u is not a GGUF type",
                       c->name, at, kv->key, kv->arr_type);
    if (kv->arr_type == TG_GGUF_ARRAY)
        return tg_fail(c->err, TG_ERR_FORMAT, "%s: byte %zu: key '%s': arrays of arrays are not supported",
                       c->name, at, kv->key);
    at = c->pos;
    if ((s = get_u64(c, &kv->n, "array length"))) return s;
    if (kv->arr_type == TG_GGUF_STRING) {
        if (kv->n > remaining(c) / 8)
            return tg_fail(c->err, TG_ERR_FORMAT,
                           "%s: byte %zu: key '%s': %" PRIu64 " strings cannot fit in the %zu bytes left",
                           c->name, at, kv->key, kv->n, remaining(c));
        uint64_t *off = malloc(kv->n ? (size_t)kv->n * sizeof *off : 1);
        if (!off) return tg_fail(c->err, TG_ERR_NOMEM, "%s: key '%s': out of memory", c->name, kv->key);
        kv->str_off = off;
        for (uint64_t i = 0; i < kv->n; i++) {
            off[i] = c->pos;
            const char *str;
            uint64_t len;
            if ((s = get_str(c, &str, &len, "array string"))) return s;
        }
        return TG_OK;
    }
    size_t sz = vtype_size[kv->arr_type];
    if (kv->n > remaining(c) / sz)
        return tg_fail(c->err, TG_ERR_FORMAT,
                       "%s: byte %zu: key '%s': array of %" PRIu64 " %s needs more than the %zu bytes left",
                       c->name, at, kv->key, kv->n, vtype_names[kv->arr_type], remaining(c));
    kv->data = c->p + c->pos;
    if (kv->arr_type == TG_GGUF_BOOL && (s = check_bools(c, kv->data, kv->n, kv->key))) return s;
    c->pos += (size_t)(kv->n * sz);
    return TG_OK;
}

static tg_status read_kv(cursor *c, tg_gguf_kv *kv, int64_t i) {
    size_t at = c->pos;
    const char *key = NULL;
    uint64_t klen = 0;
    tg_status s = get_str(c, &key, &klen, "metadata key");
    if (s) return s;
    if (klen == 0 || memchr(key, 0, (size_t)klen))
        return tg_fail(c->err, TG_ERR_FORMAT, "%s: byte %zu: metadata key %" PRId64 " is empty or contains a NUL byte",
                       c->name, at, i);
    if (!(kv->key = dup_name(key, klen))) return tg_fail(c->err, TG_ERR_NOMEM, "%s: out of memory", c->name);
    at = c->pos;
    if ((s = get_u32(c, &kv->type, "value type"))) return s;
    if (kv->type >= TG_GGUF_VTYPE_COUNT)
        return tg_fail(c->err, TG_ERR_FORMAT, "%s: byte %zu: key '%s': value type %u is not a GGUF type",
                       c->name, at, kv->key, kv->type);
    return read_value(c, kv);
}

/* ---- tensor infos ---------------------------------------------------------- */

static tg_status read_tensor_info(cursor *c, tg_gguf_tensor *t, int64_t i) {
    size_t at = c->pos;
    const char *name = NULL;
    uint64_t nlen = 0;
    tg_status s = get_str(c, &name, &nlen, "tensor name");
    if (s) return s;
    if (nlen == 0 || nlen > TG_GGUF_MAX_NAME || memchr(name, 0, (size_t)nlen))
        return tg_fail(c->err, TG_ERR_FORMAT,
                       "%s: byte %zu: tensor %" PRId64 ": name of %" PRIu64 " bytes is empty, longer than %d or contains NUL",
                       c->name, at, i, nlen, TG_GGUF_MAX_NAME);
    if (!(t->name = dup_name(name, nlen))) return tg_fail(c->err, TG_ERR_NOMEM, "%s: out of memory", c->name);
    uint32_t nd;
    at = c->pos;
    if ((s = get_u32(c, &nd, "tensor n_dims"))) return s;
    if (nd > TG_GGUF_MAX_DIMS)
        return tg_fail(c->err, TG_ERR_FORMAT, "%s: byte %zu: tensor '%s': %u dimensions (max %d)",
                       c->name, at, t->name, nd, TG_GGUF_MAX_DIMS);
    t->n_dims = (int)nd;
    uint64_t nel = 1;
    for (int d = 0; d < TG_GGUF_MAX_DIMS; d++) t->ne[d] = 1;
    for (uint32_t d = 0; d < nd; d++) {
        uint64_t v;
        at = c->pos;
        if ((s = get_u64(c, &v, "tensor dimension"))) return s;
        if (v > (uint64_t)INT64_MAX)
            return tg_fail(c->err, TG_ERR_FORMAT, "%s: byte %zu: tensor '%s': dimension %u is negative (%" PRId64 ")",
                           c->name, at, t->name, d, (int64_t)v);
        if (v && nel > (uint64_t)INT64_MAX / v)
            return tg_fail(c->err, TG_ERR_FORMAT, "%s: byte %zu: tensor '%s': element count overflows",
                           c->name, at, t->name);
        nel *= v;
        t->ne[d] = (int64_t)v;
    }
    t->n_elements = nel;
    at = c->pos;
    if ((s = get_u32(c, &t->type, "tensor type"))) return s;
    int blck = tg_ggml_blck_size(t->type);
    if (!blck)
        return tg_fail(c->err, TG_ERR_FORMAT, "%s: byte %zu: tensor '%s': unknown tensor type %u",
                       c->name, at, t->name, t->type);
    if (t->ne[0] % blck)
        return tg_fail(c->err, TG_ERR_FORMAT, "%s: tensor '%s': row length %" PRId64 " is not a multiple of %s's block size %d",
                       c->name, t->name, t->ne[0], tg_ggml_type_name(t->type), blck);
    /* bytes = rows * blocks-per-row * block bytes, each step overflow-checked */
    uint64_t blocks = (uint64_t)(t->ne[0] / blck), bsz = tg_ggml_type_size(t->type);
    if (blocks > UINT64_MAX / bsz)
        return tg_fail(c->err, TG_ERR_FORMAT, "%s: tensor '%s': byte size overflows", c->name, t->name);
    uint64_t row = blocks * bsz, rows = 1;
    for (int d = 1; d < TG_GGUF_MAX_DIMS; d++) {
        uint64_t v = (uint64_t)t->ne[d];
        if (v && rows > UINT64_MAX / v)
            return tg_fail(c->err, TG_ERR_FORMAT, "%s: tensor '%s': byte size overflows", c->name, t->name);
        rows *= v;
    }
    if (rows && row > UINT64_MAX / rows)
        return tg_fail(c->err, TG_ERR_FORMAT, "%s: tensor '%s': byte size overflows", c->name, t->name);
    t->nbytes = row * rows;
    return get_u64(c, &t->offset, "tensor data offset");
}

/* ---- sorting and lookup ---------------------------------------------------- */

static int cmp_kv(const void *a, const void *b) {
    return strcmp((*(const tg_gguf_kv *const *)a)->key, (*(const tg_gguf_kv *const *)b)->key);
}
static int cmp_tensor(const void *a, const void *b) {
    return strcmp((*(const tg_gguf_tensor *const *)a)->name, (*(const tg_gguf_tensor *const *)b)->name);
}
static int cmp_offset(const void *a, const void *b) {
    uint64_t x = (*(const tg_gguf_tensor *const *)a)->offset, y = (*(const tg_gguf_tensor *const *)b)->offset;
    return x < y ? -1 : x > y;
}

/* ---- the whole file -------------------------------------------------------- */

static tg_status not_gguf(const tg_gguf *g, tg_err *err) {
    const char *p = (const char *)g->base;
    size_t n = g->size;
    if (n == 0) return tg_fail(err, TG_ERR_FORMAT, "%s: empty file, not a GGUF model", g->name);
    static const char lfs[] = "version https://git-lfs";
    if (n >= sizeof lfs - 1 && !memcmp(p, lfs, sizeof lfs - 1))
        return tg_fail(err, TG_ERR_FORMAT,
                       "%s: a Git LFS pointer, not the model itself (run `git lfs pull`)", g->name);
    size_t i = 0;
    while (i < n && i < 64 && (p[i] == ' ' || p[i] == '\t' || p[i] == '\r' || p[i] == '\n')) i++;
    if (i < n && p[i] == '<')
        return tg_fail(err, TG_ERR_FORMAT, "%s: an HTML/XML page, not a GGUF model (a failed download?)", g->name);
    if (i < n && p[i] == '{')
        return tg_fail(err, TG_ERR_FORMAT, "%s: a JSON file, not a GGUF model", g->name);
    if (n >= 9 && p[8] == '{')
        return tg_fail(err, TG_ERR_FORMAT,
                       "%s: looks like a safetensors file, not GGUF (pass its Hugging Face folder)", g->name);
    if (n < 4)
        return tg_fail(err, TG_ERR_FORMAT, "%s: %zu bytes, too short for a GGUF header", g->name, n);
    return tg_fail(err, TG_ERR_FORMAT, "%s: not a GGUF file (magic %02x %02x %02x %02x, expected 'GGUF')",
                   g->name, (uint8_t)p[0], (uint8_t)p[1], (uint8_t)p[2], (uint8_t)p[3]);
}

static tg_status parse(tg_gguf *g, tg_err *err) {
    cursor c = {g->base, g->size, 0, g->name, err};
    tg_status s;
    if (g->size < 4 || memcmp(g->base, GGUF_MAGIC, 4)) return not_gguf(g, err);
    c.pos = 4;
    if ((s = get_u32(&c, &g->version, "version"))) return s;
    if (g->version == 1)
        return tg_fail(err, TG_ERR_UNSUPPORTED, "%s: GGUF version 1 is not supported (only 2 and 3)", g->name);
    if (g->version != 2 && g->version != 3) {
        if ((g->version & 0xffff) == 0 && (g->version >> 16) != 0)
            return tg_fail(err, TG_ERR_UNSUPPORTED, "%s: a big-endian GGUF (version bytes %08x); only little-endian is supported",
                           g->name, g->version);
        return tg_fail(err, TG_ERR_UNSUPPORTED, "%s: GGUF version %u is not supported (only 2 and 3)", g->name, g->version);
    }
    uint64_t n_tensors, n_kv;
    if ((s = get_u64(&c, &n_tensors, "tensor count"))) return s;
    if ((s = get_u64(&c, &n_kv, "metadata count"))) return s;
    /* the smallest key/value is 8 (key length) + 1 (key) + 4 (type) + 1 (u8);
     * the smallest tensor info 8 + 1 + 4 + 4 + 8 */
    if (n_kv > remaining(&c) / 14)
        return tg_fail(err, TG_ERR_FORMAT, "%s: byte 16: metadata count %" PRIu64 " cannot fit in the %zu bytes left",
                       g->name, n_kv, remaining(&c));
    if (n_tensors > remaining(&c) / 25)
        return tg_fail(err, TG_ERR_FORMAT, "%s: byte 8: tensor count %" PRIu64 " cannot fit in the %zu bytes left",
                       g->name, n_tensors, remaining(&c));

    g->kv = calloc(n_kv ? (size_t)n_kv : 1, sizeof *g->kv);
    if (!g->kv) return tg_fail(err, TG_ERR_NOMEM, "%s: out of memory", g->name);
    for (uint64_t i = 0; i < n_kv; i++) {
        g->n_kv = (int64_t)i + 1; /* so that close frees the partial entry */
        if ((s = read_kv(&c, &g->kv[i], (int64_t)i))) return s;
    }
    g->n_kv = (int64_t)n_kv;
    g->kv_by_key = malloc((n_kv ? (size_t)n_kv : 1) * sizeof *g->kv_by_key);
    if (!g->kv_by_key) return tg_fail(err, TG_ERR_NOMEM, "%s: out of memory", g->name);
    for (uint64_t i = 0; i < n_kv; i++) g->kv_by_key[i] = &g->kv[i];
    qsort(g->kv_by_key, (size_t)n_kv, sizeof *g->kv_by_key, cmp_kv);
    for (uint64_t i = 1; i < n_kv; i++)
        if (!strcmp(g->kv_by_key[i - 1]->key, g->kv_by_key[i]->key))
            return tg_fail(err, TG_ERR_FORMAT, "%s: duplicate metadata key '%s'", g->name, g->kv_by_key[i]->key);

    g->alignment = TG_GGUF_DEFAULT_ALIGNMENT;
    const tg_gguf_kv *al = tg_gguf_find_kv(g, "general.alignment");
    if (al) {
        if (al->type != TG_GGUF_UINT32)
            return tg_fail(err, TG_ERR_FORMAT, "%s: key 'general.alignment' has type %s, expected uint32",
                           g->name, tg_gguf_vtype_name(al->type));
        uint32_t a = rd32(al->data);
        if (a == 0 || (a & (a - 1)))
            return tg_fail(err, TG_ERR_FORMAT, "%s: general.alignment %u is not a power of two", g->name, a);
        /* the GGUF spec: "it must be a multiple of 8" (1, 2 and 4 would also
         * leave f32 data unaligned) */
        if (a % 8)
            return tg_fail(err, TG_ERR_FORMAT, "%s: general.alignment %u is not a multiple of 8 (GGUF requires it)",
                           g->name, a);
        g->alignment = a;
    }

    g->tensors = calloc(n_tensors ? (size_t)n_tensors : 1, sizeof *g->tensors);
    if (!g->tensors) return tg_fail(err, TG_ERR_NOMEM, "%s: out of memory", g->name);
    for (uint64_t i = 0; i < n_tensors; i++) {
        g->n_tensors = (int64_t)i + 1;
        if ((s = read_tensor_info(&c, &g->tensors[i], (int64_t)i))) return s;
    }
    g->n_tensors = (int64_t)n_tensors;
    g->t_by_name = malloc((n_tensors ? (size_t)n_tensors : 1) * sizeof *g->t_by_name);
    if (!g->t_by_name) return tg_fail(err, TG_ERR_NOMEM, "%s: out of memory", g->name);
    for (uint64_t i = 0; i < n_tensors; i++) g->t_by_name[i] = &g->tensors[i];
    qsort(g->t_by_name, (size_t)n_tensors, sizeof *g->t_by_name, cmp_tensor);
    for (uint64_t i = 1; i < n_tensors; i++)
        if (!strcmp(g->t_by_name[i - 1]->name, g->t_by_name[i]->name))
            return tg_fail(err, TG_ERR_FORMAT, "%s: duplicate tensor name '%s'", g->name, g->t_by_name[i]->name);

    /* the data section starts at the next multiple of the alignment */
    uint64_t pad = (g->alignment - c.pos % g->alignment) % g->alignment;
    g->data_off = (uint64_t)c.pos + pad;
    if (n_tensors == 0) return TG_OK; /* vocab-only: no data section needed */
    if (g->data_off > g->size)
        return tg_fail(err, TG_ERR_FORMAT, "%s: the data section would start at byte %" PRIu64 ", past the end (%zu bytes)",
                       g->name, g->data_off, g->size);
    uint64_t data_size = g->size - g->data_off;
    for (uint64_t i = 0; i < n_tensors; i++) {
        tg_gguf_tensor *t = &g->tensors[i];
        if (t->offset % g->alignment)
            return tg_fail(err, TG_ERR_FORMAT, "%s: tensor '%s': data offset %" PRIu64 " is not a multiple of the alignment %u",
                           g->name, t->name, t->offset, g->alignment);
        if (t->offset > data_size || t->nbytes > data_size - t->offset)
            return tg_fail(err, TG_ERR_FORMAT,
                           "%s: tensor '%s': %" PRIu64 " bytes at data offset %" PRIu64 " extend past the end of the file (data section has %" PRIu64 " bytes)",
                           g->name, t->name, t->nbytes, t->offset, data_size);
        t->data = g->base + g->data_off + t->offset;
    }
    /* no two tensors may share bytes */
    const tg_gguf_tensor **by_off = malloc((size_t)n_tensors * sizeof *by_off);
    if (!by_off) return tg_fail(err, TG_ERR_NOMEM, "%s: out of memory", g->name);
    for (uint64_t i = 0; i < n_tensors; i++) by_off[i] = &g->tensors[i];
    qsort(by_off, (size_t)n_tensors, sizeof *by_off, cmp_offset);
    s = TG_OK;
    for (uint64_t i = 1; i < n_tensors && !s; i++)
        if (by_off[i - 1]->nbytes && by_off[i]->nbytes &&
            by_off[i - 1]->offset + by_off[i - 1]->nbytes > by_off[i]->offset)
            s = tg_fail(err, TG_ERR_FORMAT, "%s: tensors '%s' and '%s' overlap in the file", g->name,
                        by_off[i - 1]->name, by_off[i]->name);
    /* The data section is the tensors packed at the alignment (in any order):
     * a gap, or bytes after the last one, means some tensor's declared type
     * or shape covers fewer bytes than were written for it (an F32 tensor
     * declared F16, say), and its values would be read wrongly. */
    uint64_t expect = 0;
    for (uint64_t i = 0; i < n_tensors && !s; i++) {
        const tg_gguf_tensor *t = by_off[i];
        if (t->offset > expect)
            s = tg_fail(err, TG_ERR_FORMAT,
                        "%s: tensor '%s' starts %" PRIu64 " bytes after the data before it ends: the "
                        "tensors are not packed, so some tensor's type or shape does not match its bytes",
                        g->name, t->name, t->offset - expect);
        uint64_t end = t->offset + t->nbytes;
        end += (g->alignment - end % g->alignment) % g->alignment;
        if (end > expect) expect = end;
    }
    if (!s && data_size > expect)
        s = tg_fail(err, TG_ERR_FORMAT,
                    "%s: %" PRIu64 " bytes follow the last tensor's data: some tensor's type or shape does "
                    "not match its bytes",
                    g->name, data_size - expect);
    free(by_off);
    return s;
}

static tg_status finish(tg_gguf **out, tg_gguf *g, tg_err *err) {
    tg_status s = parse(g, err);
    if (s) {
        tg_gguf_close(g);
        return s;
    }
    *out = g;
    return TG_OK;
}

tg_status tg_gguf_parse(tg_gguf **out, const void *buf, size_t len, const char *name, tg_err *err) {
    *out = NULL;
    tg_gguf *g = calloc(1, sizeof *g);
    if (g) g->map.fd = -1;
    if (!g || !(g->name = strdup(name ? name : "<memory>"))) {
        free(g);
        return tg_fail(err, TG_ERR_NOMEM, "gguf: out of memory");
    }
    g->base = buf;
    g->size = len;
    return finish(out, g, err);
}

tg_status tg_gguf_open(tg_gguf **out, const char *path, tg_err *err) {
    *out = NULL;
    struct stat st;
    int fd = wt_open_regular(path, &st, err);
    if (fd < 0) return TG_ERR_IO;
    tg_gguf *g = calloc(1, sizeof *g);
    if (g) g->map.fd = -1;
    if (!g || !(g->name = strdup(path))) {
        free(g);
        close(fd);
        return tg_fail(err, TG_ERR_NOMEM, "%s: out of memory", path);
    }
    g->size = (size_t)st.st_size;
    static const uint8_t empty[1];
    g->base = empty;
    tg_status s = wt_map_open(&g->map, fd, g->size, path, err);
    if (s) {
        tg_gguf_close(g);
        return s;
    }
    if (g->map.addr) g->base = g->map.addr;
    return finish(out, g, err);
}

int tg_gguf_settle(tg_gguf *g) { return wt_map_settle(&g->map); }

void tg_gguf_close(tg_gguf *g) {
    if (!g) return;
    for (int64_t i = 0; g->kv && i < g->n_kv; i++) {
        free((char *)g->kv[i].key);
        free((uint64_t *)g->kv[i].str_off);
    }
    for (int64_t i = 0; g->tensors && i < g->n_tensors; i++) free((char *)g->tensors[i].name);
    free(g->kv);
    free(g->tensors);
    free(g->kv_by_key);
    free(g->t_by_name);
    wt_map_close(&g->map);
    free(g->name);
    free(g);
}

/* ---- accessors ------------------------------------------------------------- */

uint32_t tg_gguf_version(const tg_gguf *g) { return g->version; }
uint32_t tg_gguf_alignment(const tg_gguf *g) { return g->alignment; }
size_t tg_gguf_file_size(const tg_gguf *g) { return g->size; }
uint64_t tg_gguf_data_offset(const tg_gguf *g) { return g->data_off; }
int64_t tg_gguf_n_kv(const tg_gguf *g) { return g->n_kv; }
int64_t tg_gguf_n_tensors(const tg_gguf *g) { return g->n_tensors; }

const tg_gguf_kv *tg_gguf_kv_at(const tg_gguf *g, int64_t i) {
    return i >= 0 && i < g->n_kv ? &g->kv[i] : NULL;
}
const tg_gguf_tensor *tg_gguf_tensor_at(const tg_gguf *g, int64_t i) {
    return i >= 0 && i < g->n_tensors ? &g->tensors[i] : NULL;
}

/* bsearch comparators: a name against an entry of the sorted pointer arrays */
static int cmp_key_kv(const void *key, const void *e) {
    return strcmp(key, (*(const tg_gguf_kv *const *)e)->key);
}
static int cmp_name_tensor(const void *name, const void *e) {
    return strcmp(name, (*(const tg_gguf_tensor *const *)e)->name);
}

const tg_gguf_kv *tg_gguf_find_kv(const tg_gguf *g, const char *key) {
    if (!g->kv_by_key) return NULL;
    const tg_gguf_kv *const *hit =
        bsearch(key, g->kv_by_key, (size_t)g->n_kv, sizeof *g->kv_by_key, cmp_key_kv);
    return hit ? *hit : NULL;
}

const tg_gguf_tensor *tg_gguf_find_tensor(const tg_gguf *g, const char *name) {
    if (!g->t_by_name) return NULL;
    const tg_gguf_tensor *const *hit =
        bsearch(name, g->t_by_name, (size_t)g->n_tensors, sizeof *g->t_by_name, cmp_name_tensor);
    return hit ? *hit : NULL;
}

void tg_gguf_kv_str(const tg_gguf *g, const tg_gguf_kv *kv, uint64_t i, const char **s, size_t *len) {
    if (!kv->str_off || i >= kv->n) {
        *s = "";
        *len = 0;
        return;
    }
    const uint8_t *p = g->base + kv->str_off[i];
    *len = (size_t)rd64(p);
    *s = (const char *)p + 8;
}

static int is_num(uint32_t t) { return t < TG_GGUF_VTYPE_COUNT && t != TG_GGUF_STRING && t != TG_GGUF_ARRAY; }

double tg_gguf_kv_num(const tg_gguf_kv *kv, uint64_t i) {
    uint32_t t = kv->type == TG_GGUF_ARRAY ? kv->arr_type : kv->type;
    if (!is_num(t) || i >= kv->n || !kv->data) return NAN;
    const uint8_t *p = kv->data + i * vtype_size[t];
    switch ((tg_gguf_vtype)t) {
    case TG_GGUF_UINT8: case TG_GGUF_BOOL: return p[0];
    case TG_GGUF_INT8: return (int8_t)p[0];
    case TG_GGUF_UINT16: return rd16(p);
    case TG_GGUF_INT16: return (int16_t)rd16(p);
    case TG_GGUF_UINT32: return rd32(p);
    case TG_GGUF_INT32: return (int32_t)rd32(p);
    case TG_GGUF_FLOAT32: return bits_f32(rd32(p));
    case TG_GGUF_UINT64: return (double)rd64(p);
    case TG_GGUF_INT64: return (double)(int64_t)rd64(p);
    case TG_GGUF_FLOAT64: {
        uint64_t u = rd64(p);
        double d;
        memcpy(&d, &u, 8);
        return d;
    }
    default: return NAN;
    }
}

int64_t tg_gguf_kv_int(const tg_gguf_kv *kv, uint64_t i) {
    uint32_t t = kv->type == TG_GGUF_ARRAY ? kv->arr_type : kv->type;
    if (!is_num(t) || i >= kv->n || !kv->data) return 0;
    const uint8_t *p = kv->data + i * vtype_size[t];
    switch ((tg_gguf_vtype)t) {
    case TG_GGUF_UINT8: case TG_GGUF_BOOL: return p[0];
    case TG_GGUF_INT8: return (int8_t)p[0];
    case TG_GGUF_UINT16: return rd16(p);
    case TG_GGUF_INT16: return (int16_t)rd16(p);
    case TG_GGUF_UINT32: return rd32(p);
    case TG_GGUF_INT32: return (int32_t)rd32(p);
    case TG_GGUF_UINT64: return rd64(p) > INT64_MAX ? INT64_MAX : (int64_t)rd64(p);
    case TG_GGUF_INT64: return (int64_t)rd64(p);
    default: {
        double d = tg_gguf_kv_num(kv, i);
        return isfinite(d) && fabs(d) < 9.2e18 ? (int64_t)d : 0;
    }
    }
}

static tg_status find_scalar(const tg_gguf *g, const char *key, const tg_gguf_kv **kv, tg_err *err) {
    *kv = tg_gguf_find_kv(g, key);
    if (!*kv) return tg_fail(err, TG_ERR_ARG, "%s: missing key '%s'", g->name, key);
    if ((*kv)->type == TG_GGUF_ARRAY)
        return tg_fail(err, TG_ERR_FORMAT, "%s: key '%s' is an array, expected a single value", g->name, key);
    return TG_OK;
}

/* The scalar `key`, which must have an integer type. */
static tg_status find_integer(const tg_gguf *g, const char *key, const tg_gguf_kv **kv,
                              tg_err *err) {
    tg_status s = find_scalar(g, key, kv, err);
    if (s) return s;
    switch ((*kv)->type) {
    case TG_GGUF_UINT8: case TG_GGUF_UINT16: case TG_GGUF_UINT32: case TG_GGUF_UINT64:
    case TG_GGUF_INT8: case TG_GGUF_INT16: case TG_GGUF_INT32: case TG_GGUF_INT64:
        return TG_OK;
    default:
        return tg_fail(err, TG_ERR_FORMAT, "%s: key '%s' has type %s, expected an integer", g->name, key,
                       tg_gguf_vtype_name((*kv)->type));
    }
}

tg_status tg_gguf_get_uint(const tg_gguf *g, const char *key, uint64_t *out, tg_err *err) {
    const tg_gguf_kv *kv;
    tg_status s = find_integer(g, key, &kv, err);
    if (s) return s;
    if (kv->type == TG_GGUF_UINT64) {
        *out = rd64(kv->data);
        return TG_OK;
    }
    int64_t v = tg_gguf_kv_int(kv, 0);
    if (v < 0) return tg_fail(err, TG_ERR_FORMAT, "%s: key '%s' is negative (%" PRId64 ")", g->name, key, v);
    *out = (uint64_t)v;
    return TG_OK;
}

tg_status tg_gguf_get_int(const tg_gguf *g, const char *key, int64_t *out, tg_err *err) {
    const tg_gguf_kv *kv;
    tg_status s = find_integer(g, key, &kv, err);
    if (s) return s;
    if (kv->type == TG_GGUF_UINT64 && rd64(kv->data) > INT64_MAX)
        return tg_fail(err, TG_ERR_FORMAT, "%s: key '%s' is too large", g->name, key);
    *out = tg_gguf_kv_int(kv, 0);
    return TG_OK;
}

tg_status tg_gguf_get_float(const tg_gguf *g, const char *key, double *out, tg_err *err) {
    const tg_gguf_kv *kv;
    tg_status s = find_scalar(g, key, &kv, err);
    if (s) return s;
    if (kv->type != TG_GGUF_FLOAT32 && kv->type != TG_GGUF_FLOAT64)
        return tg_fail(err, TG_ERR_FORMAT, "%s: key '%s' has type %s, expected float32", g->name, key,
                       tg_gguf_vtype_name(kv->type));
    *out = tg_gguf_kv_num(kv, 0);
    return TG_OK;
}

tg_status tg_gguf_get_bool(const tg_gguf *g, const char *key, int *out, tg_err *err) {
    const tg_gguf_kv *kv;
    tg_status s = find_scalar(g, key, &kv, err);
    if (s) return s;
    if (kv->type != TG_GGUF_BOOL)
        return tg_fail(err, TG_ERR_FORMAT, "%s: key '%s' has type %s, expected bool", g->name, key,
                       tg_gguf_vtype_name(kv->type));
    *out = kv->data[0];
    return TG_OK;
}

tg_status tg_gguf_get_str(const tg_gguf *g, const char *key, const char **str, size_t *len, tg_err *err) {
    const tg_gguf_kv *kv;
    tg_status s = find_scalar(g, key, &kv, err);
    if (s) return s;
    if (kv->type != TG_GGUF_STRING)
        return tg_fail(err, TG_ERR_FORMAT, "%s: key '%s' has type %s, expected string", g->name, key,
                       tg_gguf_vtype_name(kv->type));
    tg_gguf_kv_str(g, kv, 0, str, len);
    return TG_OK;
}

/* ---- tensor data ----------------------------------------------------------- */

/* f16 -> f32 by table: 256 KiB, built once; ~10x the branchy conversion */
static float f16_table[65536];
static pthread_once_t f16_once = PTHREAD_ONCE_INIT;
static void f16_table_init(void) {
    for (uint32_t h = 0; h < 65536; h++) f16_table[h] = tg_f16_to_f32((uint16_t)h);
}

tg_status tg_gguf_tensor_to_f32(const tg_gguf_tensor *t, float *out, tg_err *err) {
    const uint8_t *p = t->data;
    uint64_t n = t->n_elements;
    if (!p && n) return tg_fail(err, TG_ERR_ARG, "tensor '%s' has no data", t->name);
    switch (t->type) {
    case TG_GGML_F32:
        memcpy(out, p, (size_t)n * 4);
        return TG_OK;
    case TG_GGML_F16:
        pthread_once(&f16_once, f16_table_init);
        for (uint64_t i = 0; i < n; i++) out[i] = f16_table[rd16(p + 2 * i)];
        return TG_OK;
    case TG_GGML_BF16:
        for (uint64_t i = 0; i < n; i++) out[i] = tg_bf16_to_f32(rd16(p + 2 * i));
        return TG_OK;
    case TG_GGML_Q8_0:
        for (uint64_t b = 0; b < n / TG_Q8_0_BLOCK; b++) {
            const uint8_t *blk = p + b * 34;
            float d = tg_f16_to_f32(rd16(blk));
            for (int j = 0; j < TG_Q8_0_BLOCK; j++) out[b * TG_Q8_0_BLOCK + j] = d * (float)(int8_t)blk[2 + j];
        }
        return TG_OK;
    case TG_GGML_Q4_0: /* d, then element j (< 16) in the low nibble of byte j, j + 16 in its high one */
        for (uint64_t b = 0; b < n / 32; b++) {
            const uint8_t *blk = p + b * 18;
            float d = tg_f16_to_f32(rd16(blk));
            for (int j = 0; j < 16; j++) {
                out[b * 32 + j] = d * (float)((blk[2 + j] & 15) - 8);
                out[b * 32 + j + 16] = d * (float)((blk[2 + j] >> 4) - 8);
            }
        }
        return TG_OK;
    default:
        return tg_fail(err, TG_ERR_UNSUPPORTED, "tensor '%s': type %s cannot be loaded (F32, F16, BF16, Q8_0, Q4_0 only)",
                       t->name, tg_ggml_type_name(t->type) ? tg_ggml_type_name(t->type) : "?");
    }
}
