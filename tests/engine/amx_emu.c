/* amx_emu.c — a software model of the AMX tile instructions the kernels use
 * (engine/x86/amx_tile.h with AMX_EMULATE), written from the pseudo-code of
 * Intel's SDM (vol. 2, LDTILECFG, TILERELEASE, TILEZERO, TILELOADD,
 * TILESTORED, TDPBF16PS, TDPBSSD), so that the AMX kernels' source runs and
 * is tested on CPUs without AMX (all of ours). The state is per thread, as
 * the registers are. A use the hardware would fault on (#UD, #GP: an
 * unconfigured tile, shapes that do not chain, a bad config) prints what
 * and aborts.
 *
 * TDPBF16PS, as the SDM states it: per row m of C, 2·N f32 temporaries start
 * at 0; for each pair k (in order) and column n, the even products go into
 * temp[2n] and the odd ones into temp[2n+1], each by an f32 FMA with DAZ,
 * FTZ and round to nearest even; then C[m][n] += temp[2n] + temp[2n+1]
 * (two more rounded adds, DAZ and FTZ). MXCSR plays no part. (The
 * intrinsics guide's shorter pseudo-code adds every product straight into
 * C: a different order; the kernel tests' tolerances do not depend on it.)
 * TDPBSSD: C[m][n] += Σ_k Σ_i a[m][4k+i]·b[k][4n+i], signed bytes, in
 * int32 with wrap-around. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define AMX_EMULATE 1
#include "engine/x86/amx_tile.h"

typedef struct tile_state {
    int configured;
    amx_cfg cfg;
    uint8_t t[8][16][64];
} tile_state;
static _Thread_local tile_state st;

static void fault(const char *insn, const char *why) {
    fprintf(stderr, "amx_emu: %s faults: %s\n", insn, why);
    abort();
}

static void valid(const char *insn, int t) {
    if (!st.configured) fault(insn, "tiles not configured (no ldtilecfg)");
    if (t < 0 || t > 7) fault(insn, "tile number out of 0..7");
    if (!st.cfg.rows[t] || !st.cfg.colsb[t]) fault(insn, "tile not configured (0 rows or columns)");
}

void amx_emu_loadconfig(const amx_cfg *cfg) {
    memset(&st, 0, sizeof st);
    if (cfg->palette == 0) return; /* the init state */
    if (cfg->palette != 1) fault("ldtilecfg", "palette not 1");
    for (int i = 0; i < 14; i++)
        if (cfg->reserved[i]) fault("ldtilecfg", "reserved bytes not 0");
    if (cfg->start_row) fault("ldtilecfg", "start_row not 0 (kernels never restart)");
    for (int t = 0; t < 16; t++) {
        int r = cfg->rows[t], c = cfg->colsb[t];
        if (t >= 8 && (r || c)) fault("ldtilecfg", "tiles 8..15 configured under palette 1");
        if (r > 16 || c > 64) fault("ldtilecfg", "more than 16 rows or 64 bytes");
        if (!r != !c) fault("ldtilecfg", "rows and colsb not both zero or both non-zero");
    }
    st.cfg = *cfg;
    st.configured = 1;
}

void amx_emu_release(void) { memset(&st, 0, sizeof st); }

void amx_emu_zero(int t) {
    valid("tilezero", t);
    memset(st.t[t], 0, sizeof st.t[t]);
}

/* rows 0..rows-1 get colsb bytes from p + r·stride, the rest of the tile 0 */
void amx_emu_load(int t, const void *p, size_t stride) {
    valid("tileloadd", t);
    memset(st.t[t], 0, sizeof st.t[t]);
    for (int r = 0; r < st.cfg.rows[t]; r++)
        memcpy(st.t[t][r], (const char *)p + (size_t)r * stride, st.cfg.colsb[t]);
}

void amx_emu_store(int t, void *p, size_t stride) {
    valid("tilestored", t);
    for (int r = 0; r < st.cfg.rows[t]; r++)
        memcpy((char *)p + (size_t)r * stride, st.t[t][r], st.cfg.colsb[t]);
}

/* the SDM's checks for the TDP* family (#UD) */
static void dp_shapes(const char *insn, int c, int a, int b) {
    valid(insn, c);
    valid(insn, a);
    valid(insn, b);
    if (c == a || c == b || a == b) fault(insn, "operands not three distinct tiles");
    const amx_cfg *g = &st.cfg;
    if (g->colsb[c] % 4 || g->colsb[a] % 4) fault(insn, "colsb not a multiple of 4");
    if (g->rows[a] != g->rows[c]) fault(insn, "src1.rows != srcdest.rows");
    if (g->colsb[a] / 4 != g->rows[b]) fault(insn, "src1.colsb / 4 != src2.rows");
    if (g->colsb[b] != g->colsb[c]) fault(insn, "src2.colsb != srcdest.colsb");
}

static float f32_of(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* denormals as zero (inputs) and flushed to zero (results), sign kept */
static float daz(float f) { return fpclassify(f) == FP_SUBNORMAL ? copysignf(0.0f, f) : f; }

static float bf16_at(const uint8_t *row, int i) {
    return daz(f32_of((uint32_t)(row[2 * i] | row[2 * i + 1] << 8) << 16));
}

void amx_emu_dpbf16ps(int c, int a, int b) {
    dp_shapes("tdpbf16ps", c, a, b);
    int M = st.cfg.rows[c], N = st.cfg.colsb[c] / 4, K = st.cfg.colsb[a] / 4;
    for (int m = 0; m < M; m++) {
        float temp[32] = {0};
        for (int k = 0; k < K; k++)
            for (int n = 0; n < N; n++)
                for (int e = 0; e < 2; e++) {
                    float x = bf16_at(st.t[a][m], 2 * k + e), w = bf16_at(st.t[b][k], 2 * n + e);
                    temp[2 * n + e] = daz(fmaf(x, w, temp[2 * n + e]));
                }
        for (int n = 0; n < N; n++) {
            float cv;
            memcpy(&cv, st.t[c][m] + 4 * n, 4);
            float s = daz(temp[2 * n] + temp[2 * n + 1]);
            cv = daz(daz(cv) + s);
            memcpy(st.t[c][m] + 4 * n, &cv, 4);
        }
        memset(st.t[c][m] + 4 * N, 0, 64 - 4 * (size_t)N); /* write_row_and_zero */
    }
    for (int m = M; m < 16; m++) memset(st.t[c][m], 0, 64); /* zero_upper_rows */
}

void amx_emu_dpbssd(int c, int a, int b) {
    dp_shapes("tdpbssd", c, a, b);
    int M = st.cfg.rows[c], N = st.cfg.colsb[c] / 4, K = st.cfg.colsb[a] / 4;
    for (int m = 0; m < M; m++) {
        for (int n = 0; n < N; n++) {
            uint32_t acc;
            memcpy(&acc, st.t[c][m] + 4 * n, 4);
            for (int k = 0; k < K; k++)
                for (int i = 0; i < 4; i++) {
                    int32_t p = (int32_t)(int8_t)st.t[a][m][4 * k + i] * (int8_t)st.t[b][k][4 * n + i];
                    acc += (uint32_t)p; /* int32 with wrap-around */
                }
            memcpy(st.t[c][m] + 4 * n, &acc, 4);
        }
        memset(st.t[c][m] + 4 * N, 0, 64 - 4 * (size_t)N);
    }
    for (int m = M; m < 16; m++) memset(st.t[c][m], 0, 64);
}
