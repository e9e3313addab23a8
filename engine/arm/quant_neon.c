/* quant_neon.c — the typed-weight kernels on plain Advanced SIMD: int8
 * products widened by vmull_s8 and pairwise-accumulated (quant_neon_tmpl.h). */
#include <arm_neon.h>

#include "engine/arm/arm.h"

#define DOT16(acc, w, x)                                                                 \
    do {                                                                                 \
        int16x8_t lo_ = vmull_s8(vget_low_s8(w), vget_low_s8(x));                        \
        int16x8_t hi_ = vmull_s8(vget_high_s8(w), vget_high_s8(x));                      \
        (acc) = vpadalq_s16(vpadalq_s16((acc), lo_), hi_);                               \
    } while (0)

/* The GEMM's accumulator of 4 weight rows: w holds rows 0,1 in its low 8
 * bytes and rows 2,3 in its high 8, so vmull_s8 of each half against the
 * broadcast 4 bytes of x gives int16 products of 2 rows, and vpadalq_s16
 * pairs them into lanes (row 0, row 0, row 1, row 1) of lo and the same for
 * rows 2,3 of hi; vpaddq_s32(lo, hi) is then the 4 row sums. Exact: an
 * int8·int8 product fits int16, and 32 of them int32. */
typedef struct qacc {
    int32x4_t lo, hi;
} qacc;
static inline qacc qacc_zero(void) { return (qacc){vdupq_n_s32(0), vdupq_n_s32(0)}; }
#define qacc_dot(a, w, x, l)                                                             \
    __extension__({                                                                      \
        int8x16_t xb_ = vreinterpretq_s8_s32(vdupq_laneq_s32(vreinterpretq_s32_s8(x), l)); \
        (qacc){vpadalq_s16((a).lo, vmull_s8(vget_low_s8(w), vget_low_s8(xb_))),          \
               vpadalq_s16((a).hi, vmull_high_s8((w), xb_))};                            \
    })
static inline int32x4_t qacc_sum(qacc a) { return vpaddq_s32(a.lo, a.hi); }
#define QMR 3

#define SUFFIX neon
#include "engine/arm/quant_neon_tmpl.h"
