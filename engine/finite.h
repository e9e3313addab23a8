/* finite.h — where the first non-finite float is: the run-time check of the
 * logits and the f32 case of the load-time check of weights (weights/finite.h). */
#ifndef TINYGPT_ENGINE_FINITE_H
#define TINYGPT_ENGINE_FINITE_H

#include <stdint.h>

/* x[n] f32 values (any alignment): the index of the first NaN, +inf or
 * -inf, or -1 if all are finite; *what (if non-NULL) names it ("NaN",
 * "+inf", "-inf"). */
int64_t tg_f32_find_nonfinite(const void *x, uint64_t n, const char **what);

#endif
