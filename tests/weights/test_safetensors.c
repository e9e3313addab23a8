/* test_safetensors.c — the safetensors header parser on valid and hostile
 * input: truncation at every byte, every header byte corrupted, and each
 * rule (lengths, dtype, shape, offsets, tiling, duplicates) on its own. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weights/gguf.h"
#include "weights/safetensors.h"

/* header JSON + data bytes -> a file image */
static uint8_t *image(const char *json, size_t data_len, size_t *len) {
    size_t h = strlen(json);
    *len = 8 + h + data_len;
    uint8_t *p = malloc(*len);
    uint64_t n = h;
    memcpy(p, &n, 8);
    memcpy(p + 8, json, h);
    for (size_t i = 0; i < data_len; i++) p[8 + h + i] = (uint8_t)(i * 37);
    return p;
}

static tg_status parse(const uint8_t *p, size_t n, tg_err *err) {
    uint8_t *c = malloc(n ? n : 1); /* exact size: ASan sees over-reads */
    memcpy(c, p, n);
    tg_st *st;
    err->msg[0] = 0;
    tg_status s = tg_st_parse(&st, c, n, "m.safetensors", err);
    if (!s) {
        for (int i = 0; i < st->n_tensors; i++) {
            const tg_st_tensor *t = &st->tensors[i];
            if (t->n_elements < (1u << 16)) {
                float *f = malloc(t->n_elements * sizeof *f + 4);
                (void)tg_st_to_f32(t, f, err);
                free(f);
            }
        }
        tg_st_close(st);
    } else {
        cr_assert(err->msg[0] && !strchr(err->msg, '\n'), "bad message '%s'", err->msg);
    }
    free(c);
    return s;
}

static const char *good =
    "{\"__metadata__\":{\"format\":\"pt\"},"
    "\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]},"
    "\"b\":{\"dtype\":\"F16\",\"shape\":[4],\"data_offsets\":[24,32]},"
    "\"c\":{\"dtype\":\"BF16\",\"shape\":[],\"data_offsets\":[32,34]}}";

Test(safetensors, valid) {
    size_t n;
    uint8_t *p = image(good, 34, &n);
    tg_st *st;
    tg_err err;
    cr_assert_eq(tg_st_parse(&st, p, n, "m", &err), TG_OK, "%s", err.msg);
    cr_assert_eq(st->n_tensors, 3);
    const tg_st_tensor *a = tg_st_find(st, "a"), *b = tg_st_find(st, "b"), *c = tg_st_find(st, "c");
    cr_assert(a && b && c && !tg_st_find(st, "d"));
    cr_assert_eq(a->n_dims, 2);
    cr_assert_eq(a->shape[1], 3);
    cr_assert_eq(c->n_elements, 1); /* a scalar */
    float f[4];
    cr_assert_eq(tg_st_to_f32(b, f, &err), TG_OK);
    for (int i = 0; i < 4; i++) {
        uint16_t h = (uint16_t)(b->data[2 * i] | b->data[2 * i + 1] << 8);
        _Float16 ref;
        memcpy(&ref, &h, 2);
        cr_assert(f[i] == (float)ref || (f[i] != f[i] && ref != ref));
    }
    tg_st_close(st);
    free(p);
}

Test(safetensors, truncated_at_every_byte) {
    size_t n;
    uint8_t *p = image(good, 34, &n);
    for (size_t k = 0; k < n; k++) {
        tg_err err;
        cr_assert_eq(parse(p, k, &err), TG_ERR_FORMAT, "cut to %zu loaded", k);
    }
    free(p);
}

Test(safetensors, every_header_byte_corrupted) {
    size_t n;
    uint8_t *p = image(good, 34, &n);
    static const uint8_t vals[] = {0x00, '"', '{', '}', '[', ']', ',', '9', '-', 0xff};
    size_t h = n - 34;
    for (size_t i = 0; i < h; i++) {
        uint8_t keep = p[i];
        for (size_t k = 0; k < sizeof vals; k++) {
            p[i] = vals[k];
            tg_err err;
            (void)parse(p, n, &err);
        }
        p[i] = keep;
    }
    free(p);
}

Test(safetensors, rules) {
    struct { const char *json; size_t data; const char *needle; } cases[] = {
        {"[1,2]", 0, "not a JSON object"},
        {"{\"a\":", 0, "not valid JSON"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}} trailing", 8, "not valid JSON"},
        {"{\"a\":{\"dtype\":\"Q4\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, "unknown dtype"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}", 8, "shape[0]"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2.5],\"data_offsets\":[0,8]}}", 8, "shape[0]"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[\"2\"],\"data_offsets\":[0,8]}}", 8, "shape[0]"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1e300],\"data_offsets\":[0,8]}}", 8, "shape[0]"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,8]}}", 8, "overflows"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]}}", 4, "dimensions"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,9]}}", 8, "outside"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}}", 8, "outside"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0]}}", 8, "data_offsets"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", 8, "needs 12"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 12, "cover 8 of the 12"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8, "gap or overlap"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
         "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8, "gap or overlap"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
         "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8, "duplicate tensor name 'a'"},
        {"{\"\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "empty name"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1]}}", 4, "data_offsets"},
        {"{\"a\":[1]}", 4, "not an object"},
        {"{\"__metadata__\":{\"x\":1}}", 0, "__metadata__ value"},
        {"{\"__metadata__\":[]}", 0, "__metadata__ is not an object"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t n;
        uint8_t *p = image(cases[i].json, cases[i].data, &n);
        tg_err err;
        cr_assert_eq(parse(p, n, &err), TG_ERR_FORMAT, "case %zu loaded", i);
        cr_assert(strstr(err.msg, cases[i].needle), "case %zu: '%s' lacks '%s'", i, err.msg, cases[i].needle);
        free(p);
    }
    /* the header length itself */
    uint8_t small[16] = {0};
    tg_err err;
    uint64_t big = UINT64_MAX;
    memcpy(small, &big, 8);
    cr_assert_eq(parse(small, 16, &err), TG_ERR_FORMAT);
    cr_assert(strstr(err.msg, "past the end"), "%s", err.msg);
    cr_assert_eq(parse(small, 5, &err), TG_ERR_FORMAT);
    cr_assert(strstr(err.msg, "too short"), "%s", err.msg);
    /* deeply nested JSON: cJSON's nesting limit, no stack overflow */
    size_t depth = 100000;
    char *deep = malloc(2 * depth + 8);
    strcpy(deep, "{\"a\":");
    size_t k = strlen(deep);
    for (size_t i = 0; i < depth; i++) deep[k++] = '[';
    for (size_t i = 0; i < depth; i++) deep[k++] = ']';
    deep[k++] = '}';
    deep[k] = 0;
    size_t n;
    uint8_t *p = image(deep, 0, &n);
    cr_assert_eq(parse(p, n, &err), TG_ERR_FORMAT);
    free(p);
    free(deep);
}
