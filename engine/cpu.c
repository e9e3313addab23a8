/* cpu.c — detect the CPU's SIMD features once, and choose an ISA level.
 * x86-64: cpuid for the instruction sets, XGETBV for the OS actually saving
 * the wider registers (a CPU with AVX-512 under an OS that does not enable
 * ZMM state must not use it). aarch64: AT_HWCAP. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define TG_X86 1
#if defined(__linux__) && defined(__x86_64__)
#include <sys/syscall.h>
#include <unistd.h>
#define TG_AMX_LINUX 1
#endif
#elif defined(__aarch64__)
#include <sys/auxv.h>
#include <asm/hwcap.h>
#define TG_ARM 1
#endif

static pthread_once_t detect_once = PTHREAD_ONCE_INIT;
static int supported[TG_ISA_COUNT];
static int features[TG_CPU_FEATURE_COUNT];

static const char *const feature_names[TG_CPU_FEATURE_COUNT] = {
    "f16c", "avx_vnni", "avx512_vnni", "avx512_bf16", "avx512_fp16", "dotprod", "fp16",
    "amx_tile", "amx_int8", "amx_bf16"};

static const char *const isa_names[TG_ISA_COUNT] = {"scalar", "avx2", "avx512", "neon"};

#ifdef TG_X86
static unsigned long long xgetbv0(void) {
    unsigned eax, edx;
    __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
    return ((unsigned long long)edx << 32) | eax;
}

static void detect_arch(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return;
    int osxsave = (c >> 27) & 1, fma = (c >> 12) & 1, avx = (c >> 28) & 1;
    int f16c = (c >> 29) & 1;
    if (!osxsave || !avx) return;
    unsigned long long xcr0 = xgetbv0();
    int ymm_os = (xcr0 & 0x6) == 0x6;    /* XMM and YMM state */
    int zmm_os = (xcr0 & 0xe6) == 0xe6;  /* + opmask, ZMM_Hi256, Hi16_ZMM */
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return;
    int avx2 = (b >> 5) & 1;
    int avx512f = (b >> 16) & 1, avx512dq = (b >> 17) & 1;
    int avx512bw = (b >> 30) & 1, avx512vl = (b >> 31) & 1;
    supported[TG_ISA_AVX2] = ymm_os && avx2 && fma && f16c;
    supported[TG_ISA_AVX512] = supported[TG_ISA_AVX2] && zmm_os && avx512f &&
                               avx512dq && avx512bw && avx512vl;
    int a512 = supported[TG_ISA_AVX512];
    features[TG_CPU_F16C] = ymm_os && f16c;
    features[TG_CPU_AVX512_VNNI] = a512 && ((c >> 11) & 1);
    features[TG_CPU_AVX512_FP16] = a512 && ((d >> 23) & 1);
    if (__get_cpuid_count(7, 1, &a, &b, &c, &d)) {
        features[TG_CPU_AVX_VNNI] = supported[TG_ISA_AVX2] && ((a >> 4) & 1);
        features[TG_CPU_AVX512_BF16] = a512 && ((a >> 5) & 1);
    }
    /* AMX: the CPU's bits and the OS's XTILECFG + XTILEDATA state (Linux's
     * permission is asked in amx_permission, after the mask) */
    if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
        int tile_os = (xcr0 & 0x60000) == 0x60000;
        features[TG_CPU_AMX_TILE] = tile_os && ((d >> 24) & 1);
        features[TG_CPU_AMX_INT8] = features[TG_CPU_AMX_TILE] && ((d >> 25) & 1);
        features[TG_CPU_AMX_BF16] = features[TG_CPU_AMX_TILE] && ((d >> 22) & 1);
    }
}


/* The largest data/unified cache of deterministic cache leaf `leaf`. */
static size_t det_cache_bytes(unsigned leaf) {
    size_t best = 0;
    int best_level = 0;
    for (unsigned i = 0; i < 16; i++) {
        unsigned a, b, c, d;
        __cpuid_count(leaf, i, a, b, c, d);
        if ((a & 31) == 0) break; /* no more caches */
        int level = 0;
        size_t sz = tg_cpuid_cache_leaf_bytes(a, b, c, &level);
        if (sz && (level > best_level || (level == best_level && sz > best)))
            best = sz, best_level = level;
    }
    return best;
}

size_t tg_cpu_cache_bytes(void) {
    unsigned a, b, c, d, max_ext = __get_cpuid_max(0x80000000, NULL);
    int topoext = max_ext >= 0x80000001 && __get_cpuid(0x80000001, &a, &b, &c, &d) &&
                  ((c >> 22) & 1);
    size_t sz = 0;
    if (topoext && max_ext >= 0x8000001D) sz = det_cache_bytes(0x8000001D);
    if (!sz && __get_cpuid_max(0, NULL) >= 4 && __get_cpuid(0, &a, &b, &c, &d) &&
        b == 0x756e6547 /* "Genu"ineIntel: leaf 4 is Intel's */)
        sz = det_cache_bytes(4);
    if (!sz && max_ext >= 0x80000006 && __get_cpuid(0x80000006, &a, &b, &c, &d)) {
        sz = tg_cpuid_amd_l3_bytes(d);
        if (!sz) sz = tg_cpuid_amd_l2_bytes(c);
    }
    return sz;
}
#elif defined(TG_ARM)
static void detect_arch(void) {
    unsigned long hw = getauxval(AT_HWCAP);
    supported[TG_ISA_NEON] = (hw & HWCAP_ASIMD) != 0;
    features[TG_CPU_NEON_DOTPROD] = supported[TG_ISA_NEON] && (hw & HWCAP_ASIMDDP) != 0;
    features[TG_CPU_NEON_FP16] = supported[TG_ISA_NEON] && (hw & HWCAP_ASIMDHP) != 0;
}
#else
static void detect_arch(void) {}
#endif

#ifndef TG_X86
size_t tg_cpu_cache_bytes(void) { return 0; }
#endif

/* $TINYGPT_CPU_MASK: optional features to ignore ("avx_vnni,avx512_vnni",
 * "amx_tile" (all of AMX), or "all"; the names of feature_names), so the
 * paths for CPUs without them are tested here too. One walk of its
 * comma-separated items serves detection and tg_cpu_mask_check: it clears
 * the features named in hide (NULL: none) and returns the first item that
 * names no feature (its length in *bad_len), or NULL. */
static const char *mask_walk(int *hide, size_t *bad_len) {
    const char *m = getenv("TINYGPT_CPU_MASK"), *bad = NULL;
    size_t len;
    for (const char *s = m ? m : ""; *s; s += len + (s[len] == ',')) {
        len = strcspn(s, ",");
        int all = len == 3 && !strncmp(s, "all", 3), known = len == 0 || all;
        for (int f = 0; f < TG_CPU_FEATURE_COUNT; f++) {
            if (!all && (strlen(feature_names[f]) != len || strncmp(s, feature_names[f], len))) continue;
            known = 1;
            if (hide) hide[f] = 0;
        }
        if (!known && !bad) bad = s, *bad_len = len;
    }
    return bad;
}

static void apply_mask(void) {
    size_t len;
    (void)mask_walk(features, &len); /* an unknown name: tg_isa_select reports it */
}

/* Linux grants the tile data state (8 KiB per thread) only on request
 * (arch_prctl ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA), once per process;
 * without it the first tile instruction faults. Other systems: not asked,
 * no AMX. */
#ifdef TG_AMX_LINUX
static int amx_os_grant(void) {
    return syscall(SYS_arch_prctl, (long)0x1023 /* ARCH_REQ_XCOMP_PERM */,
                   (long)18 /* XFEATURE_XTILEDATA */) == 0; /* syscall reads longs */
}
#else
static int amx_os_grant(void) { return 0; }
#endif

/* After the mask: INT8/BF16 need TILE, TILE alone is of no use, and the
 * permission is asked only while some AMX is still wanted (a masked AMX
 * never is); a refusal (an older kernel, a seccomp filter) leaves none. */
static void amx_permission(void) {
    if (!features[TG_CPU_AMX_TILE]) features[TG_CPU_AMX_INT8] = features[TG_CPU_AMX_BF16] = 0;
    if ((!features[TG_CPU_AMX_INT8] && !features[TG_CPU_AMX_BF16]) || !amx_os_grant())
        features[TG_CPU_AMX_TILE] = features[TG_CPU_AMX_INT8] = features[TG_CPU_AMX_BF16] = 0;
}

static void detect(void) {
    supported[TG_ISA_SCALAR] = 1;
    detect_arch();
    apply_mask();
    amx_permission();
}


size_t tg_cpuid_cache_leaf_bytes(unsigned eax, unsigned ebx, unsigned ecx, int *level) {
    unsigned type = eax & 31; /* 1 data, 2 instruction, 3 unified */
    *level = (int)((eax >> 5) & 7);
    if (type != 1 && type != 3) return 0;
    size_t ways = (ebx >> 22) + 1, parts = ((ebx >> 12) & 0x3ff) + 1, line = (ebx & 0xfff) + 1;
    return ways * parts * line * ((size_t)ecx + 1);
}

/* The associativity codes 0 (no cache) and 9 (fields in 0x8000001D) leave
 * the size field without meaning. */
size_t tg_cpuid_amd_l2_bytes(unsigned ecx) {
    unsigned assoc = (ecx >> 12) & 15;
    return assoc == 0 || assoc == 9 ? 0 : (size_t)(ecx >> 16) << 10;
}

size_t tg_cpuid_amd_l3_bytes(unsigned edx) {
    unsigned assoc = (edx >> 12) & 15;
    return assoc == 0 || assoc == 9 ? 0 : (size_t)(edx >> 18) << 19;
}

const char *tg_isa_name(tg_isa isa) {
    return (unsigned)isa < TG_ISA_COUNT ? isa_names[isa] : "unknown";
}

tg_status tg_isa_parse(const char *name, tg_isa *out) {
    for (int i = 0; i < TG_ISA_COUNT; i++)
        if (name && strcmp(name, isa_names[i]) == 0) {
            *out = (tg_isa)i;
            return TG_OK;
        }
    return TG_ERR_ARG;
}

int tg_cpu_has(tg_cpu_feature f) {
    pthread_once(&detect_once, detect);
    return (unsigned)f < TG_CPU_FEATURE_COUNT && features[f];
}

const char *tg_cpu_feature_name(tg_cpu_feature f) {
    return (unsigned)f < TG_CPU_FEATURE_COUNT ? feature_names[f] : "unknown";
}

int tg_isa_supported(tg_isa isa) {
    pthread_once(&detect_once, detect);
    return (unsigned)isa < TG_ISA_COUNT && supported[isa];
}

tg_isa tg_isa_best(void) {
    static const tg_isa order[] = {TG_ISA_AVX512, TG_ISA_AVX2, TG_ISA_NEON};
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++)
        if (tg_isa_supported(order[i])) return order[i];
    return TG_ISA_SCALAR;
}

tg_status tg_cpu_mask_check(tg_err *err) {
    size_t len;
    const char *s = mask_walk(NULL, &len);
    if (!s) return TG_OK;
    char names[160] = "";
    for (int f = 0; f < TG_CPU_FEATURE_COUNT; f++) {
        strncat(names, feature_names[f], sizeof names - strlen(names) - 1);
        strncat(names, ", ", sizeof names - strlen(names) - 1);
    }
    return tg_fail(err, TG_ERR_ARG, "TINYGPT_CPU_MASK: unknown feature '%.*s' (the names are %sall)",
                   (int)(len > 40 ? 40 : len), s, names);
}

tg_status tg_isa_select(const char *name, tg_isa *out, tg_err *err) {
    const char *src = "--isa";
    /* a misspelt mask would hide nothing and silently test the wrong path */
    tg_status ms = tg_cpu_mask_check(err);
    if (ms) return ms;
    if (!name || !*name) {
        name = getenv("TINYGPT_ISA");
        src = "TINYGPT_ISA";
    }
    if (!name || !*name) {
        *out = tg_isa_best();
        return TG_OK;
    }
    tg_isa isa;
    if (tg_isa_parse(name, &isa) != TG_OK)
        return tg_fail(err, TG_ERR_ARG, "%s: unknown ISA '%s' (expected scalar, avx2, avx512 or neon)",
                       src, name);
    if (!tg_isa_supported(isa))
        return tg_fail(err, TG_ERR_UNSUPPORTED, "%s: this CPU does not support %s (best available: %s)",
                       src, name, tg_isa_name(tg_isa_best()));
    *out = isa;
    return TG_OK;
}
