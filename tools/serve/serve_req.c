/* serve_req.c — parsing and checking the server's JSON requests (see
 * serve_req.h). Every field is checked for its type and range here;
 * unknown fields are ignored, as OpenAI's clients send some we do not use. */
#include "tools/serve/serve_req.h"
#include "tools/utf8.h"
#include "weights/json_nul.h"

#include <cjson/cJSON.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int serve_fail(serve_error *e, int status, const char *param, const char *fmt, ...) {
    e->status = status;
    snprintf(e->param, sizeof e->param, "%s", param ? param : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    return -1;
}

char *serve_error_json(const serve_error *e) {
    const char *type = e->status == 401 ? "authentication_error"
                       : e->status < 500 ? "invalid_request_error"
                                         : "server_error";
    cJSON *root = cJSON_CreateObject(), *err = cJSON_AddObjectToObject(root, "error");
    if (!err || !cJSON_AddStringToObject(err, "message", e->msg) ||
        !cJSON_AddStringToObject(err, "type", type) ||
        !(e->param[0] ? cJSON_AddStringToObject(err, "param", e->param)
                      : cJSON_AddNullToObject(err, "param")) ||
        !cJSON_AddNullToObject(err, "code")) {
        cJSON_Delete(root);
        return NULL;
    }
    char *s = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    return s;
}

int serve_utf8_valid(const char *s, size_t n) {
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        size_t k = utf8_char_len(p + i, n - i);
        if (!k) return 0;
        i += k;
    }
    return 1;
}

char *serve_utf8_fix(const char *s, size_t n, size_t *out_len) {
    const unsigned char *p = (const unsigned char *)s;
    if (n > (SIZE_MAX - 1) / 3) return NULL;
    char *out = malloc(3 * n + 1); /* each bad byte becomes 3 */
    if (!out) return NULL;
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        size_t k = utf8_char_len(p + i, n - i);
        if (k) {
            memcpy(out + o, p + i, k);
            o += k;
            i += k;
        } else {
            memcpy(out + o, "\xEF\xBF\xBD", 3);
            o += 3;
            i++;
        }
    }
    out[o] = '\0';
    if (out_len) *out_len = o;
    return out;
}

/* ---- typed field access ------------------------------------------------- */

/* Parses body into an object root; the body must be UTF-8 (cJSON does not check). */
static cJSON *parse_object(const char *body, size_t len, serve_error *e) {
    if (!serve_utf8_valid(body, len)) {
        serve_fail(e, 400, "", "the request body is not valid UTF-8");
        return NULL;
    }
    const char *nul = memchr(body, '\0', len);
    if (nul) {
        serve_fail(e, 400, "", "the request body holds a NUL byte (at offset %zu)", (size_t)(nul - body));
        return NULL;
    }
    if (wt_json_has_nul_escape(body, len)) {
        serve_fail(e, 400, "", "the request body has a string holding \\u0000 (a NUL character), "
                               "which no field here takes");
        return NULL;
    }
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(body, len, &end, 0);
    if (!root) {
        serve_fail(e, 400, "", "the request body is not valid JSON");
        return NULL;
    }
    /* cJSON stops after the first value: anything but whitespace after it
     * (a second value, NUL bytes) makes the body invalid */
    for (const char *p = end; p < body + len; p++)
        if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') {
            cJSON_Delete(root);
            serve_fail(e, 400, "", "the request body has bytes after its JSON value (at offset %zu)",
                       (size_t)(p - body));
            return NULL;
        }
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        serve_fail(e, 400, "", "the request body must be a JSON object");
        return NULL;
    }
    return root;
}

/* The field, or NULL when absent or null (null means "default"). */
static const cJSON *field(const cJSON *root, const char *name) {
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(root, name);
    return f && !cJSON_IsNull(f) ? f : NULL;
}

/* A finite number in [lo, hi] into *out; absent leaves *out. 1 if set. */
static int get_num(const cJSON *root, const char *name, double lo, double hi, double *out,
                   serve_error *e) {
    const cJSON *f = field(root, name);
    if (!f) return 0;
    if (!cJSON_IsNumber(f)) return serve_fail(e, 400, name, "'%s' must be a number", name);
    double v = f->valuedouble;
    if (!isfinite(v) || v < lo || v > hi)
        return serve_fail(e, 400, name, "'%s' must be in [%g, %g]", name, lo, hi);
    *out = v;
    return 1;
}

/* An integer in [lo, hi] (a number with no fraction). */
static int get_int(const cJSON *root, const char *name, double lo, double hi, double *out,
                   serve_error *e) {
    const cJSON *f = field(root, name);
    if (!f) return 0;
    if (!cJSON_IsNumber(f) || !isfinite(f->valuedouble) || f->valuedouble != floor(f->valuedouble))
        return serve_fail(e, 400, name, "'%s' must be an integer", name);
    if (f->valuedouble < lo || f->valuedouble > hi)
        return serve_fail(e, 400, name, "'%s' must be in [%.0f, %.0f]", name, lo, hi);
    *out = f->valuedouble;
    return 1;
}

static int get_bool(const cJSON *root, const char *name, int *out, serve_error *e) {
    const cJSON *f = field(root, name);
    if (!f) return 0;
    if (!cJSON_IsBool(f)) return serve_fail(e, 400, name, "'%s' must be true or false", name);
    *out = cJSON_IsTrue(f);
    return 1;
}

/* A copy of a string field (any length; valid UTF-8, as the body is). */
static int get_str(const cJSON *root, const char *name, char **out, size_t *len, serve_error *e) {
    const cJSON *f = field(root, name);
    if (!f) return 0;
    if (!cJSON_IsString(f)) return serve_fail(e, 400, name, "'%s' must be a string", name);
    size_t n = strlen(f->valuestring);
    if (!(*out = malloc(n + 1))) return serve_fail(e, 500, "", "out of memory");
    memcpy(*out, f->valuestring, n + 1);
    if (len) *len = n;
    return 1;
}

/* An array of at most most token ids (integers in [0, 2^31 - 1]). */
static int get_ids(const cJSON *arr, const char *name, int most, int **out, int *n,
                   serve_error *e) {
    int count = cJSON_GetArraySize(arr);
    if (count > most) return serve_fail(e, 400, name, "'%s' has %d tokens, at most %d", name, count, most);
    *out = malloc((size_t)(count ? count : 1) * sizeof **out);
    if (!*out) return serve_fail(e, 500, "", "out of memory");
    int i = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, arr) {
        double v = it->valuedouble;
        if (!cJSON_IsNumber(it) || !isfinite(v) || v != floor(v) || v < 0 || v > 2147483647.0) {
            free(*out);
            *out = NULL;
            return serve_fail(e, 400, name, "'%s' must hold token ids (integers >= 0); item %d is not", name, i);
        }
        (*out)[i++] = (int)v;
    }
    *n = i;
    return 1;
}

/* prompt: a string, a list of one string, or a list of token ids. */
static int get_prompt(const cJSON *root, const serve_limits *lim, serve_prompt *p, serve_error *e) {
    const cJSON *f = field(root, "prompt");
    if (!f) {
        p->text = calloc(1, 1); /* OpenAI's default prompt: <|endoftext|>, as the empty one here */
        return p->text ? 0 : serve_fail(e, 500, "", "out of memory");
    }
    if (cJSON_IsArray(f) && cJSON_GetArraySize(f) == 1 && cJSON_IsString(f->child)) f = f->child;
    if (cJSON_IsString(f)) {
        p->len = strlen(f->valuestring);
        if (!(p->text = malloc(p->len + 1))) return serve_fail(e, 500, "", "out of memory");
        memcpy(p->text, f->valuestring, p->len + 1);
        return 0;
    }
    if (cJSON_IsArray(f) && (!f->child || cJSON_IsNumber(f->child))) {
        p->is_ids = 1;
        return get_ids(f, "prompt", lim->max_ids, &p->ids, &p->n_ids, e) < 0 ? -1 : 0;
    }
    if (cJSON_IsArray(f))
        return serve_fail(e, 400, "prompt", "'prompt' must be a string, one string in a list, or a list of token ids (one prompt per request)");
    return serve_fail(e, 400, "prompt", "'prompt' must be a string or a list of token ids");
}

static const char *get_model(const cJSON *root, char **out, serve_error *e) {
    return get_str(root, "model", out, NULL, e) < 0 ? NULL : "";
}

/* ---- the requests ------------------------------------------------------- */

void serve_completion_free(serve_completion *r) {
    free(r->model);
    free(r->prompt.text);
    free(r->prompt.ids);
    for (int i = 0; i < r->n_stop; i++) free(r->stop[i]);
    memset(r, 0, sizeof *r);
}

static int add_stop(serve_completion *r, const cJSON *s, serve_error *e) {
    if (!cJSON_IsString(s)) return serve_fail(e, 400, "stop", "'stop' must be a string or a list of strings");
    size_t n = strlen(s->valuestring);
    if (n == 0) return 0; /* an empty stop string stops nothing: ignored, as OpenAI does */
    if (n > SERVE_MAX_STOP_LEN)
        return serve_fail(e, 400, "stop", "a stop string is %zu bytes, at most %d", n, SERVE_MAX_STOP_LEN);
    if (r->n_stop == SERVE_MAX_STOPS) return serve_fail(e, 400, "stop", "at most %d stop strings", SERVE_MAX_STOPS);
    if (!(r->stop[r->n_stop] = malloc(n + 1))) return serve_fail(e, 500, "", "out of memory");
    memcpy(r->stop[r->n_stop++], s->valuestring, n + 1);
    return 0;
}

static int completion(const cJSON *root, const serve_limits *lim, serve_completion *r, serve_error *e) {
    double v;
    int rc;
    if (!get_model(root, &r->model, e)) return -1;
    if (get_prompt(root, lim, &r->prompt, e)) return -1;
    r->max_tokens = 16;
    r->n = 1;
    r->logprobs = -1;
    if ((rc = get_int(root, "max_tokens", 0, lim->max_tokens, &v, e)) < 0) return -1;
    if (rc) r->max_tokens = (int)v;
    if ((rc = get_num(root, "temperature", 0, 100, &r->temperature, e)) < 0) return -1;
    if (rc && r->temperature > 0 && r->temperature < FLT_MIN)
        return serve_fail(e, 400, "temperature", "'temperature' must be 0 (greedy) or in [%g, 100]", FLT_MIN);
    r->has_temperature = rc;
    if ((r->has_top_p = get_num(root, "top_p", 0, 1, &r->top_p, e)) < 0) return -1;
    if ((rc = get_int(root, "top_k", 0, 1000000, &v, e)) < 0) return -1;
    if ((r->has_top_k = rc)) r->top_k = (int)v;
    if ((r->has_min_p = get_num(root, "min_p", 0, 1, &r->min_p, e)) < 0) return -1;
    if ((r->has_repeat_penalty = get_num(root, "repeat_penalty", 1, 10, &r->repeat_penalty, e)) < 0) return -1;
    if ((rc = get_int(root, "seed", 0, 9007199254740992.0, &v, e)) < 0) return -1;
    if ((r->has_seed = rc)) r->seed = (uint64_t)v;
    if ((rc = get_int(root, "n", 1, lim->max_n, &v, e)) < 0) return -1;
    if (rc) r->n = (int)v;
    if (get_bool(root, "stream", &r->stream, e) < 0 || get_bool(root, "echo", &r->echo, e) < 0) return -1;
    /* logprobs: OpenAI's completions take an integer; true/false are accepted too */
    const cJSON *lp = field(root, "logprobs");
    if (lp && cJSON_IsBool(lp)) r->logprobs = cJSON_IsTrue(lp) ? 0 : -1;
    else if ((rc = get_int(root, "logprobs", 0, SERVE_MAX_LOGPROBS, &v, e)) < 0) return -1;
    else if (rc) r->logprobs = (int)v;
    const cJSON *st = field(root, "stop");
    if (st && cJSON_IsArray(st)) {
        const cJSON *it;
        cJSON_ArrayForEach(it, st) if (add_stop(r, it, e)) return -1;
    } else if (st && add_stop(r, st, e)) return -1;
    return 0;
}

int serve_parse_completion(const char *body, size_t len, const serve_limits *lim,
                           serve_completion *out, serve_error *e) {
    memset(out, 0, sizeof *out);
    cJSON *root = parse_object(body, len, e);
    if (!root) return -1;
    int rc = completion(root, lim, out, e);
    cJSON_Delete(root);
    if (rc) serve_completion_free(out);
    return rc;
}

void serve_attention_free(serve_attention *r) {
    free(r->model);
    free(r->prompt.text);
    free(r->prompt.ids);
    free(r->heads_off);
    memset(r, 0, sizeof *r);
}

static int attention(const cJSON *root, const serve_limits *lim, serve_attention *r, serve_error *e) {
    double v;
    int rc;
    if (!get_model(root, &r->model, e)) return -1;
    if (!field(root, "prompt")) return serve_fail(e, 400, "prompt", "'prompt' is required");
    if (get_prompt(root, lim, &r->prompt, e)) return -1;
    r->top = 10;
    r->weights = 1;
    if ((rc = get_int(root, "top", 1, SERVE_MAX_ATTN_TOP, &v, e)) < 0) return -1;
    if (rc) r->top = (int)v;
    if (get_bool(root, "weights", &r->weights, e) < 0) return -1;
    const cJSON *h = field(root, "heads_off");
    if (!h) return 0;
    if (!cJSON_IsArray(h)) return serve_fail(e, 400, "heads_off", "'heads_off' must be a list of [layer, head] pairs");
    int n = cJSON_GetArraySize(h);
    if (n > 4096) return serve_fail(e, 400, "heads_off", "'heads_off' has %d pairs, at most 4096", n);
    if (!(r->heads_off = malloc((size_t)(n ? n : 1) * sizeof *r->heads_off)))
        return serve_fail(e, 500, "", "out of memory");
    const cJSON *it;
    cJSON_ArrayForEach(it, h) {
        const cJSON *a = it->child, *b = a ? a->next : NULL;
        if (!cJSON_IsArray(it) || cJSON_GetArraySize(it) != 2 || !cJSON_IsNumber(a) ||
            !cJSON_IsNumber(b) || !isfinite(a->valuedouble) || !isfinite(b->valuedouble) ||
            a->valuedouble != floor(a->valuedouble) || b->valuedouble != floor(b->valuedouble) ||
            a->valuedouble < 0 || b->valuedouble < 0 || a->valuedouble > 1e6 || b->valuedouble > 1e6)
            return serve_fail(e, 400, "heads_off", "'heads_off' item %d must be [layer, head], two integers >= 0", r->n_off);
        r->heads_off[r->n_off][0] = (int)a->valuedouble;
        r->heads_off[r->n_off++][1] = (int)b->valuedouble;
    }
    return 0;
}

int serve_parse_attention(const char *body, size_t len, const serve_limits *lim,
                          serve_attention *out, serve_error *e) {
    memset(out, 0, sizeof *out);
    cJSON *root = parse_object(body, len, e);
    if (!root) return -1;
    int rc = attention(root, lim, out, e);
    cJSON_Delete(root);
    if (rc) serve_attention_free(out);
    return rc;
}

void serve_compare_free(serve_compare *r) {
    for (int i = 0; i < r->n_models; i++) free(r->models[i]);
    free(r->text);
    memset(r, 0, sizeof *r);
}

static int compare(const cJSON *root, serve_compare *r, serve_error *e) {
    double v;
    int rc;
    const cJSON *ms = field(root, "models"), *m1 = field(root, "model");
    if (ms && m1) return serve_fail(e, 400, "models", "give 'models' (one or two names) or 'model', not both");
    if (m1) {
        if (!cJSON_IsString(m1)) return serve_fail(e, 400, "model", "'model' must be a string");
        if (!(r->models[0] = strdup(m1->valuestring))) return serve_fail(e, 500, "", "out of memory");
        r->n_models = r->by_model = 1;
    } else if (ms) {
        int n = cJSON_IsArray(ms) ? cJSON_GetArraySize(ms) : -1;
        if (n < 1 || n > 2)
            return serve_fail(e, 400, "models", "'models' must be a list of one or two model names");
        const cJSON *it;
        cJSON_ArrayForEach(it, ms) {
            if (!cJSON_IsString(it)) return serve_fail(e, 400, "models", "'models' item %d must be a string", r->n_models);
            if (!(r->models[r->n_models] = strdup(it->valuestring))) return serve_fail(e, 500, "", "out of memory");
            r->n_models++;
        }
        if (n == 2 && !strcmp(r->models[0], r->models[1]))
            return serve_fail(e, 400, "models", "'models' names '%.100s' twice; compare two different models", r->models[0]);
    }
    if ((rc = get_str(root, "text", &r->text, &r->len, e)) <= 0)
        return rc < 0 ? -1 : serve_fail(e, 400, "text", "'text' (the text the models are scored on) is required");
    r->head_tokens = 2048;
    r->seed = 1;
    r->agreement = 1;
    if ((rc = get_int(root, "window", 2, 1 << 24, &v, e)) < 0) return -1;
    if (rc) r->window = (int)v;
    if ((rc = get_int(root, "head_tokens", 2, SERVE_MAX_HEAD_TOKENS, &v, e)) < 0) return -1;
    if (rc) r->head_tokens = (int)v;
    if ((rc = get_int(root, "seed", 0, 2147483647.0, &v, e)) < 0) return -1;
    if (rc) r->seed = (uint64_t)v;
    return get_bool(root, "agreement", &r->agreement, e) < 0 ? -1 : 0;
}

int serve_parse_compare(const char *body, size_t len, serve_compare *out, serve_error *e) {
    memset(out, 0, sizeof *out);
    cJSON *root = parse_object(body, len, e);
    if (!root) return -1;
    int rc = compare(root, out, e);
    cJSON_Delete(root);
    if (rc) serve_compare_free(out);
    return rc;
}

void serve_tokenize_free(serve_tokenize *r) {
    free(r->model);
    free(r->content);
    memset(r, 0, sizeof *r);
}

int serve_parse_tokenize(const char *body, size_t len, serve_tokenize *out, serve_error *e) {
    memset(out, 0, sizeof *out);
    cJSON *root = parse_object(body, len, e);
    if (!root) return -1;
    int rc = -1;
    if (!get_model(root, &out->model, e)) goto done;
    if ((rc = get_str(root, "content", &out->content, &out->len, e)) <= 0) {
        if (rc == 0) serve_fail(e, 400, "content", "'content' (the text) is required");
        rc = -1;
        goto done;
    }
    rc = get_bool(root, "with_pieces", &out->with_pieces, e) < 0 ? -1 : 0;
done:
    cJSON_Delete(root);
    if (rc) serve_tokenize_free(out);
    return rc;
}

void serve_detokenize_free(serve_detokenize *r) {
    free(r->model);
    free(r->tokens);
    memset(r, 0, sizeof *r);
}

int serve_parse_detokenize(const char *body, size_t len, const serve_limits *lim,
                           serve_detokenize *out, serve_error *e) {
    memset(out, 0, sizeof *out);
    cJSON *root = parse_object(body, len, e);
    if (!root) return -1;
    int rc = -1;
    const cJSON *t;
    if (!get_model(root, &out->model, e)) goto done;
    if (!(t = field(root, "tokens")) || !cJSON_IsArray(t)) {
        serve_fail(e, 400, "tokens", "'tokens' (a list of token ids) is required");
        goto done;
    }
    rc = get_ids(t, "tokens", lim->max_ids, &out->tokens, &out->n_tokens, e) < 0 ? -1 : 0;
done:
    cJSON_Delete(root);
    if (rc) serve_detokenize_free(out);
    return rc;
}
