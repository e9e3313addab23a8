/* test_amx.c — the AMX prefill GEMMs (engine/x86/amx_tmpl.h).
 *
 * No CPU we have has AMX, so the kernels' source is tested here on a
 * software model of the tile instructions (amx_emu.c, written from Intel's
 * SDM; amx_kernels_emu.c compiles the same template against it):
 *   - the modelled instructions on small cases checked by hand (layouts,
 *     the SDM's order of the bf16 sums, DAZ/FTZ, int32 wrap-around) and
 *     their faults on shapes that do not chain;
 *   - the emulated kernels against the C reference on test_quant's shapes
 *     (T and OUT not multiples of 16, K tails, odd IN for BF16), on exactly
 *     tg_matmul_w_scratch bytes of scratch with guard bytes after them,
 *     guards around Y and untouched columns outside o0..o1: Q8_0/Q4_0 bit
 *     for bit (exact int32 block sums, then the reference's f32 steps),
 *     BF16 within test_quant's bf16_act tolerance against a double oracle;
 *     column ranges and 1..4 threads bit-identical.
 * The real instructions run only where tg_cpu_has(TG_CPU_AMX_*) (skipped
 * elsewhere, with a message): the same comparisons through the real
 * dispatch (the AVX-512 engine's table). */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define AMX_EMULATE 1
#include "engine/x86/amx_tile.h"
#include "tests/engine/checkasm.h"
#include "tests/engine/typed_case.h"

#define LEN(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* amx_kernels_emu.c */
void tg_amxemu_gemm_bf16(float *y, const float *x, const void *w, size_t ldw, const float *b,
                         int T, int in, int out, int o0, int o1, void *ws);
void tg_amxemu_gemm_q(int q4, float *y, const void *x, const void *w, size_t ldw,
                      const float *b, int T, int in, int out, int o0, int o1, void *ws);
uint16_t tg_amxemu_bf16_round(float f);

/* ---- the modelled instructions, by hand -------------------------------------- */

static float f32(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static uint16_t bf(float f) { /* exact for the values used below */
    uint32_t u;
    memcpy(&u, &f, 4);
    cr_assert_eq(u & 0xffff, 0u, "%g is not a bfloat16", f);
    return (uint16_t)(u >> 16);
}

/* c: M × N f32/int32 (colsb 4N), a: M × 4K bytes, b: K × 4N bytes */
static void cfg3(amx_cfg *c, int M, int N, int K) {
    memset(c, 0, sizeof *c);
    c->palette = 1;
    c->rows[0] = (uint8_t)M, c->colsb[0] = (uint16_t)(4 * N);
    c->rows[1] = (uint8_t)M, c->colsb[1] = (uint16_t)(4 * K);
    c->rows[2] = (uint8_t)K, c->colsb[2] = (uint16_t)(4 * N);
}

/* tdpbssd on a 2 × 3 C, K = 2 quads: every element by hand; loads and
 * stores with strides wider than the rows, bytes past them untouched */
Test(amx_emu, dpbssd_by_hand) {
    amx_cfg c;
    cfg3(&c, 2, 3, 2);
    int8_t a[2][12] = {{1, 2, 3, 4, -1, -2, -3, -4, 99, 99, 99, 99},
                       {-128, -128, -128, -128, 127, 127, 127, 127, 99, 99, 99, 99}};
    /* b row k, column n: bytes 4n..4n+3 */
    int8_t b[2][16] = {{1, 1, 1, 1, 1, 0, 0, 0, -128, -128, -128, -128, 77, 77, 77, 77},
                       {2, 0, 0, 0, 0, 0, 0, 1, 127, 127, 127, 127, 77, 77, 77, 77}};
    int32_t c0[2][4] = {{10, 20, 30, -5}, {0, 0, 0x7fffffff, -5}};
    int32_t out[2][4];
    memcpy(out, c0, sizeof out);
    amx_emu_loadconfig(&c);
    amx_emu_load(0, c0, 16);
    amx_emu_load(1, a, 12);
    amx_emu_load(2, b, 16);
    amx_emu_dpbssd(0, 1, 2);
    amx_emu_store(0, out, 16);
    amx_emu_release();
    /* row 0: column 0 quads (1,1,1,1) then (2,0,0,0); column 1 (1,0,0,0)
     * then (0,0,0,1); column 2 all -128 then all 127 */
    cr_expect_eq(out[0][0], 10 + 10 + (-1 * 2));
    cr_expect_eq(out[0][1], 20 + 1 + (-4));
    cr_expect_eq(out[0][2], 30 + -128 * 10 + 127 * -10);
    /* row 1: -128·4 + 127·2; -128 + 127; (-128)(-128)·4 + 127·127·4 past
     * INT32_MAX: wraps */
    cr_expect_eq(out[1][0], -128 * 4 + 127 * 2);
    cr_expect_eq(out[1][1], -128 + 127);
    int64_t want = (int64_t)0x7fffffff + 128 * 128 * 4 + 127 * 127 * 4;
    cr_expect_eq(out[1][2], (int32_t)(uint32_t)want, "wrap-around: %d", out[1][2]);
    cr_expect_eq(out[0][3], -5, "column past colsb written");
    cr_expect_eq(out[1][3], -5, "column past colsb written");
}

/* out = c0 + a · b by tdpbf16ps on tiles 0..2 as cfg3(1, 2, 2) sets them:
 * one row of two pairs (a) against two columns (b[n]: column n's pairs) */
static void dpbf16_1x2(const float c0[2], const uint16_t a[4], const uint16_t b[2][4], float out[2]) {
    amx_emu_load(0, c0, 8);
    amx_emu_load(1, a, 8);
    amx_emu_load(2, b, 8);
    amx_emu_dpbf16ps(0, 1, 2);
    amx_emu_store(0, out, 8);
}

/* tdpbf16ps: a dot product of pairs; the SDM's order (even and odd products
 * in their own f32 sums from 0, added at the end, then to C); DAZ on the
 * inputs, FTZ on the results; NaN and inf */
Test(amx_emu, dpbf16ps_by_hand) {
    amx_cfg c;
    cfg3(&c, 1, 2, 2);
    /* x pairs (1, 2), (2^12, 1); w column 0 pairs (3, 4), (2^12, 1); column
     * 1 pairs (1, 1), (1, 1) */
    uint16_t a[4] = {bf(1), bf(2), bf(4096), bf(1)};
    uint16_t b[2][4] = {{bf(3), bf(4), bf(1), bf(1)}, {bf(4096), bf(1), bf(1), bf(1)}};
    float c0[2] = {0.5f, 0.0f}, out[2];
    amx_emu_loadconfig(&c);
    dpbf16_1x2(c0, a, b, out);
    /* column 0: even 1·3 + 2^24 = 2^24 + 3 -> 2^24 + 4 (a tie, to even);
     * odd 2·4 + 1 = 9; 2^24 + 4 + 9 = 2^24 + 13 -> 2^24 + 12 (tie, even);
     * C: 0.5 + (2^24 + 12) -> 2^24 + 12 */
    cr_expect_eq(out[0], 16777228.0f, "got %.1f", out[0]);
    /* column 1: even 1·1 + 2^12·1 = 4097; odd 2·1 + 1·1 = 3; 4100 */
    cr_expect_eq(out[1], 4100.0f, "got %.1f", out[1]);
    /* the order: x pairs (2^24, 1), (1, 1), w all 1: the even sum 2^24 + 1
     * -> 2^24 (tie to even), the odd one 1 + 1 = 2: 2^24 + 2. One running
     * sum product by product (the intrinsics guide's pseudo-code) would
     * lose each 1: 2^24. */
    uint16_t a2[4] = {bf(16777216.0f), bf(1), bf(1), bf(1)};
    uint16_t b2[2][4] = {{bf(1), bf(1), bf(1), bf(1)}, {bf(1), bf(1), bf(1), bf(1)}};
    float z[2] = {0, 0};
    dpbf16_1x2(z, a2, b2, out);
    cr_expect_eq(out[0], 16777218.0f, "SDM order: got %.1f", out[0]);
    /* DAZ: a bf16 subnormal (2^-133) times 2^100 is 0, not 2^-33 (column
     * 0); FTZ: 2^-70 · 2^-70 = 2^-140, an f32 subnormal, is 0 (column 1) */
    uint16_t a3[4] = {0x0001, bf(0x1p-70f), 0, 0};
    uint16_t b3[2][4] = {{bf(0x1p100f), 0, 0, bf(0x1p-70f)}, {0, 0, 0, 0}};
    dpbf16_1x2(z, a3, b3, out);
    cr_expect(out[0] == 0.0f && out[1] == 0.0f, "DAZ/FTZ: got %g %g", out[0], out[1]);
    /* a NaN x makes every column of its row NaN (NaN · 0 too) */
    uint16_t a4[4] = {0x7fc0, bf(1), 0x7f80, 0};
    uint16_t b4[2][4] = {{bf(1), bf(1), 0, 0}, {bf(1), 0, bf(1), 0}};
    dpbf16_1x2(z, a4, b4, out);
    cr_expect(isnan(out[0]) && isnan(out[1]), "NaN: got %g %g", out[0], out[1]);
    amx_emu_release();
}

/* tileloadd / tilestored: rows × colsb bytes, each row at its stride; bytes
 * past colsb are neither read nor written */
Test(amx_emu, load_store_strides) {
    amx_cfg c;
    memset(&c, 0, sizeof c);
    c.palette = 1;
    c.rows[3] = 3, c.colsb[3] = 5;
    uint8_t src[3][7], dst[3][9];
    for (int r = 0; r < 3; r++)
        for (int i = 0; i < 7; i++) src[r][i] = (uint8_t)(16 * r + i);
    memset(dst, 0xee, sizeof dst);
    amx_emu_loadconfig(&c);
    amx_emu_load(3, src, 7);
    amx_emu_store(3, dst, 9);
    amx_emu_release();
    for (int r = 0; r < 3; r++)
        for (int i = 0; i < 9; i++)
            cr_expect_eq(dst[r][i], i < 5 ? src[r][i] : 0xee, "row %d byte %d", r, i);
}

/* shapes that do not chain fault (#UD), as on the hardware */
Test(amx_emu, shape_mismatch_faults, .signal = SIGABRT) {
    amx_cfg c;
    cfg3(&c, 2, 3, 2);
    c.rows[2] = 3; /* src1.colsb / 4 = 2 != src2.rows */
    amx_emu_loadconfig(&c);
    amx_emu_zero(0);
    amx_emu_dpbssd(0, 1, 2);
}

Test(amx_emu, unconfigured_faults, .signal = SIGABRT) {
    amx_emu_release();
    amx_emu_zero(0);
}

Test(amx_emu, bad_config_faults, .signal = SIGABRT) {
    amx_cfg c;
    cfg3(&c, 2, 3, 2);
    c.rows[9] = 1; /* palette 1 has 8 tiles */
    amx_emu_loadconfig(&c);
}

/* X's rounding to bfloat16: vcvtne2ps2bf16's rule (SDM) */
Test(amx_emu, bf16_rounding) {
    cr_expect_eq(tg_amxemu_bf16_round(1.0f), 0x3f80);
    cr_expect_eq(tg_amxemu_bf16_round(1.0f + 0x1p-8f), 0x3f80, "tie to even (down)");
    cr_expect_eq(tg_amxemu_bf16_round(1.0f + 3 * 0x1p-8f), 0x3f82, "tie to even (up)");
    cr_expect_eq(tg_amxemu_bf16_round(1.0f + 0x1p-8f + 0x1p-20f), 0x3f81, "above the tie");
    cr_expect_eq(tg_amxemu_bf16_round(-0x1p-130f), 0x8000, "subnormal -> -0");
    cr_expect_eq(tg_amxemu_bf16_round(0x1p-126f), 0x0080, "smallest normal kept");
    cr_expect_eq(tg_amxemu_bf16_round(INFINITY), 0x7f80);
    cr_expect_eq(tg_amxemu_bf16_round(FLT_MAX), 0x7f80, "overflow to inf");
    cr_expect_eq(tg_amxemu_bf16_round(f32(0x7f800001u)), 0x7fc0, "sNaN -> quiet");
    cr_expect_eq(tg_amxemu_bf16_round(f32(0xffc12345u)), 0xffc1, "qNaN keeps its top half");
}

#ifdef TG_TEST_X86
void tg_test_cvtne2ps2bf16(uint16_t *y, const float *x, int n); /* amx_bf16_avx512.c */

/* the kernels' rounding of X is vcvtne2ps2bf16's, bit for bit, on random
 * bit patterns (NaNs, infinities, subnormals, ties: every class) and the
 * ties and subnormals made on purpose, where the CPU has the instruction */
Test(amx_emu, bf16_rounding_is_vcvtne2ps2bf16) {
    if (!tg_cpu_has(TG_CPU_AVX512_BF16)) cr_skip_test("no AVX512-BF16 to compare with");
    ck_rng r = ck_rng_new(__func__);
    enum { N = 1 << 16 };
    float *x = ck_alloc(N);
    uint16_t *y = malloc(sizeof *y * N);
    for (int i = 0; i < N; i++) {
        uint32_t u = (uint32_t)ck_rand_u64(&r);
        if (i % 4 == 1) u = (u & 0xffff0000u) | 0x8000u;  /* a tie */
        if (i % 4 == 2) u &= 0x807fffffu;                 /* a subnormal (or 0) */
        if (i % 8 == 3) u |= 0x7f800000u;                 /* inf or NaN */
        x[i] = f32(u);
    }
    tg_test_cvtne2ps2bf16(y, x, N);
    int bad = 0;
    for (int i = 0; i < N; i++) {
        uint16_t want = y[i], got = tg_amxemu_bf16_round(x[i]);
        if (got != want && bad++ < 8) {
            uint32_t u;
            memcpy(&u, &x[i], 4);
            fprintf(stderr, "x = %08x: template %04x, vcvtne2ps2bf16 %04x\n", u, got, want);
        }
    }
    cr_expect(bad == 0, "%d of %d roundings differ from vcvtne2ps2bf16", bad, N);
    ck_free(x);
    free(y);
}
#endif

/* ---- the kernels -------------------------------------------------------------- */


/* the emulated kernels as table entries */
static void emu_bf16(float *y, const void *x, const void *w, size_t ldw, const float *b, int T,
                     int in, int out, int o0, int o1, void *ws) {
    tg_amxemu_gemm_bf16(y, x, w, ldw, b, T, in, out, o0, o1, ws);
}
static void emu_q8_0(float *y, const void *x, const void *w, size_t ldw, const float *b, int T,
                     int in, int out, int o0, int o1, void *ws) {
    tg_amxemu_gemm_q(0, y, x, w, ldw, b, T, in, out, o0, o1, ws);
}
static void emu_q4_0(float *y, const void *x, const void *w, size_t ldw, const float *b, int T,
                     int in, int out, int o0, int o1, void *ws) {
    tg_amxemu_gemm_q(1, y, x, w, ldw, b, T, in, out, o0, o1, ws);
}

/* the reference's table with the emulated AMX GEMMs in it (X rounded to
 * bfloat16 in the BF16 one: bf16_act) */
static void engine_emu(tg_engine *e) {
    ck_engine_ref(e);
    e->k.matmul_w[TG_WTYPE_BF16] = emu_bf16;
    e->k.matmul_w[TG_WTYPE_Q8_0] = emu_q8_0;
    e->k.matmul_w[TG_WTYPE_Q4_0] = emu_q4_0;
    e->bf16_act = 1;
}

/* The scratch the AMX kernels' layout takes (amx_tmpl.h; T padded to Tp =
 * 32·k): a 64-byte tile config, then BF16: X's pairs [Tp, Pp = P padded to
 * 16], a panel [Pp, 32] of pairs, one 16 × 16 f32 C tile; Q8_0/Q4_0: X's
 * bytes [Tp, IN] and scales [Tp, IN/32], a panel of 36 bytes per block and
 * row of 32, 32 × 32 f32 accumulators and four int32 C tiles. Each piece
 * is a multiple of 64 bytes. tg_matmul_w_scratch, the bound over all ISAs,
 * must cover it; the kernels run on exactly this many bytes, so a kernel
 * writing past its own layout fails even where another ISA's larger
 * scratch would hide it. */
static size_t amx_ws_bytes(const tcase *c) {
    size_t Tp = ((size_t)c->T + 31) / 32 * 32, P = ((size_t)c->in + 1) / 2, Pp = (P + 15) / 16 * 16;
    size_t nb = (size_t)c->in / 32;
    if (c->type == TG_WTYPE_BF16) return 64 + Tp * Pp * 4 + Pp * 32 * 4 + 16 * 16 * 4;
    return 64 + Tp * nb * 32 + Tp * nb * 4 + nb * 36 * 32 + 32 * 32 * 4 + 4 * 16 * 16 * 4;
}

/* The kernel on exactly its scratch bytes (64-byte aligned: amx_ws_bytes
 * for the AMX engines, tg_matmul_w_scratch for the reference), filled with
 * junk, with guard bytes after them. */
#define WS_GUARD 256
static void run_kernel(const tg_engine *e, const tcase *c, float *y, int o0, int o1) {
    size_t n = tg_matmul_w_scratch(c->type, c->T, c->in);
    if (e->isa != TG_ISA_SCALAR || e->bf16_act) { /* an AMX engine (emulated or not) */
        size_t a = amx_ws_bytes(c);
        cr_assert(a <= n, "tg_matmul_w_scratch %s T=%d in=%d: %zu bytes < the AMX kernels' %zu",
                  tg_wtype_name(c->type), c->T, c->in, n, a);
        n = a;
    }
    unsigned char *ws = aligned_alloc(64, (n + WS_GUARD + 63) / 64 * 64);
    cr_assert(ws != NULL);
    memset(ws, 0x5a, n);
    memset(ws + n, 0xA5, WS_GUARD);
    e->k.matmul_w[c->type](y, tc_x(c), c->w, c->ldw, c->b, c->T, c->in, c->out, o0, o1,
                           n ? ws : NULL);
    size_t bad = 0;
    for (size_t i = 0; i < WS_GUARD; i++) bad += ws[n + i] != 0xA5;
    cr_expect(bad == 0, "matmul_w %s T=%d in=%d: %zu guard bytes past its %zu bytes of scratch "
              "overwritten", tg_wtype_name(c->type), c->T, c->in, bad, n);
    free(ws);
}

/* BF16: the double oracle on the bytes and test_quant's tolerance for an
 * engine that rounds X to bfloat16: twice (IN + 8)·eps·(Σ|x·w| + |b|) +
 * eps·|y| for the f32 sums, plus 2^-8·Σ|x·w| for X's rounding */
static void oracle_bf16(const tcase *c, float *want, float *tol) {
    for (int t = 0; t < c->T; t++)
        for (int o = 0; o < c->out; o++) {
            const uint16_t *wr = (const uint16_t *)(c->w + (size_t)o * c->ldw);
            double s = 0, a = 0;
            for (int i = 0; i < c->in; i++) {
                double p = (double)c->x[(size_t)t * c->in + i] * f32((uint32_t)wr[i] << 16);
                s += p, a += fabs(p);
            }
            double b = c->b ? c->b[o] : 0.0;
            size_t k = (size_t)t * c->out + o;
            want[k] = (float)(s + b);
            tol[k] = (float)(2 * ((a * (c->in + 8) + fabs(b)) * FLT_EPSILON + fabs(s + b) * FLT_EPSILON) +
                             ldexp(a, -8));
        }
}

/* engine e on columns o0..o1 of case c: guards, untouched columns, and
 * Q8_0/Q4_0 bit for bit the reference's, BF16 within the oracle's bound */
static void check(const tg_engine *ref, const tg_engine *e, const tcase *c, int o0, int o1,
                  const char *who) {
    size_t ny = (size_t)c->T * c->out;
    float *got = ck_alloc(ny), *want = ck_alloc(ny), *tol = NULL;
    char what[200];
    snprintf(what, sizeof what, "%s %s T=%d in=%d out=%d cols %d..%d %s", who,
             tg_wtype_name(c->type), c->T, c->in, c->out, o0, o1, c->b ? "bias" : "no bias");
    ck_poison(got, ny);
    run_kernel(e, c, got, o0, o1);
    CK_EXPECT_GUARDS(got, "%s", what);
    if (c->type == TG_WTYPE_BF16) {
        tol = ck_alloc(ny);
        oracle_bf16(c, want, tol);
    } else {
        ck_poison(want, ny);
        run_kernel(ref, c, want, o0, o1);
    }
    int ok = 1;
    for (int t = 0; t < c->T && ok; t++) {
        size_t row = (size_t)t * c->out;
        ok = ck_untouched(got, row, row + o0, what) && ck_untouched(got, row + o1, row + c->out, what) &&
             (tol ? ck_close(got + row + o0, want + row + o0, tol + row + o0, (size_t)(o1 - o0), what)
                  : ck_bitequal(got + row + o0, want + row + o0, (size_t)(o1 - o0), what));
    }
    cr_expect(ok, "%s (seed %llu)", what, (unsigned long long)ck_seed());
    ck_free(got);
    ck_free(want);
    ck_free(tol);
}

static const tg_wtype amx_types[] = {TG_WTYPE_BF16, TG_WTYPE_Q8_0, TG_WTYPE_Q4_0};

/* test_quant's matmul_w shapes with T > 1 (the GEMM), its big ones, and
 * its bf16_gemm lengths (odd IN, pairs and 16-pair steps) */
static void shapes(const tg_engine *ref, const tg_engine *e, const char *who) {
    ck_rng r = ck_rng_new(who);
    static const int Ts[] = {2, 3, 4, 5, 8, 9, 17, 33};
    static const int outs[] = {1, 3, 17, 50, 129};
    static const int ins_q[] = {32, 64, 96, 128, 160, 256, 384, 768};
    static const int ins_f[] = {1, 2, 3, 7, 15, 17, 31, 32, 33, 97, 100, 768};
    int n = 0;
    for (int ty = 0; ty < LEN(amx_types); ty++) {
        int q = tg_wtype_q8_act(amx_types[ty]);
        const int *ins = q ? ins_q : ins_f;
        int n_in = q ? LEN(ins_q) : LEN(ins_f);
        for (int a = 0; a < n_in; a++)
            for (int o = 0; o < LEN(outs); o++)
                for (int ti = 0; ti < LEN(Ts); ti++, n++) {
                    if ((double)Ts[ti] * ins[a] * outs[o] > 3e5) continue;
                    tcase c = tc_new(&r, amx_types[ty], Ts[ti], ins[a], outs[o], n & 1);
                    check(ref, e, &c, 0, outs[o], who);
                    tc_free(&c);
                }
        static const int big[][3] = {{7, 768, 300}, {64, 768, 97}, {130, 256, 40}, {128, 3072, 40}};
        for (int s = 0; s < LEN(big); s++) {
            tcase c = tc_new(&r, amx_types[ty], big[s][0], big[s][1], big[s][2], s & 1);
            check(ref, e, &c, 0, big[s][2], who);
            tc_free(&c);
        }
    }
}

/* column sub-ranges as the pool hands them out: checked, and bit for bit
 * one whole call's values */
static void ranges(const tg_engine *ref, const tg_engine *e, const char *who) {
    ck_rng r = ck_rng_new(who);
    static const int sh[][3] = {{2, 96, 129}, {3, 768, 50}, {9, 128, 97}, {33, 256, 200}};
    for (int ty = 0; ty < LEN(amx_types); ty++)
        for (int s = 0; s < LEN(sh); s++) {
            int T = sh[s][0], in = sh[s][1], out = sh[s][2];
            tcase c = tc_new(&r, amx_types[ty], T, in, out, s & 1);
            int blocks = (out + TG_ROW_BLOCK - 1) / TG_ROW_BLOCK;
            int b0 = ck_randi(&r, 0, blocks - 1), b1 = ck_randi(&r, b0 + 1, blocks);
            int o0 = b0 * TG_ROW_BLOCK, o1 = b1 * TG_ROW_BLOCK < out ? b1 * TG_ROW_BLOCK : out;
            check(ref, e, &c, o0, o1, who);
            size_t ny = (size_t)T * out;
            float *whole = ck_alloc(ny), *parts = ck_alloc(ny);
            run_kernel(e, &c, whole, 0, out);
            ck_poison(parts, ny);
            for (int p0 = 0; p0 < out;) {
                int p1 = p0 + TG_ROW_BLOCK * ck_randi(&r, 1, 5);
                if (p1 > out) p1 = out;
                run_kernel(e, &c, parts, p0, p1);
                p0 = p1;
            }
            CK_EXPECT_GUARDS(parts, "%s %s pieces", who, tg_wtype_name(c.type));
            CK_EXPECT_BITEQUAL(whole, parts, ny, "%s %s T=%d in=%d out=%d whole vs pieces", who,
                               tg_wtype_name(c.type), T, in, out);
            ck_free(whole);
            ck_free(parts);
            tc_free(&c);
        }
}

/* tg_matmul_w on 1..4 threads: the same bits as one call of the kernel */
static void threads(const tg_engine *e, const char *who) {
    ck_rng r = ck_rng_new(who);
    tg_pool *pools[4];
    for (int p = 0; p < 4; p++) {
        tg_err err;
        cr_assert(tg_pool_create(&pools[p], p + 1, &err) == TG_OK, "%s", err.msg);
    }
    for (int ty = 0; ty < LEN(amx_types); ty++) {
        int T = 33, in = 256, out = 1000;
        tcase c = tc_new(&r, amx_types[ty], T, in, out, 1);
        tg_weight w = {c.type, c.w, out, in, c.ldw};
        size_t ny = (size_t)T * out, nws = tg_matmul_ws(c.type, T, in, 4);
        void *ws = malloc(nws);
        float *y1 = ck_alloc(ny), *yn = ck_alloc(ny);
        run_kernel(e, &c, y1, 0, out);
        for (int p = 0; p < 4; p++) {
            ck_poison(yn, ny);
            tg_matmul_w(e, pools[p], yn, c.x, &w, c.b, T, ws);
            CK_EXPECT_GUARDS(yn, "tg_matmul_w %d threads", p + 1);
            CK_EXPECT_BITEQUAL(y1, yn, ny, "%s tg_matmul_w %s: kernel vs %d threads", who,
                               tg_wtype_name(c.type), p + 1);
        }
        free(ws);
        ck_free(y1);
        ck_free(yn);
        tc_free(&c);
    }
    for (int p = 0; p < 4; p++) tg_pool_free(pools[p]);
}

/* a NaN in X's row t makes row t of Y NaN, other rows finite */
static void nan_row(const tg_engine *e, const char *who) {
    ck_rng r = ck_rng_new(who);
    for (int ty = 0; ty < LEN(amx_types); ty++) {
        int T = 3, in = 96, out = 40;
        tcase c = tc_new(&r, amx_types[ty], T, in, out, 1);
        c.x[1 * in + 37] = NAN;
        if (c.xq) {
            size_t rb = tg_wtype_row_bytes(TG_WTYPE_Q8_0, in);
            cr_expect_eq(tg_quantize_row(TG_WTYPE_Q8_0, c.xq + rb, c.x + in, in), 1);
        }
        float *y = ck_alloc((size_t)T * out);
        run_kernel(e, &c, y, 0, out);
        for (int o = 0; o < out; o++) {
            cr_expect(isnan(y[out + o]), "%s %s: NaN not propagated", who, tg_wtype_name(c.type));
            cr_expect(isfinite(y[o]) && isfinite(y[2 * out + o]));
        }
        ck_free(y);
        tc_free(&c);
    }
}

/* the reference and the emulated engine, set up for each test (each runs
 * in its own process) */
static tg_engine ref_engine, emu_engine;
static void emu_setup(void) {
    ck_engine_ref(&ref_engine);
    engine_emu(&emu_engine);
}
TestSuite(amx_emulated, .init = emu_setup);

Test(amx_emulated, shapes) { shapes(&ref_engine, &emu_engine, "amx emulated"); }
Test(amx_emulated, ranges) { ranges(&ref_engine, &emu_engine, "amx emulated"); }
Test(amx_emulated, threads) { threads(&emu_engine, "amx emulated"); }
Test(amx_emulated, nan_row) { nan_row(&emu_engine, "amx emulated"); }

/* ---- the real instructions, where the CPU has them ----------------------------- */

#ifdef TG_TEST_X86 /* x86 builds (tests/engine/meson.build): the init steps of amx.c */
#include "engine/x86/x86.h"

/* e's table holds amx.c's entries for the AMX features present (else the
 * hardware tests below would pass on other kernels) */
static void expect_amx_table(const tg_engine *e) {
    tg_kernels amx = {0};
    tg_kernels_init_amx_bf16(&amx);
    tg_kernels_init_amx_int8(&amx);
    if (tg_cpu_has(TG_CPU_AMX_BF16))
        cr_expect(e->k.matmul_w[TG_WTYPE_BF16] == amx.matmul_w[TG_WTYPE_BF16],
                  "AMX-BF16 present but the table's BF16 matmul is not amx.c's");
    if (tg_cpu_has(TG_CPU_AMX_INT8))
        cr_expect(e->k.matmul_w[TG_WTYPE_Q8_0] == amx.matmul_w[TG_WTYPE_Q8_0] &&
                  e->k.matmul_w[TG_WTYPE_Q4_0] == amx.matmul_w[TG_WTYPE_Q4_0],
                  "AMX-INT8 present but the table's Q8_0/Q4_0 matmuls are not amx.c's");
}
#else
static void expect_amx_table(const tg_engine *e) { (void)e; } /* no AMX off x86 */
#endif

/* The AVX-512 engine, where the CPU and OS have AMX. */
static int real_amx(tg_engine *e) {
    if (!tg_cpu_has(TG_CPU_AMX_BF16) && !tg_cpu_has(TG_CPU_AMX_INT8)) return 0;
    tg_err err;
    cr_assert(tg_engine_init(e, TG_ISA_AVX512, &err) == TG_OK, "%s", err.msg);
    expect_amx_table(e);
    return 1;
}

Test(amx_hardware, shapes_ranges_threads_nan) {
    tg_engine ref, e;
    if (!real_amx(&e))
        cr_skip_test("no AMX on this CPU/OS (or hidden by TINYGPT_CPU_MASK): the real tile "
                     "instructions are not run; the emulated kernels are tested above");
    ck_engine_ref(&ref);
    shapes(&ref, &e, "amx hardware");
    ranges(&ref, &e, "amx hardware");
    threads(&e, "amx hardware");
    nan_row(&e, "amx hardware");
}

/* the model against the hardware: the Q8_0/Q4_0 GEMMs must agree bit for
 * bit (exact int32 sums); BF16 differs only if the SDM's order of the f32
 * sums is not what the hardware does: counted and printed, not failed
 * (both are within the tolerance, checked above) */
Test(amx_hardware, model_matches_hardware) {
    tg_engine e, emu;
    if (!real_amx(&e)) cr_skip_test("no AMX on this CPU/OS: nothing to compare the model with");
    engine_emu(&emu);
    ck_rng r = ck_rng_new(__func__);
    for (int ty = 0; ty < LEN(amx_types); ty++) {
        tcase c = tc_new(&r, amx_types[ty], 37, 768, 70, 1);
        size_t ny = (size_t)c.T * c.out;
        float *hw = ck_alloc(ny), *em = ck_alloc(ny);
        run_kernel(&e, &c, hw, 0, c.out);
        run_kernel(&emu, &c, em, 0, c.out);
        if (c.type == TG_WTYPE_BF16) {
            size_t diff = 0;
            for (size_t i = 0; i < ny; i++) diff += memcmp(&hw[i], &em[i], 4) != 0;
            fprintf(stderr, "amx bf16: %zu of %zu outputs differ between the hardware and the SDM model\n",
                    diff, ny);
        } else {
            CK_EXPECT_BITEQUAL(hw, em, ny, "amx %s hardware vs model", tg_wtype_name(c.type));
        }
        ck_free(hw);
        ck_free(em);
        tc_free(&c);
    }
}

/* $TINYGPT_CPU_MASK hides AMX like the other features (and the Linux
 * permission is then never asked for); the names are the mask's words */
Test(amx_detect, mask_and_names) {
    setenv("TINYGPT_CPU_MASK", "amx_tile", 1);
    cr_expect(!tg_cpu_has(TG_CPU_AMX_TILE) && !tg_cpu_has(TG_CPU_AMX_INT8) &&
              !tg_cpu_has(TG_CPU_AMX_BF16), "amx_tile masked, but an AMX feature is on");
    cr_expect_str_eq(tg_cpu_feature_name(TG_CPU_AMX_TILE), "amx_tile");
    cr_expect_str_eq(tg_cpu_feature_name(TG_CPU_AMX_INT8), "amx_int8");
    cr_expect_str_eq(tg_cpu_feature_name(TG_CPU_AMX_BF16), "amx_bf16");
}
