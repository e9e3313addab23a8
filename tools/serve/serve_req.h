/* serve_req.h — the requests of `tinygpt serve`, parsed and checked: JSON
 * bytes in, a struct or an OpenAI-style error naming the field out. Pure
 * (no sockets, no model): the server calls it and fuzz/fuzz_serve_req.c
 * drives it. Limits that need the model (prompt tokens against the
 * context, ids against the vocabulary) are checked by the server. */
#ifndef TINYGPT_SERVE_REQ_H
#define TINYGPT_SERVE_REQ_H

#include <stddef.h>
#include <stdint.h>

#define SERVE_MAX_STOPS 16      /* stop strings per request */
#define SERVE_MAX_STOP_LEN 256  /* bytes per stop string */
#define SERVE_MAX_LOGPROBS 20   /* alternatives per token */
#define SERVE_MAX_ATTN_TOP 100  /* next-token alternatives of /v1/attention */
#define SERVE_MAX_COMPARE_TOKENS 65536 /* the text's tokens of /v1/compare (checked
                                          by the server) */
#define SERVE_MAX_HEAD_TOKENS 8192 /* its head_tokens: every head's ablation is a pass
                                      over them, and a compare cannot be cancelled */

/* Per-request limits the server sets (from its options). */
typedef struct serve_limits {
    int max_tokens; /* max_tokens at most this */
    int max_n;      /* n at most this */
    int max_ids;    /* a prompt of ids or /detokenize's tokens: at most this many */
} serve_limits;

/* An error answer: HTTP status, the field at fault ("" for none) and a
 * one-line message. */
typedef struct serve_error {
    int status;
    char param[48];
    char msg[320];
} serve_error;

/* A prompt: text (valid UTF-8, NUL-terminated, len bytes) or token ids. */
typedef struct serve_prompt {
    char *text;
    size_t len;
    int *ids;
    int n_ids;
    int is_ids;
} serve_prompt;

/* POST /v1/completions. Unset optional fields keep the defaults noted. */
typedef struct serve_completion {
    char *model;          /* NULL: the first model */
    serve_prompt prompt;
    int max_tokens;       /* [0, limits.max_tokens] (default 16, OpenAI's) */
    int has_temperature, has_top_p, has_top_k, has_min_p, has_repeat_penalty;
    double temperature;   /* 0 (greedy) or [FLT_MIN, 100] */
    double top_p;         /* [0, 1] */
    int top_k;            /* [0, 1000000] */
    double min_p;         /* [0, 1] */
    double repeat_penalty;/* [1, 10] */
    int has_seed;
    uint64_t seed;        /* [0, 2^53]: exactly representable in JSON */
    char *stop[SERVE_MAX_STOPS];
    int n_stop;
    int n;                /* [1, limits.max_n] (default 1) */
    int stream;
    int logprobs;         /* -1: none (null or absent), else [0, SERVE_MAX_LOGPROBS] */
    int echo;
} serve_completion;

/* POST /v1/attention: every head's weights for a prompt, and the next-token
 * distribution with some heads switched off. */
typedef struct serve_attention {
    char *model;
    serve_prompt prompt;
    int (*heads_off)[2];  /* [n_off] (layer, head) pairs to silence */
    int n_off;
    int top;              /* next-token alternatives, [1, SERVE_MAX_ATTN_TOP] (default 10) */
    int weights;          /* 0: leave out the weights (only the distribution) (default 1) */
} serve_attention;

/* POST /v1/compare: the head analysis of `tinygpt compare --json` (quality,
 * per-head metrics and ablations, one head per layer, agreement) for one or
 * two loaded models on a text. */
typedef struct serve_compare {
    char *models[2];      /* "models": one or two names (or "model": one); */
    int n_models;         /* 0: the server's first two models */
    int by_model;         /* 1: named by "model" (errors name that field) */
    char *text;           /* required, valid UTF-8, NUL-terminated, len bytes */
    size_t len;
    int window;           /* 0 (default): the smaller context; else >= 2 (the server
                             checks it against the contexts) */
    int head_tokens;      /* [2, SERVE_MAX_HEAD_TOKENS] (default 2048, compare's) */
    uint64_t seed;        /* of the induction sequences, [0, 2^31-1] (default 1) */
    int agreement;        /* 0: leave out top-1 agreement and KL (default 1) */
} serve_compare;

/* POST /tokenize {"content": TEXT, "with_pieces": bool} and POST
 * /detokenize {"tokens": [ids]}; model optional. */
typedef struct serve_tokenize {
    char *model;
    char *content;
    size_t len;
    int with_pieces;
} serve_tokenize;

typedef struct serve_detokenize {
    char *model;
    int *tokens;
    int n_tokens;
} serve_detokenize;

/* Each returns 0, or -1 with *e filled (status 400) and *out freed. body
 * is body[len], not NUL-terminated, any bytes. */
int serve_parse_completion(const char *body, size_t len, const serve_limits *lim,
                           serve_completion *out, serve_error *e);
int serve_parse_attention(const char *body, size_t len, const serve_limits *lim,
                          serve_attention *out, serve_error *e);
int serve_parse_compare(const char *body, size_t len, serve_compare *out, serve_error *e);
int serve_parse_tokenize(const char *body, size_t len, serve_tokenize *out, serve_error *e);
int serve_parse_detokenize(const char *body, size_t len, const serve_limits *lim,
                           serve_detokenize *out, serve_error *e);
void serve_completion_free(serve_completion *r);
void serve_attention_free(serve_attention *r);
void serve_compare_free(serve_compare *r);
void serve_tokenize_free(serve_tokenize *r);
void serve_detokenize_free(serve_detokenize *r);

/* Fills *e (any status) and returns -1. */
int serve_fail(serve_error *e, int status, const char *param, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* {"error": {"message", "type", "param", "code"}} as a malloc'd string
 * (NULL when out of memory). type is OpenAI's: invalid_request_error for
 * 4xx, server_error otherwise; 401 authentication_error. */
char *serve_error_json(const serve_error *e);

/* 1 if s[n] is well-formed UTF-8 (no overlongs, surrogates or > U+10FFFF). */
int serve_utf8_valid(const char *s, size_t n);
/* s[n] with every ill-formed sequence replaced by U+FFFD, NUL-terminated,
 * malloc'd (NULL when out of memory); *out_len its length. JSON strings
 * must be UTF-8, and a token's bytes need not be. */
char *serve_utf8_fix(const char *s, size_t n, size_t *out_len);

#endif
