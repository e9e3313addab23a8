/* roofline_avx512.c — FMA peak probe, 16-lane AVX-512 FMA (see roofline.h).
 * TG_FMA_CHAINS independent accumulators cover FMA latency × pipes
 * (4 cycles × 2 on current cores) with room to spare. */
#include <immintrin.h>

#include "engine/roofline.h"

double tg_fma_probe_avx512(long iters, float m, float c, float x0, int *lanes) {
    __m512 vm = _mm512_set1_ps(m), vc = _mm512_set1_ps(c);
    __m512 a0 = _mm512_set1_ps(x0 + 0.0f / 16);
    __m512 a1 = _mm512_set1_ps(x0 + 1.0f / 16);
    __m512 a2 = _mm512_set1_ps(x0 + 2.0f / 16);
    __m512 a3 = _mm512_set1_ps(x0 + 3.0f / 16);
    __m512 a4 = _mm512_set1_ps(x0 + 4.0f / 16);
    __m512 a5 = _mm512_set1_ps(x0 + 5.0f / 16);
    __m512 a6 = _mm512_set1_ps(x0 + 6.0f / 16);
    __m512 a7 = _mm512_set1_ps(x0 + 7.0f / 16);
    __m512 a8 = _mm512_set1_ps(x0 + 8.0f / 16);
    __m512 a9 = _mm512_set1_ps(x0 + 9.0f / 16);
    __m512 a10 = _mm512_set1_ps(x0 + 10.0f / 16);
    __m512 a11 = _mm512_set1_ps(x0 + 11.0f / 16);
    for (long i = 0; i < iters; i++) {
        a0 = _mm512_fmadd_ps(a0, vm, vc);
        a1 = _mm512_fmadd_ps(a1, vm, vc);
        a2 = _mm512_fmadd_ps(a2, vm, vc);
        a3 = _mm512_fmadd_ps(a3, vm, vc);
        a4 = _mm512_fmadd_ps(a4, vm, vc);
        a5 = _mm512_fmadd_ps(a5, vm, vc);
        a6 = _mm512_fmadd_ps(a6, vm, vc);
        a7 = _mm512_fmadd_ps(a7, vm, vc);
        a8 = _mm512_fmadd_ps(a8, vm, vc);
        a9 = _mm512_fmadd_ps(a9, vm, vc);
        a10 = _mm512_fmadd_ps(a10, vm, vc);
        a11 = _mm512_fmadd_ps(a11, vm, vc);
    }
    __m512 s = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)),
                             _mm512_add_ps(_mm512_add_ps(a4, a5), _mm512_add_ps(a6, a7)));
    s = _mm512_add_ps(s, _mm512_add_ps(_mm512_add_ps(a8, a9), _mm512_add_ps(a10, a11)));
    float out[16];
    _mm512_storeu_ps(out, s);
    double sum = 0;
    for (int i = 0; i < 16; i++) sum += out[i];
    *lanes = 16;
    return sum;
}
