/* init_generic.c — CPUs without a SIMD path keep the C reference. */
#include "engine/engine.h"

void tg_kernels_init_arch(tg_kernels *k, tg_isa isa) { (void)k; (void)isa; }

int tg_arch_bf16_act(tg_isa isa) {
    (void)isa;
    return 0;
}

int tg_isa_compiled(tg_isa isa) { return isa == TG_ISA_SCALAR; }
