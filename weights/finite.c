/* finite.c — see finite.h. An IEEE value is non-finite exactly when its
 * exponent bits are all ones: 0x7f800000 for f32 (engine/finite.c), 0x7f80
 * for bf16 (the upper half of an f32), 0x7c00 for f16. As for f32, the scan
 * ORs that test over blocks and looks for the index only in a block that
 * fails. */
#include "weights/finite.h"

#include <string.h>

#include "engine/finite.h"
#include "weights/gguf.h"

#define BLOCK 1024

/* x[n] 16-bit values at stride bytes: the first whose exponent field (mask)
 * is all ones, or -1. f16: mask 0x7c00; bf16: 0x7f80. */
static int64_t scan16(const uint8_t *p, uint64_t n, size_t stride, uint16_t mask,
                      const char **what) {
    for (uint64_t b = 0; b < n; b += BLOCK) {
        uint64_t m = n - b < BLOCK ? n - b : BLOCK;
        unsigned bad = 0;
        for (uint64_t i = 0; i < m; i++) {
            uint16_t h;
            memcpy(&h, p + stride * (b + i), 2);
            bad |= (h & mask) == mask;
        }
        if (!bad) continue;
        for (uint64_t i = 0; i < m; i++) {
            uint16_t h;
            memcpy(&h, p + stride * (b + i), 2);
            if ((h & mask) == mask) {
                if (what)
                    *what = (h & (uint16_t)(~mask & 0x7fff)) ? "NaN" : (h >> 15) ? "-inf" : "+inf";
                return (int64_t)(b + i);
            }
        }
    }
    return -1;
}

int64_t tg_find_nonfinite(uint32_t type, const void *data, uint64_t n, const char **what) {
    const uint8_t *p = data;
    switch (type) {
    case TG_GGML_F32: return tg_f32_find_nonfinite(p, n, what);
    case TG_GGML_F16: return scan16(p, n, 2, 0x7c00, what);
    case TG_GGML_BF16: return scan16(p, n, 2, 0x7f80, what);
    case TG_GGML_Q8_0:
    case TG_GGML_Q4_0: {
        /* blocks of 32 values, the f16 scale first: then 32 int8 (34 bytes)
         * or 16 bytes of nibbles (18 bytes) */
        int64_t blk = scan16(p, n / 32, type == TG_GGML_Q8_0 ? 34 : 18, 0x7c00, what);
        return blk < 0 ? blk : blk * 32;
    }
    default: return -2;
    }
}
