/* llama_load.c — the loaders of the Llama files that are not GGUF: a
 * llama2.c checkpoint (weights/llama2c.h) or a Hugging Face Llama folder
 * (weights/hf_llama.h), each handing its config and tensor set to the
 * llama binding (weights/llama.h) and its handle to the model's store. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "weights/file.h"
#include "weights/hf_llama.h"
#include "weights/internal.h"
#include "weights/llama.h"
#include "weights/llama2c.h"
#include "weights/model.h"
#include "weights/vocab.h"

static void close_l2c(void *p) { tg_l2c_close(p); }
static void close_hf(void *p) { tg_hf_llama_close(p); }

/* Binds a reader's set into m (or only the config with TG_LOAD_VOCAB_ONLY). */
static tg_status bind(tg_model *m, const tg_model_config *cfg, tg_tensor_set *ts, int flags, tg_err *err) {
    m->cfg = *cfg;
    if (flags & TG_LOAD_VOCAB_ONLY) return TG_OK;
    return tg_llama_bind(m, ts, flags, err);
}

tg_status wt_llama2c_probe(tg_model *m, const char *path, int flags, int *claimed, char *why, size_t why_cap,
                           tg_err *err) {
    *claimed = 0;
    struct stat st;
    int fd = wt_open_regular(path, &st, err);
    if (fd < 0) return TG_ERR_IO;
    uint8_t head[TG_L2C_HEADER];
    ssize_t n = read(fd, head, sizeof head);
    close(fd);
    if (n < 0) return tg_fail(err, TG_ERR_IO, "%s: read failed", path);
    int kind = tg_l2c_sniff(head, (size_t)n, (uint64_t)st.st_size);
    if (kind == -1) {
        if (why) tg_l2c_legacy_why(head, (size_t)n, (uint64_t)st.st_size, why, why_cap);
        return TG_OK;
    }
    *claimed = 1;
    tg_l2c *c;
    tg_status s = tg_l2c_open(&c, path, err); /* a bad ak42 version is reported here */
    if (s) return s;
    gpt2_store *store = m->priv;
    store->reader = c;
    store->reader_close = close_l2c;
    if (!(flags & TG_LOAD_NO_CHECK) && (s = tg_l2c_check_finite(c, err))) return s;
    wt_map_settle(&c->map); /* after the scan read it all (a no-op otherwise) */
    tg_model_config cfg;
    tg_tensor_set ts = {0};
    if ((s = tg_l2c_tensor_set(c, &cfg, &ts, err))) return s;
    /* the reader's scan covered every byte (the v2 scales stand for their groups) */
    s = bind(m, &cfg, &ts, flags | TG_LOAD_NO_CHECK, err);
    free(ts.t);
    return s;
}

tg_status hf_llama_load(tg_model *m, const char *dir, int flags, tg_err *err) {
    tg_hf_llama *h;
    tg_status s = tg_hf_llama_open(&h, dir, err);
    if (s) return s;
    gpt2_store *store = m->priv;
    store->reader = h;
    store->reader_close = close_hf;
    tg_tensor_set ts = {0};
    if ((s = tg_hf_llama_tensor_set(h, &ts, err))) return s;
    s = bind(m, &h->cfg, &ts, flags, err);
    free(ts.t);
    if (s) return s;
    size_t n = strlen(dir) + 16;
    char *tj = malloc(n);
    if (!tj) return tg_fail(err, TG_ERR_NOMEM, "%s: out of memory", dir);
    snprintf(tj, n, "%s/tokenizer.json", dir);
    struct stat sb;
    if (stat(tj, &sb) == 0) s = tg_vocab_load_hf_json(&m->vocab, tj, err);
    free(tj);
    if (s) return s;
    if (m->vocab.n_tokens > m->cfg.n_vocab)
        return tg_fail(err, TG_ERR_FORMAT, "%s: tokenizer.json has %d tokens, more than vocab_size %d", dir,
                       m->vocab.n_tokens, m->cfg.n_vocab);
    const int ids[2] = {h->bos_id, h->eos_id};
    const char *names[2] = {"bos_token_id", "eos_token_id"};
    for (int k = 0; k < 2; k++)
        if (ids[k] >= m->cfg.n_vocab)
            return tg_fail(err, TG_ERR_FORMAT, "%s/config.json: %s = %d is not a token id (vocab_size %d)", dir,
                           names[k], ids[k], m->cfg.n_vocab);
    if (h->bos_id >= 0) m->vocab.bos_id = h->bos_id;
    if (h->eos_id >= 0) m->vocab.eos_id = h->eos_id;
    return TG_OK;
}
