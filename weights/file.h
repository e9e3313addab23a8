/* file.h — opening the files a model is read from. Paths are untrusted: a
 * FIFO would block open() and read() forever, a device would read without
 * end, so every reader of weights/ (and tools/ for its checkpoints) opens
 * through wt_open_regular. */
#ifndef TINYGPT_WEIGHTS_FILE_H
#define TINYGPT_WEIGHTS_FILE_H

#include <sys/stat.h>

#include "engine/status.h"

/* Opens path read-only if it is a regular file, refusing anything else
 * (folder, FIFO, device, socket) before any call can block on it: the open
 * is O_NONBLOCK until fstat has said what the file is. Returns the fd
 * (O_CLOEXEC, blocking again) with *st filled, or -1 with err set
 * (TG_ERR_IO, "PATH: is a FIFO, not a regular file" and the like). */
int wt_open_regular(const char *path, struct stat *st, tg_err *err);

#endif
