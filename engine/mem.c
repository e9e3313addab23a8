/* mem.c — see mem.h. */
#include "engine/mem.h"

#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#define HUGE_PAGE ((size_t)2 << 20)

void *tg_alloc_large(size_t bytes) {
    if (bytes < HUGE_PAGE) return aligned_alloc(64, (bytes + 63) & ~(size_t)63);
    void *p;
    if (posix_memalign(&p, HUGE_PAGE, bytes)) return NULL;
#ifdef MADV_HUGEPAGE
    /* Only whole 2 MiB extents become huge pages; the tail keeps 4 KB ones,
     * so no memory is wasted on rounding the size up. Advice only: if it
     * fails, 4 KB pages still work. */
    long page = sysconf(_SC_PAGESIZE);
    size_t len = page > 0 ? (bytes + (size_t)page - 1) / (size_t)page * (size_t)page : bytes;
    (void)madvise(p, len, MADV_HUGEPAGE);
#endif
    return p;
}
