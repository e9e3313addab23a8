/* test_isa.c — choosing the ISA: $TINYGPT_ISA and tg_isa_select (an explicit
 * name wins over the environment; an unknown name or an ISA this CPU lacks is
 * an error naming it), and tg_engine_init filling every entry of the kernel
 * table for every supported ISA. Criterion runs each test in its own process,
 * so setenv here does not leak between tests. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"

/* What this architecture can never run (the other family's ISAs), and the
 * one it always has under Linux (every aarch64 CPU has Advanced SIMD). */
#if defined(__x86_64__)
static const tg_isa foreign[] = {TG_ISA_NEON};
#define ARCH_X86 1
#elif defined(__aarch64__)
static const tg_isa foreign[] = {TG_ISA_AVX2, TG_ISA_AVX512};
#define ARCH_ARM 1
#else
static const tg_isa foreign[] = {TG_ISA_AVX2, TG_ISA_AVX512, TG_ISA_NEON};
#endif
#define N_FOREIGN ((int)(sizeof foreign / sizeof foreign[0]))

/* The table holds only kernel pointers; view it as an array of them so a
 * kernel added later is checked without editing this test. */
typedef void (*any_fn)(void);
#define N_KERNELS ((int)(sizeof(tg_kernels) / sizeof(any_fn)))
_Static_assert(sizeof(tg_kernels) % sizeof(any_fn) == 0, "tg_kernels holds only pointers");

static any_fn kernel_at(const tg_kernels *k, int i) {
    any_fn f;
    memcpy(&f, (const char *)k + (size_t)i * sizeof f, sizeof f);
    return f;
}

static void clear_env(void) { unsetenv("TINYGPT_ISA"); }

TestSuite(isa, .init = clear_env);

Test(isa, names_round_trip) {
    for (int i = 0; i < TG_ISA_COUNT; i++) {
        tg_isa got = TG_ISA_COUNT;
        const char *name = tg_isa_name((tg_isa)i);
        cr_assert_eq(tg_isa_parse(name, &got), TG_OK, "parse '%s'", name);
        cr_expect_eq(got, (tg_isa)i, "'%s' parsed to %d", name, got);
    }
    tg_isa out;
    const char *bad[] = {"", "AVX2", "avx", "sse4", "neon ", "scalar2"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_expect_eq(tg_isa_parse(bad[i], &out), TG_ERR_ARG, "parse '%s'", bad[i]);
    cr_expect_eq(tg_isa_parse(NULL, &out), TG_ERR_ARG);
    cr_expect_str_eq(tg_isa_name(TG_ISA_COUNT), "unknown");
}

Test(isa, scalar_always_supported_and_best_is_supported) {
    cr_expect(tg_isa_supported(TG_ISA_SCALAR));
    cr_expect(tg_isa_supported(tg_isa_best()), "best ISA %s not supported",
              tg_isa_name(tg_isa_best()));
    cr_expect(!tg_isa_supported(TG_ISA_COUNT));
    cr_expect(!tg_isa_supported((tg_isa)-1));
}

Test(isa, foreign_isas_unsupported) {
    for (int i = 0; i < N_FOREIGN; i++)
        cr_expect(!tg_isa_supported(foreign[i]), "%s reported on this architecture",
                  tg_isa_name(foreign[i]));
#ifdef ARCH_ARM
    cr_expect(tg_isa_supported(TG_ISA_NEON), "aarch64 without Advanced SIMD?");
    cr_expect_eq(tg_isa_best(), TG_ISA_NEON);
#endif
}

#ifdef ARCH_X86
/* Does /proc/cpuinfo's first "flags" line list `flag`? (An oracle
 * independent of our cpuid code: the kernel fills it, and clears the AVX
 * flags when it does not save the wider registers.) */
static int cpuinfo_has(const char *flag) {
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return -1;
    static char line[16384];
    int found = -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "flags", 5) == 0) {
            found = 0;
            for (char *tok = strtok(strchr(line, ':') + 1, " \t\n"); tok;
                 tok = strtok(NULL, " \t\n"))
                if (strcmp(tok, flag) == 0) found = 1;
            break;
        }
    fclose(f);
    return found;
}

Test(isa, x86_detection_agrees_with_proc_cpuinfo) {
    int avx2 = cpuinfo_has("avx2"), fma = cpuinfo_has("fma"), f16c = cpuinfo_has("f16c");
    if (avx2 < 0) cr_skip_test("no /proc/cpuinfo flags");
    int avx512 = cpuinfo_has("avx512f") == 1 && cpuinfo_has("avx512bw") == 1 &&
                 cpuinfo_has("avx512vl") == 1 && cpuinfo_has("avx512dq") == 1;
    int want_avx2 = avx2 == 1 && fma == 1 && f16c == 1;
    cr_expect_eq(tg_isa_supported(TG_ISA_AVX2), want_avx2);
    cr_expect_eq(tg_isa_supported(TG_ISA_AVX512), want_avx2 && avx512);
}
#endif

Test(isa, no_name_no_env_gives_best) {
    tg_isa out = TG_ISA_COUNT;
    tg_err err = {{0}};
    cr_assert_eq(tg_isa_select(NULL, &out, &err), TG_OK, "%s", err.msg);
    cr_expect_eq(out, tg_isa_best());
    setenv("TINYGPT_ISA", "", 1); /* set but empty: same as unset */
    cr_assert_eq(tg_isa_select("", &out, &err), TG_OK, "%s", err.msg);
    cr_expect_eq(out, tg_isa_best());
}

Test(isa, env_selects_every_supported_isa) {
    for (int i = 0; i < TG_ISA_COUNT; i++) {
        if (!tg_isa_supported((tg_isa)i)) continue;
        setenv("TINYGPT_ISA", tg_isa_name((tg_isa)i), 1);
        tg_isa out = TG_ISA_COUNT;
        tg_err err = {{0}};
        cr_expect_eq(tg_isa_select(NULL, &out, &err), TG_OK, "%s", err.msg);
        cr_expect_eq(out, (tg_isa)i, "TINYGPT_ISA=%s gave %s", tg_isa_name((tg_isa)i),
                     tg_isa_name(out));
    }
}

Test(isa, explicit_name_wins_over_env) {
    tg_isa out = TG_ISA_COUNT;
    tg_err err = {{0}};
    /* An env value that would fail on its own must not matter... */
    setenv("TINYGPT_ISA", "bogus", 1);
    cr_expect_eq(tg_isa_select("scalar", &out, &err), TG_OK, "%s", err.msg);
    cr_expect_eq(out, TG_ISA_SCALAR);
    /* ...nor one that would succeed with a different answer. */
    setenv("TINYGPT_ISA", tg_isa_name(tg_isa_best()), 1);
    cr_expect_eq(tg_isa_select("scalar", &out, &err), TG_OK, "%s", err.msg);
    cr_expect_eq(out, TG_ISA_SCALAR);
    /* And a bad explicit name fails even when the env is fine. */
    setenv("TINYGPT_ISA", "scalar", 1);
    cr_expect_eq(tg_isa_select("avx3", &out, &err), TG_ERR_ARG);
}

Test(isa, unknown_name_is_arg_error_naming_it) {
    tg_isa out = TG_ISA_SCALAR;
    tg_err err = {{0}};
    cr_assert_eq(tg_isa_select("sse9", &out, &err), TG_ERR_ARG);
    cr_expect(strstr(err.msg, "'sse9'") != NULL, "message does not name it: %s", err.msg);
    cr_expect(strstr(err.msg, "--isa") != NULL, "message does not say where: %s", err.msg);
    cr_expect(strchr(err.msg, '\n') == NULL, "not one line: %s", err.msg);

    memset(&err, 0, sizeof err);
    setenv("TINYGPT_ISA", "avx1024", 1);
    cr_assert_eq(tg_isa_select(NULL, &out, &err), TG_ERR_ARG);
    cr_expect(strstr(err.msg, "'avx1024'") != NULL, "message does not name it: %s", err.msg);
    cr_expect(strstr(err.msg, "TINYGPT_ISA") != NULL, "message does not say where: %s", err.msg);

    /* A NULL err is allowed (the caller only wants the status). */
    cr_expect_eq(tg_isa_select("nope", &out, NULL), TG_ERR_ARG);
}

/* A misspelt $TINYGPT_CPU_MASK ("avx512", a feature name without its
 * suffix) hid nothing: the run silently took the paths it meant to avoid. */
Test(isa, unknown_mask_feature_is_arg_error_naming_it) {
    tg_isa out = TG_ISA_SCALAR;
    tg_err err = {{0}};
    clear_env();
    const char *bad[] = {"avx512", "avx512_vnni,avx512vnni", "ALL", " f16c"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv("TINYGPT_CPU_MASK", bad[i], 1);
        memset(&err, 0, sizeof err);
        cr_assert_eq(tg_isa_select(NULL, &out, &err), TG_ERR_ARG, "mask '%s' accepted", bad[i]);
        cr_expect(strstr(err.msg, "TINYGPT_CPU_MASK") && strstr(err.msg, "unknown feature"), "%s", err.msg);
        cr_expect(strchr(err.msg, '\n') == NULL, "not one line: %s", err.msg);
        cr_expect_eq(tg_cpu_mask_check(NULL), TG_ERR_ARG);
    }
    cr_expect(strstr(err.msg, "' f16c'"), "the message names the bad item: %s", err.msg);
    const char *good[] = {"", "all", "avx512_vnni,avx_vnni", "amx_tile,", ",f16c", "dotprod,fp16"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        setenv("TINYGPT_CPU_MASK", good[i], 1);
        cr_expect_eq(tg_isa_select(NULL, &out, &err), TG_OK, "mask '%s': %s", good[i], err.msg);
    }
    unsetenv("TINYGPT_CPU_MASK");
}

Test(isa, isa_the_cpu_lacks_is_unsupported_error) {
    for (int i = 0; i < N_FOREIGN; i++) {
        const char *name = tg_isa_name(foreign[i]);
        tg_isa out = TG_ISA_SCALAR;
        tg_err err = {{0}};
        cr_expect_eq(tg_isa_select(name, &out, &err), TG_ERR_UNSUPPORTED, "--isa %s", name);
        cr_expect(strstr(err.msg, name) != NULL, "message does not name %s: %s", name, err.msg);

        memset(&err, 0, sizeof err);
        setenv("TINYGPT_ISA", name, 1);
        cr_expect_eq(tg_isa_select(NULL, &out, &err), TG_ERR_UNSUPPORTED,
                     "TINYGPT_ISA=%s", name);
        cr_expect(strstr(err.msg, "TINYGPT_ISA") != NULL, "%s", err.msg);
        unsetenv("TINYGPT_ISA");

        tg_engine e;
        memset(&err, 0, sizeof err);
        cr_expect_eq(tg_engine_init(&e, foreign[i], &err), TG_ERR_UNSUPPORTED);
        cr_expect(strstr(err.msg, name) != NULL, "%s", err.msg);
    }
    /* Every ISA the CPU lacks, not only the other family's. */
    for (int i = 0; i < TG_ISA_COUNT; i++) {
        if (tg_isa_supported((tg_isa)i)) continue;
        tg_isa out;
        cr_expect_eq(tg_isa_select(tg_isa_name((tg_isa)i), &out, NULL), TG_ERR_UNSUPPORTED);
    }
    tg_engine e;
    cr_expect_eq(tg_engine_init(&e, TG_ISA_COUNT, NULL), TG_ERR_UNSUPPORTED);
}

Test(isa, engine_init_fills_every_entry) {
    cr_assert_gt(N_KERNELS, 0);
    for (int i = 0; i < TG_ISA_COUNT; i++) {
        if (!tg_isa_supported((tg_isa)i)) continue;
        tg_engine e;
        memset(&e, 0, sizeof e);
        tg_err err = {{0}};
        cr_assert_eq(tg_engine_init(&e, (tg_isa)i, &err), TG_OK, "%s", err.msg);
        cr_expect_eq(e.isa, (tg_isa)i);
        for (int j = 0; j < N_KERNELS; j++)
            cr_expect(kernel_at(&e.k, j) != NULL, "%s: table entry %d left empty",
                      tg_isa_name((tg_isa)i), j);
    }
}

Test(isa, scalar_engine_is_the_reference) {
    tg_kernels ref;
    memset(&ref, 0, sizeof ref);
    tg_kernels_init_ref(&ref);
    setenv("TINYGPT_ISA", "scalar", 1);
    tg_isa isa;
    cr_assert_eq(tg_isa_select(NULL, &isa, NULL), TG_OK);
    tg_engine e;
    cr_assert_eq(tg_engine_init(&e, isa, NULL), TG_OK);
    for (int j = 0; j < N_KERNELS; j++)
        cr_expect(kernel_at(&e.k, j) == kernel_at(&ref, j), "scalar entry %d is not the reference", j);
}

/* Every SIMD ISA replaces each of these kernels (a table entry left at the C
 * reference would pass every comparison test unnoticed). A kernel added to
 * the table later joins this list once its SIMD versions exist. */
Test(isa, simd_isas_upgrade_every_kernel) {
    tg_kernels ref;
    tg_kernels_init_ref(&ref);
    for (int i = 1; i < TG_ISA_COUNT; i++) {
        if (!tg_isa_supported((tg_isa)i)) continue;
        tg_engine e;
        cr_assert_eq(tg_engine_init(&e, (tg_isa)i, NULL), TG_OK);
        const char *isa = tg_isa_name((tg_isa)i);
#define UPGRADED(f) cr_expect(e.k.f != ref.f, "%s: " #f " is still the C reference", isa)
        UPGRADED(matmul);
        UPGRADED(softmax);
        UPGRADED(layernorm);
        UPGRADED(gelu);
        UPGRADED(add);
        UPGRADED(attn_scores);
        UPGRADED(attn_mix);
        UPGRADED(attn_decode);
        UPGRADED(attn_prefill);
        UPGRADED(gemm);
        UPGRADED(layernorm_bwd);
        UPGRADED(gelu_bwd);
        UPGRADED(softmax_bwd);
#undef UPGRADED
    }
}
