/* roofline_avx512.c — the FMA peak probe (roofline.h), 16-lane AVX-512
 * FMA: the shared template in this ISA's vocabulary. */
#include "engine/x86/vec_avx512.h"
#include "engine/simd/fma_probe_tmpl.h"
