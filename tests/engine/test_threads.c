/* test_threads.c — the worker pool: every worker runs each job exactly once,
 * back to back (spinning workers) and after sleeping; tg_parallel_for covers
 * [0, n) exactly once in grain-aligned ranges and keeps small jobs on one
 * thread; bad sizes are refused. */
#include <criterion/criterion.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "engine/engine.h"

typedef struct count_ctx {
    atomic_int calls[8];
    atomic_int bad_nth;
    int want_nth;
} count_ctx;

static void count_task(void *p, int ith, int nth) {
    count_ctx *c = p;
    if (nth != c->want_nth || ith < 0 || ith >= nth) atomic_fetch_add(&c->bad_nth, 1);
    else atomic_fetch_add(&c->calls[ith], 1);
}

static void sleep_us(long us) {
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

/* Each of nth workers runs once per job, for pools of 1..4 and nth <= size;
 * half the jobs come after a pause long enough for the workers to sleep. */
Test(threads, each_worker_once) {
    for (int n = 1; n <= 4; n++) {
        tg_pool *pool;
        tg_err err;
        cr_assert(tg_pool_create(&pool, n, &err) == TG_OK, "%s", err.msg);
        cr_expect_eq(tg_pool_size(pool), n);
        for (int nth = 1; nth <= n; nth++) {
            for (int job = 0; job < 60; job++) {
                if (job % 20 == 19) sleep_us(2000); /* > the spin window: workers sleep */
                count_ctx c = {.want_nth = nth};
                tg_pool_run(pool, nth, count_task, &c);
                cr_expect_eq(atomic_load(&c.bad_nth), 0, "pool %d nth %d: wrong (ith, nth)", n, nth);
                for (int i = 0; i < 8; i++)
                    cr_expect_eq(atomic_load(&c.calls[i]), i < nth, "pool %d nth %d job %d: worker %d ran %d times",
                                 n, nth, job, i, atomic_load(&c.calls[i]));
            }
        }
        /* asking for more workers than the pool has runs on all of them */
        count_ctx c = {.want_nth = n};
        tg_pool_run(pool, n + 3, count_task, &c);
        for (int i = 0; i < n; i++) cr_expect_eq(atomic_load(&c.calls[i]), 1);
        tg_pool_free(pool);
    }
}

typedef struct cover_ctx {
    atomic_int *hits;
    int grain, n;
    atomic_int bad_range;
    atomic_int threads_used;
} cover_ctx;

static void cover_range(void *p, int i0, int i1, int ith) {
    cover_ctx *c = p;
    if (i0 % c->grain != 0 || (i1 % c->grain != 0 && i1 != c->n) || i0 >= i1)
        atomic_fetch_add(&c->bad_range, 1);
    for (int i = i0; i < i1; i++) atomic_fetch_add(&c->hits[i], 1);
    atomic_fetch_or(&c->threads_used, 1 << ith);
}

static int cover(tg_pool *pool, int n, int grain, double work, int *threads_used) {
    cover_ctx c = {.grain = grain, .n = n};
    c.hits = calloc((size_t)n + 1, sizeof *c.hits);
    cr_assert(c.hits);
    tg_parallel_for(pool, n, grain, work, cover_range, &c);
    int ok = atomic_load(&c.bad_range) == 0;
    for (int i = 0; i < n; i++) ok &= atomic_load(&c.hits[i]) == 1;
    *threads_used = atomic_load(&c.threads_used);
    free(c.hits);
    return ok;
}

Test(threads, parallel_for_covers_once) {
    tg_pool *pool;
    tg_err err;
    cr_assert(tg_pool_create(&pool, 3, &err) == TG_OK, "%s", err.msg);
    static const int ns[] = {1, 15, 16, 17, 47, 48, 49, 1000, 50257};
    static const int grains[] = {1, 16, 64};
    for (size_t a = 0; a < sizeof ns / sizeof ns[0]; a++)
        for (size_t g = 0; g < sizeof grains / sizeof grains[0]; g++) {
            int used;
            cr_expect(cover(pool, ns[a], grains[g], 1e12, &used), "n=%d grain=%d", ns[a], grains[g]);
            int blocks = (ns[a] + grains[g] - 1) / grains[g];
            int want = blocks < 3 ? (1 << blocks) - 1 : 7;
            cr_expect_eq(used, want, "n=%d grain=%d: threads used mask %#x, want %#x", ns[a],
                         grains[g], used, want);
        }
    /* tiny work stays on the caller */
    int used;
    cr_expect(cover(pool, 1000, 16, 1000.0, &used));
    cr_expect_eq(used, 1, "small job spread over threads (mask %#x)", used);
    tg_pool_free(pool);
}

Test(threads, bad_sizes) {
    tg_pool *pool = NULL;
    tg_err err;
    cr_expect_eq(tg_pool_create(&pool, 0, &err), TG_ERR_ARG);
    cr_expect(strstr(err.msg, "threads") != NULL, "message: %s", err.msg);
    cr_expect_eq(tg_pool_create(&pool, -3, &err), TG_ERR_ARG);
    cr_expect_eq(tg_pool_create(&pool, 100000, &err), TG_ERR_ARG);
    /* a NULL pool runs inline */
    count_ctx c = {.want_nth = 1};
    tg_pool_run(NULL, 4, count_task, &c);
    cr_expect_eq(atomic_load(&c.calls[0]), 1);
    cr_expect_eq(tg_pool_size(NULL), 1);
}
