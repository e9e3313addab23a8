/* threads.c — a persistent worker pool. The caller is worker 0; workers
 * 1..n-1 wait for a job — spinning for SPIN_NS, then sleeping on a condition
 * variable — run fn(ctx, ith, nth), and check in at a counter the caller
 * waits on (spinning, then sleeping, the same way).
 *
 * A spinner that has waited YIELD_NS starts yielding the CPU, so that on an
 * oversubscribed machine it does not hold up the very thread it waits for.
 *
 * The mutex is only taken when someone is asleep: a job published to
 * spinning workers costs one atomic increment and one cache-line transfer
 * each way. `sleepers` and `caller_asleep` are the handshake that makes the
 * fast path safe: a thread announces it is about to sleep, then re-checks
 * its condition under the mutex; the other side changes the condition, then
 * looks at the announcement (both seq_cst, so one of them sees the other). */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "engine/engine.h"

#if defined(__x86_64__) || defined(__i386__)
#define cpu_relax() __builtin_ia32_pause()
#elif defined(__aarch64__)
#define cpu_relax() __asm__ volatile("yield" ::: "memory")
#else
#define cpu_relax() ((void)0)
#endif

/* How long an idle thread spins before sleeping. Decode runs a matmul every
 * few µs to tens of µs; 200 µs keeps workers awake through a token (a
 * futex wake costs 5-50 µs here) and lets them sleep when generation stops. */
#define SPIN_NS 200000u
/* How long a spinner runs before it also yields the CPU at each clock look. */
#define YIELD_NS 50000u
/* Below this much work per thread (flops, or bytes for memory-bound
 * kernels) a job stays on one thread: handing a job to a spinning worker
 * and waiting for it costs about 1 µs, which is ~1e5 flops of GEMM or
 * ~5e4 bytes of GEMV; a 4x margin keeps 2 threads from being slower than 1
 * (bench/README.md). */
#define MIN_WORK_PER_THREAD 500000.0

struct tg_pool {
    int n;
    pthread_t *threads;
    pthread_mutex_t mu;
    pthread_cond_t wake;      /* workers sleep here */
    pthread_cond_t done_cv;   /* the caller sleeps here */
    atomic_uint generation;   /* bumped (release) to publish a job */
    atomic_int pending;       /* workers still running the current job */
    atomic_int sleepers;      /* workers asleep or about to be */
    atomic_int caller_asleep; /* the caller is asleep or about to be */
    int job_nth;
    tg_task_fn fn;
    void *ctx;
    atomic_int quit;
    atomic_uint_fast64_t wait_ns;
};

typedef struct worker_arg {
    tg_pool *pool;
    int ith;
} worker_arg;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* One step of a spin-wait that started at *t0 (0: not yet), on the i-th
 * iteration: pause; every 64 iterations look at the clock; after YIELD_NS
 * of spinning also yield the CPU at each look. Returns 1 once SPIN_NS have
 * passed (time to sleep). Yielding only late matters: a sched_yield costs
 * ~8 µs on the VM this was measured on, so yielding from the start made
 * every job handed to a spinning worker cost ~17 µs (bench_kernels --kernel
 * pool) instead of ~0.2 µs; on an oversubscribed machine a spinner still
 * gives way after YIELD_NS. */
static int spin_step(unsigned i, uint64_t *t0) {
    cpu_relax();
    if (i % 64) return 0;
    uint64_t t = now_ns();
    if (!*t0) {
        *t0 = t;
        return 0;
    }
    if (t - *t0 > YIELD_NS) sched_yield();
    return t - *t0 > SPIN_NS;
}

/* Spins until *gen != seen or SPIN_NS pass; returns the generation seen. */
static unsigned spin_for_job(tg_pool *pool, unsigned seen) {
    uint64_t t0 = 0;
    for (unsigned i = 1;; i++) {
        unsigned gen = atomic_load_explicit(&pool->generation, memory_order_acquire);
        if (gen != seen || spin_step(i, &t0)) return gen;
    }
}

static void *worker_main(void *p) {
    worker_arg *wa = p;
    tg_pool *pool = wa->pool;
    int ith = wa->ith;
    free(wa);
    unsigned seen = 0;
    for (;;) {
        unsigned gen = spin_for_job(pool, seen);
        if (gen == seen) {
            pthread_mutex_lock(&pool->mu);
            atomic_fetch_add(&pool->sleepers, 1);
            while ((gen = atomic_load(&pool->generation)) == seen)
                pthread_cond_wait(&pool->wake, &pool->mu);
            atomic_fetch_sub(&pool->sleepers, 1);
            pthread_mutex_unlock(&pool->mu);
        }
        if (atomic_load(&pool->quit)) return NULL;
        seen = gen;
        if (ith < pool->job_nth) pool->fn(pool->ctx, ith, pool->job_nth);
        if (atomic_fetch_sub(&pool->pending, 1) == 1 && atomic_load(&pool->caller_asleep)) {
            pthread_mutex_lock(&pool->mu);
            pthread_cond_signal(&pool->done_cv);
            pthread_mutex_unlock(&pool->mu);
        }
    }
}

tg_status tg_pool_create(tg_pool **out, int n_threads, tg_err *err) {
    if (n_threads < 1 || n_threads > 1024)
        return tg_fail(err, TG_ERR_ARG, "threads: %d threads requested (allowed 1..1024)", n_threads);
    tg_pool *pool = calloc(1, sizeof *pool);
    if (!pool) return tg_fail(err, TG_ERR_NOMEM, "threads: out of memory");
    pool->n = n_threads;
    pthread_mutex_init(&pool->mu, NULL);
    pthread_cond_init(&pool->wake, NULL);
    pthread_cond_init(&pool->done_cv, NULL);
    pool->threads = calloc((size_t)n_threads, sizeof *pool->threads);
    if (!pool->threads) {
        free(pool);
        return tg_fail(err, TG_ERR_NOMEM, "threads: out of memory");
    }
    for (int i = 1; i < n_threads; i++) {
        worker_arg *wa = malloc(sizeof *wa);
        if (wa) *wa = (worker_arg){pool, i};
        if (!wa || pthread_create(&pool->threads[i], NULL, worker_main, wa) != 0) {
            free(wa);
            pool->n = i; /* free only the workers that started */
            tg_pool_free(pool);
            return tg_fail(err, TG_ERR_NOMEM, "threads: cannot start worker %d", i);
        }
    }
    *out = pool;
    return TG_OK;
}

void tg_pool_free(tg_pool *pool) {
    if (!pool) return;
    pthread_mutex_lock(&pool->mu);
    atomic_store(&pool->quit, 1);
    atomic_fetch_add(&pool->generation, 1);
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->mu);
    for (int i = 1; i < pool->n; i++) pthread_join(pool->threads[i], NULL);
    pthread_mutex_destroy(&pool->mu);
    pthread_cond_destroy(&pool->wake);
    pthread_cond_destroy(&pool->done_cv);
    free(pool->threads);
    free(pool);
}

int tg_pool_size(const tg_pool *pool) { return pool ? pool->n : 1; }

void tg_pool_run(tg_pool *pool, int nth, tg_task_fn fn, void *ctx) {
    if (!pool || nth <= 1 || pool->n == 1) {
        fn(ctx, 0, 1);
        return;
    }
    if (nth > pool->n) nth = pool->n;
    pool->fn = fn;
    pool->ctx = ctx;
    pool->job_nth = nth;
    atomic_store(&pool->pending, pool->n - 1);
    atomic_fetch_add(&pool->generation, 1); /* publishes fn, ctx, job_nth */
    if (atomic_load(&pool->sleepers) > 0) {
        pthread_mutex_lock(&pool->mu);
        pthread_cond_broadcast(&pool->wake);
        pthread_mutex_unlock(&pool->mu);
    }
    fn(ctx, 0, nth);
    uint64_t t0 = now_ns();
    uint64_t spin_t0 = 0;
    for (unsigned i = 1; atomic_load_explicit(&pool->pending, memory_order_acquire) > 0; i++) {
        if (spin_step(i, &spin_t0)) {
            pthread_mutex_lock(&pool->mu);
            atomic_store(&pool->caller_asleep, 1);
            while (atomic_load(&pool->pending) > 0) pthread_cond_wait(&pool->done_cv, &pool->mu);
            atomic_store(&pool->caller_asleep, 0);
            pthread_mutex_unlock(&pool->mu);
            break;
        }
    }
    atomic_fetch_add(&pool->wait_ns, now_ns() - t0);
}

typedef struct range_job {
    int n, grain;
    tg_range_fn fn;
    void *ctx;
} range_job;

static void range_task(void *p, int ith, int nth) {
    const range_job *j = p;
    int blocks = (j->n + j->grain - 1) / j->grain;
    int b0 = (int)((long long)blocks * ith / nth), b1 = (int)((long long)blocks * (ith + 1) / nth);
    int i0 = b0 * j->grain, i1 = b1 * j->grain;
    if (i1 > j->n) i1 = j->n;
    if (i0 < i1) j->fn(j->ctx, i0, i1, ith);
}

void tg_parallel_for(tg_pool *pool, int n, int grain, double work, tg_range_fn fn, void *ctx) {
    if (n <= 0) return;
    if (grain < 1) grain = 1;
    int blocks = (n + grain - 1) / grain;
    int nth = tg_pool_size(pool);
    int by_work = (int)(work / MIN_WORK_PER_THREAD);
    if (nth > by_work) nth = by_work;
    if (nth > blocks) nth = blocks;
    if (nth <= 1) {
        fn(ctx, 0, n, 0);
        return;
    }
    range_job j = {n, grain, fn, ctx};
    tg_pool_run(pool, nth, range_task, &j);
}

uint64_t tg_pool_wait_ns(const tg_pool *pool) { return pool ? atomic_load(&pool->wait_ns) : 0; }
void tg_pool_reset_wait(tg_pool *pool) {
    if (pool) atomic_store(&pool->wait_ns, 0);
}
