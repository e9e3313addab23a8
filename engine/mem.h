/* mem.h — large buffers (weights converted at load, KV caches, probe
 * buffers) that are streamed end to end.
 *
 * With 4 KB pages a stream of hundreds of MB takes a TLB miss every 4 KB;
 * on Zen 4 the GPT-2-small decode streamed its weights ~25% faster from
 * 2 MB pages (bench/README.md). Linux gives anonymous memory transparent
 * huge pages only where asked (transparent_hugepage=madvise is the common
 * default), so large buffers ask. */
#ifndef TINYGPT_MEM_H
#define TINYGPT_MEM_H

#include <stddef.h>

/* `bytes` of uninitialised memory (NULL when out of memory), 64-byte
 * aligned; from 2 MiB up also 2 MiB-aligned and advised for huge pages
 * (before any page is touched, so they fault in huge). Release with free(). */
void *tg_alloc_large(size_t bytes);

#endif
