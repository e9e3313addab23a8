/* cmd_compare.c — `tinygpt compare A B`: two checkpoints side by side,
 * typically one single-head and one multi-head model of the same size.
 *
 *   1. configuration          layers, heads, head size, width, context, ...
 *   2. quality on a text      nats/token, perplexity, nats/byte, loss by
 *                             position in the window, in-context score
 *   3. speed                  prefill and decode tok/s at the same context,
 *                             attention's share of the step
 *   4. heads                  per layer × head: entropy, confidence, sink,
 *                             previous-token, induction, ablation Δloss, class
 *   5. one head per layer     loss keeping only the best head of a layer,
 *                             next to keeping a random one
 *   6. agreement              top-1 agreement and KL(A‖B) on the text
 *
 * Everything uses forward passes only; attention weights come through the
 * probe hook and ablations through the head mask.
 */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/heads.h"
#include "model/profiler.h"
#include "model/scoring.h"
#include "tools/attnviz.h"
#include "tools/cli.h"
#include "tools/run.h"
#include "tools/task_cli.h"

static const char *const CMD = "compare";
static const char *const DEFAULT_PROMPT = "The researcher who wrote the paper said it was wrong.";

enum { CHUNK = 128, N_BUCKETS = 4, N_INDUCTION_SEQS = 4, SPEED_REPS = 3 };

/* What every row and column of the text output means: in --help and under it. */
static const char legend[] =
    "rows and columns:\n"
    "  2. tokens scored: the text's tokens predicted, in non-overlapping windows of N\n"
    "     (tinygpt eval's default scheme); nats/token: mean negative log-likelihood;\n"
    "     perplexity: e^(nats/token); nats/byte: the same nats over the text's bytes;\n"
    "     loss @ pos a-b: nats/token of the positions a..b of the windows;\n"
    "     in-context score: the last bucket's loss minus the first's (negative = the\n"
    "     context helps)\n"
    "  3. prefill / decode tok/s: N tokens prefilled, N steps decoded (median of 3);\n"
    "     attention, prefill / decode: attention's share of the phase (profiled)\n"
    "  4. per layer and head, over the first --head-tokens tokens: entropy = the\n"
    "     normalised entropy of its weights (0 = one position, 1 = uniform); conf =\n"
    "     the mean largest weight; sink = the mean weight on position 0; prev = on the\n"
    "     previous token; induct = on the token after the earlier copy of the current\n"
    "     one, on repeated random sequences; Δloss = nats/token lost when the head is\n"
    "     zeroed; class = induction (induct >= 0.3), previous-token (prev >= 0.5),\n"
    "     sink (sink >= 0.5), local (>= 0.6 on the last 4 positions), broad\n"
    "     (entropy >= 0.6), else mixed\n"
    "  5. all heads: the model's loss; best head / random head: the loss keeping only\n"
    "     the layer's best head / the mean over keeping each one; best is: its index\n"
    "  6. top-1 agreement: the fraction of positions where A and B predict the same\n"
    "     token; mean KL(A||B): in nats, over the same positions\n";

static void help(FILE *f) {
    fprintf(f,
            "usage: tinygpt compare A B -f TEXT [-p PROMPT] [--ctx N] [--svg DIR] [--json]\n"
            "                        [--head-tokens N] [--seed S] [--no-agreement] [-t THREADS] [--isa ISA]\n"
            "  A, B                two models (GGUF files or Hugging Face GPT-2 folders)\n"
            "  -f, --file TEXT     the text both are scored on (e.g. held-out data; '-':\n"
            "                      standard input)\n"
            "  --max-input B       read at most B bytes of TEXT, [1, 2^40]; K/M/G suffixes\n"
            "                      (default 64M)\n"
            "  -p, --prompt PROMPT  the prompt of the attention maps (with --svg; default:\n"
            "                      \"%s\")\n"
            "  --ctx N             window length in tokens, [2, the smaller context]\n"
            "                      (default: the smaller context)\n"
            "  --svg DIR           write DIR/A.svg and DIR/B.svg: attention heatmaps of the\n"
            "                      prompt (default: none)\n"
            "  --json              print everything as one JSON object\n"
            "  --head-tokens N     tokens of the text used for the per-head metrics and\n"
            "                      ablations, [2, 10^7] (default 2048)\n"
            "  --seed S            seed of the random induction sequences, [0, 2^31-1]\n"
            "                      (default 1)\n"
            "  --no-agreement      skip part 6 (needed when the vocabularies differ)\n"
            "  -t, --threads N     worker threads, [1, 1024] (default 1)\n"
            "  --isa ISA           scalar|avx2|avx512|neon (default: $TINYGPT_ISA or the best\n"
            "                      this CPU supports)\n"
            "  --no-check          do not scan the weights for NaN/inf at load (huge files; a\n"
            "                      non-finite logit still stops the run)\n"
            "  --tokenizer PATH    use this vocabulary instead of the model's: llama2.c\n"
            "                      tokenizer.bin, GGUF, tokenizer.json or HF folder\n"
            "Two models trained with train --task get the task comparison instead (-n N,\n"
            "--seed S).\n"
            "\n%s",
            DEFAULT_PROMPT, legend);
}

/* ---- one model --------------------------------------------------------------- */

typedef struct quality {
    size_t tokens, bytes;
    double nats;
    double bucket_nats[N_BUCKETS];
    size_t bucket_n[N_BUCKETS];
} quality;

typedef struct speed {
    double prefill_tps, decode_tps;
    double prefill_attn_share, decode_attn_share;
} speed;

typedef struct side {
    const char *path;
    char name[8];          /* "A" or "B" */
    run_ctx rc;
    const tg_gpt2_config *cfg;
    size_t n_params;
    int *ids;              /* the text, tokenized by this model */
    size_t n_ids;
    quality q;
    speed sp;
    tg_head_stats *heads;  /* [L*H] */
    double base_loss;      /* on the head-metric subset */
    double *ablate;        /* [L*H]: loss with that head zeroed */
    double *only;          /* [L*H]: loss keeping only that head in its layer */
    pthread_mutex_t mu;
} side;

/* Window-position buckets [b[i], b[i+1]) over positions 1..N-1. */
static void buckets(int N, int b[N_BUCKETS + 1]) {
    b[0] = 1;
    b[1] = N / 8 > 2 ? N / 8 : 2;
    b[2] = N / 4 > b[1] + 1 ? N / 4 : b[1] + 1;
    b[3] = N / 2 > b[2] + 1 ? N / 2 : b[2] + 1;
    b[4] = N;
    for (int i = 1; i <= N_BUCKETS; i++)
        if (b[i] > N) b[i] = N;
}

/* Runs ids[n] in windows of N tokens (at most `limit` tokens scored) and
 * calls fn for every scored position with the logits that predict it. */
typedef void (*score_fn)(void *user, const float *logits, int target, int wpos, size_t idx);

static tg_status scan(side *s, const int *ids, size_t n_ids, int N, size_t limit, score_fn fn,
                      void *user, float *logits, tg_err *err) {
    size_t scored = 0;
    for (size_t w0 = 0; w0 < n_ids && scored < limit; w0 += (size_t)N) {
        int n = n_ids - w0 < (size_t)N ? (int)(n_ids - w0) : N;
        if (n < 2) break;
        if ((size_t)(n - 1) > limit - scored) n = (int)(limit - scored) + 1;
        for (int c0 = 0; c0 < n - 1; c0 += CHUNK) {
            int T = n - 1 - c0 < CHUNK ? n - 1 - c0 : CHUNK;
            tg_status st = tg_gpt_forward(s->rc.gpt, ids + w0 + c0, T, c0, logits, 1, err);
            if (st) return st;
            for (int t = 0; t < T; t++)
                fn(user, logits + (size_t)t * s->cfg->n_vocab, ids[w0 + c0 + t + 1], c0 + t + 1,
                   w0 + c0 + t + 1);
        }
        scored += (size_t)(n - 1);
    }
    return TG_OK;
}

typedef struct quality_acc {
    side *s;
    int b[N_BUCKETS + 1];
} quality_acc;

static void quality_fn(void *user, const float *logits, int target, int wpos, size_t idx) {
    (void)idx;
    quality_acc *a = user;
    quality *q = &a->s->q;
    double nll = tg_nll(logits, a->s->cfg->n_vocab, target);
    size_t len = 0;
    tg_tokenizer_piece(a->s->rc.tok, target, &len);
    q->nats += nll;
    q->bytes += len;
    q->tokens++;
    for (int i = 0; i < N_BUCKETS; i++)
        if (wpos >= a->b[i] && wpos < a->b[i + 1]) {
            q->bucket_nats[i] += nll;
            q->bucket_n[i]++;
        }
}

typedef struct loss_acc {
    const side *s;
    double nats;
    size_t n;
} loss_acc;

static void loss_fn(void *user, const float *logits, int target, int wpos, size_t idx) {
    (void)wpos, (void)idx;
    loss_acc *a = user;
    a->nats += tg_nll(logits, a->s->cfg->n_vocab, target);
    a->n++;
}

/* Mean loss over the first `limit` scored tokens, with the head mask set. */
static tg_status subset_loss(side *s, int N, size_t limit, const uint8_t *mask, float *logits,
                             double *out, tg_err *err) {
    tg_status st = tg_gpt_set_head_mask(s->rc.gpt, mask, err);
    if (st) return st;
    loss_acc a = {s, 0, 0};
    st = scan(s, s->ids, s->n_ids, N, limit, loss_fn, &a, logits, err);
    tg_gpt_set_head_mask(s->rc.gpt, NULL, err);
    *out = a.n ? a.nats / (double)a.n : 0.0;
    return st;
}

/* Probe callbacks run on worker threads; one head's queries may be split
 * over threads, so the shared accumulators take a lock. */
static void stats_attn(void *user, int l, int h, int qpos, const float *p, int n_pos) {
    side *s = user;
    pthread_mutex_lock(&s->mu);
    tg_head_stats_add(&s->heads[l * s->cfg->n_head + h], p, n_pos, qpos);
    pthread_mutex_unlock(&s->mu);
}

typedef struct induction_ctx {
    side *s;
    int block;
} induction_ctx;

static void induction_attn(void *user, int l, int h, int qpos, const float *p, int n_pos) {
    (void)n_pos;
    induction_ctx *ic = user;
    pthread_mutex_lock(&ic->s->mu);
    tg_head_stats_add_induction(&ic->s->heads[l * ic->s->cfg->n_head + h], p, qpos, ic->block);
    pthread_mutex_unlock(&ic->s->mu);
}

static uint64_t splitmix(uint64_t *x) {
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Part 4: attention statistics on the text, induction on R R sequences,
 * and the loss with each head zeroed. Part 5: the loss keeping one head. */
static tg_status analyse_heads(side *s, int N, size_t limit, uint64_t seed, float *logits,
                               tg_err *err) {
    int L = s->cfg->n_layer, H = s->cfg->n_head;
    size_t LH = (size_t)L * H;
    s->heads = calloc(LH, sizeof *s->heads);
    s->ablate = calloc(LH, sizeof *s->ablate);
    s->only = calloc(LH, sizeof *s->only);
    uint8_t *mask = malloc(LH);
    int *seq = malloc((size_t)N * sizeof *seq);
    if (!s->heads || !s->ablate || !s->only || !mask || !seq) {
        free(mask);
        free(seq);
        return tg_fail(err, TG_ERR_NOMEM, "compare: out of memory");
    }
    tg_status st;
    tg_probe probe = {.user = s, .attn = stats_attn};
    tg_gpt_set_probe(s->rc.gpt, &probe);
    loss_acc base = {s, 0, 0};
    st = scan(s, s->ids, s->n_ids, N, limit, loss_fn, &base, logits, err);
    tg_gpt_set_probe(s->rc.gpt, NULL);
    if (st) goto done;
    s->base_loss = base.n ? base.nats / (double)base.n : 0.0;

    /* Induction: a random block of tokens repeated; ordinary tokens only. */
    int block = N / 2 < 64 ? N / 2 : 64, nt = tg_tokenizer_n_vocab(s->rc.tok);
    induction_ctx ic = {s, block};
    tg_probe iprobe = {.user = &ic, .attn = induction_attn};
    uint64_t rng = seed;
    for (int r = 0; r < N_INDUCTION_SEQS && block >= 2; r++) {
        for (int i = 0; i < block; i++) {
            int id;
            do id = (int)(splitmix(&rng) % (uint64_t)nt);
            while (tg_tokenizer_is_special(s->rc.tok, id));
            seq[i] = seq[block + i] = id;
        }
        tg_gpt_set_probe(s->rc.gpt, &iprobe);
        st = tg_gpt_forward(s->rc.gpt, seq, 2 * block, 0, logits, 0, err);
        tg_gpt_set_probe(s->rc.gpt, NULL);
        if (st) goto done;
    }
    for (size_t i = 0; i < LH; i++) tg_head_stats_finish(&s->heads[i]);

    for (size_t i = 0; i < LH; i++) {
        memset(mask, 1, LH);
        mask[i] = 0;
        if ((st = subset_loss(s, N, limit, mask, logits, &s->ablate[i], err))) goto done;
    }
    for (int l = 0; l < L && H > 1; l++)
        for (int h = 0; h < H; h++) {
            memset(mask, 1, LH);
            memset(mask + (size_t)l * H, 0, (size_t)H);
            mask[(size_t)l * H + h] = 1;
            if ((st = subset_loss(s, N, limit, mask, logits, &s->only[(size_t)l * H + h], err)))
                goto done;
        }
done:
    free(mask);
    free(seq);
    return st;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Part 3: prefill N tokens and decode N steps (medians of SPEED_REPS), and
 * attention's share of each phase from profiled runs (median of SPEED_REPS). */
static tg_status measure_speed(side *s, int N, float *logits, tg_err *err) {
    const int *ids = s->ids;
    if (s->n_ids < (size_t)N) N = (int)s->n_ids;
    double pre[SPEED_REPS], dec[SPEED_REPS];
    tg_status st;
    for (int r = 0; r < SPEED_REPS; r++) {
        double t0 = run_now();
        if ((st = tg_gpt_forward(s->rc.gpt, ids, N, 0, logits, 0, err))) return st;
        double t1 = run_now();
        for (int t = 0; t < N; t++)
            if ((st = tg_gpt_forward(s->rc.gpt, ids + t, 1, t, logits, 0, err))) return st;
        double t2 = run_now();
        pre[r] = N / (t1 - t0);
        dec[r] = N / (t2 - t1);
    }
    qsort(pre, SPEED_REPS, sizeof *pre, cmp_double);
    qsort(dec, SPEED_REPS, sizeof *dec, cmp_double);
    s->sp.prefill_tps = pre[SPEED_REPS / 2];
    s->sp.decode_tps = dec[SPEED_REPS / 2];

    tg_gpt *g = s->rc.gpt;
    double share[TG_PHASE_COUNT][SPEED_REPS];
    for (int r = 0; r < SPEED_REPS; r++) {
        tg_profiler *p;
        if ((st = tg_profiler_create(&p, s->cfg, tg_pool_size(tg_gpt_pool(g)), tg_gpt_pool(g), 0,
                                     0, err)))
            return st;
        tg_gpt_set_probe(g, tg_profiler_probe(p));
        tg_profiler_step_begin(p);
        st = tg_gpt_forward(g, ids, N, 0, logits, 0, err);
        if (!st) st = tg_profiler_step_end(p, TG_PHASE_PREFILL, N, 0, 1, 0, err);
        for (int t = 0; t < N && !st; t++) {
            tg_profiler_step_begin(p);
            st = tg_gpt_forward(g, ids + t, 1, t, logits, 0, err);
            if (!st) st = tg_profiler_step_end(p, TG_PHASE_DECODE, 1, t, 1, 0, err);
        }
        tg_gpt_set_probe(g, NULL);
        const tg_op attn_ops[] = {TG_OP_ATTN_SCORES, TG_OP_ATTN_SOFTMAX, TG_OP_ATTN_MIX};
        for (int ph = 0; ph < TG_PHASE_COUNT && !st; ph++) {
            double attn = 0.0;
            for (size_t i = 0; i < sizeof attn_ops / sizeof attn_ops[0]; i++)
                attn += tg_profiler_stat(p, (tg_phase)ph, attn_ops[i], TG_PROF_ALL, TG_PROF_ALL).ns;
            tg_prof_phase info = tg_profiler_phase(p, (tg_phase)ph);
            share[ph][r] = info.op_ns > 0 ? attn / info.op_ns : 0.0;
        }
        tg_profiler_free(p);
        if (st) return st;
    }
    /* medians: one profiled run is at the mercy of a busy machine */
    for (int ph = 0; ph < TG_PHASE_COUNT; ph++) qsort(share[ph], SPEED_REPS, sizeof(double), cmp_double);
    s->sp.prefill_attn_share = share[TG_PHASE_PREFILL][SPEED_REPS / 2];
    s->sp.decode_attn_share = share[TG_PHASE_DECODE][SPEED_REPS / 2];
    return TG_OK;
}

/* ---- both models -------------------------------------------------------------- */

typedef struct agreement {
    size_t n, top1;
    double kl;
} agreement;

/* Same vocabulary: the same token strings in the same order. */
static int same_vocab(const tg_vocab *a, const tg_vocab *b) {
    if (a->n_tokens != b->n_tokens) return 0;
    for (int i = 0; i < a->n_tokens; i++)
        if (strcmp(a->tokens[i], b->tokens[i])) return 0;
    return 1;
}

/* Part 6: both models over the same windows, chunk by chunk. */
static tg_status agree(side *a, side *b, int N, float *la, float *lb, agreement *out,
                       tg_err *err) {
    memset(out, 0, sizeof *out);
    int V = a->cfg->n_vocab < b->cfg->n_vocab ? a->cfg->n_vocab : b->cfg->n_vocab;
    const int *ids = a->ids;
    for (size_t w0 = 0; w0 < a->n_ids; w0 += (size_t)N) {
        int n = a->n_ids - w0 < (size_t)N ? (int)(a->n_ids - w0) : N;
        if (n < 2) break;
        for (int c0 = 0; c0 < n - 1; c0 += CHUNK) {
            int T = n - 1 - c0 < CHUNK ? n - 1 - c0 : CHUNK;
            tg_status st = tg_gpt_forward(a->rc.gpt, ids + w0 + c0, T, c0, la, 1, err);
            if (!st) st = tg_gpt_forward(b->rc.gpt, ids + w0 + c0, T, c0, lb, 1, err);
            if (st) return st;
            for (int t = 0; t < T; t++) {
                const float *ra = la + (size_t)t * a->cfg->n_vocab,
                            *rb = lb + (size_t)t * b->cfg->n_vocab;
                out->top1 += tg_argmax(ra, V) == tg_argmax(rb, V);
                out->kl += tg_kl(ra, rb, V);
                out->n++;
            }
        }
    }
    return TG_OK;
}

/* ---- output -------------------------------------------------------------------- */

static double safe_div(double a, double b) { return b > 0 ? a / b : NAN; }

static void print_text(side *sd[2], int N, const int b[N_BUCKETS + 1], int do_agree,
                       const agreement *ag, size_t head_tokens) {
    printf("== 1. configuration\n%-22s %14s %14s\n", "", "A", "B");
    const char *rows[] = {"layers", "heads", "kv heads", "head size", "width", "context", "vocab",
                          "parameters", "KV bytes/token", "KV bytes/context"};
    for (int r = 0; r < 10; r++) {
        printf("%-22s", rows[r]);
        for (int i = 0; i < 2; i++) {
            const tg_gpt2_config *c = sd[i]->cfg;
            long kvt = (long)tg_gpt_kv_bytes_per_token(sd[i]->rc.gpt);
            long v[] = {c->n_layer, c->n_head, tg_config_n_kv_head(c), tg_config_head_dim(c),
                        c->n_embd, c->n_ctx, c->n_vocab, (long)sd[i]->n_params, kvt,
                        kvt * c->n_ctx};
            printf(" %14ld", v[r]);
        }
        printf("\n");
    }
    printf("A = %s\nB = %s\n", sd[0]->path, sd[1]->path);
    if (sd[0]->cfg->n_embd != sd[1]->cfg->n_embd || sd[0]->n_params != sd[1]->n_params)
        printf("warning: width or parameter count differ: the comparison is confounded\n");

    printf("\n== 2. quality on the text (windows of %d tokens)\n%-22s %14s %14s\n", N, "", "A", "B");
    printf("%-22s %14zu %14zu\n", "tokens scored", sd[0]->q.tokens, sd[1]->q.tokens);
    double npt[2], npb[2];
    for (int i = 0; i < 2; i++) {
        npt[i] = safe_div(sd[i]->q.nats, (double)sd[i]->q.tokens);
        npb[i] = safe_div(sd[i]->q.nats, (double)sd[i]->q.bytes);
    }
    printf("%-22s %14.4f %14.4f\n", "nats/token", npt[0], npt[1]);
    printf("%-22s %14.3f %14.3f\n", "perplexity", exp(npt[0]), exp(npt[1]));
    printf("%-22s %14.4f %14.4f\n", "nats/byte", npb[0], npb[1]);
    for (int k = 0; k < N_BUCKETS; k++) {
        char label[48];
        snprintf(label, sizeof label, "loss @ pos %d-%d", b[k], b[k + 1] - 1);
        printf("%-22s", label);
        for (int i = 0; i < 2; i++)
            printf(" %14.4f", safe_div(sd[i]->q.bucket_nats[k], (double)sd[i]->q.bucket_n[k]));
        printf("\n");
    }
    printf("%-22s", "in-context score");
    for (int i = 0; i < 2; i++)
        printf(" %14.4f", safe_div(sd[i]->q.bucket_nats[3], (double)sd[i]->q.bucket_n[3]) -
                              safe_div(sd[i]->q.bucket_nats[0], (double)sd[i]->q.bucket_n[0]));
    printf("\n  (late-window loss minus early-window loss: negative = the context helps)\n");

    printf("\n== 3. speed at context %d\n%-22s %14s %14s\n", N, "", "A", "B");
    printf("%-22s %14.0f %14.0f\n", "prefill tok/s", sd[0]->sp.prefill_tps, sd[1]->sp.prefill_tps);
    printf("%-22s %14.0f %14.0f\n", "decode tok/s", sd[0]->sp.decode_tps, sd[1]->sp.decode_tps);
    printf("%-22s %13.1f%% %13.1f%%\n", "attention, prefill", 100 * sd[0]->sp.prefill_attn_share,
           100 * sd[1]->sp.prefill_attn_share);
    printf("%-22s %13.1f%% %13.1f%%\n", "attention, decode", 100 * sd[0]->sp.decode_attn_share,
           100 * sd[1]->sp.decode_attn_share);

    printf("\n== 4. heads (metrics on the first %zu tokens; induction on repeated random tokens)\n",
           head_tokens);
    for (int i = 0; i < 2; i++) {
        side *s = sd[i];
        printf("%s: baseline loss %.4f\n", s->name, s->base_loss);
        printf("  %5s %4s %3s %8s %8s %8s %8s %8s %8s  %s\n", "layer", "head", "kv", "entropy",
               "conf", "sink", "prev", "induct", "Δloss", "class");
        int group = s->cfg->n_head / tg_config_n_kv_head(s->cfg); /* query heads per KV head */
        for (int l = 0; l < s->cfg->n_layer; l++)
            for (int h = 0; h < s->cfg->n_head; h++) {
                const tg_head_stats *hs = &s->heads[l * s->cfg->n_head + h];
                printf("  %5d %4d %3d %8.3f %8.3f %8.3f %8.3f %8.3f %+8.4f  %s\n", l, h, h / group,
                       hs->entropy,
                       hs->confidence, hs->sink, hs->prev, hs->induction,
                       s->ablate[l * s->cfg->n_head + h] - s->base_loss, tg_head_class(hs));
            }
    }

    printf("\n== 5. one head per layer (loss on the same tokens)\n");
    for (int i = 0; i < 2; i++) {
        side *s = sd[i];
        int H = s->cfg->n_head;
        if (H == 1) {
            printf("%s: single-head model, nothing to choose\n", s->name);
            continue;
        }
        printf("%s: %5s %12s %12s %12s %10s\n", s->name, "layer", "all heads", "best head",
               "random head", "best is");
        for (int l = 0; l < s->cfg->n_layer; l++) {
            int best = 0;
            double mean = 0.0;
            for (int h = 0; h < H; h++) {
                mean += s->only[l * H + h] / H;
                if (s->only[l * H + h] < s->only[l * H + best]) best = h;
            }
            printf("   %5d %12.4f %12.4f %12.4f %10d\n", l, s->base_loss, s->only[l * H + best],
                   mean, best);
        }
    }
    printf("  (random head: the mean over the layer's heads, the expected loss of a random pick)\n");

    printf("\n== 6. agreement on the text\n");
    if (!do_agree)
        printf("skipped (--no-agreement)\n");
    else
        printf("top-1 agreement %.4f   mean KL(A||B) %.5f nats   over %zu positions\n",
               safe_div((double)ag->top1, (double)ag->n), safe_div(ag->kl, (double)ag->n), ag->n);
    printf("\n%s", legend);
}

/* JSON numbers: NaN (an empty bucket) becomes null. */
static void jnum(const char *key, double v, int comma) {
    if (isfinite(v)) printf("\"%s\": %.9g%s", key, v, comma ? ", " : "");
    else printf("\"%s\": null%s", key, comma ? ", " : "");
}

static void json_str(const char *s) {
    putchar('"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') printf("\\%c", *s);
        else if ((unsigned char)*s < 0x20) printf("\\u%04x", *s);
        else putchar(*s);
    }
    putchar('"');
}

static void print_json(side *sd[2], int N, const int b[N_BUCKETS + 1], int do_agree,
                       const agreement *ag, size_t head_tokens) {
    printf("{\"window\": %d, \"head_tokens\": %zu, \"models\": [", N, head_tokens);
    for (int i = 0; i < 2; i++) {
        side *s = sd[i];
        const tg_gpt2_config *c = s->cfg;
        int H = c->n_head;
        printf("%s{\"name\": \"%s\", \"path\": ", i ? ", " : "", s->name);
        json_str(s->path);
        size_t kvt = tg_gpt_kv_bytes_per_token(s->rc.gpt);
        printf(", \"arch\": \"%s\", \"n_layer\": %d, \"n_head\": %d, \"n_kv_head\": %d, "
               "\"head_size\": %d, \"n_embd\": %d, \"n_ctx\": %d, \"n_vocab\": %d, \"n_params\": %zu, "
               "\"kv_bytes_per_token\": %zu, \"kv_bytes_context\": %zu, ",
               tg_arch_name(c->arch), c->n_layer, H, tg_config_n_kv_head(c), tg_config_head_dim(c),
               c->n_embd, c->n_ctx, c->n_vocab, s->n_params, kvt, kvt * (size_t)c->n_ctx);
        double npt = safe_div(s->q.nats, (double)s->q.tokens);
        printf("\"quality\": {\"tokens\": %zu, \"bytes\": %zu, ", s->q.tokens, s->q.bytes);
        jnum("nats_per_token", npt, 1);
        jnum("perplexity", exp(npt), 1);
        jnum("nats_per_byte", safe_div(s->q.nats, (double)s->q.bytes), 1);
        printf("\"by_position\": [");
        for (int k = 0; k < N_BUCKETS; k++) {
            printf("%s{\"from\": %d, \"to\": %d, \"tokens\": %zu, ", k ? ", " : "", b[k],
                   b[k + 1] - 1, s->q.bucket_n[k]);
            jnum("nats_per_token", safe_div(s->q.bucket_nats[k], (double)s->q.bucket_n[k]), 0);
            printf("}");
        }
        printf("], ");
        jnum("in_context_score",
             safe_div(s->q.bucket_nats[3], (double)s->q.bucket_n[3]) -
                 safe_div(s->q.bucket_nats[0], (double)s->q.bucket_n[0]), 0);
        printf("}, \"speed\": {");
        jnum("prefill_tok_s", s->sp.prefill_tps, 1);
        jnum("decode_tok_s", s->sp.decode_tps, 1);
        jnum("prefill_attention_share", s->sp.prefill_attn_share, 1);
        jnum("decode_attention_share", s->sp.decode_attn_share, 0);
        printf("}, ");
        jnum("baseline_loss", s->base_loss, 1);
        printf("\"heads\": [");
        for (int l = 0; l < c->n_layer; l++)
            for (int h = 0; h < H; h++) {
                const tg_head_stats *hs = &s->heads[l * H + h];
                printf("%s{\"layer\": %d, \"head\": %d, \"kv_head\": %d, ", l || h ? ", " : "", l, h,
                       h / (H / tg_config_n_kv_head(c)));
                jnum("entropy", hs->entropy, 1);
                jnum("confidence", hs->confidence, 1);
                jnum("sink", hs->sink, 1);
                jnum("prev", hs->prev, 1);
                jnum("local", hs->local, 1);
                jnum("induction", hs->induction, 1);
                jnum("ablation_loss", s->ablate[l * H + h], 1);
                jnum("ablation_delta", s->ablate[l * H + h] - s->base_loss, 1);
                if (H > 1) jnum("only_head_loss", s->only[l * H + h], 1);
                printf("\"class\": \"%s\"}", tg_head_class(hs));
            }
        printf("], \"layers\": [");
        for (int l = 0; l < c->n_layer && H > 1; l++) {
            int best = 0;
            double mean = 0.0;
            for (int h = 0; h < H; h++) {
                mean += s->only[l * H + h] / H;
                if (s->only[l * H + h] < s->only[l * H + best]) best = h;
            }
            printf("%s{\"layer\": %d, \"best_head\": %d, ", l ? ", " : "", l, best);
            jnum("best_head_loss", s->only[l * H + best], 1);
            jnum("random_head_loss", mean, 0);
            printf("}");
        }
        printf("]}");
    }
    printf("], \"agreement\": ");
    if (!do_agree) {
        printf("null}\n");
        return;
    }
    printf("{\"positions\": %zu, ", ag->n);
    jnum("top1", safe_div((double)ag->top1, (double)ag->n), 1);
    jnum("kl", safe_div(ag->kl, (double)ag->n), 0);
    printf("}}\n");
}

/* ---- the command --------------------------------------------------------------- */

static void side_free(side *s) {
    free(s->ids);
    free(s->heads);
    free(s->ablate);
    free(s->only);
    run_close(&s->rc);
    pthread_mutex_destroy(&s->mu);
}

static int write_maps(side *s, const char *dir, const char *prompt, tg_err *err) {
    int *ids = NULL;
    size_t n = 0;
    attn_map m = {0};
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.svg", dir, s->name);
    tg_status st = tg_tokenizer_encode(s->rc.tok, prompt, strlen(prompt), 1, &ids, &n, err);
    if (!st && (n == 0 || n > (size_t)tg_gpt_n_ctx(s->rc.gpt)))
        st = tg_fail(err, TG_ERR_RANGE, "compare: the prompt has %zu tokens (need 1..%d)", n,
                     tg_gpt_n_ctx(s->rc.gpt));
    if (!st) st = attn_capture(&m, s->rc.gpt, s->rc.tok, ids, (int)n, err);
    attn_svg_opts so = {.title = s->path, .layer = -1, .head = -1};
    if (!st) st = attn_write_svg(&m, path, &so, err);
    if (!st) fprintf(stderr, "wrote %s\n", path);
    attn_map_free(&m);
    free(ids);
    return st;
}

/* A and B; a lone "-" is no model name. */
static int take_model(const char *cmd, const cli_opt *o, const char *flag, const char *a) {
    (void)flag;
    const char **paths = o->dst;
    if (a[0] == '-') return 1;
    if (*o->n == 2) return cli_usage(cmd, "three models given ('%s'); compare takes two", a), -1;
    paths[(*o->n)++] = a;
    return 0;
}

int cmd_compare(int argc, char **argv) {
    int task_rc = task_compare_maybe(argc, argv); /* two task models: tools/task_heads.c */
    if (task_rc >= 0) return task_rc;
    const char *paths[2] = {NULL, NULL}, *text_path = NULL, *prompt = DEFAULT_PROMPT, *svg = NULL;
    long ctx = 0, threads = 1, head_tokens = 2048, seed = 1;
    int json = 0, do_agree = 1, n_paths = 0;
    run_opts ro = {0};
    const cli_opt opts[] = {
        {CLI_STR("-f", "--file", &text_path)},
        {CLI_MAX_INPUT_OPT},
        {CLI_STR("-p", "--prompt", &prompt)},
        {CLI_INT("--ctx", NULL, &ctx, 2, 1 << 24)},
        {CLI_STR("--svg", NULL, &svg)},
        {CLI_FLAG("--json", NULL, &json, 1)},
        {CLI_INT("--head-tokens", NULL, &head_tokens, 2, 10000000)},
        {CLI_INT("--seed", NULL, &seed, 0, 0x7fffffffL)},
        {CLI_FLAG("--no-agreement", NULL, &do_agree, 0)},
        {CLI_INT("-t", "--threads", &threads, 1, 1024)},
        {CLI_STR("--isa", NULL, &ro.isa)},
        {RUN_OPT_NO_CHECK(&ro.no_check)},
        {RUN_OPT_TOKENIZER(&ro.tokenizer)},
        {CLI_ARGS(take_model, paths), .n = &n_paths},
        {0},
    };
    int parsed = cli_parse(CMD, help, opts, argc, argv);
    if (parsed != CLI_RUN) return parsed;
    if (n_paths != 2) return cli_usage(CMD, "two models are needed (tinygpt compare A B -f TEXT)");
    if (!text_path) return cli_usage(CMD, "-f TEXT is required (the text both models are scored on)");
    if (svg && !*svg) return cli_usage(CMD, "--svg: the folder name is empty");
    for (int i = 0; svg && i < 2; i++) { /* the names write_maps derives */
        char p[4096];
        snprintf(p, sizeof p, "%s/%c.svg", svg, 'A' + i);
        if ((parsed = cli_out_check(CMD, "--svg", p))) return parsed;
    }
    ro.n_threads = (int)threads;

    tg_err err = {{0}};
    size_t len = 0;
    char *text = cli_read_file(text_path, &len, &err);
    if (!text) return cli_error(CMD, "%s", err.msg);

    side S[2];
    side *sd[2] = {&S[0], &S[1]};
    memset(S, 0, sizeof S);
    int code = EXIT_OK;
    float *la = NULL, *lb = NULL;
    for (int i = 0; i < 2; i++) {
        S[i].path = paths[i];
        snprintf(S[i].name, sizeof S[i].name, "%c", 'A' + i);
        pthread_mutex_init(&S[i].mu, NULL);
    }
    for (int i = 0; i < 2; i++)
        if ((code = run_open(&S[i].rc, CMD, paths[i], &ro))) goto done;
    int N = tg_gpt_n_ctx(S[0].rc.gpt) < tg_gpt_n_ctx(S[1].rc.gpt) ? tg_gpt_n_ctx(S[0].rc.gpt)
                                                                   : tg_gpt_n_ctx(S[1].rc.gpt);
    if (ctx > N) {
        code = cli_usage(CMD, "--ctx: %ld is larger than the smaller context, %d", ctx, N);
        goto done;
    }
    if (ctx) N = (int)ctx;
    if (do_agree && !same_vocab(&S[0].rc.model.vocab, &S[1].rc.model.vocab)) {
        code = cli_error(CMD,
                         "%s and %s have different vocabularies: agreement (top-1, KL) needs "
                         "the same tokens; pass --no-agreement to compare the rest",
                         paths[0], paths[1]);
        goto done;
    }
    size_t maxV = 0;
    for (int i = 0; i < 2; i++) {
        side *s = &S[i];
        s->cfg = tg_gpt_config(s->rc.gpt);
        s->n_params = tg_model_n_params(&s->rc.model);
        if ((size_t)s->cfg->n_vocab > maxV) maxV = (size_t)s->cfg->n_vocab;
        if (tg_tokenizer_encode(s->rc.tok, text, len, 0, &s->ids, &s->n_ids, &err)) {
            code = cli_error(CMD, "%s: %s", text_path, err.msg);
            goto done;
        }
        if (s->n_ids < 2) {
            code = cli_error(CMD, "%s is %zu token%s long for %s; at least 2 are needed", text_path,
                             s->n_ids, s->n_ids == 1 ? "" : "s", s->path);
            goto done;
        }
    }
    la = malloc((size_t)CHUNK * maxV * sizeof *la);
    lb = malloc((size_t)CHUNK * maxV * sizeof *lb);
    if (!la || !lb) {
        code = cli_error(CMD, "out of memory");
        goto done;
    }
    int b[N_BUCKETS + 1];
    buckets(N, b);
    for (int i = 0; i < 2; i++) {
        side *s = &S[i];
        quality_acc qa = {s, {0}};
        memcpy(qa.b, b, sizeof b);
        if (scan(s, s->ids, s->n_ids, N, SIZE_MAX, quality_fn, &qa, la, &err) ||
            measure_speed(s, N, la, &err) ||
            analyse_heads(s, N, (size_t)head_tokens, (uint64_t)seed, la, &err)) {
            code = cli_error(CMD, "%s: %s", s->path, err.msg);
            goto done;
        }
    }
    agreement ag = {0};
    if (do_agree && agree(&S[0], &S[1], N, la, lb, &ag, &err)) {
        code = cli_error(CMD, "%s", err.msg);
        goto done;
    }
    if (json) print_json(sd, N, b, do_agree, &ag, (size_t)head_tokens);
    else print_text(sd, N, b, do_agree, &ag, (size_t)head_tokens);
    fflush(stdout);
    for (int i = 0; i < 2 && svg; i++)
        if (write_maps(&S[i], svg, prompt, &err)) {
            code = cli_error(CMD, "%s", err.msg);
            goto done;
        }
    if (ferror(stdout)) code = cli_error(CMD, "writing the output failed");
done:
    for (int i = 0; i < 2; i++) side_free(&S[i]);
    free(la);
    free(lb);
    free(text);
    return code;
}
