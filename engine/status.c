#include "engine/status.h"

#include <stdarg.h>
#include <stdio.h>

const char *tg_status_str(tg_status s) {
    switch (s) {
    case TG_OK: return "ok";
    case TG_ERR_NOMEM: return "out of memory";
    case TG_ERR_IO: return "i/o error";
    case TG_ERR_FORMAT: return "malformed input";
    case TG_ERR_UNSUPPORTED: return "unsupported";
    case TG_ERR_ARG: return "bad argument";
    case TG_ERR_RANGE: return "out of range";
    case TG_ERR_NUMERIC: return "non-finite value";
    case TG_ERR_INTERRUPTED: return "interrupted";
    }
    return "unknown error";
}

tg_status tg_fail(tg_err *err, tg_status s, const char *fmt, ...) {
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return s;
}
