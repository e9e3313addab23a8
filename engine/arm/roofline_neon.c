/* roofline_neon.c — FMA peak probe, 4-lane NEON FMA (see roofline.h). */
#include <arm_neon.h>

#include "engine/roofline.h"

double tg_fma_probe_neon(long iters, float m, float c, float x0, int *lanes) {
    float32x4_t vc = vdupq_n_f32(c);
    float32x4_t a[TG_FMA_CHAINS];
    for (int k = 0; k < TG_FMA_CHAINS; k++) a[k] = vdupq_n_f32(x0 + (float)k / 16);
    for (long i = 0; i < iters; i++)
        for (int k = 0; k < TG_FMA_CHAINS; k++) a[k] = vfmaq_n_f32(vc, a[k], m); /* c + a*m */
    float32x4_t s = a[0];
    for (int k = 1; k < TG_FMA_CHAINS; k++) s = vaddq_f32(s, a[k]);
    *lanes = 4;
    return (double)vgetq_lane_f32(s, 0) + vgetq_lane_f32(s, 1) + vgetq_lane_f32(s, 2) +
           vgetq_lane_f32(s, 3);
}
