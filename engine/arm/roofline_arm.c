/* roofline_arm.c — the FMA probe kernel for each ISA level on aarch64. */
#include "engine/roofline.h"

tg_fma_probe_fn tg_fma_probe_arch(tg_isa isa) {
    return isa == TG_ISA_NEON ? tg_fma_probe_neon : tg_fma_probe_ref;
}

/* CNTVCT often ticks at only 24-50 MHz: clock_gettime (which reads it with
 * the kernel's scaling) is as cheap and finer. */
/* NEON's 128-bit loads are what the compiler gives the C reference
 * already: the reference is the read probe here. */
tg_read_probe_fn tg_read_probe_arch(tg_isa isa) {
    (void)isa;
    return tg_read_probe_ref;
}

tg_tick_fn tg_tick_source_arch(void) { return NULL; }
