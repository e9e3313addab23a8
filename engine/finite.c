/* finite.c — see finite.h. An f32 is non-finite exactly when its exponent
 * bits are all ones (0x7f800000). The scan tests a block at a time with
 * integer ops the compiler vectorises and looks for the index only in a
 * block that fails. */
#include "engine/finite.h"

#include <string.h>

#define BLOCK 1024

int64_t tg_f32_find_nonfinite(const void *x, uint64_t n, const char **what) {
    const unsigned char *p = x;
    for (uint64_t b = 0; b < n; b += BLOCK) {
        uint64_t m = n - b < BLOCK ? n - b : BLOCK;
        /* (exponent bits + one exponent step) sets bit 31 exactly when the
         * exponent is all ones: and, add, or, on any SIMD width (SSE2 too) */
        uint32_t bad = 0;
        for (uint64_t i = 0; i < m; i++) {
            uint32_t u;
            memcpy(&u, p + 4 * (b + i), 4);
            bad |= (u & 0x7f800000u) + 0x00800000u;
        }
        if (!(bad & 0x80000000u)) continue;
        for (uint64_t i = 0; i < m; i++) {
            uint32_t u;
            memcpy(&u, p + 4 * (b + i), 4);
            if ((u & 0x7f800000u) == 0x7f800000u) {
                if (what) *what = (u & 0x007fffffu) ? "NaN" : (u >> 31) ? "-inf" : "+inf";
                return (int64_t)(b + i);
            }
        }
    }
    return -1;
}
