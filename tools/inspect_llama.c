/* inspect_llama.c — see inspect_llama.h. What the readers of weights/ see,
 * without the binding: the header or config.json, the tensor table, what
 * the model costs in memory once loaded, and the problems that would stop
 * a load (reader errors, NaN/inf). */
#include "tools/inspect_llama.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tools/cli.h"
#include "weights/file.h"
#include "weights/finite.h"
#include "weights/gguf.h"
#include "weights/hf_llama.h"
#include "weights/llama.h"
#include "weights/llama2c.h"
#include "weights/model.h"
#include "weights/vocab.h"

typedef struct row {
    const char *name;
    int n_dims;
    int64_t shape[4]; /* numpy order */
    char type[24];
    uint64_t bytes, offset;
    uint64_t resident; /* what the loaded model holds for it (tg_llama_resident) */
} row;

typedef struct desc {
    const char *path;
    char format[96];
    uint64_t file_bytes, resident_bytes;
    tg_model_config cfg;
    int tied, bos, eos;
    const tg_vocab *vocab; /* NULL: none read */
    const char *note;   /* what the load does to the file's types, or NULL */
    row *rows;
    int n_rows;
    char problem[600];  /* empty: none */
} desc;

static size_t n_params(const tg_model_config *c, int tied) {
    size_t E = (size_t)c->n_embd, F = (size_t)c->n_ff, V = (size_t)c->n_vocab, L = (size_t)c->n_layer;
    size_t hs = (size_t)tg_config_head_dim(c);
    size_t q = (size_t)c->n_head * hs, kv = (size_t)tg_config_n_kv_head(c) * hs;
    return V * E * (tied ? 1 : 2) + E + L * (2 * E + E * q + 2 * E * kv + q * E + 3 * E * F);
}

static int print(const desc *d, int json) {
    tg_model_config cfg = d->cfg, *c = &cfg; /* the 0 defaults spelled out */
    c->n_kv_head = tg_config_n_kv_head(c);
    c->head_dim = tg_config_head_dim(c);
    c->rope_theta = tg_config_rope_theta(c);
    c->rope_dim = tg_config_rope_dim(c);
    const char *pairs = c->rope_pairs == TG_ROPE_ADJACENT ? "adjacent pairs (2i, 2i+1)" : "halves (i, i+HS/2)";
    size_t np = n_params(c, d->tied);
    if (!json) {
        printf("path:          %s\n", d->path);
        printf("format:        %s, %d tensors, %" PRIu64 " bytes\n", d->format, d->n_rows, d->file_bytes);
        printf("architecture:  llama\n");
        printf("layers %d, heads %d, kv heads %d (%s), head size %d, embedding %d, feed-forward %d, context %d, "
               "vocab %d\n",
               c->n_layer, c->n_head, c->n_kv_head,
               c->n_kv_head == c->n_head ? "MHA" : c->n_kv_head == 1 ? "MQA" : "GQA", c->head_dim, c->n_embd, c->n_ff,
               c->n_ctx, c->n_vocab);
        printf("rms norm eps %g; rope theta %g, %d dims, %s; parameters %zu (%s)\n", (double)c->ln_eps,
               (double)c->rope_theta, c->rope_dim, pairs, np, d->tied ? "output tied to token_embd" : "separate output.weight");
        printf("resident:      %" PRIu64 " bytes of weights once loaded%s%s\n", d->resident_bytes, d->note ? "; " : "",
               d->note ? d->note : "");
        if (d->vocab && d->vocab->n_tokens)
            printf("tokenizer:     %s, %d tokens, bos %d, eos %d\n",
                   d->vocab->kind == TG_VOCAB_SPM ? "SentencePiece-style BPE (llama)" : "gpt2 byte-level BPE",
                   d->vocab->n_tokens, d->vocab->bos_id, d->vocab->eos_id);
        else if (d->vocab)
            printf("tokenizer:     none\n");
        if (!d->vocab) /* a llama2.c checkpoint, a folder without tokenizer.json */
            printf("tokenizer:     none in the file (where a model runs, pass --tokenizer PATH: "
                   "llama2.c's tokenizer.bin, a tokenizer.json or a GGUF)\n");
        if (!d->vocab && (d->bos >= 0 || d->eos >= 0)) printf("special ids:   bos %d, eos %d\n", d->bos, d->eos);
        printf("tensors:\n");
        size_t w = 5, tw = 3; /* "total", "F32" */
        uint64_t bytes = 0;
        for (int i = 0; i < d->n_rows; i++) {
            w = strlen(d->rows[i].name) > w ? strlen(d->rows[i].name) : w;
            tw = strlen(d->rows[i].type) > tw ? strlen(d->rows[i].type) : tw;
            bytes += d->rows[i].bytes;
        }
        for (int i = 0; i < d->n_rows; i++) {
            char sh[96];
            const row *r = &d->rows[i];
            if (r->n_dims == 2) snprintf(sh, sizeof sh, "[%" PRId64 ", %" PRId64 "]", r->shape[0], r->shape[1]);
            else snprintf(sh, sizeof sh, "[%" PRId64 "]", r->shape[0]);
            printf("  %-*s  %-14s %-*s %12" PRIu64 " bytes  %12" PRIu64 " resident\n", (int)w, r->name, sh, (int)tw,
                   r->type, r->bytes, r->resident);
        }
        printf("  %-*s  %-14s %-*s %12" PRIu64 " bytes  %12" PRIu64 " resident\n", (int)w, "total", "", (int)tw, "",
               bytes, d->resident_bytes);
        printf("problems:      %s\n", d->problem[0] ? d->problem : "none");
        if (d->problem[0]) fprintf(stderr, "tinygpt inspect: %s\n", d->problem);
        return d->problem[0] ? EXIT_RUNTIME : EXIT_OK;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "path", d->path);
    cJSON_AddStringToObject(o, "format", d->format);
    cJSON_AddNumberToObject(o, "file_bytes", (double)d->file_bytes);
    cJSON_AddStringToObject(o, "architecture", "llama");
    cJSON_AddBoolToObject(o, "vocab_only", 0);
    cJSON_AddNumberToObject(o, "n_layer", c->n_layer);
    cJSON_AddNumberToObject(o, "n_head", c->n_head);
    cJSON_AddNumberToObject(o, "n_kv_head", c->n_kv_head);
    cJSON_AddNumberToObject(o, "head_size", c->head_dim);
    cJSON_AddNumberToObject(o, "n_embd", c->n_embd);
    cJSON_AddNumberToObject(o, "n_ff", c->n_ff);
    cJSON_AddNumberToObject(o, "n_ctx", c->n_ctx);
    cJSON_AddNumberToObject(o, "n_vocab", c->n_vocab);
    cJSON_AddNumberToObject(o, "n_params", (double)np);
    cJSON_AddNumberToObject(o, "ln_eps", c->ln_eps);
    cJSON_AddNumberToObject(o, "rope_theta", c->rope_theta);
    cJSON_AddNumberToObject(o, "rope_dim", c->rope_dim);
    cJSON_AddStringToObject(o, "rope_pairs", c->rope_pairs == TG_ROPE_ADJACENT ? "adjacent" : "halves");
    cJSON_AddBoolToObject(o, "tied", d->tied);
    cJSON_AddNumberToObject(o, "resident_bytes", (double)d->resident_bytes);
    if (d->note) cJSON_AddStringToObject(o, "note", d->note);
    if (d->vocab && d->vocab->n_tokens) {
        cJSON *t = cJSON_AddObjectToObject(o, "tokenizer");
        cJSON_AddStringToObject(t, "model", d->vocab->kind == TG_VOCAB_SPM ? "llama" : "gpt2");
        cJSON_AddNumberToObject(t, "n_tokens", d->vocab->n_tokens);
        cJSON_AddNumberToObject(t, "bos_id", d->vocab->bos_id);
        cJSON_AddNumberToObject(t, "eos_id", d->vocab->eos_id);
    }
    if (d->bos >= 0) cJSON_AddNumberToObject(o, "bos_id", d->bos);
    if (d->eos >= 0) cJSON_AddNumberToObject(o, "eos_id", d->eos);
    cJSON *ts = cJSON_AddArrayToObject(o, "tensors");
    uint64_t tensor_bytes = 0;
    for (int i = 0; i < d->n_rows; i++) {
        cJSON *t = cJSON_CreateObject();
        cJSON_AddStringToObject(t, "name", d->rows[i].name);
        cJSON *sh = cJSON_AddArrayToObject(t, "shape");
        for (int k = 0; k < d->rows[i].n_dims; k++) cJSON_AddItemToArray(sh, cJSON_CreateNumber((double)d->rows[i].shape[k]));
        cJSON_AddStringToObject(t, "type", d->rows[i].type);
        cJSON_AddNumberToObject(t, "bytes", (double)d->rows[i].bytes);
        cJSON_AddNumberToObject(t, "offset", (double)d->rows[i].offset);
        cJSON_AddNumberToObject(t, "resident_bytes", (double)d->rows[i].resident);
        cJSON_AddItemToArray(ts, t);
        tensor_bytes += d->rows[i].bytes;
    }
    cJSON_AddNumberToObject(o, "tensor_bytes", (double)tensor_bytes);
    cJSON *pr = cJSON_AddArrayToObject(o, "problems");
    if (d->problem[0]) cJSON_AddItemToArray(pr, cJSON_CreateString(d->problem));
    cJSON_AddArrayToObject(o, "warnings");
    char *s = cJSON_Print(o);
    if (s) puts(s);
    free(s);
    cJSON_Delete(o);
    return d->problem[0] ? EXIT_RUNTIME : EXIT_OK;
}

/* Each row's resident bytes (rows i and ts->t[i] are the same tensor) and
 * their sum. */
static tg_status resident_rows(desc *d, const tg_tensor_set *ts, tg_err *err) {
    uint64_t *res = malloc((ts->n ? (size_t)ts->n : 1) * sizeof *res);
    if (!res) return tg_fail(err, TG_ERR_NOMEM, "out of memory");
    tg_status s = tg_llama_resident(&d->cfg, ts, res, err);
    d->resident_bytes = 0;
    for (int i = 0; !s && i < d->n_rows && i < ts->n; i++) {
        d->rows[i].resident = res[i];
        d->resident_bytes += res[i];
    }
    free(res);
    return s;
}

static int inspect_l2c(const char *path, int json) {
    tg_l2c *c;
    tg_err err = {{0}};
    if (tg_l2c_open(&c, path, &err)) return cli_error("inspect", "%s", err.msg);
    desc d = {.path = path, .bos = 1, .eos = 2, .file_bytes = c->size};
    static const char *const forms[] = {"llama2.c checkpoint (legacy .bin, fp32)", "llama2.c ak42 v1 (fp32)",
                                        "llama2.c ak42 v2 (int8 groups of %d, fp32 scales)"};
    snprintf(d.format, sizeof d.format, forms[c->cfg.version], c->cfg.group_size);
    d.tied = c->cfg.shared;
    tg_tensor_set ts = {0};
    if (tg_l2c_tensor_set(c, &d.cfg, &ts, &err)) {
        tg_l2c_close(c);
        return cli_error("inspect", "%s", err.msg);
    }
    char note[320];
    if (c->cfg.version == TG_L2C_V2) {
        int n_q8 = 0;
        for (int i = 0; i < c->n_tensors; i++) n_q8 += c->tensors[i].kind == TG_L2C_Q8G;
        if (c->n_repacked == n_q8)
            snprintf(note, sizeof note, "the int8 groups run natively as Q8_0 (the int8 values kept, each group's "
                     "fp32 scale rounded to f16: <= 2^-11 relative per weight)");
        else if (c->n_repacked)
            snprintf(note, sizeof note, "%d of %d int8 tensors run natively as Q8_0 (the int8 values kept, the "
                     "scales rounded to f16: <= 2^-11 relative per weight); the rest are dequantized to f32 at load "
                     "(rows not a multiple of 32, or a scale f16 cannot hold)", c->n_repacked, n_q8);
        else
            snprintf(note, sizeof note, "the int8 groups are dequantized to f32 at load (q * scale, one rounding): "
                     "Q8_0 needs group_size and rows multiples of 32 (group_size %d) and scales an f16 holds",
                     c->cfg.group_size);
        d.note = note;
    }
    if (c->cfg.version == TG_L2C_LEGACY)
        d.note = "the rope tables at the end of the file are not read (recomputed)";
    d.rows = calloc((size_t)c->n_tensors, sizeof *d.rows);
    d.n_rows = d.rows ? c->n_tensors : 0;
    for (int i = 0; i < d.n_rows; i++) {
        const tg_l2c_tensor *t = &c->tensors[i];
        row *r = &d.rows[i];
        r->name = t->name;
        r->n_dims = t->n_dims;
        r->shape[0] = t->shape[0], r->shape[1] = t->shape[1];
        int q8_0 = ts.t[i].type == TG_GGML_Q8_0; /* repacked: runs as Q8_0 */
        snprintf(r->type, sizeof r->type, "%s",
                 t->kind == TG_L2C_Q8G ? (q8_0 ? "I8+F32 as Q8_0" : "I8+F32 as F32") : "F32");
        r->bytes = t->kind == TG_L2C_Q8G ? t->n_elements + 4 * (t->n_elements / (uint64_t)c->cfg.group_size)
                                         : 4 * t->n_elements;
        r->offset = t->offset;
    }
    if (resident_rows(&d, &ts, &err)) {
        free(d.rows), free(ts.t);
        tg_l2c_close(c);
        return cli_error("inspect", "%s", err.msg);
    }
    if (tg_l2c_check_finite(c, &err)) snprintf(d.problem, sizeof d.problem, "%s", err.msg);
    int rc = print(&d, json);
    free(d.rows);
    free(ts.t);
    tg_l2c_close(c);
    return rc;
}

static int inspect_hf(const char *path, int json) {
    tg_hf_llama *h;
    tg_err err = {{0}};
    if (tg_hf_llama_open(&h, path, &err)) return cli_error("inspect", "%s", err.msg);
    desc d = {.path = path, .bos = h->bos_id, .eos = h->eos_id, .cfg = h->cfg, .tied = h->tie,
              .file_bytes = h->st->size};
    snprintf(d.format, sizeof d.format, "Hugging Face LlamaForCausalLM folder (model.safetensors)");
    tg_tensor_set ts = {0};
    if (tg_hf_llama_tensor_set(h, &ts, &err)) {
        tg_hf_llama_close(h);
        return cli_error("inspect", "%s", err.msg);
    }
    d.rows = calloc((size_t)ts.n + 1, sizeof *d.rows);
    d.n_rows = d.rows ? ts.n : 0;
    d.note = "the Q and K rows stay in Hugging Face's halves order (convert permutes them for GGUF)";
    /* the folder's tokenizer.json, described (and built) like a GGUF's vocabulary */
    tg_vocab vocab;
    int have_vocab = 0;
    char tj[4096];
    struct stat tsb;
    snprintf(tj, sizeof tj, "%s/tokenizer.json", path);
    if (stat(tj, &tsb) == 0) {
        tg_err verr = {{0}};
        if (tg_vocab_load_hf_json(&vocab, tj, &verr))
            snprintf(d.problem, sizeof d.problem, "the tokenizer cannot be built: %s", verr.msg);
        else
            have_vocab = 1, d.vocab = &vocab;
    }
    for (int i = 0; i < d.n_rows; i++) {
        const tg_tensor_view *v = &ts.t[i];
        row *r = &d.rows[i];
        r->name = v->name;
        r->n_dims = v->n_dims > 4 ? 4 : v->n_dims;
        for (int k = 0; k < r->n_dims; k++) r->shape[k] = v->ne[r->n_dims - 1 - k];
        snprintf(r->type, sizeof r->type, "%s", tg_ggml_type_name(v->type));
        r->bytes = v->nbytes;
        r->offset = (uint64_t)((const uint8_t *)v->data - h->st->base);
        const char *what = "";
        int64_t at = tg_find_nonfinite(v->type, v->data, v->nbytes / (uint64_t)tg_ggml_type_size(v->type), &what);
        if (at >= 0 && !d.problem[0])
            snprintf(d.problem, sizeof d.problem, "tensor '%s' holds a non-finite value (%s) at index %" PRId64,
                     v->name, what, at);
    }
    int rc = resident_rows(&d, &ts, &err) ? cli_error("inspect", "%s", err.msg) : print(&d, json);
    free(d.rows);
    free(ts.t);
    if (have_vocab) tg_vocab_free(&vocab);
    tg_hf_llama_close(h);
    return rc;
}

/* A GGUF whose general.architecture is llama: the loaded config (the
 * binding's view of the llama.* keys) beside the file's tensor table. */
static int inspect_gguf(const char *path, int json) {
    tg_gguf *g;
    tg_err err = {{0}};
    if (tg_gguf_open(&g, path, &err)) return -1;
    const char *a;
    size_t alen;
    tg_err ignored;
    if (tg_gguf_get_str(g, "general.architecture", &a, &alen, &ignored) || alen != 5 || memcmp(a, "llama", 5)) {
        tg_gguf_close(g);
        return -1;
    }
    tg_model m;
    if (tg_model_load(&m, path, TG_LOAD_NO_CHECK, &err)) {
        tg_gguf_close(g);
        return cli_error("inspect", "%s", err.msg);
    }
    desc d = {.path = path, .cfg = m.cfg, .tied = m.llama.tied, .bos = -1, .eos = -1, .vocab = &m.vocab,
              .file_bytes = tg_gguf_file_size(g)};
    snprintf(d.format, sizeof d.format, "GGUF v%u, alignment %u, %" PRId64 " metadata keys", tg_gguf_version(g),
             tg_gguf_alignment(g), tg_gguf_n_kv(g));
    d.note = "matrices are used in the file's type from the memory map";
    int n = (int)tg_gguf_n_tensors(g);
    d.rows = calloc((size_t)n + 1, sizeof *d.rows);
    d.n_rows = d.rows ? n : 0;
    for (int i = 0; i < d.n_rows; i++) {
        const tg_gguf_tensor *t = tg_gguf_tensor_at(g, i);
        row *r = &d.rows[i];
        r->name = t->name;
        r->n_dims = t->n_dims;
        for (int k = 0; k < t->n_dims; k++) r->shape[k] = t->ne[t->n_dims - 1 - k];
        snprintf(r->type, sizeof r->type, "%s", tg_ggml_type_name(t->type) ? tg_ggml_type_name(t->type) : "?");
        r->bytes = t->nbytes;
        r->offset = t->offset;
        const char *what = "";
        int64_t at = tg_find_nonfinite(t->type, t->data, t->n_elements, &what);
        if (at >= 0 && !d.problem[0])
            snprintf(d.problem, sizeof d.problem, "tensor '%s' holds a non-finite value (%s) at index %" PRId64,
                     t->name, what, at);
    }
    tg_tensor_set ts = {0};
    int rc = tg_tensor_set_gguf(&ts, g, &err) || resident_rows(&d, &ts, &err) ? cli_error("inspect", "%s", err.msg)
                                                                                : print(&d, json);
    tg_tensor_set_free(&ts);
    free(d.rows);
    tg_model_free(&m);
    tg_gguf_close(g);
    return rc;
}

int inspect_llama(const char *path, int json) {
    struct stat sb;
    if (stat(path, &sb) != 0) return -1;
    if (S_ISDIR(sb.st_mode)) return tg_hf_is_llama(path) ? inspect_hf(path, json) : -1;
    tg_err err;
    int fd = wt_open_regular(path, &sb, &err);
    if (fd < 0) return -1;
    uint8_t head[TG_L2C_HEADER];
    ssize_t n = read(fd, head, sizeof head);
    close(fd);
    if (n < 0) return -1;
    if (n >= 4 && !memcmp(head, "GGUF", 4)) return inspect_gguf(path, json);
    int kind = tg_l2c_sniff(head, (size_t)n, (uint64_t)sb.st_size);
    if (kind == -1) return -1;
    return inspect_l2c(path, json); /* also -2: the magic with an unknown version, reported by name */
}

void inspect_llama_why(const char *path, char *out, size_t cap) {
    out[0] = 0;
    struct stat sb;
    tg_err err;
    int fd = wt_open_regular(path, &sb, &err);
    if (fd < 0) return;
    uint8_t head[TG_L2C_HEADER];
    ssize_t n = read(fd, head, sizeof head);
    close(fd);
    if (n >= 0) tg_l2c_legacy_why(head, (size_t)n, (uint64_t)sb.st_size, out, cap);
}
