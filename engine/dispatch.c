/* dispatch.c — fill the kernel table: the C reference first, then the arch
 * upgrades up to the chosen ISA (dav1d's pattern). */
#include <stdint.h>

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

#define WS_ALIGN 64
static size_t ws_round(size_t n) { return (n + WS_ALIGN - 1) / WS_ALIGN * WS_ALIGN; }
static size_t size_max(size_t a, size_t b) { return a > b ? a : b; }

/* The prefill kernels' scratch, each carved in order from ws (64-aligned
 * pieces, hence the slack):
 *   x86 F16/BF16 (matmul_tmpl.h, W widened in the f32 GEMM's packing): one
 *     packed X block of MC_HALF = 256 tokens (+ MR - 1, MR <= 8) × KC = 256
 *     floats, 263 KiB at most (NEON widens W in its f32 GEMM's packing too,
 *     arm/matmul_neon.c, with its panels on the stack: no scratch)
 *   the integer GEMM (x86 qgemm_tmpl.h, NEON qgemm_neon_tmpl.h): X's block
 *     scales and corrections (8 bytes per block of each row) and one packed
 *     panel of at most 32 rows (36 bytes per block and row)
 *   the BF16 GEMM (x86 bf16_avx512.c): one chunk of X as bfloat16 pairs
 *     packed per 32 tokens (T rounded up to 32, at most XCHUNK = 256 KiB
 *     or one block of 32 tokens if that is more) and one zero row (P
 *     padded to 16, + 8 pairs); T <= 8: X rounded, as f32
 *     [T, IN] (32·IN bytes at most, within that term)
 *   the AMX GEMMs (x86 amx_tmpl.h), T padded to Tp = 32·k: a 64-byte tile
 *     config; BF16: X as pairs [Tp, P padded to 16], a panel of 32 rows of
 *     those pairs, one 16 × 16 f32 C tile; Q8_0/Q4_0: X's bytes and scales
 *     (36 bytes per block and row of Tp), a panel of 32 rows (36 bytes per
 *     block and row), 32 × 32 f32 accumulators and four C tiles
 * tests/engine/test_quant.c runs every kernel on exactly this many bytes
 * with guard bytes after them. */
size_t tg_matmul_w_scratch(tg_wtype t, int T, int in) {
    if (t == TG_WTYPE_F32 || (unsigned)t >= TG_WTYPE_COUNT || T <= 1 || in <= 0) return 0;
    size_t Tz = (size_t)T, n = (size_t)in, nb = n / TG_QK, P = (n + 1) / 2;
    int q8 = tg_wtype_q8_act(t);
    size_t half = t == TG_WTYPE_F16 || t == TG_WTYPE_BF16 ? (size_t)(256 + 8 - 1) * 256 * sizeof(float) : 0;
    size_t qg = q8 ? Tz * nb * 8 + nb * (TG_QK + 4) * 32 : 0;
    size_t bx = (Tz + 31) * P * 4, bchunk = size_max((size_t)256 * 1024, 32 * P * 4);
    size_t bg = t == TG_WTYPE_BF16 ? (bx < bchunk ? bx : bchunk) + (P + 24) * 4 : 0;
    size_t Tp = (Tz + 31) / 32 * 32, Pp = (P + 15) / 16 * 16;
    size_t amx = 64 + (t == TG_WTYPE_BF16 ? Tp * Pp * 4 + Pp * 32 * 4 + 16 * 16 * 4
                       : q8 ? Tp * nb * (TG_QK + 4) + ws_round(nb * (TG_QK + 4) * 32) + 2 * 32 * 32 * 4
                            : 0);
    return size_max(size_max(half, amx), size_max(qg, bg)) + 4 * WS_ALIGN;
}

static size_t xq_bytes(tg_wtype t, int T, int in) {
    return tg_wtype_q8_act(t) ? (size_t)T * tg_wtype_row_bytes(TG_WTYPE_Q8_0, in) : 0;
}

size_t tg_matmul_ws(tg_wtype t, int T, int in, int n_threads) {
    size_t per = tg_matmul_w_scratch(t, T, in), xq = xq_bytes(t, T, in);
    if (!per && !xq) return 0;
    if (n_threads < 1) n_threads = 1;
    return WS_ALIGN + ws_round(xq) + (size_t)n_threads * ws_round(per);
}

typedef struct matmul_w_job {
    const tg_engine *e;
    float *y;
    const void *x;   /* f32 [T,IN], or Q8_0 blocks [T, IN/32] */
    const tg_weight *w;
    const float *b;
    int T;
    char *scratch;   /* worker ith's at scratch + ith·per (NULL: none) */
    size_t per;
} matmul_w_job;

static void matmul_w_range(void *ctx, int o0, int o1, int ith) {
    const matmul_w_job *j = ctx;
    void *ws = j->scratch ? j->scratch + (size_t)ith * j->per : NULL;
    j->e->k.matmul_w[j->w->type](j->y, j->x, j->w->data, j->w->row_bytes, j->b, j->T,
                                 j->w->cols, j->w->rows, o0, o1, ws);
}

void tg_matmul_w(const tg_engine *e, tg_pool *pool, float *y, const float *x,
                 const tg_weight *w, const float *b, int T, void *ws) {
    int in = w->cols, out = w->rows;
    if (w->type == TG_WTYPE_F32) {
        tg_matmul(e, pool, y, x, w->data, b, T, in, out);
        return;
    }
    char *base = (char *)(((uintptr_t)ws + WS_ALIGN - 1) & ~(uintptr_t)(WS_ALIGN - 1));
    size_t per = ws_round(tg_matmul_w_scratch(w->type, T, in)), xq = xq_bytes(w->type, T, in);
    matmul_w_job j = {e, y, x, w, b, T, per ? base + ws_round(xq) : NULL, per};
    if (xq) {
        /* one quantization of X, shared by every column range */
        size_t row = tg_wtype_row_bytes(TG_WTYPE_Q8_0, in);
        for (int t = 0; t < T; t++)
            e->k.quantize_q8_0((tg_block_q8_0 *)(base + (size_t)t * row), x + (size_t)t * in, in);
        j.x = base;
    }
    /* decode streams W's bytes; prefill is flops (as tg_matmul) */
    double work = T == 1 ? (double)w->row_bytes * out : 2.0 * T * (double)in * out;
    tg_parallel_for(pool, out, TG_ROW_BLOCK, work, matmul_w_range, &j);
}
