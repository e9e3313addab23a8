/* stream.c — UTF-8-safe streaming output (see stream.h). */
#include "tools/stream.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model/tokenizer.h"

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void stream_init(text_stream *s, FILE *f) {
    s->f = f;
    s->n = 0;
    s->flushed_ns = 0;
    s->flush_ns = 0;
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
    if (s->flush_ns <= 0) {
        fflush(s->f);
        return;
    }
    long long t = now_ns();
    if (t - s->flushed_ns >= s->flush_ns) {
        fflush(s->f);
        s->flushed_ns = t;
    }
}

void stream_finish(text_stream *s) {
    fwrite(s->held, 1, s->n, s->f);
    s->n = 0;
    fflush(s->f);
}

/* ---- stop strings ---------------------------------------------------------- */

int stop_init(stop_filter *f, const char *const *stops, int n, stop_emit emit, void *user) {
    memset(f, 0, sizeof *f);
    f->stops = stops;
    f->n = n;
    f->emit = emit;
    f->user = user;
    f->hit = -1;
    if (n > 0 && !(f->lens = malloc((size_t)n * sizeof *f->lens))) return -1;
    for (int i = 0; i < n; i++) {
        f->lens[i] = strlen(stops[i]);
        if (f->lens[i] > f->max_len) f->max_len = f->lens[i];
    }
    return 0;
}

void stop_reset(stop_filter *f) {
    f->n_held = 0;
    f->hit = -1;
}

/* Is held[i..n_held) a proper prefix of some stop string? */
static int is_partial(const stop_filter *f, size_t i) {
    size_t tail = f->n_held - i;
    for (int k = 0; k < f->n; k++)
        if (tail < f->lens[k] && !memcmp(f->held + i, f->stops[k], tail)) return 1;
    return 0;
}

int stop_put(stop_filter *f, const char *p, size_t len) {
    if (f->hit >= 0) return 0;
    if (f->n == 0) {
        if (len) f->emit(f->user, p, len);
        return 0;
    }
    if (f->n_held + len > f->cap) {
        size_t cap = f->n_held + len + f->max_len;
        char *h = realloc(f->held, cap);
        if (!h) return -1;
        f->held = h;
        f->cap = cap;
    }
    memcpy(f->held + f->n_held, p, len);
    f->n_held += len;
    /* The text stops where a stop string first ends (as if fed byte by
     * byte); of two ending there, the longer wins, so neither is printed.
     * Everything held before this call was no complete match, so a match
     * ends in the new bytes. A string's first occurrence is its earliest end. */
    size_t best = SIZE_MAX, best_end = SIZE_MAX;
    for (int k = 0; k < f->n; k++) {
        const char *at = memmem(f->held, f->n_held, f->stops[k], f->lens[k]);
        if (!at) continue;
        size_t start = (size_t)(at - f->held), end = start + f->lens[k];
        if (end < best_end || (end == best_end && start < best)) {
            best = start;
            best_end = end;
            f->hit = k;
        }
    }
    if (f->hit >= 0) {
        if (best) f->emit(f->user, f->held, best);
        f->n_held = 0;
        return 1;
    }
    /* Emit up to the longest suffix that could still begin a stop string. */
    size_t i = f->n_held > f->max_len - 1 ? f->n_held - (f->max_len - 1) : 0;
    while (i < f->n_held && !is_partial(f, i)) i++;
    if (i) {
        f->emit(f->user, f->held, i);
        memmove(f->held, f->held + i, f->n_held - i);
        f->n_held -= i;
    }
    return 0;
}

void stop_finish(stop_filter *f) {
    if (f->hit < 0 && f->n_held) f->emit(f->user, f->held, f->n_held);
    f->n_held = 0;
}

void stop_free(stop_filter *f) {
    free(f->lens);
    free(f->held);
    memset(f, 0, sizeof *f);
    f->hit = -1;
}
