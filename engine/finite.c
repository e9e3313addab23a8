/* finite.c — see finite.h. An f32 is non-finite exactly when its exponent
 * bits are all ones (0x7f800000). The scan ORs that test over blocks (a loop
 * the compiler vectorises) and looks for the index only in a block that
 * fails. */
#include "engine/finite.h"

#include <string.h>

#define BLOCK 1024

int64_t tg_f32_find_nonfinite(const void *x, uint64_t n, const char **what) {
    const unsigned char *p = x;
    for (uint64_t b = 0; b < n; b += BLOCK) {
        uint64_t m = n - b < BLOCK ? n - b : BLOCK;
        unsigned bad = 0;
        for (uint64_t i = 0; i < m; i++) {
            uint32_t u;
            memcpy(&u, p + 4 * (b + i), 4);
            bad |= (u & 0x7f800000u) == 0x7f800000u;
        }
        if (!bad) continue;
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
