/* test_isa.c — choosing the ISA: names, $TINYGPT_ISA and an explicit name
 * (which wins), clear errors for unknown names and for ISAs this CPU lacks,
 * and the kernel table really upgraded for each supported ISA. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"

static const char *const names[TG_ISA_COUNT] = {"scalar", "avx2", "avx512", "neon"};

Test(isa, parse_names) {
    for (int i = 0; i < TG_ISA_COUNT; i++) {
        tg_isa isa;
        cr_expect_eq(tg_isa_parse(names[i], &isa), TG_OK, "%s", names[i]);
        cr_expect_eq(isa, (tg_isa)i);
        cr_expect_str_eq(tg_isa_name((tg_isa)i), names[i]);
    }
    tg_isa isa;
    cr_expect_eq(tg_isa_parse("AVX2", &isa), TG_ERR_ARG);
    cr_expect_eq(tg_isa_parse("", &isa), TG_ERR_ARG);
    cr_expect_eq(tg_isa_parse(NULL, &isa), TG_ERR_ARG);
    cr_expect(tg_isa_supported(TG_ISA_SCALAR));
    cr_expect(!tg_isa_supported(TG_ISA_COUNT));
    cr_expect(tg_isa_supported(tg_isa_best()));
}

Test(isa, select_env_and_flag) {
    tg_err err;
    tg_isa isa;
    unsetenv("TINYGPT_ISA");
    cr_expect_eq(tg_isa_select(NULL, &isa, &err), TG_OK);
    cr_expect_eq(isa, tg_isa_best());
    for (int i = 0; i < TG_ISA_COUNT; i++) {
        if (!tg_isa_supported((tg_isa)i)) continue;
        setenv("TINYGPT_ISA", names[i], 1);
        cr_expect_eq(tg_isa_select(NULL, &isa, &err), TG_OK, "%s", err.msg);
        cr_expect_eq(isa, (tg_isa)i, "TINYGPT_ISA=%s chose %s", names[i], tg_isa_name(isa));
        /* an explicit name beats the environment */
        setenv("TINYGPT_ISA", "bogus", 1);
        cr_expect_eq(tg_isa_select(names[i], &isa, &err), TG_OK, "%s", err.msg);
        cr_expect_eq(isa, (tg_isa)i);
    }
    setenv("TINYGPT_ISA", "bogus", 1);
    cr_expect_eq(tg_isa_select(NULL, &isa, &err), TG_ERR_ARG);
    cr_expect(strstr(err.msg, "TINYGPT_ISA") && strstr(err.msg, "bogus"), "message: %s", err.msg);
    cr_expect_eq(tg_isa_select("sse9", &isa, &err), TG_ERR_ARG);
    cr_expect(strstr(err.msg, "sse9") != NULL, "message: %s", err.msg);
    unsetenv("TINYGPT_ISA");
}

Test(isa, unsupported_is_an_error) {
    int tried = 0;
    for (int i = 0; i < TG_ISA_COUNT; i++) {
        if (tg_isa_supported((tg_isa)i)) continue;
        tried++;
        tg_err err;
        tg_isa isa;
        cr_expect_eq(tg_isa_select(names[i], &isa, &err), TG_ERR_UNSUPPORTED, "%s", names[i]);
        cr_expect(strstr(err.msg, names[i]) != NULL, "message: %s", err.msg);
        tg_engine e;
        cr_expect_eq(tg_engine_init(&e, (tg_isa)i, &err), TG_ERR_UNSUPPORTED, "%s", names[i]);
        cr_expect(strstr(err.msg, names[i]) != NULL, "message: %s", err.msg);
    }
    /* x86 lacks neon and aarch64 lacks avx2: some ISA is always missing */
    cr_expect(tried > 0);
}

/* Every supported ISA above scalar replaces at least one kernel. */
Test(isa, table_upgraded) {
    tg_engine ref;
    tg_err err;
    cr_assert_eq(tg_engine_init(&ref, TG_ISA_SCALAR, &err), TG_OK, "%s", err.msg);
    for (int i = 1; i < TG_ISA_COUNT; i++) {
        if (!tg_isa_supported((tg_isa)i)) continue;
        tg_engine e;
        cr_assert_eq(tg_engine_init(&e, (tg_isa)i, &err), TG_OK, "%s", err.msg);
        cr_expect_eq(e.isa, (tg_isa)i);
        cr_expect(memcmp(&e.k, &ref.k, sizeof e.k) != 0, "%s: the table is still the C reference",
                  names[i]);
    }
}
