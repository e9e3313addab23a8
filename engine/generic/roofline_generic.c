/* roofline_generic.c — CPUs without a SIMD path probe with the C reference. */
#include "engine/roofline.h"

tg_fma_probe_fn tg_fma_probe_arch(tg_isa isa) {
    (void)isa;
    return tg_fma_probe_ref;
}

tg_read_probe_fn tg_read_probe_arch(tg_isa isa) {
    (void)isa;
    return tg_read_probe_ref;
}

tg_tick_fn tg_tick_source_arch(void) { return NULL; }
