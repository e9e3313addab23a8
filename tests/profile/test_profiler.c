/* test_profiler.c — the profiler's attribution of time, calls and cost,
 * against hand-computed answers on synthetic events (exact timestamps), and
 * its coverage of a real multi-threaded job on the pool. */
#include <criterion/criterion.h>
#include <math.h>
#include <time.h>

#include "model/profiler.h"

static const tg_gpt2_config CFG = {.n_layer = 2, .n_head = 2, .n_embd = 8, .n_ctx = 64,
                                   .n_vocab = 16, .n_ff = 32, .ln_eps = 1e-5f};

static tg_profiler *make(int n_threads, tg_pool *pool, int keep) {
    tg_profiler *p;
    tg_err err;
    cr_assert_eq(tg_profiler_create(&p, &CFG, n_threads, pool, keep, 0, &err), TG_OK, "%s",
                 err.msg);
    return p;
}

static void end_step(tg_profiler *p, tg_phase ph, int T, int pos) {
    tg_err err;
    cr_assert_eq(tg_profiler_step_end(p, ph, T, pos, 1, 1, &err), TG_OK, "%s", err.msg);
}

static double ns_of(tg_profiler *p, tg_phase ph, tg_op op, int layer, int head) {
    return tg_profiler_stat(p, ph, op, layer, head).ns;
}

Test(profiler, overlapping_threads_share_wall_time) {
    tg_profiler *p = make(3, NULL, 0);
    tg_profiler_step_begin(p);
    /* thread 0: qkv [0,100); thread 1: scores head 1 [50,150);
     * thread 2: mix head 0 [75,100). Busy threads: [0,50) 1, [50,75) 2,
     * [75,100) 3, [100,150) 1. */
    tg_profiler_record(p, 0, TG_OP_QKV, 0, -1, 0, 100);
    tg_profiler_record(p, 1, TG_OP_ATTN_SCORES, 0, 1, 50, 150);
    tg_profiler_record(p, 2, TG_OP_ATTN_MIX, 0, 0, 75, 100);
    end_step(p, TG_PHASE_DECODE, 1, 4);
    double qkv = 50 + 25 / 2.0 + 25 / 3.0, scores = 25 / 2.0 + 25 / 3.0 + 50, mix = 25 / 3.0;
    cr_assert_float_eq(ns_of(p, TG_PHASE_DECODE, TG_OP_QKV, 0, -1), qkv, 1e-9);
    cr_assert_float_eq(ns_of(p, TG_PHASE_DECODE, TG_OP_ATTN_SCORES, 0, 1), scores, 1e-9);
    cr_assert_float_eq(ns_of(p, TG_PHASE_DECODE, TG_OP_ATTN_MIX, 0, 0), mix, 1e-9);
    cr_assert_float_eq(ns_of(p, TG_PHASE_DECODE, TG_OP_ATTN_SCORES, 0, 0), 0.0, 1e-9);
    tg_prof_phase ph = tg_profiler_phase(p, TG_PHASE_DECODE);
    cr_assert_float_eq(ph.op_ns, 150.0, 1e-9);
    cr_assert_float_eq(ph.busy_ns[0], 100.0, 1e-9);
    cr_assert_float_eq(ph.busy_ns[1], 100.0, 1e-9);
    cr_assert_float_eq(ph.busy_ns[2], 25.0, 1e-9);
    cr_assert_eq(ph.steps, 1);
    cr_assert_float_eq(tg_profiler_stat(p, TG_PHASE_PREFILL, TG_OP_QKV, TG_PROF_ALL, TG_PROF_ALL).ns,
                       0.0, 1e-9);
    tg_profiler_free(p);
}

Test(profiler, nested_events_are_exclusive) {
    tg_profiler *p = make(1, NULL, 0);
    tg_profiler_step_begin(p);
    /* proj [200,300) holds mix [220,250) and scores [250,260): recorded
     * inner first, as op_end does. Gaps [100,200) count for nothing. */
    tg_profiler_record(p, 0, TG_OP_ATTN_MIX, 1, 0, 220, 250);
    tg_profiler_record(p, 0, TG_OP_ATTN_SCORES, 1, 0, 250, 260);
    tg_profiler_record(p, 0, TG_OP_ATTN_PROJ, 1, -1, 200, 300);
    tg_profiler_record(p, 0, TG_OP_EMBED, -1, -1, 0, 100);
    end_step(p, TG_PHASE_PREFILL, 3, 0);
    cr_assert_float_eq(ns_of(p, TG_PHASE_PREFILL, TG_OP_ATTN_PROJ, 1, -1), 60.0, 1e-9);
    cr_assert_float_eq(ns_of(p, TG_PHASE_PREFILL, TG_OP_ATTN_MIX, 1, 0), 30.0, 1e-9);
    cr_assert_float_eq(ns_of(p, TG_PHASE_PREFILL, TG_OP_ATTN_SCORES, 1, 0), 10.0, 1e-9);
    cr_assert_float_eq(ns_of(p, TG_PHASE_PREFILL, TG_OP_EMBED, -1, -1), 100.0, 1e-9);
    cr_assert_float_eq(tg_profiler_phase(p, TG_PHASE_PREFILL).op_ns, 200.0, 1e-9);
    tg_profiler_free(p);
}

Test(profiler, calls_count_distinct_instances_per_step) {
    tg_profiler *p = make(2, NULL, 0);
    for (int step = 0; step < 3; step++) {
        tg_profiler_step_begin(p);
        uint64_t b = 1000 * (uint64_t)step;
        /* qkv split over both threads, scores of head 1 over 3 queries */
        tg_profiler_record(p, 0, TG_OP_QKV, 1, -1, b, b + 10);
        tg_profiler_record(p, 1, TG_OP_QKV, 1, -1, b, b + 10);
        for (int q = 0; q < 3; q++)
            tg_profiler_record(p, q % 2, TG_OP_ATTN_SCORES, 1, 1, b + 20 + 5 * q, b + 24 + 5 * q);
        end_step(p, TG_PHASE_DECODE, 1, step);
    }
    cr_assert_float_eq(tg_profiler_stat(p, TG_PHASE_DECODE, TG_OP_QKV, 1, -1).calls, 3.0, 0);
    cr_assert_float_eq(tg_profiler_stat(p, TG_PHASE_DECODE, TG_OP_ATTN_SCORES, 1, 1).calls, 3.0, 0);
    cr_assert_float_eq(
        tg_profiler_stat(p, TG_PHASE_DECODE, TG_OP_ATTN_SCORES, TG_PROF_ALL, TG_PROF_ALL).calls,
        3.0, 0);
    cr_assert(tg_profiler_has_heads(p, TG_PHASE_DECODE));
    cr_assert(!tg_profiler_has_heads(p, TG_PHASE_PREFILL));
    tg_profiler_free(p);
}

Test(profiler, costs_follow_opcount_per_layer_and_head) {
    tg_profiler *p = make(1, NULL, 0);
    tg_profiler_step_begin(p);
    tg_profiler_record(p, 0, TG_OP_ATTN_SCORES, 0, 0, 0, 10);
    end_step(p, TG_PHASE_PREFILL, 5, 0);
    for (int pos = 5; pos < 8; pos++) {
        tg_profiler_step_begin(p);
        tg_profiler_record(p, 0, TG_OP_ATTN_SCORES, 0, 0, 0, 10);
        end_step(p, TG_PHASE_DECODE, 1, pos);
    }
    for (int op = 0; op < TG_OP_COUNT; op++) {
        tg_opcost want = {0};
        for (int pos = 5; pos < 8; pos++)
            want = tg_opcost_add(want, tg_opcost_step(&CFG, (tg_op)op, 1, pos, 1));
        tg_prof_stat all = tg_profiler_stat(p, TG_PHASE_DECODE, (tg_op)op, TG_PROF_ALL, TG_PROF_ALL);
        cr_assert_float_eq(all.cost.flops, want.flops, 1e-9 * want.flops, "op %d", op);
        cr_assert_float_eq(tg_opcost_bytes(all.cost), tg_opcost_bytes(want),
                           1e-9 * tg_opcost_bytes(want), "op %d", op);
        /* The per-layer (and per-head) shares add back up to the total. */
        double sum = 0;
        for (int l = -1; l < CFG.n_layer; l++)
            for (int h = -1; h < CFG.n_head; h++)
                sum += tg_profiler_stat(p, TG_PHASE_DECODE, (tg_op)op, l, h).cost.flops;
        cr_assert_float_eq(sum, want.flops, 1e-9 * want.flops, "op %d", op);
    }
    /* One head of one layer of attn_scores: the step's cost / (L·H). */
    tg_prof_stat one = tg_profiler_stat(p, TG_PHASE_DECODE, TG_OP_ATTN_SCORES, 1, 0);
    double want = 0;
    for (int pos = 5; pos < 8; pos++)
        want += tg_opcost_step(&CFG, TG_OP_ATTN_SCORES, 1, pos, 1).flops;
    cr_assert_float_eq(one.cost.flops, want / (CFG.n_layer * CFG.n_head), 1e-9 * want);
    tg_prof_phase ph = tg_profiler_phase(p, TG_PHASE_DECODE);
    cr_assert_eq(ph.steps, 3);
    cr_assert_eq(ph.tokens, 3);
    tg_profiler_free(p);
}

Test(profiler, unbalanced_events_are_flagged_not_fatal) {
    tg_profiler *p = make(2, NULL, 1);
    const tg_probe *pr = tg_profiler_probe(p);
    tg_profiler_step_begin(p);
    pr->op_end(pr->user, TG_OP_QKV, 0, -1, 0);          /* end without begin */
    pr->op_begin(pr->user, TG_OP_LN1, 0, -1, 1);
    pr->op_end(pr->user, TG_OP_LN2, 0, -1, 1);          /* wrong op */
    pr->op_begin(pr->user, TG_OP_GELU, 0, -1, 7);       /* ith out of range: ignored */
    pr->op_begin(pr->user, TG_OP_GELU, 0, -1, 0);       /* left open */
    end_step(p, TG_PHASE_DECODE, 1, 0);
    size_t n;
    int truncated;
    tg_profiler_events(p, &n, &truncated);
    cr_assert(truncated);
    tg_profiler_free(p);
}

/* ---- a real job on the pool ---------------------------------------------------- */

typedef struct spin_job {
    const tg_probe *pr;
    int layer;
} spin_job;

static void spin(double us) {
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do clock_gettime(CLOCK_MONOTONIC, &b);
    while ((b.tv_sec - a.tv_sec) * 1e6 + (b.tv_nsec - a.tv_nsec) * 1e-3 < us);
}

/* Like the forward pass's attention: every worker times its own heads;
 * thread 0 takes more, so the others wait. */
static void heads_task(void *ctx, int ith, int nth) {
    spin_job *j = ctx;
    for (int h = ith; h < CFG.n_head; h += nth) {
        j->pr->op_begin(j->pr->user, TG_OP_ATTN_SCORES, j->layer, h, ith);
        spin(ith == 0 ? 300 : 100);
        j->pr->op_end(j->pr->user, TG_OP_ATTN_SCORES, j->layer, h, ith);
    }
}

Test(profiler, ops_cover_the_wall_time_of_a_threaded_step) {
    tg_pool *pool;
    tg_err err;
    cr_assert_eq(tg_pool_create(&pool, 2, &err), TG_OK);
    tg_profiler *p = make(2, pool, 1);
    const tg_probe *pr = tg_profiler_probe(p);
    for (int step = 0; step < 5; step++) {
        tg_profiler_step_begin(p);
        for (int l = 0; l < CFG.n_layer; l++) {
            pr->op_begin(pr->user, TG_OP_QKV, l, -1, 0); /* on the caller alone */
            spin(200);
            pr->op_end(pr->user, TG_OP_QKV, l, -1, 0);
            spin_job j = {pr, l};
            tg_pool_run(pool, 2, heads_task, &j);
        }
        end_step(p, TG_PHASE_DECODE, 1, step);
    }
    tg_prof_phase ph = tg_profiler_phase(p, TG_PHASE_DECODE);
    double sum = 0;
    for (int op = 0; op < TG_OP_COUNT; op++)
        sum += tg_profiler_stat(p, TG_PHASE_DECODE, (tg_op)op, TG_PROF_ALL, TG_PROF_ALL).ns;
    cr_assert_float_eq(sum, ph.op_ns, 1e-6 * ph.op_ns);
    /* Every op lasts at least its spin: per layer qkv (200 µs) then thread
     * 0's head (300 µs) run one after the other. How much wall time falls
     * between ops (wake-ups) depends on the machine, so only bounds. */
    cr_assert_geq(sum, 5 * CFG.n_layer * 500e3, "ops %.0f ns", sum);
    cr_assert_leq(sum, ph.wall_ns * (1 + 1e-9), "ops %.0f ns of %.0f ns wall", sum, ph.wall_ns);
    cr_assert_geq(ph.busy_ns[1], 5 * CFG.n_layer * 100e3);
    size_t n;
    int truncated;
    const tg_prof_event *ev = tg_profiler_events(p, &n, &truncated);
    cr_assert(!truncated);
    cr_assert_eq(n, 5 * CFG.n_layer * (1 + CFG.n_head));
    for (size_t i = 0; i < n; i++) cr_assert_leq(ev[i].t0, ev[i].t1);
    size_t n_steps;
    tg_profiler_steps(p, &n_steps);
    cr_assert_eq(n_steps, 5);
    tg_profiler_free(p);
    tg_pool_free(pool);
}
