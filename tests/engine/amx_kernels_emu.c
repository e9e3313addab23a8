/* amx_kernels_emu.c — the AMX kernels' source (engine/x86/amx_tmpl.h) on the
 * software model of the tiles (amx_emu.c), for test_amx: the same C, the
 * tile macros calling the model instead of the instructions. */
#define AMX_EMULATE 1
#define AMX_NAME(n) tg_amxemu_##n
#include "engine/x86/amx_tmpl.h"

/* the template's f32 -> bfloat16 rounding of X, for its unit test */
uint16_t tg_amxemu_bf16_round(float f);
uint16_t tg_amxemu_bf16_round(float f) { return (uint16_t)amx_bf16(f); }
