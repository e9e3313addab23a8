/* test_map.c — weights/file.c's mapping (suite 'weights'): a file whose
 * page cache is in pieces smaller than 2 MiB, as a file just written in
 * unaligned chunks is (fsynced or still dirty), comes out of wt_map_settle
 * mapped by 2 MiB entries in every whole 2 MiB block, with the same bytes;
 * a mapping that is
 * already so is left alone (bench/README.md, "The mapped model's slow
 * steps"). */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "weights/file.h"

#define MIB ((size_t)1 << 20)

/* FilePmdMapped (kB) of the mapping starting at addr; -1 if unknown */
static long pmd_kb(const void *addr) {
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f) return -1;
    char line[512];
    int in = 0;
    long v = -1;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2) in = lo == (uintptr_t)addr;
        else if (in && !strncmp(line, "FilePmdMapped:", 14)) v = strtol(line + 14, NULL, 10);
    }
    fclose(f);
    return v;
}

static int thp_on(void) {
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    char line[128] = "";
    int ok = f && fgets(line, sizeof line, f) && !strstr(line, "[never]");
    if (f) fclose(f);
    return ok;
}

/* A 16 MiB + 123 byte file written in `chunk`-byte writes (3 MiB + 4 KiB:
 * each starts off a 2 MiB boundary, so the page cache around the boundaries
 * is in small folios; 4 KiB: all of it is), fsynced or left dirty, mapped
 * and read; then settled. */
static void settle_written_file(int fsynced, size_t chunk) {
    if (!thp_on()) cr_skip_test("transparent huge pages are off");
    const size_t size = 16 * MIB + 123;
    uint8_t *data = malloc(size);
    cr_assert(data);
    uint64_t s = 99;
    for (size_t i = 0; i < size; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        data[i] = (uint8_t)(s >> 56);
    }
    char path[] = "/var/tmp/tg_mapXXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    for (size_t off = 0; off < size; off += chunk) {
        size_t n = size - off < chunk ? size - off : chunk;
        cr_assert_eq(write(fd, data + off, n), (ssize_t)n);
    }
    if (fsynced) cr_assert_eq(fsync(fd), 0);
    close(fd);
    struct stat st;
    tg_err err;
    fd = wt_open_regular(path, &st, &err);
    cr_assert(fd >= 0, "%s", err.msg);
    wt_map m;
    cr_assert_eq(wt_map_open(&m, fd, size, path, &err), TG_OK, "%s", err.msg);
    unlink(path);
    volatile uint8_t sum = 0;
    for (size_t i = 0; i < size; i += 4096) sum += ((const uint8_t *)m.addr)[i]; /* all resident */
    long before = pmd_kb(m.addr);
    if (before < 0) cr_skip_test("no FilePmdMapped in /proc/self/smaps");
    const long whole = (long)(size / (2 * MIB) * 2048);
    int re = wt_map_settle(&m);
    long after = pmd_kb(m.addr);
    cr_log_info("FilePmdMapped %ld kB before, %ld kB after (of %ld), re-read %d", before, after, whole, re);
    if (before == 0 && re == 0) { /* its one-block trial found no 2 MiB folios */
        cr_expect_eq(after, 0, "no re-read, yet %ld kB on 2 MiB entries now", after);
        cr_expect_eq(memcmp(m.addr, data, size), 0, "the mapping's bytes changed");
        wt_map_close(&m);
        free(data);
        cr_skip_test("this file system gives no 2 MiB page cache folios");
    }
    cr_expect_eq(re, before < whole, "re-read %d with %ld of %ld kB on 2 MiB entries", re, before, whole);
    cr_expect_eq(after, whole, "after wt_map_settle %ld kB of %ld on 2 MiB entries (before %ld)", after,
                 whole, before);
    cr_expect_eq(memcmp(m.addr, data, size), 0, "the mapping's bytes changed");
    cr_expect_eq(wt_map_settle(&m), 0, "a second settle re-read a mapping already on 2 MiB entries");
    wt_map_close(&m);
    free(data);
}

Test(weights_map, settle_maps_whole_blocks_with_2mib_entries) { settle_written_file(1, 3 * MIB + 4096); }

/* dirty pages cannot be dropped: settle writes them out first */
Test(weights_map, settle_maps_a_file_just_written) { settle_written_file(0, 3 * MIB + 4096); }

/* nothing on 2 MiB entries before (as bench_model's gpt2-small file was,
 * written by stdio): settle's one-block trial, then the rest */
Test(weights_map, settle_maps_a_file_written_in_pages) { settle_written_file(0, 4096); }

/* Small, empty: nothing to do, nothing mapped for an empty file. */
Test(weights_map, small_and_empty_files) {
    char path[] = "/var/tmp/tg_mapXXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    cr_assert_eq(write(fd, "GGUF", 4), 4);
    close(fd);
    struct stat st;
    tg_err err;
    fd = wt_open_regular(path, &st, &err);
    cr_assert(fd >= 0);
    wt_map m;
    cr_assert_eq(wt_map_open(&m, fd, 4, path, &err), TG_OK);
    cr_expect_eq(memcmp(m.addr, "GGUF", 4), 0);
    cr_expect_eq(wt_map_settle(&m), 0);
    wt_map_close(&m);
    cr_expect_eq(truncate(path, 0), 0);
    fd = wt_open_regular(path, &st, &err);
    cr_assert(fd >= 0);
    cr_assert_eq(wt_map_open(&m, fd, 0, path, &err), TG_OK);
    cr_expect(m.addr == NULL);
    cr_expect_eq(wt_map_settle(&m), 0);
    wt_map_close(&m);
    unlink(path);
}
