/* test_quant.c — the typed-weight kernels: the C reference of every typed
 * matmul against a double-precision dequantize-then-multiply oracle (which
 * decodes the bytes itself, not through the engine), every ISA's version
 * against the reference (guard bytes, untouched columns, tolerances from
 * each type's rounding scaled with the length), the Q8_0 activation
 * quantizer bit for bit on every ISA, the decoders, and the round-trip
 * bounds of the encoders. (The byte layout itself is checked against an
 * independent numpy implementation: quant_oracle.py.) */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/engine/checkasm.h"
#include "tests/engine/typed_case.h"

#define LEN(a) ((int)(sizeof(a) / sizeof((a)[0])))

static const tg_wtype typed[] = {TG_WTYPE_F16, TG_WTYPE_BF16, TG_WTYPE_Q8_0, TG_WTYPE_Q4_0};

/* ---- an oracle that reads the bytes itself ----------------------------------- */

static unsigned rd16(const uint8_t *p) { return (unsigned)p[0] | (unsigned)p[1] << 8; }

/* IEEE half by its definition (sign, 5-bit exponent biased 15, 10-bit
 * fraction), in double */
static double half_value(unsigned h) {
    int s = h >> 15, e = (h >> 10) & 31, f = h & 1023;
    double v = e == 0 ? ldexp(f, -24) : e == 31 ? (f ? NAN : INFINITY) : ldexp(1024 + f, e - 25);
    return s ? -v : v;
}

static double bf16_value(unsigned h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* element i of a row of type t, decoded from the bytes */
static double elem(tg_wtype t, const uint8_t *row, int i) {
    switch (t) {
    case TG_WTYPE_F32: {
        float f;
        memcpy(&f, row + 4 * (size_t)i, 4);
        return f;
    }
    case TG_WTYPE_F16: return half_value(rd16(row + 2 * (size_t)i));
    case TG_WTYPE_BF16: return bf16_value(rd16(row + 2 * (size_t)i));
    case TG_WTYPE_Q8_0: {
        const uint8_t *blk = row + (size_t)(i / 32) * 34;
        return half_value(rd16(blk)) * (int8_t)blk[2 + i % 32];
    }
    case TG_WTYPE_Q4_0: {
        const uint8_t *blk = row + (size_t)(i / 32) * 18;
        int j = i % 32;
        int q = j < 16 ? blk[2 + j] & 15 : blk[2 + j - 16] >> 4;
        return half_value(rd16(blk)) * (q - 8);
    }
    default: return NAN;
    }
}

/* want[T,OUT] in double from the decoded bytes, and tol[T,OUT]:
 *   float types: Σ_i x_i·w_i; tol = (IN + 8)·eps·(Σ|x_i w_i| + |b|), the
 *     worst case of an f32 sum of IN terms in any order;
 *   integer types: Σ_blocks (Σ_j qw·qx)·dw·dx with X dequantized from its
 *     Q8_0 blocks. The reference sums each block exactly in int32, the SIMD
 *     GEMV per lane (8 int32 partial sums per block), the GEMM the decoded
 *     products one by one in f32: any grouping of the IN products in f32
 *     is within (IN + 8)·eps·(Σ_i |w_i·x_i| + |b|). */
static void oracle(const tcase *c, float *want, float *tol, float *tol_bf16x, int o0, int o1) {
    int q = tg_wtype_q8_act(c->type), nb = c->in / 32;
    size_t rbx = tg_wtype_row_bytes(TG_WTYPE_Q8_0, c->in);
    for (int t = 0; t < c->T; t++)
        for (int o = o0; o < o1; o++) {
            const uint8_t *wr = c->w + (size_t)o * c->ldw;
            double s = 0, a = 0;
            tol_bf16x[(size_t)t * c->out + o] = 0.0f;
            if (!q) {
                for (int i = 0; i < c->in; i++) {
                    double p = c->x[(size_t)t * c->in + i] * elem(c->type, wr, i);
                    s += p, a += fabs(p);
                }
                tol_bf16x[(size_t)t * c->out + o] = (float)ldexp(a, -8);
                a *= c->in + 8;
            } else {
                const uint8_t *xr = c->xq + rbx * t;
                for (int i = 0; i < nb * 32; i++) {
                    double p = elem(c->type, wr, i) * elem(TG_WTYPE_Q8_0, xr, i);
                    s += p, a += fabs(p);
                }
                a *= c->in + 8;
            }
            double b = c->b ? c->b[o] : 0.0;
            want[(size_t)t * c->out + o] = (float)(s + b);
            tol[(size_t)t * c->out + o] = (float)((a + fabs(b)) * FLT_EPSILON + fabs(s + b) * FLT_EPSILON);
        }
}

/* An engine that rounds X to bfloat16 in the BF16 GEMM (bf16_act, T > 1):
 * each x moves by at most 2^-8·|x| (half a step of bfloat16's 8-bit
 * significand), so Y by at most 2^-8·Σ|x_i w_i| more; tol_bf16x holds that. */
static int rounds_x(const tg_engine *e, const tcase *c) {
    return e->bf16_act && c->type == TG_WTYPE_BF16 && c->T > 1;
}

/* The kernel on its declared scratch (tg_matmul_w_scratch bytes, 64-byte
 * aligned) with guard bytes after it: a kernel that writes past the bound
 * the callers size their buffers by fails here. */
#define WS_GUARD 256
static void run_kernel(const tg_engine *e, const tcase *c, float *y, int o0, int o1) {
    size_t n = tg_matmul_w_scratch(c->type, c->T, c->in);
    unsigned char *ws = aligned_alloc(64, (n + WS_GUARD + 63) / 64 * 64);
    cr_assert(ws != NULL);
    memset(ws + n, 0xA5, WS_GUARD);
    e->k.matmul_w[c->type](y, tc_x(c), c->w, c->ldw, c->b, c->T, c->in, c->out, o0, o1,
                           n ? ws : NULL);
    size_t bad = 0;
    for (size_t i = 0; i < WS_GUARD; i++) bad += ws[n + i] != 0xA5;
    cr_expect(bad == 0, "matmul_w %s %s T=%d in=%d: %zu guard bytes past its %zu bytes of scratch "
              "overwritten", tg_wtype_name(c->type), tg_isa_name(e->isa), c->T, c->in, bad, n);
    free(ws);
}

/* Every engine on columns o0..o1 of one case against the double oracle with
 * twice the reference's tolerance (the kernel's f32 sums and the
 * reference's each round within it). The reference itself meets the
 * tolerance once. */
static void check_case(const tg_engine *ref, const tg_engine *eng, int n_eng, const tcase *c,
                       int o0, int o1) {
    size_t ny = (size_t)c->T * c->out;
    float *want = ck_alloc(ny), *tol = ck_alloc(ny), *got = ck_alloc(ny);
    float *tol_x = ck_alloc(ny), *tol_e = ck_alloc(ny);
    oracle(c, want, tol, tol_x, o0, o1);
    char what[200];
    for (int e = -1; e < n_eng; e++) {
        const tg_engine *en = e < 0 ? ref : &eng[e];
        ck_poison(got, ny);
        run_kernel(en, c, got, o0, o1);
        snprintf(what, sizeof what, "matmul_w %s %s T=%d in=%d out=%d cols %d..%d %s",
                 tg_wtype_name(c->type), e < 0 ? "reference" : tg_isa_name(en->isa), c->T, c->in,
                 c->out, o0, o1, c->b ? "bias" : "no bias");
        if (e == 0) /* the kernels get the slack of both roundings */
            for (size_t i = 0; i < ny; i++) tol[i] *= 2;
        CK_EXPECT_GUARDS(got, "%s", what);
        for (size_t i = 0; i < ny; i++) tol_e[i] = tol[i] + (rounds_x(en, c) ? tol_x[i] : 0.0f);
        int ok = 1;
        for (int t = 0; t < c->T && ok; t++) {
            size_t row = (size_t)t * c->out;
            ok = ck_untouched(got, row, row + o0, what) &&
                 ck_untouched(got, row + o1, row + c->out, what) &&
                 ck_close(got + row + o0, want + row + o0, tol_e + row + o0, (size_t)(o1 - o0), what);
        }
        cr_expect(ok, "%s (seed %llu)", what, (unsigned long long)ck_seed());
    }
    ck_free(want);
    ck_free(tol);
    ck_free(tol_x);
    ck_free(tol_e);
    ck_free(got);
}

/* Shapes: rows 1, 3, 17 and many; IN = 32·k for the block types (and odd
 * lengths for f16/bf16); T = 1 (GEMV), few tokens, and the GEMM sizes. */
Test(matmul_w, shapes) {
    tg_engine ref, eng[TG_ISA_COUNT];
    ck_engine_ref(&ref);
    int n_eng = ck_engines(eng);
    ck_rng r = ck_rng_new(__func__);
    static const int Ts[] = {1, 2, 3, 4, 5, 8, 9, 17, 33};
    static const int outs[] = {1, 3, 17, 50, 129};
    static const int ins_q[] = {32, 64, 96, 128, 160, 256, 384, 768};
    static const int ins_f[] = {1, 3, 7, 17, 33, 100, 768};
    for (int ty = 0; ty < LEN(typed); ty++) {
        int q = tg_wtype_q8_act(typed[ty]);
        const int *ins = q ? ins_q : ins_f;
        int n_in = q ? LEN(ins_q) : LEN(ins_f);
        int n = 0;
        for (int a = 0; a < n_in; a++)
            for (int b = 0; b < LEN(outs); b++)
                for (int ti = 0; ti < LEN(Ts); ti++, n++) {
                    if ((double)Ts[ti] * ins[a] * outs[b] > 3e5) continue;
                    tcase c = tc_new(&r, typed[ty], Ts[ti], ins[a], outs[b], n & 1);
                    check_case(&ref, eng, n_eng, &c, 0, outs[b]);
                    tc_free(&c);
                }
        /* GPT-2-sized rows and the prefill GEMM */
        static const int big[][3] = {{1, 768, 2304}, {1, 3072, 768}, {7, 768, 300},
                                     {64, 768, 97}, {130, 256, 40}};
        for (int s = 0; s < LEN(big); s++) {
            tcase c = tc_new(&r, typed[ty], big[s][0], big[s][1], big[s][2], s & 1);
            check_case(&ref, eng, n_eng, &c, 0, big[s][2]);
            tc_free(&c);
        }
    }
}

/* The decode GEMV of short rows (IN <= 512: engine/x86/qgemv_small_tmpl.h,
 * four rows a pass, scales a chunk of 32 rows ahead): every IN = 32·k up
 * to 544 (the first long row past it), row counts around the passes and
 * chunks, against the oracle with guards; and with rows padded apart
 * (ldw = row bytes + 6: odd offsets, no alignment) bit for bit the result
 * of the packed rows. */
Test(matmul_w, short_rows_gemv) {
    tg_engine ref, eng[TG_ISA_COUNT];
    ck_engine_ref(&ref);
    int n_eng = ck_engines(eng);
    ck_rng r = ck_rng_new(__func__);
    static const int outs[] = {1, 2, 3, 4, 5, 7, 31, 33, 67};
    static const tg_wtype qt[] = {TG_WTYPE_Q8_0, TG_WTYPE_Q4_0};
    int n = 0;
    for (int ty = 0; ty < LEN(qt); ty++)
        for (int nb = 1; nb <= 17; nb++)
            for (int b = 0; b < LEN(outs); b++, n++) {
                int in = 32 * nb, out = outs[b];
                tcase c = tc_new(&r, qt[ty], 1, in, out, n & 1);
                check_case(&ref, eng, n_eng, &c, 0, out);
                size_t ldp = c.ldw + 6;
                uint8_t *wp = malloc(ldp * out);
                for (int o = 0; o < out; o++) memcpy(wp + ldp * o, c.w + c.ldw * o, c.ldw);
                float *packed = ck_alloc((size_t)out), *padded = ck_alloc((size_t)out);
                for (int e = 0; e < n_eng; e++) {
                    run_kernel(&eng[e], &c, packed, 0, out);
                    ck_poison(padded, (size_t)out);
                    eng[e].k.matmul_w[c.type](padded, tc_x(&c), wp, ldp, c.b, 1, in, out, 0, out, NULL);
                    CK_EXPECT_GUARDS(padded, "%s %s padded", tg_wtype_name(c.type),
                                     tg_isa_name(eng[e].isa));
                    CK_EXPECT_BITEQUAL(packed, padded, (size_t)out,
                                       "matmul_w %s %s in=%d out=%d packed vs padded rows",
                                       tg_wtype_name(c.type), tg_isa_name(eng[e].isa), in, out);
                }
                free(wp);
                ck_free(packed);
                ck_free(padded);
                tc_free(&c);
            }
}

/* The decode GEMVs of long rows (T = 1): AVX-512's zmm paths take Q4_0 and
 * Q8_0 rows of 8·k blocks, k > 2 (four or two blocks per vector; x's
 * layout on the stack in tiles of 16384 / 8192 inputs), F16/BF16 rows of any
 * length (16 per vector, a masked tail); the lengths around those edges,
 * and column ranges that start and end inside a row block. */
Test(matmul_w, gemv_long_rows) {
    tg_engine ref, eng[TG_ISA_COUNT];
    ck_engine_ref(&ref);
    int n_eng = ck_engines(eng);
    ck_rng r = ck_rng_new(__func__);
    static const int ins_q[] = {256, 512, 544, 768, 800, 1024, 8192, 8448, 16384, 16640};
    static const int ins_f[] = {15, 16, 47, 63, 64, 65, 127, 129, 1000, 3072, 16641};
    static const int outs[] = {1, 3, 17, 50};
    for (int ty = 0; ty < LEN(typed); ty++) {
        int q = tg_wtype_q8_act(typed[ty]);
        const int *ins = q ? ins_q : ins_f;
        int n_in = q ? LEN(ins_q) : LEN(ins_f);
        for (int a = 0; a < n_in; a++)
            for (int b = 0; b < LEN(outs); b++) {
                if ((double)ins[a] * outs[b] > 3e5) continue;
                tcase c = tc_new(&r, typed[ty], 1, ins[a], outs[b], (a + b) & 1);
                check_case(&ref, eng, n_eng, &c, 0, outs[b]);
                if (outs[b] == 50) check_case(&ref, eng, n_eng, &c, 16, 33);
                tc_free(&c);
            }
    }
}

/* The integer GEMVs at the edges of their int16 and int32 ranges: Q4_0
 * nibbles all 0, all 15 or mixed against x bytes all -128, all 127 or
 * alternating (the AVX2 long-row GEMV adds two vpmaddubsw results in int16
 * before vpmaddwd: 2·(2·15·128) = 7680 at most, and its -8·Σx corrections
 * 2·(2·8·128); a saturation anywhere would show here), on row lengths of
 * each GEMV (short rows, long rows of 8·k blocks in one x tile and in
 * two, and others) and a tail pass of 3 rows. */
Test(matmul_w, q4_0_gemv_extremes) {
    tg_engine ref, eng[TG_ISA_COUNT];
    ck_engine_ref(&ref);
    int n_eng = ck_engines(eng);
    ck_rng r = ck_rng_new(__func__);
    static const int ins[] = {512, 768, 800, 3072, 16640};
    static const uint8_t nib[] = {0x00, 0xff, 0x0f, 0xf0, 0x8f};
    static const int8_t xs[][2] = {{-128, -128}, {127, 127}, {-128, 127}, {127, -128}};
    for (int a = 0; a < LEN(ins); a++)
        for (int p = 0; p < LEN(nib); p++)
            for (int q = 0; q < LEN(xs); q++) {
                tcase c = tc_new(&r, TG_WTYPE_Q4_0, 1, ins[a], 7, (p + q) & 1);
                int nb = ins[a] / 32;
                for (int o = 0; o < c.out; o++)
                    for (int k = 0; k < nb; k++) /* row o % 2 == 1: the nibbles swapped */
                        memset(c.w + (size_t)o * c.ldw + (size_t)k * 18 + 2,
                               o % 2 ? (uint8_t)(nib[p] << 4 | nib[p] >> 4) : nib[p], 16);
                for (int k = 0; k < nb; k++)
                    for (int j = 0; j < 32; j++) ((tg_block_q8_0 *)c.xq)[k].qs[j] = xs[q][j % 2];
                check_case(&ref, eng, n_eng, &c, 0, c.out);
                tc_free(&c);
            }
}

/* The BF16 GEMM (T > 1; on vdpbf16ps where the CPU has AVX512-BF16): every
 * token count 1..16 (AVX512-BF16: the GEMV, few_bf16 at T 2..8 with X
 * rounded, the vdpbf16ps GEMM's partial 16-token tiles from T 9), 17 and
 * 128, against rows 1, 3, 17, 31, 33, 50 and lengths around the pair and
 * 32-wide steps, odd ones included; the bf16 tolerance where X is rounded. */
Test(matmul_w, bf16_gemm) {
    tg_engine ref, eng[TG_ISA_COUNT];
    ck_engine_ref(&ref);
    int n_eng = ck_engines(eng);
    ck_rng r = ck_rng_new(__func__);
    static const int Ts[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 128};
    static const int outs[] = {1, 3, 17, 31, 33, 50};
    static const int ins[] = {1, 2, 15, 31, 32, 33, 64, 97, 768};
    int n = 0;
    for (int ti = 0; ti < LEN(Ts); ti++)
        for (int a = 0; a < LEN(ins); a++)
            for (int b = 0; b < LEN(outs); b++, n++) {
                if ((double)Ts[ti] * ins[a] * outs[b] > 1e6) continue;
                tcase c = tc_new(&r, TG_WTYPE_BF16, Ts[ti], ins[a], outs[b], n & 1);
                check_case(&ref, eng, n_eng, &c, 0, outs[b]);
                tc_free(&c);
            }
    tcase c = tc_new(&r, TG_WTYPE_BF16, 128, 3072, 40, 1);
    check_case(&ref, eng, n_eng, &c, 0, 40);
    tc_free(&c);
}

/* F16 and BF16 weights for T > 1 are widened inside the f32 GEMM's packing
 * (x86 matmul_tmpl.h, NEON matmul_neon.c) or its few-token loads: every
 * output gets the operations the f32 matmul gives it on the widened matrix,
 * so bit for bit k.matmul on W decoded here (elem: from the bytes, not
 * through the engine). Not where the BF16 GEMM rounds X first (bf16_act);
 * the reference sums in its own order and is left out; the f32 matmul is
 * that of the ISA whose table installed the typed kernel. Token counts around
 * the few-token cutover and the tiles, lengths around the 4/8/16-wide steps
 * and KC = 256, rows around the tiles' 12/16/32 columns, and a sub-range as
 * the pool hands it out. */
Test(matmul_w, half_gemm_equals_f32_widened) {
    tg_engine eng[TG_ISA_COUNT];
    int n_eng = ck_engines(eng);
    ck_rng r = ck_rng_new(__func__);
    static const int Ts[] = {2, 3, 8, 9, 13, 17, 33, 130};
    static const int ins[] = {1, 3, 4, 7, 17, 255, 257, 768};
    static const int outs[] = {1, 5, 12, 13, 25, 50};
    static const tg_wtype ht[] = {TG_WTYPE_F16, TG_WTYPE_BF16};
    int n = 0;
    for (int ty = 0; ty < LEN(ht); ty++)
        for (int ti = 0; ti < LEN(Ts); ti++)
            for (int a = 0; a < LEN(ins); a++)
                for (int bo = 0; bo < LEN(outs); bo++, n++) {
                    int T = Ts[ti], in = ins[a], out = outs[bo];
                    if ((double)T * in * out > 4e5) continue;
                    tcase c = tc_new(&r, ht[ty], T, in, out, n & 1);
                    float *wf = ck_alloc((size_t)out * in);
                    for (int o = 0; o < out; o++)
                        for (int i = 0; i < in; i++)
                            wf[(size_t)o * in + i] = (float)elem(c.type, c.w + (size_t)o * c.ldw, i);
                    size_t ny = (size_t)T * out;
                    float *want = ck_alloc(ny), *got = ck_alloc(ny);
                    int o0 = out > 16 ? 16 : 0;
                    for (int e = 0; e < n_eng; e++) {
                        if (rounds_x(&eng[e], &c)) continue;
                        /* the f32 matmul of the table that installed this kernel
                         * (a lower ISA's, where this engine kept its kernel) */
                        int fam = e;
                        for (int f = 0; f < e; f++)
                            if (eng[f].k.matmul_w[c.type] == eng[e].k.matmul_w[c.type]) {
                                fam = f;
                                break;
                            }
                        ck_poison(want, ny);
                        eng[fam].k.matmul(want, c.x, wf, c.b, T, in, out, o0, out);
                        ck_poison(got, ny);
                        run_kernel(&eng[e], &c, got, o0, out);
                        CK_EXPECT_GUARDS(got, "%s %s widened", tg_wtype_name(c.type), tg_isa_name(eng[e].isa));
                        CK_EXPECT_BITEQUAL(got, want, ny, "matmul_w %s %s T=%d in=%d out=%d cols %d.. vs "
                                           "the f32 matmul on the widened W", tg_wtype_name(c.type),
                                           tg_isa_name(eng[e].isa), T, in, out, o0);
                    }
                    ck_free(wf);
                    ck_free(want);
                    ck_free(got);
                    tc_free(&c);
                }
}

/* The GPT-2 vocabulary projection: OUT = 50257 rows. */
Test(matmul_w, vocab) {
    tg_engine ref, eng[TG_ISA_COUNT];
    ck_engine_ref(&ref);
    int n_eng = ck_engines(eng);
    ck_rng r = ck_rng_new(__func__);
    for (int ty = 0; ty < LEN(typed); ty++)
        for (int T = 1; T <= 2; T++) {
            tcase c = tc_new(&r, typed[ty], T, 64, 50257, 0);
            check_case(&ref, eng, n_eng, &c, 0, 50257);
            tc_free(&c);
        }
}

/* The NEON prefill GEMM of Q8_0/Q4_0 (engine/arm/qgemm_neon_tmpl.h, sdot
 * or plain) rounds exactly as the reference does, in its order: bit for bit
 * the reference's output, on awkward shapes (partial panels of 8 rows,
 * partial tiles of tokens, sub-ranges). Skipped where no NEON engine runs. */
Test(matmul_w, neon_gemm_equals_reference) {
    tg_engine ref, eng[TG_ISA_COUNT];
    ck_engine_ref(&ref);
    int n_eng = ck_engines(eng), neon = -1;
    for (int e = 0; e < n_eng; e++)
        if (eng[e].isa == TG_ISA_NEON) neon = e;
    if (neon < 0) cr_skip_test("no NEON engine on this CPU");
    ck_rng r = ck_rng_new(__func__);
    static const int shapes[][3] = {{2, 32, 1}, {3, 64, 7}, {4, 96, 9}, {5, 160, 17}, {7, 768, 50},
                                    {9, 32, 129}, {33, 256, 40}, {2, 3072, 24}};
    static const tg_wtype qt[] = {TG_WTYPE_Q8_0, TG_WTYPE_Q4_0};
    for (int ty = 0; ty < LEN(qt); ty++)
        for (int s = 0; s < LEN(shapes); s++) {
            int T = shapes[s][0], in = shapes[s][1], out = shapes[s][2];
            tcase c = tc_new(&r, qt[ty], T, in, out, s & 1);
            size_t ny = (size_t)T * out;
            float *want = ck_alloc(ny), *got = ck_alloc(ny);
            int o0 = out > 16 ? 16 : 0; /* a range as the pool hands it out */
            ck_poison(want, ny);
            run_kernel(&ref, &c, want, o0, out);
            ck_poison(got, ny);
            run_kernel(&eng[neon], &c, got, o0, out);
            CK_EXPECT_GUARDS(got, "neon gemm %s", tg_wtype_name(c.type));
            CK_EXPECT_BITEQUAL(got, want, ny, "matmul_w %s neon T=%d in=%d out=%d cols %d.. vs reference",
                               tg_wtype_name(c.type), T, in, out, o0);
            ck_free(want);
            ck_free(got);
            tc_free(&c);
        }
}

/* The x86 integer prefill GEMMs (qgemm_tmpl.h: ymm on vpmaddubsw or
 * AVX-VNNI, zmm on AVX512-VNNI or on vpmaddubsw without VNNI) sum each
 * block exactly in int32 and then take the same f32 steps, so they give
 * the same bits: every x86 engine's Q8_0/Q4_0 GEMM against the AVX2
 * engine's (run under TINYGPT_CPU_MASK to pair the plain ones: meson's
 * test_quant_no_features, _skylake_x). Not the AMX GEMM, which rounds as
 * the reference does (no fma; test_amx). Shapes around the 32-row panels,
 * the 3- and 6-token tiles and a sub-range as the pool hands it out. */
Test(matmul_w, x86_int_gemms_agree) {
    tg_engine eng[TG_ISA_COUNT];
    int n_eng = ck_engines(eng), avx2 = -1;
    for (int e = 0; e < n_eng; e++)
        if (eng[e].isa == TG_ISA_AVX2) avx2 = e;
    if (avx2 < 0) cr_skip_test("no AVX2 engine on this CPU");
    if (tg_cpu_has(TG_CPU_AMX_INT8)) cr_skip_test("AVX-512's integer GEMM is AMX's here");
    ck_rng r = ck_rng_new(__func__);
    static const int shapes[][3] = {{2, 32, 1},   {3, 64, 7},   {5, 96, 17},  {7, 160, 33},
                                    {9, 768, 50}, {13, 32, 65}, {33, 256, 40}, {130, 3072, 24}};
    static const tg_wtype qt[] = {TG_WTYPE_Q8_0, TG_WTYPE_Q4_0};
    int compared = 0;
    for (int ty = 0; ty < LEN(qt); ty++)
        for (int s = 0; s < LEN(shapes); s++) {
            int T = shapes[s][0], in = shapes[s][1], out = shapes[s][2];
            tcase c = tc_new(&r, qt[ty], T, in, out, s & 1);
            size_t ny = (size_t)T * out;
            float *want = ck_alloc(ny), *got = ck_alloc(ny);
            int o0 = out > 16 ? 16 : 0;
            ck_poison(want, ny);
            run_kernel(&eng[avx2], &c, want, o0, out);
            for (int e = 0; e < n_eng; e++) {
                if (e == avx2 || eng[e].isa != TG_ISA_AVX512) continue;
                ck_poison(got, ny);
                run_kernel(&eng[e], &c, got, o0, out);
                CK_EXPECT_GUARDS(got, "%s %s gemm", tg_wtype_name(c.type), tg_isa_name(eng[e].isa));
                CK_EXPECT_BITEQUAL(got, want, ny, "matmul_w %s %s T=%d in=%d out=%d cols %d.. vs avx2",
                                   tg_wtype_name(c.type), tg_isa_name(eng[e].isa), T, in, out, o0);
                compared++;
            }
            ck_free(want);
            ck_free(got);
            tc_free(&c);
        }
    if (!compared) cr_skip_test("no AVX-512 engine on this CPU");
}

/* Column sub-ranges as the pool hands them out; the values must not depend
 * on the range (bit for bit against one whole call). IN = 16640 is past
 * every decode GEMV's x tile (8192 or 16384 inputs): rows in two tiles. */
Test(matmul_w, subranges_and_range_independent) {
    tg_engine ref, eng[TG_ISA_COUNT];
    ck_engine_ref(&ref);
    int n_eng = ck_engines(eng);
    ck_rng r = ck_rng_new(__func__);
    static const int shapes[][3] = {{1, 64, 17}, {1, 768, 300}, {2, 96, 129}, {3, 768, 50},
                                    {9, 128, 97}, {33, 256, 200}, {1, 16640, 37}};
    for (int ty = 0; ty < LEN(typed); ty++)
        for (int s = 0; s < LEN(shapes); s++) {
            int T = shapes[s][0], in = shapes[s][1], out = shapes[s][2];
            tcase c = tc_new(&r, typed[ty], T, in, out, s & 1);
            int blocks = (out + TG_ROW_BLOCK - 1) / TG_ROW_BLOCK;
            int b0 = ck_randi(&r, 0, blocks - 1), b1 = ck_randi(&r, b0 + 1, blocks);
            int o0 = b0 * TG_ROW_BLOCK, o1 = b1 * TG_ROW_BLOCK < out ? b1 * TG_ROW_BLOCK : out;
            check_case(&ref, eng, n_eng, &c, o0, o1);
            size_t ny = (size_t)T * out;
            float *whole = ck_alloc(ny), *parts = ck_alloc(ny);
            for (int e = 0; e < n_eng; e++) {
                run_kernel(&eng[e], &c, whole, 0, out);
                ck_poison(parts, ny);
                for (int p0 = 0; p0 < out;) {
                    int p1 = p0 + TG_ROW_BLOCK * ck_randi(&r, 1, 5);
                    if (p1 > out) p1 = out;
                    run_kernel(&eng[e], &c, parts, p0, p1);
                    p0 = p1;
                }
                CK_EXPECT_GUARDS(parts, "%s %s pieces", tg_wtype_name(c.type), tg_isa_name(eng[e].isa));
                CK_EXPECT_BITEQUAL(whole, parts, ny, "matmul_w %s %s T=%d in=%d out=%d whole vs pieces",
                                   tg_wtype_name(c.type), tg_isa_name(eng[e].isa), T, in, out);
            }
            ck_free(whole);
            ck_free(parts);
            tc_free(&c);
        }
}

/* tg_matmul_w (quantize X once, then the pool) gives the same bits on 1..4
 * threads, and the same as the kernel called directly. */
Test(matmul_w, threads_bitidentical) {
    tg_engine eng[TG_ISA_COUNT];
    int n_eng = ck_engines(eng);
    ck_rng r = ck_rng_new(__func__);
    tg_pool *pools[4];
    for (int p = 0; p < 4; p++) {
        tg_err err;
        cr_assert(tg_pool_create(&pools[p], p + 1, &err) == TG_OK, "%s", err.msg);
    }
    static const int shapes[][3] = {{1, 768, 2304}, {3, 768, 1000}, {33, 256, 1000}};
    for (int ty = 0; ty < LEN(typed); ty++)
        for (int s = 0; s < LEN(shapes); s++) {
            int T = shapes[s][0], in = shapes[s][1], out = shapes[s][2];
            tcase c = tc_new(&r, typed[ty], T, in, out, s & 1);
            tg_weight w = {c.type, c.w, out, in, c.ldw};
            size_t ny = (size_t)T * out, nws = tg_matmul_ws(c.type, T, in, 4);
            void *ws = nws ? malloc(nws) : NULL;
            float *y1 = ck_alloc(ny), *yn = ck_alloc(ny);
            for (int e = 0; e < n_eng; e++) {
                run_kernel(&eng[e], &c, y1, 0, out);
                for (int p = 0; p < 4; p++) {
                    ck_poison(yn, ny);
                    tg_matmul_w(&eng[e], pools[p], yn, c.x, &w, c.b, T, ws);
                    CK_EXPECT_GUARDS(yn, "tg_matmul_w %d threads", p + 1);
                    CK_EXPECT_BITEQUAL(y1, yn, ny, "tg_matmul_w %s %s T=%d: kernel vs %d threads",
                                       tg_wtype_name(c.type), tg_isa_name(eng[e].isa), T, p + 1);
                }
            }
            free(ws);
            ck_free(y1);
            ck_free(yn);
            tc_free(&c);
        }
    for (int p = 0; p < 4; p++) tg_pool_free(pools[p]);
}

/* A NaN in row t of X makes row t of Y NaN on every type and ISA (a block
 * holding it gets a NaN scale); other rows stay finite. */
Test(matmul_w, nan_row) {
    tg_engine eng[TG_ISA_COUNT];
    int n_eng = ck_engines(eng);
    ck_rng r = ck_rng_new(__func__);
    for (int ty = 0; ty < LEN(typed); ty++) {
        int T = 3, in = 96, out = 40;
        tcase c = tc_new(&r, typed[ty], T, in, out, 1);
        c.x[1 * in + 37] = NAN;
        if (c.xq) {
            size_t rb = tg_wtype_row_bytes(TG_WTYPE_Q8_0, in);
            cr_expect_eq(tg_quantize_row(TG_WTYPE_Q8_0, c.xq + rb, c.x + in, in), 1);
        }
        float *y = ck_alloc((size_t)T * out);
        for (int e = 0; e < n_eng; e++) {
            run_kernel(&eng[e], &c, y, 0, out);
            for (int o = 0; o < out; o++) {
                cr_expect(isnan(y[out + o]), "%s %s: NaN not propagated", tg_wtype_name(c.type),
                          tg_isa_name(eng[e].isa));
                cr_expect(isfinite(y[o]) && isfinite(y[2 * out + o]));
            }
        }
        ck_free(y);
        tc_free(&c);
    }
}

/* ---- the activation quantizer and the decoders ------------------------------- */

/* quantize_q8_0 gives the reference's bytes on every ISA (so the integer
 * dot products see the same numbers), including ties, zeros, tiny and huge
 * blocks. */
Test(quantize_q8_0, bitexact_all_isas) {
    tg_engine eng[TG_ISA_COUNT];
    int n_eng = ck_engines(eng);
    ck_rng r = ck_rng_new(__func__);
    static const int ns[] = {32, 64, 96, 768, 3072};
    for (int s = 0; s < LEN(ns); s++) {
        int n = ns[s], nb = n / 32;
        float *x = ck_alloc((size_t)n);
        ck_fill(&r, x, (size_t)n, -3.0f, 3.0f);
        if (nb > 2) {
            for (int j = 0; j < 32; j++) x[32 + j] = 0.0f;                 /* a zero block */
            for (int j = 0; j < 32; j++) x[64 + j] = (float)(j - 16) * 0.5f; /* ties at 127/16 */
        }
        if (nb > 4) { /* d a half subnormal (rounded there), and d past the half range (inf) */
            for (int j = 0; j < 32; j++) x[96 + j] *= 3e-6f;
            for (int j = 0; j < 32; j++) x[128 + j] *= 1e7f;
        }
        x[n - 1] = 1e-30f;
        tg_block_q8_0 *want = malloc(sizeof *want * nb), *got = malloc(sizeof *got * nb);
        tg_quantize_row(TG_WTYPE_Q8_0, want, x, n);
        for (int e = 0; e < n_eng; e++) {
            memset(got, 0xa5, sizeof *got * nb);
            eng[e].k.quantize_q8_0(got, x, n);
            cr_expect(!memcmp(got, want, sizeof *got * nb), "quantize_q8_0 %s n=%d differs",
                      tg_isa_name(eng[e].isa), n);
        }
        free(want);
        free(got);
        ck_free(x);
    }
}

/* The row decoders on every ISA equal the oracle's decoding exactly. */
Test(dequant, all_isas) {
    tg_engine eng[TG_ISA_COUNT];
    int n_eng = ck_engines(eng);
    ck_rng r = ck_rng_new(__func__);
    static const int ns[] = {32, 96, 768, 800};
    for (int ty = 0; ty < TG_WTYPE_COUNT; ty++)
        for (int s = 0; s < LEN(ns); s++) {
            int n = ns[s];
            size_t rb = tg_wtype_row_bytes((tg_wtype)ty, n);
            if (!rb) continue;
            float *x = ck_alloc((size_t)n), *want = ck_alloc((size_t)n), *got = ck_alloc((size_t)n);
            ck_fill(&r, x, (size_t)n, -2.0f, 2.0f);
            uint8_t *row = malloc(rb);
            tg_quantize_row((tg_wtype)ty, row, x, n);
            for (int i = 0; i < n; i++) want[i] = (float)elem((tg_wtype)ty, row, i);
            for (int e = 0; e < n_eng; e++) {
                ck_poison(got, (size_t)n);
                eng[e].k.dequant[ty](got, row, n);
                CK_EXPECT_GUARDS(got, "dequant %s", tg_wtype_name((tg_wtype)ty));
                CK_EXPECT_BITEQUAL(got, want, (size_t)n, "dequant %s %s n=%d",
                                   tg_wtype_name((tg_wtype)ty), tg_isa_name(eng[e].isa), n);
            }
            free(row);
            ck_free(x);
            ck_free(want);
            ck_free(got);
        }
}

/* ---- round trips ----------------------------------------------------------- */

/* Q8_0: every element within d/2 of its value, where d = max|x|/127 is the
 * scale the q were chosen with, plus what rounding d to a half moves:
 * |x - d16·q| <= d/2 + 127·|d - d16| (+ the f32 rounding of d16·q). */
Test(roundtrip, q8_0_bound) {
    ck_rng r = ck_rng_new(__func__);
    int n = 32 * 200;
    float *x = ck_alloc((size_t)n), *y = ck_alloc((size_t)n);
    for (int b = 0; b < n / 32; b++) {
        float s = powf(10.0f, ck_randf(&r, -4.0f, 3.0f)); /* scales across the half range */
        ck_fill(&r, x + b * 32, 32, -s, s);
    }
    tg_block_q8_0 *q = malloc(sizeof *q * (n / 32));
    cr_assert_eq(tg_quantize_row(TG_WTYPE_Q8_0, q, x, n), 0);
    tg_dequantize_row(TG_WTYPE_Q8_0, y, q, n);
    for (int b = 0; b < n / 32; b++) {
        float amax = 0;
        for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(x[b * 32 + j]));
        double d = amax / 127.0f, d16 = tg_f16_to_f32(q[b].d);
        for (int j = 0; j < 32; j++) {
            int i = b * 32 + j;
            double bound = d / 2 * (1 + 1e-6) + 127 * fabs(d - d16) + fabs((double)y[i]) * FLT_EPSILON;
            cr_expect(fabs((double)x[i] - y[i]) <= bound, "q8_0 block %d elem %d: %g -> %g (bound %g)",
                      b, j, x[i], y[i], bound);
        }
    }
    free(q);
    ck_free(x);
    ck_free(y);
}

/* Q4_0: |err| <= |d|/2 (+ the half rounding of d, times |q - 8| <= 8),
 * except where q was clamped to 15 (x/d in (7.5, 8]): there |d| . */
Test(roundtrip, q4_0_bound) {
    ck_rng r = ck_rng_new(__func__);
    int n = 32 * 200;
    float *x = ck_alloc((size_t)n), *y = ck_alloc((size_t)n);
    for (int b = 0; b < n / 32; b++) {
        float s = powf(10.0f, ck_randf(&r, -3.0f, 3.0f));
        ck_fill(&r, x + b * 32, 32, -s, s);
    }
    tg_block_q4_0 *q = malloc(sizeof *q * (n / 32));
    cr_assert_eq(tg_quantize_row(TG_WTYPE_Q4_0, q, x, n), 0);
    tg_dequantize_row(TG_WTYPE_Q4_0, y, q, n);
    int clamped = 0;
    for (int b = 0; b < n / 32; b++) {
        float m = 0;
        for (int j = 0; j < 32; j++)
            if (fabsf(x[b * 32 + j]) > fabsf(m)) m = x[b * 32 + j];
        double d = fabs((double)(m / -8.0f)), d16 = fabs((double)tg_f16_to_f32(q[b].d));
        for (int j = 0; j < 32; j++) {
            int i = b * 32 + j;
            int qv = j < 16 ? q[b].qs[j] & 15 : q[b].qs[j - 16] >> 4;
            int clamp = qv == 15 && fabs(x[i]) > 7.5 * d * (1 - 1e-6);
            clamped += clamp;
            double bound = (clamp ? d : d / 2) * (1 + 1e-6) + 8 * fabs(d - d16) +
                           fabs((double)y[i]) * FLT_EPSILON;
            cr_expect(fabs((double)x[i] - y[i]) <= bound, "q4_0 block %d elem %d: %g -> %g (bound %g)",
                      b, j, x[i], y[i], bound);
        }
    }
    cr_expect(clamped > 0, "no block exercised the clamped end");
    free(q);
    ck_free(x);
    ck_free(y);
}

/* Non-finite input: the block gets a NaN scale and is counted; f16/bf16
 * keep inf as inf and NaN as NaN, round to nearest even at a tie. */
Test(roundtrip, nonfinite_and_ties) {
    float x[64];
    for (int i = 0; i < 64; i++) x[i] = (float)i / 64;
    x[5] = NAN;
    x[40] = INFINITY;
    tg_block_q8_0 q8[2];
    tg_block_q4_0 q4[2];
    cr_expect_eq(tg_quantize_row(TG_WTYPE_Q8_0, q8, x, 64), 2);
    cr_expect_eq(tg_quantize_row(TG_WTYPE_Q4_0, q4, x, 64), 2);
    cr_expect(isnan(tg_f16_to_f32(q8[0].d)) && isnan(tg_f16_to_f32(q4[1].d)));
    uint16_t h[4];
    float v[4] = {INFINITY, -INFINITY, NAN, 1.0f + 0x1p-11f}; /* the last a tie between halves */
    cr_expect_eq(tg_quantize_row(TG_WTYPE_F16, h, v, 4), 3);
    cr_expect(h[0] == 0x7c00 && h[1] == 0xfc00 && (h[2] & 0x7c00) == 0x7c00 && (h[2] & 0x3ff));
    cr_expect_eq(h[3], 0x3c00, "1 + 2^-11 rounds to even 1.0, got %04x", h[3]);
    float t2 = 1.0f + 3 * 0x1p-11f; /* tie between 1+2^-10 and 1+2^-9: even is 1+2^-9 */
    cr_expect_eq(tg_f32_to_f16(t2), 0x3c02);
    uint16_t bh[4];
    float bv[4] = {INFINITY, NAN, 1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f};
    tg_quantize_row(TG_WTYPE_BF16, bh, bv, 4);
    cr_expect(bh[0] == 0x7f80 && (bh[1] & 0x7f80) == 0x7f80 && (bh[1] & 0x7f));
    cr_expect_eq(bh[2], 0x3f80);
    cr_expect_eq(bh[3], 0x3f82);
}

/* Row sizes and names. */
Test(wtype, sizes) {
    cr_expect_eq(tg_wtype_row_bytes(TG_WTYPE_Q8_0, 64), 68u);
    cr_expect_eq(tg_wtype_row_bytes(TG_WTYPE_Q4_0, 64), 36u);
    cr_expect_eq(tg_wtype_row_bytes(TG_WTYPE_Q4_0, 33), 0u);
    cr_expect_eq(tg_wtype_row_bytes(TG_WTYPE_BF16, 33), 66u);
    tg_wtype t;
    cr_expect(tg_wtype_parse("q4_0", &t) == TG_OK && t == TG_WTYPE_Q4_0);
    cr_expect(tg_wtype_parse("q5_0", &t) == TG_ERR_ARG);
    cr_expect_str_eq(tg_wtype_name(TG_WTYPE_BF16), "bf16");
}
