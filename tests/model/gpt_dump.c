/* gpt_dump.c — test driver for the PyTorch oracle (gpt_oracle.py): runs the
 * forward pass over a token list in a chosen schedule of batches and writes
 * the logits (and, with --probe, the attention weights) as raw float32.
 *
 *   gpt_dump MODEL TOKENS.i32 OUT.f32 [--isa ISA] [-t N] [--chunks A,B,...]
 *            [--last-only] [--probe ATTN.f32] [--mask L:H,...]
 *   gpt_dump --isas            (prints the ISAs this CPU supports)
 *   gpt_dump --bf16-act ISA    (prints 1 if that ISA's BF16 GEMM rounds X
 *                               to bfloat16: tg_engine.bf16_act)
 *
 *            [--rope-halves] [--resave OUT.gguf DTYPE] [--kv-f16]
 *
 * MODEL is anything tg_model_load reads (GPT-2 or Llama), or a .tgraw file: this driver's own
 * flat dump (see load_raw), which tests the forward pass independently of
 * the file loaders. --chunks: batch sizes in order, the last one repeated
 * (T = prefill all at once, "1" = decode token by token, "5,1" = prefill 5
 * then decode). OUT holds logits[rows, V]: every position, or with
 * --last-only the last of each batch. ATTN holds p[L, H, N, N] (query,
 * key; zero above the diagonal). Llama only: --rope-halves reads the Q/K
 * rows as Hugging Face's halves order (a GGUF cannot say so: the test
 * writes one unpermuted); --resave writes the loaded model back with
 * tg_llama_save in DTYPE (f32|f16|bf16|q8_0|q4_0) before running. --kv-f16:
 * the KV cache holds IEEE halves. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/gpt.h"

static int die(const char *msg, const char *what) {
    fprintf(stderr, "gpt_dump: %s%s%s\n", msg, what ? ": " : "", what ? what : "");
    return 1;
}

static void *read_all(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *buf = malloc(n > 0 ? (size_t)n : 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *len = (size_t)n;
    return buf;
}

/* .tgraw: "TGRAW1\0\0", int32 L H E C V F tied, float32 eps, then float32
 * tensors in the order below ([OUT, IN] matrices). */
static int load_raw(tg_gpt2_model *m, const char *path, float **blob) {
    size_t len;
    char *buf = read_all(path, &len);
    if (!buf || len < 40 || memcmp(buf, "TGRAW1", 6)) return die("not a tgraw file", path);
    int32_t h[7];
    memcpy(h, buf + 8, sizeof h);
    memset(m, 0, sizeof *m);
    tg_gpt2_config *c = &m->cfg;
    c->n_layer = h[0], c->n_head = h[1], c->n_embd = h[2], c->n_ctx = h[3];
    c->n_vocab = h[4], c->n_ff = h[5];
    memcpy(&c->ln_eps, buf + 36, 4);
    int tied = h[6];
    size_t E = (size_t)c->n_embd, F = (size_t)c->n_ff, V = (size_t)c->n_vocab;
    size_t per_layer = 2 * E + 3 * E * E + 3 * E + E * E + E + 2 * E + F * E + F + E * F + E;
    size_t n = V * E + (size_t)c->n_ctx * E + (size_t)c->n_layer * per_layer + 2 * E +
               (tied ? 0 : V * E);
    if (len != 40 + n * 4) {
        free(buf);
        return die("tgraw size does not match its header", path);
    }
    float *p = malloc(n * 4);
    memcpy(p, buf + 40, n * 4);
    free(buf);
    *blob = p;
    tg_gpt2_weights *w = &m->w;
    int iE = (int)E, iF = (int)F;
    w->wte = tg_weight_f32(p, (int)V, iE), p += V * E;
    w->wpe = p, p += (size_t)c->n_ctx * E;
    w->layers = calloc((size_t)c->n_layer, sizeof *w->layers);
    for (int l = 0; l < c->n_layer; l++) {
        tg_gpt2_layer *y = &w->layers[l];
        y->ln1_w = p, p += E;
        y->ln1_b = p, p += E;
        y->qkv_w = tg_weight_f32(p, 3 * iE, iE), p += 3 * E * E;
        y->qkv_b = p, p += 3 * E;
        y->proj_w = tg_weight_f32(p, iE, iE), p += E * E;
        y->proj_b = p, p += E;
        y->ln2_w = p, p += E;
        y->ln2_b = p, p += E;
        y->up_w = tg_weight_f32(p, iF, iE), p += F * E;
        y->up_b = p, p += F;
        y->down_w = tg_weight_f32(p, iE, iF), p += E * F;
        y->down_b = p, p += E;
    }
    w->lnf_w = p, p += E;
    w->lnf_b = p, p += E;
    w->lm_head = tied ? w->wte : tg_weight_f32(p, (int)V, iE);
    w->tied = tied;
    m->has_weights = 1;
    return 0;
}

typedef struct attn_dump {
    float *p; /* [L, H, N, N] */
    int L, H, N;
} attn_dump;

static void on_attn(void *user, int layer, int head, int qpos, const float *p, int n_pos) {
    attn_dump *a = user;
    if (qpos >= a->N || n_pos > a->N) return;
    float *row = a->p + (((size_t)layer * a->H + head) * a->N + qpos) * a->N;
    memcpy(row, p, (size_t)n_pos * sizeof *p);
}

int main(int argc, char **argv) {
    if (argc == 2 && !strcmp(argv[1], "--isas")) {
        for (int i = 0; i < TG_ISA_COUNT; i++)
            if (tg_isa_supported((tg_isa)i)) printf("%s\n", tg_isa_name((tg_isa)i));
        return 0;
    }
    if (argc == 3 && !strcmp(argv[1], "--bf16-act")) {
        tg_isa i;
        tg_engine e;
        tg_err err;
        if (tg_isa_parse(argv[2], &i) != TG_OK || tg_engine_init(&e, i, &err) != TG_OK)
            return die("unknown or unsupported ISA", argv[2]);
        printf("%d\n", e.bf16_act);
        return 0;
    }
    if (argc < 4) return die("usage: gpt_dump MODEL TOKENS OUT [options]", NULL);
    const char *model_path = argv[1], *tok_path = argv[2], *out_path = argv[3];
    const char *isa = NULL, *chunks = NULL, *attn_path = NULL, *mask_spec = NULL;
    tg_wtype kv_type = TG_WTYPE_F32;
    const char *resave = NULL, *resave_dtype = NULL;
    int threads = 1, last_only = 0, rope_halves = 0;
    for (int i = 4; i < argc; i++) {
        if (!strcmp(argv[i], "--isa") && i + 1 < argc) isa = argv[++i];
        else if (!strcmp(argv[i], "-t") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--chunks") && i + 1 < argc) chunks = argv[++i];
        else if (!strcmp(argv[i], "--probe") && i + 1 < argc) attn_path = argv[++i];
        else if (!strcmp(argv[i], "--mask") && i + 1 < argc) mask_spec = argv[++i];
        else if (!strcmp(argv[i], "--last-only")) last_only = 1;
        else if (!strcmp(argv[i], "--rope-halves")) rope_halves = 1;
        else if (!strcmp(argv[i], "--kv-f16")) kv_type = TG_WTYPE_F16;
        else if (!strcmp(argv[i], "--resave") && i + 2 < argc) {
            resave = argv[++i];
            resave_dtype = argv[++i];
        }
        else return die("unknown option", argv[i]);
    }

    tg_gpt2_model m;
    tg_err err = {{0}};
    float *blob = NULL;
    size_t n = strlen(model_path);
    if (n > 6 && !strcmp(model_path + n - 6, ".tgraw")) {
        if (load_raw(&m, model_path, &blob)) return 1;
    } else if (tg_model_load(&m, model_path, 0, &err)) {
        return die("load", err.msg);
    }
    if (rope_halves) m.cfg.rope_pairs = TG_ROPE_HALVES;
    if (resave) {
        tg_dtype dt;
        if (m.cfg.arch != TG_ARCH_LLAMA) return die("--resave needs a llama model", model_path);
        if (tg_dtype_parse(resave_dtype, &dt)) return die("bad --resave dtype", resave_dtype);
        if (tg_llama_save(resave, &m.cfg, &m.llama, &m.vocab, (int)dt, &err))
            return die("resave", err.msg);
    }

    size_t tlen;
    int32_t *tokens = read_all(tok_path, &tlen);
    int N = (int)(tlen / 4);
    if (!tokens || N < 1) return die("no tokens in", tok_path);

    tg_gpt *g;
    tg_gpt_opts opts = {threads, isa, 0, kv_type};
    if (tg_gpt_create(&g, &m, &opts, &err)) return die("create", err.msg);
    const tg_gpt2_config *c = tg_gpt_config(g);
    int V = c->n_vocab;

    attn_dump ad = {NULL, c->n_layer, c->n_head, N};
    if (attn_path) {
        ad.p = calloc((size_t)ad.L * ad.H * N * N, sizeof(float));
        tg_probe probe = {.user = &ad, .attn = on_attn};
        tg_gpt_set_probe(g, &probe);
    }
    if (mask_spec) {
        uint8_t *mask = malloc((size_t)c->n_layer * c->n_head);
        memset(mask, 1, (size_t)c->n_layer * c->n_head);
        for (const char *s = mask_spec; *s;) {
            int l, h, used;
            if (sscanf(s, "%d:%d%n", &l, &h, &used) != 2 || l < 0 || l >= c->n_layer || h < 0 ||
                h >= c->n_head)
                return die("bad --mask", mask_spec);
            mask[l * c->n_head + h] = 0;
            s += used;
            if (*s == ',') s++;
        }
        if (tg_gpt_set_head_mask(g, mask, &err)) return die("mask", err.msg);
        free(mask);
    }

    int sched[64], n_sched = 0;
    for (const char *s = chunks ? chunks : "0"; *s;) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || n_sched == 64 || (*end && *end != ',')) return die("bad --chunks", chunks);
        sched[n_sched++] = (int)v;
        s = *end ? end + 1 : end;
    }

    float *logits = malloc((size_t)N * V * sizeof(float));
    FILE *out = fopen(out_path, "wb");
    if (!logits || !out) return die("cannot write", out_path);
    int rc = 0;
    for (int pos = 0, k = 0; pos < N; k++) {
        int T = sched[k < n_sched ? k : n_sched - 1];
        if (T <= 0 || T > N - pos) T = N - pos;
        if (tg_gpt_forward(g, tokens + pos, T, pos, logits, !last_only, &err)) {
            rc = die("forward", err.msg);
            break;
        }
        size_t rows = last_only ? 1 : (size_t)T;
        fwrite(logits, sizeof(float), rows * V, out);
        pos += T;
    }
    if (fclose(out)) rc = die("cannot write", out_path);
    if (attn_path && !rc) {
        FILE *f = fopen(attn_path, "wb");
        if (!f || fwrite(ad.p, sizeof(float), (size_t)ad.L * ad.H * N * N, f) == 0)
            rc = die("cannot write", attn_path);
        if (f) fclose(f);
    }
    free(ad.p);
    free(logits);
    free(tokens);
    tg_gpt_free(g);
    if (blob) {
        free((void *)m.w.layers);
        free(blob);
    } else {
        tg_gpt2_free(&m);
    }
    return rc;
}
