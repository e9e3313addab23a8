/* stream.c — UTF-8-safe streaming output (see stream.h). */
#include "tools/stream.h"

#include <string.h>

#include "model/tokenizer.h"

void stream_init(text_stream *s, FILE *f) {
    s->f = f;
    s->n = 0;
}

void stream_put(text_stream *s, const char *p, size_t len) {
    if (len == 0) return;
    /* Complete the held character first, so that the rest can go out
     * straight from p without copying. */
    while (s->n > 0 && len > 0) {
        s->held[s->n++] = *p++;
        len--;
        size_t ok = tg_utf8_complete(s->held, s->n);
        if (ok > 0) {
            fwrite(s->held, 1, ok, s->f);
            memmove(s->held, s->held + ok, s->n - ok);
            s->n -= ok;
        }
    }
    size_t ok = tg_utf8_complete(p, len);
    fwrite(p, 1, ok, s->f);
    memcpy(s->held + s->n, p + ok, len - ok); /* <= 3 bytes, and s->n == 0 here */
    s->n += len - ok;
    fflush(s->f);
}

void stream_finish(text_stream *s) {
    fwrite(s->held, 1, s->n, s->f);
    s->n = 0;
    fflush(s->f);
}
