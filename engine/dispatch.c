/* dispatch.c — fill the kernel table: the C reference first, then the arch
 * upgrades up to the chosen ISA (dav1d's pattern). */
#include "engine/engine.h"

tg_status tg_engine_init(tg_engine *e, tg_isa isa, tg_err *err) {
    if (!tg_isa_supported(isa))
        return tg_fail(err, TG_ERR_UNSUPPORTED, "engine: this CPU does not support %s",
                       tg_isa_name(isa));
    e->isa = isa;
    tg_kernels_init_ref(&e->k);
    tg_kernels_init_arch(&e->k, isa);
    e->bf16_act = tg_arch_bf16_act(isa);
    return TG_OK;
}

typedef struct matmul_job {
    const tg_engine *e;
    float *y;
    const float *x, *w, *b;
    int T, in, out;
} matmul_job;

static void matmul_range(void *ctx, int o0, int o1, int ith) {
    (void)ith;
    const matmul_job *j = ctx;
    j->e->k.matmul(j->y, j->x, j->w, j->b, j->T, j->in, j->out, o0, o1);
}

void tg_matmul(const tg_engine *e, tg_pool *pool, float *y, const float *x,
               const float *w, const float *b, int T, int in, int out) {
    matmul_job j = {e, y, x, w, b, T, in, out};
    /* The decode GEMV is memory-bound: its cost is the bytes of W it
     * streams (twice its flops); the GEMM's is its flops. */
    double work = T == 1 ? 4.0 * in * (double)out : 2.0 * T * (double)in * out;
    tg_parallel_for(pool, out, TG_ROW_BLOCK, work, matmul_range, &j);
}

size_t tg_matmul_ws(tg_wtype t, int T, int in) {
    return tg_wtype_q8_act(t) ? (size_t)T * tg_wtype_row_bytes(TG_WTYPE_Q8_0, in) : 0;
}

typedef struct matmul_w_job {
    const tg_engine *e;
    float *y;
    const void *x;   /* f32 [T,IN], or Q8_0 blocks [T, IN/32] */
    const tg_weight *w;
    const float *b;
    int T;
} matmul_w_job;

static void matmul_w_range(void *ctx, int o0, int o1, int ith) {
    (void)ith;
    const matmul_w_job *j = ctx;
    j->e->k.matmul_w[j->w->type](j->y, j->x, j->w->data, j->w->row_bytes, j->b, j->T,
                                 j->w->cols, j->w->rows, o0, o1);
}

void tg_matmul_w(const tg_engine *e, tg_pool *pool, float *y, const float *x,
                 const tg_weight *w, const float *b, int T, void *ws) {
    int in = w->cols, out = w->rows;
    if (w->type == TG_WTYPE_F32) {
        tg_matmul(e, pool, y, x, w->data, b, T, in, out);
        return;
    }
    matmul_w_job j = {e, y, x, w, b, T};
    if (tg_wtype_q8_act(w->type)) {
        /* one quantization of X, shared by every column range */
        size_t row = tg_wtype_row_bytes(TG_WTYPE_Q8_0, in);
        for (int t = 0; t < T; t++)
            e->k.quantize_q8_0((tg_block_q8_0 *)((char *)ws + (size_t)t * row),
                               x + (size_t)t * in, in);
        j.x = ws;
    }
    /* decode streams W's bytes; prefill is flops (as tg_matmul) */
    double work = T == 1 ? (double)w->row_bytes * out : 2.0 * T * (double)in * out;
    tg_parallel_for(pool, out, TG_ROW_BLOCK, work, matmul_w_range, &j);
}
