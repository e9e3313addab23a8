/* quant_neon.c — the typed-weight kernels on plain Advanced SIMD: int8
 * products widened by vmull_s8 and pairwise-accumulated (quant_neon_tmpl.h). */
#include "engine/arm/arm.h"

#define DOT16(acc, w, x)                                                                 \
    do {                                                                                 \
        int16x8_t lo_ = vmull_s8(vget_low_s8(w), vget_low_s8(x));                        \
        int16x8_t hi_ = vmull_s8(vget_high_s8(w), vget_high_s8(x));                      \
        (acc) = vpadalq_s16(vpadalq_s16((acc), lo_), hi_);                               \
    } while (0)
#define SUFFIX neon
#include "engine/arm/quant_neon_tmpl.h"
