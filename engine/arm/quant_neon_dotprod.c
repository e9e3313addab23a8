/* quant_neon_dotprod.c — the typed-weight kernels with the dotprod
 * extension (sdot: four int8 products per int32 lane), installed where
 * AT_HWCAP says ASIMDDP (quant_neon_tmpl.h). */
#include "engine/arm/arm.h"

#define DOT16(acc, w, x) (acc) = vdotq_s32((acc), (w), (x))
#define SUFFIX neon_dotprod
#include "engine/arm/quant_neon_tmpl.h"
