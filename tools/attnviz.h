/* attnviz.h — capture every head's attention weights over a prompt through
 * the forward pass's probe hook, and show them: labelled bars in the
 * terminal, a grid of heatmaps (layers × heads) as SVG, or JSON. */
#ifndef TINYGPT_TOOLS_ATTNVIZ_H
#define TINYGPT_TOOLS_ATTNVIZ_H

#include <stdio.h>

#include "model/analysis.h"
#include "model/gpt.h"
#include "model/tokenizer.h"

typedef struct attn_map {
    int L, H, T;
    float *w;       /* [L, H, T, T]: w[l][h][q][k] for k <= q, 0 above the diagonal */
    int *ids;       /* [T] */
    char **labels;  /* [T] printable, valid UTF-8 labels of the token pieces */
} attn_map;

/* Runs ids[T] (positions 0..T-1) through g with a capturing probe attached
 * (tg_attention_capture, model/analysis.h) and labels the tokens with tok's
 * pieces (tok NULL: empty labels, the caller sets them). */
tg_status attn_capture(attn_map *m, tg_gpt *g, const tg_tokenizer *tok, const int *ids, int T,
                       tg_err *err);
void attn_map_free(attn_map *m);

static inline const float *attn_row(const attn_map *m, int l, int h, int q) {
    return m->w + (((size_t)l * m->H + h) * m->T + q) * m->T;
}

/* A token piece as a printable label: a space as · (so " the" and "the"
 * differ on screen), newline, tab and other controls as \n \t \xHH,
 * invalid UTF-8 bytes as \xHH. malloc'd. */
char *attn_label(const char *piece, size_t len);

/* For query q: each selected head's weights over the tokens as bars.
 * layer/head = -1 selects all. */
void attn_print_bars(FILE *f, const attn_map *m, int layer, int head, int q);

/* What attn_write_svg draws. */
typedef struct attn_svg_opts {
    const char *title;  /* first line of the title (the model), or NULL */
    int log_scale;      /* colour by log10 of the weight, so sinks do not wash out the rest */
    int layer, head;    /* only this layer / head; -1: all */
} attn_svg_opts;

/* Maps of at most this many tokens are drawn cell by cell (each with a
 * tooltip); longer ones as one PNG per head (T × T pixels). */
#define ATTN_SVG_RECT_MAX_T 64

/* Writes the selected layers × heads grid of T × T heatmaps (atomically),
 * with token labels (every k-th one when the cells are small) and a colour
 * scale. */
tg_status attn_write_svg(const attn_map *m, const char *path, const attn_svg_opts *o,
                         tg_err *err);

/* The checks and the end that `tinygpt attention` shares with its task
 * form (tools/task_heads.c). attn_check_selection: --layer/--head within
 * the model (-1: all), else a usage error; attn_finish: stdout flushed and
 * checked (a failed write is an error, and no SVG), then the SVG when svg is
 * set ("wrote FILE" on stderr). Both return an exit code (EXIT_OK: go on). */
int attn_check_selection(const char *cmd, int n_layer, int n_head, long layer, long head);
int attn_finish(const char *cmd, const attn_map *m, const char *svg, const attn_svg_opts *o);

/* Prints the map as JSON: tokens, pieces, weights[L][H][T][T]. */
void attn_print_json(FILE *f, const attn_map *m);

#endif
