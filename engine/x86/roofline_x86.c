/* roofline_x86.c — the FMA probe kernel for each ISA level on x86-64. */
#include "engine/roofline.h"

tg_fma_probe_fn tg_fma_probe_arch(tg_isa isa) {
    if (isa == TG_ISA_AVX512) return tg_fma_probe_avx512;
    if (isa == TG_ISA_AVX2) return tg_fma_probe_avx2;
    return tg_fma_probe_ref;
}
