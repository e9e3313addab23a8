/* safetensors.c — see safetensors.h. */
#include "weights/safetensors.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "weights/file.h"
#include "weights/gguf.h" /* f16/bf16 conversions */
#include "weights/internal.h"

static const struct { const char *name; int size; } st_dtypes[] = {
    {"F64", 8}, {"F32", 4}, {"F16", 2}, {"BF16", 2}, {"I64", 8}, {"I32", 4}, {"I16", 2},
    {"I8", 1},  {"U64", 8}, {"U32", 4}, {"U16", 2},  {"U8", 1},  {"BOOL", 1},
    {"F8_E4M3", 1}, {"F8_E5M2", 1},
};

cJSON *wt_json_parse(const char *s, size_t n) {
    const char *end = NULL;
    cJSON *j = cJSON_ParseWithLengthOpts(s, n, &end, 0);
    if (!j) return NULL;
    /* only whitespace may follow the value (cJSON would ignore the rest) */
    for (const char *p = end; p && p < s + n; p++)
        if (*p != ' ' && *p != '\t' && *p != '\r' && *p != '\n' && *p != 0) {
            cJSON_Delete(j);
            return NULL;
        }
    return j;
}

static int cmp_name(const void *a, const void *b) {
    return strcmp(((const tg_st_tensor *)a)->name, ((const tg_st_tensor *)b)->name);
}
static int cmp_begin(const void *a, const void *b) {
    uint64_t x = (*(const tg_st_tensor *const *)a)->begin, y = (*(const tg_st_tensor *const *)b)->begin;
    return x < y ? -1 : x > y;
}

/* A JSON number that is an exact non-negative integer below 2^53. */
static int json_uint(const cJSON *j, uint64_t *out) {
    if (!cJSON_IsNumber(j)) return 0;
    double v = j->valuedouble;
    if (!(v >= 0 && v <= 9007199254740992.0) || v != floor(v)) return 0;
    *out = (uint64_t)v;
    return 1;
}

static tg_status parse_entry(const tg_st *st, const cJSON *e, tg_st_tensor *t, uint64_t data_len, tg_err *err) {
    const char *nm = e->string;
    if (!cJSON_IsObject(e)) return tg_fail(err, TG_ERR_FORMAT, "%s: header entry '%s' is not an object", st->name, nm);
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(e, "dtype");
    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(e, "shape");
    const cJSON *of = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
    if (!cJSON_IsString(dt) || !cJSON_IsArray(sh) || !cJSON_IsArray(of))
        return tg_fail(err, TG_ERR_FORMAT, "%s: tensor '%s' lacks a string dtype, a shape array or a data_offsets array",
                       st->name, nm);
    for (size_t i = 0; i < sizeof st_dtypes / sizeof st_dtypes[0]; i++)
        if (!strcmp(dt->valuestring, st_dtypes[i].name)) {
            snprintf(t->dtype, sizeof t->dtype, "%s", st_dtypes[i].name);
            t->elem_size = st_dtypes[i].size;
        }
    if (!t->elem_size)
        return tg_fail(err, TG_ERR_FORMAT, "%s: tensor '%s': unknown dtype '%.16s'", st->name, nm, dt->valuestring);
    int nd = cJSON_GetArraySize(sh);
    if (nd > TG_ST_MAX_DIMS)
        return tg_fail(err, TG_ERR_FORMAT, "%s: tensor '%s': %d dimensions (max %d)", st->name, nm, nd, TG_ST_MAX_DIMS);
    t->n_dims = nd;
    uint64_t nel = 1;
    int d = 0;
    for (const cJSON *x = sh->child; x; x = x->next, d++) {
        uint64_t v;
        if (!json_uint(x, &v))
            return tg_fail(err, TG_ERR_FORMAT, "%s: tensor '%s': shape[%d] is not a non-negative integer", st->name, nm, d);
        if (v && nel > UINT64_MAX / 8 / v)
            return tg_fail(err, TG_ERR_FORMAT, "%s: tensor '%s': element count overflows", st->name, nm);
        nel *= v;
        t->shape[d] = (int64_t)v;
    }
    t->n_elements = nel;
    uint64_t b, e2;
    if (cJSON_GetArraySize(of) != 2 || !json_uint(of->child, &b) || !json_uint(of->child->next, &e2))
        return tg_fail(err, TG_ERR_FORMAT, "%s: tensor '%s': data_offsets is not [begin, end]", st->name, nm);
    if (b > e2 || e2 > data_len)
        return tg_fail(err, TG_ERR_FORMAT,
                       "%s: tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64 "] outside the %" PRIu64 " data bytes",
                       st->name, nm, b, e2, data_len);
    if (e2 - b != nel * (uint64_t)t->elem_size)
        return tg_fail(err, TG_ERR_FORMAT,
                       "%s: tensor '%s': %" PRIu64 " bytes in data_offsets, but shape x %s needs %" PRIu64,
                       st->name, nm, e2 - b, t->dtype, nel * (uint64_t)t->elem_size);
    t->begin = b;
    t->end = e2;
    return TG_OK;
}

static tg_status parse(tg_st *st, tg_err *err) {
    if (st->size < 8)
        return tg_fail(err, TG_ERR_FORMAT, "%s: %zu bytes, too short for a safetensors header", st->name, st->size);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = n << 8 | st->base[i];
    if (n > st->size - 8)
        return tg_fail(err, TG_ERR_FORMAT, "%s: header length %" PRIu64 " is past the end of the file (%zu bytes)",
                       st->name, n, st->size);
    if (n > TG_ST_MAX_HEADER)
        return tg_fail(err, TG_ERR_FORMAT, "%s: header length %" PRIu64 " exceeds %u bytes", st->name, n, TG_ST_MAX_HEADER);
    const char *h = (const char *)st->base + 8;
    if (n < 2 || h[0] != '{')
        return tg_fail(err, TG_ERR_FORMAT, "%s: the header is not a JSON object", st->name);
    uint64_t data_len = st->size - 8 - n;
    cJSON *root = wt_json_parse(h, (size_t)n);
    if (!root || !cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return tg_fail(err, TG_ERR_FORMAT, "%s: the header is not valid JSON", st->name);
    }
    /* trailing content after the object (other than spaces) is malformed too */
    tg_status s = TG_OK;
    int count = 0;
    for (const cJSON *e = root->child; e; e = e->next)
        if (strcmp(e->string, "__metadata__")) count++;
    st->tensors = calloc(count ? (size_t)count : 1, sizeof *st->tensors);
    if (!st->tensors) {
        cJSON_Delete(root);
        return tg_fail(err, TG_ERR_NOMEM, "%s: out of memory", st->name);
    }
    for (const cJSON *e = root->child; e && !s; e = e->next) {
        if (!strcmp(e->string, "__metadata__")) {
            if (!cJSON_IsObject(e)) s = tg_fail(err, TG_ERR_FORMAT, "%s: __metadata__ is not an object", st->name);
            for (const cJSON *m = e->child; m && !s; m = m->next)
                if (!cJSON_IsString(m))
                    s = tg_fail(err, TG_ERR_FORMAT, "%s: __metadata__ value '%s' is not a string", st->name, m->string);
            continue;
        }
        tg_st_tensor *t = &st->tensors[st->n_tensors];
        if (!*e->string) {
            s = tg_fail(err, TG_ERR_FORMAT, "%s: a tensor has an empty name", st->name);
            break;
        }
        if (!(t->name = strdup(e->string))) {
            s = tg_fail(err, TG_ERR_NOMEM, "%s: out of memory", st->name);
            break;
        }
        st->n_tensors++;
        s = parse_entry(st, e, t, data_len, err);
    }
    cJSON_Delete(root);
    if (s) return s;
    qsort(st->tensors, (size_t)st->n_tensors, sizeof *st->tensors, cmp_name);
    for (int i = 1; i < st->n_tensors; i++)
        if (!strcmp(st->tensors[i - 1].name, st->tensors[i].name))
            return tg_fail(err, TG_ERR_FORMAT, "%s: duplicate tensor name '%s'", st->name, st->tensors[i].name);
    /* the tensors must tile the data section exactly */
    tg_st_tensor **by = malloc((st->n_tensors ? (size_t)st->n_tensors : 1) * sizeof *by);
    if (!by) return tg_fail(err, TG_ERR_NOMEM, "%s: out of memory", st->name);
    for (int i = 0; i < st->n_tensors; i++) by[i] = &st->tensors[i];
    qsort(by, (size_t)st->n_tensors, sizeof *by, cmp_begin);
    uint64_t pos = 0;
    for (int i = 0; i < st->n_tensors && !s; i++) {
        if (by[i]->begin != pos)
            s = tg_fail(err, TG_ERR_FORMAT, "%s: tensor '%s' starts at data byte %" PRIu64 ", expected %" PRIu64 " (gap or overlap)",
                        st->name, by[i]->name, by[i]->begin, pos);
        pos = by[i]->end;
    }
    free(by);
    if (s) return s;
    if (pos != data_len)
        return tg_fail(err, TG_ERR_FORMAT, "%s: the tensors cover %" PRIu64 " of the %" PRIu64 " data bytes", st->name,
                       pos, data_len);
    for (int i = 0; i < st->n_tensors; i++) st->tensors[i].data = st->base + 8 + n + st->tensors[i].begin;
    return TG_OK;
}

static tg_status finish(tg_st **out, tg_st *st, tg_err *err) {
    tg_status s = parse(st, err);
    if (s) {
        tg_st_close(st);
        return s;
    }
    *out = st;
    return TG_OK;
}

tg_status tg_st_parse(tg_st **out, const void *buf, size_t len, const char *name, tg_err *err) {
    *out = NULL;
    tg_st *st = calloc(1, sizeof *st);
    if (st) st->map.fd = -1;
    if (!st || !(st->name = strdup(name ? name : "<memory>"))) {
        free(st);
        return tg_fail(err, TG_ERR_NOMEM, "safetensors: out of memory");
    }
    st->base = buf;
    st->size = len;
    return finish(out, st, err);
}

tg_status tg_st_open(tg_st **out, const char *path, tg_err *err) {
    *out = NULL;
    struct stat sb;
    int fd = wt_open_regular(path, &sb, err);
    if (fd < 0) return TG_ERR_IO;
    tg_st *st = calloc(1, sizeof *st);
    if (st) st->map.fd = -1;
    if (!st || !(st->name = strdup(path))) {
        free(st);
        close(fd);
        return tg_fail(err, TG_ERR_NOMEM, "%s: out of memory", path);
    }
    static const uint8_t empty[1];
    st->base = empty;
    st->size = (size_t)sb.st_size;
    tg_status s = wt_map_open(&st->map, fd, st->size, path, err);
    if (s) {
        tg_st_close(st);
        return s;
    }
    if (st->map.addr) st->base = st->map.addr;
    return finish(out, st, err);
}

void tg_st_close(tg_st *st) {
    if (!st) return;
    for (int i = 0; i < st->n_tensors; i++) free(st->tensors[i].name);
    free(st->tensors);
    wt_map_close(&st->map);
    free(st->name);
    free(st);
}

const tg_st_tensor *tg_st_find(const tg_st *st, const char *name) {
    tg_st_tensor key = {.name = (char *)name};
    return bsearch(&key, st->tensors, (size_t)st->n_tensors, sizeof *st->tensors, cmp_name);
}

tg_status tg_st_to_f32(const tg_st_tensor *t, float *out, tg_err *err) {
    const uint8_t *p = t->data;
    uint64_t n = t->n_elements;
    if (!strcmp(t->dtype, "F32")) {
        memcpy(out, p, (size_t)n * 4);
    } else if (!strcmp(t->dtype, "F16")) {
        for (uint64_t i = 0; i < n; i++) out[i] = tg_f16_to_f32((uint16_t)(p[2 * i] | p[2 * i + 1] << 8));
    } else if (!strcmp(t->dtype, "BF16")) {
        for (uint64_t i = 0; i < n; i++) out[i] = tg_bf16_to_f32((uint16_t)(p[2 * i] | p[2 * i + 1] << 8));
    } else {
        return tg_fail(err, TG_ERR_UNSUPPORTED, "tensor '%s': dtype %s (F32, F16, BF16 load)", t->name, t->dtype);
    }
    return TG_OK;
}

const char *tg_st_folder_why(const char *dir) {
    static const struct {
        const char *file, *why;
    } other[] = {
        {"model.safetensors.index.json",
         "its weights are sharded over several safetensors files (model.safetensors.index.json), which "
         "tinygpt does not read: save them as one model.safetensors (save_pretrained with a max_shard_size "
         "above the model's size)"},
        {"pytorch_model.bin",
         "it holds pytorch_model.bin, a PyTorch pickle, which tinygpt does not read: save the model as "
         "model.safetensors (save_pretrained(DIR, safe_serialization=True))"},
        {"pytorch_model.bin.index.json",
         "it holds sharded PyTorch pickles (pytorch_model.bin.index.json), which tinygpt does not read: "
         "save the model as one model.safetensors"},
        {"tf_model.h5", "it holds TensorFlow weights (tf_model.h5), which tinygpt does not read: "
                        "save the model as model.safetensors"},
        {"flax_model.msgpack", "it holds Flax weights (flax_model.msgpack), which tinygpt does not read: "
                               "save the model as model.safetensors"},
    };
    char path[4096];
    struct stat sb;
    if (snprintf(path, sizeof path, "%s/model.safetensors", dir) >= (int)sizeof path) return NULL;
    if (stat(path, &sb) == 0) return NULL;
    for (size_t i = 0; i < sizeof other / sizeof other[0]; i++) {
        if (snprintf(path, sizeof path, "%s/%s", dir, other[i].file) >= (int)sizeof path) return NULL;
        if (stat(path, &sb) == 0) return other[i].why;
    }
    return NULL;
}
