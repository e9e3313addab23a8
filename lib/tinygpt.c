/* tinygpt.c — the public library API (include/tinygpt.h) over the engine,
 * weights and model layers. A handle owns everything it uses. */
#include "tinygpt.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/internal.h"

#include "model/analysis.h"
#include "model/gpt.h"
#include "model/sampler.h"
#include "model/tokenizer.h"
#include "weights/gpt2.h"
#include "weights/model.h"

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
    /* What the public API adds around the model (issue #13): */
    int *cache_ids;       /* [C] the token at each position the KV cache holds */
    float *last_logits;   /* [V] the logits after position P-1, when have_logits */
    int have_logits;
    uint8_t *head_mask;   /* [L*H] as last set, or NULL: every head on */
    tinygpt_info info;
    tinygpt_tensor_info *tensors; /* [info.n_tensors], names in tensor_names */
    char *tensor_names;
    int n_threads;
};

const char *tinygpt_status_str(tinygpt_status s) { return tg_status_str((tg_status)s); }
const char *tinygpt_version(void) { return TINYGPT_VERSION; }

void tinygpt_options_init(tinygpt_options *o) { *o = (tinygpt_options){1, NULL, 0, NULL}; }

void tinygpt_sampling_init(tinygpt_sampling *s) {
    tg_sampler_params p = tg_sampler_defaults();
    *s = (tinygpt_sampling){p.temp, p.top_k, p.top_p, p.min_p, p.repeat_penalty,
                            p.repeat_window, p.seed};
}

/* A tg_status as the public enum (same values; m->err holds the message). */
static tinygpt_status fail(tg_status s) { return (tinygpt_status)s; }

/* A tensor of the table: a matrix view, or an f32 vector (or [rows, cols] f32). */
static void add_tensor(tinygpt *m, char **names, const char *name, const char *type,
                       int n_dims, int64_t d0, int64_t d1, uint64_t bytes) {
    tinygpt_tensor_info *t = &m->tensors[m->info.n_tensors++];
    size_t len = strlen(name) + 1;
    memcpy(*names, name, len);
    *t = (tinygpt_tensor_info){*names, type, n_dims, {d0, n_dims > 1 ? d1 : 0},
                               (uint64_t)d0 * (uint64_t)(n_dims > 1 ? d1 : 1), bytes};
    *names += len;
}

static void add_matrix(tinygpt *m, char **names, const char *name, const tg_weight *w) {
    add_tensor(m, names, name, tg_wtype_name(w->type), 2, w->rows, w->cols,
               (uint64_t)w->rows * w->row_bytes);
}

static void add_vector(tinygpt *m, char **names, const char *name, int n) {
    add_tensor(m, names, name, "f32", 1, n, 0, (uint64_t)n * sizeof(float));
}

/* The tensor table (the views the forward pass runs on, GGUF names), the
 * info struct, and the buffers behind the cache and logits queries. */
/* The Llama tensor table: llama.cpp's names, the views the model runs on. */
static void llama_tensors(tinygpt *m, char **names) {
    const tg_model_config *c = &m->model.cfg;
    const tg_llama_weights *w = &m->model.llama;
    char nm[40];
    add_matrix(m, names, "token_embd.weight", &w->tok_embd);
    for (int l = 0; l < c->n_layer; l++) {
        const tg_llama_layer *y = &w->layers[l];
#define NAME(suffix) (snprintf(nm, sizeof nm, "blk.%d." suffix, l), nm)
        add_vector(m, names, NAME("attn_norm.weight"), c->n_embd);
        add_matrix(m, names, NAME("attn_q.weight"), &y->wq);
        add_matrix(m, names, NAME("attn_k.weight"), &y->wk);
        add_matrix(m, names, NAME("attn_v.weight"), &y->wv);
        add_matrix(m, names, NAME("attn_output.weight"), &y->wo);
        add_vector(m, names, NAME("ffn_norm.weight"), c->n_embd);
        add_matrix(m, names, NAME("ffn_gate.weight"), &y->w1);
        add_matrix(m, names, NAME("ffn_up.weight"), &y->w3);
        add_matrix(m, names, NAME("ffn_down.weight"), &y->w2);
#undef NAME
    }
    add_vector(m, names, "output_norm.weight", c->n_embd);
    if (!w->tied) add_matrix(m, names, "output.weight", &w->output);
}

static tg_status setup_extras(tinygpt *m) {
    const tg_gpt2_config *c = tg_gpt_config(m->gpt);
    const tg_gpt2_weights *w = tg_gpt_weights(m->gpt);
    int llama = m->model.cfg.arch == TG_ARCH_LLAMA;
    int C = tg_gpt_n_ctx(m->gpt), L = c->n_layer;
    int n_max = 6 + 12 * L;
    m->cache_ids = calloc((size_t)C, sizeof *m->cache_ids);
    m->last_logits = calloc((size_t)c->n_vocab, sizeof *m->last_logits);
    m->tensors = calloc((size_t)n_max, sizeof *m->tensors);
    m->tensor_names = malloc((size_t)n_max * 40);
    if (!m->cache_ids || !m->last_logits || !m->tensors || !m->tensor_names)
        return tg_fail(&m->err, TG_ERR_NOMEM, "tinygpt: out of memory");
    char *names = m->tensor_names, nm[40];
    if (llama) {
        llama_tensors(m, &names);
        goto table_done;
    }
    add_matrix(m, &names, "token_embd.weight", &w->wte);
    add_tensor(m, &names, "position_embd.weight", "f32", 2, c->n_ctx, c->n_embd,
               (uint64_t)c->n_ctx * c->n_embd * sizeof(float));
    for (int l = 0; l < L; l++) {
        const tg_gpt2_layer *y = &w->layers[l];
#define NAME(suffix) (snprintf(nm, sizeof nm, "blk.%d." suffix, l), nm)
        add_vector(m, &names, NAME("attn_norm.weight"), c->n_embd);
        add_vector(m, &names, NAME("attn_norm.bias"), c->n_embd);
        add_matrix(m, &names, NAME("attn_qkv.weight"), &y->qkv_w);
        add_vector(m, &names, NAME("attn_qkv.bias"), 3 * c->n_embd);
        add_matrix(m, &names, NAME("attn_output.weight"), &y->proj_w);
        add_vector(m, &names, NAME("attn_output.bias"), c->n_embd);
        add_vector(m, &names, NAME("ffn_norm.weight"), c->n_embd);
        add_vector(m, &names, NAME("ffn_norm.bias"), c->n_embd);
        add_matrix(m, &names, NAME("ffn_up.weight"), &y->up_w);
        add_vector(m, &names, NAME("ffn_up.bias"), c->n_ff);
        add_matrix(m, &names, NAME("ffn_down.weight"), &y->down_w);
        add_vector(m, &names, NAME("ffn_down.bias"), c->n_embd);
#undef NAME
    }
    add_vector(m, &names, "output_norm.weight", c->n_embd);
    add_vector(m, &names, "output_norm.bias", c->n_embd);
    if (!w->tied) add_matrix(m, &names, "output.weight", &w->lm_head);

table_done:;
    tinygpt_info *i = &m->info;
    const char *wtype = NULL;
    for (int k = 0; k < i->n_tensors; k++) {
        const tinygpt_tensor_info *t = &m->tensors[k];
        i->n_params += t->n_elements;
        i->n_bytes += t->n_bytes;
        if (t->n_dims == 2 && strcmp(t->name, "position_embd.weight")) /* always f32 */
            wtype = !wtype || !strcmp(wtype, t->type) ? t->type : "mixed";
    }
    i->arch = tg_arch_name(m->model.cfg.arch);
    i->path = m->model.path ? m->model.path : "";
    i->n_layer = L;
    i->n_head = c->n_head;
    i->n_kv_head = tg_config_n_kv_head(&m->model.cfg);
    i->n_embd = c->n_embd;
    i->head_size = tg_config_head_dim(&m->model.cfg);
    i->n_ff = c->n_ff;
    i->n_vocab = c->n_vocab;
    i->n_ctx_train = c->n_ctx;
    i->n_ctx = C;
    i->tied = tg_model_tied(&m->model);
    i->norm_eps = c->ln_eps;
    i->weight_type = wtype ? wtype : "f32";
    i->isa = tg_isa_name(tg_gpt_engine(m->gpt)->isa);
    i->n_threads = m->n_threads;
    i->bos = tg_tokenizer_bos(m->tok);
    i->eos = m->eos;
    return TG_OK;
}

/* A llama2.c checkpoint (or a Llama folder without tokenizer.json) holds no
 * vocabulary: the handle could not encode text, so opening it fails with the
 * way out rather than the tokenizer's "empty vocabulary". */
static tg_status need_vocab(const tg_gpt2_model *model, const char *path, tg_err *err) {
    if (model->vocab.n_tokens > 0) return TG_OK;
    return tg_fail(err, TG_ERR_FORMAT,
                   "%s holds no tokenizer (llama2.c keeps it in tokenizer.bin, Hugging Face in tokenizer.json): "
                   "convert it to GGUF with its tokenizer (tinygpt convert --tokenizer)",
                   path);
}

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
    tg_gpt_opts go = {opts->n_threads, opts->isa, opts->n_ctx, TG_WTYPE_F32};
    int kv_ok = !opts->kv_type || !strcmp(opts->kv_type, "f32") || !strcmp(opts->kv_type, "f16");
    if (kv_ok && opts->kv_type && !strcmp(opts->kv_type, "f16")) go.kv_type = TG_WTYPE_F16;
    if (!path) {
        s = tg_fail(&m->err, TG_ERR_ARG, "tinygpt: no model path");
    } else if (!kv_ok) {
        s = tg_fail(&m->err, TG_ERR_ARG, "tinygpt: kv_type '%.40s' is not one of f32, f16",
                    opts->kv_type);
    } else if (!(s = tg_model_load(&m->model, path, 0, &m->err)) &&
               !(s = need_vocab(&m->model, path, &m->err)) &&
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
    m->n_threads = opts->n_threads;
    if ((s = setup_extras(m))) {
        if (errbuf) snprintf(errbuf, TINYGPT_ERR_LEN, "%s", m->err.msg);
        tinygpt_close(m);
        return (tinygpt_status)s;
    }
    *out = m;
    return TINYGPT_OK;
}

void tinygpt_close(tinygpt *m) {
    if (!m) return;
    tg_sampler_free(m->sampler);
    tg_gpt_free(m->gpt);
    tg_tokenizer_free(m->tok);
    tg_gpt2_free(&m->model);
    free(m->cache_ids);
    free(m->last_logits);
    free(m->head_mask);
    free(m->tensors);
    free(m->tensor_names);
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
    tg_status s = tg_gpt_forward(m->gpt, tokens, n, pos, logits, all_logits, &m->err);
    if (s == TG_OK || s == TG_ERR_NUMERIC) { /* the cache holds the batch */
        memcpy(m->cache_ids + pos, tokens, (size_t)n * sizeof *tokens);
        m->have_logits = s == TG_OK && n > 0;
        if (m->have_logits)
            memcpy(m->last_logits, logits + (all_logits ? (size_t)(n - 1) * m->info.n_vocab : 0),
                   (size_t)m->info.n_vocab * sizeof *logits);
    }
    return fail(s);
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

/* ---- lib/ internals (lib/internal.h) ---------------------------------------- */

tinygpt_status tg_lib_fail(tinygpt *m, tinygpt_status s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->err.msg, sizeof m->err.msg, fmt, ap);
    va_end(ap);
    return s;
}

const float *tg_lib_last_logits(const tinygpt *m) { return m->have_logits ? m->last_logits : NULL; }
const int *tg_lib_cache_ids(const tinygpt *m) { return m->cache_ids; }
tg_gpt *tg_lib_gpt(tinygpt *m) { return m->gpt; }
tg_err *tg_lib_err(tinygpt *m) { return &m->err; }

/* ---- model information ------------------------------------------------------ */

tinygpt_status tinygpt_get_info(const tinygpt *m, tinygpt_info *out) {
    *out = m->info;
    return TINYGPT_OK;
}

tinygpt_status tinygpt_tensor(const tinygpt *m, int i, tinygpt_tensor_info *out) {
    if (i < 0 || i >= m->info.n_tensors) {
        tg_fail((tg_err *)&m->err, TG_ERR_RANGE, "tinygpt_tensor: %d is outside [0, %d)", i,
                m->info.n_tensors);
        return TINYGPT_ERR_RANGE;
    }
    *out = m->tensors[i];
    return TINYGPT_OK;
}

/* ---- tokenizer -------------------------------------------------------------- */

int tinygpt_bos(const tinygpt *m) { return m->info.bos; }
int tinygpt_is_special(const tinygpt *m, int id) {
    return id >= 0 && id < m->info.n_vocab && tg_tokenizer_is_special(m->tok, id);
}
int tinygpt_token_id(const tinygpt *m, const char *s) {
    return s ? tg_tokenizer_token_id(m->tok, s) : -1;
}

/* ---- logits and log-probabilities -------------------------------------------- */

/* log(sum(exp(row))) in double, as `tinygpt generate --json` computes it;
 * TG_ERR_NUMERIC for a NaN or +inf, or no value above -inf. */
static tg_status log_sum_exp(tinygpt *m, const float *row, int V, size_t r, double *out) {
    double mx = -INFINITY, sum = 0;
    for (int i = 0; i < V; i++) {
        if (isnan(row[i]) || row[i] == INFINITY)
            return tg_fail(&m->err, TG_ERR_NUMERIC, "tinygpt: logit %d of row %zu is %g", i, r,
                           (double)row[i]);
        if (row[i] > mx) mx = row[i];
    }
    if (mx == -INFINITY)
        return tg_fail(&m->err, TG_ERR_NUMERIC, "tinygpt: every logit of row %zu is -inf", r);
    for (int i = 0; i < V; i++) sum += exp((double)row[i] - mx);
    *out = mx + log(sum);
    return TG_OK;
}

tinygpt_status tinygpt_logprobs(tinygpt *m, const float *logits, size_t n, float *out) {
    int V = m->info.n_vocab;
    for (size_t r = 0; r < n; r++) {
        const float *row = logits + r * (size_t)V;
        double lse;
        tg_status s = log_sum_exp(m, row, V, r, &lse);
        if (s) return fail(s);
        for (int i = 0; i < V; i++) out[r * (size_t)V + i] = (float)((double)row[i] - lse);
    }
    return TINYGPT_OK;
}

tinygpt_status tinygpt_top_k(tinygpt *m, const float *logits, int k, int *ids, float *logprobs) {
    int V = m->info.n_vocab;
    if (k < 1 || k > V)
        return fail(tg_fail(&m->err, TG_ERR_ARG, "tinygpt_top_k: k = %d is outside [1, %d]", k, V));
    double lse = 0;
    tg_status s = log_sum_exp(m, logits, V, 0, &lse);
    if (s) return fail(s);
    tg_lib_top_k(logits, V, k, ids);
    if (logprobs)
        for (int j = 0; j < k; j++) logprobs[j] = (float)((double)logits[ids[j]] - lse);
    return TINYGPT_OK;
}

void tg_lib_top_k(const float *l, int V, int K, int *ids) {
    int n = 0; /* insertion into the K best so far: ties keep the lower id first */
    for (int i = 0; i < V; i++) {
        if (n == K && !(l[i] > l[ids[n - 1]])) continue;
        int j = n < K ? n++ : n - 1;
        while (j > 0 && l[i] > l[ids[j - 1]]) {
            ids[j] = ids[j - 1];
            j--;
        }
        ids[j] = i;
    }
}

tinygpt_status tinygpt_score(tinygpt *m, const int *tokens, int n, float *out) {
    int V = m->info.n_vocab;
    if (n < 2 || n > m->info.n_ctx)
        return fail(tg_fail(&m->err, TG_ERR_RANGE, "tinygpt_score: %d tokens; it takes 2 to %d "
                            "(the context)", n, m->info.n_ctx));
    float *logits = malloc((size_t)n * V * sizeof *logits);
    if (!logits) return fail(tg_fail(&m->err, TG_ERR_NOMEM, "tinygpt_score: out of memory"));
    tinygpt_status s = tinygpt_eval(m, tokens, n, 0, logits, 1);
    for (int t = 0; !s && t + 1 < n; t++) {
        double lse;
        const float *row = logits + (size_t)t * V;
        if (!(s = fail(log_sum_exp(m, row, V, (size_t)t, &lse))))
            out[t] = (float)((double)row[tokens[t + 1]] - lse);
    }
    free(logits);
    return s;
}

/* ---- attention and ablation ------------------------------------------------- */

tinygpt_status tinygpt_attention(tinygpt *m, const int *tokens, int n, float *weights,
                                 float *logits) {
    const tinygpt_info *i = &m->info;
    if (n < 1 || n > i->n_ctx)
        return fail(tg_fail(&m->err, TG_ERR_RANGE, "tinygpt_attention: %d tokens; it takes 1 "
                            "to %d (the context)", n, i->n_ctx));
    for (int t = 0; t < n; t++)
        if (tokens[t] < 0 || tokens[t] >= i->n_vocab)
            return fail(tg_fail(&m->err, TG_ERR_ARG, "tinygpt_attention: token %d is %d, "
                                "outside [0, %d) (the vocabulary)", t, tokens[t], i->n_vocab));
    /* the capture of `tinygpt attention` (model/analysis.h), the last
     * logits kept as tinygpt_eval keeps them */
    tg_status s = tg_attention_capture_into(m->gpt, tokens, n, weights, m->last_logits, &m->err);
    if (s == TG_OK || s == TG_ERR_NUMERIC) { /* the cache holds the prompt */
        memcpy(m->cache_ids, tokens, (size_t)n * sizeof *tokens);
        m->have_logits = s == TG_OK;
    }
    if (s == TG_OK && logits) memcpy(logits, m->last_logits, (size_t)i->n_vocab * sizeof *logits);
    return fail(s);
}

tinygpt_status tinygpt_set_head_mask(tinygpt *m, const uint8_t *mask) {
    size_t n = (size_t)m->info.n_layer * (size_t)m->info.n_head;
    if (mask && !m->head_mask && !(m->head_mask = malloc(n)))
        return fail(tg_fail(&m->err, TG_ERR_NOMEM, "tinygpt: out of memory for the head mask"));
    tg_status s = tg_gpt_set_head_mask(m->gpt, mask, &m->err);
    if (s) return fail(s);
    if (mask) {
        memcpy(m->head_mask, mask, n);
    } else {
        free(m->head_mask);
        m->head_mask = NULL;
    }
    return TINYGPT_OK;
}

tinygpt_status tinygpt_set_interrupt(tinygpt *m, int (*fn)(void *ctx), void *ctx) {
    if (!m) return TINYGPT_ERR_ARG;
    tg_gpt_set_interrupt(m->gpt, fn, ctx);
    return TINYGPT_OK;
}

tinygpt_status tinygpt_get_head_mask(const tinygpt *m, uint8_t *mask) {
    size_t n = (size_t)m->info.n_layer * (size_t)m->info.n_head;
    if (m->head_mask) memcpy(mask, m->head_mask, n);
    else memset(mask, 1, n);
    return TINYGPT_OK;
}

/* ---- the KV cache ------------------------------------------------------------ */

tinygpt_status tinygpt_truncate(tinygpt *m, int n) {
    int P = tg_gpt_n_pos(m->gpt);
    if (n < 0 || n > P)
        return fail(tg_fail(&m->err, TG_ERR_RANGE, "tinygpt_truncate: %d is outside [0, %d] "
                            "(the positions the cache holds)", n, P));
    tg_gpt_truncate(m->gpt, n, &m->err);
    if (n < P) m->have_logits = 0; /* they were the logits after position P-1 */
    return TINYGPT_OK;
}

tinygpt_status tinygpt_cache_tokens(const tinygpt *m, int *ids, size_t cap, size_t *n) {
    size_t P = (size_t)tg_gpt_n_pos(m->gpt);
    *n = P;
    if (ids && cap) memcpy(ids, m->cache_ids, (P < cap ? P : cap) * sizeof *ids);
    if (P > cap) {
        tg_fail((tg_err *)&m->err, TG_ERR_RANGE,
                "tinygpt_cache_tokens: %zu ids do not fit a buffer of %zu", P, cap);
        return TINYGPT_ERR_RANGE;
    }
    return TINYGPT_OK;
}

struct tinygpt_context {
    tg_kv_snapshot *kv;
    int n_layer, n_head, n_embd, n_vocab, n_past, have_logits;
    int *ids;      /* [n_past] */
    float *logits; /* [V] */
};

void tinygpt_context_free(tinygpt_context *c) {
    if (!c) return;
    tg_kv_snapshot_free(c->kv);
    free(c->ids);
    free(c->logits);
    free(c);
}

tinygpt_status tinygpt_context_save(tinygpt *m, tinygpt_context **out) {
    *out = NULL;
    const tinygpt_info *i = &m->info;
    int P = tg_gpt_n_pos(m->gpt);
    tinygpt_context *c = calloc(1, sizeof *c);
    if (c) {
        *c = (tinygpt_context){NULL, i->n_layer, i->n_head, i->n_embd, i->n_vocab, P,
                               m->have_logits, malloc((size_t)(P ? P : 1) * sizeof(int)),
                               malloc((size_t)i->n_vocab * sizeof(float))};
    }
    if (!c || !c->ids || !c->logits) {
        tinygpt_context_free(c);
        return fail(tg_fail(&m->err, TG_ERR_NOMEM, "tinygpt_context_save: out of memory"));
    }
    tg_status s = tg_gpt_snapshot(m->gpt, &c->kv, &m->err);
    if (s) {
        tinygpt_context_free(c);
        return fail(s);
    }
    memcpy(c->ids, m->cache_ids, (size_t)P * sizeof(int));
    memcpy(c->logits, m->last_logits, (size_t)i->n_vocab * sizeof(float));
    *out = c;
    return TINYGPT_OK;
}

tinygpt_status tinygpt_context_restore(tinygpt *m, const tinygpt_context *c) {
    const tinygpt_info *i = &m->info;
    if (c->n_layer != i->n_layer || c->n_head != i->n_head || c->n_embd != i->n_embd ||
        c->n_vocab != i->n_vocab)
        return fail(tg_fail(&m->err, TG_ERR_ARG, "tinygpt_context_restore: a context of L=%d "
                            "H=%d E=%d V=%d does not fit this model (L=%d H=%d E=%d V=%d)",
                            c->n_layer, c->n_head, c->n_embd, c->n_vocab, i->n_layer, i->n_head,
                            i->n_embd, i->n_vocab));
    if (c->n_past > i->n_ctx)
        return fail(tg_fail(&m->err, TG_ERR_RANGE, "tinygpt_context_restore: a context of %d "
                            "positions does not fit a cache of %d", c->n_past, i->n_ctx));
    tg_status s = tg_gpt_restore(m->gpt, c->kv, &m->err);
    if (s) return fail(s);
    memcpy(m->cache_ids, c->ids, (size_t)c->n_past * sizeof(int));
    memcpy(m->last_logits, c->logits, (size_t)i->n_vocab * sizeof(float));
    m->have_logits = c->have_logits;
    return TINYGPT_OK;
}

int tinygpt_context_n_past(const tinygpt_context *c) { return c->n_past; }

tg_tokenizer *tg_lib_tok(tinygpt *m) { return m->tok; }

void tg_lib_cache_lost(tinygpt *m) {
    tg_gpt_truncate(m->gpt, 0, &m->err);
    m->have_logits = 0;
    tg_gpt_set_probe(m->gpt, NULL);
    tg_gpt_set_head_mask(m->gpt, m->head_mask, &m->err); /* copied into a buffer it has */
}
