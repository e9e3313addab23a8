/* fuzz_serve_req.c — the server's request parsing (tools/serve/serve_req.c)
 * on arbitrary bytes: the first byte picks the endpoint (mod 6; 4 is /v1/compare), the rest is the
 * body. Every parse either fills a struct whose fields are in range or
 * fails with an error naming the problem; both paths free everything. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tools/serve/serve_req.h"

static void check(int ok) {
    if (!ok) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    const char *body = (const char *)data + 1;
    size_t len = size - 1;
    serve_limits lim = {.max_tokens = 4096, .max_n = 8, .max_ids = 4096};
    serve_error e;
    switch (data[0] % 6) {
    case 0: {
        serve_completion r;
        if (serve_parse_completion(body, len, &lim, &r, &e) == 0) {
            check(r.max_tokens >= 0 && r.max_tokens <= lim.max_tokens);
            check(r.n >= 1 && r.n <= lim.max_n);
            check(r.logprobs >= -1 && r.logprobs <= SERVE_MAX_LOGPROBS);
            check(r.n_stop >= 0 && r.n_stop <= SERVE_MAX_STOPS);
            check(r.prompt.is_ids ? r.prompt.n_ids <= lim.max_ids : r.prompt.text != NULL);
            serve_completion_free(&r);
        } else {
            check(e.status >= 400 && e.msg[0]);
            char *j = serve_error_json(&e);
            free(j);
        }
        break;
    }
    case 1: {
        serve_attention r;
        if (serve_parse_attention(body, len, &lim, &r, &e) == 0) {
            check(r.top >= 1 && r.top <= SERVE_MAX_ATTN_TOP);
            for (int i = 0; i < r.n_off; i++) check(r.heads_off[i][0] >= 0 && r.heads_off[i][1] >= 0);
            serve_attention_free(&r);
        }
        break;
    }
    case 2: {
        serve_tokenize r;
        if (serve_parse_tokenize(body, len, &r, &e) == 0) {
            check(serve_utf8_valid(r.content, r.len));
            serve_tokenize_free(&r);
        }
        break;
    }
    case 3: {
        serve_detokenize r;
        if (serve_parse_detokenize(body, len, &lim, &r, &e) == 0) {
            for (int i = 0; i < r.n_tokens; i++) check(r.tokens[i] >= 0);
            serve_detokenize_free(&r);
        }
        break;
    }
    case 4: {
        serve_compare r;
        if (serve_parse_compare(body, len, &r, &e) == 0) {
            check(r.n_models >= 0 && r.n_models <= 2 && r.text && serve_utf8_valid(r.text, r.len));
            for (int i = 0; i < r.n_models; i++) check(r.models[i] != NULL);
            check(r.n_models < 2 || strcmp(r.models[0], r.models[1]));
            check(r.window == 0 || r.window >= 2);
            check(r.head_tokens >= 2 && r.head_tokens <= SERVE_MAX_HEAD_TOKENS);
            check(r.seed <= 0x7fffffffu);
            serve_compare_free(&r);
        } else {
            check(e.status >= 400 && e.msg[0]);
        }
        break;
    }
    default: {
        size_t n = 0;
        char *fixed = serve_utf8_fix(body, len, &n);
        if (fixed) {
            check(serve_utf8_valid(fixed, n) && n <= 3 * len);
            free(fixed);
        }
        break;
    }
    }
    return 0;
}
