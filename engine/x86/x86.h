/* x86.h — the per-ISA upgrade steps on x86-64 (each in files built with that
 * ISA's flags only). */
#ifndef TINYGPT_X86_H
#define TINYGPT_X86_H
#include "engine/engine.h"
void tg_kernels_init_matmul_avx2(tg_kernels *k);
void tg_kernels_init_ops_avx2(tg_kernels *k);
void tg_kernels_init_train_avx2(tg_kernels *k);
void tg_kernels_init_matmul_avx512(tg_kernels *k);
void tg_kernels_init_ops_avx512(tg_kernels *k);
#endif
