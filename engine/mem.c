/* mem.c — see mem.h. */
#include "engine/mem.h"

#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#define HUGE_PAGE ((size_t)2 << 20)

void *tg_alloc_large(size_t bytes) {
    if (bytes < HUGE_PAGE) return aligned_alloc(64, (bytes + 63) & ~(size_t)63);
    if (bytes > SIZE_MAX - HUGE_PAGE) return NULL;
    size_t n = (bytes + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
    void *p = aligned_alloc(HUGE_PAGE, n);
#ifdef MADV_HUGEPAGE
    if (p) (void)madvise(p, n, MADV_HUGEPAGE); /* advice only: 4 KB pages still work */
#endif
    return p;
}
