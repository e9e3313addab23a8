/* attnviz.c — attention capture and rendering (see attnviz.h). */
#include "tools/attnviz.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cli.h"

/* The probe's attn callback: every (layer, head, query) has its own row, so
 * workers never write the same memory. */
static void capture_attn(void *user, int l, int h, int q, const float *p, int n_pos) {
    attn_map *m = user;
    if (l < 0 || l >= m->L || h < 0 || h >= m->H || q < 0 || q >= m->T || n_pos > m->T) return;
    float *row = m->w + (((size_t)l * m->H + h) * m->T + q) * m->T;
    memcpy(row, p, (size_t)n_pos * sizeof *row);
}

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
    const tg_gpt2_config *c = tg_gpt_config(g);
    memset(m, 0, sizeof *m);
    if (T < 1) return tg_fail(err, TG_ERR_ARG, "attention: the prompt has no tokens");
    if (T > tg_gpt_n_ctx(g))
        return tg_fail(err, TG_ERR_RANGE, "attention: the prompt has %d tokens, the context %d",
                       T, tg_gpt_n_ctx(g));
    m->L = c->n_layer, m->H = c->n_head, m->T = T;
    m->w = calloc((size_t)m->L * m->H * T * T, sizeof *m->w);
    m->ids = malloc((size_t)T * sizeof *m->ids);
    m->labels = calloc((size_t)T, sizeof *m->labels);
    float *logits = malloc((size_t)c->n_vocab * sizeof *logits);
    tg_status s = TG_OK;
    if (!m->w || !m->ids || !m->labels || !logits) {
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
    tg_probe probe = {.user = m, .attn = capture_attn};
    tg_gpt_set_probe(g, &probe);
    s = tg_gpt_forward(g, ids, T, 0, logits, 0, err);
    tg_gpt_set_probe(g, NULL);
done:
    free(logits);
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
static void colour(FILE *f, double x) {
    x = x < 0 ? 0 : x > 1 ? 1 : x;
    int r = (int)lrint(255 - (255 - 8) * x), g = (int)lrint(255 - (255 - 48) * x),
        b = (int)lrint(255 - (255 - 107) * x);
    fprintf(f, "#%02x%02x%02x", r, g, b);
}

tg_status attn_write_svg(const attn_map *m, const char *path, const char *title, int log_scale,
                         tg_err *err) {
    int T = m->T, lw = 0;
    for (int t = 0; t < T; t++) lw = label_cols(m->labels[t]) > lw ? label_cols(m->labels[t]) : lw;
    if (lw > 16) lw = 16;
    double cell = T <= 24 ? 14 : T <= 64 ? 7 : 3;
    double font = cell >= 7 ? cell * 0.8 : 0;      /* no labels when cells are tiny */
    double margin = font > 0 ? lw * font * 0.62 + 6 : 4;
    double side = T * cell, tile_w = margin + side + 16, tile_h = margin + side + 28;
    double W = m->H * tile_w + 20, Hh = m->L * tile_h + 60;
    cli_outfile o;
    tg_status s = cli_out_open(&o, path, err);
    if (s) return s;
    FILE *f = o.f;
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
               "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
               "viewBox=\"0 0 %.0f %.0f\" font-family=\"monospace\">\n", W, Hh, W, Hh);
    fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n<text x=\"10\" y=\"22\" "
               "font-size=\"14\">");
    xml_text(f, title ? title : "attention");
    fprintf(f, " — rows: queries, columns: keys; colour: %s</text>\n",
            log_scale ? "log10 weight, 1e-4 to 1" : "weight, 0 to 1");
    for (int l = 0; l < m->L; l++)
        for (int h = 0; h < m->H; h++) {
            double x0 = 10 + h * tile_w, y0 = 40 + l * tile_h;
            double hx = x0 + margin, hy = y0 + 16 + (font > 0 ? 0 : 0);
            fprintf(f, "<g>\n<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\">layer %d head %d</text>\n",
                    hx, y0 + 11, l, h);
            for (int q = 0; q < T; q++) {
                const float *p = attn_row(m, l, h, q);
                for (int k = 0; k < T; k++) {
                    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"",
                            hx + k * cell, hy + q * cell, cell, cell);
                    if (k > q) fputs("#eeeeee", f);
                    else if (log_scale) colour(f, (log10(p[k] > 1e-4f ? p[k] : 1e-4) + 4.0) / 4.0);
                    else colour(f, p[k]);
                    fprintf(f, "\"><title>q %d k %d: %.4f</title></rect>\n", q, k, p[k]);
                }
            }
            if (font > 0) {
                for (int t = 0; t < T; t++) {
                    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"%.1f\" text-anchor=\"end\">",
                            hx - 3, hy + t * cell + cell * 0.8, font);
                    xml_text(f, m->labels[t]);
                    fprintf(f, "</text>\n<text transform=\"translate(%.1f,%.1f) rotate(90)\" "
                               "font-size=\"%.1f\">", hx + t * cell + cell * 0.25, hy + side + 3, font);
                    xml_text(f, m->labels[t]);
                    fputs("</text>\n", f);
                }
            }
            fputs("</g>\n", f);
        }
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
                for (int k = 0; k <= q; k++) fprintf(f, "%s%.9g", k ? ", " : "", p[k]);
                fputc(']', f);
            }
            fputc(']', f);
        }
        fputc(']', f);
    }
    fputs("]}\n", f);
}
