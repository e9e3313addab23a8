/* test_roofline.c — the machine probes: every FMA probe kernel computes the
 * recurrence it claims (so its flop count is honest), the measurements are
 * positive and finite, bad arguments are errors, and the roofline bound is
 * max(compute, memory). Speeds themselves are never asserted. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/roofline.h"

static double fma_reference(long iters, float m, float c, float x0, int lanes) {
    double sum = 0;
    for (int k = 0; k < TG_FMA_CHAINS; k++) {
        double x = x0 + (float)k / 16;
        for (long i = 0; i < iters; i++) x = x * m + c;
        sum += x * lanes;
    }
    return sum;
}

Test(roofline, fma_kernels_compute_their_chains) {
    static const int want_lanes[TG_ISA_COUNT] = {1, 8, 16, 4};
    for (int isa = 0; isa < TG_ISA_COUNT; isa++) {
        if (!tg_isa_supported((tg_isa)isa)) continue;
        tg_fma_probe_fn fn = tg_fma_probe_arch((tg_isa)isa);
        for (long iters = 0; iters <= 40; iters += 13) {
            int lanes = 0;
            double got = fn(iters, 0.9f, 0.1f, 0.3f, &lanes);
            cr_assert_eq(lanes, want_lanes[isa], "%s", tg_isa_name((tg_isa)isa));
            double want = fma_reference(iters, 0.9f, 0.1f, 0.3f, lanes);
            /* Each step rounds once or twice (≤ 2u|x|, |x| < 1.1) and |m| < 1
             * shrinks old errors; plus the final sum of all lanes. */
            double n = (double)TG_FMA_CHAINS * lanes;
            double tol = n * (iters + n) * 2.2 * 0x1p-24;
            cr_assert(fabs(got - want) <= tol, "%s iters %ld: %.9g vs %.9g",
                      tg_isa_name((tg_isa)isa), iters, got, want);
        }
    }
}

/* Every read kernel sums exactly the words it is given (mod 2^64): it reads
 * all n of them and nothing else. The sum is computed here word by word. */
Test(roofline, read_kernels_read_every_word) {
    enum { N = 32 * 37 };
    uint64_t *w = aligned_alloc(64, (N + 32) * sizeof *w);
    cr_assert(w);
    uint64_t x = 0x243F6A8885A308D3u;
    for (int i = 0; i < N + 32; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        w[i] = x;
    }
    for (int isa = 0; isa < TG_ISA_COUNT; isa++) {
        if (!tg_isa_supported((tg_isa)isa)) continue;
        tg_read_probe_fn fn = tg_read_probe_arch((tg_isa)isa);
        for (size_t n = 0; n <= N; n += 32 * 6) {
            uint64_t want = 0;
            for (size_t i = 0; i < n; i++) want += w[i];
            cr_assert_eq(fn(w, n), want, "%s n %zu", tg_isa_name((tg_isa)isa), n);
        }
    }
    free(w);
}

Test(roofline, probes_measure_something) {
    tg_pool *pool;
    tg_err err;
    cr_assert_eq(tg_pool_create(&pool, 2, &err), TG_OK);
    for (int nth = 1; nth <= 2; nth++) {
        double gbs = 0, gflops = 0;
        cr_assert_eq(tg_measure_dram_read(pool, nth, (size_t)8 << 20, 0.02, &gbs, &err), TG_OK,
                     "%s", err.msg);
        cr_assert(isfinite(gbs) && gbs > 0, "%g GB/s", gbs);
        cr_assert_eq(tg_measure_fma_peak(pool, nth, tg_isa_best(), 0.02, &gflops, &err), TG_OK,
                     "%s", err.msg);
        cr_assert(isfinite(gflops) && gflops > 0, "%g GFLOP/s", gflops);
    }
    tg_pool_free(pool);
}

Test(roofline, bad_arguments_are_errors) {
    tg_pool *pool;
    tg_err err;
    double v;
    cr_assert_eq(tg_pool_create(&pool, 1, &err), TG_OK);
    cr_assert_eq(tg_measure_dram_read(pool, 2, 1 << 20, 0.01, &v, &err), TG_ERR_ARG);
    cr_assert(strstr(err.msg, "threads"), "%s", err.msg);
    cr_assert_eq(tg_measure_dram_read(pool, 0, 1 << 20, 0.01, &v, &err), TG_ERR_ARG);
    cr_assert_eq(tg_measure_dram_read(pool, 1, 32, 0.01, &v, &err), TG_ERR_ARG);
    cr_assert_eq(tg_measure_fma_peak(pool, 3, TG_ISA_SCALAR, 0.01, &v, &err), TG_ERR_ARG);
    tg_isa missing = TG_ISA_COUNT;
    for (int i = 0; i < TG_ISA_COUNT; i++)
        if (!tg_isa_supported((tg_isa)i)) missing = (tg_isa)i;
    if (missing != TG_ISA_COUNT)
        cr_assert_eq(tg_measure_fma_peak(pool, 1, missing, 0.01, &v, &err), TG_ERR_UNSUPPORTED);
    tg_pool_free(pool);
}

Test(roofline, bound_is_the_slower_of_compute_and_memory) {
    tg_roofline r = {.n_threads = 1, .dram_gbs = 10, .peak_gflops = 100};
    /* 1 GFLOP at 100 GFLOP/s = 10 ms; 1 GB at 10 GB/s = 100 ms */
    cr_assert_float_eq(tg_roofline_time(&r, 1e9, 1e9), 0.1, 1e-12);
    cr_assert_float_eq(tg_roofline_time(&r, 1e11, 1e9), 1.0, 1e-12);
    tg_roofline none = {0};
    cr_assert_float_eq(tg_roofline_time(&none, 1e9, 1e9), 0.0, 0);
    cr_assert(tg_dram_probe_bytes() >= ((size_t)256 << 20));
}

/* ---- the last-level cache size ------------------------------------------- */

Test(llc, cpuid_decoders) {
    /* cpuid 0x80000006 on the Zen 5 VM (32 MB L3, 1 MB L2): the L3 field
     * says 1016 x 512 KiB (the host's whole L3, which glibc's sysconf
     * reports) with associativity code 9, "see 0x8000001D": not a size. */
    cr_assert_eq(tg_cpuid_amd_l3_bytes(0x0fe09140u), 0);
    cr_assert_eq(tg_cpuid_amd_l2_bytes(0x04006140u), (size_t)1 << 20);
    /* A valid code (0xF, fully associative), 64 x 512 KiB; code 0 = none. */
    cr_assert_eq(tg_cpuid_amd_l3_bytes((64u << 18) | 0xF140u), (size_t)32 << 20);
    cr_assert_eq(tg_cpuid_amd_l3_bytes(64u << 18), 0);
    /* Deterministic cache leaf of a Zen 5 L3: unified (3), level 3, 16 ways,
     * 1 partition, 64-byte lines, 32768 sets = 32 MiB. */
    int level = 0;
    cr_assert_eq(tg_cpuid_cache_leaf_bytes(3u | 3u << 5, 15u << 22 | 63u, 32767u, &level),
                 (size_t)32 << 20);
    cr_assert_eq(level, 3);
    /* An instruction cache (2) never counts. */
    cr_assert_eq(tg_cpuid_cache_leaf_bytes(2u | 1u << 5, 7u << 22 | 63u, 63u, &level), 0);
}

static void put(const char *dir, int idx, const char *name, const char *text) {
    char path[512];
    snprintf(path, sizeof path, "%s/index%d", dir, idx);
    mkdir(path, 0700);
    snprintf(path, sizeof path, "%s/index%d/%s", dir, idx, name);
    FILE *f = fopen(path, "w");
    cr_assert(f, "%s", path);
    fprintf(f, "%s\n", text);
    fclose(f);
}

Test(llc, sysfs_parser) {
    char dir[] = "/tmp/tg_llc_XXXXXX";
    cr_assert(mkdtemp(dir));
    cr_assert_eq(tg_llc_bytes_sysfs(dir), 0); /* no index* nodes: unknown */
    static const struct { const char *type, *level, *size; } c[] = {
        {"Data", "1", "48K"}, {"Instruction", "1", "32K"},
        {"Unified", "2", "1024K"}, {"Unified", "3", "32768K"}, {"Instruction", "4", "64M"}};
    for (int i = 0; i < 5; i++) {
        put(dir, i, "type", c[i].type);
        put(dir, i, "level", c[i].level);
        put(dir, i, "size", c[i].size);
    }
    cr_assert_eq(tg_llc_bytes_sysfs(dir), (size_t)32 << 20);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

/* On this machine: sysfs when it has cache nodes, else cpuid's careful
 * reading, never glibc's misread 0x80000006 L3; the DRAM probe follows. */
Test(llc, machine) {
    size_t sys = tg_llc_bytes_sysfs("/sys/devices/system/cpu/cpu0/cache");
    size_t llc = tg_llc_bytes();
    cr_assert_eq(llc, sys ? sys : tg_cpu_cache_bytes());
#ifdef _SC_LEVEL3_CACHE_SIZE
    long glibc_l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (!sys && glibc_l3 > 0 && tg_cpu_cache_bytes() != (size_t)glibc_l3)
        cr_assert_neq(llc, (size_t)glibc_l3);
#endif
    size_t want = llc * 8;
    if (want < ((size_t)256 << 20)) want = (size_t)256 << 20;
    if (want > ((size_t)1024 << 20)) want = (size_t)1024 << 20;
    cr_assert_eq(tg_dram_probe_bytes(), want);
}
