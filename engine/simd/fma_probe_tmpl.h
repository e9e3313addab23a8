/* fma_probe_tmpl.h — the FMA peak probe of roofline.h, written once in the
 * SIMD vocabulary of a vec_<isa>.h and included by that ISA's roofline file.
 * TG_FMA_CHAINS independent chains a = a·m + c cover FMA latency × pipes
 * (4 cycles × 2 on current cores) with room to spare; the loops are
 * unrolled so every chain is a register. */
#include "engine/roofline.h"

#ifndef FN
#define TG_CAT_(a, b) a##_##b
#define TG_CAT(a, b) TG_CAT_(a, b)
#define FN(name) TG_CAT(name, ISA_SUFFIX)
#endif

double FN(tg_fma_probe)(long iters, float m, float c, float x0, int *lanes) {
    const vf vm = vset(m), vc = vset(c);
    vf a[TG_FMA_CHAINS];
    _Pragma("GCC unroll 16")
    for (int k = 0; k < TG_FMA_CHAINS; k++) a[k] = vset(x0 + (float)k / 16);
    for (long i = 0; i < iters; i++) {
        _Pragma("GCC unroll 16")
        for (int k = 0; k < TG_FMA_CHAINS; k++) a[k] = vfma(a[k], vm, vc);
    }
    vf s = a[0];
    _Pragma("GCC unroll 16")
    for (int k = 1; k < TG_FMA_CHAINS; k++) s = vadd(s, a[k]);
    *lanes = VL;
    return vsum(s);
}
