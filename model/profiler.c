/* profiler.c — the op-timing probe and its per-phase tables (see
 * profiler.h for what is measured and how time is attributed). */
#include "model/profiler.h"

#include "engine/roofline.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { MAX_DEPTH = 16 };

typedef struct open_op {
    uint64_t t0;
    int16_t op, layer, head;
} open_op;

/* One worker's slot: only thread ith writes it during a step. Aligned so
 * two threads never share a cache line. */
typedef struct thread_slot {
    _Alignas(64) tg_prof_event *ev;
    size_t n, cap;
    size_t mark;            /* first event of the current step */
    size_t most;            /* most events this thread recorded in one step */
    open_op stack[MAX_DEPTH];
    int depth;
    int bad;                /* unbalanced, too deep, or out of memory */
} thread_slot;

typedef struct cell {
    double ns, calls;
    uint32_t stamp;         /* last step that counted a call */
} cell;

/* An exclusive piece of one thread's time: [t0, t1) in cell `key`. */
typedef struct segment {
    uint64_t t0, t1;
    size_t key;
} segment;

typedef struct edge {
    uint64_t t;
    int d;                  /* +1 a segment starts, -1 one ends */
} edge;

struct tg_profiler {
    tg_gpt2_config cfg;
    int n_threads;
    tg_pool *pool;
    tg_probe probe;
    tg_tick_fn tick;         /* the clock: ticks, tick_ns ns each, from tick0 */
    double tick_ns;
    uint64_t tick0;
    thread_slot *slots;      /* [n_threads] */

    /* cells[ph][op][layer + 1][head + 1] */
    int n_l, n_h;            /* L + 1, H + 1 */
    cell *cells;
    tg_opcost cost[TG_PHASE_COUNT][TG_OP_COUNT]; /* Σ steps of tg_opcost_step_typed */
    tg_typed_bytes typed;    /* the model's real weight bytes (0: as f32) */
    int has_heads[TG_PHASE_COUNT];
    int steps_n[TG_PHASE_COUNT];
    long tokens[TG_PHASE_COUNT];
    double wall_ns[TG_PHASE_COUNT], op_ns[TG_PHASE_COUNT], wait_ns[TG_PHASE_COUNT];
    double cpu_ns[TG_PHASE_COUNT];
    double *busy_ns;         /* [TG_PHASE_COUNT][n_threads] */
    uint32_t step_id;

    uint64_t step_t0, wait0;
    double cpu0;

    /* Kept for the trace. */
    int keep;
    size_t max_events;
    tg_prof_event *kept;
    size_t n_kept, cap_kept;
    tg_prof_step *steps;
    size_t n_steps, cap_steps;
    int truncated;

    /* Scratch for the attribution, grown as needed. */
    tg_prof_event *tmp_ev;
    segment *seg;
    edge *edges;
    uint64_t *times;
    double *acc;             /* G(times[i]): ∫ 1/active dt */
    size_t cap_tmp;
};

const char *tg_phase_name(tg_phase ph) {
    return ph == TG_PHASE_PREFILL ? "prefill" : ph == TG_PHASE_DECODE ? "decode" : "unknown";
}

/* ns since the profiler's epoch */
static inline uint64_t now_ns(const tg_profiler *p) {
    return (uint64_t)((double)(p->tick() - p->tick0) * p->tick_ns);
}

uint64_t tg_profiler_now(const tg_profiler *p) { return now_ns(p); }

/* CPU time of the calling thread (a system call: once per step only). */
static double thread_cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* ---- recording (worker threads) --------------------------------------------- */

/* Grows s->ev to at least cap events, touching the new pages so that their
 * first-use faults are paid here and not inside a timed step. */
static int slot_grow(thread_slot *s, size_t cap) {
    if (cap <= s->cap) return 1;
    tg_prof_event *ev = realloc(s->ev, cap * sizeof *ev);
    if (!ev) return 0;
    memset(ev + s->cap, 0, (cap - s->cap) * sizeof *ev);
    s->ev = ev;
    s->cap = cap;
    return 1;
}

static void push_event(thread_slot *s, tg_prof_event e) {
    if (s->n == s->cap && !slot_grow(s, s->cap ? s->cap * 2 : 4096)) {
        s->bad = 1;
        return;
    }
    s->ev[s->n++] = e;
}

static void on_begin(void *user, tg_op op, int layer, int head, int ith) {
    tg_profiler *p = user;
    if (ith < 0 || ith >= p->n_threads) return;
    thread_slot *s = &p->slots[ith];
    if (s->depth == MAX_DEPTH) {
        s->bad = 1;
        return;
    }
    s->stack[s->depth++] = (open_op){now_ns(p), (int16_t)op, (int16_t)layer, (int16_t)head};
}

/* Closes thread ith's innermost open op at t, which must be (op, layer,
 * head): records it and returns its stack slot, or NULL (marked bad). */
static open_op *close_op(tg_profiler *p, int ith, tg_op op, int layer, int head, uint64_t t) {
    if (ith < 0 || ith >= p->n_threads) return NULL;
    thread_slot *s = &p->slots[ith];
    open_op *o = s->depth ? &s->stack[s->depth - 1] : NULL;
    if (!o || o->op != (int)op || o->layer != layer || o->head != head) {
        s->bad = 1;
        return NULL;
    }
    push_event(s, (tg_prof_event){o->t0, t, o->op, o->layer, o->head, (int16_t)ith});
    return o;
}

static void on_end(void *user, tg_op op, int layer, int head, int ith) {
    tg_profiler *p = user;
    if (close_op(p, ith, op, layer, head, now_ns(p))) p->slots[ith].depth--;
}

/* Ends prev and begins next in the same slot, at one clock reading. */
static void on_next(void *user, tg_op prev, tg_op next, int layer, int head, int ith) {
    tg_profiler *p = user;
    uint64_t t = now_ns(p);
    open_op *o = close_op(p, ith, prev, layer, head, t);
    if (o) *o = (open_op){t, (int16_t)next, (int16_t)layer, (int16_t)head};
}

void tg_profiler_record(tg_profiler *p, int ith, tg_op op, int layer, int head, uint64_t t0,
                        uint64_t t1) {
    if (ith < 0 || ith >= p->n_threads) return;
    push_event(&p->slots[ith],
               (tg_prof_event){t0, t1, (int16_t)op, (int16_t)layer, (int16_t)head, (int16_t)ith});
}

/* ---- create / free ------------------------------------------------------------ */

void tg_profiler_set_model(tg_profiler *p, const tg_model *m) { tg_typed_bytes_of(m, &p->typed); }
void tg_profiler_set_gpt(tg_profiler *p, const tg_gpt *g) { tg_typed_bytes_of_gpt(g, &p->typed); }

tg_status tg_profiler_create(tg_profiler **out, const tg_gpt2_config *cfg, int n_threads,
                             tg_pool *pool, int keep_events, size_t max_events, tg_err *err) {
    *out = NULL;
    if (n_threads < 1 || n_threads > 1024)
        return tg_fail(err, TG_ERR_ARG, "profiler: %d threads (allowed 1..1024)", n_threads);
    if (cfg->n_layer < 1 || cfg->n_head < 1 || cfg->n_layer > 30000 || cfg->n_head > 30000)
        return tg_fail(err, TG_ERR_ARG, "profiler: bad shape L=%d H=%d", cfg->n_layer,
                       cfg->n_head);
    tg_profiler *p = calloc(1, sizeof *p);
    if (!p) return tg_fail(err, TG_ERR_NOMEM, "profiler: out of memory");
    p->cfg = *cfg;
    p->n_threads = n_threads;
    p->pool = pool;
    p->n_l = cfg->n_layer + 1;
    p->n_h = cfg->n_head + 1;
    p->keep = keep_events;
    p->max_events = max_events ? max_events : (size_t)4 << 20;
    size_t n_cells = (size_t)TG_PHASE_COUNT * TG_OP_COUNT * p->n_l * p->n_h;
    p->cells = calloc(n_cells, sizeof *p->cells);
    p->busy_ns = calloc((size_t)TG_PHASE_COUNT * n_threads, sizeof *p->busy_ns);
    p->slots = aligned_alloc(64, ((size_t)n_threads * sizeof *p->slots + 63) & ~(size_t)63);
    if (!p->cells || !p->busy_ns || !p->slots) {
        free(p->cells);
        free(p->busy_ns);
        free(p->slots);
        free(p);
        return tg_fail(err, TG_ERR_NOMEM, "profiler: out of memory");
    }
    memset(p->slots, 0, (size_t)n_threads * sizeof *p->slots);
    p->probe = (tg_probe){p, on_begin, on_end, NULL, on_next};
    p->tick = tg_tick_source(&p->tick_ns);
    p->tick0 = p->tick();
    *out = p;
    return TG_OK;
}

void tg_profiler_free(tg_profiler *p) {
    if (!p) return;
    for (int i = 0; i < p->n_threads; i++) free(p->slots[i].ev);
    free(p->slots);
    free(p->cells);
    free(p->busy_ns);
    free(p->kept);
    free(p->steps);
    free(p->tmp_ev);
    free(p->seg);
    free(p->edges);
    free(p->times);
    free(p->acc);
    free(p);
}

const tg_probe *tg_profiler_probe(const tg_profiler *p) { return &p->probe; }

void tg_profiler_reset(tg_profiler *p) {
    size_t n_cells = (size_t)TG_PHASE_COUNT * TG_OP_COUNT * p->n_l * p->n_h;
    memset(p->cells, 0, n_cells * sizeof *p->cells);
    memset(p->cost, 0, sizeof p->cost);
    memset(p->has_heads, 0, sizeof p->has_heads);
    memset(p->steps_n, 0, sizeof p->steps_n);
    memset(p->tokens, 0, sizeof p->tokens);
    memset(p->wall_ns, 0, sizeof p->wall_ns);
    memset(p->op_ns, 0, sizeof p->op_ns);
    memset(p->wait_ns, 0, sizeof p->wait_ns);
    memset(p->cpu_ns, 0, sizeof p->cpu_ns);
    memset(p->busy_ns, 0, (size_t)TG_PHASE_COUNT * p->n_threads * sizeof *p->busy_ns);
    for (int i = 0; i < p->n_threads; i++) {
        p->slots[i].n = p->slots[i].mark = 0;
        p->slots[i].depth = p->slots[i].bad = 0;
    }
    p->n_kept = p->n_steps = 0;
    p->truncated = 0;
    p->step_id = 0;
}

/* ---- attribution (caller's thread, between steps) ------------------------------ */

static size_t cell_index(const tg_profiler *p, int ph, int op, int layer, int head) {
    return (((size_t)ph * TG_OP_COUNT + (size_t)op) * p->n_l + (size_t)(layer + 1)) * p->n_h +
           (size_t)(head + 1);
}

static int valid_event(const tg_profiler *p, const tg_prof_event *e) {
    return e->op >= 0 && e->op < TG_OP_COUNT && e->layer >= -1 && e->layer < p->cfg.n_layer &&
           e->head >= -1 && e->head < p->cfg.n_head && e->t1 >= e->t0;
}

/* Events of one thread by start time, outer (longer) first on ties. */
static int cmp_event(const void *a, const void *b) {
    const tg_prof_event *x = a, *y = b;
    if (x->t0 != y->t0) return x->t0 < y->t0 ? -1 : 1;
    if (x->t1 != y->t1) return x->t1 > y->t1 ? -1 : 1;
    return 0;
}

static int cmp_edge(const void *a, const void *b) {
    const edge *x = a, *y = b;
    if (x->t != y->t) return x->t < y->t ? -1 : 1;
    return x->d - y->d;
}

static int reserve_tmp(tg_profiler *p, size_t n) {
    if (n <= p->cap_tmp) return 1;
    size_t cap = n + n / 2 + 1024;
    void *a = realloc(p->tmp_ev, cap * sizeof *p->tmp_ev);
    if (a) p->tmp_ev = a;
    /* n events make at most 2n segments (an event with k children is cut
     * into at most k + 1 pieces), and 4n segment edges. */
    void *b = realloc(p->seg, 2 * cap * sizeof *p->seg);
    if (b) p->seg = b;
    void *c = realloc(p->edges, 4 * cap * sizeof *p->edges);
    if (c) p->edges = c;
    void *d = realloc(p->times, 4 * cap * sizeof *p->times);
    if (d) p->times = d;
    void *e = realloc(p->acc, 4 * cap * sizeof *p->acc);
    if (e) p->acc = e;
    if (!a || !b || !c || !d || !e) return 0;
    p->cap_tmp = cap;
    return 1;
}

/* Appends thread events ev[n] (sorted by cmp_event) as exclusive segments:
 * at any instant the innermost open event owns the time. */
static size_t to_segments(const tg_profiler *p, int ph, const tg_prof_event *ev, size_t n,
                          segment *out) {
    const tg_prof_event *stack[MAX_DEPTH + 1];
    int depth = 0;
    size_t m = 0;
    uint64_t cur = 0;
#define EMIT(e, a, b)                                                                   \
    do {                                                                                \
        if ((b) > (a))                                                                  \
            out[m++] = (segment){(a), (b), cell_index(p, ph, (e)->op, (e)->layer, (e)->head)}; \
    } while (0)
    for (size_t i = 0; i < n; i++) {
        const tg_prof_event *e = &ev[i];
        while (depth && stack[depth - 1]->t1 <= e->t0) {
            const tg_prof_event *top = stack[--depth];
            EMIT(top, cur, top->t1);
            cur = top->t1;
        }
        if (depth) EMIT(stack[depth - 1], cur, e->t0);
        cur = e->t0;
        if (depth == MAX_DEPTH) { /* deeper than recorded nesting can be: drop */
            continue;
        }
        stack[depth++] = e;
    }
    while (depth) {
        const tg_prof_event *top = stack[--depth];
        EMIT(top, cur, top->t1);
        if (top->t1 > cur) cur = top->t1;
    }
#undef EMIT
    return m;
}

/* Index of the last time <= t in times[n] (t within range). */
static size_t find_time(const uint64_t *times, size_t n, uint64_t t) {
    size_t lo = 0, hi = n;
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (times[mid] <= t)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

static void attribute(tg_profiler *p, int ph) {
    /* 1. per thread: sort its events, cut into exclusive segments */
    size_t n_seg = 0, off = 0;
    for (int i = 0; i < p->n_threads; i++) {
        thread_slot *s = &p->slots[i];
        size_t k = 0;
        for (size_t j = s->mark; j < s->n; j++)
            if (valid_event(p, &s->ev[j])) p->tmp_ev[off + k++] = s->ev[j];
        qsort(p->tmp_ev + off, k, sizeof *p->tmp_ev, cmp_event);
        size_t m = to_segments(p, ph, p->tmp_ev + off, k, p->seg + n_seg);
        for (size_t j = n_seg; j < n_seg + m; j++)
            p->busy_ns[(size_t)ph * p->n_threads + i] += (double)(p->seg[j].t1 - p->seg[j].t0);
        n_seg += m;
        off += k;
    }
    if (!n_seg) return;
    /* 2. the number of busy threads over time, and G(t) = ∫ 1/busy dt */
    for (size_t j = 0; j < n_seg; j++) {
        p->edges[2 * j] = (edge){p->seg[j].t0, +1};
        p->edges[2 * j + 1] = (edge){p->seg[j].t1, -1};
    }
    qsort(p->edges, 2 * n_seg, sizeof *p->edges, cmp_edge);
    size_t n_t = 0;
    int active = 0;
    double g = 0, busy = 0; /* busy: the union of all segments */
    for (size_t j = 0; j < 2 * n_seg; j++) {
        const edge *e = &p->edges[j];
        if (n_t && p->times[n_t - 1] == e->t) {
            active += e->d;
            continue;
        }
        if (n_t && active > 0) {
            double dt = (double)(e->t - p->times[n_t - 1]);
            g += dt / active;
            busy += dt;
        }
        p->times[n_t] = e->t;
        p->acc[n_t] = g;
        n_t++;
        active += e->d;
    }
    p->op_ns[ph] += busy;
    /* 3. each segment gets G(t1) - G(t0) */
    for (size_t j = 0; j < n_seg; j++) {
        double a = p->acc[find_time(p->times, n_t, p->seg[j].t0)];
        double b = p->acc[find_time(p->times, n_t, p->seg[j].t1)];
        p->cells[p->seg[j].key].ns += b - a;
    }
}

/* Counts one call per distinct (op, layer, head) of the step. */
static void count_calls(tg_profiler *p, int ph) {
    for (int i = 0; i < p->n_threads; i++) {
        thread_slot *s = &p->slots[i];
        for (size_t j = s->mark; j < s->n; j++) {
            const tg_prof_event *e = &s->ev[j];
            if (!valid_event(p, e)) continue;
            cell *c = &p->cells[cell_index(p, ph, e->op, e->layer, e->head)];
            if (c->stamp != p->step_id) {
                c->stamp = p->step_id;
                c->calls += 1;
            }
            if (e->head >= 0) p->has_heads[ph] = 1;
        }
    }
}

void tg_profiler_step_begin(tg_profiler *p) {
    /* Room for twice the largest step so far, allocated before the clock
     * starts: growing inside the step (a realloc and fresh pages, ~0.3 ms
     * for 100 KB on this VM) would show as time outside the ops. */
    for (int i = 0; i < p->n_threads; i++) {
        thread_slot *s = &p->slots[i];
        size_t want = s->most * 2 > 4096 ? s->most * 2 : 4096;
        if (!slot_grow(s, s->n + want)) s->bad = 1;
        s->mark = s->n;
    }
    p->wait0 = tg_pool_wait_ns(p->pool);
    p->cpu0 = thread_cpu_ns();
    p->step_t0 = now_ns(p);
}

static void keep_events(tg_profiler *p, int ph, uint64_t t0, uint64_t t1, int T, int pos,
                        size_t n_ev) {
    if (!p->keep || p->truncated) return;
    if (p->n_kept + n_ev > p->max_events) {
        p->truncated = 1;
        return;
    }
    if (p->n_kept + n_ev > p->cap_kept) {
        size_t cap = (p->n_kept + n_ev) * 2;
        if (cap > p->max_events) cap = p->max_events;
        tg_prof_event *k = realloc(p->kept, cap * sizeof *k);
        if (!k) {
            p->truncated = 1;
            return;
        }
        p->kept = k;
        p->cap_kept = cap;
    }
    if (p->n_steps == p->cap_steps) {
        size_t cap = p->cap_steps ? p->cap_steps * 2 : 256;
        tg_prof_step *st = realloc(p->steps, cap * sizeof *st);
        if (!st) {
            p->truncated = 1;
            return;
        }
        p->steps = st;
        p->cap_steps = cap;
    }
    p->steps[p->n_steps++] = (tg_prof_step){t0, t1, ph, T, pos};
    for (int i = 0; i < p->n_threads; i++) {
        thread_slot *s = &p->slots[i];
        if (s->n == s->mark) continue; /* no events: s->ev may still be NULL */
        memcpy(p->kept + p->n_kept, s->ev + s->mark, (s->n - s->mark) * sizeof *s->ev);
        p->n_kept += s->n - s->mark;
    }
}

tg_status tg_profiler_step_end(tg_profiler *p, tg_phase ph, int T, int pos, int n_logits,
                               int sampled, tg_err *err) {
    uint64_t t1 = now_ns(p);
    double cpu1 = thread_cpu_ns();
    if ((unsigned)ph >= TG_PHASE_COUNT || T < 1 || pos < 0 || n_logits < 0)
        return tg_fail(err, TG_ERR_ARG, "profiler: bad step (phase %d, T %d, pos %d)", (int)ph,
                       T, pos);
    size_t n_ev = 0;
    for (int i = 0; i < p->n_threads; i++) {
        thread_slot *s = &p->slots[i];
        n_ev += s->n - s->mark;
        if (s->n - s->mark > s->most) s->most = s->n - s->mark;
        if (s->depth) s->bad = 1; /* an op left open across the step */
        s->depth = 0;
        if (s->bad) p->truncated = 1;
        s->bad = 0;
    }
    if (!reserve_tmp(p, n_ev + 1))
        return tg_fail(err, TG_ERR_NOMEM, "profiler: out of memory for %zu events", n_ev);
    p->step_id++;
    count_calls(p, ph);
    attribute(p, ph);
    for (int op = 0; op < TG_OP_COUNT; op++) {
        if (op == TG_OP_SAMPLE && !sampled) continue;
        p->cost[ph][op] = tg_opcost_add(p->cost[ph][op],
                                        tg_opcost_step_typed(&p->cfg, &p->typed, (tg_op)op, T, pos, n_logits));
    }
    p->steps_n[ph]++;
    p->tokens[ph] += T;
    p->wall_ns[ph] += (double)(t1 - p->step_t0);
    p->wait_ns[ph] += (double)(tg_pool_wait_ns(p->pool) - p->wait0);
    p->cpu_ns[ph] += cpu1 - p->cpu0;
    keep_events(p, ph, p->step_t0, t1, T, pos, n_ev);
    /* The step's events are attributed (and copied, for a trace). */
    for (int i = 0; i < p->n_threads; i++) p->slots[i].n = p->slots[i].mark = 0;
    return TG_OK;
}

/* ---- results ---------------------------------------------------------------------- */

tg_prof_stat tg_profiler_stat(const tg_profiler *p, tg_phase ph, tg_op op, int layer, int head) {
    tg_prof_stat st = {0};
    if ((unsigned)ph >= TG_PHASE_COUNT || (unsigned)op >= TG_OP_COUNT) return st;
    int l0 = layer == TG_PROF_ALL ? -1 : layer, l1 = layer == TG_PROF_ALL ? p->cfg.n_layer - 1 : layer;
    int h0 = head == TG_PROF_ALL ? -1 : head, h1 = head == TG_PROF_ALL ? p->cfg.n_head - 1 : head;
    if (l0 < -1 || l1 >= p->cfg.n_layer || h0 < -1 || h1 >= p->cfg.n_head) return st;
    for (int l = l0; l <= l1; l++)
        for (int h = h0; h <= h1; h++) {
            const cell *c = &p->cells[cell_index(p, ph, op, l, h)];
            st.ns += c->ns;
            st.calls += c->calls;
        }
    /* Costs are the same for every layer, and split evenly over heads when
     * the events were per head. */
    double share = 1;
    if (layer != TG_PROF_ALL) {
        if (tg_op_in_block(op))
            share = layer >= 0 ? 1.0 / p->cfg.n_layer : 0;
        else
            share = layer == -1 ? 1 : 0;
    }
    if (head != TG_PROF_ALL) {
        if (tg_op_per_head(op) && p->has_heads[ph])
            share *= head >= 0 ? 1.0 / p->cfg.n_head : 0;
        else
            share *= head == -1 ? 1 : 0;
    }
    st.cost = tg_opcost_scale(p->cost[ph][op], share);
    return st;
}

tg_prof_phase tg_profiler_phase(const tg_profiler *p, tg_phase ph) {
    tg_prof_phase r = {0};
    if ((unsigned)ph >= TG_PHASE_COUNT) return r;
    r.steps = p->steps_n[ph];
    r.tokens = p->tokens[ph];
    r.wall_ns = p->wall_ns[ph];
    r.op_ns = p->op_ns[ph];
    r.wait_ns = p->wait_ns[ph];
    r.cpu_ns = p->cpu_ns[ph];
    r.busy_ns = p->busy_ns + (size_t)ph * p->n_threads;
    return r;
}

int tg_profiler_has_heads(const tg_profiler *p, tg_phase ph) {
    return (unsigned)ph < TG_PHASE_COUNT && p->has_heads[ph];
}

const tg_prof_event *tg_profiler_events(const tg_profiler *p, size_t *n, int *truncated) {
    *n = p->n_kept;
    if (truncated) *truncated = p->truncated;
    return p->kept;
}

const tg_prof_step *tg_profiler_steps(const tg_profiler *p, size_t *n) {
    *n = p->n_steps;
    return p->steps;
}
