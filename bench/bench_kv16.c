/* bench_kv16.c — decode attention over a whole model's KV cache, f32
 * against f16 (issue #15's --kv-type), one thread, interleaved, CPU time:
 * every head of every layer attends once from the last position, as a
 * decode step does, over a cache large enough to stream from where the
 * model's would (DRAM for gpt2-small at 1024 positions).
 *
 *   bench_kv16 [P HS HEADS G [FLUSH]]  positions, head size, L·KVH heads, queries per
 *                               KV head (default 1024 64 144 1: gpt2-small's cache at its
 *                               context); FLUSH MB (default 0) read before each kernel's
 *                               pass over the heads, so that a cache the LLC would hold
 *                               (gpt2-small's at 77 positions: 5.7 MB) comes from DRAM,
 *                               as after a decode step's weights pass
 *
 * Prints the median of 15 rounds of each and the ratio, then the same for
 * the _stream entries (K/V prefetched ahead, as a model whose weights
 * exceed the LLC runs them). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "engine/engine.h"

static double cpu_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

enum { ROUNDS = 15 };

int main(int argc, char **argv) {
    int P = argc > 1 ? atoi(argv[1]) : 1024, HS = argc > 2 ? atoi(argv[2]) : 64;
    int NH = argc > 3 ? atoi(argv[3]) : 144, G = argc > 4 ? atoi(argv[4]) : 1;
    int flush_mb = argc > 5 ? atoi(argv[5]) : 0;
    if (P < 1 || HS < 1 || HS > 1024 || NH < 1 || G < 1 || G > 64 || flush_mb < 0 || flush_mb > 4096) {
        fprintf(stderr, "usage: bench_kv16 [P HS HEADS G [FLUSH]] (P >= 1, 1 <= HS <= 1024, G <= 64, "
                        "FLUSH <= 4096 MB)\n");
        return 2;
    }
    size_t n_flush = (size_t)flush_mb << 18; /* floats */
    float *flush = n_flush ? malloc(n_flush * sizeof *flush) : NULL;
    if (n_flush && !flush) {
        fprintf(stderr, "bench_kv16: out of memory\n");
        return 1;
    }
    for (size_t i = 0; i < n_flush; i++) flush[i] = (float)(i & 7);
    tg_engine e;
    tg_err err;
    tg_isa isa;
    if (tg_isa_select(NULL, &isa, &err) || tg_engine_init(&e, isa, &err)) { /* $TINYGPT_ISA */
        fprintf(stderr, "bench_kv16: %s\n", err.msg);
        return 1;
    }
    size_t n = (size_t)NH * P * HS, blk = (size_t)P * HS;
    float *k = malloc(n * sizeof *k), *v = malloc(n * sizeof *v);
    uint16_t *kh = malloc(n * sizeof *kh), *vh = malloc(n * sizeof *vh);
    float *q = malloc((size_t)G * HS * sizeof *q), *o = malloc((size_t)G * HS * sizeof *o);
    float *p = malloc((size_t)G * P * sizeof *p), *ws = malloc(TG_KV16_WS(HS) * sizeof *ws);
    if (!k || !v || !kh || !vh || !q || !o || !p || !ws) {
        fprintf(stderr, "bench_kv16: out of memory\n");
        return 1;
    }
    uint64_t r = 88172645463325252ULL; /* xorshift: values in [-1, 1) */
    for (size_t i = 0; i < n; i++) {
        r ^= r << 13, r ^= r >> 7, r ^= r << 17;
        k[i] = (float)(r >> 40) / (float)(1u << 23) - 1.0f;
        v[i] = (float)((r >> 16) & 0xffffff) / (float)(1u << 23) - 1.0f;
    }
    for (int h = 0; h < NH; h++) {
        e.k.f32_to_f16(kh + h * blk, k + h * blk, (int)blk);
        e.k.f32_to_f16(vh + h * blk, v + h * blk, (int)blk);
    }
    for (int i = 0; i < G * HS; i++) q[i] = 0.01f * (float)(i % 17);
    float scale = 1.0f / sqrtf((float)HS);
    /* the plain kernels, then the _stream ones (K/V prefetched ahead: what
     * a model whose weights exceed the LLC runs) */
    double t32[ROUNDS], t16[ROUNDS], s32[ROUNDS], s16[ROUNDS];
    volatile float sink = 0;
    for (int rd = 0; rd < ROUNDS; rd++) {
        double *out[4] = {t32, t16, s32, s16};
        for (int kind = 0; kind < 4; kind++) {
            float acc = 0;
            for (size_t i = 0; i < n_flush; i += 16) acc += flush[i]; /* one read per line */
            sink += acc;
            double a = cpu_s();
            for (int h = 0; h < NH; h++) {
                if (kind == 0) e.k.attn_decode_gqa(o, p, q, k + h * blk, v + h * blk, P, HS, G, scale);
                if (kind == 1)
                    e.k.attn_decode_gqa_f16(o, p, q, kh + h * blk, vh + h * blk, P, HS, G, scale, ws);
                if (kind == 2)
                    e.k.attn_decode_gqa_stream(o, p, q, k + h * blk, v + h * blk, P, HS, G, scale);
                if (kind == 3)
                    e.k.attn_decode_gqa_f16_stream(o, p, q, kh + h * blk, vh + h * blk, P, HS, G,
                                                   scale, ws);
            }
            out[kind][rd] = cpu_s() - a;
        }
    }
    qsort(t32, ROUNDS, sizeof *t32, cmp_double);
    qsort(t16, ROUNDS, sizeof *t16, cmp_double);
    qsort(s32, ROUNDS, sizeof *s32, cmp_double);
    qsort(s16, ROUNDS, sizeof *s16, cmp_double);
    printf("%s P=%d HS=%d heads=%d G=%d: K+V %.1f MB (f32) / %.1f MB (f16); one step's attention: "
           "f32 %.3f ms, f16 %.3f ms (CPU time, median of %d): f16/f32 %.2f; "
           "_stream: f32 %.3f ms, f16 %.3f ms\n",
           tg_isa_name(e.isa), P, HS, NH, G, 8.0 * n / 1e6, 4.0 * n / 1e6, 1e3 * t32[ROUNDS / 2],
           1e3 * t16[ROUNDS / 2], ROUNDS, t16[ROUNDS / 2] / t32[ROUNDS / 2], 1e3 * s32[ROUNDS / 2],
           1e3 * s16[ROUNDS / 2]);
    free(k), free(v), free(kh), free(vh), free(q), free(o), free(p), free(ws), free(flush);
    return 0;
}
