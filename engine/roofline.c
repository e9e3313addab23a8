/* roofline.c — the two machine probes behind "% of roofline" (see
 * roofline.h): a DRAM read stream and an FMA peak, each on nth threads of
 * the pool, best pass of several. */
#include "engine/roofline.h"
#include "engine/mem.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MIB ((size_t)1 << 20)

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The C reference FMA probe: TG_FMA_CHAINS scalar chains. Built without FMA
 * flags, so a step is a multiply and an add (still 2 flops); the compiler
 * may keep it scalar or use the baseline vector unit, which is what the C
 * reference kernels get too. */
double tg_fma_probe_ref(long iters, float m, float c, float x0, int *lanes) {
    float a[TG_FMA_CHAINS];
    for (int k = 0; k < TG_FMA_CHAINS; k++) a[k] = x0 + (float)k / 16;
    for (long i = 0; i < iters; i++)
        for (int k = 0; k < TG_FMA_CHAINS; k++) a[k] = a[k] * m + c;
    double sum = 0;
    for (int k = 0; k < TG_FMA_CHAINS; k++) sum += a[k];
    *lanes = 1;
    return sum;
}

/* Reads a sysfs cache attribute of cpu0's cache `index` into buf; 0 if absent. */
static int read_cache_attr(const char *dir, int index, const char *name, char *buf, int n) {
    char path[512];
    snprintf(path, sizeof path, "%s/index%d/%s", dir, index, name);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    int ok = fgets(buf, n, f) != NULL;
    fclose(f);
    return ok;
}

/* "3", "32768K", "1M" -> the number; -1 if not one. */
static long parse_size(const char *s) {
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || v < 0) return -1;
    if (*end == 'K') v <<= 10;
    else if (*end == 'M') v <<= 20;
    else if (*end == 'G') v <<= 30;
    return v;
}

size_t tg_llc_bytes_sysfs(const char *dir) {
    long best_level = 0, size = 0;
    char buf[64];
    for (int i = 0; i < 16; i++) {
        if (!read_cache_attr(dir, i, "type", buf, sizeof buf)) continue;
        if (strncmp(buf, "Unified", 7) && strncmp(buf, "Data", 4)) continue;
        long level = read_cache_attr(dir, i, "level", buf, sizeof buf) ? parse_size(buf) : -1;
        long sz = read_cache_attr(dir, i, "size", buf, sizeof buf) ? parse_size(buf) : -1;
        if (level <= 0 || sz <= 0) continue;
        if (level > best_level || (level == best_level && sz > size)) best_level = level, size = sz;
    }
    return size > 0 ? (size_t)size : 0;
}

/* sysfs first (the kernel's view, which a hypervisor can set right), then
 * cpuid's cache leaves, which engine/cpu.c reads with care. Not sysconf:
 * glibc takes the L3 from cpuid 0x80000006 even when its associativity
 * code says the field is not to be used (508 MiB on a 32 MB Zen 5 VM). */
size_t tg_llc_bytes(void) {
    size_t size = tg_llc_bytes_sysfs("/sys/devices/system/cpu/cpu0/cache");
    if (!size) size = tg_cpu_cache_bytes();
    return size;
}

size_t tg_dram_probe_bytes(void) {
    size_t bytes = tg_llc_bytes() * 8;
    if (bytes < 256 * MIB) bytes = 256 * MIB;
    if (bytes > 1024 * MIB) bytes = 1024 * MIB;
    return bytes;
}

/* ---- DRAM read ------------------------------------------------------------ */

/* A pass reads one half of the buffer, the next pass the other half, so a
 * pass reads at least 4x the last-level cache (STREAM's sizing rule) from
 * memory the previous pass has flushed out of the caches. Passes of that
 * size measure the rate a core sustains, as a decode step reading hundreds
 * of MB must; much shorter passes (we once used LLC-sized ones, ~1 ms)
 * let the best-of-many pick a burst the memory system does not sustain,
 * ~15% above it on the shared host we measured. */
enum { N_WINDOWS = 2 };

typedef struct read_job {
    tg_read_probe_fn read;    /* the widest loads this CPU has */
    const uint64_t *buf;
    size_t n;                 /* uint64 words in a window */
    size_t w0;                /* first word of this pass's window */
    uint64_t sums[64];        /* one per thread (nth <= 64 here) */
} read_job;

/* The C reference read kernel: eight accumulators so loads are independent
 * and the compiler can vectorise (with the baseline vector unit). */
uint64_t tg_read_probe_ref(const uint64_t *w, size_t n) {
    uint64_t s[8] = {0};
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++) s[k] += w[i + k];
    for (; i < n; i++) s[0] += w[i];
    return s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7];
}

/* Thread ith's share: whole 256-byte chunks (the kernels' step), so every
 * share starts 64-byte aligned. */
static void read_task(void *ctx, int ith, int nth) {
    read_job *j = ctx;
    size_t chunks = j->n / 32;
    size_t c0 = chunks * (size_t)ith / (size_t)nth, c1 = chunks * (size_t)(ith + 1) / (size_t)nth;
    j->sums[ith] += j->read(j->buf + j->w0 + c0 * 32, (c1 - c0) * 32);
}

struct tg_dram_probe {
    uint64_t *buf;
    read_job job;
    int passes;
};

tg_status tg_dram_probe_create(tg_dram_probe **out, size_t bytes, tg_err *err) {
    *out = NULL;
    if (bytes == 0) bytes = tg_dram_probe_bytes();
    bytes &= ~(size_t)63;
    if (bytes < 256 * N_WINDOWS)
        return tg_fail(err, TG_ERR_ARG, "roofline: DRAM probe buffer too small");
    tg_dram_probe *p = calloc(1, sizeof *p);
    if (!p) return tg_fail(err, TG_ERR_NOMEM, "roofline: out of memory");
    p->buf = tg_alloc_large(bytes); /* the pages a model's buffers get */
    if (!p->buf) {
        free(p);
        return tg_fail(err, TG_ERR_NOMEM, "roofline: cannot allocate a %zu MiB probe buffer",
                       bytes / MIB);
    }
    size_t words = bytes / sizeof(uint64_t);
    for (size_t i = 0; i < words; i++) p->buf[i] = i * 0x9E3779B97F4A7C15u; /* fault pages in */
    p->job.buf = p->buf;
    p->job.n = words / N_WINDOWS / 32 * 32; /* whole chunks: windows stay 256-byte aligned */
    p->job.read = tg_read_probe_arch(tg_isa_best());
    *out = p;
    return TG_OK;
}

tg_status tg_dram_probe_pass(tg_dram_probe *p, tg_pool *pool, int nth, double *gbs,
                             tg_err *err) {
    if (nth < 1 || nth > tg_pool_size(pool) || nth > 64)
        return tg_fail(err, TG_ERR_ARG, "roofline: %d threads requested, pool has %d", nth,
                       tg_pool_size(pool));
    p->job.w0 = (size_t)(p->passes++ % N_WINDOWS) * p->job.n;
    double t0 = now_s();
    tg_pool_run(pool, nth, read_task, &p->job);
    double dt = now_s() - t0;
    *gbs = dt > 0 ? (double)p->job.n * sizeof(uint64_t) / dt * 1e-9 : 0;
    return TG_OK;
}

void tg_dram_probe_free(tg_dram_probe *p) {
    if (!p) return;
    /* Keep the sums observable so the reads cannot be dropped. */
    volatile uint64_t sink = 0;
    for (int i = 0; i < 64; i++) sink += p->job.sums[i];
    (void)sink;
    free(p->buf);
    free(p);
}

tg_status tg_measure_dram_read(tg_pool *pool, int nth, size_t bytes, double seconds,
                               double *gbs, tg_err *err) {
    if (nth < 1 || nth > tg_pool_size(pool) || nth > 64)
        return tg_fail(err, TG_ERR_ARG, "roofline: %d threads requested, pool has %d", nth,
                       tg_pool_size(pool));
    tg_dram_probe *p;
    tg_status s = tg_dram_probe_create(&p, bytes, err);
    if (s) return s;
    double best = 0, t_end = now_s() + seconds;
    int passes = 0;
    do {
        double v;
        s = tg_dram_probe_pass(p, pool, nth, &v, err);
        if (s) break;
        best = v > best ? v : best;
        passes++;
    } while (passes < 2 * N_WINDOWS || now_s() < t_end);
    tg_dram_probe_free(p);
    *gbs = best;
    return s;
}

/* ---- FMA peak ------------------------------------------------------------- */

typedef struct fma_job {
    tg_fma_probe_fn fn;
    long iters;
    int lanes;
    double sums[64];
} fma_job;

static void fma_task(void *ctx, int ith, int nth) {
    (void)nth;
    fma_job *j = ctx;
    int lanes;
    /* m, c keep every lane at a finite fixed point (no denormals, no inf). */
    j->sums[ith] += j->fn(j->iters, 0.75f, 0.25f, 0.5f, &lanes);
    if (ith == 0) j->lanes = lanes;
}

tg_status tg_measure_fma_peak(tg_pool *pool, int nth, tg_isa isa, double seconds,
                              double *gflops, tg_err *err) {
    if (nth < 1 || nth > tg_pool_size(pool) || nth > 64)
        return tg_fail(err, TG_ERR_ARG, "roofline: %d threads requested, pool has %d", nth,
                       tg_pool_size(pool));
    if (!tg_isa_supported(isa))
        return tg_fail(err, TG_ERR_UNSUPPORTED, "roofline: this CPU does not support %s",
                       tg_isa_name(isa));
    fma_job j = {.fn = tg_fma_probe_arch(isa), .iters = 1 << 14};
    /* Calibrate: grow iters until one pass takes >= 1 ms (short, so the
     * best pass is an uninterrupted one even on a busy machine). */
    double dt = 0;
    for (;;) {
        double t0 = now_s();
        tg_pool_run(pool, nth, fma_task, &j);
        dt = now_s() - t0;
        if (dt >= 0.001 || j.iters > (1L << 40)) break;
        j.iters *= dt > 0.0001 ? (long)(0.0012 / dt) + 1 : 8;
    }
    double best = 0, t_end = now_s() + seconds;
    int passes = 0;
    do {
        double t0 = now_s();
        tg_pool_run(pool, nth, fma_task, &j);
        dt = now_s() - t0;
        double flops = (double)j.iters * TG_FMA_CHAINS * j.lanes * 2.0 * nth;
        if (dt > 0 && flops / dt > best) best = flops / dt;
        passes++;
    } while (passes < 10 || now_s() < t_end);
    volatile double sink = 0;
    for (int i = 0; i < nth; i++) sink += j.sums[i];
    (void)sink;
    *gflops = best * 1e-9;
    return TG_OK;
}

tg_status tg_roofline_measure(tg_roofline *r, tg_pool *pool, int nth, tg_isa isa,
                              double seconds, tg_err *err) {
    memset(r, 0, sizeof *r);
    r->n_threads = nth;
    r->isa = isa;
    tg_status s = tg_measure_dram_read(pool, nth, 0, seconds, &r->dram_gbs, err);
    if (s == TG_OK) s = tg_measure_fma_peak(pool, nth, isa, seconds, &r->peak_gflops, err);
    return s;
}

double tg_roofline_time(const tg_roofline *r, double flops, double bytes) {
    if (!r || r->peak_gflops <= 0 || r->dram_gbs <= 0) return 0;
    double tc = flops / (r->peak_gflops * 1e9), tm = bytes / (r->dram_gbs * 1e9);
    return tc > tm ? tc : tm;
}

/* ---- tick clock ---------------------------------------------------------- */

static uint64_t ticks_clock(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static pthread_once_t tick_once = PTHREAD_ONCE_INIT;
static tg_tick_fn tick_fn;
static double tick_ns;

/* Calibrates the counter against CLOCK_MONOTONIC over 10 ms (only the two
 * end points matter, so being descheduled in between does no harm). */
static void tick_init(void) {
    tick_fn = ticks_clock;
    tick_ns = 1.0;
    tg_tick_fn fn = tg_tick_source_arch();
    if (!fn) return;
    uint64_t c0 = ticks_clock(), k0 = fn(), c1, k1;
    do {
        c1 = ticks_clock();
        k1 = fn();
    } while (c1 - c0 < 10000000u);
    double r = (double)(c1 - c0) / (double)(k1 - k0);
    if (k1 > k0 && isfinite(r) && r > 1e-4 && r < 1e3) {
        tick_fn = fn;
        tick_ns = r;
    }
}

tg_tick_fn tg_tick_source(double *ns_per_tick) {
    pthread_once(&tick_once, tick_init);
    *ns_per_tick = tick_ns;
    return tick_fn;
}
