/* profiler.h — a tg_probe that times every op of the forward pass, per
 * thread, layer and head, and turns the timings into per-phase tables
 * (prefill and decode) with flops and bytes from model/opcount.h.
 *
 * Recording: op_begin/op_end on worker `ith` touch only that thread's slot
 * (a stack for nesting and a growable event list); the clock is
 * CLOCK_MONOTONIC in ns since the profiler was created.
 *
 * Attribution (at tg_profiler_step_end, on the caller's thread): each
 * thread's events become exclusive segments (time in a nested op goes to
 * the innermost one); then every instant of the step's wall time is shared
 * equally among the threads busy in an op at that instant. So the times of
 * all (op, layer, head) cells add up to the wall time during which any
 * thread was in an op — no double counting when heads run in parallel, and
 * a thread waiting for the others at a barrier is covered by the others'
 * ops. `calls` counts instances: each distinct (op, layer, head) seen in a
 * step is one call, however many threads or queries it was split into.
 */
#ifndef TINYGPT_MODEL_PROFILER_H
#define TINYGPT_MODEL_PROFILER_H

#include <stddef.h>
#include <stdint.h>

#include "model/gpt.h"
#include "model/opcount.h"

typedef enum tg_phase { TG_PHASE_PREFILL = 0, TG_PHASE_DECODE, TG_PHASE_COUNT } tg_phase;

const char *tg_phase_name(tg_phase ph); /* "prefill", "decode" */

enum { TG_PROF_ALL = -2 }; /* layer/head wildcard in tg_profiler_stat */

typedef struct tg_prof_event {
    uint64_t t0, t1;              /* ns since the profiler's epoch */
    int16_t op, layer, head, ith;
} tg_prof_event;

typedef struct tg_prof_step {
    uint64_t t0, t1;
    int phase, T, pos;
} tg_prof_step;

typedef struct tg_prof_stat {
    double ns;       /* wall time attributed to the cell(s) */
    double calls;    /* instances (see above) */
    tg_opcost cost;  /* flops and bytes of the cell(s), summed over steps */
} tg_prof_stat;

typedef struct tg_prof_phase {
    int steps;
    long tokens;         /* Σ T */
    double wall_ns;      /* Σ (step_end - step_begin) */
    double op_ns;        /* Σ attributed: wall time with some thread in an op */
    double wait_ns;      /* caller's barrier wait (tg_pool_wait_ns) during the steps */
    double cpu_ns;       /* CPU time of the caller's thread during the steps: well below
                          * wall_ns when the machine is shared and the thread waited
                          * for a CPU (all ops are then slower than the machine is) */
    const double *busy_ns; /* [n_threads]: time each thread spent in ops */
} tg_prof_phase;

typedef struct tg_profiler tg_profiler;

/* n_threads: the pool size of the model being probed (ith < n_threads).
 * pool (may be NULL): read for barrier wait. keep_events: keep every event
 * for a trace, up to max_events (0: 4 million), after which the trace is
 * truncated (tg_profiler_events reports it). */
tg_status tg_profiler_create(tg_profiler **out, const tg_gpt2_config *cfg, int n_threads,
                             tg_pool *pool, int keep_events, size_t max_events, tg_err *err);
void tg_profiler_free(tg_profiler *p);
/* Counts the weight bytes of every op from m's real tensor types (f16,
 * q8_0, ...: tg_typed_bytes_of) instead of as f32, from the next step on. */
void tg_profiler_set_model(tg_profiler *p, const tg_model *m);
/* tg_profiler_set_model(the handle's model), and the KV bytes of the
 * handle's KV cache type (f16: half the f32 count). */
void tg_profiler_set_gpt(tg_profiler *p, const tg_gpt *g);

/* The probe to hand to tg_gpt_set_probe (valid while p lives). */
const tg_probe *tg_profiler_probe(const tg_profiler *p);

/* Brackets one forward step (and the sampling after it, which the caller
 * times with the probe's op_begin/op_end on TG_OP_SAMPLE, ith 0). step_end
 * attributes the step's events to cells and adds the step's opcount costs
 * (T tokens after pos cached, n_logits rows through the head, `sampled`
 * whether a sample op ran). */
void tg_profiler_step_begin(tg_profiler *p);
tg_status tg_profiler_step_end(tg_profiler *p, tg_phase ph, int T, int pos, int n_logits,
                               int sampled, tg_err *err);

/* Clears every accumulator, step and event (keeps the epoch). */
void tg_profiler_reset(tg_profiler *p);

/* Time, calls and cost of op in a phase; layer in -1..L-1 or TG_PROF_ALL,
 * head in -1..H-1 or TG_PROF_ALL (-1 = events not tied to a layer/head). */
tg_prof_stat tg_profiler_stat(const tg_profiler *p, tg_phase ph, tg_op op, int layer, int head);
tg_prof_phase tg_profiler_phase(const tg_profiler *p, tg_phase ph);

/* Did any op event carry a head index (>= 0) in this phase? */
int tg_profiler_has_heads(const tg_profiler *p, tg_phase ph);

/* The kept events (in per-thread order) and steps; *truncated is set when
 * events were dropped (cap reached, out of memory, or unbalanced begin/end). */
const tg_prof_event *tg_profiler_events(const tg_profiler *p, size_t *n, int *truncated);
const tg_prof_step *tg_profiler_steps(const tg_profiler *p, size_t *n);

/* ns since the profiler's epoch (the events' clock). */
uint64_t tg_profiler_now(const tg_profiler *p);

/* Records a finished event as if op_begin/op_end had run on thread ith at
 * t0 and t1 (for tests of the attribution; not for use during a step that
 * is being probed on other threads). */
void tg_profiler_record(tg_profiler *p, int ith, tg_op op, int layer, int head, uint64_t t0,
                        uint64_t t1);

#endif
