/* amx_tile.h — the tile vocabulary the AMX kernels (amx_tmpl.h) are written
 * in, so that one source is both the shipped kernel and a kernel that runs
 * on any CPU under a software model of the tile registers:
 *
 *   TILE_CONFIG(cfg)        ldtilecfg: load an amx_cfg (palette 1)
 *   TILE_RELEASE()          tilerelease: back to the init state
 *   TILE_ZERO(t)            tilezero tmm<t>
 *   TILE_LOAD(t, p, st)     tileloadd tmm<t>, rows of colsb bytes st apart
 *   TILE_STORE(t, p, st)    tilestored
 *   TILE_DPBF16PS(c, a, b)  tdpbf16ps tmm<c> += tmm<a> · tmm<b> (bf16 pairs)
 *   TILE_DPBSSD(c, a, b)    tdpbssd tmm<c> += tmm<a> · tmm<b> (s8 · s8 quads)
 *
 * Tile numbers are literal digits 0..7 (the instructions encode them).
 * Built with AMX_EMULATE defined (tests/engine/amx_emu.c), the macros call
 * that model instead of the instructions. */
#ifndef TINYGPT_AMX_TILE_H
#define TINYGPT_AMX_TILE_H
#include <stddef.h>
#include <stdint.h>

/* The 64-byte operand of ldtilecfg, palette 1: 8 tiles of up to 16 rows of
 * up to 64 bytes (Intel SDM, "Tile configuration"). Bytes 2..15 and the
 * entries of tiles 8..15 must be 0. */
typedef struct amx_cfg {
    uint8_t palette, start_row;
    uint8_t reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} amx_cfg;
_Static_assert(sizeof(amx_cfg) == 64, "ldtilecfg's operand is 64 bytes");

#ifdef AMX_EMULATE
void amx_emu_loadconfig(const amx_cfg *cfg);
void amx_emu_release(void);
void amx_emu_zero(int t);
void amx_emu_load(int t, const void *p, size_t stride);
void amx_emu_store(int t, void *p, size_t stride);
void amx_emu_dpbf16ps(int c, int a, int b);
void amx_emu_dpbssd(int c, int a, int b);
#define TILE_CONFIG(cfg) amx_emu_loadconfig(cfg)
#define TILE_RELEASE() amx_emu_release()
#define TILE_ZERO(t) amx_emu_zero(t)
#define TILE_LOAD(t, p, st) amx_emu_load((t), (p), (size_t)(st))
#define TILE_STORE(t, p, st) amx_emu_store((t), (p), (size_t)(st))
#define TILE_DPBF16PS(c, a, b) amx_emu_dpbf16ps((c), (a), (b))
#define TILE_DPBSSD(c, a, b) amx_emu_dpbssd((c), (a), (b))
#else
#include <immintrin.h>
/* GCC's ldtilecfg and tileloadd asm name no memory operand beyond the
 * pointer (tileloadd none at all): a compiler barrier first, so the stores
 * that filled the config, X and the panel are all done before they run */
#define TILE_BARRIER() __asm__ volatile("" ::: "memory")
#define TILE_CONFIG(cfg) \
    do { TILE_BARRIER(); _tile_loadconfig(cfg); } while (0)
#define TILE_RELEASE() _tile_release()
#define TILE_ZERO(t) _tile_zero(t)
#define TILE_LOAD(t, p, st) \
    do { TILE_BARRIER(); _tile_loadd(t, p, st); } while (0)
#define TILE_STORE(t, p, st) _tile_stored(t, p, st)
#define TILE_DPBF16PS(c, a, b) _tile_dpbf16ps(c, a, b)
#define TILE_DPBSSD(c, a, b) _tile_dpbssd(c, a, b)
#endif

#endif
