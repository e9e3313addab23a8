/* utf8.h — UTF-8 well-formedness for the command's front ends (tokenize's
 * escaped output, the server's JSON strings): one definition both link. */
#ifndef TINYGPT_TOOLS_UTF8_H
#define TINYGPT_TOOLS_UTF8_H

#include <stddef.h>

/* The length (1-4) of the well-formed UTF-8 character at s[0..n), or 0 for
 * an ill-formed or truncated one (overlongs, surrogates, > U+10FFFF). n >= 1. */
size_t utf8_char_len(const unsigned char *s, size_t n);

#endif
