/* cmd_serve.c — `tinygpt serve`: an OpenAI-style HTTP server over the
 * library (include/tinygpt.h) on libmicrohttpd, and the page at /.
 *
 * One thread per connection (libmicrohttpd's). Each model has N request
 * slots, one library handle each (handles are single-threaded); every
 * handle maps the same file read-only, so the kernel keeps one copy of the
 * weights. A request takes a free slot of its model or waits in a bounded
 * queue (full: 503 with Retry-After). A generation checks between tokens
 * whether its client has gone (then it stops) and whether the server is
 * stopping (then it stops after a grace period). The server owns sockets,
 * queues and JSON; all model work is the library's. */
#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tinygpt.h"
#include "tools/cli.h"
#include "tools/serve/serve_req.h"
#include "tools/utf8.h"

static const char *const CMD = "serve";

/* The page's files, compiled in (serve_assets.c, made from tools/serve/web/). */
typedef struct serve_asset {
    const char *path, *type;
    const unsigned char *data;
    size_t len;
} serve_asset;
extern const serve_asset serve_assets[];
extern const size_t serve_n_assets;

#define MAX_MODELS 8
#define GRACE_S 2.0 /* after SIGINT/SIGTERM, in-flight work gets this long */

typedef struct slot {
    tinygpt *m;
    int busy;
} slot;

typedef struct model_entry {
    char name[128];
    const char *path;
    slot *slots; /* [parallel] */
    tinygpt_info info;
} model_entry;

typedef struct server {
    model_entry models[MAX_MODELS];
    int n_models, parallel, queue_max, n_waiting, n_busy;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    volatile int stopping;
    double cancel_at; /* monotonic seconds: in-flight work stops after this */
    const char *api_key;
    size_t max_body;
    serve_limits lim;
    uint64_t next_id;
} server;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- a growing string --------------------------------------------------- */

typedef struct sbuf {
    char *s;
    size_t len, cap;
    int oom;
} sbuf;

static void sb_put(sbuf *b, const char *s, size_t n) {
    if (b->oom) return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1) cap *= 2;
        char *p = realloc(b->s, cap);
        if (!p) {
            b->oom = 1;
            return;
        }
        b->s = p, b->cap = cap;
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = '\0';
}
static void sb_str(sbuf *b, const char *s) { sb_put(b, s, strlen(s)); }
static void sb_fmt(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_fmt(sbuf *b, const char *fmt, ...) {
    char tmp[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n > 0) sb_put(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}
/* bytes[n] as a JSON string (ill-formed UTF-8 replaced by U+FFFD). A
 * token's few bytes go straight in when they are well-formed UTF-8 (only
 * '"', '\\' and control bytes escaped, as RFC 8259 asks): this runs for every
 * streamed token, and cJSON's copy, print and free cost more than the
 * token's sampling. Anything else takes the general path through cJSON. */
static void sb_jstr(sbuf *b, const char *s, size_t n) {
    const unsigned char *u = (const unsigned char *)s;
    if (n <= 64 && !b->oom) {
        char tmp[2 + 6 * 64];
        size_t o = 0, i = 0;
        tmp[o++] = '"';
        while (i < n) {
            unsigned char c = u[i];
            if (c >= 0x80) {
                size_t k = utf8_char_len(u + i, n - i);
                if (!k) break; /* ill-formed: the general path */
                memcpy(tmp + o, u + i, k);
                o += k, i += k;
                continue;
            }
            if (c == '"' || c == '\\') tmp[o++] = '\\', tmp[o++] = (char)c;
            else if (c == '\n') tmp[o++] = '\\', tmp[o++] = 'n';
            else if (c < 0x20 || c == 0x7F) o += (size_t)snprintf(tmp + o, 7, "\\u%04x", c);
            else tmp[o++] = (char)c;
            i++;
        }
        if (i == n) {
            tmp[o++] = '"';
            sb_put(b, tmp, o);
            return;
        }
    }
    size_t fl;
    char *fixed = serve_utf8_fix(s, n, &fl);
    cJSON *j = fixed ? cJSON_CreateString(fixed) : NULL;
    char *p = j ? cJSON_PrintUnformatted(j) : NULL;
    if (p) sb_str(b, p);
    else b->oom = 1;
    free(p);
    cJSON_Delete(j);
    free(fixed);
}
/* A number for JSON: finite with %.6g, else null (-inf log-probabilities). */
static void sb_num(sbuf *b, double v) {
    if (isfinite(v)) sb_fmt(b, "%.6g", v);
    else sb_str(b, "null");
}

/* ---- responses ---------------------------------------------------------- */

static enum MHD_Result send_buf(struct MHD_Connection *c, int status, const char *type, char *body,
                                size_t len, int free_it) {
    struct MHD_Response *r = MHD_create_response_from_buffer(
        len, body, free_it ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
    if (!r) {
        if (free_it) free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", type);
    MHD_add_response_header(r, "Cache-Control", "no-store");
    if (status == 503) MHD_add_response_header(r, "Retry-After", "1");
    if (status == 401) MHD_add_response_header(r, "WWW-Authenticate", "Bearer");
    enum MHD_Result ret = MHD_queue_response(c, (unsigned)status, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result send_json(struct MHD_Connection *c, int status, sbuf *b) {
    if (b->oom) {
        free(b->s);
        return MHD_NO;
    }
    return send_buf(c, status, "application/json", b->s, b->len, 1);
}

static enum MHD_Result send_error(struct MHD_Connection *c, const serve_error *e) {
    char *s = serve_error_json(e);
    if (!s) return MHD_NO;
    return send_buf(c, e->status, "application/json", s, strlen(s), 1);
}

static enum MHD_Result fail(struct MHD_Connection *c, int status, const char *param,
                            const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static enum MHD_Result fail(struct MHD_Connection *c, int status, const char *param,
                            const char *fmt, ...) {
    serve_error e;
    char msg[sizeof e.msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    serve_fail(&e, status, param, "%s", msg);
    return send_error(c, &e);
}

/* ---- models and slots --------------------------------------------------- */

static model_entry *find_model(server *s, const char *name) {
    if (!name) return &s->models[0];
    for (int i = 0; i < s->n_models; i++)
        if (!strcmp(s->models[i].name, name)) return &s->models[i];
    return NULL;
}

/* A free slot of me, waiting in the queue if none is; NULL when the queue
 * is full or the server is stopping (*status 503). */
static slot *acquire(server *s, model_entry *me) {
    slot *got = NULL;
    pthread_mutex_lock(&s->mu);
    int waited = 0;
    while (!s->stopping) {
        for (int i = 0; i < s->parallel && !got; i++)
            if (!me->slots[i].busy) got = &me->slots[i];
        if (got) break;
        if (!waited) {
            if (s->n_waiting >= s->queue_max) break;
            s->n_waiting++;
            waited = 1;
        }
        pthread_cond_wait(&s->cv, &s->mu);
    }
    if (waited) s->n_waiting--;
    if (got) {
        got->busy = 1;
        s->n_busy++;
    }
    pthread_mutex_unlock(&s->mu);
    return got;
}

static void release(server *s, slot *sl) {
    pthread_mutex_lock(&s->mu);
    sl->busy = 0;
    s->n_busy--;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

static enum MHD_Result busy(struct MHD_Connection *c, server *s) {
    return s->stopping ? fail(c, 503, "", "the server is shutting down")
                       : fail(c, 503, "", "the server is busy (every slot in use and the queue full); retry later");
}

/* 1 if the client has closed its connection (checked between tokens). */
static int client_gone(struct MHD_Connection *c) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!ci) return 0;
    char b;
    ssize_t r = recv(ci->connect_fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    return r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

static int past_grace(server *s) { return s->stopping && now_s() > s->cancel_at; }

/* The library's interrupt hook for a long request (the compare's analyses
 * are hundreds of forward passes): asked before each pass, it stops the
 * work when the client has gone or the grace after a signal has passed. */
typedef struct cancel_ctx {
    struct MHD_Connection *c;
    server *s;
    int gone;
} cancel_ctx;

static int cancel_check(void *p) {
    cancel_ctx *x = p;
    if (client_gone(x->c)) x->gone = 1;
    return x->gone || past_grace(x->s);
}

/* ---- completions -------------------------------------------------------- */

/* Checks the prompt against the model; 0 or an error sent (-1 via *ret). */
static int check_prompt(server *s, model_entry *me, slot *sl, const serve_prompt *p, serve_error *e) {
    int n_ctx = me->info.n_ctx, V = me->info.n_vocab;
    if (p->is_ids) {
        if (p->n_ids > n_ctx)
            return serve_fail(e, 400, "prompt", "the prompt has %d tokens, more than the context (%d)", p->n_ids, n_ctx);
        for (int i = 0; i < p->n_ids; i++)
            if (p->ids[i] >= V)
                return serve_fail(e, 400, "prompt", "token id %d (item %d) is outside the vocabulary [0, %d)", p->ids[i], i, V);
        return 0;
    }
    size_t n = 0;
    tinygpt_status st = tinygpt_tokenize(sl->m, p->text, p->len, 1, NULL, 0, &n);
    if (st != TINYGPT_OK && st != TINYGPT_ERR_RANGE)
        return serve_fail(e, 500, "", "tokenizing the prompt failed: %s", tinygpt_last_error(sl->m));
    if (n > (size_t)n_ctx)
        return serve_fail(e, 400, "prompt", "the prompt has %zu tokens, more than the context (%d)", n, n_ctx);
    (void)s;
    return 0;
}

static void gen_opts_of(const serve_completion *r, int choice, uint64_t seed, tinygpt_generate_opts *o) {
    tinygpt_generate_opts_init(o);
    o->max_tokens = r->max_tokens;
    if (r->has_temperature) o->sampling.temp = (float)r->temperature;
    if (r->has_top_p) o->sampling.top_p = (float)r->top_p;
    if (r->has_top_k) o->sampling.top_k = r->top_k;
    if (r->has_min_p) o->sampling.min_p = (float)r->min_p;
    if (r->has_repeat_penalty) o->sampling.repeat_penalty = (float)r->repeat_penalty;
    o->sampling.seed = seed + (uint64_t)choice; /* choice i: the text --seed S+i gives */
    o->stop = (const char *const *)r->stop;
    o->n_stop = r->n_stop;
    o->top_logprobs = r->logprobs > 0 ? r->logprobs : 0;
}

static tinygpt_status start_gen(slot *sl, const serve_completion *r, const tinygpt_generate_opts *o,
                                tinygpt_gen **g) {
    tinygpt_status st;
    if (r->prompt.is_ids) {
        tinygpt_truncate(sl->m, 0);
        st = tinygpt_gen_start(sl->m, r->prompt.ids, r->prompt.n_ids, o, g);
    } else {
        st = tinygpt_gen_start_text(sl->m, r->prompt.text, r->prompt.len, o, g);
    }
    /* no logprobs asked for: skip the per-token log-softmax (most of a
     * tiny model's step beyond the forward pass: V exps in double) */
    if (st == TINYGPT_OK) tinygpt_gen_set_logprobs(*g, r->logprobs >= 0);
    return st;
}

static const char *finish_reason(tinygpt_stop_reason why) {
    return why == TINYGPT_STOP_EOS || why == TINYGPT_STOP_STRING ? "stop" : "length";
}

/* The prompt as text (for echo). */
static char *prompt_text(slot *sl, const serve_prompt *p, size_t *len) {
    if (!p->is_ids) {
        *len = p->len;
        return strdup(p->text);
    }
    size_t n = 0;
    tinygpt_detokenize(sl->m, p->ids, (size_t)p->n_ids, NULL, 0, &n);
    char *buf = malloc(n + 1);
    if (buf && tinygpt_detokenize(sl->m, p->ids, (size_t)p->n_ids, buf, n + 1, &n) != TINYGPT_OK) {
        free(buf);
        return NULL;
    }
    *len = n;
    return buf;
}

/* One token's log-probability entry (OpenAI's legacy completions shape is
 * columns; these are the per-token pieces the callers put into them). */
static void sb_top(sbuf *b, slot *sl, const tinygpt_token *t) {
    sb_str(b, "{");
    for (int k = 0; k < t->n_top; k++) {
        size_t pl;
        const char *p = tinygpt_token_piece(sl->m, t->top_ids[k], &pl);
        if (k) sb_str(b, ",");
        sb_jstr(b, p ? p : "", p ? pl : 0);
        sb_str(b, ":");
        sb_num(b, t->top_logprobs[k]);
    }
    sb_str(b, "}");
}

static void sb_head(sbuf *b, server *s, const char *object, const model_entry *me, uint64_t id) {
    sb_fmt(b, "{\"id\":\"cmpl-%llu\",\"object\":\"%s\",\"created\":%lld,\"model\":", (unsigned long long)id,
           object, (long long)time(NULL));
    sb_jstr(b, me->name, strlen(me->name));
    (void)s;
}

typedef struct choice_acc {
    sbuf text, tokens, lps, tops, offs;
    size_t text_bytes;
    int n;
} choice_acc;

/* echo + logprobs: the prompt's tokens with their log-probabilities, as
 * OpenAI's completions give them (the first token has none: null, and no
 * alternatives), into the columns of a (a->n counts them, a->text_bytes their
 * bytes). The prompt runs once more with every position's logits, in
 * chunks of at most 64 positions (64 * V floats at a time). */
#define PROMPT_CHUNK 64
static int prompt_logprobs(slot *sl, const serve_prompt *p, int top, choice_acc *a, serve_error *e) {
    int *ids = NULL, n = 0, V = tinygpt_n_vocab(sl->m);
    if (p->is_ids) {
        n = p->n_ids;
    } else {
        size_t cnt = 0;
        tinygpt_status st = tinygpt_tokenize(sl->m, p->text, p->len, 1, NULL, 0, &cnt);
        if ((st == TINYGPT_OK || st == TINYGPT_ERR_RANGE) && (ids = malloc((cnt ? cnt : 1) * sizeof *ids)))
            st = tinygpt_tokenize(sl->m, p->text, p->len, 1, ids, cnt, &cnt);
        if (st != TINYGPT_OK || !ids) {
            free(ids);
            return serve_fail(e, 500, "", "tokenizing the prompt failed: %s", tinygpt_last_error(sl->m));
        }
        n = (int)cnt;
    }
    const int *tok = p->is_ids ? p->ids : ids;
    float *lg = n > 1 ? malloc((size_t)PROMPT_CHUNK * V * sizeof *lg) : NULL;
    int *tid = malloc((size_t)(top > 0 ? top : 1) * sizeof *tid);
    float *tlp = malloc((size_t)(top > 0 ? top : 1) * sizeof *tlp);
    int rc = 0;
    if ((n > 1 && !lg) || !tid || !tlp) rc = serve_fail(e, 500, "", "out of memory");
    for (int i = 0; i < n && !rc; i++) {
        size_t pl;
        const char *piece = tinygpt_token_piece(sl->m, tok[i], &pl);
        const char *sep = a->n ? "," : "";
        sb_str(&a->tokens, sep);
        sb_jstr(&a->tokens, piece ? piece : "", piece ? pl : 0);
        sb_fmt(&a->offs, "%s%zu", sep, a->text_bytes);
        a->text_bytes += piece ? pl : 0;
        a->n++;
        if (i == 0) {
            sb_str(&a->lps, sep), sb_str(&a->lps, "null");
            sb_str(&a->tops, sep), sb_str(&a->tops, "null");
            continue;
        }
        /* row i - 1 of the chunk holding position i - 1 predicts token i */
        int q = i - 1, c0 = q / PROMPT_CHUNK * PROMPT_CHUNK;
        float *row = lg + (size_t)(q - c0) * V;
        if (q == c0) {
            int len = n - 1 - c0 < PROMPT_CHUNK ? n - 1 - c0 : PROMPT_CHUNK;
            if (tinygpt_eval(sl->m, tok + c0, len, c0, lg, 1) != TINYGPT_OK ||
                tinygpt_logprobs(sl->m, lg, (size_t)len, lg) != TINYGPT_OK) {
                rc = serve_fail(e, 500, "", "scoring the prompt failed: %s", tinygpt_last_error(sl->m));
                break;
            }
        }
        sb_str(&a->lps, sep);
        sb_num(&a->lps, row[tok[i]]);
        sb_str(&a->tops, sep);
        sb_str(&a->tops, "{");
        int k = top < V ? top : V;
        /* the rows already hold log-probabilities: their top k are the logits' */
        if (k > 0 && tinygpt_top_k(sl->m, row, k, tid, tlp) == TINYGPT_OK)
            for (int j = 0; j < k; j++) {
                const char *tp = tinygpt_token_piece(sl->m, tid[j], &pl);
                if (j) sb_str(&a->tops, ",");
                sb_jstr(&a->tops, tp ? tp : "", tp ? pl : 0);
                sb_str(&a->tops, ":");
                sb_num(&a->tops, row[tid[j]]);
            }
        sb_str(&a->tops, "}");
    }
    free(lg), free(tid), free(tlp), free(ids);
    if (!rc && (a->tokens.oom || a->lps.oom || a->tops.oom || a->offs.oom))
        rc = serve_fail(e, 500, "", "out of memory");
    return rc;
}

static enum MHD_Result completion_plain(struct MHD_Connection *c, server *s, model_entry *me, slot *sl,
                                        const serve_completion *r, uint64_t seed, uint64_t id) {
    sbuf b = {0};
    int n_prompt = 0, n_gen = 0;
    sb_head(&b, s, "text_completion", me, id);
    sb_str(&b, ",\"choices\":[");
    for (int ch = 0; ch < r->n; ch++) {
        tinygpt_generate_opts o;
        gen_opts_of(r, ch, seed, &o);
        choice_acc a = {0};
        char *echo = NULL;
        size_t echo_len = 0;
        if (r->echo && (echo = prompt_text(sl, &r->prompt, &echo_len))) sb_put(&a.text, echo, echo_len);
        free(echo);
        /* echo + logprobs: the prompt's columns first, from their own eval
         * (the generation's prefill starts again from position 0) */
        serve_error pe;
        if (r->echo && r->logprobs >= 0 && prompt_logprobs(sl, &r->prompt, r->logprobs, &a, &pe)) {
            free(a.text.s), free(a.tokens.s), free(a.lps.s), free(a.tops.s), free(a.offs.s);
            free(b.s);
            return send_error(c, &pe);
        }
        a.text_bytes = echo_len; /* the generated tokens' offsets follow the prompt's text */
        tinygpt_gen *g = NULL;
        if (start_gen(sl, r, &o, &g) != TINYGPT_OK) {
            free(a.text.s), free(a.tokens.s), free(a.lps.s), free(a.tops.s), free(a.offs.s);
            free(b.s);
            return fail(c, 500, "", "generation failed: %s", tinygpt_last_error(sl->m));
        }
        tinygpt_token t;
        tinygpt_status st = TINYGPT_OK;
        int gone = 0;
        for (;;) {
            if ((st = tinygpt_gen_next(g, &t)) != TINYGPT_OK) break;
            sb_put(&a.text, t.out, t.out_len);
            if (t.id < 0) break;
            if (r->logprobs >= 0) {
                const char *sep = a.n ? "," : "";
                sb_str(&a.tokens, sep);
                sb_jstr(&a.tokens, t.piece, t.piece_len);
                sb_str(&a.lps, sep);
                sb_num(&a.lps, t.logprob);
                sb_str(&a.tops, sep);
                sb_top(&a.tops, sl, &t);
                sb_fmt(&a.offs, "%s%zu", sep, a.text_bytes);
                a.text_bytes += t.piece_len;
            }
            a.n++;
            if (client_gone(c) || past_grace(s)) {
                gone = client_gone(c);
                tinygpt_gen_stop(g);
            }
        }
        tinygpt_generate_result res;
        tinygpt_gen_result(g, &res);
        tinygpt_gen_free(g);
        int oom = a.text.oom || a.tokens.oom || a.lps.oom || a.tops.oom || a.offs.oom;
        if (st != TINYGPT_OK || gone || oom) {
            free(a.text.s), free(a.tokens.s), free(a.lps.s), free(a.tops.s), free(a.offs.s);
            free(b.s);
            if (gone) return MHD_NO; /* nobody to answer */
            return fail(c, 500, "", "generation failed: %s", oom ? "out of memory" : tinygpt_last_error(sl->m));
        }
        n_prompt = res.n_prompt;
        n_gen += res.n_tokens;
        sb_fmt(&b, "%s{\"index\":%d,\"text\":", ch ? "," : "", ch);
        sb_jstr(&b, a.text.s ? a.text.s : "", a.text.len);
        if (r->logprobs >= 0) {
            sb_str(&b, ",\"logprobs\":{\"tokens\":[");
            if (a.tokens.s) sb_str(&b, a.tokens.s);
            sb_str(&b, "],\"token_logprobs\":[");
            if (a.lps.s) sb_str(&b, a.lps.s);
            sb_str(&b, "],\"top_logprobs\":[");
            if (a.tops.s) sb_str(&b, a.tops.s);
            sb_str(&b, "],\"text_offset\":[");
            if (a.offs.s) sb_str(&b, a.offs.s);
            sb_str(&b, "]}");
        } else {
            sb_str(&b, ",\"logprobs\":null");
        }
        sb_fmt(&b, ",\"finish_reason\":\"%s\",\"tinygpt_stop\":\"%s\"}", finish_reason(res.stop),
               tinygpt_stop_reason_str(res.stop));
        free(a.text.s), free(a.tokens.s), free(a.lps.s), free(a.tops.s), free(a.offs.s);
    }
    sb_fmt(&b, "],\"usage\":{\"prompt_tokens\":%d,\"completion_tokens\":%d,\"total_tokens\":%d},"
               "\"seed\":%llu}",
           n_prompt, n_gen, n_prompt + n_gen, (unsigned long long)seed);
    return send_json(c, 200, &b);
}

/* A streamed completion: server-sent events, one per token, produced by
 * libmicrohttpd's reader callback as the client takes them. */
typedef struct stream_ctx {
    server *s;
    model_entry *me;
    slot *sl;
    serve_completion req;
    uint64_t seed, id;
    int choice; /* the choice running (or next) */
    tinygpt_gen *g;
    int done;   /* 1: [DONE] queued */
    size_t text_bytes; /* the choice's text before the next token (text_offset, as a plain one's) */
    sbuf out;   /* bytes not yet handed to libmicrohttpd */
    size_t sent;
    sbuf head;  /* every event's start, up to "index": (made once: id, created, model) */
} stream_ctx;

static void stream_head(stream_ctx *x) {
    sbuf *b = &x->out;
    if (!x->head.s) {
        sb_str(&x->head, "data: ");
        sb_head(&x->head, x->s, "text_completion", x->me, x->id);
        sb_str(&x->head, ",\"choices\":[{\"index\":");
        if (x->head.oom) b->oom = 1;
    }
    if (x->head.s) sb_put(b, x->head.s, x->head.len);
}

static void stream_chunk(stream_ctx *x, const char *text, size_t len, const tinygpt_token *t,
                         const char *finish) {
    sbuf *b = &x->out;
    stream_head(x);
    sb_fmt(b, "%d,\"text\":", x->choice);
    sb_jstr(b, text, len);
    if (t && x->req.logprobs >= 0) {
        sb_str(b, ",\"logprobs\":{\"tokens\":[");
        sb_jstr(b, t->piece, t->piece_len);
        sb_str(b, "],\"token_logprobs\":[");
        sb_num(b, t->logprob);
        sb_str(b, "],\"top_logprobs\":[");
        sb_top(b, x->sl, t);
        sb_fmt(b, "],\"text_offset\":[%zu]},\"token_id\":%d", x->text_bytes, t->id);
        x->text_bytes += t->piece_len;
    } else {
        sb_str(b, ",\"logprobs\":null");
    }
    if (finish) sb_fmt(b, ",\"finish_reason\":\"%s\"}]}\n\n", finish);
    else sb_str(b, ",\"finish_reason\":null}]}\n\n");
}

/* The echoed prompt as one event; a (non-NULL with logprobs) holds its
 * tokens' columns, as a plain completion's start. */
static void stream_echo(stream_ctx *x, const char *text, size_t len, const choice_acc *a) {
    sbuf *b = &x->out;
    stream_head(x);
    sb_fmt(b, "%d,\"text\":", x->choice);
    sb_jstr(b, text, len);
    if (a) {
        sb_str(b, ",\"logprobs\":{\"tokens\":[");
        if (a->tokens.s) sb_str(b, a->tokens.s);
        sb_str(b, "],\"token_logprobs\":[");
        if (a->lps.s) sb_str(b, a->lps.s);
        sb_str(b, "],\"top_logprobs\":[");
        if (a->tops.s) sb_str(b, a->tops.s);
        sb_str(b, "],\"text_offset\":[");
        if (a->offs.s) sb_str(b, a->offs.s);
        sb_str(b, "]}");
    } else {
        sb_str(b, ",\"logprobs\":null");
    }
    sb_str(b, ",\"finish_reason\":null}]}\n\n");
}

/* Queues the next event(s) into x->out; -1 at the end of the stream. */
static int stream_step(stream_ctx *x) {
    if (x->done) return -1;
    if (!x->g) {
        if (x->choice >= x->req.n) {
            sb_str(&x->out, "data: [DONE]\n\n");
            x->done = 1;
            return 0;
        }
        tinygpt_generate_opts o;
        gen_opts_of(&x->req, x->choice, x->seed, &o);
        x->text_bytes = 0;
        /* echo: the prompt as the choice's first event (with logprobs, its
         * tokens' columns: their eval comes before the generation's prefill) */
        choice_acc a = {0};
        serve_error e;
        char *echo = NULL;
        size_t echo_len = 0;
        int failed = 0;
        if (x->req.echo) {
            echo = prompt_text(x->sl, &x->req.prompt, &echo_len);
            if (echo && x->req.logprobs >= 0)
                failed = prompt_logprobs(x->sl, &x->req.prompt, x->req.logprobs, &a, &e) != 0;
        }
        if (!failed && start_gen(x->sl, &x->req, &o, &x->g) != TINYGPT_OK) {
            serve_fail(&e, 500, "", "generation failed: %s", tinygpt_last_error(x->sl->m));
            failed = 1;
        }
        if (!failed && echo) {
            stream_echo(x, echo, echo_len, x->req.logprobs >= 0 ? &a : NULL);
            x->text_bytes = echo_len;
        }
        free(echo);
        free(a.text.s), free(a.tokens.s), free(a.lps.s), free(a.tops.s), free(a.offs.s);
        if (!failed && x->req.echo) return 0;
        if (failed) {
            char *j = serve_error_json(&e);
            sb_str(&x->out, "data: ");
            sb_str(&x->out, j ? j : "{}");
            sb_str(&x->out, "\n\n");
            free(j);
            if (x->g) tinygpt_gen_free(x->g);
            x->g = NULL;
            x->choice = x->req.n;
            return 0;
        }
    }
    tinygpt_token t;
    tinygpt_status st = tinygpt_gen_next(x->g, &t);
    if (st == TINYGPT_OK && t.id >= 0) {
        stream_chunk(x, t.out, t.out_len, &t, NULL);
        if (past_grace(x->s)) tinygpt_gen_stop(x->g);
        return 0;
    }
    tinygpt_generate_result res;
    tinygpt_gen_result(x->g, &res);
    tinygpt_gen_free(x->g);
    x->g = NULL;
    stream_chunk(x, st == TINYGPT_OK ? t.out : "", st == TINYGPT_OK ? t.out_len : 0, NULL,
                 st == TINYGPT_OK ? finish_reason(res.stop) : "error");
    x->choice++;
    return 0;
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max) {
    stream_ctx *x = cls;
    (void)pos;
    if (x->sent == x->out.len) {
        x->sent = x->out.len = 0;
        if (x->out.oom) return MHD_CONTENT_READER_END_WITH_ERROR;
        if (stream_step(x) < 0) return MHD_CONTENT_READER_END_OF_STREAM;
        /* more events while they come fast (one write per token costs more
         * than a tiny model's token), for at most 2 ms and half the buffer */
        double t0 = now_s();
        while (x->out.len < max / 2 && !x->done && !x->out.oom && now_s() - t0 < 0.002)
            if (stream_step(x) < 0) break;
        if (x->out.oom) return MHD_CONTENT_READER_END_WITH_ERROR;
        if (x->out.len == 0) return MHD_CONTENT_READER_END_OF_STREAM;
    }
    size_t n = x->out.len - x->sent;
    if (n > max) n = max;
    memcpy(buf, x->out.s + x->sent, n);
    x->sent += n;
    return (ssize_t)n;
}

/* Called when the stream ends or the client went away: frees the slot. */
static void stream_free(void *cls) {
    stream_ctx *x = cls;
    if (x->g) tinygpt_gen_free(x->g);
    release(x->s, x->sl);
    serve_completion_free(&x->req);
    free(x->out.s);
    free(x->head.s);
    free(x);
}

static uint64_t fresh_seed(server *s) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    pthread_mutex_lock(&s->mu);
    uint64_t k = s->next_id++;
    pthread_mutex_unlock(&s->mu);
    return ((uint64_t)ts.tv_sec * 1000000007u + (uint64_t)ts.tv_nsec + k * 0x9E3779B97F4A7C15u) &
           ((1ull << 53) - 1);
}

static enum MHD_Result do_completion(struct MHD_Connection *c, server *s, const char *body, size_t len) {
    serve_completion r;
    serve_error e;
    if (serve_parse_completion(body, len, &s->lim, &r, &e)) return send_error(c, &e);
    model_entry *me = find_model(s, r.model);
    if (!me) { /* the message names the model: free the request after it */
        enum MHD_Result ret = fail(c, 404, "model", "no model named '%.100s' (see GET /v1/models)", r.model);
        serve_completion_free(&r);
        return ret;
    }
    slot *sl = acquire(s, me);
    if (!sl) {
        serve_completion_free(&r);
        return busy(c, s);
    }
    if (check_prompt(s, me, sl, &r.prompt, &e)) {
        release(s, sl);
        serve_completion_free(&r);
        return send_error(c, &e);
    }
    uint64_t seed = r.has_seed ? r.seed : fresh_seed(s);
    uint64_t id = fresh_seed(s);
    if (!r.stream) {
        enum MHD_Result ret = completion_plain(c, s, me, sl, &r, seed, id);
        release(s, sl);
        serve_completion_free(&r);
        return ret;
    }
    stream_ctx *x = calloc(1, sizeof *x);
    if (!x) {
        release(s, sl);
        serve_completion_free(&r);
        return MHD_NO;
    }
    *x = (stream_ctx){.s = s, .me = me, .sl = sl, .req = r, .seed = seed, .id = id};
    struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, stream_read, x, stream_free);
    if (!resp) {
        stream_free(x);
        return MHD_NO;
    }
    MHD_add_response_header(resp, "Content-Type", "text/event-stream");
    MHD_add_response_header(resp, "Cache-Control", "no-store");
    enum MHD_Result ret = MHD_queue_response(c, 200, resp);
    MHD_destroy_response(resp);
    return ret;
}

/* ---- tokenize, detokenize, attention ------------------------------------- */

static enum MHD_Result do_tokenize(struct MHD_Connection *c, server *s, const char *body, size_t len) {
    serve_tokenize r;
    serve_error e;
    if (serve_parse_tokenize(body, len, &r, &e)) return send_error(c, &e);
    model_entry *me = find_model(s, r.model);
    if (!me) { /* the message names the model: free the request after it */
        enum MHD_Result ret = fail(c, 404, "model", "no model named '%.100s' (see GET /v1/models)", r.model);
        serve_tokenize_free(&r);
        return ret;
    }
    slot *sl = acquire(s, me);
    if (!sl) {
        serve_tokenize_free(&r);
        return busy(c, s);
    }
    size_t n = 0;
    int *ids = NULL;
    tinygpt_status st = tinygpt_tokenize(sl->m, r.content, r.len, 1, NULL, 0, &n);
    if ((st == TINYGPT_OK || st == TINYGPT_ERR_RANGE) && (ids = malloc((n ? n : 1) * sizeof *ids)))
        st = tinygpt_tokenize(sl->m, r.content, r.len, 1, ids, n, &n);
    sbuf b = {0};
    if (st == TINYGPT_OK && ids) {
        sb_str(&b, "{\"tokens\":[");
        for (size_t i = 0; i < n; i++) sb_fmt(&b, i ? ",%d" : "%d", ids[i]);
        sb_str(&b, "]");
        if (r.with_pieces) {
            sb_str(&b, ",\"pieces\":[");
            for (size_t i = 0; i < n; i++) {
                size_t pl;
                const char *p = tinygpt_token_piece(sl->m, ids[i], &pl);
                if (i) sb_str(&b, ",");
                sb_jstr(&b, p ? p : "", p ? pl : 0);
            }
            sb_str(&b, "]");
        }
        sb_str(&b, "}");
    }
    char msg[256];
    snprintf(msg, sizeof msg, "%s", tinygpt_last_error(sl->m));
    release(s, sl);
    free(ids);
    serve_tokenize_free(&r);
    if (st != TINYGPT_OK || !b.s) {
        free(b.s);
        return fail(c, 500, "", "tokenizing failed: %s", msg);
    }
    return send_json(c, 200, &b);
}

static enum MHD_Result do_detokenize(struct MHD_Connection *c, server *s, const char *body, size_t len) {
    serve_detokenize r;
    serve_error e;
    if (serve_parse_detokenize(body, len, &s->lim, &r, &e)) return send_error(c, &e);
    model_entry *me = find_model(s, r.model);
    if (!me) { /* the message names the model: free the request after it */
        enum MHD_Result ret = fail(c, 404, "model", "no model named '%.100s' (see GET /v1/models)", r.model);
        serve_detokenize_free(&r);
        return ret;
    }
    for (int i = 0; i < r.n_tokens; i++)
        if (r.tokens[i] >= me->info.n_vocab) {
            int id = r.tokens[i];
            serve_detokenize_free(&r);
            return fail(c, 400, "tokens", "token id %d (item %d) is outside the vocabulary [0, %d)", id, i, me->info.n_vocab);
        }
    slot *sl = acquire(s, me);
    if (!sl) {
        serve_detokenize_free(&r);
        return busy(c, s);
    }
    size_t n = 0;
    char *buf = NULL;
    tinygpt_status st = tinygpt_detokenize(sl->m, r.tokens, (size_t)r.n_tokens, NULL, 0, &n);
    if ((st == TINYGPT_OK || st == TINYGPT_ERR_RANGE) && (buf = malloc(n + 1)))
        st = tinygpt_detokenize(sl->m, r.tokens, (size_t)r.n_tokens, buf, n + 1, &n);
    release(s, sl);
    serve_detokenize_free(&r);
    if (st != TINYGPT_OK || !buf) {
        free(buf);
        return fail(c, 500, "", "detokenizing failed");
    }
    sbuf b = {0};
    sb_str(&b, "{\"content\":");
    sb_jstr(&b, buf, n);
    sb_str(&b, "}");
    free(buf);
    return send_json(c, 200, &b);
}

#define MAX_ATTN_TOKENS 1024

static enum MHD_Result do_attention(struct MHD_Connection *c, server *s, const char *body, size_t len) {
    serve_attention r;
    serve_error e;
    if (serve_parse_attention(body, len, &s->lim, &r, &e)) return send_error(c, &e);
    model_entry *me = find_model(s, r.model);
    if (!me) { /* the message names the model: free the request after it */
        enum MHD_Result ret = fail(c, 404, "model", "no model named '%.100s' (see GET /v1/models)", r.model);
        serve_attention_free(&r);
        return ret;
    }
    int L = me->info.n_layer, H = me->info.n_head, V = me->info.n_vocab;
    for (int i = 0; i < r.n_off; i++)
        if (r.heads_off[i][0] >= L || r.heads_off[i][1] >= H) {
            int l = r.heads_off[i][0], h = r.heads_off[i][1];
            serve_attention_free(&r);
            return fail(c, 400, "heads_off", "heads_off item %d: [%d, %d] is not a head of %s (%d layers x %d heads)", i,
                        l, h, me->name, L, H);
        }
    slot *sl = acquire(s, me);
    if (!sl) {
        serve_attention_free(&r);
        return busy(c, s);
    }
    int *ids = NULL, n = 0;
    float *w = NULL, *logits = NULL, *lps = NULL;
    int *top = NULL;
    uint8_t *mask = NULL;
    sbuf b = {0};
    if (check_prompt(s, me, sl, &r.prompt, &e)) goto fail_e;
    if (r.prompt.is_ids) {
        n = r.prompt.n_ids;
        ids = malloc((size_t)(n ? n : 1) * sizeof *ids);
        if (ids) memcpy(ids, r.prompt.ids, (size_t)n * sizeof *ids);
    } else {
        size_t cnt = 0;
        tinygpt_tokenize(sl->m, r.prompt.text, r.prompt.len, 1, NULL, 0, &cnt);
        n = (int)cnt;
        if ((ids = malloc((cnt ? cnt : 1) * sizeof *ids)) &&
            tinygpt_tokenize(sl->m, r.prompt.text, r.prompt.len, 1, ids, cnt, &cnt) != TINYGPT_OK) {
            serve_fail(&e, 500, "", "tokenizing failed: %s", tinygpt_last_error(sl->m));
            goto fail_e;
        }
    }
    if (n < 1) {
        serve_fail(&e, 400, "prompt", "the prompt has no tokens");
        goto fail_e;
    }
    if (n > MAX_ATTN_TOKENS) {
        serve_fail(&e, 400, "prompt", "the prompt has %d tokens; attention is served for at most %d", n, MAX_ATTN_TOKENS);
        goto fail_e;
    }
    size_t nw = (size_t)L * H * n * n;
    w = malloc(nw * sizeof *w);
    logits = malloc((size_t)V * sizeof *logits);
    lps = malloc((size_t)r.top * sizeof *lps);
    top = malloc((size_t)r.top * sizeof *top);
    mask = malloc((size_t)L * H);
    if (!ids || !w || !logits || !lps || !top || !mask) {
        serve_fail(&e, 500, "", "out of memory");
        goto fail_e;
    }
    memset(mask, 1, (size_t)L * H);
    for (int i = 0; i < r.n_off; i++) mask[r.heads_off[i][0] * H + r.heads_off[i][1]] = 0;
    tinygpt_status st = tinygpt_set_head_mask(sl->m, r.n_off ? mask : NULL);
    if (st == TINYGPT_OK) st = tinygpt_attention(sl->m, ids, n, w, logits);
    tinygpt_set_head_mask(sl->m, NULL); /* the slot's next user starts clean */
    int k = r.top < V ? r.top : V;
    if (st == TINYGPT_OK) st = tinygpt_top_k(sl->m, logits, k, top, lps);
    if (st != TINYGPT_OK) {
        serve_fail(&e, 500, "", "attention failed: %s", tinygpt_last_error(sl->m));
        goto fail_e;
    }
    sb_str(&b, "{\"model\":");
    sb_jstr(&b, me->name, strlen(me->name));
    sb_fmt(&b, ",\"n_layer\":%d,\"n_head\":%d,\"n_tokens\":%d,\"tokens\":[", L, H, n);
    for (int i = 0; i < n; i++) {
        size_t pl;
        const char *p = tinygpt_token_piece(sl->m, ids[i], &pl);
        sb_fmt(&b, "%s{\"id\":%d,\"text\":", i ? "," : "", ids[i]);
        sb_jstr(&b, p ? p : "", p ? pl : 0);
        sb_str(&b, "}");
    }
    sb_str(&b, "],\"heads_off\":[");
    for (int i = 0; i < r.n_off; i++) sb_fmt(&b, "%s[%d,%d]", i ? "," : "", r.heads_off[i][0], r.heads_off[i][1]);
    sb_str(&b, "],\"next\":[");
    for (int i = 0; i < k; i++) {
        size_t pl;
        const char *p = tinygpt_token_piece(sl->m, top[i], &pl);
        sb_fmt(&b, "%s{\"id\":%d,\"text\":", i ? "," : "", top[i]);
        sb_jstr(&b, p ? p : "", p ? pl : 0);
        sb_str(&b, ",\"logprob\":");
        sb_num(&b, lps[i]);
        sb_str(&b, "}");
    }
    sb_str(&b, "]");
    if (r.weights) {
        /* weights[l][h][q]: query q's row over keys 0..q (the causal part only) */
        sb_str(&b, ",\"weights\":[");
        for (int l = 0; l < L; l++) {
            sb_str(&b, l ? ",[" : "[");
            for (int h = 0; h < H; h++) {
                sb_str(&b, h ? ",[" : "[");
                for (int q = 0; q < n; q++) {
                    const float *row = w + (((size_t)l * H + h) * n + q) * n;
                    sb_str(&b, q ? ",[" : "[");
                    for (int kk = 0; kk <= q; kk++) sb_fmt(&b, kk ? ",%.4g" : "%.4g", row[kk]);
                    sb_str(&b, "]");
                }
                sb_str(&b, "]");
            }
            sb_str(&b, "]");
        }
        sb_str(&b, "]");
    }
    sb_str(&b, "}");
    release(s, sl);
    free(ids), free(w), free(logits), free(lps), free(top), free(mask);
    serve_attention_free(&r);
    return send_json(c, 200, &b);
fail_e:
    release(s, sl);
    free(ids), free(w), free(logits), free(lps), free(top), free(mask);
    free(b.s);
    serve_attention_free(&r);
    return send_error(c, &e);
}

/* ---- compare: the head analysis --------------------------------------------- */

/* "key":v with %.9g (tinygpt compare --json's digits), null when not finite. */
static void sb_kv9(sbuf *b, const char *key, double v, int comma) {
    if (isfinite(v)) sb_fmt(b, "\"%s\":%.9g%s", key, v, comma ? "," : "");
    else sb_fmt(b, "\"%s\":null%s", key, comma ? "," : "");
}

/* One model's part of `tinygpt compare --json`: configuration, quality,
 * heads and layers (speed is left out: it is a timing, not an answer). */
static void sb_compare_model(sbuf *b, const model_entry *me, const tinygpt_quality *q,
                             const tinygpt_head_analysis *ha) {
    const tinygpt_info *in = &me->info;
    sb_str(b, "{\"name\":");
    sb_jstr(b, me->name, strlen(me->name));
    sb_fmt(b, ",\"arch\":\"%s\",\"n_layer\":%d,\"n_head\":%d,\"n_kv_head\":%d,\"head_size\":%d,"
              "\"n_embd\":%d,\"n_ctx\":%d,\"n_vocab\":%d,\"n_params\":%llu,",
           in->arch, in->n_layer, in->n_head, in->n_kv_head, in->head_size, in->n_embd, in->n_ctx,
           in->n_vocab, (unsigned long long)in->n_params);
    sb_fmt(b, "\"quality\":{\"tokens\":%llu,\"bytes\":%llu,", (unsigned long long)q->tokens,
           (unsigned long long)q->bytes);
    sb_kv9(b, "nats_per_token", q->nats_per_token, 1);
    sb_kv9(b, "perplexity", q->perplexity, 1);
    sb_kv9(b, "nats_per_byte", q->nats_per_byte, 1);
    sb_str(b, "\"by_position\":[");
    for (int k = 0; k < TINYGPT_LOSS_BUCKETS; k++) {
        const tinygpt_loss_bucket *bk = &q->by_position[k];
        sb_fmt(b, "%s{\"from\":%d,\"to\":%d,\"tokens\":%llu,", k ? "," : "", bk->from, bk->to,
               (unsigned long long)bk->tokens);
        sb_kv9(b, "nats_per_token", bk->nats_per_token, 0);
        sb_str(b, "}");
    }
    sb_str(b, "],");
    sb_kv9(b, "in_context_score", q->in_context_score, 0);
    sb_fmt(b, "},\"head_tokens_scored\":%llu,", (unsigned long long)ha->tokens);
    sb_kv9(b, "baseline_loss", ha->baseline_loss, 1);
    sb_str(b, "\"heads\":[");
    int H = ha->n_head;
    for (int i = 0; i < ha->n_layer * H; i++) {
        const tinygpt_head *h = &ha->heads[i];
        sb_fmt(b, "%s{\"layer\":%d,\"head\":%d,\"kv_head\":%d,", i ? "," : "", h->layer, h->head, h->kv_head);
        sb_kv9(b, "entropy", h->entropy, 1);
        sb_kv9(b, "confidence", h->confidence, 1);
        sb_kv9(b, "sink", h->sink, 1);
        sb_kv9(b, "prev", h->prev, 1);
        sb_kv9(b, "local", h->local, 1);
        sb_kv9(b, "induction", h->induction, 1);
        sb_kv9(b, "ablation_loss", h->ablation_loss, 1);
        sb_kv9(b, "ablation_delta", h->ablation_delta, 1);
        if (H > 1) sb_kv9(b, "only_head_loss", h->only_loss, 1);
        sb_fmt(b, "\"class\":\"%s\"}", h->cls);
    }
    sb_str(b, "],\"layers\":[");
    for (int l = 0; l < ha->n_layers; l++) {
        const tinygpt_layer_heads *y = &ha->layers[l];
        sb_fmt(b, "%s{\"layer\":%d,\"best_head\":%d,", l ? "," : "", y->layer, y->best_head);
        sb_kv9(b, "all_heads_loss", y->all_heads_loss, 1);
        sb_kv9(b, "best_head_loss", y->best_head_loss, 1);
        sb_kv9(b, "random_head_loss", y->random_head_loss, 0);
        sb_str(b, "}");
    }
    sb_str(b, "]}");
}

/* The text's ids under a model (compare's: "<|endoftext|>" is plain text). */
static int compare_ids(slot *sl, const serve_compare *r, int **ids, size_t *n, serve_error *e) {
    *n = 0;
    tinygpt_status st = tinygpt_tokenize(sl->m, r->text, r->len, 0, NULL, 0, n);
    if (st != TINYGPT_OK && st != TINYGPT_ERR_RANGE)
        return serve_fail(e, 500, "", "tokenizing the text failed: %s", tinygpt_last_error(sl->m));
    if (*n < 2 || *n > SERVE_MAX_COMPARE_TOKENS)
        return serve_fail(e, 400, "text", "the text is %zu tokens; compare takes 2 to %d", *n,
                          SERVE_MAX_COMPARE_TOKENS);
    if (!(*ids = malloc(*n * sizeof **ids))) return serve_fail(e, 500, "", "out of memory");
    if (tinygpt_tokenize(sl->m, r->text, r->len, 0, *ids, *n, n) != TINYGPT_OK)
        return serve_fail(e, 500, "", "tokenizing the text failed: %s", tinygpt_last_error(sl->m));
    return 0;
}

static enum MHD_Result do_compare(struct MHD_Connection *c, server *s, const char *body, size_t len) {
    serve_compare r;
    serve_error e;
    if (serve_parse_compare(body, len, &r, &e)) return send_error(c, &e);
    model_entry *me[2] = {NULL, NULL};
    int nm = r.n_models ? r.n_models : (s->n_models < 2 ? s->n_models : 2);
    for (int i = 0; i < nm; i++) {
        me[i] = r.n_models ? find_model(s, r.models[i]) : &s->models[i];
        if (!me[i]) {
            enum MHD_Result ret = fail(c, 404, r.by_model ? "model" : "models",
                                       "no model named '%.100s' (see GET /v1/models)", r.models[i]);
            serve_compare_free(&r);
            return ret;
        }
    }
    int N = me[0]->info.n_ctx;
    if (nm == 2 && me[1]->info.n_ctx < N) N = me[1]->info.n_ctx;
    if (r.window > N) {
        int w = r.window;
        serve_compare_free(&r);
        return fail(c, 400, "window", "'window' %d is larger than the %s context, %d", w,
                    nm == 2 ? "smaller" : "model's", N);
    }
    if (r.window) N = r.window;
    /* slots in the order of the server's models: two compares of one pair
     * cannot each hold the slot the other waits for */
    int first = nm == 2 && me[1] < me[0] ? 1 : 0;
    slot *sl[2] = {NULL, NULL};
    for (int k = 0; k < nm; k++) {
        int i = k ? 1 - first : first;
        if (!(sl[i] = acquire(s, me[i]))) {
            if (sl[1 - i]) release(s, sl[1 - i]);
            serve_compare_free(&r);
            return busy(c, s);
        }
    }
    cancel_ctx cx = {c, s, 0};
    for (int i = 0; i < nm; i++) tinygpt_set_interrupt(sl[i]->m, cancel_check, &cx);
    int *ids[2] = {NULL, NULL};
    size_t n_ids[2] = {0, 0};
    tinygpt_quality q[2];
    tinygpt_head_analysis *ha[2] = {NULL, NULL};
    tinygpt_agreement ag;
    int do_agree = nm == 2 && r.agreement;
    sbuf b = {0};
    int failed = 0;
    for (int i = 0; i < nm && !failed; i++) {
        if (compare_ids(sl[i], &r, &ids[i], &n_ids[i], &e)) {
            failed = 1;
            break;
        }
        tinygpt_heads_opts ho;
        tinygpt_heads_opts_init(&ho);
        ho.window = N, ho.head_tokens = (uint64_t)r.head_tokens, ho.seed = r.seed;
        if (tinygpt_run_quality(sl[i]->m, ids[i], n_ids[i], N, &q[i]) != TINYGPT_OK ||
            tinygpt_run_heads(sl[i]->m, ids[i], n_ids[i], &ho, &ha[i]) != TINYGPT_OK) {
            serve_fail(&e, 500, "", "%s: %s", me[i]->name, tinygpt_last_error(sl[i]->m));
            failed = 1;
        }
    }
    if (!failed && do_agree) {
        tinygpt_status st = tinygpt_run_agreement(sl[0]->m, sl[1]->m, ids[0], n_ids[0], N, &ag);
        if (st == TINYGPT_ERR_ARG) { /* the vocabularies differ */
            serve_fail(&e, 400, "agreement", "%s; send \"agreement\": false to compare the rest",
                       tinygpt_last_error(sl[0]->m));
            failed = 1;
        } else if (st != TINYGPT_OK) {
            serve_fail(&e, 500, "", "agreement: %s", tinygpt_last_error(sl[0]->m));
            failed = 1;
        }
    }
    for (int i = 0; i < nm; i++) {
        tinygpt_set_interrupt(sl[i]->m, NULL, NULL); /* the slot's next user starts clean */
        release(s, sl[i]);
    }
    if (failed && e.status == 500 && !cx.gone && past_grace(s)) /* interrupted at the deadline */
        serve_fail(&e, 503, "", "the server is shutting down");
    if (!failed) {
        sb_fmt(&b, "{\"window\":%d,\"head_tokens\":%d,\"seed\":%llu,\"models\":[", N, r.head_tokens,
               (unsigned long long)r.seed);
        for (int i = 0; i < nm; i++) {
            if (i) sb_str(&b, ",");
            sb_compare_model(&b, me[i], &q[i], ha[i]);
        }
        sb_str(&b, "],\"agreement\":");
        if (do_agree) {
            sb_fmt(&b, "{\"positions\":%llu,\"top1_same\":%llu,", (unsigned long long)ag.positions,
                   (unsigned long long)ag.top1_same);
            sb_kv9(&b, "top1", ag.top1, 1);
            sb_kv9(&b, "kl", ag.kl, 0);
            sb_str(&b, "}}");
        } else {
            sb_str(&b, "null}");
        }
    }
    for (int i = 0; i < 2; i++) {
        free(ids[i]);
        tinygpt_head_analysis_free(ha[i]);
    }
    serve_compare_free(&r);
    if (failed && cx.gone) return MHD_NO; /* nobody to answer */
    if (failed) return send_error(c, &e);
    return send_json(c, 200, &b);
}

/* ---- GET endpoints ------------------------------------------------------- */

static enum MHD_Result do_models(struct MHD_Connection *c, server *s) {
    sbuf b = {0};
    sb_str(&b, "{\"object\":\"list\",\"data\":[");
    for (int i = 0; i < s->n_models; i++) {
        const tinygpt_info *in = &s->models[i].info;
        sb_str(&b, i ? ",{\"id\":" : "{\"id\":");
        sb_jstr(&b, s->models[i].name, strlen(s->models[i].name));
        sb_fmt(&b, ",\"object\":\"model\",\"created\":0,\"owned_by\":\"tinygpt\",\"arch\":\"%s\","
                   "\"n_layer\":%d,\"n_head\":%d,\"n_embd\":%d,\"n_ctx\":%d,\"n_vocab\":%d,"
                   "\"n_params\":%llu,\"weight_type\":\"%s\"}",
               in->arch, in->n_layer, in->n_head, in->n_embd, in->n_ctx, in->n_vocab,
               (unsigned long long)in->n_params, in->weight_type);
    }
    sb_str(&b, "]}");
    return send_json(c, 200, &b);
}

static enum MHD_Result do_health(struct MHD_Connection *c, server *s) {
    sbuf b = {0};
    pthread_mutex_lock(&s->mu);
    sb_fmt(&b, "{\"status\":\"%s\",\"slots\":%d,\"slots_busy\":%d,\"queued\":%d,\"queue\":%d}",
           s->stopping ? "stopping" : "ok", s->n_models * s->parallel, s->n_busy, s->n_waiting, s->queue_max);
    pthread_mutex_unlock(&s->mu);
    return send_json(c, s->stopping ? 503 : 200, &b);
}

/* ---- the request handler ------------------------------------------------- */

typedef struct request {
    char *body;
    size_t len, cap;
    int too_big;
    int answered; /* a response was queued before the body arrived */
} request;

static int authorized(struct MHD_Connection *c, const server *s) {
    if (!s->api_key) return 1;
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    if (!h || strncmp(h, "Bearer ", 7)) return 0;
    const char *k = h + 7;
    size_t kl = strlen(k), want = strlen(s->api_key);
    unsigned diff = kl != want; /* compare every byte: no early exit on a mismatch */
    for (size_t i = 0; i < want; i++) diff |= (unsigned)(k[i < kl ? i : 0] ^ s->api_key[i]);
    return !diff;
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                               const char *version, const char *upload, size_t *upload_size, void **con_cls) {
    server *s = cls;
    (void)version;
    request *rq = *con_cls;
    int is_post = !strcmp(method, "POST"), is_get = !strcmp(method, "GET") || !strcmp(method, "HEAD");
    if (!rq) {
        if (!(rq = calloc(1, sizeof *rq))) return MHD_NO;
        *con_cls = rq;
        int open_path = !strcmp(url, "/health") || (is_get && strncmp(url, "/v1/", 4) &&
                                                    strcmp(url, "/tokenize") && strcmp(url, "/detokenize"));
        if (!open_path && !authorized(c, s)) {
            rq->answered = 1;
            return fail(c, 401, "", "missing or wrong API key (send Authorization: Bearer KEY)");
        }
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
        if (cl) {
            char *end;
            errno = 0;
            unsigned long long v = strtoull(cl, &end, 10);
            if (errno || *end || v > s->max_body) {
                rq->answered = 1;
                return fail(c, 400, "body", "the request body is %s bytes, more than the limit (--max-body %zu)",
                            cl, s->max_body);
            }
        }
        return MHD_YES;
    }
    if (*upload_size) {
        if (!rq->too_big && !rq->answered) {
            if (rq->len + *upload_size > s->max_body) {
                rq->too_big = 1;
            } else {
                if (rq->len + *upload_size + 1 > rq->cap) {
                    size_t cap = rq->cap ? rq->cap : 4096;
                    while (cap < rq->len + *upload_size + 1) cap *= 2;
                    char *p = realloc(rq->body, cap);
                    if (!p) return MHD_NO;
                    rq->body = p, rq->cap = cap;
                }
                memcpy(rq->body + rq->len, upload, *upload_size);
                rq->len += *upload_size;
            }
        }
        *upload_size = 0;
        return MHD_YES;
    }
    if (rq->answered) return MHD_YES;
    rq->answered = 1;
    if (rq->too_big)
        return fail(c, 400, "body", "the request body is more than the limit (--max-body %zu bytes)", s->max_body);
    const char *body = rq->body ? rq->body : "";
    struct {
        const char *path;
        enum MHD_Result (*post)(struct MHD_Connection *, server *, const char *, size_t);
        enum MHD_Result (*get)(struct MHD_Connection *, server *);
    } routes[] = {
        {"/v1/completions", do_completion, NULL}, {"/tokenize", do_tokenize, NULL},
        {"/detokenize", do_detokenize, NULL},     {"/v1/attention", do_attention, NULL},
        {"/v1/compare", do_compare, NULL},
        {"/v1/models", NULL, do_models},          {"/health", NULL, do_health},
    };
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
        if (strcmp(url, routes[i].path)) continue;
        if (routes[i].post && is_post) return routes[i].post(c, s, body, rq->len);
        if (routes[i].get && is_get) return routes[i].get(c, s);
        return fail(c, 405, "", "%s takes %s", url, routes[i].post ? "POST" : "GET");
    }
    for (size_t i = 0; i < serve_n_assets; i++) {
        if (strcmp(url, serve_assets[i].path)) continue;
        if (!is_get) return fail(c, 405, "", "%s takes GET", url);
        return send_buf(c, 200, serve_assets[i].type, (char *)serve_assets[i].data, serve_assets[i].len, 0);
    }
    return fail(c, 404, "", "no such endpoint: %s %.200s", method, url);
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode t) {
    (void)cls, (void)c, (void)t;
    request *rq = *con_cls;
    if (rq) free(rq->body);
    free(rq);
    *con_cls = NULL;
}

/* ---- the command ----------------------------------------------------------- */

static void help(FILE *f) {
    fprintf(f,
            "usage: tinygpt serve [-m MODEL]... [--host ADDR] [--port N] [-t THREADS]\n"
            "                     [--parallel N] [--queue N] [--api-key KEY]\n"
            "                     [--max-body BYTES] [--max-tokens N]\n"
            "  -m, --model MODEL   a GGUF file or a Hugging Face GPT-2 or Llama folder (a\n"
            "                      llama2.c .bin: convert it with its tokenizer first),\n"
            "                      named by its file name without .gguf; up to 8 (default:\n"
            "                      the shipped shakespeare-4h and shakespeare-1h, or\n"
            "                      $TINYGPT_MODEL)\n"
            "  --host ADDR         the IPv4 address to listen on\n"
            "                      (default 127.0.0.1: this machine only)\n"
            "  --port N            the TCP port, [0, 65535]; 0 picks a free one\n"
            "                      (default 8080)\n"
            "  -t, --threads N     worker threads in all, [1, 1024], shared out among the\n"
            "                      slots (each at least 1) (default 1)\n"
            "  --parallel N        requests served at once per model\n"
            "                      (slots, one library handle each), [1, 64] (default 1)\n"
            "  --queue N           requests that may wait for a slot, [0, 4096]; beyond that\n"
            "                      503 with Retry-After (default 16)\n"
            "  --api-key KEY       require Authorization: Bearer KEY on the API (401\n"
            "                      otherwise; the page and /health stay open)\n"
            "  --max-body BYTES    largest request body, [64, 2^30]; K/M/G suffixes\n"
            "                      (default 1M)\n"
            "  --max-tokens N      largest max_tokens a request may ask for, [1, 1000000]\n"
            "                      (default 4096)\n"
            "  --kv-type TYPE      KV cache elements: f32 or f16 (half the bytes)\n"
            "                      (default f32)\n"
            "\n"
            "Serves POST /v1/completions (OpenAI's fields, streamed as server-sent events\n"
            "with \"stream\": true, plus top_k, min_p, repeat_penalty), GET /v1/models,\n"
            "GET /health, POST /tokenize, POST /detokenize, POST /v1/attention (every\n"
            "head's weights, heads_off, the next-token distribution), POST /v1/compare\n"
            "(tinygpt compare --json's head analysis of one or two models on a text) and\n"
            "the page at /.\n"
            "Prints \"listening on http://HOST:PORT\" when ready; SIGINT or SIGTERM stops\n"
            "it: no new connections, in-flight work gets 2 s, then exit 0.\n");
}

static size_t g_max_body = (size_t)1 << 20;

static int parse_body(const char *cmd, const cli_opt *o, const char *flag, const char *value) {
    (void)o;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(value, &end, 10);
    unsigned long long mul = 1;
    if (*end == 'K' || *end == 'k') mul = 1ull << 10, end++;
    else if (*end == 'M' || *end == 'm') mul = 1ull << 20, end++;
    else if (*end == 'G' || *end == 'g') mul = 1ull << 30, end++;
    if (errno || end == value || *end || value[0] == '-' || v > (1ull << 30) / mul || v * mul < 64) {
        cli_usage(cmd, "%s must be a size in [64, 2^30] bytes (K, M, G suffixes), not '%s'", flag, value);
        return -1;
    }
    g_max_body = (size_t)(v * mul);
    return 0;
}

static const char *models_arg[MAX_MODELS];
static int n_models_arg;

static int add_model(const char *cmd, const cli_opt *o, const char *flag, const char *value) {
    (void)o;
    if (n_models_arg == MAX_MODELS) {
        cli_usage(cmd, "%s: at most %d models", flag, MAX_MODELS);
        return -1;
    }
    models_arg[n_models_arg++] = value;
    return 0;
}

/* A model's name: its file or folder name without ".gguf" (and trailing /). */
static void model_name(const char *path, char *out, size_t n) {
    size_t len = strlen(path);
    while (len > 1 && path[len - 1] == '/') len--;
    size_t start = len;
    while (start > 0 && path[start - 1] != '/') start--;
    size_t nl = len - start;
    if (nl > 5 && !strncmp(path + len - 5, ".gguf", 5)) nl -= 5;
    snprintf(out, n, "%.*s", (int)nl, path + start);
}

static void close_models(server *s) {
    for (int i = 0; i < s->n_models; i++) {
        if (!s->models[i].slots) continue;
        for (int k = 0; k < s->parallel; k++) tinygpt_close(s->models[i].slots[k].m);
        free(s->models[i].slots);
    }
}

/* libmicrohttpd's own messages, once the server runs, on stderr with our
 * prefix; before that (a port in use, an address not ours) the start's
 * failure is said once, by cmd_serve (cls: an int, nonzero once started). */
static void mhd_log(void *cls, const char *fmt, va_list ap) {
    if (!__atomic_load_n((const int *)cls, __ATOMIC_ACQUIRE)) return;
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    size_t n = strlen(msg);
    while (n && msg[n - 1] == '\n') msg[--n] = 0;
    fprintf(stderr, "tinygpt serve: libmicrohttpd: %s\n", msg);
}

int cmd_serve(int argc, char **argv) {
    const char *host = "127.0.0.1", *api_key = NULL, *kv_type = NULL;
    int port = 8080, threads = 1, parallel = 1, queue = 16, max_tokens = 4096;
    n_models_arg = 0;
    g_max_body = (size_t)1 << 20;
    const cli_opt opts[] = {
        {CLI_CALL("-m", "--model", add_model, NULL)},
        {CLI_STR("--host", NULL, &host)},
        {CLI_INT("--port", NULL, &port, 0, 65535)},
        {CLI_INT("-t", "--threads", &threads, 1, 1024)},
        {CLI_INT("--parallel", NULL, &parallel, 1, 64)},
        {CLI_INT("--queue", NULL, &queue, 0, 4096)},
        {CLI_STR("--api-key", NULL, &api_key)},
        {CLI_CALL("--max-body", NULL, parse_body, NULL)},
        {CLI_INT("--max-tokens", NULL, &max_tokens, 1, 1000000)},
        {CLI_STR("--kv-type", NULL, &kv_type)},
        {0},
    };
    int parsed = cli_parse(CMD, help, opts, argc, argv);
    if (parsed != CLI_RUN) return parsed;
    if (api_key && !*api_key) return cli_usage(CMD, "--api-key must not be empty");
    if (kv_type && strcmp(kv_type, "f32") && strcmp(kv_type, "f16"))
        return cli_usage(CMD, "--kv-type: '%s' is not one of f32, f16", kv_type);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, host, &addr.sin_addr) != 1)
        return cli_usage(CMD, "--host must be an IPv4 address such as 127.0.0.1, not '%s'", host);

    static char default_1h[PATH_MAX];
    if (n_models_arg == 0) {
        const char *d = cli_default_model();
        if (!d)
            return cli_error(CMD, "no model given and the default model weights/shakespeare-4h.gguf is not "
                                  "there; pass -m MODEL (a GGUF file or a Hugging Face folder)");
        models_arg[n_models_arg++] = d;
        /* its 1-head sibling, when it is the shipped model */
        size_t dl = strlen(d);
        if (!getenv("TINYGPT_MODEL") && dl > 19 && !strcmp(d + dl - 19, "shakespeare-4h.gguf") &&
            dl < sizeof default_1h) {
            snprintf(default_1h, sizeof default_1h, "%.*sshakespeare-1h.gguf", (int)(dl - 19), d);
            if (access(default_1h, R_OK) == 0) models_arg[n_models_arg++] = default_1h;
        }
    }

    static server s; /* static: the signal-free main thread and the connection threads share it */
    memset(&s, 0, sizeof s);
    s.parallel = parallel, s.queue_max = queue, s.api_key = api_key, s.max_body = g_max_body;
    s.lim = (serve_limits){.max_tokens = max_tokens, .max_n = 8, .max_ids = 1 << 20};
    pthread_mutex_init(&s.mu, NULL);
    pthread_cond_init(&s.cv, NULL);
    tinygpt_options mo;
    tinygpt_options_init(&mo);
    mo.n_threads = threads / parallel > 0 ? threads / parallel : 1;
    mo.kv_type = kv_type;
    int code = EXIT_OK;
    for (int i = 0; i < n_models_arg; i++) {
        model_entry *me = &s.models[s.n_models];
        me->path = models_arg[i];
        model_name(me->path, me->name, sizeof me->name);
        for (int k = 0; k < s.n_models; k++)
            if (!strcmp(s.models[k].name, me->name)) {
                close_models(&s);
                return cli_usage(CMD, "two models are named '%s' (%s and %s); names come from the file names",
                                 me->name, s.models[k].path, me->path);
            }
        if (!(me->slots = calloc((size_t)parallel, sizeof *me->slots))) {
            close_models(&s);
            return cli_error(CMD, "out of memory");
        }
        s.n_models++;
        for (int k = 0; k < parallel; k++) {
            char err[TINYGPT_ERR_LEN];
            if (tinygpt_open(&me->slots[k].m, me->path, &mo, err) != TINYGPT_OK) {
                close_models(&s);
                return cli_error(CMD, "%s", err);
            }
        }
        tinygpt_get_info(me->slots[0].m, &me->info);
    }

    /* SIGINT/SIGTERM go to sigwait below: blocked here, before any thread starts. */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);

    unsigned conn_limit = (unsigned)(s.n_models * parallel + queue + 64);
    int started = 0; /* mhd_log's: quiet until the daemon runs */
    struct MHD_Daemon *d = MHD_start_daemon(
        MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL |
            MHD_USE_ERROR_LOG,
        0, NULL, NULL, handler, &s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10, MHD_OPTION_CONNECTION_LIMIT, conn_limit,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)64 * 1024, MHD_OPTION_NOTIFY_COMPLETED, completed,
        NULL, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, &started, MHD_OPTION_END);
    if (!d) {
        int e = errno;
        close_models(&s);
        return cli_error(CMD, "cannot listen on %s:%d: %s", host, port, strerror(e));
    }
    __atomic_store_n(&started, 1, __ATOMIC_RELEASE);
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    printf("listening on http://%s:%u\n", host, di ? (unsigned)di->port : (unsigned)port);
    for (int i = 0; i < s.n_models; i++)
        printf("model %s: %s (%d slot%s, %d thread%s each)\n", s.models[i].name, s.models[i].path, parallel,
               parallel == 1 ? "" : "s", mo.n_threads, mo.n_threads == 1 ? "" : "s");
    fflush(stdout);

    int sig = 0;
    sigwait(&sigs, &sig);
    /* Stop accepting, let in-flight work finish within the grace, then cancel it. */
    MHD_socket lfd = MHD_quiesce_daemon(d);
    if (lfd != MHD_INVALID_SOCKET) close(lfd);
    pthread_mutex_lock(&s.mu);
    s.cancel_at = now_s() + GRACE_S;
    s.stopping = 1;
    pthread_cond_broadcast(&s.cv);
    pthread_mutex_unlock(&s.mu);
    for (;;) {
        pthread_mutex_lock(&s.mu);
        int active = s.n_busy + s.n_waiting;
        pthread_mutex_unlock(&s.mu);
        if (!active || now_s() > s.cancel_at + 3.0) break;
        usleep(20000);
    }
    MHD_stop_daemon(d);
    fprintf(stderr, "tinygpt serve: %s: stopped\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
    close_models(&s);
    pthread_cond_destroy(&s.cv);
    pthread_mutex_destroy(&s.mu);
    return code;
}
