/* roofline_avx2.c — the FMA peak probe (roofline.h), 8-lane AVX2 FMA: the shared
 * template in this ISA's vocabulary. */
#include "engine/x86/vec_avx2.h"
#include "engine/simd/fma_probe_tmpl.h"
