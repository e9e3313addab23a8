/* hf_llama.c — see hf_llama.h. */
#include "weights/hf_llama.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "weights/gguf.h"
#include "weights/internal.h"

#define MAX_CONFIG (16u << 20)
#define MAX_DIM (1 << 20) /* a sanity bound on every size of config.json */

/* An integer field in 1..MAX_DIM (dflt > 0: the value when absent or null). */
static tg_status get_int(const cJSON *cj, const char *path, const char *key, int dflt, int *out, tg_err *err) {
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(cj, key);
    if (!x || cJSON_IsNull(x)) {
        if (dflt <= 0) /* a GPT-2 config relabelled llama lands here too: say why we read it so */
            return tg_fail(err, TG_ERR_FORMAT, "%s: '%s' is missing (a model_type \"llama\" config needs it)", path, key);
        *out = dflt;
        return TG_OK;
    }
    double v = cJSON_IsNumber(x) ? x->valuedouble : -1;
    if (v != floor(v) || v < 1 || v > MAX_DIM)
        return tg_fail(err, TG_ERR_FORMAT, "%s: '%s' is not an integer in 1..%d", path, key, MAX_DIM);
    *out = (int)v;
    return TG_OK;
}

/* A positive finite number (dflt when absent or null). */
static tg_status get_pos(const cJSON *cj, const char *path, const char *key, double dflt, float *out, tg_err *err) {
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(cj, key);
    if (!x || cJSON_IsNull(x)) {
        *out = (float)dflt;
        return TG_OK;
    }
    float v = cJSON_IsNumber(x) ? (float)x->valuedouble : -1.0f;
    if (!(v > 0.0f) || !isfinite(v))
        return tg_fail(err, TG_ERR_FORMAT, "%s: '%s' is not a positive finite number", path, key);
    *out = v;
    return TG_OK;
}

/* bos/eos: an integer, a list of them (the first is taken), or absent/null (-1). */
static tg_status get_id(const cJSON *cj, const char *path, const char *key, int *out, tg_err *err) {
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(cj, key);
    *out = -1;
    if (!x || cJSON_IsNull(x)) return TG_OK;
    if (cJSON_IsArray(x)) x = cJSON_GetArrayItem(x, 0);
    double v = x && cJSON_IsNumber(x) ? x->valuedouble : -1;
    if (v != floor(v) || v < 0 || v >= (1 << 24))
        return tg_fail(err, TG_ERR_FORMAT, "%s: '%s' is not a token id", path, key);
    *out = (int)v;
    return TG_OK;
}

/* A field that must be false (or absent): what we do not run. */
static tg_status must_be_off(const cJSON *cj, const char *path, const char *key, tg_err *err) {
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(cj, key);
    if (!x || cJSON_IsNull(x) || cJSON_IsFalse(x)) return TG_OK;
    return tg_fail(err, TG_ERR_UNSUPPORTED, "%s: '%s' is set: not supported for Llama models", path, key);
}

static int names_llama(const cJSON *cj) {
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(cj, "model_type");
    if (cJSON_IsString(mt)) return !strcmp(mt->valuestring, "llama");
    const cJSON *ar = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(cj, "architectures"), 0);
    return cJSON_IsString(ar) && !strcmp(ar->valuestring, "LlamaForCausalLM");
}

tg_status tg_hf_llama_config_parse(tg_model_config *c, int *bos, int *eos, int *tie, const char *json, size_t len,
                                   const char *path, tg_err *err) {
    memset(c, 0, sizeof *c);
    cJSON *cj;
    tg_status s = wt_json_object(json, len, path, &cj, err);
    if (s) return s;
    const cJSON *act = cJSON_GetObjectItemCaseSensitive(cj, "hidden_act");
    const cJSON *tw = cJSON_GetObjectItemCaseSensitive(cj, "tie_word_embeddings");
    if (!names_llama(cj))
        s = tg_fail(err, TG_ERR_UNSUPPORTED, "%s: model_type is not \"llama\"", path);
    else if (act && !cJSON_IsNull(act) && !(cJSON_IsString(act) && !strcmp(act->valuestring, "silu")))
        s = tg_fail(err, TG_ERR_UNSUPPORTED, "%s: hidden_act must be \"silu\" (SwiGLU)", path);
    else if (tw && !cJSON_IsNull(tw) && !cJSON_IsBool(tw))
        s = tg_fail(err, TG_ERR_FORMAT, "%s: 'tie_word_embeddings' is not true or false", path);
    if (!s) s = must_be_off(cj, path, "rope_scaling", err);
    if (!s) s = must_be_off(cj, path, "attention_bias", err);
    if (!s) s = must_be_off(cj, path, "mlp_bias", err);
    if (!s) s = get_int(cj, path, "hidden_size", 0, &c->n_embd, err);
    if (!s) s = get_int(cj, path, "intermediate_size", 0, &c->n_ff, err);
    if (!s) s = get_int(cj, path, "num_hidden_layers", 0, &c->n_layer, err);
    if (!s) s = get_int(cj, path, "num_attention_heads", 0, &c->n_head, err);
    if (!s) s = get_int(cj, path, "num_key_value_heads", c->n_head, &c->n_kv_head, err);
    if (!s) s = get_int(cj, path, "vocab_size", 0, &c->n_vocab, err);
    if (!s) s = get_int(cj, path, "max_position_embeddings", 2048, &c->n_ctx, err);
    const cJSON *hd = cJSON_GetObjectItemCaseSensitive(cj, "head_dim");
    if (!s && (!hd || cJSON_IsNull(hd)) && c->n_embd % c->n_head)
        s = tg_fail(err, TG_ERR_FORMAT, "%s: hidden_size %d is not a multiple of num_attention_heads %d (and no head_dim)",
                    path, c->n_embd, c->n_head);
    if (!s) s = get_int(cj, path, "head_dim", c->n_embd / c->n_head > 0 ? c->n_embd / c->n_head : 1, &c->head_dim, err);
    if (!s) s = get_pos(cj, path, "rms_norm_eps", 1e-6, &c->ln_eps, err); /* LlamaConfig's default */
    if (!s) s = get_pos(cj, path, "rope_theta", 10000.0, &c->rope_theta, err);
    if (!s) s = get_id(cj, path, "bos_token_id", bos, err);
    if (!s) s = get_id(cj, path, "eos_token_id", eos, err);
    *tie = tw && cJSON_IsTrue(tw); /* LlamaConfig's default is false */
    cJSON_Delete(cj);
    if (s) return s;
    c->arch = TG_ARCH_LLAMA;
    c->rope_dim = c->head_dim;
    c->rope_pairs = TG_ROPE_HALVES;
    if (c->n_head % c->n_kv_head)
        return tg_fail(err, TG_ERR_FORMAT, "%s: num_key_value_heads %d does not divide num_attention_heads %d", path,
                       c->n_kv_head, c->n_head);
    if (c->head_dim % 2)
        return tg_fail(err, TG_ERR_FORMAT, "%s: head size %d is odd: rotary embeddings rotate pairs", path, c->head_dim);
    if ((long)c->n_head * c->head_dim > MAX_DIM)
        return tg_fail(err, TG_ERR_FORMAT, "%s: num_attention_heads x head_dim is above %d", path, MAX_DIM);
    return TG_OK;
}

static char *join(const char *dir, const char *file) {
    size_t n = strlen(dir) + strlen(file) + 2;
    char *p = malloc(n);
    if (p) snprintf(p, n, "%s/%s", dir, file);
    return p;
}

int tg_hf_is_llama(const char *dir) {
    char *path = join(dir, "config.json");
    size_t len;
    tg_err err;
    char *txt = path ? wt_read_file(path, MAX_CONFIG, &len, &err) : NULL;
    int yes = 0;
    if (txt) {
        cJSON *cj = wt_json_parse(txt, len);
        yes = cj && cJSON_IsObject(cj) && names_llama(cj);
        cJSON_Delete(cj);
    }
    free(txt);
    free(path);
    return yes;
}

/* HF's name -> ours (out, 48 bytes); 0 to skip it (a buffer of old
 * checkpoints), -1 unknown; *layer = its layer or -1. */
static int our_name(const char *hf, char out[48], int *layer) {
    static const struct { const char *hf, *ours; } top[] = {
        {"model.embed_tokens.weight", "token_embd.weight"},
        {"model.norm.weight", "output_norm.weight"},
        {"lm_head.weight", "output.weight"},
    };
    static const struct { const char *hf, *ours; } per[] = {
        {"input_layernorm.weight", "attn_norm"},       {"self_attn.q_proj.weight", "attn_q"},
        {"self_attn.k_proj.weight", "attn_k"},         {"self_attn.v_proj.weight", "attn_v"},
        {"self_attn.o_proj.weight", "attn_output"},    {"post_attention_layernorm.weight", "ffn_norm"},
        {"mlp.gate_proj.weight", "ffn_gate"},          {"mlp.up_proj.weight", "ffn_up"},
        {"mlp.down_proj.weight", "ffn_down"},
    };
    *layer = -1;
    for (size_t i = 0; i < sizeof top / sizeof *top; i++)
        if (!strcmp(hf, top[i].hf)) return snprintf(out, 48, "%s", top[i].ours), 1;
    int l, n = 0;
    if (sscanf(hf, "model.layers.%d.%n", &l, &n) != 1 || n == 0 || l < 0) return -1;
    char digits[16];
    snprintf(digits, sizeof digits, "%d", l);
    if (strncmp(hf + strlen("model.layers."), digits, strlen(digits)) || hf[strlen("model.layers.") + strlen(digits)] != '.')
        return -1; /* "model.layers.+1." or "01.": not how HF writes a layer */
    *layer = l;
    const char *rest = hf + n;
    if (!strcmp(rest, "self_attn.rotary_emb.inv_freq")) return 0; /* recomputed from rope_theta */
    for (size_t i = 0; i < sizeof per / sizeof *per; i++)
        if (!strcmp(rest, per[i].hf)) return snprintf(out, 48, "blk.%d.%s.weight", l, per[i].ours), 1;
    return -1;
}

tg_status tg_hf_llama_open(tg_hf_llama **out, const char *dir, tg_err *err) {
    *out = NULL;
    tg_hf_llama *h = calloc(1, sizeof *h);
    char *cfg_path = join(dir, "config.json"), *st_path = join(dir, "model.safetensors");
    tg_status s = TG_OK;
    if (!h || !cfg_path || !st_path || !(h->dir = strdup(dir))) s = tg_fail(err, TG_ERR_NOMEM, "%s: out of memory", dir);
    size_t len;
    char *txt = NULL;
    if (!s && !(txt = wt_read_file(cfg_path, MAX_CONFIG, &len, err))) s = TG_ERR_IO;
    if (!s) s = tg_hf_llama_config_parse(&h->cfg, &h->bos_id, &h->eos_id, &h->tie, txt, len, cfg_path, err);
    free(txt);
    const char *why = s ? NULL : tg_st_folder_why(dir);
    if (why) s = tg_fail(err, TG_ERR_UNSUPPORTED, "%s: no model.safetensors; %s", dir, why);
    if (!s) s = tg_st_open(&h->st, st_path, err);
    if (!s && !(h->names = calloc((size_t)h->st->n_tensors + 1, sizeof *h->names)))
        s = tg_fail(err, TG_ERR_NOMEM, "%s: out of memory", st_path);
    for (int i = 0; !s && i < h->st->n_tensors; i++) {
        const tg_st_tensor *t = &h->st->tensors[i];
        int layer, k = our_name(t->name, h->names[i], &layer);
        if (k < 0)
            s = tg_fail(err, TG_ERR_UNSUPPORTED, "%s: tensor '%.80s' is not one of LlamaForCausalLM's", st_path, t->name);
        else if (layer >= h->cfg.n_layer)
            s = tg_fail(err, TG_ERR_FORMAT, "%s: tensor '%.80s' is for layer %d but config.json has num_hidden_layers %d",
                        st_path, t->name, layer, h->cfg.n_layer);
        else if (k == 1 && strcmp(t->dtype, "F32") && strcmp(t->dtype, "F16") && strcmp(t->dtype, "BF16"))
            s = tg_fail(err, TG_ERR_UNSUPPORTED, "%s: tensor '%.80s' has dtype %s (F32, F16, BF16 load)", st_path,
                        t->name, t->dtype);
        else if (k == 1 && t->n_dims > TG_GGUF_MAX_DIMS)
            s = tg_fail(err, TG_ERR_FORMAT, "%s: tensor '%.80s' has %d dimensions", st_path, t->name, t->n_dims);
        if (k == 0) h->names[i][0] = 0;
    }
    free(cfg_path);
    free(st_path);
    if (s) {
        tg_hf_llama_close(h);
        return s;
    }
    *out = h;
    return TG_OK;
}

void tg_hf_llama_close(tg_hf_llama *h) {
    if (!h) return;
    tg_st_close(h->st);
    free(h->names);
    free(h->dir);
    free(h);
}

tg_status tg_hf_llama_tensor_set(const tg_hf_llama *h, tg_tensor_set *ts, tg_err *err) {
    ts->n = 0;
    if (!(ts->t = calloc((size_t)h->st->n_tensors + 1, sizeof *ts->t)))
        return tg_fail(err, TG_ERR_NOMEM, "%s: out of memory", h->dir);
    for (int i = 0; i < h->st->n_tensors; i++) {
        const tg_st_tensor *t = &h->st->tensors[i];
        if (!h->names[i][0]) continue;                                   /* skipped */
        if (h->tie && !strcmp(h->names[i], "output.weight")) continue; /* HF ties it to the embedding */
        tg_tensor_view *v = &ts->t[ts->n++];
        v->name = h->names[i];
        v->n_dims = t->n_dims;
        for (int d = 0; d < 4; d++) v->ne[d] = d < t->n_dims ? t->shape[t->n_dims - 1 - d] : 1;
        v->type = !strcmp(t->dtype, "F32") ? TG_GGML_F32 : !strcmp(t->dtype, "F16") ? TG_GGML_F16 : TG_GGML_BF16;
        v->data = t->data;
        v->nbytes = t->end - t->begin;
    }
    return TG_OK;
}
