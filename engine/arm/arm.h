/* arm.h — the NEON upgrade steps on aarch64. */
#ifndef TINYGPT_ARM_H
#define TINYGPT_ARM_H
#include "engine/engine.h"
void tg_kernels_init_matmul_neon(tg_kernels *k);
void tg_kernels_init_ops_neon(tg_kernels *k);
void tg_kernels_init_train_neon(tg_kernels *k);
/* The NEON f32 matmul (tg_kernels.matmul's contract). */
void tg_matmul_neon(float *y, const float *x, const float *w, const float *b, int T, int in,
                    int out, int o0, int o1);
/* The same GEMM for T > 1 with W in IEEE half (h16) or bfloat16, rows ldw
 * bytes apart, widened as its panels are packed: the bits of tg_matmul_neon
 * on the widened W. */
void tg_matmul_neon_half(int h16, float *y, const float *x, const void *w, size_t ldw, const float *b,
                         int T, int in, int out, int o0, int o1);
/* The typed-weight kernels: plain NEON, and with dotprod (sdot). */
void tg_kernels_init_quant_neon(tg_kernels *k);
void tg_kernels_init_quant_neon_dotprod(tg_kernels *k);
#endif
