/* test_hostile.c — malformed and hostile GGUF files: every one must give a
 * clean error (the right code, a message naming the problem) and never
 * crash, hang or read out of bounds (run under ASan+UBSan too).
 *
 * Files are built byte by byte here (not with our writer), so the layout
 * under test is the GGUF spec's, and each field's offset is known. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "tests/weights/testutil.h"
#include "weights/gguf.h"

/* ---- a tiny GGUF builder ---------------------------------------------------- */

typedef struct gb {
    uint8_t *p;
    size_t len, cap;
} gb;

static void gb_put(gb *b, const void *src, size_t n) {
    if (b->len + n > b->cap) {
        b->cap = (b->len + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
    }
    memcpy(b->p + b->len, src, n);
    b->len += n;
}
static void gb_u32(gb *b, uint32_t v) { gb_put(b, &v, 4); }
static void gb_u64(gb *b, uint64_t v) { gb_put(b, &v, 8); }
static void gb_str(gb *b, const char *s) {
    gb_u64(b, strlen(s));
    gb_put(b, s, strlen(s));
}
static void gb_pad(gb *b, size_t a) {
    static const uint8_t z[64];
    gb_put(b, z, (a - b->len % a) % a);
}

/* Field offsets of the reference file, recorded while building it. */
typedef struct layout {
    size_t version, n_tensors, n_kv;
    size_t key0_len, key0_type, key0_val;  /* general.architecture (string) */
    size_t arr_type, arr_len;              /* test.array: array of int32 */
    size_t bool_val;                       /* test.bool */
    size_t t0_name_len, t0_ndims, t0_dim0, t0_dim1, t0_type, t0_offset;
    size_t t1_name, t1_offset;
    size_t data;
} layout;

/* A valid GGUF with 4 keys and two F32 tensors a [2, 32] and b [32]. */
static gb make_ref(layout *L) {
    gb b = {0};
    gb_put(&b, "GGUF", 4);
    L->version = b.len;
    gb_u32(&b, 3);
    L->n_tensors = b.len;
    gb_u64(&b, 2);
    L->n_kv = b.len;
    gb_u64(&b, 4);
    L->key0_len = b.len;
    gb_str(&b, "general.architecture");
    L->key0_type = b.len;
    gb_u32(&b, TG_GGUF_STRING);
    L->key0_val = b.len;
    gb_str(&b, "test");
    gb_str(&b, "test.array");
    gb_u32(&b, TG_GGUF_ARRAY);
    L->arr_type = b.len;
    gb_u32(&b, TG_GGUF_INT32);
    L->arr_len = b.len;
    gb_u64(&b, 3);
    for (int i = 0; i < 3; i++) gb_u32(&b, (uint32_t)(i * 7));
    gb_str(&b, "test.bool");
    gb_u32(&b, TG_GGUF_BOOL);
    L->bool_val = b.len;
    uint8_t one = 1;
    gb_put(&b, &one, 1);
    gb_str(&b, "test.f64");
    gb_u32(&b, TG_GGUF_FLOAT64);
    double d = 2.5;
    gb_put(&b, &d, 8);
    /* tensor a: ne = {32, 2} (numpy [2, 32]) */
    L->t0_name_len = b.len;
    gb_str(&b, "a");
    L->t0_ndims = b.len;
    gb_u32(&b, 2);
    L->t0_dim0 = b.len;
    gb_u64(&b, 32);
    L->t0_dim1 = b.len;
    gb_u64(&b, 2);
    L->t0_type = b.len;
    gb_u32(&b, TG_GGML_F32);
    L->t0_offset = b.len;
    gb_u64(&b, 0);
    L->t1_name = b.len;
    gb_str(&b, "b");
    gb_u32(&b, 1);
    gb_u64(&b, 32);
    gb_u32(&b, TG_GGML_F32);
    L->t1_offset = b.len;
    gb_u64(&b, 256);
    gb_pad(&b, 32);
    L->data = b.len;
    for (int i = 0; i < 64 + 32; i++) {
        float f = (float)i * 0.25f;
        gb_put(&b, &f, 4);
    }
    return b;
}

static void set32(gb *b, size_t at, uint32_t v) { memcpy(b->p + at, &v, 4); }
static void set64(gb *b, size_t at, uint64_t v) { memcpy(b->p + at, &v, 8); }

/* Parses an exact-size heap copy (so ASan sees any over-read). */
static tg_status parse_copy(const uint8_t *p, size_t n, tg_err *err) {
    uint8_t *c = malloc(n ? n : 1);
    memcpy(c, p, n);
    tg_gguf *g;
    err->msg[0] = 0;
    tg_status s = tg_gguf_parse(&g, c, n, "t.gguf", err);
    if (!s) {
        /* touch everything a caller could touch */
        for (int64_t i = 0; i < tg_gguf_n_tensors(g); i++) {
            const tg_gguf_tensor *t = tg_gguf_tensor_at(g, i);
            if (tg_ggml_type_to_f32_ok(t->type) && t->n_elements < (1u << 20)) {
                float *f = malloc(t->n_elements * sizeof *f + 4);
                tg_err e2;
                cr_assert_eq(tg_gguf_tensor_to_f32(t, f, &e2), TG_OK);
                free(f);
            }
        }
        for (int64_t i = 0; i < tg_gguf_n_kv(g); i++) {
            const tg_gguf_kv *kv = tg_gguf_kv_at(g, i);
            for (uint64_t j = 0; j < kv->n && j < 100; j++) {
                const char *s2;
                size_t len;
                if (kv->type == TG_GGUF_STRING || kv->arr_type == TG_GGUF_STRING) {
                    tg_gguf_kv_str(g, kv, j, &s2, &len);
                    volatile char sink = len ? s2[len - 1] : 0;
                    (void)sink;
                } else {
                    (void)tg_gguf_kv_num(kv, j);
                }
            }
        }
        tg_gguf_close(g);
    } else {
        cr_assert(err->msg[0], "error without a message");
        cr_assert(strchr(err->msg, '\n') == NULL, "message is not one line: %s", err->msg);
    }
    free(c);
    return s;
}

static void expect_fail(gb *b, tg_status want, const char *needle) {
    tg_err err;
    tg_status s = parse_copy(b->p, b->len, &err);
    cr_assert_eq(s, want, "got %d (%s), expected %d containing '%s'", s, err.msg, want, needle);
    cr_assert(strstr(err.msg, needle), "message '%s' lacks '%s'", err.msg, needle);
}

Test(hostile, reference_is_valid) {
    layout L;
    gb b = make_ref(&L);
    tg_gguf *g;
    tg_err err;
    cr_assert_eq(tg_gguf_parse(&g, b.p, b.len, "t", &err), TG_OK, "%s", err.msg);
    cr_assert_eq(tg_gguf_n_kv(g), 4);
    const tg_gguf_tensor *a = tg_gguf_find_tensor(g, "a"), *bt = tg_gguf_find_tensor(g, "b");
    cr_assert(a && bt);
    cr_assert_eq(a->ne[0], 32);
    cr_assert_eq(a->ne[1], 2);
    cr_assert_eq(((const float *)bt->data)[1], 65 * 0.25f);
    const tg_gguf_kv *arr = tg_gguf_find_kv(g, "test.array");
    cr_assert_eq(tg_gguf_kv_int(arr, 2), 14);
    double d;
    cr_assert_eq(tg_gguf_get_float(g, "test.f64", &d, &err), TG_OK);
    cr_assert_eq(d, 2.5);
    uint64_t u;
    cr_assert_eq(tg_gguf_get_uint(g, "test.f64", &u, &err), TG_ERR_FORMAT); /* wrong type */
    cr_assert_eq(tg_gguf_get_uint(g, "nope", &u, &err), TG_ERR_ARG);
    cr_assert_null(tg_gguf_find_tensor(g, "c"));
    tg_gguf_close(g);
    free(b.p);
}

/* GGUF v2 has v3's layout (little-endian); both load. */
Test(hostile, version_2) {
    layout L;
    gb b = make_ref(&L);
    set32(&b, L.version, 2);
    tg_gguf *g;
    tg_err err;
    cr_assert_eq(tg_gguf_parse(&g, b.p, b.len, "t", &err), TG_OK, "%s", err.msg);
    cr_assert_eq(tg_gguf_version(g), 2);
    cr_assert(tg_gguf_find_tensor(g, "b"));
    tg_gguf_close(g);
    free(b.p);
}

Test(hostile, truncated_at_every_byte) {
    layout L;
    gb b = make_ref(&L);
    size_t data_end = L.data + (64 + 32) * 4;
    for (size_t n = 0; n < b.len; n++) {
        tg_err err;
        tg_status s = parse_copy(b.p, n, &err);
        if (n < data_end) cr_assert_eq(s, TG_ERR_FORMAT, "truncated to %zu bytes: got %d (%s)", n, s, err.msg);
    }
    free(b.p);
}

/* Every byte of the header replaced by a few values: whatever the parser
 * says, it must say it cleanly. */
Test(hostile, every_header_byte_corrupted) {
    layout L;
    gb b = make_ref(&L);
    static const uint8_t vals[] = {0x00, 0x01, 0x7f, 0x80, 0xfe, 0xff};
    for (size_t i = 0; i < L.data; i++) {
        uint8_t keep = b.p[i];
        for (size_t k = 0; k < sizeof vals; k++) {
            b.p[i] = vals[k];
            tg_err err;
            (void)parse_copy(b.p, b.len, &err);
        }
        b.p[i] = keep;
    }
    free(b.p);
}

Test(hostile, fields) {
    layout L;
    gb b;
#define CASE(mutate, status, needle) \
    do {                              \
        b = make_ref(&L);             \
        mutate;                       \
        expect_fail(&b, status, needle); \
        free(b.p);                    \
    } while (0)
    CASE(memcpy(b.p, "GGUX", 4), TG_ERR_FORMAT, "not a GGUF file");
    CASE(set32(&b, L.version, 1), TG_ERR_UNSUPPORTED, "version 1");
    CASE(set32(&b, L.version, 4), TG_ERR_UNSUPPORTED, "version 4");
    CASE(set32(&b, L.version, 0x03000000), TG_ERR_UNSUPPORTED, "big-endian");
    CASE(set64(&b, L.n_tensors, UINT64_MAX), TG_ERR_FORMAT, "tensor count");
    CASE(set64(&b, L.n_tensors, 1ull << 40), TG_ERR_FORMAT, "tensor count");
    CASE(set64(&b, L.n_kv, UINT64_MAX / 2), TG_ERR_FORMAT, "metadata count");
    CASE(set64(&b, L.n_kv, 5), TG_ERR_FORMAT, ""); /* eats a tensor info as a key */
    CASE(set64(&b, L.key0_len, UINT64_MAX), TG_ERR_FORMAT, "metadata key has length");
    CASE(set64(&b, L.key0_len, 0), TG_ERR_FORMAT, "empty");
    CASE(set32(&b, L.key0_type, 13), TG_ERR_FORMAT, "value type 13");
    CASE(set32(&b, L.key0_type, 0x80000000u), TG_ERR_FORMAT, "is not a GGUF type");
    CASE(set64(&b, L.key0_val, 1ull << 62), TG_ERR_FORMAT, "string value has length");
    CASE(set32(&b, L.arr_type, TG_GGUF_ARRAY), TG_ERR_FORMAT, "arrays of arrays");
    CASE(set32(&b, L.arr_type, 99), TG_ERR_FORMAT, "array element type 99");
    CASE(set64(&b, L.arr_len, UINT64_MAX), TG_ERR_FORMAT, "array of");
    CASE(set64(&b, L.arr_len, 1ull << 61), TG_ERR_FORMAT, "array of");
    CASE(b.p[L.bool_val] = 2, TG_ERR_FORMAT, "bool value 2");
    CASE(set64(&b, L.t0_name_len, 64), TG_ERR_FORMAT, "tensor"); /* length past the real name */
    CASE(set32(&b, L.t0_ndims, 5), TG_ERR_FORMAT, "5 dimensions");
    CASE(set32(&b, L.t0_ndims, UINT32_MAX), TG_ERR_FORMAT, "dimensions");
    CASE(set64(&b, L.t0_dim0, (uint64_t)-32), TG_ERR_FORMAT, "negative");
    CASE((set64(&b, L.t0_dim0, 1ull << 40), set64(&b, L.t0_dim1, 1ull << 40)), TG_ERR_FORMAT, "overflows");
    CASE((set64(&b, L.t0_dim0, 1ull << 62), set64(&b, L.t0_dim1, 1)), TG_ERR_FORMAT, "");
    CASE(set64(&b, L.t0_dim0, 1ull << 33), TG_ERR_FORMAT, "past the end");
    CASE(set32(&b, L.t0_type, 99), TG_ERR_FORMAT, "unknown tensor type 99");
    CASE(set32(&b, L.t0_type, 4), TG_ERR_FORMAT, "unknown tensor type 4"); /* removed Q4_2 */
    CASE((set32(&b, L.t0_type, TG_GGML_Q8_0), set64(&b, L.t0_dim0, 33)), TG_ERR_FORMAT, "block size");
    CASE((set32(&b, L.t0_type, TG_GGML_Q4_0), set64(&b, L.t0_dim0, 48)), TG_ERR_FORMAT, "block size");
    CASE(set64(&b, L.t0_offset, 4), TG_ERR_FORMAT, "not a multiple of the alignment");
    CASE(set64(&b, L.t0_offset, 1ull << 60), TG_ERR_FORMAT, "past the end");
    CASE(set64(&b, L.t0_offset, UINT64_MAX - 31), TG_ERR_FORMAT, "past the end");
    CASE(set64(&b, L.t1_offset, 512), TG_ERR_FORMAT, "past the end");
    CASE(set64(&b, L.t1_offset, 224), TG_ERR_FORMAT, "overlap");
    CASE(b.p[L.t1_name + 8] = 'a', TG_ERR_FORMAT, "duplicate tensor name 'a'");
    /* type confusion: F32 data declared with a smaller type leaves bytes no
     * tensor covers (a gap before the next tensor, or after the last one) */
    CASE(set32(&b, L.t0_type, TG_GGML_F16), TG_ERR_FORMAT, "tensor 'b' starts 128 bytes after");
    CASE(set32(&b, L.t0_type, TG_GGML_BF16), TG_ERR_FORMAT, "not packed");
    CASE(set32(&b, L.t0_type, TG_GGML_Q8_0), TG_ERR_FORMAT, "not packed");
    CASE(set32(&b, L.t1_offset - 4, TG_GGML_F16), TG_ERR_FORMAT, "64 bytes follow the last tensor");
#undef CASE
}

/* Keys built with another layout: duplicate keys, alignment values. */
static gb kv_file(const char *k1, uint32_t t1, uint64_t v1, const char *k2) {
    gb b = {0};
    gb_put(&b, "GGUF", 4);
    gb_u32(&b, 3);
    gb_u64(&b, 0);
    gb_u64(&b, 2);
    gb_str(&b, k1);
    gb_u32(&b, t1);
    if (t1 == TG_GGUF_UINT32) gb_u32(&b, (uint32_t)v1);
    else gb_u64(&b, v1);
    gb_str(&b, k2);
    gb_u32(&b, TG_GGUF_UINT8);
    uint8_t z = 0;
    gb_put(&b, &z, 1);
    return b;
}

Test(hostile, keys_and_alignment) {
    gb b = kv_file("x", TG_GGUF_UINT32, 1, "x");
    expect_fail(&b, TG_ERR_FORMAT, "duplicate metadata key 'x'");
    free(b.p);
    b = kv_file("general.alignment", TG_GGUF_UINT32, 0, "y");
    expect_fail(&b, TG_ERR_FORMAT, "not a power of two");
    free(b.p);
    b = kv_file("general.alignment", TG_GGUF_UINT32, 48, "y");
    expect_fail(&b, TG_ERR_FORMAT, "not a power of two");
    free(b.p);
    /* 1, 2 and 4 are powers of two but not the multiple of 8 the spec requires */
    for (uint64_t a = 1; a <= 4; a *= 2) {
        b = kv_file("general.alignment", TG_GGUF_UINT32, a, "y");
        expect_fail(&b, TG_ERR_FORMAT, "not a multiple of 8");
        free(b.p);
    }
    b = kv_file("general.alignment", TG_GGUF_UINT64, 32, "y");
    expect_fail(&b, TG_ERR_FORMAT, "expected uint32");
    free(b.p);
    b = kv_file("general.alignment", TG_GGUF_UINT32, 64, "y");
    tg_gguf *g;
    tg_err err;
    cr_assert_eq(tg_gguf_parse(&g, b.p, b.len, "t", &err), TG_OK, "%s", err.msg);
    cr_assert_eq(tg_gguf_alignment(g), 64);
    cr_assert_eq(tg_gguf_n_tensors(g), 0); /* no data section needed */
    tg_gguf_close(g);
    free(b.p);
}

/* Things that are not GGUF at all. */
Test(hostile, not_gguf) {
    struct { const char *content; const char *needle; } cases[] = {
        {"", "empty file"},
        {"version https://git-lfs.github.com/spec/v1\noid sha256:abc\nsize 123\n", "Git LFS pointer"},
        {"<!DOCTYPE html><html><body>404</body></html>", "HTML"},
        {"\n  <html>", "HTML"},
        {"{\"n_layer\": 2}", "JSON"},
        {"GGU", "too short"},
        {"\x10\0\0\0\0\0\0\0{\"a\":1}", "safetensors"},
        {"\x7f" "ELF\x02\x01\x01", "not a GGUF file"},
    };
    char *dir = test_tmpdir();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t n = i == 6 ? 15 : strlen(cases[i].content);
        test_write(dir, "x.gguf", cases[i].content, n);
        char p[512];
        snprintf(p, sizeof p, "%s/x.gguf", dir);
        tg_gpt2_model m;
        tg_err err;
        cr_assert_eq(tg_gpt2_load(&m, p, 0, &err), TG_ERR_FORMAT, "case %zu", i);
        cr_assert(strstr(err.msg, cases[i].needle), "case %zu: '%s' lacks '%s'", i, err.msg, cases[i].needle);
        cr_assert_eq(tg_gpt2_load(&m, p, 1, &err), TG_ERR_FORMAT, "case %zu (vocab only)", i);
    }
    tg_gpt2_model m;
    tg_err err;
    /* a directory that is no model, a missing file, a device */
    cr_assert_neq(tg_gpt2_load(&m, dir, 0, &err), TG_OK);
    cr_assert(strstr(err.msg, "not a model"), "%s", err.msg);
    char p[512];
    snprintf(p, sizeof p, "%s/missing.gguf", dir);
    cr_assert_eq(tg_gpt2_load(&m, p, 0, &err), TG_ERR_IO);
    cr_assert(strstr(err.msg, "No such file"), "%s", err.msg);
    cr_assert_eq(tg_gpt2_load(&m, "/dev/zero", 0, &err), TG_ERR_IO);
    cr_assert(strstr(err.msg, "not a regular file"), "%s", err.msg);
    cr_assert_eq(tg_gpt2_load(&m, "", 0, &err), TG_ERR_ARG);
    test_rmdir(dir);
    free(dir);
}

/* ---- the gpt2 binding on a real model file ----------------------------------- */

static char *write_model(const char *dir, test_model *t, size_t *len) {
    static char path[512];
    snprintf(path, sizeof path, "%s/m.gguf", dir);
    tg_err err;
    cr_assert_eq(tg_gpt2_save(path, &t->cfg, &t->w, &t->vocab, TG_DTYPE_F32, &err), TG_OK, "%s", err.msg);
    size_t cap = 1 << 20;
    char *buf = malloc(cap);
    FILE *f = fopen(path, "rb");
    *len = fread(buf, 1, cap, f);
    fclose(f);
    return buf;
}

/* Truncating a real model at every byte offset, through the whole loader. */
Test(binding, truncated_model_at_every_byte, .timeout = 120) {
    test_model t;
    test_model_make(&t, 1, 1, 4, 4, 1);
    char *dir = test_tmpdir(), p[512];
    size_t len;
    char *buf = write_model(dir, &t, &len);
    /* an in-memory file cut shorter and shorter (no disk writes: ext4 would
     * flush on every truncate-and-rewrite) */
    int fd = memfd_create("cut", 0);
    cr_assert(fd >= 0);
    cr_assert_eq(write(fd, buf, len), (ssize_t)len);
    snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
    /* the data ends with the last tensor; only the final padding may go */
    for (size_t n = len; n-- > 0;) {
        cr_assert_eq(ftruncate(fd, (off_t)n), 0);
        tg_gpt2_model m;
        tg_err err;
        tg_status s = tg_gpt2_load(&m, p, 0, &err);
        if (s == TG_OK) {
            if (n < len - 31) cr_assert_fail("a file cut to %zu of %zu bytes loaded", n, len);
            tg_gpt2_free(&m);
        } else if (s != TG_ERR_FORMAT) {
            cr_assert_fail("cut to %zu: status %d: %s", n, s, err.msg);
        }
    }
    close(fd);
    free(buf);
    test_rmdir(dir);
    free(dir);
    test_model_free(&t);
}

/* Block-typed models (matrices kept Q8_0 / Q4_0 in the mapping) cut at every
 * byte: a clear format error, never a crash or a read past the end; whole,
 * they load with their matrices in the file's type. A width that is not a
 * multiple of 32 cannot be written in a block type. */
Test(binding, block_types_truncated, .timeout = 120) {
    test_model t;
    test_model_make(&t, 1, 1, 32, 4, 1);
    char *dir = test_tmpdir(), path[512], p[512];
    snprintf(path, sizeof path, "%s/q.gguf", dir);
    const tg_dtype types[2] = {TG_DTYPE_Q4_0, TG_DTYPE_Q8_0};
    const tg_wtype wt[2] = {TG_WTYPE_Q4_0, TG_WTYPE_Q8_0};
    for (int k = 0; k < 2; k++) {
        tg_err err;
        cr_assert_eq(tg_gpt2_save(path, &t.cfg, &t.w, &t.vocab, types[k], &err), TG_OK, "%s", err.msg);
        tg_gpt2_model m;
        cr_assert_eq(tg_gpt2_load(&m, path, 0, &err), TG_OK, "%s", err.msg);
        cr_assert_eq(m.w.layers[0].up_w.type, wt[k]);
        cr_assert_eq(m.w.wte.type, wt[k]);
        cr_assert_eq(m.w.layers[0].up_w.row_bytes, tg_wtype_row_bytes(wt[k], 32));
        tg_gpt2_free(&m);
        size_t cap = 1 << 20, len;
        char *buf = malloc(cap);
        FILE *f = fopen(path, "rb");
        len = fread(buf, 1, cap, f);
        fclose(f);
        int fd = memfd_create("cut", 0);
        cr_assert(fd >= 0);
        cr_assert_eq(write(fd, buf, len), (ssize_t)len);
        snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
        /* every byte of the last 2 KB (the last tensors' blocks), every 7th
         * before (the f32 test above covers the header at every byte) */
        for (size_t n = len; n-- > 0;) {
            if (n + 2048 < len && n % 7) continue;
            cr_assert_eq(ftruncate(fd, (off_t)n), 0);
            tg_status s = tg_gpt2_load(&m, p, 0, &err);
            if (s == TG_OK) {
                if (n < len - 31) cr_assert_fail("%s: a file cut to %zu of %zu bytes loaded", tg_wtype_name(wt[k]), n, len);
                tg_gpt2_free(&m);
            } else if (s != TG_ERR_FORMAT) {
                cr_assert_fail("cut to %zu: status %d: %s", n, s, err.msg);
            }
        }
        close(fd);
        free(buf);
    }
    test_model_free(&t);
    test_model_make(&t, 1, 1, 8, 4, 1);
    tg_err err;
    cr_assert_eq(tg_gpt2_save(path, &t.cfg, &t.w, &t.vocab, TG_DTYPE_Q4_0, &err), TG_ERR_ARG);
    cr_assert(strstr(err.msg, "multiples of 32"), "%s", err.msg);
    test_rmdir(dir);
    free(dir);
    test_model_free(&t);
}

/* Rewrites one key or drops one tensor through the writer API. */
typedef void (*edit_fn)(tg_gguf_writer *w, test_model *t);

static tg_status load_edited(test_model *t, edit_fn edit, tg_err *err) {
    char *dir = test_tmpdir(), p[512];
    snprintf(p, sizeof p, "%s/e.gguf", dir);
    tg_gguf_writer *w;
    tg_gguf_writer_new(&w, err);
    cr_assert_eq(tg_gpt2_to_gguf(w, &t->cfg, &t->w, &t->vocab, TG_DTYPE_F32, err), TG_OK, "%s", err->msg);
    edit(w, t);
    cr_assert_eq(tg_gguf_write(w, p, err), TG_OK, "%s", err->msg);
    tg_gguf_writer_free(w);
    tg_gpt2_model m;
    tg_status s = tg_gpt2_load(&m, p, 0, err);
    if (!s) tg_gpt2_free(&m);
    test_rmdir(dir);
    free(dir);
    return s;
}

static void e_arch(tg_gguf_writer *w, test_model *t) { (void)t; tg_gguf_set_str(w, "general.architecture", "falcon", NULL); }
/* a gpt2 file relabelled llama: the llama binding finds no llama.* keys */
static void e_arch_llama(tg_gguf_writer *w, test_model *t) { (void)t; tg_gguf_set_str(w, "general.architecture", "llama", NULL); }
static void e_heads(tg_gguf_writer *w, test_model *t) { (void)t; tg_gguf_set_u32(w, "gpt2.attention.head_count", 3, NULL); }
static void e_ctx_type(tg_gguf_writer *w, test_model *t) { (void)t; tg_gguf_set_str(w, "gpt2.context_length", "4", NULL); }
static void e_ctx(tg_gguf_writer *w, test_model *t) { (void)t; tg_gguf_set_u32(w, "gpt2.context_length", 5, NULL); }
static void e_ff(tg_gguf_writer *w, test_model *t) { (void)t; tg_gguf_set_u64(w, "gpt2.feed_forward_length", 1ull << 40, NULL); }
static void e_eps(tg_gguf_writer *w, test_model *t) { (void)t; tg_gguf_set_f32(w, "gpt2.attention.layer_norm_epsilon", -1, NULL); }
static void e_bos(tg_gguf_writer *w, test_model *t) { (void)t; tg_gguf_set_u32(w, "tokenizer.ggml.bos_token_id", 257, NULL); }
static void e_tok(tg_gguf_writer *w, test_model *t) { (void)t; tg_gguf_set_str(w, "tokenizer.ggml.model", "bert", NULL); }
static void e_tokens(tg_gguf_writer *w, test_model *t) {
    tg_gguf_set_arr_str(w, "tokenizer.ggml.tokens", (const char *const *)t->vocab.tokens, 200, NULL);
}
static void e_types(tg_gguf_writer *w, test_model *t) {
    (void)t;
    int32_t x[3] = {1, 1, 1};
    tg_gguf_set_arr(w, "tokenizer.ggml.token_type", TG_GGUF_INT32, x, 3, NULL);
}
static void e_merge(tg_gguf_writer *w, test_model *t) {
    (void)t;
    const char *m[] = {"nospace"};
    tg_gguf_set_arr_str(w, "tokenizer.ggml.merges", m, 1, NULL);
}

Test(binding, bad_metadata) {
    test_model t;
    test_model_make(&t, 1, 2, 8, 4, 1);
    struct { edit_fn fn; tg_status s; const char *needle; } cases[] = {
        {e_arch, TG_ERR_UNSUPPORTED, "architecture 'falcon'"},
        {e_arch_llama, TG_ERR_FORMAT, "key 'llama.block_count' is missing"},
        {e_heads, TG_ERR_FORMAT, "not a multiple of the head count 3"},
        {e_ctx_type, TG_ERR_FORMAT, "gpt2.context_length' has type string"},
        {e_ctx, TG_ERR_FORMAT, "position_embd.weight' has shape [4, 8], expected [5, 8]"},
        {e_ff, TG_ERR_FORMAT, "gpt2.feed_forward_length' = 1099511627776 is too large"},
        {e_eps, TG_ERR_FORMAT, "layer_norm_epsilon"},
        {e_bos, TG_ERR_FORMAT, "bos_token_id = 257"},
        {e_tok, TG_ERR_UNSUPPORTED, "tokenizer.ggml.model is 'bert'"},
        {e_tokens, TG_ERR_FORMAT, "200"},
        {e_types, TG_ERR_FORMAT, "token_type"},
        {e_merge, TG_ERR_FORMAT, "merges[0]"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tg_err err;
        tg_status s = load_edited(&t, cases[i].fn, &err);
        cr_assert_eq(s, cases[i].s, "case %zu: %d %s", i, s, err.msg);
        cr_assert(strstr(err.msg, cases[i].needle), "case %zu: '%s' lacks '%s'", i, err.msg, cases[i].needle);
    }
    test_model_free(&t);
}

/* Missing and misshapen tensors, found by name whatever their order. */
Test(binding, tensors_by_name) {
    test_model t;
    test_model_make(&t, 2, 2, 8, 4, 0);
    char *dir = test_tmpdir(), p[512];
    snprintf(p, sizeof p, "%s/t.gguf", dir);
    tg_err err;
    /* written in reverse order with output.weight absent: loads, tied */
    {
        tg_gguf_writer *w;
        tg_gguf_writer_new(&w, &err);
        tg_gpt2_to_gguf(w, &t.cfg, NULL, &t.vocab, TG_DTYPE_F32, &err);
        tg_gpt2_config c = t.cfg;
        tg_gguf_set_u32(w, "gpt2.context_length", (uint32_t)c.n_ctx, &err);
        tg_gguf_set_u32(w, "gpt2.embedding_length", (uint32_t)c.n_embd, &err);
        tg_gguf_set_u32(w, "gpt2.feed_forward_length", (uint32_t)c.n_ff, &err);
        tg_gguf_set_u32(w, "gpt2.block_count", (uint32_t)c.n_layer, &err);
        tg_gguf_set_u32(w, "gpt2.attention.head_count", (uint32_t)c.n_head, &err);
        tg_gguf_set_f32(w, "gpt2.attention.layer_norm_epsilon", c.ln_eps, &err);
        tg_gpt2_weights wc = t.w;
        int n = 5 + 12 * 2;
        tg_gguf_writer *full;
        tg_gguf_writer_new(&full, &err);
        tg_gpt2_to_gguf(full, &t.cfg, &wc, &t.vocab, TG_DTYPE_F32, &err);
        tg_gguf_write(full, p, &err);
        tg_gguf_writer_free(full);
        tg_gguf *g;
        cr_assert_eq(tg_gguf_open(&g, p, &err), TG_OK, "%s", err.msg);
        cr_assert_eq(tg_gguf_n_tensors(g), n);
        for (int64_t i = n - 2; i >= 0; i--) { /* skip output.weight (last) */
            const tg_gguf_tensor *x = tg_gguf_tensor_at(g, i);
            tg_gguf_add_tensor_raw(w, x->name, x->n_dims, x->ne, x->type, x->data, &err);
        }
        char p2[600];
        snprintf(p2, sizeof p2, "%s/rev.gguf", dir);
        cr_assert_eq(tg_gguf_write(w, p2, &err), TG_OK, "%s", err.msg);
        tg_gguf_close(g);
        tg_gguf_writer_free(w);
        tg_gpt2_model m;
        cr_assert_eq(tg_gpt2_load(&m, p2, 0, &err), TG_OK, "%s", err.msg);
        cr_assert(m.w.tied);
        cr_assert_eq(m.w.lm_head.data, m.w.wte.data);
        cr_assert(!memcmp(m.w.layers[1].down_w.data, t.w.layers[1].down_w.data, 8 * 32 * sizeof(float)));
        cr_assert(!memcmp(m.w.wte.data, t.w.wte.data, 257 * 8 * sizeof(float)));
        tg_gpt2_free(&m);
    }
    test_rmdir(dir);
    free(dir);
    test_model_free(&t);
}

static void e_shape(tg_gguf_writer *w, test_model *t) {
    (void)t;
    static float z[64]; /* the writer keeps the pointer until tg_gguf_write */
    int64_t ne[1] = {7};
    tg_gguf_add_tensor_f32(w, "extra.notes", 1, ne, z, TG_GGML_F32, NULL); /* extra: ignored */
}
static void e_layer(tg_gguf_writer *w, test_model *t) {
    (void)t;
    static float z[64];
    int64_t ne[1] = {7};
    tg_gguf_add_tensor_f32(w, "blk.9.ffn_up.bias", 1, ne, z, TG_GGML_F32, NULL);
}

Test(binding, extra_tensors_are_ignored) {
    test_model t;
    test_model_make(&t, 1, 1, 4, 4, 1);
    tg_err err;
    cr_assert_eq(load_edited(&t, e_shape, &err), TG_OK, "%s", err.msg);
    /* but a tensor of a layer past block_count means the file is inconsistent */
    cr_assert_eq(load_edited(&t, e_layer, &err), TG_ERR_FORMAT);
    cr_assert(strstr(err.msg, "'blk.9.ffn_up.bias' is for layer 9 but gpt2.block_count is 1"), "%s", err.msg);
    test_model_free(&t);
}

/* A misshapen or missing tensor: rebuild the file with one tensor changed. */
static tg_status load_with_tensor(test_model *t, const char *name, int n_dims, int64_t ne0, int64_t ne1,
                                  uint32_t type, tg_err *err) {
    char *dir = test_tmpdir(), p[512], p2[600];
    snprintf(p, sizeof p, "%s/a.gguf", dir);
    snprintf(p2, sizeof p2, "%s/b.gguf", dir);
    cr_assert_eq(tg_gpt2_save(p, &t->cfg, &t->w, &t->vocab, TG_DTYPE_F32, err), TG_OK);
    tg_gguf *g;
    cr_assert_eq(tg_gguf_open(&g, p, err), TG_OK);
    tg_gguf_writer *w;
    tg_gguf_writer_new(&w, err);
    for (int64_t i = 0; i < tg_gguf_n_kv(g); i++) tg_gguf_set_kv_from(w, g, tg_gguf_kv_at(g, i), err);
    static float big[1 << 16];
    for (int64_t i = 0; i < tg_gguf_n_tensors(g); i++) {
        const tg_gguf_tensor *x = tg_gguf_tensor_at(g, i);
        if (strcmp(x->name, name)) {
            tg_gguf_add_tensor_raw(w, x->name, x->n_dims, x->ne, x->type, x->data, err);
        } else if (n_dims) {
            int64_t ne[2] = {ne0, ne1};
            cr_assert_eq(tg_gguf_add_tensor_f32(w, name, n_dims, ne, big, type, err), TG_OK, "%s", err->msg);
        }
    }
    cr_assert_eq(tg_gguf_write(w, p2, err), TG_OK, "%s", err->msg);
    tg_gguf_writer_free(w);
    tg_gguf_close(g);
    tg_gpt2_model m;
    tg_status s = tg_gpt2_load(&m, p2, 0, err);
    if (!s) tg_gpt2_free(&m);
    test_rmdir(dir);
    free(dir);
    return s;
}

Test(binding, missing_and_misshapen) {
    test_model t;
    test_model_make(&t, 2, 2, 8, 4, 0);
    tg_err err;
    cr_assert_eq(load_with_tensor(&t, "blk.1.attn_qkv.bias", 0, 0, 0, 0, &err), TG_ERR_FORMAT);
    cr_assert(strstr(err.msg, "tensor 'blk.1.attn_qkv.bias' is missing"), "%s", err.msg);
    cr_assert_eq(load_with_tensor(&t, "blk.0.attn_qkv.weight", 2, 24, 8, TG_GGML_F32, &err), TG_ERR_FORMAT);
    cr_assert(strstr(err.msg, "'blk.0.attn_qkv.weight' has shape [8, 24], expected [24, 8]"), "%s", err.msg);
    cr_assert_eq(load_with_tensor(&t, "output_norm.bias", 2, 8, 2, TG_GGML_F32, &err), TG_ERR_FORMAT);
    cr_assert(strstr(err.msg, "output_norm.bias"), "%s", err.msg);
    cr_assert_eq(load_with_tensor(&t, "token_embd.weight", 1, 8, 0, TG_GGML_F32, &err), TG_ERR_FORMAT);
    cr_assert_eq(load_with_tensor(&t, "output.weight", 2, 8, 256, TG_GGML_F32, &err), TG_ERR_FORMAT);
    cr_assert(strstr(err.msg, "expected [257, 8]"), "%s", err.msg);
    /* a type we can read but not load */
    cr_assert_eq(load_with_tensor(&t, "blk.0.ffn_up.weight", 2, 8, 32, TG_GGML_F16, &err), TG_OK, "%s", err.msg);
    /* output.weight absent: tied */
    cr_assert_eq(load_with_tensor(&t, "output.weight", 0, 0, 0, 0, &err), TG_OK, "%s", err.msg);
    test_model_free(&t);
}

/* ---- the finiteness scan (weights/finite.h), per encoding ------------------- */
#include <math.h>

#include "weights/finite.h"

Test(finite, every_type_finds_the_first_bad_element) {
    enum { N = 3000 }; /* more than one scan block of 1024 */
    const char *what;
    /* F32, unaligned on purpose */
    static uint8_t f32[4 * N + 1];
    for (int i = 0; i < N; i++) {
        float v = (float)i - 1500.0f;
        memcpy(f32 + 1 + 4 * i, &v, 4);
    }
    cr_assert_eq(tg_find_nonfinite(TG_GGML_F32, f32 + 1, N, &what), -1);
    float bad[3] = {NAN, INFINITY, -INFINITY};
    const char *names[3] = {"NaN", "+inf", "-inf"};
    for (int k = 0; k < 3; k++) {
        memcpy(f32 + 1 + 4 * 2500, &bad[k], 4);
        cr_assert_eq(tg_find_nonfinite(TG_GGML_F32, f32 + 1, N, &what), 2500);
        cr_assert_str_eq(what, names[k]);
    }
    /* F16: 0x7c00 +inf, 0xfc00 -inf, 0x7e00 NaN; 0x7bff (65504) is finite */
    static uint16_t h[N];
    for (int i = 0; i < N; i++) h[i] = 0x7bff;
    cr_assert_eq(tg_find_nonfinite(TG_GGML_F16, h, N, &what), -1);
    h[1029] = 0xfc00;
    cr_assert_eq(tg_find_nonfinite(TG_GGML_F16, h, N, &what), 1029);
    cr_assert_str_eq(what, "-inf");
    h[7] = 0x7e00;
    cr_assert_eq(tg_find_nonfinite(TG_GGML_F16, h, N, &what), 7);
    cr_assert_str_eq(what, "NaN");
    /* BF16: 0x7f80 +inf; 0x7f7f (the largest finite) */
    for (int i = 0; i < N; i++) h[i] = 0x7f7f;
    cr_assert_eq(tg_find_nonfinite(TG_GGML_BF16, h, N, &what), -1);
    h[2999] = 0x7f80;
    cr_assert_eq(tg_find_nonfinite(TG_GGML_BF16, h, N, &what), 2999);
    cr_assert_str_eq(what, "+inf");
    /* Q8_0: a bad scale poisons its block; int8 bytes that look like inf
     * bits are fine */
    static uint8_t q[34 * 4];
    memset(q, 0x7f, sizeof q);
    for (int b = 0; b < 4; b++) q[34 * b] = 0x00, q[34 * b + 1] = 0x3c; /* d = 1.0 */
    cr_assert_eq(tg_find_nonfinite(TG_GGML_Q8_0, q, 128, &what), -1);
    q[34 * 2] = 0x01, q[34 * 2 + 1] = 0x7c; /* d = NaN */
    cr_assert_eq(tg_find_nonfinite(TG_GGML_Q8_0, q, 128, &what), 64);
    cr_assert_str_eq(what, "NaN");
    /* Q4_0: 18-byte blocks, the same rule */
    static uint8_t q4[18 * 3];
    memset(q4, 0xff, sizeof q4);
    for (int b = 0; b < 3; b++) q4[18 * b] = 0x00, q4[18 * b + 1] = 0x3c;
    cr_assert_eq(tg_find_nonfinite(TG_GGML_Q4_0, q4, 96, &what), -1);
    q4[18 * 1 + 1] = 0xfc; /* d = -inf */
    cr_assert_eq(tg_find_nonfinite(TG_GGML_Q4_0, q4, 96, &what), 32);
    cr_assert_str_eq(what, "-inf");
    cr_assert_eq(tg_find_nonfinite(TG_GGML_Q4_1, q, 32, &what), -2, "unknown to the scan");
}

/* An F16 tensor with an inf, through the loader: named, and --no-check loads. */
Test(finite, f16_tensor_rejected_at_load) {
    test_model t;
    test_model_make(&t, 1, 1, 8, 4, 0);
    ((float *)t.w.layers[0].up_w.data)[37] = 1e6f; /* > 65504: inf once stored as F16 */
    char *dir = test_tmpdir(), p[512];
    snprintf(p, sizeof p, "%s/h.gguf", dir);
    tg_err err;
    cr_assert_eq(tg_gpt2_save(p, &t.cfg, &t.w, &t.vocab, TG_DTYPE_F16, &err), TG_OK, "%s", err.msg);
    tg_gpt2_model m;
    cr_assert_eq(tg_gpt2_load(&m, p, 0, &err), TG_ERR_NUMERIC);
    cr_assert(strstr(err.msg, "'blk.0.ffn_up.weight'") && strstr(err.msg, "+inf at index 37") == NULL &&
                  strstr(err.msg, "(+inf) at index 37"),
              "%s", err.msg);
    cr_assert_eq(tg_gpt2_load(&m, p, TG_LOAD_NO_CHECK, &err), TG_OK, "%s", err.msg);
    cr_assert_eq(m.w.layers[0].up_w.type, TG_WTYPE_F16, "kept in its type");
    cr_assert(isinf(test_f32(&m.w.layers[0].up_w)[37]));
    tg_gpt2_free(&m);
    cr_assert_eq(tg_gpt2_load(&m, p, TG_LOAD_VOCAB_ONLY, &err), TG_OK, "vocab only: no scan");
    tg_gpt2_free(&m);
    test_rmdir(dir);
    free(dir);
    test_model_free(&t);
}
