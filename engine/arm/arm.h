/* arm.h — the NEON upgrade steps on aarch64. */
#ifndef TINYGPT_ARM_H
#define TINYGPT_ARM_H
#include "engine/engine.h"
void tg_kernels_init_matmul_neon(tg_kernels *k);
void tg_kernels_init_ops_neon(tg_kernels *k);
void tg_kernels_init_train_neon(tg_kernels *k);
#endif
