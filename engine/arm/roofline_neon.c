/* roofline_neon.c — the FMA peak probe (roofline.h), 4-lane NEON FMA: the
 * shared template in this ISA's vocabulary. */
#include "engine/arm/vec_neon.h"
#include "engine/simd/fma_probe_tmpl.h"
