/* status.h — error codes and one-line error messages shared by all layers. */
#ifndef TINYGPT_STATUS_H
#define TINYGPT_STATUS_H

#include <stddef.h>

typedef enum tg_status {
    TG_OK = 0,
    TG_ERR_NOMEM,       /* allocation failed */
    TG_ERR_IO,          /* open/read/write/mmap/rename failed */
    TG_ERR_FORMAT,      /* malformed or hostile file contents */
    TG_ERR_UNSUPPORTED, /* valid but not supported (tensor type, ISA, ...) */
    TG_ERR_ARG,         /* bad argument from the caller */
    TG_ERR_RANGE,       /* value out of range (prompt longer than context, ...) */
    TG_ERR_NUMERIC,     /* NaN/inf where a finite value is required */
    TG_ERR_INTERRUPTED, /* stopped by a signal */
} tg_status;

/* A caller-owned one-line message naming the problem and where it is. */
typedef struct tg_err {
    char msg[512];
} tg_err;

const char *tg_status_str(tg_status s);

/* Formats err->msg (if err is non-NULL) and returns s, so that error paths
 * read `return tg_fail(err, TG_ERR_FORMAT, "gguf: %s: ...", ...);` */
tg_status tg_fail(tg_err *err, tg_status s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
