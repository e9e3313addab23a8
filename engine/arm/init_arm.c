/* init_arm.c — upgrades the kernel table on aarch64. */
#include "engine/arm/arm.h"

void tg_kernels_init_arch(tg_kernels *k, tg_isa isa) {
    if (isa != TG_ISA_NEON) return;
    tg_kernels_init_matmul_neon(k);
    tg_kernels_init_ops_neon(k);
    tg_kernels_init_train_neon(k);
    tg_kernels_init_quant_neon(k);
    if (tg_cpu_has(TG_CPU_NEON_DOTPROD)) tg_kernels_init_quant_neon_dotprod(k);
}

int tg_arch_bf16_act(tg_isa isa) {
    (void)isa;
    return 0;
}

int tg_isa_compiled(tg_isa isa) { return isa == TG_ISA_SCALAR || isa == TG_ISA_NEON; }
