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
