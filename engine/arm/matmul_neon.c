/* matmul_neon.c — not yet vectorised: the table keeps the C reference. */
#include "engine/arm/arm.h"

void tg_kernels_init_matmul_neon(tg_kernels *k) { (void)k; }
