/* quant_neon_dotprod.c — the typed-weight kernels with the dotprod
 * extension (sdot: four int8 products per int32 lane), installed where
 * AT_HWCAP says ASIMDDP (quant_neon_tmpl.h). */
#include <arm_neon.h>

#include "engine/arm/arm.h"

#define DOT16(acc, w, x) (acc) = vdotq_s32((acc), (w), (x))

/* The GEMM's accumulator of 4 weight rows: one sdot by lane multiplies
 * each row's 4 bytes by the same 4 bytes of x and adds them into that
 * row's lane. */
typedef int32x4_t qacc;
#define qacc_zero() vdupq_n_s32(0)
#define qacc_dot(a, w, x, l) vdotq_laneq_s32((a), (w), (x), (l))
#define qacc_sum(a) (a)
#define QMR 4

#define SUFFIX neon_dotprod
#include "engine/arm/quant_neon_tmpl.h"
