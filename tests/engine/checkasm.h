/* checkasm.h — the checkasm-style harness every kernel test uses (dav1d's
 * idea, our code): run each kernel on every ISA this CPU supports against
 * the C reference on the same deterministic random inputs, with guard bytes
 * around every output buffer and per-element tolerances from the caller.
 *
 * Typical test:
 *
 *   tg_engine ref, eng[TG_ISA_COUNT];
 *   ck_engine_ref(&ref);
 *   int n_eng = ck_engines(eng);                 // every supported ISA
 *   ck_rng rng = ck_rng_new(__func__);
 *   float *x = ck_alloc(n);  ck_fill(&rng, x, n, -1, 1);
 *   float *want = ck_alloc(n), *got = ck_alloc(n), *tol = ck_alloc(n);
 *   ref.k.gelu(want, x, n);  ...fill tol...
 *   for (int e = 0; e < n_eng; e++) {
 *       ck_poison(got, n);
 *       eng[e].k.gelu(got, x, n);
 *       CK_EXPECT_GUARDS(got, "gelu %s n=%d", tg_isa_name(eng[e].isa), n);
 *       CK_EXPECT_CLOSE(got, want, tol, n, "gelu %s n=%d", ...);
 *   }
 *   ck_free(x); ...
 *
 * The compare and guard helpers print what failed (index, got, want, tol)
 * to stderr and return 0; the CK_EXPECT_* macros turn that into a Criterion
 * failure that names the case. The random seed is fixed (derived from a
 * name) unless $TG_CHECKASM_SEED is set, and is printed on failure. */
#ifndef TINYGPT_CHECKASM_H
#define TINYGPT_CHECKASM_H

#include <stddef.h>
#include <stdint.h>

#include "engine/engine.h"

/* ---- engines ---------------------------------------------------------------- */

/* Fills e[0..n-1] with an engine for every ISA this CPU (or qemu) supports,
 * scalar first; returns n (>= 1). */
int ck_engines(tg_engine e[TG_ISA_COUNT]);
/* The C reference engine (the oracle). */
void ck_engine_ref(tg_engine *e);

/* ---- deterministic random numbers ------------------------------------------ */

typedef struct ck_rng {
    uint64_t s;
} ck_rng;

/* A generator seeded from `name` (e.g. __func__), or from $TG_CHECKASM_SEED
 * mixed with `name` when that is set. */
ck_rng ck_rng_new(const char *name);
uint64_t ck_rand_u64(ck_rng *r);
/* Uniform in [lo, hi). */
float ck_randf(ck_rng *r, float lo, float hi);
/* Uniform int in [lo, hi]. */
int ck_randi(ck_rng *r, int lo, int hi);
/* p[N] = uniform in [lo, hi). */
void ck_fill(ck_rng *r, float *p, size_t n, float lo, float hi);
/* The seed in use (for failure messages). */
uint64_t ck_seed(void);

/* ---- guarded buffers ------------------------------------------------------- */

/* n floats, 64-byte aligned, with CK_GUARD_BYTES of a canary pattern
 * immediately before p[0] and immediately after p[n-1] (so a one-float
 * overrun is caught). The contents start poisoned (ck_poison). Never NULL:
 * allocation failure aborts the test process. n may be 0. */
#define CK_GUARD_BYTES 64
float *ck_alloc(size_t n);
void ck_free(float *p);
/* Number of floats the buffer was allocated with. */
size_t ck_len(const float *p);
/* 1 if both canaries are intact; otherwise prints where the first damaged
 * byte is (offset before/after the buffer) and returns 0. */
int ck_guards_ok(const float *p, const char *what);

/* Poison: a quiet-NaN bit pattern no kernel produces by accident. */
void ck_poison(float *p, size_t n);
int ck_is_poison(float v);
/* 1 if p[i0..i1) are all still poisoned (untouched), else prints the first
 * written index and returns 0. */
int ck_untouched(const float *p, size_t i0, size_t i1, const char *what);

/* ---- comparisons ----------------------------------------------------------- */

/* |got[i] - want[i]| <= tol[i] for every i, NaN-aware: a NaN wanted needs a
 * NaN got (and vice versa); an infinity wanted needs the same infinity.
 * tol == NULL means exact equality (as floats; -0 == +0). Prints up to 8
 * failing elements (index, got, want, tol, error) and the total; returns 1
 * when all pass. */
int ck_close(const float *got, const float *want, const float *tol, size_t n,
             const char *what);
/* Bit-identical (memcmp), printing the first differing index. */
int ck_bitequal(const float *a, const float *b, size_t n, const char *what);

/* Criterion glue: fail the current test (and keep going) with a formatted
 * case name. Include <criterion/criterion.h> before using these. */
#define CK_EXPECT_GUARDS(p, ...)                                              \
    do {                                                                      \
        char ck_what_[256];                                                   \
        snprintf(ck_what_, sizeof ck_what_, __VA_ARGS__);                     \
        cr_expect(ck_guards_ok((p), ck_what_), "guard bytes damaged: %s",     \
                  ck_what_);                                                  \
    } while (0)
#define CK_EXPECT_CLOSE(got, want, tol, n, ...)                               \
    do {                                                                      \
        char ck_what_[256];                                                   \
        snprintf(ck_what_, sizeof ck_what_, __VA_ARGS__);                     \
        cr_expect(ck_close((got), (want), (tol), (n), ck_what_),              \
                  "mismatch vs reference: %s (seed %llu)", ck_what_,          \
                  (unsigned long long)ck_seed());                             \
    } while (0)
#define CK_EXPECT_BITEQUAL(a, b, n, ...)                                      \
    do {                                                                      \
        char ck_what_[256];                                                   \
        snprintf(ck_what_, sizeof ck_what_, __VA_ARGS__);                     \
        cr_expect(ck_bitequal((a), (b), (n), ck_what_), "not bit-identical: %s", \
                  ck_what_);                                                  \
    } while (0)
#define CK_EXPECT_UNTOUCHED(p, i0, i1, ...)                                   \
    do {                                                                      \
        char ck_what_[256];                                                   \
        snprintf(ck_what_, sizeof ck_what_, __VA_ARGS__);                     \
        cr_expect(ck_untouched((p), (i0), (i1), ck_what_),                    \
                  "wrote outside its range: %s", ck_what_);                   \
    } while (0)

#endif
