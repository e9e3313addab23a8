/* tinygpt.c — the public library API (include/tinygpt.h) over the engine,
 * weights and model layers. A handle owns everything it uses. */
#include "tinygpt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/gpt.h"
#include "model/sampler.h"
#include "model/tokenizer.h"
#include "weights/gpt2.h"

_Static_assert((int)TINYGPT_ERR_NOMEM == (int)TG_ERR_NOMEM &&
                   (int)TINYGPT_ERR_IO == (int)TG_ERR_IO &&
                   (int)TINYGPT_ERR_FORMAT == (int)TG_ERR_FORMAT &&
                   (int)TINYGPT_ERR_UNSUPPORTED == (int)TG_ERR_UNSUPPORTED &&
                   (int)TINYGPT_ERR_ARG == (int)TG_ERR_ARG &&
                   (int)TINYGPT_ERR_RANGE == (int)TG_ERR_RANGE &&
                   (int)TINYGPT_ERR_NUMERIC == (int)TG_ERR_NUMERIC &&
                   (int)TINYGPT_ERR_INTERRUPTED == (int)TG_ERR_INTERRUPTED,
               "tinygpt_status mirrors tg_status");

struct tinygpt {
    tg_gpt2_model model;
    tg_tokenizer *tok;
    tg_gpt *gpt;
    tg_sampler *sampler;
    int eos;
    tg_err err; /* the last failure */
};

const char *tinygpt_status_str(tinygpt_status s) { return tg_status_str((tg_status)s); }
const char *tinygpt_version(void) { return TINYGPT_VERSION; }

void tinygpt_options_init(tinygpt_options *o) { *o = (tinygpt_options){1, NULL, 0}; }

void tinygpt_sampling_init(tinygpt_sampling *s) {
    tg_sampler_params p = tg_sampler_defaults();
    *s = (tinygpt_sampling){p.temp, p.top_k, p.top_p, p.min_p, p.repeat_penalty,
                            p.repeat_window, p.seed};
}

/* A tg_status as the public enum (same values; m->err holds the message). */
static tinygpt_status fail(tg_status s) { return (tinygpt_status)s; }

tinygpt_status tinygpt_open(tinygpt **out, const char *path, const tinygpt_options *opts,
                            char *errbuf) {
    *out = NULL;
    tinygpt_options def;
    tinygpt_options_init(&def);
    if (!opts) opts = &def;
    tinygpt *m = calloc(1, sizeof *m);
    if (!m) {
        if (errbuf) snprintf(errbuf, TINYGPT_ERR_LEN, "tinygpt: out of memory");
        return TINYGPT_ERR_NOMEM;
    }
    tg_status s;
    tg_sampler_params sp = tg_sampler_defaults();
    tg_gpt_opts go = {opts->n_threads, opts->isa, opts->n_ctx};
    if (!path) {
        s = tg_fail(&m->err, TG_ERR_ARG, "tinygpt: no model path");
    } else if (!(s = tg_gpt2_load(&m->model, path, 0, &m->err)) &&
               !(s = tg_tokenizer_create(&m->tok, &m->model.vocab, &m->err)) &&
               !(s = tg_gpt_create(&m->gpt, &m->model, &go, &m->err))) {
        s = tg_sampler_create(&m->sampler, &sp, m->model.cfg.n_vocab, &m->err);
    }
    if (s) {
        if (errbuf) snprintf(errbuf, TINYGPT_ERR_LEN, "%s", m->err.msg);
        tinygpt_close(m);
        return (tinygpt_status)s;
    }
    m->eos = tg_tokenizer_eos(m->tok);
    if (m->eos < 0) m->eos = tg_tokenizer_token_id(m->tok, "<|endoftext|>");
    *out = m;
    return TINYGPT_OK;
}

void tinygpt_close(tinygpt *m) {
    if (!m) return;
    tg_sampler_free(m->sampler);
    tg_gpt_free(m->gpt);
    tg_tokenizer_free(m->tok);
    tg_gpt2_free(&m->model);
    free(m);
}

const char *tinygpt_last_error(const tinygpt *m) { return m ? m->err.msg : "no handle"; }

int tinygpt_n_vocab(const tinygpt *m) { return m->model.cfg.n_vocab; }
int tinygpt_n_ctx(const tinygpt *m) { return tg_gpt_n_ctx(m->gpt); }
int tinygpt_n_layer(const tinygpt *m) { return m->model.cfg.n_layer; }
int tinygpt_n_head(const tinygpt *m) { return m->model.cfg.n_head; }
int tinygpt_n_embd(const tinygpt *m) { return m->model.cfg.n_embd; }
int tinygpt_eos(const tinygpt *m) { return m->eos; }

tinygpt_status tinygpt_tokenize(tinygpt *m, const char *text, size_t len, int parse_special,
                                int *ids, size_t cap, size_t *n_ids) {
    int *all = NULL;
    size_t n = 0;
    tg_status s = tg_tokenizer_encode(m->tok, text, len, parse_special, &all, &n, &m->err);
    if (s) return fail(s);
    *n_ids = n;
    if (ids && cap) memcpy(ids, all, (n < cap ? n : cap) * sizeof *ids);
    free(all);
    if (n > cap)
        return fail(tg_fail(&m->err, TG_ERR_RANGE,
                               "tinygpt_tokenize: %zu ids do not fit a buffer of %zu", n, cap));
    return TINYGPT_OK;
}

tinygpt_status tinygpt_detokenize(tinygpt *m, const int *ids, size_t n, char *buf, size_t cap,
                                  size_t *len) {
    char *text = NULL;
    size_t tl = 0;
    tg_status s = tg_tokenizer_decode(m->tok, ids, n, &text, &tl, &m->err);
    if (s) return fail(s);
    *len = tl;
    if (buf && cap) {
        memcpy(buf, text, tl < cap ? tl : cap);
        if (tl < cap) buf[tl] = 0;
    }
    free(text);
    if (tl > cap)
        return fail(tg_fail(&m->err, TG_ERR_RANGE,
                               "tinygpt_detokenize: %zu bytes do not fit a buffer of %zu", tl, cap));
    return TINYGPT_OK;
}

const char *tinygpt_token_piece(const tinygpt *m, int id, size_t *len) {
    return tg_tokenizer_piece(m->tok, id, len);
}

size_t tinygpt_utf8_complete(const char *buf, size_t n) { return tg_utf8_complete(buf, n); }

tinygpt_status tinygpt_eval(tinygpt *m, const int *tokens, int n, int pos, float *logits,
                            int all_logits) {
    /* tg_gpt_forward checks pos against the positions the cache holds. */
    return fail(tg_gpt_forward(m->gpt, tokens, n, pos, logits, all_logits, &m->err));
}

int tinygpt_n_past(const tinygpt *m) { return tg_gpt_n_pos(m->gpt); }

tinygpt_status tinygpt_set_sampling(tinygpt *m, const tinygpt_sampling *p) {
    tg_sampler_params sp = {p->temp, p->top_k, p->top_p, p->min_p, p->repeat_penalty,
                            p->repeat_window, p->seed};
    tg_sampler *s;
    tg_status st = tg_sampler_create(&s, &sp, m->model.cfg.n_vocab, &m->err);
    if (st) return fail(st);
    tg_sampler_free(m->sampler);
    m->sampler = s;
    return TINYGPT_OK;
}

int tinygpt_sample(tinygpt *m, const float *logits) {
    int t = tg_sampler_sample(m->sampler, logits);
    if (t < 0) {
        tg_fail(&m->err, TG_ERR_NUMERIC,
                "tinygpt_sample: every logit is NaN or -inf, nothing to sample");
        return -1;
    }
    tg_sampler_accept(m->sampler, t);
    return t;
}

void tinygpt_accept(tinygpt *m, int token) { tg_sampler_accept(m->sampler, token); }
