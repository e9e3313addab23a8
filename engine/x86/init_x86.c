/* init_x86.c — upgrades the kernel table ISA by ISA on x86-64. */
#include "engine/x86/x86.h"

void tg_kernels_init_arch(tg_kernels *k, tg_isa isa) {
    if (isa < TG_ISA_AVX2 || isa == TG_ISA_NEON) return;
    tg_kernels_init_matmul_avx2(k);
    tg_kernels_init_ops_avx2(k);
    tg_kernels_init_train_avx2(k);
    tg_kernels_init_quant_avx2(k);
    if (tg_cpu_has(TG_CPU_AVX_VNNI)) tg_kernels_init_quant_avxvnni(k);
    if (isa < TG_ISA_AVX512) return;
    tg_kernels_init_matmul_avx512(k);
    tg_kernels_init_ops_avx512(k);
    tg_kernels_init_train_avx512(k);
    /* no VNNI of either kind (Skylake-X): the integer GEMM on zmm
     * vpmaddubsw, where AVX2's ymm one lost to the AVX-512 f32 GEMM */
    if (!tg_cpu_has(TG_CPU_AVX512_VNNI) && !tg_cpu_has(TG_CPU_AVX_VNNI)) tg_kernels_init_quant_avx512bw(k);
    if (tg_cpu_has(TG_CPU_AVX512_VNNI)) tg_kernels_init_quant_avx512vnni(k);
    if (tg_cpu_has(TG_CPU_AVX512_BF16)) tg_kernels_init_bf16_avx512bf16(k);
    /* AMX tiles (amx.c; no-ops where the compiler lacks them): the prefill
     * GEMMs; T == 1 keeps the GEMVs above (every AMX CPU has AVX512-VNNI and
     * AVX512-BF16) */
    if (tg_cpu_has(TG_CPU_AMX_BF16) && tg_cpu_has(TG_CPU_AVX512_BF16)) tg_kernels_init_amx_bf16(k);
    if (tg_cpu_has(TG_CPU_AMX_INT8) && tg_cpu_has(TG_CPU_AVX512_VNNI)) tg_kernels_init_amx_int8(k);
}

/* (the AMX BF16 GEMM, installed only with AVX512-BF16, rounds X the same way) */
int tg_arch_bf16_act(tg_isa isa) {
    return isa >= TG_ISA_AVX512 && isa != TG_ISA_NEON && tg_cpu_has(TG_CPU_AVX512_BF16);
}

int tg_isa_compiled(tg_isa isa) { return isa == TG_ISA_SCALAR || isa == TG_ISA_AVX2 || isa == TG_ISA_AVX512; }
