/* model.c — the generic loader: format by inspection, architecture by
 * metadata, then the architecture's binding (weights/model.h). */
#include "weights/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "weights/gguf.h"
#include "weights/hf_llama.h"
#include "weights/internal.h"

static const char *const arch_names[TG_ARCH_COUNT] = {"gpt2", "llama"};

const char *tg_arch_name(tg_arch a) {
    return (unsigned)a < TG_ARCH_COUNT ? arch_names[a] : "?";
}

int tg_arch_parse(const char *s, unsigned long len) {
    for (int a = 0; a < TG_ARCH_COUNT; a++)
        if (strlen(arch_names[a]) == len && !memcmp(s, arch_names[a], len)) return a;
    return -1;
}

/* ---- tensor sets (weights/tensors.h) ---------------------------------------- */

const tg_tensor_view *tg_tensor_set_find(const tg_tensor_set *s, const char *name) {
    for (int i = 0; i < s->n; i++)
        if (!strcmp(s->t[i].name, name)) return &s->t[i];
    return NULL;
}

tg_status tg_tensor_set_gguf(tg_tensor_set *s, const tg_gguf *g, tg_err *err) {
    int64_t n = tg_gguf_n_tensors(g);
    s->n = 0;
    s->t = NULL;
    if (n > (1 << 24)) return tg_fail(err, TG_ERR_FORMAT, "gguf: %lld tensors", (long long)n);
    if (!(s->t = calloc(n ? (size_t)n : 1, sizeof *s->t)))
        return tg_fail(err, TG_ERR_NOMEM, "gguf: out of memory for the tensor table");
    for (int64_t i = 0; i < n; i++) {
        const tg_gguf_tensor *t = tg_gguf_tensor_at(g, i);
        tg_tensor_view *v = &s->t[i];
        v->name = t->name;
        v->n_dims = t->n_dims;
        memcpy(v->ne, t->ne, sizeof v->ne);
        v->type = t->type;
        v->data = t->data;
        v->nbytes = t->nbytes;
    }
    s->n = (int)n;
    return TG_OK;
}

void tg_tensor_set_free(tg_tensor_set *s) {
    free(s->t);
    s->t = NULL;
    s->n = 0;
}

/* ---- the loader ----------------------------------------------------------------- */

tg_status wt_bind_gguf(tg_model *m, const char *path, int flags, tg_err *err) {
    const tg_gguf *g = ((gpt2_store *)m->priv)->gguf;
    const char *a;
    size_t len;
    tg_err ignored;
    if (tg_gguf_find_kv(g, "general.architecture") &&
        !tg_gguf_get_str(g, "general.architecture", &a, &len, &ignored) &&
        tg_arch_parse(a, len) == TG_ARCH_LLAMA)
        return llama_bind_gguf(m, path, flags, err);
    return gpt2_bind_gguf(m, path, flags, err); /* gpt2, or its errors for the rest */
}

tg_status tg_model_check_size(const char *path, unsigned long long size, tg_err *err) {
    static const char expected[] = "expected a GGUF file, a llama2.c .bin checkpoint or a Hugging Face folder";
    if (size == 0) return tg_fail(err, TG_ERR_FORMAT, "%s: empty file, not a model (%s)", path, expected);
    if (size < 4)
        return tg_fail(err, TG_ERR_FORMAT, "%s: %llu bytes, too short for any model (%s)", path, size, expected);
    return TG_OK;
}

tg_status tg_model_load(tg_model *m, const char *path, int flags, tg_err *err) {
    memset(m, 0, sizeof *m);
    m->vocab.bos_id = m->vocab.eos_id = -1;
    if (!path || !*path) return tg_fail(err, TG_ERR_ARG, "model path is empty");
    if (!(m->path = strdup(path)) || !(m->priv = calloc(1, sizeof(gpt2_store)))) {
        tg_model_free(m);
        return tg_fail(err, TG_ERR_NOMEM, "%s: out of memory", path);
    }
    struct stat sb;
    tg_status s;
    int claimed = 0;
    char why[160] = "";
    int st_ok = stat(path, &sb) == 0;
    if (st_ok && S_ISREG(sb.st_mode) && (s = tg_model_check_size(path, (unsigned long long)sb.st_size, err))) {
        /* too short for any format */
    } else if (st_ok && S_ISDIR(sb.st_mode)) {
        s = tg_hf_is_llama(path) ? hf_llama_load(m, path, flags, err) : hf_load(m, path, flags, err);
    } else if ((s = wt_llama2c_probe(m, path, flags, &claimed, why, sizeof why, err)) || claimed) {
        /* a llama2.c file (loaded, or its error) */
    } else {
        gpt2_store *st = m->priv;
        s = tg_gguf_open(&st->gguf, path, err);
        if (!s) s = wt_bind_gguf(m, path, flags, err);
        if (!s) tg_gguf_settle(st->gguf); /* the scan has read every tensor */
        else if (why[0] && err && strstr(err->msg, "not a GGUF file")) {
            /* say why it is not a llama2.c checkpoint either */
            size_t n = strlen(err->msg);
            snprintf(err->msg + n, sizeof err->msg - n, ", nor a llama2.c checkpoint (%s)", why);
        }
    }
    if (s) tg_model_free(m);
    return s;
}

void tg_model_free(tg_model *m) { tg_gpt2_free(m); }

int tg_model_tied(const tg_model *m) {
    return m->cfg.arch == TG_ARCH_LLAMA ? m->llama.tied : m->w.tied;
}

size_t tg_model_n_params(const tg_model *m) {
    if (m->cfg.arch == TG_ARCH_LLAMA) return tg_llama_n_params(&m->cfg, m->llama.tied);
    return tg_gpt2_n_params(&m->cfg, m->w.tied);
}
