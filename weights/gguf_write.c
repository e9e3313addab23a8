/* gguf_write.c — the GGUF v3 writer (see gguf.h). Metadata values are
 * serialised when set; tensor data is borrowed and converted while writing,
 * straight into a temporary file that is renamed into place at the end. */
#include "engine/engine.h"
#include "weights/gguf.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct wkv {
    char *key;
    uint32_t type;
    uint8_t *val;      /* serialised value (after the type field) */
    size_t len;
} wkv;

typedef struct wtensor {
    char *name;
    int n_dims;
    int64_t ne[TG_GGUF_MAX_DIMS];
    uint32_t type;
    const void *data;
    int from_f32;      /* data is f32, convert to `type` while writing */
    void *owned;       /* data, when the writer frees it */
    uint64_t nbytes, offset;
} wtensor;

struct tg_gguf_writer {
    wkv *kv;
    size_t n_kv, cap_kv;
    wtensor *t;
    size_t n_t, cap_t;
    uint32_t alignment;
};

/* a growable byte buffer */
typedef struct buf {
    uint8_t *p;
    size_t len, cap;
    int oom;
} buf;

static void put(buf *b, const void *src, size_t n) {
    if (b->oom) return;
    if (n > SIZE_MAX - b->len) {
        b->oom = 1;
        return;
    }
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->len + n) cap = cap > SIZE_MAX / 2 ? b->len + n : cap * 2;
        uint8_t *p = realloc(b->p, cap);
        if (!p) {
            b->oom = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, src, n);
    b->len += n;
}
static void put32(buf *b, uint32_t v) {
    uint8_t x[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    put(b, x, 4);
}
static void put64(buf *b, uint64_t v) {
    put32(b, (uint32_t)v);
    put32(b, (uint32_t)(v >> 32));
}
static void put_str(buf *b, const char *s, size_t n) {
    put64(b, n);
    put(b, s, n);
}

tg_status tg_gguf_writer_new(tg_gguf_writer **out, tg_err *err) {
    *out = calloc(1, sizeof **out);
    if (!*out) return tg_fail(err, TG_ERR_NOMEM, "gguf writer: out of memory");
    (*out)->alignment = TG_GGUF_DEFAULT_ALIGNMENT;
    return TG_OK;
}

void tg_gguf_writer_free(tg_gguf_writer *w) {
    if (!w) return;
    for (size_t i = 0; i < w->n_kv; i++) {
        free(w->kv[i].key);
        free(w->kv[i].val);
    }
    for (size_t i = 0; i < w->n_t; i++) {
        free(w->t[i].name);
        free(w->t[i].owned);
    }
    free(w->kv);
    free(w->t);
    free(w);
}

/* Takes ownership of b->p. */
static tg_status set_kv(tg_gguf_writer *w, const char *key, uint32_t type, buf *b, tg_err *err) {
    if (b->oom) {
        free(b->p);
        return tg_fail(err, TG_ERR_NOMEM, "gguf writer: key '%s': out of memory", key);
    }
    if (!key || !*key) {
        free(b->p);
        return tg_fail(err, TG_ERR_ARG, "gguf writer: empty key");
    }
    for (size_t i = 0; i < w->n_kv; i++)
        if (!strcmp(w->kv[i].key, key)) {
            free(w->kv[i].val);
            w->kv[i].type = type;
            w->kv[i].val = b->p;
            w->kv[i].len = b->len;
            return TG_OK;
        }
    if (w->n_kv == w->cap_kv) {
        size_t cap = w->cap_kv ? w->cap_kv * 2 : 32;
        wkv *kv = realloc(w->kv, cap * sizeof *kv);
        if (!kv) {
            free(b->p);
            return tg_fail(err, TG_ERR_NOMEM, "gguf writer: out of memory");
        }
        w->kv = kv;
        w->cap_kv = cap;
    }
    char *k = strdup(key);
    if (!k) {
        free(b->p);
        return tg_fail(err, TG_ERR_NOMEM, "gguf writer: out of memory");
    }
    w->kv[w->n_kv++] = (wkv){k, type, b->p, b->len};
    return TG_OK;
}

#define SCALAR_SETTER(fn, T, vt, emit)                                                   \
    tg_status fn(tg_gguf_writer *w, const char *key, T v, tg_err *err) {                 \
        buf b = {0};                                                                     \
        emit;                                                                            \
        return set_kv(w, key, vt, &b, err);                                              \
    }

SCALAR_SETTER(tg_gguf_set_u32, uint32_t, TG_GGUF_UINT32, put32(&b, v))
SCALAR_SETTER(tg_gguf_set_i32, int32_t, TG_GGUF_INT32, put32(&b, (uint32_t)v))
SCALAR_SETTER(tg_gguf_set_u64, uint64_t, TG_GGUF_UINT64, put64(&b, v))
SCALAR_SETTER(tg_gguf_set_i64, int64_t, TG_GGUF_INT64, put64(&b, (uint64_t)v))
SCALAR_SETTER(tg_gguf_set_f32, float, TG_GGUF_FLOAT32, { uint32_t u; memcpy(&u, &v, 4); put32(&b, u); })
SCALAR_SETTER(tg_gguf_set_f64, double, TG_GGUF_FLOAT64, { uint64_t u; memcpy(&u, &v, 8); put64(&b, u); })
SCALAR_SETTER(tg_gguf_set_bool, int, TG_GGUF_BOOL, { uint8_t x = v != 0; put(&b, &x, 1); })
SCALAR_SETTER(tg_gguf_set_str, const char *, TG_GGUF_STRING, put_str(&b, v, strlen(v)))

static const size_t elem_size[TG_GGUF_VTYPE_COUNT] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};

tg_status tg_gguf_set_arr(tg_gguf_writer *w, const char *key, uint32_t elem_type, const void *vals,
                          uint64_t n, tg_err *err) {
    if (elem_type >= TG_GGUF_VTYPE_COUNT || !elem_size[elem_type])
        return tg_fail(err, TG_ERR_ARG, "gguf writer: key '%s': array element type %u is not numeric", key, elem_type);
    size_t sz = elem_size[elem_type];
    if (n > SIZE_MAX / sz) return tg_fail(err, TG_ERR_ARG, "gguf writer: key '%s': array too long", key);
    buf b = {0};
    put32(&b, elem_type);
    put64(&b, n);
    const uint8_t *p = vals;
    for (uint64_t i = 0; i < n; i++) { /* little-endian element by element */
        uint64_t v = 0;
        memcpy(&v, p + i * sz, sz); /* host is little-endian (x86-64, aarch64) */
        for (size_t k = 0; k < sz; k++) {
            uint8_t x = (uint8_t)(v >> (8 * k));
            put(&b, &x, 1);
        }
    }
    return set_kv(w, key, TG_GGUF_ARRAY, &b, err);
}

tg_status tg_gguf_set_arr_str(tg_gguf_writer *w, const char *key, const char *const *vals, uint64_t n,
                              tg_err *err) {
    buf b = {0};
    put32(&b, TG_GGUF_STRING);
    put64(&b, n);
    for (uint64_t i = 0; i < n; i++) put_str(&b, vals[i], strlen(vals[i]));
    return set_kv(w, key, TG_GGUF_ARRAY, &b, err);
}

tg_status tg_gguf_set_kv_from(tg_gguf_writer *w, const tg_gguf *g, const tg_gguf_kv *kv, tg_err *err) {
    /* the value's bytes run from file_offset to the next field; re-serialise
     * from the parsed form to stay independent of the source layout */
    buf b = {0};
    if (kv->type == TG_GGUF_STRING) {
        const char *s;
        size_t len;
        tg_gguf_kv_str(g, kv, 0, &s, &len);
        put_str(&b, s, len);
    } else if (kv->type == TG_GGUF_ARRAY && kv->arr_type == TG_GGUF_STRING) {
        put32(&b, TG_GGUF_STRING);
        put64(&b, kv->n);
        for (uint64_t i = 0; i < kv->n; i++) {
            const char *s;
            size_t len;
            tg_gguf_kv_str(g, kv, i, &s, &len);
            put_str(&b, s, len);
        }
    } else if (kv->type == TG_GGUF_ARRAY) {
        put32(&b, kv->arr_type);
        put64(&b, kv->n);
        put(&b, kv->data, (size_t)kv->n * elem_size[kv->arr_type]);
    } else {
        put(&b, kv->data, elem_size[kv->type]);
    }
    return set_kv(w, kv->key, kv->type, &b, err);
}

tg_status tg_gguf_set_alignment(tg_gguf_writer *w, uint32_t alignment, tg_err *err) {
    if (!alignment || (alignment & (alignment - 1)))
        return tg_fail(err, TG_ERR_ARG, "gguf writer: alignment %u is not a power of two", alignment);
    w->alignment = alignment;
    return tg_gguf_set_u32(w, "general.alignment", alignment, err);
}

static tg_status add_tensor(tg_gguf_writer *w, const char *name, int n_dims, const int64_t *ne,
                            uint32_t type, const void *data, int from_f32, tg_err *err) {
    if (!name || !*name || strlen(name) > TG_GGUF_MAX_NAME)
        return tg_fail(err, TG_ERR_ARG, "gguf writer: tensor name '%s' is empty or longer than %d bytes",
                       name ? name : "", TG_GGUF_MAX_NAME);
    if (n_dims < 1 || n_dims > TG_GGUF_MAX_DIMS)
        return tg_fail(err, TG_ERR_ARG, "gguf writer: tensor '%s': %d dimensions", name, n_dims);
    int blck = tg_ggml_blck_size(type);
    if (!blck) return tg_fail(err, TG_ERR_ARG, "gguf writer: tensor '%s': unknown type %u", name, type);
    if (from_f32 && !tg_ggml_type_to_f32_ok(type))
        return tg_fail(err, TG_ERR_ARG, "gguf writer: tensor '%s': cannot store f32 data as %s", name,
                       tg_ggml_type_name(type));
    wtensor t = {0};
    uint64_t nel = 1;
    for (int d = 0; d < TG_GGUF_MAX_DIMS; d++) t.ne[d] = 1;
    for (int d = 0; d < n_dims; d++) {
        if (ne[d] <= 0 || (uint64_t)ne[d] > (uint64_t)INT64_MAX / nel)
            return tg_fail(err, TG_ERR_ARG, "gguf writer: tensor '%s': bad dimension %d (%" PRId64 ")", name, d, ne[d]);
        t.ne[d] = ne[d];
        nel *= (uint64_t)ne[d];
    }
    if (t.ne[0] % blck)
        return tg_fail(err, TG_ERR_ARG, "gguf writer: tensor '%s': row length %" PRId64 " is not a multiple of %d for %s",
                       name, t.ne[0], blck, tg_ggml_type_name(type));
    t.nbytes = nel / (uint64_t)blck * tg_ggml_type_size(type);
    for (size_t i = 0; i < w->n_t; i++)
        if (!strcmp(w->t[i].name, name))
            return tg_fail(err, TG_ERR_ARG, "gguf writer: duplicate tensor '%s'", name);
    if (w->n_t == w->cap_t) {
        size_t cap = w->cap_t ? w->cap_t * 2 : 64;
        wtensor *nt = realloc(w->t, cap * sizeof *nt);
        if (!nt) return tg_fail(err, TG_ERR_NOMEM, "gguf writer: out of memory");
        w->t = nt;
        w->cap_t = cap;
    }
    if (!(t.name = strdup(name))) return tg_fail(err, TG_ERR_NOMEM, "gguf writer: out of memory");
    t.n_dims = n_dims;
    t.type = type;
    t.data = data;
    t.from_f32 = from_f32;
    w->t[w->n_t++] = t;
    return TG_OK;
}

tg_status tg_gguf_add_tensor_f32(tg_gguf_writer *w, const char *name, int n_dims, const int64_t *ne,
                                 const float *data, uint32_t type, tg_err *err) {
    return add_tensor(w, name, n_dims, ne, type, data, 1, err);
}

tg_status tg_gguf_add_tensor_f32_owned(tg_gguf_writer *w, const char *name, int n_dims, const int64_t *ne,
                                       float *data, uint32_t type, tg_err *err) {
    tg_status s = add_tensor(w, name, n_dims, ne, type, data, 1, err);
    if (s) free(data);
    else w->t[w->n_t - 1].owned = data;
    return s;
}

tg_status tg_gguf_add_tensor_raw(tg_gguf_writer *w, const char *name, int n_dims, const int64_t *ne,
                                 uint32_t type, const void *data, tg_err *err) {
    return add_tensor(w, name, n_dims, ne, type, data, 0, err);
}

/* Writes one tensor's bytes, converting f32 data in chunks. */
static int write_tensor(FILE *f, const wtensor *t) {
    if (!t->from_f32 || t->type == TG_GGML_F32) return fwrite(t->data, 1, (size_t)t->nbytes, f) == t->nbytes;
    const float *x = t->data;
    uint64_t n = t->nbytes / tg_ggml_type_size(t->type) * (uint64_t)tg_ggml_blck_size(t->type);
    uint8_t chunk[34 * 128];
    for (uint64_t i = 0; i < n;) {
        size_t len = 0;
        if (t->type == TG_GGML_Q8_0 || t->type == TG_GGML_Q4_0) {
            /* the engine's reference encoders (ggml's block layouts) */
            uint64_t nb = (n - i) / 32 < 128 ? (n - i) / 32 : 128;
            tg_wtype wt = t->type == TG_GGML_Q8_0 ? TG_WTYPE_Q8_0 : TG_WTYPE_Q4_0;
            tg_quantize_row(wt, chunk, x + i, (int)nb * 32);
            len = (size_t)nb * tg_ggml_type_size(t->type);
            i += nb * 32;
        } else {
            for (; len + 2 <= sizeof chunk && i < n; i++, len += 2) {
                uint16_t h = t->type == TG_GGML_F16 ? tg_f32_to_f16(x[i]) : tg_f32_to_bf16(x[i]);
                chunk[len] = (uint8_t)h;
                chunk[len + 1] = (uint8_t)(h >> 8);
            }
        }
        if (fwrite(chunk, 1, len, f) != len) return 0;
    }
    return 1;
}

static int pad_to(FILE *f, uint64_t pos, uint32_t alignment) {
    static const uint8_t zeros[64];
    uint64_t pad = (alignment - pos % alignment) % alignment;
    while (pad) {
        size_t n = pad > sizeof zeros ? sizeof zeros : (size_t)pad;
        if (fwrite(zeros, 1, n, f) != n) return 0;
        pad -= n;
    }
    return 1;
}

tg_status tg_gguf_write_to(const tg_gguf_writer *w, FILE *f, const char *path, tg_err *err) {
    /* header: magic, version, counts, metadata, tensor infos */
    buf h = {0};
    put(&h, "GGUF", 4);
    put32(&h, 3);
    put64(&h, w->n_t);
    put64(&h, w->n_kv);
    for (size_t i = 0; i < w->n_kv; i++) {
        put_str(&h, w->kv[i].key, strlen(w->kv[i].key));
        put32(&h, w->kv[i].type);
        put(&h, w->kv[i].val, w->kv[i].len);
    }
    uint64_t off = 0;
    for (size_t i = 0; i < w->n_t; i++) {
        wtensor *t = &w->t[i];
        put_str(&h, t->name, strlen(t->name));
        put32(&h, (uint32_t)t->n_dims);
        for (int d = 0; d < t->n_dims; d++) put64(&h, (uint64_t)t->ne[d]);
        put32(&h, t->type);
        t->offset = off; /* the writer is logically const: offsets are a cache */
        put64(&h, off);
        off += t->nbytes;
        off += (w->alignment - off % w->alignment) % w->alignment;
    }
    if (h.oom) {
        free(h.p);
        return tg_fail(err, TG_ERR_NOMEM, "%s: out of memory building the GGUF header", path);
    }
    int ok = fwrite(h.p, 1, h.len, f) == h.len && pad_to(f, h.len, w->alignment);
    for (size_t i = 0; ok && i < w->n_t; i++)
        ok = write_tensor(f, &w->t[i]) && pad_to(f, w->t[i].offset + w->t[i].nbytes, w->alignment);
    int e = errno;
    free(h.p);
    if (!ok) return tg_fail(err, TG_ERR_IO, "%s: write failed: %s", path, e ? strerror(e) : "i/o error");
    return TG_OK;
}

tg_status tg_gguf_write(const tg_gguf_writer *w, const char *path, tg_err *err) {
    size_t n = strlen(path);
    char *tmp = malloc(n + 16);
    if (!tmp) return tg_fail(err, TG_ERR_NOMEM, "%s: out of memory", path);
    snprintf(tmp, n + 16, "%s.tmp.XXXXXX", path);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        int e = errno;
        free(tmp);
        return tg_fail(err, TG_ERR_IO, "%s: cannot write: %s", path, strerror(e));
    }
    fchmod(fd, 0644);
    FILE *f = fdopen(fd, "wb");
    int ok = f != NULL;
    if (!f) close(fd);
    tg_status ws = ok ? tg_gguf_write_to(w, f, path, err) : TG_OK;
    if (ws) {
        fclose(f);
        unlink(tmp);
        free(tmp);
        return ws;
    }
    int e = errno;
    if (f) {
        ok = ok && fflush(f) == 0 && fsync(fileno(f)) == 0;
        e = ok ? 0 : errno;
        ok = (fclose(f) == 0) && ok;
    }
    if (ok && rename(tmp, path) != 0) {
        e = errno;
        ok = 0;
    }
    if (!ok) {
        unlink(tmp);
        free(tmp);
        return tg_fail(err, TG_ERR_IO, "%s: write failed: %s", path, e ? strerror(e) : "i/o error");
    }
    free(tmp);
    return TG_OK;
}
