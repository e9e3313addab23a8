/* attnviz.c — attention capture and rendering (see attnviz.h). */
#include "tools/attnviz.h"

#include <math.h>
#include <png.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cli.h"

void attn_map_free(attn_map *m) {
    if (m->labels)
        for (int t = 0; t < m->T; t++) free(m->labels[t]);
    free(m->labels);
    free(m->ids);
    free(m->w);
    memset(m, 0, sizeof *m);
}

tg_status attn_capture(attn_map *m, tg_gpt *g, const tg_tokenizer *tok, const int *ids, int T,
                       tg_err *err) {
    memset(m, 0, sizeof *m);
    tg_attention a;
    tg_status s = tg_attention_capture(g, ids, T, &a, err);
    if (s) return s;
    m->L = a.n_layer, m->H = a.n_head, m->T = T;
    m->w = a.w; /* the map owns the weights now */
    m->ids = malloc((size_t)T * sizeof *m->ids);
    m->labels = calloc((size_t)T, sizeof *m->labels);
    if (!m->ids || !m->labels) {
        s = tg_fail(err, TG_ERR_NOMEM, "attention: out of memory for %d tokens", T);
        goto done;
    }
    memcpy(m->ids, ids, (size_t)T * sizeof *ids);
    for (int t = 0; t < T; t++) {
        size_t len = 0;
        const char *piece = tok ? tg_tokenizer_piece(tok, ids[t], &len) : NULL; /* NULL: caller labels */
        if (!(m->labels[t] = attn_label(piece ? piece : "", piece ? len : 0))) {
            s = tg_fail(err, TG_ERR_NOMEM, "attention: out of memory");
            goto done;
        }
    }
done:
    if (s) attn_map_free(m);
    return s;
}

/* Length of the valid UTF-8 character at p (1..4), or 0 if invalid. */
static int utf8_char(const unsigned char *p, size_t n) {
    if (p[0] < 0x80) return 1;
    int len = p[0] >= 0xF0 && p[0] <= 0xF4 ? 4 : p[0] >= 0xE0 ? 3 : p[0] >= 0xC2 ? 2 : 0;
    if (p[0] > 0xF4 || len == 0 || (size_t)len > n) return 0;
    for (int i = 1; i < len; i++)
        if ((p[i] & 0xC0) != 0x80) return 0;
    unsigned cp = p[0] & (0x7F >> len);
    for (int i = 1; i < len; i++) cp = cp << 6 | (p[i] & 0x3F);
    if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return len;
}

char *attn_label(const char *piece, size_t len) {
    char *out = malloc(len * 4 + 1), *o = out;
    if (!out) return NULL;
    const unsigned char *p = (const unsigned char *)piece;
    for (size_t i = 0; i < len;) {
        int n = utf8_char(p + i, len - i);
        if (n == 1 && p[i] == ' ') o += sprintf(o, "\u00b7"); /* a visible space: ·the */
        else if (n == 1 && p[i] == '\n') o += sprintf(o, "\\n");
        else if (n == 1 && p[i] == '\t') o += sprintf(o, "\\t");
        else if (n == 0 || (n == 1 && (p[i] < 0x20 || p[i] == 0x7F))) o += sprintf(o, "\\x%02X", p[i]);
        else {
            memcpy(o, p + i, (size_t)n);
            o += n;
        }
        i += n ? (size_t)n : 1;
    }
    *o = 0;
    return out;
}

/* Display width of a UTF-8 label (one column per code point: good enough
 * for aligning the bars of Latin text). */
static int label_cols(const char *s) {
    int cols = 0;
    for (; *s; s++) cols += ((unsigned char)*s & 0xC0) != 0x80;
    return cols;
}

void attn_print_bars(FILE *f, const attn_map *m, int layer, int head, int q) {
    enum { BAR = 40 };
    int lw = 0;
    for (int t = 0; t <= q; t++) lw = label_cols(m->labels[t]) > lw ? label_cols(m->labels[t]) : lw;
    if (lw > 24) lw = 24;
    for (int l = 0; l < m->L; l++) {
        if (layer >= 0 && l != layer) continue;
        for (int h = 0; h < m->H; h++) {
            if (head >= 0 && h != head) continue;
            const float *p = attn_row(m, l, h, q);
            int best = 0;
            for (int k = 1; k <= q; k++) best = p[k] > p[best] ? k : best;
            fprintf(f, "layer %d head %d  query %d \"%s\"  (strongest: %d \"%s\" %.2f)\n", l, h, q,
                    m->labels[q], best, m->labels[best], p[best]);
            for (int k = 0; k <= q; k++) {
                int cells = (int)lrintf(p[k] * BAR * 8); /* eighths of a block */
                fprintf(f, "  %3d %s", k, m->labels[k]);
                for (int pad = label_cols(m->labels[k]); pad < lw; pad++) fputc(' ', f);
                fputs(" │", f);
                for (int c = 0; c < cells / 8; c++) fputs("█", f);
                static const char *const part[8] = {"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"};
                fputs(part[cells % 8], f);
                fprintf(f, " %.3f%s\n", p[k], k == best ? " ◀" : "");
            }
            fputc('\n', f);
        }
    }
}

/* XML-escapes s into f. */
static void xml_text(FILE *f, const char *s) {
    for (; *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        default: fputc(*s, f);
        }
    }
}

/* White (0) to deep blue (1). */
static void colour_rgb(double x, unsigned char rgb[3]) {
    x = x < 0 || x != x ? 0 : x > 1 ? 1 : x;
    rgb[0] = (unsigned char)lrint(255 - (255 - 8) * x);
    rgb[1] = (unsigned char)lrint(255 - (255 - 48) * x);
    rgb[2] = (unsigned char)lrint(255 - (255 - 107) * x);
}

static void colour(FILE *f, double x) {
    unsigned char c[3];
    colour_rgb(x, c);
    fprintf(f, "#%02x%02x%02x", c[0], c[1], c[2]);
}

/* The colour scale's position of weight w: linear, or log10 from 1e-4 to 1. */
static double scale_pos(float w, int log_scale) {
    if (!log_scale) return w;
    return (log10(w > 1e-4f ? w : 1e-4) + 4.0) / 4.0;
}

static const unsigned char MASKED[3] = {0xee, 0xee, 0xee}; /* k > q: no attention */

/* ---- one head's map as a PNG in a data: URI (large T) -------------------- */

typedef struct membuf {
    unsigned char *p;
    size_t n, cap;
    int failed;
} membuf;

static void png_mem_write(png_structp png, png_bytep data, png_size_t len) {
    membuf *b = png_get_io_ptr(png);
    if (b->failed) return;
    if (b->n + len > b->cap) {
        size_t cap = (b->cap ? b->cap * 2 : 1 << 16) + len;
        unsigned char *np = realloc(b->p, cap);
        if (!np) {
            b->failed = 1;
            return;
        }
        b->p = np, b->cap = cap;
    }
    memcpy(b->p + b->n, data, len);
    b->n += len;
}

static void png_mem_flush(png_structp png) { (void)png; }

/* The T × T map of (l, h) as an RGB PNG, one pixel per (query row, key
 * column), into b. 0, or -1 (out of memory or a libpng error). */
static int head_png(const attn_map *m, int l, int h, int log_scale, membuf *b) {
    int T = m->T;
    unsigned char *rgb = malloc((size_t)T * T * 3);
    png_bytep *rows = malloc((size_t)T * sizeof *rows);
    png_structp png = rgb && rows ? png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL)
                                  : NULL;
    png_infop info = png ? png_create_info_struct(png) : NULL;
    int ok = 0;
    if (!info) goto done;
    for (int q = 0; q < T; q++) {
        const float *p = attn_row(m, l, h, q);
        rows[q] = rgb + (size_t)q * T * 3;
        for (int k = 0; k < T; k++)
            if (k > q) memcpy(rows[q] + 3 * k, MASKED, 3);
            else colour_rgb(scale_pos(p[k], log_scale), rows[q] + 3 * k);
    }
    if (setjmp(png_jmpbuf(png))) goto done;
    png_set_write_fn(png, b, png_mem_write, png_mem_flush);
    png_set_IHDR(png, info, (png_uint_32)T, (png_uint_32)T, 8, PNG_COLOR_TYPE_RGB,
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_set_compression_level(png, 9);
    png_write_info(png, info);
    png_write_image(png, rows);
    png_write_end(png, NULL);
    ok = !b->failed;
done:
    if (png) png_destroy_write_struct(&png, info ? &info : NULL);
    free(rows);
    free(rgb);
    return ok ? 0 : -1;
}

static void base64(FILE *f, const unsigned char *p, size_t n) {
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)p[i] << 16 | (i + 1 < n ? (unsigned)p[i + 1] << 8 : 0) |
                     (i + 2 < n ? p[i + 2] : 0);
        fputc(tab[v >> 18 & 63], f);
        fputc(tab[v >> 12 & 63], f);
        fputc(i + 1 < n ? tab[v >> 6 & 63] : '=', f);
        fputc(i + 2 < n ? tab[v & 63] : '=', f);
    }
}

/* ---- the SVG ------------------------------------------------------------- */

/* The layout: every size in SVG pixels. */
typedef struct svg_layout {
    double cell;    /* side of one (query, key) cell */
    double font;    /* token label size */
    int every;      /* label every k-th token */
    double margin;  /* room for the row labels (left) and column labels (below) */
    double tile_w, tile_h;
} svg_layout;

static svg_layout layout(const attn_map *m) {
    int T = m->T, lw = 0;
    for (int t = 0; t < T; t++) lw = label_cols(m->labels[t]) > lw ? label_cols(m->labels[t]) : lw;
    if (lw > 16) lw = 16;
    svg_layout y;
    y.cell = T <= 24 ? 14 : T <= 64 ? 8 : T <= 128 ? 4 : 2.5;
    y.font = y.cell * 0.8 < 7 ? 7 : y.cell * 0.8 > 11 ? 11 : y.cell * 0.8;
    y.every = (int)ceil(y.font * 1.1 / y.cell);
    if (y.every < 1) y.every = 1;
    /* labelled every k-th token: the index goes in front ("40 ·the") */
    int chars = lw + (y.every > 1 ? 4 : 0);
    y.margin = chars * y.font * 0.62 + 8;
    y.tile_w = y.margin + T * y.cell + 16;
    y.tile_h = 18 + T * y.cell + y.margin + 10;
    return y;
}

static void label_text(FILE *f, const attn_map *m, const svg_layout *y, int t) {
    if (y->every > 1) fprintf(f, "%d ", t);
    xml_text(f, m->labels[t]);
}

tg_status attn_write_svg(const attn_map *m, const char *path, const attn_svg_opts *so,
                         tg_err *err) {
    int T = m->T;
    int l0 = so->layer >= 0 ? so->layer : 0, l1 = so->layer >= 0 ? so->layer + 1 : m->L;
    int h0 = so->head >= 0 ? so->head : 0, h1 = so->head >= 0 ? so->head + 1 : m->H;
    if (l0 >= m->L || h0 >= m->H || l1 > m->L || h1 > m->H)
        return tg_fail(err, TG_ERR_ARG, "attention: layer %d / head %d is outside the map",
                       so->layer, so->head);
    /* Up to this many tokens every cell is an element with a tooltip; past
     * it a head is one PNG (T × T pixels), so the file stays small and every
     * renderer takes it (librsvg refuses documents of over 10^6 elements). */
    int as_png = T > ATTN_SVG_RECT_MAX_T;
    svg_layout y = layout(m);
    const char *title = so->title ? so->title : "attention";
    char sub[160];
    snprintf(sub, sizeof sub, "%d token%s; rows: queries, columns: keys; colour: %s", T,
             T == 1 ? "" : "s", so->log_scale ? "log10 weight" : "weight");
    double title_w = 10 + 0.6 * 14 * (double)(label_cols(title) > label_cols(sub) ? label_cols(title)
                                                                                    : label_cols(sub));
    double grid_w = (h1 - h0) * y.tile_w + 20, bar_w = 260;
    double W = grid_w > title_w + 10 ? grid_w : title_w + 10;
    if (W < bar_w + 60) W = bar_w + 60; /* the colour scale and its caption below it */
    double top = 52, grid_h = (l1 - l0) * y.tile_h, Hh = top + grid_h + 62;
    cli_outfile o;
    tg_status s = cli_out_open(&o, path, err);
    if (s) return s;
    FILE *f = o.f;
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
               "<svg xmlns=\"http://www.w3.org/2000/svg\" xmlns:xlink=\"http://www.w3.org/1999/xlink\" "
               "width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" font-family=\"monospace\">\n",
            W, Hh, W, Hh);
    fputs("<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"10\" y=\"20\" "
          "font-size=\"14\">", f);
    xml_text(f, title);
    fprintf(f, "</text>\n<text x=\"10\" y=\"38\" font-size=\"12\">%s</text>\n", sub);
    membuf png = {0};
    for (int l = l0; l < l1; l++)
        for (int h = h0; h < h1; h++) {
            double x0 = 10 + (h - h0) * y.tile_w, y0 = top + (l - l0) * y.tile_h;
            double hx = x0 + y.margin, hy = y0 + 18, side = T * y.cell;
            fprintf(f, "<g>\n<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\">layer %d head %d</text>\n",
                    hx, y0 + 12, l, h);
            if (as_png) {
                png.n = 0;
                if (head_png(m, l, h, so->log_scale, &png)) {
                    free(png.p);
                    cli_out_abort(&o);
                    return tg_fail(err, TG_ERR_NOMEM, "%s: cannot encode the PNG of layer %d head %d",
                                   path, l, h);
                }
                fprintf(f, "<image x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                           "preserveAspectRatio=\"none\" style=\"image-rendering:pixelated\" "
                           "xlink:href=\"data:image/png;base64,",
                        hx, hy, side, side);
                base64(f, png.p, png.n);
                fputs("\"/>\n", f);
            } else {
                fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#eeeeee\"/>\n",
                        hx, hy, side, side);
                for (int q = 0; q < T; q++) {
                    const float *p = attn_row(m, l, h, q);
                    for (int k = 0; k <= q; k++) {
                        fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"",
                                hx + k * y.cell, hy + q * y.cell, y.cell, y.cell);
                        colour(f, scale_pos(p[k], so->log_scale));
                        fprintf(f, "\"><title>q %d ", q);
                        xml_text(f, m->labels[q]);
                        fprintf(f, " → k %d ", k);
                        xml_text(f, m->labels[k]);
                        fprintf(f, ": %.4f</title></rect>\n", p[k]);
                    }
                }
            }
            /* labels: one <text> per labelled row and column */
            for (int t = 0; t < T; t += y.every) {
                double c = t * y.cell + y.cell / 2;
                fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"%.1f\" text-anchor=\"end\" "
                           "dominant-baseline=\"central\">",
                        hx - 3, hy + c, y.font);
                label_text(f, m, &y, t);
                fprintf(f, "</text>\n<text transform=\"translate(%.1f,%.1f) rotate(90)\" "
                           "font-size=\"%.1f\" dominant-baseline=\"central\">",
                        hx + c, hy + side + 3, y.font);
                label_text(f, m, &y, t);
                fputs("</text>\n", f);
            }
            fputs("</g>\n", f);
        }
    free(png.p);
    /* the colour scale */
    double by = top + grid_h + 8;
    fputs("<defs><linearGradient id=\"scale\">", f);
    for (int i = 0; i <= 10; i++) {
        fprintf(f, "<stop offset=\"%d%%\" stop-color=\"", i * 10);
        colour(f, i / 10.0);
        fputs("\"/>", f);
    }
    fprintf(f, "</linearGradient></defs>\n<g font-size=\"10\">\n"
               "<rect x=\"10\" y=\"%.1f\" width=\"%.0f\" height=\"12\" fill=\"url(#scale)\" "
               "stroke=\"#888888\" stroke-width=\"0.5\"/>\n",
            by, bar_w);
    for (int i = 0; i <= 4; i++) {
        double x = 10 + bar_w * i / 4.0;
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#444444\" "
                   "stroke-width=\"0.5\"/><text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">",
                x, by + 12, x, by + 16, x, by + 26);
        if (so->log_scale) fprintf(f, "%s", (const char *[]){"≤1e-4", "1e-3", "0.01", "0.1", "1"}[i]);
        else fprintf(f, "%.2g", i / 4.0);
        fputs("</text>\n", f);
    }
    fprintf(f, "<text x=\"10\" y=\"%.1f\">attention %s; grey: a key after the query</text>\n</g>\n",
            by + 42, so->log_scale ? "weight, log scale" : "weight");
    fputs("</svg>\n", f);
    return cli_out_commit(&o, err);
}

/* A JSON string of a valid-UTF-8 label (attn_label made it valid). */
static void json_str(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') fprintf(f, "\\%c", *s);
        else if ((unsigned char)*s < 0x20) fprintf(f, "\\u%04x", *s);
        else fputc(*s, f);
    }
    fputc('"', f);
}

void attn_print_json(FILE *f, const attn_map *m) {
    fprintf(f, "{\"n_layer\": %d, \"n_head\": %d, \"tokens\": [", m->L, m->H);
    for (int t = 0; t < m->T; t++) fprintf(f, "%s%d", t ? ", " : "", m->ids[t]);
    fputs("], \"pieces\": [", f);
    for (int t = 0; t < m->T; t++) {
        if (t) fputs(", ", f);
        json_str(f, m->labels[t]);
    }
    fputs("], \"weights\": [", f);
    for (int l = 0; l < m->L; l++) {
        fputs(l ? ", [" : "[", f);
        for (int h = 0; h < m->H; h++) {
            fputs(h ? ", [" : "[", f);
            for (int q = 0; q < m->T; q++) {
                fputs(q ? ", [" : "[", f);
                const float *p = attn_row(m, l, h, q);
                for (int k = 0; k <= q; k++)
                    fprintf(f, "%s%s", k ? ", " : "", CLI_JNUM("%.9g", p[k]));
                fputc(']', f);
            }
            fputc(']', f);
        }
        fputc(']', f);
    }
    fputs("]}\n", f);
}

int attn_check_selection(const char *cmd, int n_layer, int n_head, long layer, long head) {
    if (layer >= n_layer) return cli_usage(cmd, "--layer: %ld is outside [0, %d]", layer, n_layer - 1);
    if (head >= n_head) return cli_usage(cmd, "--head: %ld is outside [0, %d]", head, n_head - 1);
    return EXIT_OK;
}

int attn_finish(const char *cmd, const attn_map *m, const char *svg, const attn_svg_opts *o) {
    int code = cli_stdout_check(cmd);
    if (code || !svg) return code;
    tg_err err;
    if (attn_write_svg(m, svg, o, &err)) return cli_error(cmd, "%s", err.msg);
    fprintf(stderr, "wrote %s\n", svg);
    return EXIT_OK;
}
