/* amx.c — BF16, Q8_0 and Q4_0 prefill GEMMs on AMX tiles (amx_tmpl.h), for
 * the AVX-512 table where the CPU and OS offer AMX (engine/cpu.c:
 * TG_CPU_AMX_BF16, TG_CPU_AMX_INT8; init_x86.c). T == 1 stays on the
 * decode GEMVs of the AVX-512 table: they are bound by W's bytes, which
 * tiles would not shrink.
 *
 * NOTE: this file has never run on hardware (no CPU we have has AMX). Its
 * kernels' source is tested on every machine through a software model of
 * the tile instructions (tests/engine/test_amx.c), and through the real
 * dispatch only where tg_cpu_has(TG_CPU_AMX_*). */
#include "engine/x86/x86.h"

#define AMX_NAME(n) tg_amx_##n
#include "engine/x86/amx_tmpl.h"

static void matmul_bf16_amx(float *y, const void *x, const void *w, size_t ldw, const float *b,
                            int T, int in, int out, int o0, int o1, void *ws) {
    if (T == 1) tg_gemv_half_avx512(0, y, x, w, ldw, b, in, o0, o1);
    else tg_amx_gemm_bf16(y, x, w, ldw, b, T, in, out, o0, o1, ws);
}

static void matmul_q8_0_amx(float *y, const void *x, const void *w, size_t ldw, const float *b,
                            int T, int in, int out, int o0, int o1, void *ws) {
    if (T == 1) tg_matmul_q_decode_avx512vnni(0, y, x, w, ldw, b, in, out, o0, o1);
    else tg_amx_gemm_q(0, y, x, w, ldw, b, T, in, out, o0, o1, ws);
}

static void matmul_q4_0_amx(float *y, const void *x, const void *w, size_t ldw, const float *b,
                            int T, int in, int out, int o0, int o1, void *ws) {
    if (T == 1) tg_matmul_q_decode_avx512vnni(1, y, x, w, ldw, b, in, out, o0, o1);
    else tg_amx_gemm_q(1, y, x, w, ldw, b, T, in, out, o0, o1, ws);
}

void tg_kernels_init_amx_bf16(tg_kernels *k) {
    k->matmul_w[TG_WTYPE_BF16] = matmul_bf16_amx; /* tg_arch_bf16_act says so */
}

void tg_kernels_init_amx_int8(tg_kernels *k) {
    k->matmul_w[TG_WTYPE_Q8_0] = matmul_q8_0_amx;
    k->matmul_w[TG_WTYPE_Q4_0] = matmul_q4_0_amx;
}
