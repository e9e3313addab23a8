/* matmul_avx2.c — not yet vectorised: the table keeps the C reference. */
#include "engine/x86/x86.h"

void tg_kernels_init_matmul_avx2(tg_kernels *k) { (void)k; }
