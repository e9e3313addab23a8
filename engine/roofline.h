/* roofline.h — what this machine can do, measured rather than looked up:
 * DRAM read bandwidth (a stream over a buffer much larger than the caches)
 * and FMA peak (independent FMA chains that keep every FMA pipe busy). The
 * profiler and the bench divide an op's achieved rate by these two ceilings:
 * an op doing F flops and reading B bytes can at best take
 *     max(F / peak, B / bandwidth)   seconds   (the roofline model),
 * and "% of roofline" is that time over the measured time.
 *
 * Both probes run on the pool with nth workers (each thread its own share)
 * and report the best of many short (~1 ms) passes: the ceiling, not the
 * average, and one the scheduler did not interrupt on a shared machine.
 */
#ifndef TINYGPT_ROOFLINE_H
#define TINYGPT_ROOFLINE_H

#include <stddef.h>
#include <stdint.h>

#include "engine/engine.h"

typedef struct tg_roofline {
    int n_threads;       /* threads the probes ran on */
    tg_isa isa;          /* ISA of the FMA probe */
    double dram_gbs;     /* read bandwidth, 1e9 bytes/s */
    double peak_gflops;  /* FMA peak, 1e9 flop/s (an FMA counts 2 flops) */
} tg_roofline;

/* Reads `bytes` (0: tg_dram_probe_bytes()) of memory with nth threads, in
 * passes, for about `seconds`; *gbs = the fastest pass. */
tg_status tg_measure_dram_read(tg_pool *pool, int nth, size_t bytes, double seconds,
                               double *gbs, tg_err *err);

/* The same probe one pass at a time, to interleave passes with other work
 * (bench_model alternates them with decode steps, so both see the same
 * machine and their medians compare). A pass reads half the buffer, the
 * half the previous pass did not read. */
typedef struct tg_dram_probe tg_dram_probe;
tg_status tg_dram_probe_create(tg_dram_probe **out, size_t bytes, tg_err *err);
tg_status tg_dram_probe_pass(tg_dram_probe *p, tg_pool *pool, int nth, double *gbs,
                             tg_err *err);
void tg_dram_probe_free(tg_dram_probe *p);

/* Runs independent FMA chains with the widest vectors of `isa` on nth
 * threads for about `seconds`; *gflops = the fastest pass. */
tg_status tg_measure_fma_peak(tg_pool *pool, int nth, tg_isa isa, double seconds,
                              double *gflops, tg_err *err);

/* Both probes, `seconds` each, default buffer size. */
tg_status tg_roofline_measure(tg_roofline *r, tg_pool *pool, int nth, tg_isa isa,
                              double seconds, tg_err *err);

/* The roofline's lower bound on the time of work of `flops` flops reading
 * `bytes` bytes: max(flops / peak, bytes / bandwidth), in seconds. */
double tg_roofline_time(const tg_roofline *r, double flops, double bytes);

/* The last-level cache size in bytes (0 if unknown): a working set below
 * it is served from cache, faster than the DRAM roofline. sysfs, then
 * cpuid (tg_cpu_cache_bytes); where neither gives the L3 (the sandbox VM
 * has no sysfs cache nodes and no 0x8000001D) it is the largest cache that
 * can be confirmed, e.g. the L2, a safe underestimate for both its users. */
size_t tg_llc_bytes(void);
/* Its sysfs source: the largest data/unified cache of the highest level
 * under dir (.../cpu0/cache, files indexN/type, level, size); 0 if none. */
size_t tg_llc_bytes_sysfs(const char *dir);

/* Default DRAM probe size: 8x the last-level cache, at least 256 MiB, at
 * most 1 GiB. */
size_t tg_dram_probe_bytes(void);

/* ---- FMA probe kernels (one per ISA, in the files built with its flags) ---
 *
 * Runs `iters` steps of acc = acc * m + c on every lane of TG_FMA_CHAINS
 * independent vector accumulators, chain k starting at x0 + k/16 (distinct, so
 * the compiler cannot merge chains), and returns the sum
 * of all lanes (so the work cannot be optimised away, and a test can check
 * it against the recurrence). *lanes receives the number of float lanes per
 * accumulator; the flops done are iters * TG_FMA_CHAINS * lanes * 2. */
#define TG_FMA_CHAINS 12
typedef double (*tg_fma_probe_fn)(long iters, float m, float c, float x0, int *lanes);

double tg_fma_probe_ref(long iters, float m, float c, float x0, int *lanes);
double tg_fma_probe_avx2(long iters, float m, float c, float x0, int *lanes);
double tg_fma_probe_avx512(long iters, float m, float c, float x0, int *lanes);
double tg_fma_probe_neon(long iters, float m, float c, float x0, int *lanes);

/* The FMA probe kernel for `isa` on this architecture (the C reference if
 * the architecture has none for it). Defined per architecture. */
tg_fma_probe_fn tg_fma_probe_arch(tg_isa isa);

/* ---- DRAM read probe kernels ----------------------------------------------
 *
 * The sum of words[0..n) (n a multiple of 32, words 64-byte aligned), in
 * independent accumulators so the loads never wait on each other: the
 * sum only keeps the reads alive. The probe must read at least as fast as
 * any kernel it judges, so it loads the widest vectors the CPU has: the
 * baseline (SSE2) loop read ~20% less than 256- and 512-bit loads on a
 * Zen 5 (33 vs 40-41 GB/s, 2026-12-03), and decode GEMVs then measured
 * above 100% of it. */
typedef uint64_t (*tg_read_probe_fn)(const uint64_t *words, size_t n);
uint64_t tg_read_probe_ref(const uint64_t *words, size_t n);
uint64_t tg_read_probe_avx2(const uint64_t *words, size_t n);
uint64_t tg_read_probe_avx512(const uint64_t *words, size_t n);
/* The read kernel for `isa` on this architecture (the C reference where
 * it has none). Defined per architecture. */
tg_read_probe_fn tg_read_probe_arch(tg_isa isa);

/* ---- a cheap clock for timing many short ops ------------------------------
 *
 * The profiler reads the clock twice per op, and attention ops can last a
 * fraction of a microsecond, so the read must cost far less than
 * clock_gettime on a VM. tg_tick_source returns a monotonic tick counter
 * and its period, calibrated once against CLOCK_MONOTONIC: the invariant
 * TSC on x86-64, else clock_gettime itself (1 tick = 1 ns). */
typedef uint64_t (*tg_tick_fn)(void);
tg_tick_fn tg_tick_source(double *ns_per_tick);

/* The architecture's counter if it is usable (x86-64: invariant TSC), or
 * NULL. Defined per architecture. */
tg_tick_fn tg_tick_source_arch(void);

#endif
