/* hf.c — Hugging Face GPT-2 folders: config.json, model.safetensors,
 * vocab.json, merges.txt. JSON goes through cJSON. Conv1D weights are
 * stored [IN, OUT] and are transposed to our [OUT, IN]. */
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "weights/gpt2.h"
#include "weights/internal.h"
#include "weights/json_nul.h"
#include "weights/safetensors.h"

#define MAX_JSON (256u << 20)

static int cmp_str_ptr(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The first key (in sorted order) an object has twice, or NULL. Python's json
 * would take the last value and cJSON's lookup the first: a duplicate makes
 * the file mean different things to different readers, so it is an error. */
static const char *duplicate_key(const cJSON *obj, int *oom) {
    int n = cJSON_GetArraySize(obj);
    *oom = 0;
    if (n < 2) return NULL;
    const char **keys = malloc((size_t)n * sizeof *keys);
    if (!keys) return *oom = 1, NULL;
    int k = 0;
    for (const cJSON *e = obj->child; e && k < n; e = e->next) keys[k++] = e->string;
    qsort(keys, (size_t)k, sizeof *keys, cmp_str_ptr);
    const char *dup = NULL;
    for (int i = 1; i < k && !dup; i++)
        if (!strcmp(keys[i - 1], keys[i])) dup = keys[i];
    free(keys);
    return dup;
}

/* A JSON object from n bytes; path names it in errors. */
static tg_status parse_json(const char *txt, size_t len, const char *path, cJSON **out, tg_err *err) {
    *out = NULL;
    if (wt_json_has_nul_escape(txt, len))
        return tg_fail(err, TG_ERR_FORMAT, "%s: a string holds \\u0000 (a NUL character)", path);
    *out = wt_json_parse(txt, len);
    if (!*out) return tg_fail(err, TG_ERR_FORMAT, "%s: not valid JSON", path);
    if (!cJSON_IsObject(*out)) {
        cJSON_Delete(*out);
        *out = NULL;
        return tg_fail(err, TG_ERR_FORMAT, "%s: not a JSON object", path);
    }
    int oom;
    const char *dup = duplicate_key(*out, &oom);
    tg_status s = TG_OK;
    if (oom) s = tg_fail(err, TG_ERR_NOMEM, "%s: out of memory", path);
    else if (dup) s = tg_fail(err, TG_ERR_FORMAT, "%s: key \"%.60s\" appears twice", path, dup);
    if (s) {
        cJSON_Delete(*out);
        *out = NULL;
    }
    return s;
}

/* ---- vocab.json + merges.txt ---------------------------------------------- */

tg_status hf_vocab_parse(tg_vocab *v, const char *vocab_json, size_t vocab_len, const char *merges,
                         size_t merges_len, int n_min, const char *dir, tg_err *err) {
    memset(v, 0, sizeof *v);
    v->bos_id = v->eos_id = -1;
    cJSON *vj;
    char path[4096];
    snprintf(path, sizeof path, "%s/vocab.json", dir);
    tg_status s = parse_json(vocab_json, vocab_len, path, &vj, err);
    if (s) return s;
    int count = cJSON_GetArraySize(vj), n = count > n_min ? count : n_min;
    if (count < 1 || n > (1 << 24) || n - count > (1 << 16)) {
        cJSON_Delete(vj);
        return tg_fail(err, TG_ERR_FORMAT, "%s: %d tokens (1 to 2^24 allowed)", path, n);
    }
    /* ids may leave gaps (then padded); they may not exceed n - 1 */
    for (const cJSON *e = vj->child; e; e = e->next) {
        double id = cJSON_IsNumber(e) ? e->valuedouble : -1;
        if (id != floor(id) || id < 0 || id >= (1 << 24)) {
            s = tg_fail(err, TG_ERR_FORMAT, "%s: token '%.40s' has no valid integer id", path, e->string);
            break;
        }
        if ((int)id >= n) n = (int)id + 1;
    }
    /* padding is one string per missing id: a 100-byte file must not make
     * 16 M of them (found by fuzz_hf) */
    if (!s && n - count > (1 << 16))
        s = tg_fail(err, TG_ERR_FORMAT, "%s: ids reach %d but there are only %d tokens (more than 65536 missing)",
                    path, n - 1, count);
    if (!s && !(v->tokens = calloc((size_t)n, sizeof *v->tokens))) s = tg_fail(err, TG_ERR_NOMEM, "%s: out of memory", path);
    if (!s && !(v->token_type = calloc((size_t)n, sizeof *v->token_type))) s = tg_fail(err, TG_ERR_NOMEM, "%s: out of memory", path);
    if (!s) v->n_tokens = n;
    for (const cJSON *e = vj->child; e && !s; e = e->next) {
        int id = (int)e->valuedouble;
        if (v->tokens[id]) {
            s = tg_fail(err, TG_ERR_FORMAT, "%s: id %d is given to both '%.40s' and '%.40s'", path, id, v->tokens[id], e->string);
            break;
        }
        if (!(v->tokens[id] = strdup(e->string))) s = tg_fail(err, TG_ERR_NOMEM, "%s: out of memory", path);
        v->token_type[id] = 1;
    }
    cJSON_Delete(vj);
    for (int i = 0; i < n && !s; i++)
        if (!v->tokens[i]) { /* llama.cpp pads the same way */
            char pad[32];
            snprintf(pad, sizeof pad, "[PAD%d]", i);
            if (!(v->tokens[i] = strdup(pad))) s = tg_fail(err, TG_ERR_NOMEM, "%s: out of memory", path);
            v->token_type[i] = 4; /* user-defined */
        }
    if (s) {
        tg_vocab_free(v);
        return s;
    }
    for (int i = 0; i < n; i++)
        if (!strcmp(v->tokens[i], "<|endoftext|>")) {
            v->bos_id = v->eos_id = i;
            v->token_type[i] = 3; /* control */
        }

    snprintf(path, sizeof path, "%s/merges.txt", dir);
    size_t len = merges_len;
    char *txt = malloc(len + 1); /* a copy the loop below cuts into lines */
    if (!txt) {
        tg_vocab_free(v);
        return tg_fail(err, TG_ERR_NOMEM, "%s: out of memory", path);
    }
    memcpy(txt, merges, len);
    txt[len] = 0;
    if (memchr(txt, 0, len)) {
        free(txt);
        tg_vocab_free(v);
        return tg_fail(err, TG_ERR_FORMAT, "%s: contains a NUL byte", path);
    }
    size_t lines = 1;
    for (size_t i = 0; i < len; i++) lines += txt[i] == '\n';
    if (!(v->merges = calloc(lines, sizeof *v->merges))) s = tg_fail(err, TG_ERR_NOMEM, "%s: out of memory", path);
    /* Every search is bounded by the line (memchr with explicit lengths):
     * strchr on the rest of the buffer was linear per call under ASan's
     * strict_string_checks, quadratic over a 2M-line file. */
    const char *p = txt, *stop = txt + len;
    for (size_t line = 1; !s && p < stop; line++) {
        const char *nl = memchr(p, '\n', (size_t)(stop - p));
        const char *end = nl ? nl : stop, *next = nl ? nl + 1 : stop;
        if (end > p && end[-1] == '\r') end--;
        size_t n = (size_t)(end - p);
        if ((line == 1 && n >= 8 && !memcmp(p, "#version", 8)) || n == 0) {
            p = next;
            continue; /* the header and blank lines carry no merge */
        }
        const char *sp = memchr(p, ' ', n);
        if (!sp || sp == p || sp + 1 == end || memchr(sp + 1, ' ', (size_t)(end - sp - 1))) {
            s = tg_fail(err, TG_ERR_FORMAT, "%s: line %zu is not 'left right'", path, line);
            break;
        }
        char *m = malloc(n + 1);
        if (!m) {
            s = tg_fail(err, TG_ERR_NOMEM, "%s: out of memory", path);
            break;
        }
        memcpy(m, p, n);
        m[n] = 0;
        v->merges[v->n_merges++] = m;
        p = next;
    }
    free(txt);
    if (!s && !(v->pre = strdup("gpt-2"))) s = tg_fail(err, TG_ERR_NOMEM, "%s: out of memory", path);
    if (s) tg_vocab_free(v);
    return s;
}

tg_status tg_vocab_load_hf(tg_vocab *v, const char *dir, int n_min, tg_err *err) {
    memset(v, 0, sizeof *v);
    v->bos_id = v->eos_id = -1;
    char path[4096];
    size_t vlen, mlen;
    snprintf(path, sizeof path, "%s/vocab.json", dir);
    char *vj = wt_read_file(path, MAX_JSON, &vlen, err), *mt = NULL;
    snprintf(path, sizeof path, "%s/merges.txt", dir);
    if (vj) mt = wt_read_file(path, MAX_JSON, &mlen, err);
    tg_status s = vj && mt ? hf_vocab_parse(v, vj, vlen, mt, mlen, n_min, dir, err) : TG_ERR_IO;
    free(vj);
    free(mt);
    return s;
}

tg_status wt_json_object(const char *txt, size_t len, const char *path, cJSON **out, tg_err *err) {
    return parse_json(txt, len, path, out, err);
}

/* ---- config.json ----------------------------------------------------------- */

static tg_status cfg_int(const cJSON *cj, const char *path, const char *key, const char *alt, int dflt, int *out,
                         tg_err *err) {
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(cj, key);
    if (!x && alt) x = cJSON_GetObjectItemCaseSensitive(cj, alt);
    if (!x || cJSON_IsNull(x)) {
        if (dflt < 0) return tg_fail(err, TG_ERR_FORMAT, "%s: '%s' is missing", path, key);
        *out = dflt;
        return TG_OK;
    }
    double v = cJSON_IsNumber(x) ? x->valuedouble : -1;
    if (v != floor(v) || v < 0 || v > INT32_MAX)
        return tg_fail(err, TG_ERR_FORMAT, "%s: '%s' is not a non-negative integer", path, key);
    *out = (int)v;
    return TG_OK;
}

tg_status hf_config_parse(tg_gpt2_config *c, int *bos, int *eos, const char *json, size_t len, const char *path,
                          tg_err *err) {
    cJSON *cj;
    tg_status s = parse_json(json, len, path, &cj, err);
    if (s) return s;
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(cj, "model_type");
    const cJSON *act = cJSON_GetObjectItemCaseSensitive(cj, "activation_function");
    const cJSON *eps = cJSON_GetObjectItemCaseSensitive(cj, "layer_norm_epsilon");
    if (mt && !(cJSON_IsString(mt) && !strcmp(mt->valuestring, "gpt2")))
        s = tg_fail(err, TG_ERR_UNSUPPORTED, "%s: model_type is not \"gpt2\"", path);
    else if (act && !(cJSON_IsString(act) && (!strcmp(act->valuestring, "gelu_new") ||
                                               !strcmp(act->valuestring, "gelu_pytorch_tanh"))))
        s = tg_fail(err, TG_ERR_UNSUPPORTED, "%s: activation_function must be gelu_new (tanh GELU)", path);
    else if (eps && !cJSON_IsNumber(eps))
        s = tg_fail(err, TG_ERR_FORMAT, "%s: layer_norm_epsilon is not a number", path);
    if (!s) s = cfg_int(cj, path, "n_layer", NULL, -1, &c->n_layer, err);
    if (!s) s = cfg_int(cj, path, "n_head", NULL, -1, &c->n_head, err);
    if (!s) s = cfg_int(cj, path, "n_embd", NULL, -1, &c->n_embd, err);
    if (!s) s = cfg_int(cj, path, "n_positions", "n_ctx", -1, &c->n_ctx, err);
    if (!s) s = cfg_int(cj, path, "vocab_size", NULL, -1, &c->n_vocab, err);
    if (!s) s = cfg_int(cj, path, "n_inner", NULL, c->n_embd > INT32_MAX / 4 ? 0 : 4 * c->n_embd, &c->n_ff, err);
    if (!s) s = cfg_int(cj, path, "bos_token_id", NULL, 0x7fffffff, bos, err);
    if (!s) s = cfg_int(cj, path, "eos_token_id", NULL, 0x7fffffff, eos, err);
    c->ln_eps = eps ? (float)eps->valuedouble : 1e-5f;
    cJSON_Delete(cj);
    if (!s) s = tg_gpt2_config_check(c, path, err);
    return s;
}

static tg_status hf_config(tg_gpt2_config *c, int *bos, int *eos, const char *dir, tg_err *err) {
    char path[4096];
    snprintf(path, sizeof path, "%s/config.json", dir);
    size_t len;
    char *txt = wt_read_file(path, MAX_JSON, &len, err);
    if (!txt) return TG_ERR_IO;
    tg_status s = hf_config_parse(c, bos, eos, txt, len, path, err);
    free(txt);
    return s;
}

/* ---- model.safetensors ----------------------------------------------------- */

/* Our name for a slot -> the HF suffix, and whether it is a Conv1D weight. */
static const char *hf_part(const char *part, int *conv1d) {
    static const struct { const char *ours, *hf; int conv1d; } map[] = {
        {"token_embd.weight", "wte.weight", 0},       {"position_embd.weight", "wpe.weight", 0},
        {"attn_norm.weight", "ln_1.weight", 0},       {"attn_norm.bias", "ln_1.bias", 0},
        {"attn_qkv.weight", "attn.c_attn.weight", 1}, {"attn_qkv.bias", "attn.c_attn.bias", 0},
        {"attn_output.weight", "attn.c_proj.weight", 1}, {"attn_output.bias", "attn.c_proj.bias", 0},
        {"ffn_norm.weight", "ln_2.weight", 0},        {"ffn_norm.bias", "ln_2.bias", 0},
        {"ffn_up.weight", "mlp.c_fc.weight", 1},      {"ffn_up.bias", "mlp.c_fc.bias", 0},
        {"ffn_down.weight", "mlp.c_proj.weight", 1},  {"ffn_down.bias", "mlp.c_proj.bias", 0},
        {"output_norm.weight", "ln_f.weight", 0},     {"output_norm.bias", "ln_f.bias", 0},
        {"output.weight", "lm_head.weight", 0},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (!strcmp(part, map[i].ours)) {
            *conv1d = map[i].conv1d;
            return map[i].hf;
        }
    *conv1d = 0;
    return NULL;
}

static tg_status load_tensor(gpt2_store *store, const tg_st *st, const gpt2_slot *sl, int check, const char *path,
                             tg_err *err) {
    int conv1d;
    const char *part = hf_part(sl->part, &conv1d);
    char name[128], alt[160];
    if (sl->layer >= 0) snprintf(name, sizeof name, "h.%d.%s", sl->layer, part);
    else snprintf(name, sizeof name, "%s", part);
    snprintf(alt, sizeof alt, "transformer.%s", name);
    const tg_st_tensor *t = tg_st_find(st, alt);
    if (!t) t = tg_st_find(st, name);
    int is_output = !strcmp(sl->part, "output.weight");
    if (!t) {
        if (is_output) return TG_OK; /* tied to wte */
        return tg_fail(err, TG_ERR_FORMAT, "%s: tensor '%s' is missing", path, name);
    }
    /* the stored shape: Conv1D keeps [IN, OUT], i.e. our shape transposed */
    int64_t want[2] = {sl->shape[0], sl->shape[1]};
    if (conv1d) {
        want[0] = sl->shape[1];
        want[1] = sl->shape[0];
    }
    int ok = t->n_dims == sl->n_dims && t->shape[0] == want[0] && (sl->n_dims == 1 || t->shape[1] == want[1]);
    if (!ok) {
        char got[128] = "[";
        for (int d = 0; d < t->n_dims; d++) {
            size_t l = strlen(got);
            snprintf(got + l, sizeof got - l, "%s%" PRId64, d ? ", " : "", t->shape[d]);
        }
        strcat(got, "]");
        if (sl->n_dims == 2)
            return tg_fail(err, TG_ERR_FORMAT, "%s: tensor '%s' has shape %s, expected [%" PRId64 ", %" PRId64 "] from config.json",
                           path, t->name, got, want[0], want[1]);
        return tg_fail(err, TG_ERR_FORMAT, "%s: tensor '%s' has shape %s, expected [%" PRId64 "] from config.json", path,
                       t->name, got, want[0]);
    }
    size_t n = (size_t)t->n_elements;
    float *dst = store_alloc(store, n);
    if (!dst) return tg_fail(err, TG_ERR_NOMEM, "%s: out of memory for '%s'", path, t->name);
    tg_status s;
    /* the check runs on the f32 values (conversion keeps inf and NaN) in the
     * file's order, so the index it names is the file's */
    if (!conv1d) {
        s = tg_st_to_f32(t, dst, err);
        if (!s && check) s = gpt2_check_finite(TG_GGML_F32, dst, n, path, t->name, err);
    } else {
        float *tmp = malloc(n * sizeof *tmp);
        if (!tmp) return tg_fail(err, TG_ERR_NOMEM, "%s: out of memory for '%s'", path, t->name);
        s = tg_st_to_f32(t, tmp, err);
        if (!s && check) s = gpt2_check_finite(TG_GGML_F32, tmp, n, path, t->name, err);
        /* tmp[IN, OUT] -> dst[OUT, IN] */
        int64_t in = want[0], out = want[1];
        for (int64_t i = 0; !s && i < in; i++)
            for (int64_t o = 0; o < out; o++) dst[o * in + i] = tmp[i * out + o];
        free(tmp);
    }
    if (s) return s;
    gpt2_slot_set_f32(sl, dst);
    return TG_OK;
}

tg_status hf_load(tg_gpt2_model *m, const char *dir, int flags, tg_err *err) {
    int vocab_only = flags & TG_LOAD_VOCAB_ONLY;
    tg_status s;
    int bos = 0x7fffffff, eos = 0x7fffffff;
    char path[4096];
    snprintf(path, sizeof path, "%s/vocab.json", dir);
    struct stat sb; /* stat, not open: a FIFO must not block (wt_read_file refuses it) */
    if (stat(path, &sb) != 0)
        return tg_fail(err, TG_ERR_IO,
                       "%s: a folder without vocab.json (GPT-2) or a config.json naming llama (Llama): not a model "
                       "(give a GGUF file, a llama2.c .bin checkpoint, or a Hugging Face GPT-2 or Llama folder)",
                       dir);
    if (vocab_only) {
        /* config.json is optional here; it only pads the vocabulary */
        snprintf(path, sizeof path, "%s/config.json", dir);
        if (stat(path, &sb) == 0 && (s = hf_config(&m->cfg, &bos, &eos, dir, err))) return s;
        if ((s = tg_vocab_load_hf(&m->vocab, dir, m->cfg.n_vocab, err))) return s;
        m->cfg.n_vocab = m->vocab.n_tokens;
    } else {
        /* weights first: their byte counts bound vocab_size before the
         * vocabulary is padded up to it */
        if ((s = hf_config(&m->cfg, &bos, &eos, dir, err))) return s;
        snprintf(path, sizeof path, "%s/model.safetensors", dir);
        const char *why = tg_st_folder_why(dir);
        if (why) return tg_fail(err, TG_ERR_UNSUPPORTED, "%s: no model.safetensors; %s", dir, why);
        tg_st *st;
        if ((s = tg_st_open(&st, path, err))) return s;
        gpt2_store *store = m->priv;
        m->w.layers = calloc((size_t)m->cfg.n_layer, sizeof *m->w.layers);
        int n = gpt2_n_slots(&m->cfg);
        gpt2_slot *slots = malloc((size_t)n * sizeof *slots);
        if (!m->w.layers || !slots) s = tg_fail(err, TG_ERR_NOMEM, "%s: out of memory", path);
        if (!s) gpt2_slots(&m->cfg, &m->w, slots);
        for (int i = 0; i < n && !s; i++)
            s = load_tensor(store, st, &slots[i], !(flags & TG_LOAD_NO_CHECK), path, err);
        /* tensors of layers past n_layer: the config and the weights disagree */
        for (int i = 0; i < st->n_tensors && !s; i++) {
            const char *nm = st->tensors[i].name;
            if (!strncmp(nm, "transformer.", 12)) nm += 12;
            int layer;
            if (sscanf(nm, "h.%d.", &layer) == 1 && layer >= m->cfg.n_layer)
                s = tg_fail(err, TG_ERR_FORMAT, "%s: tensor '%s' is for layer %d but config.json has n_layer %d",
                            path, st->tensors[i].name, layer, m->cfg.n_layer);
        }
        free(slots);
        tg_st_close(st);
        if (s) return s;
        if ((s = tg_vocab_load_hf(&m->vocab, dir, m->cfg.n_vocab, err))) return s;
        if (m->vocab.n_tokens != m->cfg.n_vocab)
            return tg_fail(err, TG_ERR_FORMAT, "%s: vocab.json has %d tokens, more than vocab_size %d", dir,
                           m->vocab.n_tokens, m->cfg.n_vocab);
    }
    /* as GGUF's tokenizer.ggml.bos/eos_token_id: an id outside the vocabulary is an error */
    const int ids[2] = {bos, eos};
    const char *names[2] = {"bos_token_id", "eos_token_id"};
    for (int k = 0; k < 2; k++)
        if (ids[k] != 0x7fffffff && ids[k] >= m->vocab.n_tokens)
            return tg_fail(err, TG_ERR_FORMAT, "%s/config.json: %s = %d is not a token id (vocabulary of %d)", dir,
                           names[k], ids[k], m->vocab.n_tokens);
    if (bos != 0x7fffffff) m->vocab.bos_id = bos;
    if (eos != 0x7fffffff) m->vocab.eos_id = eos;
    if (vocab_only) return TG_OK;
    m->w.tied = m->w.lm_head.data == NULL;
    if (m->w.tied) m->w.lm_head = m->w.wte;
    m->has_weights = 1;
    return TG_OK;
}
