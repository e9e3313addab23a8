/* file.c — see file.h. */
#include "weights/file.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
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
