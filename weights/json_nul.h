/* json_nul.h — one check of JSON text before cJSON reads it. */
#ifndef TG_WEIGHTS_JSON_NUL_H
#define TG_WEIGHTS_JSON_NUL_H

#include <stddef.h>

/* Whether JSON text s[n] has a \u0000 escape inside a string: cJSON decodes
 * it to a NUL byte, and every C string after it would silently end there
 * (a prompt, a model name, a tokenizer's token). One pass that knows
 * strings and escapes, so "\\u0000" (an escaped backslash) is no match. */
int wt_json_has_nul_escape(const char *s, size_t n);

#endif
