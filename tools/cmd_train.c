/* cmd_train.c — `tinygpt train`: train a GPT-2 or (--arch llama) a Llama on
 * a text file.
 *
 * The text is split on bytes (the last --val-frac held out), a byte-level
 * BPE is learned from the training part (or taken from a model), both parts
 * are tokenized, and model/train.c runs AdamW over random windows of the
 * training tokens. Outputs, each written to a temporary file then renamed:
 *   OUT            a plain gpt2 or llama GGUF (weights + tokenizer)
 *   OUT.ckpt       the training state: parameters in f32, AdamW moments,
 *                  step, RNG, options, loss history (for --resume)
 *   OUT.csv        step, train_loss, val_loss, lr, tokens_per_s, grad_norm
 *   OUT.svg        the loss curve (at the end)
 * (OUT's ".gguf" suffix, if any, is replaced by the side files' suffix.)
 * Checkpoints are written every --save-every steps, at the end, and on
 * SIGINT/SIGTERM. Resuming continues bit-identically: the batches come from
 * the saved RNG and every kernel's result is independent of the thread
 * count.
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "model/bpe_train.h"
#include "model/tokenizer.h"
#include "model/train.h"
#include "tools/cli.h"
#include "weights/file.h"
#include "weights/gguf.h"
#include "weights/llama.h"
#include "weights/vocab.h"
#include "tools/task_cli.h"

static const char *const CMD = "train";

/* Everything that determines the run (stored in the checkpoint). */
typedef struct train_opts {
    int32_t layers, heads, embd, ctx, vocab, batch;
    int64_t steps, warmup, eval_every, save_every;
    uint64_t seed;
    float lr, lr_min, weight_decay, grad_clip, val_frac;
    int32_t f16;
} train_opts;

/* The architecture's options (stored in the checkpoint after its header:
 * version 2; a version 1 checkpoint is a GPT-2's). */
typedef struct train_arch {
    int32_t arch;        /* tg_arch */
    int32_t kv_heads;    /* llama: KVH */
    int32_t ff;          /* llama: F */
    int32_t untied;      /* llama: a classifier of its own */
    float rope_theta;    /* llama: θ */
    int32_t reserved[3];
} train_arch;

/* One row of the loss history (val_loss NAN when not evaluated). */
typedef struct hist_row {
    int64_t step;
    float train_loss, val_loss, val_npb, lr, tok_s, grad_norm;
} hist_row;

/* The checkpoint file's fixed header. */
typedef struct ckpt_header {
    char magic[8];        /* "TGTRAIN1" */
    uint32_t version, header_size;
    train_opts o;
    uint64_t text_len, text_hash;
    int64_t step;         /* the next step to run */
    int64_t adam_t;
    uint64_t rng;         /* batch sampler state */
    uint64_t n_params, n_hist;
} ckpt_header;

static volatile sig_atomic_t g_stop;
static void on_signal(int sig) { g_stop = sig; }

static void help(FILE *f) {
    fprintf(f,
            "usage: tinygpt train -f TEXT -o OUT.gguf [options]\n"
            "  -f, --file TEXT      training text (the last --val-frac of its bytes is held\n"
            "                       out)\n"
            "  --max-input BYTES    read at most BYTES of TEXT, [1, 2^40]; K/M/G suffixes\n"
            "                       (default 64M)\n"
            "  -o, --output OUT     the trained model OUT.gguf; OUT.ckpt, OUT.csv, OUT.svg\n"
            "                       beside it (required)\n"
            "  --arch ARCH          gpt2 | llama (default gpt2)\n"
            "  --layers L           transformer blocks, [1, 64] (default 4)\n"
            "  --heads H            attention heads, [1, 256]; must divide --embd (default 4)\n"
            "  --embd E             width, [1, 4096] (default 128)\n"
            "  --ctx C              context length in tokens, [2, 8192] (default 256)\n"
            "  --kv-heads KVH       llama: key/value heads, [1, 256], dividing --heads\n"
            "                       (default: --heads; 1 is multi-query attention)\n"
            "  --ff F               llama: feed-forward width, [1, 65536] (default\n"
            "                       llama2.c's: 2/3 of 4E rounded up to a multiple of 32)\n"
            "  --rope-theta T       llama: RoPE base, [1, 1e9] (default 10000)\n"
            "  --untied             llama: a classifier of its own\n"
            "                       (default: tied to the token embedding)\n"
            "  --vocab N            learn a byte-level BPE of N tokens from the text,\n"
            "                       [%d, 65536] (default 1024)\n"
            "  --tokenizer-from M   use the tokenizer of model M instead (default: --vocab);\n"
            "                       llama: also a llama2.c tokenizer.bin or tokenizer.json\n"
            "  --batch B            sequences per step, [1, 256] (default 8)\n"
            "  --steps S            optimizer steps, [1, 10^8] (default 1000)\n"
            "  --lr LR              peak learning rate, [1e-9, 10] (default 1e-3)\n"
            "  --lr-min LR          final learning rate of the cosine decay, [0, 10]\n"
            "                       (default LR/10)\n"
            "  --warmup W           linear warmup steps, [0, 10^8] (default min(100, S/10))\n"
            "  --weight-decay WD    AdamW weight decay on matrices and embeddings, [0, 10]\n"
            "                       (default 0.1)\n"
            "  --grad-clip G        clip the global gradient norm to G, [0, 10^6], 0 = off\n"
            "                       (default 1.0)\n"
            "  --seed S             initialisation and batch order, [0, 2^32-1] (default 1)\n"
            "  --val-frac F         held-out fraction of the bytes, [0, 0.5] (default 0.1)\n"
            "  --eval-every K       validation loss every K steps, [1, 10^8] (default 100)\n"
            "  --save-every K       checkpoint every K steps, [1, 10^8]\n"
            "                       (default: --eval-every)\n"
            "  --f16                store the GGUF's matrices in f16\n"
            "  --resume CKPT        continue from OUT.ckpt (its options; give the same -f)\n"
            "                       (default: a fresh start)\n"
            "  --stop-at N          stop after step N as if interrupted (for tests),\n"
            "                       [1, 10^8] (default: off)\n"
            "  -t, --threads N      worker threads, [1, 1024]\n"
            "                       (default 1; results do not depend on it)\n"
            "  --task NAME          train on a synthetic task instead\n"
            "                       (tinygpt task --help lists them), with options of its\n"
            "                       own: train --task NAME --help\n"
            "OUT.svg plots the training loss per step and the validation loss, with the\n"
            "learning rate on a second axis; OUT.csv has the same numbers.\n",
            TG_BPE_MIN_VOCAB);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint64_t fnv1a(const char *p, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)p[i]) * 1099511628211ull;
    return h;
}

/* ---- the run's state ------------------------------------------------------- */

typedef struct run {
    train_opts o;
    const char *out;
    char *ckpt_path, *csv_path, *svg_path;
    tg_trainer *tr;
    const tg_vocab *vocab;
    tg_tokenizer *tok;
    int *train_ids, *val_ids;
    size_t n_train, n_val;
    size_t *val_bytes;   /* [n_val]: bytes of each val token */
    uint64_t text_len, text_hash;
    train_arch a;
    tg_rng rng;
    int64_t step;
    hist_row *hist;
    size_t n_hist, cap_hist;
    int64_t last_ckpt;   /* step of the last checkpoint written, -1 none */
    int *bx, *by;        /* batch [B, C] */
    float *nll;          /* [B, C] */
} run;

static int hist_push(run *r, hist_row row) {
    if (r->n_hist == r->cap_hist) {
        size_t cap = r->cap_hist ? 2 * r->cap_hist : 256;
        hist_row *h = realloc(r->hist, cap * sizeof *h);
        if (!h) return -1;
        r->hist = h, r->cap_hist = cap;
    }
    r->hist[r->n_hist++] = row;
    return 0;
}

/* Validation as `tinygpt eval` scores a text: consecutive windows of C
 * tokens, positions 1..n-1 of each scored. Returns mean nats/token and
 * fills nats/byte. */
static tg_status validate(run *r, double *npt, double *npb, tg_err *err) {
    int C = r->o.ctx, B = r->o.batch;
    double nats = 0.0;
    size_t scored = 0, bytes = 0;
    size_t w0 = 0;
    while (w0 + 1 < r->n_val) {
        int nb = 0, T = 0;
        size_t starts[256];
        /* full windows in a batch; a final short window alone */
        while (nb < B && w0 + 1 < r->n_val) {
            size_t len = r->n_val - w0 < (size_t)C ? r->n_val - w0 : (size_t)C;
            if (nb > 0 && (int)len - 1 != T) break;
            T = (int)len - 1;
            starts[nb] = w0;
            memcpy(r->bx + (size_t)nb * T, r->val_ids + w0, sizeof(int) * T);
            memcpy(r->by + (size_t)nb * T, r->val_ids + w0 + 1, sizeof(int) * T);
            nb++;
            w0 += len;
        }
        float loss;
        tg_status st = tg_trainer_forward(r->tr, r->bx, r->by, nb, T, &loss, r->nll, err);
        if (st != TG_OK) return st;
        for (int b = 0; b < nb; b++)
            for (int t = 0; t < T; t++) {
                nats += r->nll[(size_t)b * T + t];
                bytes += r->val_bytes[starts[b] + 1 + t];
            }
        scored += (size_t)nb * T;
    }
    *npt = scored ? nats / (double)scored : NAN;
    *npb = bytes ? nats / (double)bytes : NAN;
    return TG_OK;
}

/* ---- checkpoint ---------------------------------------------------------------- */

static int write_all(FILE *f, const void *p, size_t size, size_t n) {
    return n == 0 || fwrite(p, size, n, f) == n;
}

static void write_csv_to(const run *r, FILE *f);

/* Whether every parameter is finite: a diverged state is never saved. */
static int params_finite(run *r) {
    const float *p = tg_trainer_params(r->tr);
    size_t n = tg_trainer_n_params(r->tr);
    for (size_t i = 0; i < n; i++)
        if (!isfinite(p[i])) return 0;
    return 1;
}

/* Appends to err which step each of OUT, OUT.ckpt, OUT.csv holds: the
 * first n_new were renamed into place (this step), the rest are older. */
static void say_held(const run *r, int n_new, tg_err *err) {
    const char *names[3] = {r->out, r->ckpt_path, r->csv_path};
    size_t l = strlen(err->msg), cap = sizeof err->msg;
    if (n_new == 0 && r->last_ckpt >= 0)
        snprintf(err->msg + l, cap - l, "; %s, %s and %s still hold step %lld", names[0], names[1], names[2],
                 (long long)r->last_ckpt);
    else if (n_new == 0)
        snprintf(err->msg + l, cap - l, "; no checkpoint was written yet");
    else
        for (int k = 0; k < 3 && l < cap; k++) {
            int64_t s = k < n_new ? r->step : r->last_ckpt;
            l += (size_t)snprintf(err->msg + l, cap - l, "%s %s %s", k ? "," : ";", names[k],
                                  s >= 0 ? "holds step" : "was not written yet");
            if (s >= 0 && l < cap) l += (size_t)snprintf(err->msg + l, cap - l, " %lld", (long long)s);
        }
}

/* Writes OUT (the GGUF), OUT.ckpt and OUT.csv of the current step so that
 * they always belong together: all three temporaries are written and
 * synced first, then renamed in that fixed order; each records the step
 * (the GGUF in tinygpt.train.step). On failure err says which step each
 * file holds. */
static tg_status save_checkpoint(run *r, tg_err *err) {
    const tg_gpt2_config *cfg = tg_trainer_config(r->tr);
    int llama = cfg->arch == TG_ARCH_LLAMA;
    void *layers = calloc((size_t)cfg->n_layer, llama ? sizeof(tg_llama_layer) : sizeof(tg_gpt2_layer));
    tg_gguf_writer *gw = NULL;
    if (!layers || tg_gguf_writer_new(&gw, err)) {
        free(layers);
        return tg_fail(err, TG_ERR_NOMEM, "out of memory");
    }
    int dtype = r->o.f16 ? TG_DTYPE_F16 : TG_DTYPE_F32;
    tg_status st;
    if (llama) {
        tg_llama_weights lw;
        tg_trainer_llama_weights(r->tr, &lw, layers);
        st = tg_llama_to_gguf(gw, cfg, &lw, r->vocab, dtype, err);
    } else {
        tg_gpt2_weights w;
        tg_trainer_weights(r->tr, &w, layers);
        st = tg_gpt2_to_gguf(gw, cfg, &w, r->vocab, dtype, err);
    }
    if (!st) st = tg_gguf_set_u64(gw, "tinygpt.train.step", (uint64_t)r->step, err);

    cli_outfile of[3];
    memset(of, 0, sizeof of);
    const char *paths[3] = {r->out, r->ckpt_path, r->csv_path};
    for (int k = 0; k < 3 && !st; k++) st = cli_out_open(&of[k], paths[k], err) ? TG_ERR_IO : TG_OK;
    if (!st) st = tg_gguf_write_to(gw, of[0].f, r->out, err);
    tg_gguf_writer_free(gw);
    free(layers);

    if (!st) {
        ckpt_header h;
        memset(&h, 0, sizeof h);
        memcpy(h.magic, "TGTRAIN1", 8);
        h.version = 2;
        h.header_size = sizeof h + sizeof r->a;
        h.o = r->o;
        h.text_len = r->text_len, h.text_hash = r->text_hash;
        h.step = r->step;
        h.adam_t = tg_trainer_adam_t(r->tr);
        h.rng = r->rng.s;
        h.n_params = tg_trainer_n_params(r->tr);
        h.n_hist = r->n_hist;
        size_t n = h.n_params;
        int ok = write_all(of[1].f, &h, sizeof h, 1) && write_all(of[1].f, &r->a, sizeof r->a, 1) &&
                 write_all(of[1].f, tg_trainer_params(r->tr), sizeof(float), n) &&
                 write_all(of[1].f, tg_trainer_adam_m(r->tr), sizeof(float), n) &&
                 write_all(of[1].f, tg_trainer_adam_v(r->tr), sizeof(float), n) &&
                 write_all(of[1].f, r->hist, sizeof(hist_row), r->n_hist);
        if (!ok) st = tg_fail(err, TG_ERR_IO, "%s: write failed: %s", r->ckpt_path, strerror(errno));
        else write_csv_to(r, of[2].f);
    }
    for (int k = 0; k < 3 && !st; k++) st = cli_out_finish(&of[k], err) ? TG_ERR_IO : TG_OK;
    if (st) {
        for (int k = 0; k < 3; k++) cli_out_abort(&of[k]);
        say_held(r, 0, err);
        return st;
    }
    for (int k = 0; k < 3; k++)
        if (cli_out_commit(&of[k], err)) { /* a rename failed: rare, but say what is where */
            for (int j = k + 1; j < 3; j++) cli_out_abort(&of[j]);
            say_held(r, k, err);
            return TG_ERR_IO;
        }
    r->last_ckpt = r->step;
    return TG_OK;
}

/* Reads a checkpoint's header (and, with r->tr set, its state). The file is
 * untrusted: sizes are checked against the header and the file length. */
static tg_status load_checkpoint(const char *path, ckpt_header *h, run *r, tg_err *err) {
    struct stat sb;
    int fd = wt_open_regular(path, &sb, err); /* a FIFO or device is refused, never waited on */
    if (fd < 0) return TG_ERR_IO;
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        close(fd);
        return tg_fail(err, TG_ERR_NOMEM, "train: out of memory");
    }
    tg_status st = TG_OK;
    train_arch a = {.arch = TG_ARCH_GPT2};
    if (fread(h, sizeof *h, 1, f) != 1 || memcmp(h->magic, "TGTRAIN1", 8) ||
        !((h->version == 1 && h->header_size == sizeof *h) ||
          (h->version == 2 && h->header_size == sizeof *h + sizeof a)) ||
        (h->version == 2 && fread(&a, sizeof a, 1, f) != 1)) {
        st = tg_fail(err, TG_ERR_FORMAT, "%s: not a tinygpt training checkpoint", path);
        goto done;
    }
    if (a.arch == TG_ARCH_GPT2 ? (a.kv_heads || a.ff || a.untied || a.rope_theta != 0)
        : a.arch != TG_ARCH_LLAMA || a.kv_heads < 1 || a.kv_heads > 256 || h->o.heads % a.kv_heads ||
          a.ff < 1 || a.ff > 65536 || (a.untied != 0 && a.untied != 1) ||
          !(a.rope_theta >= 1.0f && a.rope_theta <= 1e9f)) {
        st = tg_fail(err, TG_ERR_FORMAT, "%s: architecture options out of range", path);
        goto done;
    }
    r->a = a;
    const train_opts *o = &h->o;
    if (o->layers < 1 || o->layers > 64 || o->heads < 1 || o->heads > 256 || o->embd < 1 ||
        o->embd > 4096 || o->ctx < 2 || o->ctx > 8192 || o->batch < 1 || o->batch > 256 ||
        o->steps < 1 || o->warmup < 0 || o->eval_every < 1 || o->save_every < 1 ||
        !(o->lr > 0 && o->lr <= 10) || !(o->lr_min >= 0 && o->lr_min <= 10) ||
        !(o->weight_decay >= 0 && o->weight_decay <= 10) ||
        !(o->grad_clip >= 0 && o->grad_clip <= 1e6) || !(o->val_frac >= 0 && o->val_frac <= 0.5f)) {
        st = tg_fail(err, TG_ERR_FORMAT, "%s: options out of range", path);
        goto done;
    }
    if (h->step < 0 || h->step > h->o.steps || h->n_hist > (uint64_t)h->o.steps + 1 ||
        h->adam_t < 0 || h->adam_t > h->o.steps) {
        st = tg_fail(err, TG_ERR_FORMAT, "%s: inconsistent step counts", path);
        goto done;
    }
    if (!r->tr) goto done;
    size_t n = tg_trainer_n_params(r->tr);
    if (h->n_params != n) {
        st = tg_fail(err, TG_ERR_FORMAT, "%s: %llu parameters, the model has %zu", path,
                     (unsigned long long)h->n_params, n);
        goto done;
    }
    r->hist = malloc((h->n_hist ? h->n_hist : 1) * sizeof(hist_row));
    if (!r->hist) {
        st = tg_fail(err, TG_ERR_NOMEM, "train: out of memory");
        goto done;
    }
    r->cap_hist = h->n_hist ? h->n_hist : 1;
    if (fread(tg_trainer_params(r->tr), sizeof(float), n, f) != n ||
        fread(tg_trainer_adam_m(r->tr), sizeof(float), n, f) != n ||
        fread(tg_trainer_adam_v(r->tr), sizeof(float), n, f) != n ||
        fread(r->hist, sizeof(hist_row), h->n_hist, f) != h->n_hist || fgetc(f) != EOF) {
        st = tg_fail(err, TG_ERR_FORMAT, "%s: truncated or oversized checkpoint", path);
        goto done;
    }
    if (!params_finite(r)) {
        st = tg_fail(err, TG_ERR_FORMAT, "%s: holds non-finite parameters (a diverged run): not resumable", path);
        goto done;
    }
    r->n_hist = h->n_hist;
    r->step = h->step;
    r->rng.s = h->rng;
    tg_trainer_set_adam_t(r->tr, h->adam_t);
done:
    fclose(f);
    return st;
}

/* ---- CSV and SVG ------------------------------------------------------------ */

static void xml_escape(FILE *f, const char *s) {
    for (; *s; s++) {
        if (*s == '&') fputs("&amp;", f);
        else if (*s == '<') fputs("&lt;", f);
        else if (*s == '>') fputs("&gt;", f);
        else if (*s == '"') fputs("&quot;", f);
        else fputc(*s, f);
    }
}

static void write_csv_to(const run *r, FILE *f) {
    fprintf(f, "step,train_loss,val_loss,val_nats_per_byte,lr,tokens_per_s,grad_norm\n");
    for (size_t i = 0; i < r->n_hist; i++) {
        const hist_row *h = &r->hist[i];
        fprintf(f, "%lld,%.9g,", (long long)h->step, h->train_loss);
        if (!isnan(h->val_loss)) fprintf(f, "%.9g,%.9g", h->val_loss, h->val_npb);
        else fprintf(f, ",");
        fprintf(f, ",%.6g,%.1f,%.6g\n", h->lr, h->tok_s, h->grad_norm);
    }
}

/* Ticks for [lo, hi]: a step of 1, 2 or 5 times a power of ten giving
 * about n intervals; the first tick at or above lo. */
static double nice_step(double lo, double hi, int n) {
    double raw = (hi - lo) / n, p = pow(10, floor(log10(raw))), m = raw / p;
    return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

/* The loss curve: training loss per step (one line), validation loss at each
 * evaluation (points joined by a line), the learning rate on the right-hand
 * axis, with gridlines at the loss ticks and the step ticks. */
static tg_status write_svg(const run *r, tg_err *err) {
    enum { MAX_LINE_POINTS = 2000, MAX_DOTS = 400 };
    cli_outfile of;
    if (cli_out_open(&of, r->svg_path, err) != 0) return TG_ERR_IO;
    const double W = 800, H = 470, x0 = 70, y0 = 56, pw = 640, ph = 340;
    double lo = INFINITY, hi = -INFINITY, lr_hi = 0;
    int64_t smax = 1;
    size_t n_val = 0;
    for (size_t i = 0; i < r->n_hist; i++) {
        const hist_row *h = &r->hist[i];
        float v[2] = {h->train_loss, h->val_loss};
        for (int k = 0; k < 2; k++)
            if (isfinite(v[k])) lo = v[k] < lo ? v[k] : lo, hi = v[k] > hi ? v[k] : hi;
        if (h->step > smax) smax = h->step;
        if (isfinite(h->lr) && h->lr > lr_hi) lr_hi = h->lr;
        n_val += isfinite(h->val_loss) != 0;
    }
    if (!(lo < hi)) lo = isfinite(lo) ? lo - 0.5 : 0, hi = lo + 1;
    double ystep = nice_step(lo, hi, 6);
    lo = floor(lo / ystep) * ystep, hi = ceil(hi / ystep) * ystep;
    if (!(lr_hi > 0)) lr_hi = 1;
    double lrstep = nice_step(0, lr_hi, 4);
    lr_hi = ceil(lr_hi / lrstep) * lrstep;
    double xstep = nice_step(0, (double)smax, 8);
    if (xstep < 1) xstep = 1;
#define PX(step) (x0 + pw * (double)(step) / (double)smax)
#define PY(v) (y0 + ph - ph * ((v) - lo) / (hi - lo))
#define PLR(v) (y0 + ph - ph * (v) / lr_hi)
    FILE *f = of.f;
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
               "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
               "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"12\">\n",
            W, H, W, H);
    fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
    /* title: the model and its run */
    fprintf(f, "<text id=\"title\" x=\"%.0f\" y=\"22\" font-size=\"15\">", x0);
    xml_escape(f, r->out);
    char kv[48] = "";
    if (r->a.arch == TG_ARCH_LLAMA)
        snprintf(kv, sizeof kv, " (%d key/value)", r->a.kv_heads);
    fprintf(f, ": training</text>\n<text x=\"%.0f\" y=\"40\" fill=\"#555555\">%s%d layer%s, %d head%s%s, "
               "width %d, context %d, batch %d; %lld steps, peak lr %g, warmup %lld</text>\n",
            x0, r->a.arch == TG_ARCH_LLAMA ? "Llama: " : "", r->o.layers, r->o.layers == 1 ? "" : "s",
            r->o.heads, r->o.heads == 1 ? "" : "s", kv,
            r->o.embd, r->o.ctx, r->o.batch, (long long)r->o.steps, r->o.lr, (long long)r->o.warmup);
    /* gridlines and ticks */
    fprintf(f, "<g id=\"grid\" stroke=\"#e4e4e4\" stroke-width=\"1\">\n");
    for (double v = lo; v <= hi + ystep * 1e-6; v += ystep)
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", x0, PY(v), x0 + pw, PY(v));
    for (double s = 0; s <= smax + xstep * 1e-6; s += xstep)
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\"/>\n", PX(s), y0, PX(s), y0 + ph);
    fprintf(f, "</g>\n<g id=\"ticks\">\n");
    for (double v = lo; v <= hi + ystep * 1e-6; v += ystep)
        fprintf(f, "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n", x0 - 6, PY(v) + 4,
                round(v / ystep) * ystep);
    for (double s = 0; s <= smax + xstep * 1e-6; s += xstep)
        fprintf(f, "<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\">%.0f</text>\n", PX(s),
                y0 + ph + 16, s);
    for (double v = 0; v <= lr_hi + lrstep * 1e-6; v += lrstep)
        fprintf(f, "<text x=\"%.0f\" y=\"%.1f\" fill=\"#2ca02c\">%.3g</text>\n", x0 + pw + 6, PLR(v) + 4,
                round(v / lrstep) * lrstep);
    fprintf(f, "</g>\n<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" fill=\"none\" "
               "stroke=\"#888888\"/>\n",
            x0, y0, pw, ph);
    /* axis labels */
    fprintf(f, "<text id=\"xlabel\" x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">step</text>\n",
            x0 + pw / 2, y0 + ph + 36);
    fprintf(f, "<text id=\"ylabel\" transform=\"translate(%.0f,%.0f) rotate(-90)\" "
               "text-anchor=\"middle\">loss (nats/token)</text>\n",
            x0 - 48, y0 + ph / 2);
    fprintf(f, "<text id=\"lrlabel\" transform=\"translate(%.0f,%.0f) rotate(90)\" "
               "text-anchor=\"middle\" fill=\"#2ca02c\">learning rate</text>\n",
            x0 + pw + 62, y0 + ph / 2);
    /* the learning rate (right axis), the training loss (bucket means when
     * there are more steps than points), the validation loss */
    fprintf(f, "<polyline id=\"lr\" fill=\"none\" stroke=\"#2ca02c\" stroke-width=\"1\" "
               "stroke-dasharray=\"4 3\" points=\"");
    size_t every = r->n_hist / MAX_LINE_POINTS + 1;
    for (size_t i = 0; i < r->n_hist; i += every)
        if (isfinite(r->hist[i].lr)) fprintf(f, "%.1f,%.1f ", PX(r->hist[i].step), PLR(r->hist[i].lr));
    fprintf(f, "\"/>\n<polyline id=\"train\" fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"1\" points=\"");
    for (size_t i = 0; i < r->n_hist; i += every) {
        double sum = 0, st = 0;
        size_t n = 0;
        for (size_t k = i; k < i + every && k < r->n_hist; k++)
            if (isfinite(r->hist[k].train_loss)) sum += r->hist[k].train_loss, st += (double)r->hist[k].step, n++;
        if (n) fprintf(f, "%.1f,%.1f ", PX(st / n), PY(sum / n));
    }
    fprintf(f, "\"/>\n<polyline id=\"val\" fill=\"none\" stroke=\"#d62728\" stroke-width=\"2\" points=\"");
    for (size_t i = 0; i < r->n_hist; i++)
        if (isfinite(r->hist[i].val_loss))
            fprintf(f, "%.1f,%.1f ", PX(r->hist[i].step), PY(r->hist[i].val_loss));
    fprintf(f, "\"/>\n<g id=\"val-points\" fill=\"#d62728\">\n");
    size_t dot_every = n_val / MAX_DOTS + 1, k = 0;
    for (size_t i = 0; i < r->n_hist; i++) {
        const hist_row *h = &r->hist[i];
        if (!isfinite(h->val_loss) || k++ % dot_every) continue;
        fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\"><title>step %lld: validation %.4f "
                   "nats/token, %.4f nats/byte</title></circle>\n",
                PX(h->step), PY(h->val_loss), (long long)h->step, h->val_loss, h->val_npb);
    }
    fprintf(f, "</g>\n");
#undef PX
#undef PY
#undef PLR
    /* legend */
    const char *color[3] = {"#1f77b4", "#d62728", "#2ca02c"};
    const char *label[3] = {"training loss (batch mean, nats/token)", "validation loss (held out)",
                            "learning rate (right axis)"};
    fprintf(f, "<g id=\"legend\">\n<rect x=\"%.0f\" y=\"%.0f\" width=\"290\" height=\"60\" "
               "fill=\"white\" fill-opacity=\"0.85\" stroke=\"#cccccc\"/>\n",
            x0 + pw - 298, y0 + 8);
    for (int c = 0; c < 3; c++)
        fprintf(f, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"%s\" "
                   "stroke-width=\"2\"%s/><text x=\"%.0f\" y=\"%.0f\">%s</text>\n",
                x0 + pw - 290, y0 + 24 + 17 * c, x0 + pw - 268, y0 + 24 + 17 * c, color[c],
                c == 2 ? " stroke-dasharray=\"4 3\"" : "", x0 + pw - 262, y0 + 28 + 17 * c, label[c]);
    fprintf(f, "</g>\n</svg>\n");
    return cli_out_commit(&of, err) == 0 ? TG_OK : TG_ERR_IO;
}

/* ---- progress ---------------------------------------------------------------- */

static void progress(const run *r, int tty, float loss, float val, double tok_s, double eta) {
    int64_t s = r->step, S = r->o.steps;
    char vbuf[32] = "-";
    if (isfinite(val)) snprintf(vbuf, sizeof vbuf, "%.4f", val);
    if (tty) {
        int width = 24, fill = (int)(width * s / (S ? S : 1));
        char bar[32];
        for (int i = 0; i < width; i++) bar[i] = i < fill ? '#' : '-';
        bar[width] = 0;
        fprintf(stderr, "\r[%s] step %lld/%lld  loss %.4f  val %s  %.0f tok/s  ETA %dm%02ds ", bar,
                (long long)s, (long long)S, loss, vbuf, tok_s, (int)(eta / 60), (int)eta % 60);
    } else {
        fprintf(stderr, "step %lld/%lld loss %.4f val %s tok/s %.0f eta_s %.0f\n", (long long)s,
                (long long)S, loss, vbuf, tok_s, eta);
    }
    fflush(stderr);
}

/* ---- the command --------------------------------------------------------------- */

int cmd_train(int argc, char **argv) {
    if (task_cli_wants(argc, argv)) return task_train(argc, argv); /* tools/task_cli.c */
    train_opts o = {.layers = 4, .heads = 4, .embd = 128, .ctx = 256, .vocab = 1024, .batch = 8,
                    .steps = 1000, .warmup = -1, .eval_every = 100, .save_every = -1, .seed = 1,
                    .lr = 1e-3f, .lr_min = -1.0f, .weight_decay = 0.1f, .grad_clip = 1.0f,
                    .val_frac = 0.1f, .f16 = 0};
    const char *text_path = NULL, *out = NULL, *tok_from = NULL, *resume = NULL;
    const char *arch_s = NULL;
    long threads = 1, stop_at = -1, kv_heads = 0, ff = 0;
    float theta = 0;
    int untied = 0, n_llama_flags = 0;
    int n_model_flags = 0, vocab_set = 0;
    /* CKPT: the options a checkpoint fixes, which --resume does not take */
#define CKPT .seen = &n_model_flags
    const char *task_name = NULL; /* TASK_CLI_OPT: never parsed here */
    const cli_opt opts[] = {
        {CLI_STR("-f", "--file", &text_path)},
        {CLI_MAX_INPUT_OPT},
        {CLI_STR("-o", "--output", &out)},
        {CLI_STR("--arch", NULL, &arch_s), CKPT},
        {CLI_INT("--layers", NULL, &o.layers, 1, 64), CKPT},
        {CLI_INT("--heads", NULL, &o.heads, 1, 256), CKPT},
        {CLI_INT("--embd", NULL, &o.embd, 1, 4096), CKPT},
        {CLI_INT("--ctx", NULL, &o.ctx, 2, 8192), CKPT},
        {CLI_INT("--kv-heads", NULL, &kv_heads, 1, 256), .seen = &n_llama_flags},
        {CLI_INT("--ff", NULL, &ff, 1, 65536), .seen = &n_llama_flags},
        {CLI_FLOAT("--rope-theta", NULL, &theta, 1.0, 1e9), .seen = &n_llama_flags},
        {CLI_FLAG("--untied", NULL, &untied, 1), .seen = &n_llama_flags},
        {CLI_INT("--vocab", NULL, &o.vocab, TG_BPE_MIN_VOCAB, 65536), .seen = &vocab_set},
        {CLI_STR("--tokenizer-from", NULL, &tok_from), CKPT},
        {CLI_INT("--batch", NULL, &o.batch, 1, 256), CKPT},
        {CLI_INT("--steps", NULL, &o.steps, 1, 100000000), CKPT},
        {CLI_FLOAT("--lr", NULL, &o.lr, 1e-9, 10.0), CKPT},
        {CLI_FLOAT("--lr-min", NULL, &o.lr_min, 0.0, 10.0), CKPT},
        {CLI_INT("--warmup", NULL, &o.warmup, 0, 100000000), CKPT},
        {CLI_FLOAT("--weight-decay", NULL, &o.weight_decay, 0.0, 10.0), CKPT},
        {CLI_FLOAT("--grad-clip", NULL, &o.grad_clip, 0.0, 1e6), CKPT},
        {CLI_INT("--seed", NULL, &o.seed, 0, 4294967295L), CKPT},
        {CLI_FLOAT("--val-frac", NULL, &o.val_frac, 0.0, 0.5), CKPT},
        {CLI_INT("--eval-every", NULL, &o.eval_every, 1, 100000000), CKPT},
        {CLI_INT("--save-every", NULL, &o.save_every, 1, 100000000), CKPT},
        {CLI_FLAG("--f16", NULL, &o.f16, 1), CKPT},
        {CLI_STR("--resume", NULL, &resume)},
        {CLI_INT("--stop-at", NULL, &stop_at, 1, 100000000)},
        {CLI_INT("-t", "--threads", &threads, 1, 1024)},
        {TASK_CLI_OPT(&task_name)},
        {0},
    };
#undef CKPT
    int parsed = cli_parse(CMD, help, opts, argc, argv);
    if (parsed != CLI_RUN) return parsed;
    n_model_flags += vocab_set + n_llama_flags; /* --vocab and the llama options are too */
    if (!text_path) return cli_usage(CMD, "-f TEXT is required");
    if (!out) return cli_usage(CMD, "-o OUT.gguf is required");
    if (resume && n_model_flags)
        return cli_usage(CMD, "--resume takes the model and schedule from the checkpoint; "
                              "give only -f, -o, -t and --stop-at");
    if (tok_from && vocab_set) return cli_usage(CMD, "--vocab and --tokenizer-from exclude each other");
    int arch = arch_s ? tg_arch_parse(arch_s, strlen(arch_s)) : TG_ARCH_GPT2;
    if (arch < 0) return cli_usage(CMD, "--arch must be gpt2 or llama, not '%s'", arch_s);
    if (arch != TG_ARCH_LLAMA && n_llama_flags)
        return cli_usage(CMD, "--kv-heads, --ff, --rope-theta and --untied need --arch llama");
    if (kv_heads && o.heads % kv_heads)
        return cli_usage(CMD, "--kv-heads %ld does not divide --heads %d", kv_heads, o.heads);

    /* from here on a signal stops the run after the current step (with a
     * checkpoint), even if it arrives while the text is being tokenized */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    tg_err err;
    int rc = EXIT_RUNTIME;
    run r;
    memset(&r, 0, sizeof r);
    r.out = out;
    r.last_ckpt = -1;
    ckpt_header ck;
    if (resume) {
        if (load_checkpoint(resume, &ck, &r, &err) != TG_OK) return cli_error(CMD, "%s", err.msg);
        o = ck.o;
    } else if (arch == TG_ARCH_LLAMA) {
        r.a.arch = TG_ARCH_LLAMA;
        r.a.kv_heads = (int32_t)(kv_heads ? kv_heads : o.heads);
        /* llama2.c's default hidden size: 2/3 of 4E, up to a multiple of 32 (as init) */
        r.a.ff = (int32_t)(ff ? ff : (8 * o.embd / 3 + 31) / 32 * 32);
        r.a.untied = untied;
        r.a.rope_theta = theta > 0 ? theta : 10000.0f;
    }
    int is_llama = r.a.arch == TG_ARCH_LLAMA;
    if (o.embd % o.heads)
        return cli_usage(CMD, "--embd %d is not divisible by --heads %d", o.embd, o.heads);
    if (o.warmup < 0) o.warmup = o.steps / 10 < 100 ? o.steps / 10 : 100;
    if (o.lr_min < 0) o.lr_min = o.lr / 10;
    if (o.save_every < 0) o.save_every = o.eval_every;
    r.o = o;

    /* every output must be writable before any work is done */
    r.ckpt_path = cli_side_path(out, ".ckpt");
    r.csv_path = cli_side_path(out, ".csv");
    r.svg_path = cli_side_path(out, ".svg");
    if (!r.ckpt_path || !r.csv_path || !r.svg_path) return cli_error(CMD, "out of memory");
    const char *outs[] = {out, r.ckpt_path, r.csv_path, r.svg_path};
    for (int k = 0; k < 4; k++) {
        if ((rc = cli_out_check(CMD, "-o", outs[k]))) goto cleanup_paths;
        /* the text and the tokenizer's model are inputs; --resume OUT.ckpt is
         * the normal way on, and the checkpoint is rewritten as it goes */
        if ((rc = cli_out_not_input(CMD, "-o", outs[k], "-f", text_path)) ||
            (rc = cli_out_not_input(CMD, "-o", outs[k], "--tokenizer-from", tok_from)) ||
            (k != 1 && (rc = cli_out_not_input(CMD, "-o", outs[k], "--resume", resume))))
            goto cleanup_paths;
    }
    rc = EXIT_RUNTIME;

    /* the text, split on bytes */
    size_t len;
    char *text = cli_read_file(text_path, &len, &err);
    if (!text) {
        rc = cli_error(CMD, "%s", err.msg);
        goto cleanup_paths;
    }
    r.text_len = len;
    r.text_hash = fnv1a(text, len);
    if (resume && (ck.text_len != r.text_len || ck.text_hash != r.text_hash)) {
        rc = cli_error(CMD, "%s is not the text %s was trained on", text_path, resume);
        goto cleanup_text;
    }
    size_t n_val_bytes = (size_t)((double)len * o.val_frac);
    size_t n_train_bytes = len - n_val_bytes;

    /* the tokenizer: learned, taken from a model, or (resuming) from OUT */
    tg_vocab learned;
    memset(&learned, 0, sizeof learned);
    tg_gpt2_model src;
    memset(&src, 0, sizeof src);
    int have_src = 0;
    double t_tok = now_s();
    if (resume || tok_from) {
        /* resuming: the tokenizer is in the GGUF written beside the checkpoint */
        char *beside = resume ? cli_side_path(resume, "") : NULL;
        if (beside && strlen(beside) > 5 && !strcmp(beside + strlen(beside) - 5, ".ckpt"))
            strcpy(beside + strlen(beside) - 5, ".gguf");
        const char *from = resume ? beside : tok_from;
        if (resume && !beside) {
            rc = cli_error(CMD, "out of memory");
            goto cleanup_text;
        }
        if (is_llama) { /* any vocabulary: GGUF, tokenizer.bin, tokenizer.json, HF folder */
            tg_status lst = tg_vocab_load(&learned, from, &err);
            free(beside);
            if (lst != TG_OK) {
                rc = cli_error(CMD, "tokenizer: %s", err.msg);
                goto cleanup_vocab;
            }
            if (learned.n_tokens < 1) {
                rc = cli_error(CMD, "tokenizer: %s has no vocabulary", from);
                goto cleanup_vocab;
            }
            r.vocab = &learned;
        } else {
            tg_status lst = tg_gpt2_load(&src, from, 1, &err);
            free(beside);
            if (lst == TG_ERR_UNSUPPORTED) { /* a Llama's file */
                rc = cli_error(CMD, "%s is a Llama model: a GPT-2 takes its tokenizer from a GPT-2 model "
                               "(train a Llama with --arch llama)", from);
                goto cleanup_text;
            }
            if (lst != TG_OK) {
                rc = cli_error(CMD, "tokenizer: %s", err.msg);
                goto cleanup_text;
            }
            have_src = 1;
            r.vocab = &src.vocab;
        }
    } else {
        if (n_train_bytes == 0) {
            rc = cli_error(CMD, "%s: no training text (%zu bytes)", text_path, len);
            goto cleanup_text;
        }
        if (tg_bpe_train(text, n_train_bytes, o.vocab, &learned, &err) != TG_OK) {
            rc = cli_error(CMD, "tokenizer: %s", err.msg);
            goto cleanup_text;
        }
        r.vocab = &learned;
    }
    r.o.vocab = o.vocab = r.vocab->n_tokens;
    if (tg_tokenizer_create(&r.tok, r.vocab, &err) != TG_OK) {
        rc = cli_error(CMD, "tokenizer: %s", err.msg);
        goto cleanup_vocab;
    }
    if (tg_tokenizer_encode(r.tok, text, n_train_bytes, 0, &r.train_ids, &r.n_train, &err) != TG_OK ||
        tg_tokenizer_encode(r.tok, text + n_train_bytes, n_val_bytes, 0, &r.val_ids, &r.n_val, &err) != TG_OK) {
        rc = cli_error(CMD, "tokenizer: %s", err.msg);
        goto cleanup_tok;
    }
    if (r.n_train < (size_t)o.ctx + 1) {
        rc = cli_error(CMD, "%s: the training text is too short: %zu tokens, one window of --ctx %d needs %d",
                       text_path, r.n_train, o.ctx, o.ctx + 1);
        goto cleanup_tok;
    }
    r.val_bytes = malloc(sizeof(size_t) * (r.n_val ? r.n_val : 1));
    if (!r.val_bytes) {
        rc = cli_error(CMD, "out of memory");
        goto cleanup_tok;
    }
    for (size_t i = 0; i < r.n_val; i++) { /* a SentencePiece piece after BOS loses its space */
        size_t pl = 0;
        if (!tg_tokenizer_is_special(r.tok, r.val_ids[i]))
            tg_tokenizer_piece_after(r.tok, i ? r.val_ids[i - 1] : -1, r.val_ids[i], &pl);
        r.val_bytes[i] = pl;
    }
    fprintf(stderr, "train: %zu + %zu held-out bytes -> %zu + %zu tokens (vocab %d, %.1fs)\n",
            n_train_bytes, n_val_bytes, r.n_train, r.n_val, o.vocab, now_s() - t_tok);

    /* the model */
    tg_gpt2_config cfg = {.n_layer = o.layers, .n_head = o.heads, .n_embd = o.embd,
                          .n_ctx = o.ctx, .n_vocab = o.vocab, .n_ff = 4 * o.embd, .ln_eps = 1e-5f};
    if (is_llama) {
        cfg.arch = TG_ARCH_LLAMA, cfg.n_ff = r.a.ff, cfg.n_kv_head = r.a.kv_heads;
        cfg.head_dim = cfg.rope_dim = o.embd / o.heads;
        cfg.rope_theta = r.a.rope_theta, cfg.rope_pairs = TG_ROPE_ADJACENT;
    }
    int maxB = o.batch;
    if (tg_trainer_create_ex(&r.tr, &cfg, r.a.untied ? TG_TRAIN_UNTIED : 0, maxB, o.ctx, (int)threads,
                             NULL, &err) != TG_OK) {
        rc = cli_error(CMD, "%s", err.msg);
        goto cleanup_tok;
    }
    r.bx = malloc(sizeof(int) * maxB * o.ctx);
    r.by = malloc(sizeof(int) * maxB * o.ctx);
    r.nll = malloc(sizeof(float) * maxB * o.ctx);
    if (!r.bx || !r.by || !r.nll) {
        rc = cli_error(CMD, "out of memory");
        goto cleanup_all;
    }
    if (resume) {
        if (load_checkpoint(resume, &ck, &r, &err) != TG_OK) {
            rc = cli_error(CMD, "%s", err.msg);
            goto cleanup_all;
        }
        r.last_ckpt = r.step;
        fprintf(stderr, "train: resuming %s at step %lld\n", resume, (long long)r.step);
    } else {
        tg_trainer_init_params(r.tr, o.seed);
        r.rng.s = o.seed ^ 0x5eed5eed5eed5eedull;
        r.step = 0;
    }
    if (is_llama)
        fprintf(stderr, "train: llama, %zu parameters, L%d H%d KVH%d E%d F%d C%d V%d, %s, batch %d x %d, %lld steps\n",
                tg_trainer_n_params(r.tr), o.layers, o.heads, r.a.kv_heads, o.embd, r.a.ff, o.ctx, o.vocab,
                r.a.untied ? "untied" : "tied", o.batch, o.ctx, (long long)o.steps);
    else
        fprintf(stderr, "train: %zu parameters, L%d H%d E%d C%d V%d, batch %d x %d, %lld steps\n",
                tg_trainer_n_params(r.tr), o.layers, o.heads, o.embd, o.ctx, o.vocab, o.batch, o.ctx,
                (long long)o.steps);

    const char *inject = getenv("TINYGPT_TRAIN_INJECT_NAN"); /* test hook: a NaN weight in step N+1 */
    long inject_step = inject ? atol(inject) : -1;
    /* "after:N": step N's update makes a weight NaN though its loss was finite */
    long inject_after = inject && !strncmp(inject, "after:", 6) ? atol(inject + 6) : -1;
    if (inject_after >= 0) inject_step = -1;

    int tty = isatty(2);
    tg_adamw opt = {0.9f, 0.95f, 1e-8f, o.weight_decay};
    double t_start = now_s(), tok_s = 0;
    int64_t steps_run = 0;
    float last_val = NAN;
    for (size_t i = 0; i < r.n_hist; i++)
        if (!isnan(r.hist[i].val_loss)) last_val = r.hist[i].val_loss;
    int plain_every = o.steps / 50 > 1 ? (int)(o.steps / 50) : 1;
    rc = EXIT_OK;
    while (r.step < o.steps) {
        double t0 = now_s();
        int C = o.ctx, B = o.batch;
        for (int b = 0; b < B; b++) {
            size_t off = (size_t)(tg_rng_uniform(&r.rng) * (double)(r.n_train - C));
            memcpy(r.bx + (size_t)b * C, r.train_ids + off, sizeof(int) * C);
            memcpy(r.by + (size_t)b * C, r.train_ids + off + 1, sizeof(int) * C);
        }
        if (r.step == inject_step) tg_trainer_params(r.tr)[0] = NAN;
        float loss;
        if (tg_trainer_forward(r.tr, r.bx, r.by, B, C, &loss, NULL, &err) != TG_OK) {
            rc = cli_error(CMD, "%s", err.msg);
            break;
        }
        float lr = tg_train_lr(r.step, o.steps, o.warmup, o.lr, o.lr_min), gnorm = NAN;
        if (isfinite(loss)) {
            tg_trainer_zero_grad(r.tr);
            tg_trainer_backward(r.tr);
            gnorm = tg_trainer_step(r.tr, &opt, lr, o.grad_clip);
            if (r.step + 1 == inject_after) tg_trainer_params(r.tr)[0] = NAN;
        }
        if (!isfinite(loss) || !isfinite(gnorm)) {
            if (tty) fputc('\n', stderr);
            if (r.last_ckpt >= 0)
                rc = cli_error(CMD, "%s is %s at step %lld: stopping; the last good checkpoint (step %lld) is kept in %s and %s",
                               isfinite(loss) ? "the gradient norm" : "the loss",
                               isnan(isfinite(loss) ? gnorm : loss) ? "NaN" : "infinite",
                               (long long)r.step + 1, (long long)r.last_ckpt, out, r.ckpt_path);
            else
                rc = cli_error(CMD, "%s is %s at step %lld: stopping; no checkpoint was written yet",
                               isfinite(loss) ? "the gradient norm" : "the loss",
                               isnan(isfinite(loss) ? gnorm : loss) ? "NaN" : "infinite",
                               (long long)r.step + 1);
            break;
        }
        r.step++;
        steps_run++;
        double dt = now_s() - t0;
        tok_s = (double)B * C / dt;
        hist_row row = {r.step, loss, NAN, NAN, lr, (float)tok_s, gnorm};
        int last = r.step == o.steps;
        if (r.n_val > 1 && (r.step % o.eval_every == 0 || last)) {
            double npt, npb;
            if (validate(&r, &npt, &npb, &err) != TG_OK) {
                rc = cli_error(CMD, "%s", err.msg);
                break;
            }
            row.val_loss = (float)npt, row.val_npb = (float)npb;
            last_val = row.val_loss;
        }
        if (hist_push(&r, row) != 0) {
            rc = cli_error(CMD, "out of memory");
            break;
        }
        double elapsed = now_s() - t_start;
        double eta = elapsed / steps_run * (double)(o.steps - r.step);
        if (tty || r.step % plain_every == 0 || last || !isnan(row.val_loss))
            progress(&r, tty, loss, last_val, (double)B * C * steps_run / elapsed, eta);
        int stop = g_stop || (stop_at > 0 && r.step >= stop_at);
        if (last || stop || r.step % o.save_every == 0) {
            if (!params_finite(&r)) { /* the loss was finite, the update was not */
                if (tty) fputc('\n', stderr);
                if (r.last_ckpt >= 0)
                    rc = cli_error(CMD, "training diverged at step %lld: the parameters are no longer finite; "
                                        "the last good checkpoint (step %lld) is kept in %s and %s",
                                   (long long)r.step, (long long)r.last_ckpt, out, r.ckpt_path);
                else
                    rc = cli_error(CMD, "training diverged at step %lld: the parameters are no longer finite; "
                                        "no checkpoint was written yet", (long long)r.step);
                break;
            }
            if (save_checkpoint(&r, &err) != TG_OK) {
                if (tty) fputc('\n', stderr);
                rc = cli_error(CMD, "checkpoint at step %lld: %s", (long long)r.step, err.msg);
                break;
            }
        }
        if (stop && !last) {
            if (tty) fputc('\n', stderr);
            rc = cli_error(CMD, "%s at step %lld: checkpoint written to %s (continue with --resume %s)",
                           g_stop ? "interrupted" : "stopped", (long long)r.step, r.ckpt_path,
                           r.ckpt_path);
            break;
        }
    }
    if (tty) fputc('\n', stderr);
    if (rc == EXIT_OK) {
        if (write_svg(&r, &err) != TG_OK) {
            rc = cli_error(CMD, "%s", err.msg);
        } else {
            double wall = now_s() - t_start;
            fprintf(stderr, "train: wrote %s (%lld steps, %.1fs, %.0f tok/s); final val %.4f nats/token\n",
                    out, (long long)steps_run, wall, (double)o.batch * o.ctx * steps_run / (wall > 0 ? wall : 1),
                    last_val);
        }
    }

cleanup_all:
    free(r.bx), free(r.by), free(r.nll);
    tg_trainer_free(r.tr);
cleanup_tok:
    free(r.train_ids), free(r.val_ids), free(r.val_bytes);
    tg_tokenizer_free(r.tok);
cleanup_vocab:
    if (have_src) tg_gpt2_free(&src);
    tg_vocab_free(&learned);
cleanup_text:
    free(text);
cleanup_paths:
    free(r.ckpt_path), free(r.csv_path), free(r.svg_path), free(r.hist);
    return rc;
}
