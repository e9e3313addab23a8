/* perf.c — shared helpers of the profile and bench commands (see perf.h). */
#include "tools/perf.h"

#include <math.h>
#include <time.h>

#include "model/measure.h"
#include "tools/cli.h"

double perf_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void perf_tokens(int *tokens, int n, int n_vocab, uint64_t seed) {
    tg_random_tokens(tokens, n, n_vocab, seed);
}

int perf_load(const char *cmd, const char *isa_name, const char *path, int no_check, tg_isa *isa,
              tg_gpt2_model *m) {
    tg_err err;
    if (tg_isa_select(isa_name, isa, &err)) return cli_usage(cmd, "%s", err.msg);
    if (!path) path = cli_default_model();
    if (!path)
        return cli_error(cmd, "no model: pass -m MODEL.gguf (weights/shakespeare-4h.gguf "
                              "was not found)");
    if (tg_model_load(m, path, no_check ? TG_LOAD_NO_CHECK : 0, &err) != TG_OK)
        return cli_error(cmd, "%s", err.msg);
    if (!m->has_weights) {
        tg_gpt2_free(m);
        return cli_error(cmd, "%s: holds no weights (vocabulary only)", path);
    }
    return EXIT_OK;
}

int perf_roofline(const char *cmd, tg_isa isa, int nth, double seconds, tg_roofline *r) {
    tg_err err;
    tg_pool *pool;
    fprintf(stderr, "tinygpt %s: measuring the machine on %d thread%s (DRAM read, FMA peak)...\n",
            cmd, nth, nth == 1 ? "" : "s");
    if (tg_pool_create(&pool, nth, &err)) return cli_error(cmd, "%s", err.msg);
    tg_status s = tg_roofline_measure(r, pool, nth, isa, seconds, &err);
    tg_pool_free(pool);
    return s ? cli_error(cmd, "%s", err.msg) : EXIT_OK;
}

const char *perf_cache_note(const tg_gpt2_model *m, char *buf, size_t n) {
    const tg_gpt2_config *c = &m->cfg;
    double bytes = 4.0 * tg_gpt2_n_params(c, m->w.tied) +
                   2.0 * 4.0 * c->n_layer * (double)c->n_ctx * c->n_embd;
    size_t llc = tg_llc_bytes();
    if (!llc || bytes > (double)llc) return NULL;
    snprintf(buf, n, "note: weights + KV cache (%.1f MiB) fit in the last-level cache (%.0f MiB): "
             "rates above the DRAM roofline (%% roof > 100) are expected",
             bytes / (1 << 20), (double)llc / (1 << 20));
    return buf;
}

void perf_mean_sd(const double *x, int n, double *mean, double *sd) {
    double s = 0, q = 0;
    for (int i = 0; i < n; i++) s += x[i];
    *mean = n ? s / n : 0;
    for (int i = 0; i < n; i++) q += (x[i] - *mean) * (x[i] - *mean);
    *sd = n > 1 ? sqrt(q / (n - 1)) : 0;
}

void perf_json_str(FILE *f, const char *s) {
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}
