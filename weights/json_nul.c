/* json_nul.c — see json_nul.h. A library of its own: serve's request parser
 * (tools/serve/serve_req.c, fuzzed alone) shares it with the HF readers. */
#include "weights/json_nul.h"

#include <string.h>

int wt_json_has_nul_escape(const char *s, size_t n) {
    int in_str = 0;
    for (size_t i = 0; i < n; i++) {
        if (!in_str) {
            in_str = s[i] == '"';
        } else if (s[i] == '"') {
            in_str = 0;
        } else if (s[i] == '\\' && i + 1 < n) {
            if (s[i + 1] == 'u' && i + 5 < n && !memcmp(s + i + 2, "0000", 4)) return 1;
            i++; /* the escaped character */
        }
    }
    return 0;
}
