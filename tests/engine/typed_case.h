/* typed_case.h — a typed-weight test case for the kernel tests
 * (test_quant.c, test_amx.c): W[OUT,IN] of one weight type encoded from
 * random f32 rows of varied magnitude, X[T,IN], an optional bias, and X's
 * Q8_0 blocks for the integer types. */
#ifndef TINYGPT_TESTS_TYPED_CASE_H
#define TINYGPT_TESTS_TYPED_CASE_H
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>

#include "tests/engine/checkasm.h"

typedef struct tcase {
    tg_wtype type;
    int T, in, out;
    size_t ldw;
    uint8_t *w;       /* OUT rows of ldw bytes (malloc'd, exact size: ASan sees overruns) */
    float *x, *b;     /* x[T,IN], b[OUT] or NULL */
    uint8_t *xq;      /* Q8_0 of x for the integer types */
} tcase;

static tcase tc_new(ck_rng *r, tg_wtype type, int T, int in, int out, int bias) {
    tcase c = {type, T, in, out, tg_wtype_row_bytes(type, in), NULL, NULL, NULL, NULL};
    cr_assert(c.ldw > 0);
    c.w = malloc(c.ldw * out);
    float *row = malloc(sizeof(float) * (size_t)in);
    for (int o = 0; o < out; o++) {
        /* rows of varied magnitude, so block scales differ */
        float s = ck_randf(r, 0.05f, 2.0f);
        ck_fill(r, row, (size_t)in, -s, s);
        cr_assert_eq(tg_quantize_row(type, c.w + (size_t)o * c.ldw, row, in), 0);
    }
    free(row);
    c.x = ck_alloc((size_t)T * in);
    ck_fill(r, c.x, (size_t)T * in, -1.0f, 1.0f);
    if (bias) {
        c.b = ck_alloc((size_t)out);
        ck_fill(r, c.b, (size_t)out, -1.0f, 1.0f);
    }
    if (tg_wtype_q8_act(type)) {
        size_t rb = tg_wtype_row_bytes(TG_WTYPE_Q8_0, in);
        c.xq = malloc(rb * T);
        for (int t = 0; t < T; t++) tg_quantize_row(TG_WTYPE_Q8_0, c.xq + rb * t, c.x + (size_t)t * in, in);
    }
    return c;
}

static void tc_free(tcase *c) {
    free(c->w);
    free(c->xq);
    ck_free(c->x);
    ck_free(c->b);
}

/* The kernel's input: x, or its Q8_0 blocks. */
static const void *tc_x(const tcase *c) { return c->xq ? (const void *)c->xq : (const void *)c->x; }

#endif
