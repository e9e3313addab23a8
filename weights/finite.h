/* finite.h — the load-time check that a tensor holds only finite numbers
 * (one pass over its bytes, cheap next to reading them), on the file's own
 * encoding so that a tensor kept in its type can be checked without
 * converting it. */
#ifndef TINYGPT_WEIGHTS_FINITE_H
#define TINYGPT_WEIGHTS_FINITE_H

#include <stdint.h>

/* The index of the first non-finite element (NaN, +inf or -inf) of the n
 * elements at data, encoded as GGML type `type` (weights/gguf.h: F32, F16,
 * BF16 by their raw bits; Q8_0 and Q4_0 by their block scales, since d * q
 * is finite exactly when d is: the index is then the block's first element), or -1
 * when all are finite. *what (if non-NULL) is set to "NaN", "+inf" or
 * "-inf" for the value found. Other types: -2 (not checked). data need not
 * be aligned. */
int64_t tg_find_nonfinite(uint32_t type, const void *data, uint64_t n, const char **what);

#endif
