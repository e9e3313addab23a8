/* cmd_inspect.c — `tinygpt inspect PATH [--json]`: what a model file or
 * Hugging Face folder holds, and whether tinygpt can load it. Exit 0 when it
 * loads, 1 when a problem was found (the problem is printed). */
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "model/tokenizer.h"
#include "tools/cli.h"
#include "tools/inspect_llama.h"
#include "weights/finite.h"
#include "weights/gguf.h"
#include "weights/gpt2.h"
#include "weights/model.h"
#include "weights/safetensors.h"

static const char *usage_text =
    "usage: tinygpt inspect PATH [--json]\n"
    "  PATH     a GGUF file, a Hugging Face GPT-2 or Llama folder, or a llama2.c\n"
    "           checkpoint (.bin, ak42 v1/v2)\n"
    "  --json   print one JSON object instead of text\n"
    "Prints the format, the configuration, the parameter count, every tensor (name,\n"
    "type, shape, bytes in the file, offset, resident bytes) with the totals, the\n"
    "tokenizer and the problems found. Resident bytes are what the loaded model holds\n"
    "for a tensor: its mapped bytes in the file's type\n"
    "(matrices stay f16, bf16, q8_0, q4_0), or 4 per element where the loader\n"
    "converts it to f32 (1-D tensors and position_embd in another type; every tensor\n"
    "of a Hugging Face GPT-2 folder; a Llama matrix whose data is not aligned for its\n"
    "type); 0 for a tensor the model does not read\n"
    "(an output.weight tied to token_embd). Problems are what keeps the model from\n"
    "running (every tensor is scanned for NaN/inf, and the tokenizer is built); the\n"
    "exit status is 1 when there is one.\n";

/* One row of the tensor table, whatever the format. */
typedef struct tensor_row {
    char name[160];
    int n_dims;
    int64_t shape[8]; /* numpy order */
    char type[12];
    uint64_t bytes, offset;
    uint64_t resident; /* bytes the loaded model holds for it (see the usage text) */
} tensor_row;

typedef struct report {
    const char *path;
    char format[64];
    uint32_t version, alignment;
    int64_t n_kv;
    size_t file_size;
    tensor_row *rows;
    int n_rows;
    int loaded, vocab_only;
    tg_gpt2_model m;
    char problem[8][600]; /* the first n_problems; "none" when 0 */
    int n_problems;
    char warning[600];
    cJSON *metadata; /* GGUF scalar metadata, for --json */
} report;

static void add_problem(report *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add_problem(report *r, const char *fmt, ...) {
    if (r->n_problems == (int)(sizeof r->problem / sizeof r->problem[0])) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->problem[r->n_problems++], sizeof r->problem[0], fmt, ap);
    va_end(ap);
}

/* What the loader's checks (skipped to describe the file) and the run-time
 * setup would refuse: every non-finite tensor, and the tokenizer. */
static void usability(report *r) {
    const tg_gguf *g = tg_gpt2_gguf(&r->m);
    tg_err err = {{0}};
    if (g) {
        for (int64_t i = 0; i < tg_gguf_n_tensors(g); i++) {
            const tg_gguf_tensor *t = tg_gguf_tensor_at(g, i);
            const char *what = "";
            int64_t at = tg_find_nonfinite(t->type, t->data, t->n_elements, &what);
            if (at >= 0)
                add_problem(r, "tensor '%s' holds a non-finite value (%s) at index %" PRId64, t->name,
                            what, at);
        }
    } else if (!r->vocab_only) {
        tg_gpt2_model m; /* a Hugging Face folder: the checked load names the first */
        if (tg_model_load(&m, r->path, 0, &err)) add_problem(r, "%s", err.msg);
        else tg_gpt2_free(&m);
    }
    if (!r->m.vocab.n_tokens) return;
    tg_tokenizer *tok;
    if (tg_tokenizer_create(&tok, &r->m.vocab, &err)) {
        add_problem(r, "the tokenizer cannot be built: %s", err.msg);
        return;
    }
    int nt = tg_tokenizer_n_vocab(tok);
    if (!r->vocab_only && nt > r->m.cfg.n_vocab)
        add_problem(r, "the tokenizer has %d tokens but the model only %d", nt, r->m.cfg.n_vocab);
    tg_tokenizer_free(tok);
}

static void gguf_rows(report *r, const tg_gguf *g) {
    r->n_rows = (int)tg_gguf_n_tensors(g);
    r->rows = calloc(r->n_rows ? (size_t)r->n_rows : 1, sizeof *r->rows);
    uint64_t expect = 0;
    for (int i = 0; r->rows && i < r->n_rows; i++) {
        const tg_gguf_tensor *t = tg_gguf_tensor_at(g, i);
        tensor_row *row = &r->rows[i];
        snprintf(row->name, sizeof row->name, "%s", t->name);
        row->n_dims = t->n_dims;
        for (int d = 0; d < t->n_dims; d++) row->shape[d] = t->ne[t->n_dims - 1 - d];
        snprintf(row->type, sizeof row->type, "%s", tg_ggml_type_name(t->type));
        row->bytes = t->nbytes;
        row->offset = t->offset;
        /* the loader keeps F32 and every matrix but position_embd in place,
         * and converts the rest to f32 */
        int in_place = t->type == TG_GGML_F32 ||
                       (t->n_dims == 2 && strcmp(t->name, "position_embd.weight") != 0);
        row->resident = in_place ? t->nbytes : 4 * (uint64_t)t->n_elements;
        /* llama.cpp wants the tensors packed in order at the alignment */
        if (t->offset != expect && !r->warning[0])
            snprintf(r->warning, sizeof r->warning,
                     "tensor '%s' is at data offset %" PRIu64 ", llama.cpp expects %" PRIu64 " (tensors not packed in order)",
                     t->name, t->offset, expect);
        expect = t->offset + t->nbytes;
        expect += (r->alignment - expect % r->alignment) % r->alignment;
    }
    r->metadata = cJSON_CreateObject();
    for (int64_t i = 0; i < tg_gguf_n_kv(g); i++) {
        const tg_gguf_kv *kv = tg_gguf_kv_at(g, i);
        cJSON *v;
        if (kv->type == TG_GGUF_STRING) {
            const char *s;
            size_t len;
            tg_gguf_kv_str(g, kv, 0, &s, &len);
            char *c = strndup(s, len > 4096 ? 4096 : len);
            v = cJSON_CreateString(c ? c : "");
            free(c);
        } else if (kv->type == TG_GGUF_ARRAY) {
            v = cJSON_CreateObject();
            cJSON_AddStringToObject(v, "array_of", tg_gguf_vtype_name(kv->arr_type));
            cJSON_AddNumberToObject(v, "length", (double)kv->n);
        } else if (kv->type == TG_GGUF_BOOL) {
            v = cJSON_CreateBool(kv->data[0]);
        } else {
            v = cJSON_CreateNumber(tg_gguf_kv_num(kv, 0));
        }
        cJSON_AddItemToObject(r->metadata, kv->key, v);
    }
}

static void st_rows(report *r, const tg_st *st) {
    r->n_rows = st->n_tensors;
    r->rows = calloc(r->n_rows ? (size_t)r->n_rows : 1, sizeof *r->rows);
    for (int i = 0; r->rows && i < r->n_rows; i++) {
        const tg_st_tensor *t = &st->tensors[i];
        tensor_row *row = &r->rows[i];
        snprintf(row->name, sizeof row->name, "%s", t->name);
        row->n_dims = t->n_dims;
        memcpy(row->shape, t->shape, sizeof row->shape);
        snprintf(row->type, sizeof row->type, "%s", t->dtype);
        row->bytes = t->end - t->begin;
        row->offset = t->begin;
        uint64_t n = 1; /* the loader converts every tensor of a folder to f32 */
        for (int d = 0; d < t->n_dims; d++) n *= (uint64_t)t->shape[d];
        row->resident = 4 * n;
    }
}

static void shape_str(const tensor_row *row, char *out, size_t n) {
    size_t l = (size_t)snprintf(out, n, "[");
    for (int d = 0; d < row->n_dims && l < n; d++)
        l += (size_t)snprintf(out + l, n - l, "%s%" PRId64, d ? ", " : "", row->shape[d]);
    if (l < n) snprintf(out + l, n - l, "]");
}

static int print_text(const report *r) {
    const tg_gpt2_config *c = &r->m.cfg;
    printf("path:          %s\n", r->path);
    printf("format:        %s", r->format);
    if (r->version) printf(" v%u, alignment %u, %" PRId64 " metadata keys", r->version, r->alignment, r->n_kv);
    printf(", %d tensors, %zu bytes\n", r->n_rows, r->file_size);
    if (r->loaded && !r->vocab_only) {
        printf("architecture:  gpt2\n");
        printf("layers %d, heads %d, head size %d, embedding %d, feed-forward %d, context %d, vocab %d\n",
               c->n_layer, c->n_head, c->n_embd / c->n_head, c->n_embd, c->n_ff, c->n_ctx, c->n_vocab);
        printf("layer norm eps %g; parameters %zu (%s)\n", (double)c->ln_eps,
               tg_gpt2_n_params(c, r->m.w.tied), r->m.w.tied ? "output tied to token_embd" : "separate output.weight");
    } else if (r->loaded) {
        printf("architecture:  none (vocab-only: a tokenizer without weights)\n");
    }
    if (r->loaded) {
        const tg_vocab *v = &r->m.vocab;
        if (v->n_tokens)
            printf("tokenizer:     gpt2 byte-level BPE (pre %s), %d tokens, %d merges, bos %d, eos %d\n",
                   v->pre ? v->pre : "-", v->n_tokens, v->n_merges, v->bos_id, v->eos_id);
        else
            printf("tokenizer:     none\n");
    }
    if (r->n_rows) {
        printf("tensors:\n");
        size_t w = 0;
        for (int i = 0; i < r->n_rows; i++) w = strlen(r->rows[i].name) > w ? strlen(r->rows[i].name) : w;
        for (int i = 0; i < r->n_rows; i++) {
            char sh[128];
            shape_str(&r->rows[i], sh, sizeof sh);
            printf("  %-*s  %-14s %-5s %12" PRIu64 " bytes  %12" PRIu64 " resident\n", (int)w,
                   r->rows[i].name, sh, r->rows[i].type, r->rows[i].bytes, r->rows[i].resident);
        }
        uint64_t bytes = 0, resident = 0;
        for (int i = 0; i < r->n_rows; i++) bytes += r->rows[i].bytes, resident += r->rows[i].resident;
        printf("  %-*s  %-14s %-5s %12" PRIu64 " bytes  %12" PRIu64 " resident\n", (int)w, "total", "", "",
               bytes, resident);
    }
    if (r->warning[0]) printf("warning:       %s\n", r->warning);
    printf("problems:      %s\n", r->n_problems ? r->problem[0] : "none");
    for (int i = 1; i < r->n_problems; i++) printf("               %s\n", r->problem[i]);
    return r->n_problems ? EXIT_RUNTIME : EXIT_OK;
}

static int print_json(report *r) {
    const tg_gpt2_config *c = &r->m.cfg;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "path", r->path);
    cJSON_AddStringToObject(o, "format", r->format);
    if (r->version) {
        cJSON_AddNumberToObject(o, "version", r->version);
        cJSON_AddNumberToObject(o, "alignment", r->alignment);
    }
    cJSON_AddNumberToObject(o, "file_bytes", (double)r->file_size);
    int full = r->loaded && !r->vocab_only;
    if (full) cJSON_AddStringToObject(o, "architecture", "gpt2");
    else cJSON_AddNullToObject(o, "architecture");
    cJSON_AddBoolToObject(o, "vocab_only", r->loaded && r->vocab_only);
#define NUM_OR_NULL(key, cond, val) \
    ((cond) ? (void)cJSON_AddNumberToObject(o, key, (double)(val)) : (void)cJSON_AddNullToObject(o, key))
    NUM_OR_NULL("n_layer", full, c->n_layer);
    NUM_OR_NULL("n_head", full, c->n_head);
    NUM_OR_NULL("head_size", full, full ? c->n_embd / c->n_head : 0);
    NUM_OR_NULL("n_embd", full, c->n_embd);
    NUM_OR_NULL("n_ff", full, c->n_ff);
    NUM_OR_NULL("n_ctx", full, c->n_ctx);
    NUM_OR_NULL("n_vocab", r->loaded, r->loaded ? (full ? c->n_vocab : r->m.vocab.n_tokens) : 0);
    NUM_OR_NULL("n_params", full, full ? tg_gpt2_n_params(c, r->m.w.tied) : 0);
    NUM_OR_NULL("ln_eps", full, c->ln_eps);
    if (full) cJSON_AddBoolToObject(o, "tied", r->m.w.tied);
#undef NUM_OR_NULL
    if (r->loaded && r->m.vocab.n_tokens) {
        const tg_vocab *v = &r->m.vocab;
        cJSON *t = cJSON_AddObjectToObject(o, "tokenizer");
        cJSON_AddStringToObject(t, "model", "gpt2");
        if (v->pre) cJSON_AddStringToObject(t, "pre", v->pre);
        cJSON_AddNumberToObject(t, "n_tokens", v->n_tokens);
        cJSON_AddNumberToObject(t, "n_merges", v->n_merges);
        cJSON_AddNumberToObject(t, "bos_id", v->bos_id);
        cJSON_AddNumberToObject(t, "eos_id", v->eos_id);
    }
    cJSON *ts = cJSON_AddArrayToObject(o, "tensors");
    for (int i = 0; i < r->n_rows; i++) {
        cJSON *t = cJSON_CreateObject();
        cJSON_AddStringToObject(t, "name", r->rows[i].name);
        cJSON *sh = cJSON_AddArrayToObject(t, "shape");
        for (int d = 0; d < r->rows[i].n_dims; d++) cJSON_AddItemToArray(sh, cJSON_CreateNumber((double)r->rows[i].shape[d]));
        cJSON_AddStringToObject(t, "type", r->rows[i].type);
        cJSON_AddNumberToObject(t, "bytes", (double)r->rows[i].bytes);
        cJSON_AddNumberToObject(t, "offset", (double)r->rows[i].offset);
        cJSON_AddNumberToObject(t, "resident_bytes", (double)r->rows[i].resident);
        cJSON_AddItemToArray(ts, t);
    }
    uint64_t bytes = 0, resident = 0;
    for (int i = 0; i < r->n_rows; i++) bytes += r->rows[i].bytes, resident += r->rows[i].resident;
    cJSON_AddNumberToObject(o, "tensor_bytes", (double)bytes);
    cJSON_AddNumberToObject(o, "resident_bytes", (double)resident);
    if (r->metadata) {
        cJSON_AddItemToObject(o, "metadata", r->metadata);
        r->metadata = NULL;
    }
    cJSON *pr = cJSON_AddArrayToObject(o, "problems");
    for (int i = 0; i < r->n_problems; i++) cJSON_AddItemToArray(pr, cJSON_CreateString(r->problem[i]));
    cJSON *wa = cJSON_AddArrayToObject(o, "warnings");
    if (r->warning[0]) cJSON_AddItemToArray(wa, cJSON_CreateString(r->warning));
    char *s = cJSON_Print(o);
    if (s) puts(s);
    free(s);
    cJSON_Delete(o);
    return r->n_problems ? EXIT_RUNTIME : EXIT_OK;
}

static void help(FILE *f) { fputs(usage_text, f); }

int cmd_inspect(int argc, char **argv) {
    const char *path = NULL;
    int json = 0;
    const cli_opt opts[] = {
        {CLI_FLAG("--json", NULL, &json, 1)},
        {CLI_ONE_ARG("PATH", &path)},
        {0},
    };
    int parsed = cli_parse("inspect", help, opts, argc, argv);
    if (parsed != CLI_RUN) return parsed;
    if (!path) return cli_usage("inspect", "a PATH is needed (see tinygpt inspect --help)");

    report r = {0};
    r.path = path;
    tg_err err = {{0}};
    struct stat sb;
    if (stat(path, &sb) != 0) return cli_error("inspect", "%s: no such file or folder", path);
    if (S_ISREG(sb.st_mode) && tg_model_check_size(path, (unsigned long long)sb.st_size, &err))
        return cli_error("inspect", "%s", err.msg); /* too short for any format */
    int lr = inspect_llama(path, json); /* llama2.c files, HF Llama folders */
    if (lr >= 0) return lr;
    if (S_ISDIR(sb.st_mode)) {
        snprintf(r.format, sizeof r.format, "Hugging Face folder");
        char st_path[4096];
        snprintf(st_path, sizeof st_path, "%s/model.safetensors", path);
        struct stat ss;
        int has_weights = stat(st_path, &ss) == 0;
        const char *why = tg_st_folder_why(path); /* weights in a format tinygpt does not read */
        if (why) add_problem(&r, "%s: no model.safetensors; %s", path, why);
        if (has_weights) {
            tg_st *st;
            if (tg_st_open(&st, st_path, &err)) {
                add_problem(&r, "%s", err.msg);
            } else {
                r.file_size = st->size;
                st_rows(&r, st);
                tg_st_close(st);
            }
        }
        if (!r.n_problems) {
            r.vocab_only = !has_weights;
            int flags = TG_LOAD_NO_CHECK | (r.vocab_only ? TG_LOAD_VOCAB_ONLY : 0);
            if (tg_model_load(&r.m, path, flags, &err)) add_problem(&r, "%s", err.msg);
            else r.loaded = 1;
        }
    } else {
        snprintf(r.format, sizeof r.format, "GGUF");
        tg_gguf *g;
        if (tg_gguf_open(&g, path, &err)) {
            /* not even a GGUF: nothing to describe */
            char why[200];
            if (strstr(err.msg, "not a GGUF file (magic")) {
                inspect_llama_why(path, why, sizeof why);
                if (why[0]) return cli_error("inspect", "%s, nor a llama2.c checkpoint (%s)", err.msg, why);
            }
            return cli_error("inspect", "%s", err.msg);
        }
        r.version = tg_gguf_version(g);
        r.alignment = tg_gguf_alignment(g);
        r.n_kv = tg_gguf_n_kv(g);
        r.file_size = tg_gguf_file_size(g);
        gguf_rows(&r, g);
        r.vocab_only = tg_gguf_n_tensors(g) == 0;
        tg_gguf_close(g);
        int flags = TG_LOAD_NO_CHECK | (r.vocab_only ? TG_LOAD_VOCAB_ONLY : 0);
        if (tg_model_load(&r.m, path, flags, &err)) add_problem(&r, "%s", err.msg);
        else r.loaded = 1;
    }
    if (r.loaded) usability(&r);
    /* an output.weight the model shares token_embd for (the bytes agree) is
     * never read */
    if (r.loaded && !r.vocab_only && tg_model_tied(&r.m))
        for (int i = 0; i < r.n_rows; i++)
            if (!strcmp(r.rows[i].name, "output.weight")) r.rows[i].resident = 0;
    int rc = json ? print_json(&r) : print_text(&r);
    if (r.loaded) tg_gpt2_free(&r.m);
    cJSON_Delete(r.metadata);
    free(r.rows);
    if (rc && !json) fprintf(stderr, "tinygpt inspect: %s\n", r.problem[0]);
    return rc;
}
