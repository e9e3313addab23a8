/* amx_none.c — the AMX init steps where the compiler has no AMX flags
 * (engine/meson.build): the table keeps the AVX-512 kernels. */
#include "engine/x86/x86.h"

void tg_kernels_init_amx_bf16(tg_kernels *k) { (void)k; }
void tg_kernels_init_amx_int8(tg_kernels *k) { (void)k; }
