/* checkasm.c — engines per ISA, deterministic randomness, guarded buffers and
 * tolerance-aware comparisons for the kernel tests (see checkasm.h). */
#include "tests/engine/checkasm.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- engines ---------------------------------------------------------------- */

int ck_engines(tg_engine e[TG_ISA_COUNT]) {
    int n = 0;
    for (int i = 0; i < TG_ISA_COUNT; i++) {
        if (!tg_isa_supported((tg_isa)i)) continue;
        tg_err err;
        if (tg_engine_init(&e[n], (tg_isa)i, &err) != TG_OK) {
            fprintf(stderr, "checkasm: %s\n", err.msg);
            abort();
        }
        n++;
    }
    return n;
}

void ck_engine_ref(tg_engine *e) {
    tg_err err;
    if (tg_engine_init(e, TG_ISA_SCALAR, &err) != TG_OK) {
        fprintf(stderr, "checkasm: %s\n", err.msg);
        abort();
    }
}

/* ---- deterministic random numbers (splitmix64) ---------------------------- */

static uint64_t base_seed = 0x74696e79677074ULL; /* "tinygpt" */
static int seed_read;

uint64_t ck_seed(void) {
    if (!seed_read) {
        const char *s = getenv("TG_CHECKASM_SEED");
        if (s && *s) base_seed = strtoull(s, NULL, 0);
        seed_read = 1;
    }
    return base_seed;
}

uint64_t ck_rand_u64(ck_rng *r) {
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

ck_rng ck_rng_new(const char *name) {
    uint64_t h = 1469598103934665603ULL; /* FNV-1a of the name */
    for (const char *c = name ? name : ""; *c; c++) h = (h ^ (unsigned char)*c) * 1099511628211ULL;
    ck_rng r = {h ^ ck_seed()};
    ck_rand_u64(&r);
    return r;
}

float ck_randf(ck_rng *r, float lo, float hi) {
    float u = (float)(ck_rand_u64(r) >> 40) * (1.0f / 16777216.0f); /* [0,1), 24 bits */
    return lo + (hi - lo) * u;
}

int ck_randi(ck_rng *r, int lo, int hi) {
    return lo + (int)(ck_rand_u64(r) % (uint64_t)((long long)hi - lo + 1));
}

void ck_fill(ck_rng *r, float *p, size_t n, float lo, float hi) {
    for (size_t i = 0; i < n; i++) p[i] = ck_randf(r, lo, hi);
}

/* ---- guarded buffers ------------------------------------------------------ */

/* Layout of one allocation (base is 64-byte aligned):
 *   [header 64 B: n] [guard 64 B] [data: n floats] [guard 64 B]
 * so data is 64-byte aligned and each guard touches the data. */
#define HDR 64
static unsigned char canary(size_t i) { return (unsigned char)(0xA5 ^ (i * 29)); }
static const uint32_t POISON = 0x7fc0dead; /* quiet NaN with a payload */

static unsigned char *base_of(const float *p) { return (unsigned char *)p - CK_GUARD_BYTES - HDR; }

float *ck_alloc(size_t n) {
    size_t bytes = HDR + CK_GUARD_BYTES + n * sizeof(float) + CK_GUARD_BYTES;
    bytes = (bytes + 63) & ~(size_t)63;
    unsigned char *base = aligned_alloc(64, bytes);
    if (!base) {
        fprintf(stderr, "checkasm: cannot allocate %zu floats\n", n);
        abort();
    }
    memcpy(base, &n, sizeof n);
    unsigned char *pre = base + HDR, *post = pre + CK_GUARD_BYTES + n * sizeof(float);
    for (size_t i = 0; i < CK_GUARD_BYTES; i++) pre[i] = post[i] = canary(i);
    float *p = (float *)(pre + CK_GUARD_BYTES);
    ck_poison(p, n);
    return p;
}

size_t ck_len(const float *p) {
    size_t n;
    memcpy(&n, base_of(p), sizeof n);
    return n;
}

void ck_free(float *p) {
    if (p) free(base_of(p));
}

int ck_guards_ok(const float *p, const char *what) {
    size_t n = ck_len(p);
    const unsigned char *pre = (const unsigned char *)p - CK_GUARD_BYTES;
    const unsigned char *post = (const unsigned char *)(p + n);
    for (size_t i = 0; i < CK_GUARD_BYTES; i++) {
        if (pre[i] != canary(i)) {
            fprintf(stderr, "%s: guard byte %zu bytes before the buffer overwritten\n", what,
                    CK_GUARD_BYTES - i);
            return 0;
        }
    }
    for (size_t i = 0; i < CK_GUARD_BYTES; i++) {
        if (post[i] != canary(i)) {
            fprintf(stderr, "%s: guard byte %zu bytes after the buffer (n=%zu floats) overwritten\n",
                    what, i, n);
            return 0;
        }
    }
    return 1;
}

void ck_poison(float *p, size_t n) {
    for (size_t i = 0; i < n; i++) memcpy(&p[i], &POISON, sizeof POISON);
}

int ck_is_poison(float v) {
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    return u == POISON;
}

int ck_untouched(const float *p, size_t i0, size_t i1, const char *what) {
    for (size_t i = i0; i < i1; i++) {
        if (!ck_is_poison(p[i])) {
            fprintf(stderr, "%s: element %zu (outside the range asked for) was written: %g\n", what,
                    i, (double)p[i]);
            return 0;
        }
    }
    return 1;
}

/* ---- comparisons ---------------------------------------------------------- */

int ck_close(const float *got, const float *want, const float *tol, size_t n, const char *what) {
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        float g = got[i], w = want[i], t = tol ? tol[i] : 0.0f;
        int ok;
        if (isnan(w) || isnan(g)) ok = isnan(w) && isnan(g);
        else if (isinf(w) || isinf(g)) ok = g == w;
        else ok = fabsf(g - w) <= t;
        if (ok) continue;
        if (bad < 8)
            fprintf(stderr, "%s: [%zu] got %.9g want %.9g tol %.3g (err %.3g)\n", what, i,
                    (double)g, (double)w, (double)t, (double)fabsf(g - w));
        bad++;
    }
    if (bad) fprintf(stderr, "%s: %zu of %zu elements out of tolerance\n", what, bad, n);
    return bad == 0;
}

int ck_bitequal(const float *a, const float *b, size_t n, const char *what) {
    for (size_t i = 0; i < n; i++) {
        if (memcmp(&a[i], &b[i], sizeof(float)) != 0) {
            fprintf(stderr, "%s: first difference at [%zu]: %.9g vs %.9g\n", what, i,
                    (double)a[i], (double)b[i]);
            return 0;
        }
    }
    return 1;
}
