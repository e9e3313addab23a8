/* file.h — opening the files a model is read from. Paths are untrusted: a
 * FIFO would block open() and read() forever, a device would read without
 * end, so every reader of weights/ (and tools/ for its checkpoints) opens
 * through wt_open_regular. */
#ifndef TINYGPT_WEIGHTS_FILE_H
#define TINYGPT_WEIGHTS_FILE_H

#include <stddef.h>
#include <sys/stat.h>

#include "engine/status.h"

/* Opens path read-only if it is a regular file, refusing anything else
 * (folder, FIFO, device, socket) before any call can block on it: the open
 * is O_NONBLOCK until fstat has said what the file is. Returns the fd
 * (O_CLOEXEC, blocking again) with *st filled, or -1 with err set
 * (TG_ERR_IO, "PATH: is a FIFO, not a regular file" and the like). */
int wt_open_regular(const char *path, struct stat *st, tg_err *err);

/* A whole file mapped read-only (MAP_PRIVATE) for as long as its reader
 * lives; the reader's weights point into it. */
typedef struct wt_map {
    void *addr;  /* NULL for an empty file (nothing mapped) */
    size_t size; /* the file's size */
    int fd;      /* kept open for wt_map_settle; -1 when closed */
} wt_map;

/* Maps fd (whose size is `size`) and advises the kernel to back the
 * mapping with 2 MiB pages (MADV_HUGEPAGE: what it reads from disk comes in
 * 2 MiB page cache folios, mapped by one page-table entry each). Owns fd
 * from here on, also on failure: TG_ERR_IO "PATH: mmap failed: ...". */
tg_status wt_map_open(wt_map *m, int fd, size_t size, const char *path, tg_err *err);

/* Once every page of the mapping has been read (a model's load scans all
 * its tensors): where the file's page cache is in pieces smaller than 2 MiB
 * (it was written just before, in many writes, or read by small reads)
 * only 4 KB entries map it, and a decode step that streams the weights
 * then takes a TLB miss per 4 KB, which on this VM made one step in four
 * take 3-6x its usual time (bench/README.md, "Memory pages matter").
 * So if fewer of its whole 2 MiB blocks are mapped by 2 MiB entries than
 * could be (FilePmdMapped in /proc/self/smaps), it drops its own entries
 * and the file's cached pages that no other process maps
 * (POSIX_FADV_DONTNEED; dirty pages are written out first, as only clean
 * ones can be dropped), and reads the file back (MADV_POPULATE_READ), now
 * in 2 MiB folios: the same resident bytes, one extra read of the file.
 * When no block at all is on a 2 MiB entry it re-reads the first block
 * alone first, and stops there if that one does not come back on a 2 MiB
 * entry (a file system without 2 MiB folios).
 * Does nothing where it cannot tell or cannot help (no /proc, transparent
 * huge pages off, a mapping not 2 MiB-aligned, not fully resident, smaller
 * than 2 MiB). Returns 1 if it re-read. */
int wt_map_settle(wt_map *m);

void wt_map_close(wt_map *m);

#endif
