/* internal.h — what the files of lib/ share beyond the public API (none of
 * it exported: the names do not start with tinygpt_). */
#ifndef TINYGPT_LIB_INTERNAL_H
#define TINYGPT_LIB_INTERNAL_H

#include "engine/status.h"
#include "model/gpt.h"
#include "tinygpt.h"

/* Sets the handle's last error (printf-style) and returns s. */
tinygpt_status tg_lib_fail(tinygpt *m, tinygpt_status s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The logits [V] after position P-1 of the cache, or NULL when there are
 * none (empty cache, truncated, or the last eval failed). */
const float *tg_lib_last_logits(const tinygpt *m);
/* The ids at positions 0..P-1 of the cache. */
const int *tg_lib_cache_ids(const tinygpt *m);
tg_gpt *tg_lib_gpt(tinygpt *m);
tg_err *tg_lib_err(tinygpt *m);
struct tg_tokenizer;
struct tg_tokenizer *tg_lib_tok(tinygpt *m);
/* After a model/ analysis call that ran its own passes: the cache is
 * emptied (its content is unknown here), the probe detached and the
 * handle's head mask attached again. */
void tg_lib_cache_lost(tinygpt *m);
/* ids[K]: the K largest of l[V], best first, ties to the lower id. */
void tg_lib_top_k(const float *l, int V, int K, int *ids);

#endif
