/* file.c — see file.h. */
#include "weights/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static const char *kind(mode_t m) {
    if (S_ISDIR(m)) return "a directory";
    if (S_ISFIFO(m)) return "a FIFO";
    if (S_ISCHR(m)) return "a character device";
    if (S_ISBLK(m)) return "a block device";
    if (S_ISSOCK(m)) return "a socket";
    return "not a regular file";
}

int wt_open_regular(const char *path, struct stat *st, tg_err *err) {
    /* O_NONBLOCK: opening a FIFO for reading returns at once instead of
     * waiting for a writer (on a regular file the flag does nothing) */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) return tg_fail(err, TG_ERR_IO, "%s: %s", path, strerror(errno)), -1;
    int flags;
    if (fstat(fd, st) != 0 || (flags = fcntl(fd, F_GETFL)) < 0) {
        int e = errno;
        close(fd);
        return tg_fail(err, TG_ERR_IO, "%s: %s", path, strerror(e)), -1;
    }
    if (!S_ISREG(st->st_mode)) {
        close(fd);
        if (S_ISDIR(st->st_mode)) return tg_fail(err, TG_ERR_IO, "%s: is a directory", path), -1;
        return tg_fail(err, TG_ERR_IO, "%s: is %s, not a regular file", path, kind(st->st_mode)), -1;
    }
    if (fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
        int e = errno;
        close(fd);
        return tg_fail(err, TG_ERR_IO, "%s: %s", path, strerror(e)), -1;
    }
    return fd;
}

tg_status wt_map_open(wt_map *m, int fd, size_t size, const char *path, tg_err *err) {
    m->addr = NULL;
    m->size = size;
    m->fd = fd;
    if (size == 0) return TG_OK;
    void *a = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (a == MAP_FAILED) {
        int e = errno;
        wt_map_close(m);
        return tg_fail(err, TG_ERR_IO, "%s: mmap failed: %s", path, strerror(e));
    }
    m->addr = a;
    (void)madvise(a, size, MADV_HUGEPAGE); /* advice: a kernel without THP says no */
    return TG_OK;
}

/* Rss and FilePmdMapped (kB) of the mapping that starts at addr, from
 * /proc/self/smaps; 0 when it cannot be read. */
static int smaps_of(const void *addr, long *rss_kb, long *pmd_kb) {
    FILE *f = fopen("/proc/self/smaps", "re");
    if (!f) return 0;
    char line[512];
    int in = 0, found = 0;
    *rss_kb = *pmd_kb = -1;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2) { /* a mapping's first line */
            if (found) break;
            in = found = lo == (uintptr_t)addr;
        } else if (in && !strncmp(line, "Rss:", 4)) {
            *rss_kb = strtol(line + 4, NULL, 10);
        } else if (in && !strncmp(line, "FilePmdMapped:", 14)) {
            *pmd_kb = strtol(line + 14, NULL, 10);
        }
    }
    fclose(f);
    return found && *rss_kb >= 0 && *pmd_kb >= 0;
}

/* 1 unless transparent huge pages are off ("[never]"): then no read can
 * bring 2 MiB folios and a re-read would be lost time */
static int thp_possible(void) {
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "re");
    if (!f) return 0;
    char line[128] = "";
    int ok = fgets(line, sizeof line, f) && !strstr(line, "[never]");
    fclose(f);
    return ok;
}

/* The file's bytes [off, off + len) (off a multiple of 2 MiB, the mapping
 * 2 MiB-aligned) dropped from this mapping and from the page cache, and read
 * back. Only clean pages can be dropped, so a file written just before
 * (the bench's, a fresh `quantize` output) has its dirty pages written out
 * first: writeback the kernel would do anyway. */
static void reread(wt_map *m, size_t off, size_t len) {
    (void)sync_file_range(m->fd, (off_t)off, (off_t)len,
                          SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
                              SYNC_FILE_RANGE_WAIT_AFTER);
    if (madvise((char *)m->addr + off, len, MADV_DONTNEED) != 0) return;
    (void)posix_fadvise(m->fd, (off_t)off, (off_t)len, POSIX_FADV_DONTNEED);
    /* read back now, as the load had; without MADV_POPULATE_READ (before
     * Linux 5.14) the first use faults the pages in instead */
    (void)madvise((char *)m->addr + off, len, MADV_POPULATE_READ);
}

int wt_map_settle(wt_map *m) {
    const size_t huge = (size_t)2 << 20;
    if (!m->addr || m->fd < 0 || m->size < huge || (uintptr_t)m->addr % huge || !thp_possible())
        return 0;
    long rss, pmd;
    if (!smaps_of(m->addr, &rss, &pmd)) return 0;
    long blocks_kb = (long)(m->size / huge * (huge >> 10)); /* the whole 2 MiB blocks */
    if (rss < (long)(m->size >> 10) || pmd >= blocks_kb) return 0;
    size_t from = 0;
    if (pmd == 0) {
        /* nothing on 2 MiB entries: either the page cache holds this file
         * in small folios (written just before, or read by small reads:
         * the common case), or this file system gives no 2 MiB folios at
         * all (no large folios, no CONFIG_READ_ONLY_THP_FOR_FS). The first
         * block tells which, for one 2 MiB re-read, where re-reading the
         * whole file would cost every load of the second kind a read of
         * the file for nothing. */
        reread(m, 0, huge);
        if (!smaps_of(m->addr, &rss, &pmd) || pmd == 0) return 0;
        from = huge;
    }
    reread(m, from, m->size - from);
    return 1;
}

void wt_map_close(wt_map *m) {
    if (m->addr) munmap(m->addr, m->size);
    if (m->fd >= 0) close(m->fd);
    m->addr = NULL;
    m->fd = -1;
}
