/* measure.h — how fast a model runs and where the time goes, as plain
 * result structs: the per-op profile of a prefill + decode run (the tables
 * of `tinygpt profile`), decode at growing context (--ctx-sweep), the
 * llama-bench style throughput rows of `tinygpt bench`, and the speed part
 * of `tinygpt compare`. Nothing here prints; the machine's roofline
 * (engine/roofline.h) is measured by the caller and passed in (NULL: none,
 * every roofline figure is then < 0).
 *
 * All times are wall time from CLOCK_MONOTONIC; the profile's attribution
 * rules are model/profiler.h's. Flops and bytes are model/opcount.h's.
 * Each function uses the handle's KV cache and leaves no probe attached.
 */
#ifndef TINYGPT_MODEL_MEASURE_H
#define TINYGPT_MODEL_MEASURE_H

#include <stddef.h>
#include <stdint.h>

#include "engine/roofline.h"
#include "model/gpt.h"
#include "model/opcount.h"
#include "model/profiler.h"

/* tokens[n] uniform in [0, n_vocab) from splitmix64 seeded with seed (the
 * random prompts of profile, the sweep and bench). */
void tg_random_tokens(int *tokens, int n, int n_vocab, uint64_t seed);

/* ---- the profile of a run --------------------------------------------------------- */

/* One row of a phase's table: an op, optionally one layer or one head. */
typedef struct tg_profile_row {
    tg_op op;
    const char *name;       /* tg_op_name(op), or "(outside ops)" / "total" */
    int layer, head;        /* TG_PROF_ALL, or the index */
    double calls;           /* instances timed (model/profiler.h) */
    double ns;              /* wall time attributed */
    double pct;             /* 100 * ns / the phase's wall time */
    double flops, bytes;    /* bytes = weight + kv + act */
    double weight_bytes, kv_bytes, act_bytes;
    double roof_pct;        /* 100 * roofline time / ns; < 0: no roofline or no time */
} tg_profile_row;

typedef struct tg_profile_phase {
    tg_phase phase;
    tg_prof_phase info;     /* steps, tokens, wall/op/wait/cpu ns; busy_ns copied below */
    double *busy_ns;        /* [n_threads]: each thread's time in ops (owned) */
    tg_profile_row *ops;    /* [TG_OP_COUNT]: one per op, all layers and heads */
    tg_profile_row *layers; /* [n_layers]: (layer, block op), layer-major; NULL unless per_layer */
    int n_layers;
    tg_profile_row *heads;  /* [n_heads]: (head, attention op), head-major, summed over
                             * layers; NULL unless per_head and the phase had head events */
    int n_heads;
    tg_profile_row outside; /* wall time no op was running: glue, clock reads, wake-ups */
    tg_profile_row total;   /* the whole phase: calls = steps, ns = wall time */
} tg_profile_phase;

typedef struct tg_profile_opts {
    const int *prompt;      /* [n_prompt] token ids of the prefill */
    int n_prompt;           /* >= 1 */
    int gen;                /* decode steps after it, each feeding the token sampled last */
    int reps;               /* the whole prefill + decode this many times (>= 1), summed */
    uint64_t seed;          /* of the sampler (default settings) */
    int per_layer, per_head; /* fill the layers / heads rows */
    int keep_events;        /* keep every event in the result's profiler (a trace) */
    const tg_roofline *roof; /* NULL: no roofline figures */
} tg_profile_opts;

typedef struct tg_profile {
    int n_threads;          /* the handle's pool size */
    int has_phase[TG_PHASE_COUNT]; /* the phase ran at least one step */
    tg_profile_phase phase[TG_PHASE_COUNT];
    tg_profiler *profiler;  /* the recorder (events and steps for a trace); owned */
} tg_profile;

/* One unprofiled warm-up (the prefill and one decode step), then reps ×
 * (the prefill of prompt, gen decode steps, each followed by a timed sample)
 * with the profiler attached. n_prompt + gen must fit the context.
 * out is zeroed first; free with tg_profile_free (also after a failure). */
tg_status tg_profile_run(tg_gpt *g, const tg_profile_opts *o, tg_profile *out, tg_err *err);
void tg_profile_free(tg_profile *p);

/* ---- decode at growing context ------------------------------------------------- */

typedef struct tg_sweep_row {
    int ctx;                /* positions in the cache */
    int steps;              /* decode steps timed; the times are their medians */
    double step_us;         /* the decode step */
    double attn_us;         /* scores + softmax + mix, all layers and heads */
    double part_us[3];      /* scores, softmax, mix */
    double attn_pct;        /* 100 * attn / step */
    double us_per_head;     /* attn_us / (L * H) */
    double attn_gflops;     /* attention's flops per ns */
    double attn_roof_pct;   /* < 0: no roofline */
    double kv_bytes;        /* K/V cache bytes one step's attention reads (KVH heads, all layers) */
} tg_sweep_row;

/* For each ctx[i] (ascending, distinct, each in [1, the context - 1]): the
 * prefill of random tokens (seed) up to ctx[i], unprofiled, then `steps`
 * decode steps at position ctx[i], each profiled on its own (each rewrites
 * the same cache slot). rows[n]. */
tg_status tg_profile_sweep(tg_gpt *g, const int *ctx, int n, int steps, uint64_t seed,
                           const tg_roofline *roof, tg_sweep_row *rows, tg_err *err);

/* ---- throughput (llama-bench style) --------------------------------------------- */

enum { TG_BENCH_MAX_REPS = 1000 };

typedef struct tg_bench_row {
    int threads;            /* the handle's pool size */
    int is_pp, n;           /* ppN: one prefill of N tokens; tgN: N decode steps from empty */
    int reps;
    double ms[TG_BENCH_MAX_REPS]; /* each repetition's time */
    double tok_s, tok_s_sd; /* mean and sample standard deviation over the repetitions */
    double gflops, gbs;     /* at the mean time; bytes = weights + KV cache */
    /* fractions of the machine (< 0: no roofline): of the FMA peak, of the
     * DRAM bandwidth, and of the roofline bound (the larger of the two) */
    double flops_frac, bw_frac, roof_frac;
    tg_opcost cost;         /* of one run, the matrices' real types included */
} tg_bench_row;

/* One warm-up run, then reps (1..TG_BENCH_MAX_REPS) timed runs of the test
 * (is_pp, n) on tokens[n] (n within the context). */
tg_status tg_bench_run(tg_gpt *g, int is_pp, int n, int reps, const int *tokens,
                       const tg_roofline *roof, tg_bench_row *out, tg_err *err);

/* ---- the speed part of compare --------------------------------------------------- */

typedef struct tg_speed {
    int n_tokens;           /* N prefilled, N decoded (min of the window and the ids) */
    int reps;
    double prefill_tok_s, decode_tok_s;           /* medians */
    double prefill_attn_share, decode_attn_share; /* attention / op time, medians of profiled runs */
} tg_speed;

/* Prefill ids[0..N) and decode N steps, reps times (medians), then reps
 * profiled runs for attention's share of each phase. */
tg_status tg_speed_run(tg_gpt *g, const int *ids, size_t n_ids, int N, int reps, tg_speed *out,
                       tg_err *err);

#endif
