/* roofline_x86.c — the FMA probe kernel for each ISA level on x86-64, and
 * the TSC as the profiler's tick counter. */
#include <cpuid.h>
#include <x86intrin.h>

#include "engine/roofline.h"

tg_fma_probe_fn tg_fma_probe_arch(tg_isa isa) {
    if (isa == TG_ISA_AVX512) return tg_fma_probe_avx512;
    if (isa == TG_ISA_AVX2) return tg_fma_probe_avx2;
    return tg_fma_probe_ref;
}

tg_read_probe_fn tg_read_probe_arch(tg_isa isa) {
    if (isa == TG_ISA_AVX512) return tg_read_probe_avx512;
    if (isa == TG_ISA_AVX2) return tg_read_probe_avx2;
    return tg_read_probe_ref;
}

static uint64_t ticks_tsc(void) { return __rdtsc(); }

/* Only an invariant TSC (CPUID 0x80000007 EDX bit 8) ticks at a constant
 * rate across frequency changes and sleep states. */
tg_tick_fn tg_tick_source_arch(void) {
    unsigned a, b, c, d;
    if (__get_cpuid(0x80000007, &a, &b, &c, &d) && ((d >> 8) & 1)) return ticks_tsc;
    return NULL;
}
