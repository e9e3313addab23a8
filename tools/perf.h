/* perf.h — what `tinygpt profile` and `tinygpt bench` share: the clock,
 * a reproducible token stream, opening a model for timing, the machine
 * probes with a progress note, and small statistics. */
#ifndef TINYGPT_TOOLS_PERF_H
#define TINYGPT_TOOLS_PERF_H

#include <stdint.h>
#include <stdio.h>

#include "engine/roofline.h"
#include "model/gpt.h"
#include "weights/gpt2.h"

double perf_now(void); /* monotonic seconds */

/* tokens[n] uniform in [0, V), from a fixed-seed generator. */
void perf_tokens(int *tokens, int n, int n_vocab, uint64_t seed);

/* Picks the ISA named by --isa (NULL: $TINYGPT_ISA or the best; a bad name
 * is a usage error), then loads `path` (or the default model when NULL),
 * reporting failures as runtime errors of `cmd`. Returns an exit code
 * (EXIT_OK on success). */
int perf_load(const char *cmd, const char *isa_name, const char *path, int no_check, tg_isa *isa,
              tg_gpt2_model *m);

/* Runs the two machine probes on a pool of nth threads, `seconds` each,
 * for `isa`, noting it on stderr. Returns an exit code. */
int perf_roofline(const char *cmd, tg_isa isa, int nth, double seconds, tg_roofline *r);

/* A note (or NULL) when weights + KV cache of a model fit in the last-level
 * cache, where rates above the DRAM roofline are expected. */
const char *perf_cache_note(const tg_gpt2_model *m, char *buf, size_t n);

/* Mean and sample standard deviation of x[n] (sd 0 when n < 2). */
void perf_mean_sd(const double *x, int n, double *mean, double *sd);

/* JSON string literal of s (quotes and escapes) on f. */
void perf_json_str(FILE *f, const char *s);

#endif
