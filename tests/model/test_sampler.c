/* test_sampler.c — the sampler against an independent computation of each
 * rule (in double, sorting the whole vocabulary): filtered tokens are never
 * picked, the empirical frequencies match the expected distribution (within
 * 5 binomial standard deviations, with fixed seeds so the test is
 * deterministic), greedy is argmax, the penalty and the seeds behave. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/sampler.h"
#include "tests/model/sampler_oracle.h"

#define V 97
#define DRAWS 50000

static void random_logits(float *x, int n, unsigned seed, float spread) {
    srand(seed);
    for (int i = 0; i < n; i++) x[i] = spread * ((float)rand() / (float)RAND_MAX - 0.5f);
}

static tg_sampler *make(tg_sampler_params p, int n) {
    tg_sampler *s = NULL;
    tg_err err;
    cr_assert_eq(tg_sampler_create(&s, &p, n, &err), TG_OK, "%s", err.msg);
    return s;
}

static tg_sampler_params plain(float temp, uint64_t seed) {
    tg_sampler_params p = {.temp = temp, .top_k = 0, .top_p = 1.0f, .min_p = 0.0f,
                           .repeat_penalty = 1.0f, .repeat_window = 64, .seed = seed};
    return p;
}

/* The reference: p[V] = the distribution the sampler should draw from. */
typedef struct ranked {
    int id;
    double v;
} ranked;
static int cmp_ranked(const void *a, const void *b) {
    const ranked *x = a, *y = b;
    if (x->v != y->v) return x->v > y->v ? -1 : 1;
    return x->id - y->id;
}
static void expected(double *p, const float *x, int n, tg_sampler_params sp) {
    ranked r[V];
    double mx = -INFINITY;
    for (int i = 0; i < n; i++) mx = fmax(mx, (double)x[i]);
    for (int i = 0; i < n; i++) r[i] = (ranked){i, (double)x[i]};
    qsort(r, (size_t)n, sizeof *r, cmp_ranked);
    int keep = sp.top_k > 0 && sp.top_k < n ? sp.top_k : n;
    double sum = 0;
    for (int i = 0; i < keep; i++) sum += exp((r[i].v - mx) / sp.temp);
    for (int i = 0; i < keep; i++) r[i].v = exp((r[i].v - mx) / sp.temp) / sum;
    if (sp.top_p < 1.0f) {
        double cum = 0;
        for (int i = 0; i < keep; i++) {
            cum += r[i].v;
            if (cum >= sp.top_p) {
                keep = i + 1;
                break;
            }
        }
    }
    double pmax = r[0].v;
    int m = 0;
    for (int i = 0; i < keep; i++)
        if (r[i].v >= sp.min_p * pmax) r[m++] = r[i];
    keep = m;
    for (int i = 0; i < n; i++) p[i] = 0;
    double tot = 0;
    for (int i = 0; i < keep; i++) tot += r[i].v;
    for (int i = 0; i < keep; i++) p[r[i].id] = r[i].v / tot;
}

/* Draws DRAWS tokens; every one must have expected probability > 0, and the
 * counts must fit the expected distribution: Pearson's chi-square over the
 * allowed tokens below df + 6 sqrt(2 df) (df = allowed - 1; about 6 sigma
 * of the chi-square distribution, deterministic with a fixed seed). */
static void check_distribution(tg_sampler_params sp, const float *x, const char *what) {
    double p[V];
    expected(p, x, V, sp);
    tg_sampler *s = make(sp, V);
    int count[V] = {0};
    for (int d = 0; d < DRAWS; d++) {
        int t = tg_sampler_sample(s, x);
        cr_assert(t >= 0 && t < V, "%s: token %d out of range", what, t);
        cr_assert(p[t] > 0, "%s: picked token %d, which the rule excludes", what, t);
        count[t]++;
    }
    double chi2 = 0;
    int allowed = 0;
    for (int i = 0; i < V; i++) {
        if (p[i] <= 0) continue;
        allowed++;
        double e = DRAWS * p[i];
        chi2 += (count[i] - e) * (count[i] - e) / e;
    }
    double df = allowed > 1 ? allowed - 1 : 1;
    cr_assert(chi2 <= df + 6 * sqrt(2 * df), "%s: chi-square %.1f over %d tokens (limit %.1f)",
              what, chi2, allowed, df + 6 * sqrt(2 * df));
    tg_sampler_free(s);
}

Test(sampler, greedy_is_argmax_lowest_id_on_ties) {
    float x[V];
    tg_sampler *s = make(plain(0.0f, 1), V);
    for (unsigned k = 0; k < 50; k++) {
        random_logits(x, V, k, 10.0f);
        int best = 0;
        for (int i = 1; i < V; i++)
            if (x[i] > x[best]) best = i;
        cr_assert_eq(tg_sampler_sample(s, x), best);
    }
    for (int i = 0; i < V; i++) x[i] = 1.0f;
    x[40] = x[17] = 2.0f;
    cr_assert_eq(tg_sampler_sample(s, x), 17);
    tg_sampler_free(s);
}

Test(sampler, temperature_matches_softmax) {
    float x[V];
    random_logits(x, V, 7, 6.0f);
    check_distribution(plain(1.0f, 11), x, "temp 1");
    check_distribution(plain(0.5f, 12), x, "temp 0.5");
    check_distribution(plain(3.0f, 13), x, "temp 3");
}

Test(sampler, temperature_extremes) {
    float x[V];
    random_logits(x, V, 8, 6.0f);
    int best = 0;
    for (int i = 1; i < V; i++)
        if (x[i] > x[best]) best = i;
    /* Very cold: the argmax every time (the gap is >> temp). */
    tg_sampler *cold = make(plain(1e-4f, 5), V);
    for (int d = 0; d < 1000; d++) cr_assert_eq(tg_sampler_sample(cold, x), best);
    tg_sampler_free(cold);
    /* Very hot: close to uniform — every token shows up. */
    tg_sampler *hot = make(plain(100.0f, 5), V);
    int seen[V] = {0};
    for (int d = 0; d < DRAWS; d++) seen[tg_sampler_sample(hot, x)] = 1;
    for (int i = 0; i < V; i++) cr_assert(seen[i], "token %d never drawn at temp 100", i);
    tg_sampler_free(hot);
}

Test(sampler, top_k_never_picks_outside) {
    float x[V];
    random_logits(x, V, 9, 4.0f);
    for (int k = 1; k <= 10; k += 3) {
        tg_sampler_params sp = plain(1.0f, 100 + (uint64_t)k);
        sp.top_k = k;
        check_distribution(sp, x, "top-k");
    }
}

Test(sampler, top_p_never_picks_outside) {
    float x[V];
    random_logits(x, V, 10, 8.0f);
    float ps[] = {0.0f, 0.3f, 0.7f, 0.95f};
    for (int i = 0; i < 4; i++) {
        tg_sampler_params sp = plain(1.0f, 200 + (uint64_t)i);
        sp.top_p = ps[i];
        check_distribution(sp, x, "top-p");
    }
}

Test(sampler, min_p_never_picks_outside) {
    float x[V];
    random_logits(x, V, 11, 8.0f);
    float ms[] = {0.01f, 0.1f, 0.5f, 1.0f};
    for (int i = 0; i < 4; i++) {
        tg_sampler_params sp = plain(1.3f, 300 + (uint64_t)i);
        sp.min_p = ms[i];
        check_distribution(sp, x, "min-p");
    }
}

Test(sampler, combined_filters) {
    float x[V];
    random_logits(x, V, 12, 8.0f);
    tg_sampler_params sp = plain(0.8f, 400);
    sp.top_k = 20;
    sp.top_p = 0.9f;
    sp.min_p = 0.05f;
    check_distribution(sp, x, "top-k + top-p + min-p");
}

Test(sampler, repetition_penalty) {
    float x[V];
    for (int i = 0; i < V; i++) x[i] = 0.0f;
    x[3] = 2.0f;  /* best */
    x[5] = 1.5f;  /* second */
    x[8] = -1.0f;
    tg_sampler_params sp = plain(0.0f, 0);
    sp.repeat_penalty = 1.5f;
    sp.repeat_window = 4;
    tg_sampler *s = make(sp, V);
    cr_assert_eq(tg_sampler_sample(s, x), 3);
    tg_sampler_accept(s, 3); /* 2.0 / 1.5 = 1.33 < 1.5 */
    cr_assert_eq(tg_sampler_sample(s, x), 5);
    tg_sampler_accept(s, 5);
    tg_sampler_accept(s, 5);
    tg_sampler_accept(s, 5); /* window of 4 now: 3 5 5 5 */
    cr_assert_eq(tg_sampler_sample(s, x), 3); /* 1.33 vs 1.0 */
    tg_sampler_accept(s, 5); /* 5 5 5 5: token 3 has dropped out */
    cr_assert_eq(tg_sampler_sample(s, x), 3);
    x[3] = 0.0f;
    x[7] = 0.9f;
    /* 5 is in the window four times but penalised once: 1.0 > 0.9 */
    cr_assert_eq(tg_sampler_sample(s, x), 5);
    x[3] = 2.0f;
    cr_assert_eq(x[3], 2.0f, "the caller's logits are not modified");
    tg_sampler_free(s);
    /* Negative logits are multiplied: a penalised token gets less likely. */
    for (int i = 0; i < V; i++) x[i] = -1.0f;
    x[8] = -0.9f;
    s = make(sp, V);
    tg_sampler_accept(s, 8); /* -0.9 * 1.5 = -1.35 */
    cr_assert_eq(tg_sampler_sample(s, x), 0);
    tg_sampler_free(s);
}

static void draw_seq(uint64_t seed, int *out, int n, const float *x) {
    tg_sampler_params sp = plain(1.0f, seed);
    tg_sampler *s = make(sp, V);
    for (int i = 0; i < n; i++) out[i] = tg_sampler_sample(s, x);
    tg_sampler_free(s);
}

Test(sampler, seeds) {
    float x[V];
    for (int i = 0; i < V; i++) x[i] = 0.0f; /* uniform */
    int a[64], b[64], c[64], z[64];
    draw_seq(42, a, 64, x);
    draw_seq(42, b, 64, x);
    draw_seq(43, c, 64, x);
    draw_seq(0, z, 64, x);
    cr_assert(!memcmp(a, b, sizeof a), "same seed, same draws");
    cr_assert(memcmp(a, c, sizeof a), "another seed, other draws");
    int distinct = 0, seen[V] = {0};
    for (int i = 0; i < 64; i++) distinct += !seen[z[i]]++;
    cr_assert_gt(distinct, 30, "seed 0 draws look random (%d distinct of 64)", distinct);
    /* reset restarts the sequence */
    tg_sampler *s = make(plain(1.0f, 42), V);
    for (int i = 0; i < 10; i++) tg_sampler_sample(s, x);
    tg_sampler_reset(s);
    for (int i = 0; i < 64; i++) cr_assert_eq(tg_sampler_sample(s, x), a[i]);
    tg_sampler_free(s);
}

Test(sampler, uniform_draws_in_unit_interval) {
    tg_sampler *s = make(plain(1.0f, 0), V);
    double sum = 0;
    for (int i = 0; i < 100000; i++) {
        double u = tg_sampler_uniform(s);
        cr_assert(u >= 0.0 && u < 1.0);
        sum += u;
    }
    /* mean of 1e5 uniforms: sd = sqrt(1/12/1e5) = 0.00091 */
    cr_assert(fabs(sum / 100000 - 0.5) < 0.0046);
    tg_sampler_free(s);
}

Test(sampler, minus_infinity_is_never_picked) {
    float x[V];
    for (int i = 0; i < V; i++) x[i] = -INFINITY;
    x[60] = 0.0f;
    x[61] = 0.0f;
    tg_sampler *s = make(plain(1.0f, 3), V);
    for (int d = 0; d < 1000; d++) {
        int t = tg_sampler_sample(s, x);
        cr_assert(t == 60 || t == 61);
    }
    tg_sampler_free(s);
}

Test(sampler, bad_parameters) {
    tg_sampler *s;
    tg_err err;
    tg_sampler_params bad[] = {plain(-0.1f, 0), plain(NAN, 0), plain(101.0f, 0)};
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(tg_sampler_create(&s, &bad[i], V, &err), TG_ERR_ARG);
        cr_assert(strstr(err.msg, "[0, 100]"), "message names the range: %s", err.msg);
    }
    tg_sampler_params p = plain(1.0f, 0);
    p.top_p = 1.5f;
    cr_assert_eq(tg_sampler_create(&s, &p, V, &err), TG_ERR_ARG);
    p = plain(1.0f, 0);
    p.min_p = -0.5f;
    cr_assert_eq(tg_sampler_create(&s, &p, V, &err), TG_ERR_ARG);
    p = plain(1.0f, 0);
    p.repeat_penalty = 0.5f;
    cr_assert_eq(tg_sampler_create(&s, &p, V, &err), TG_ERR_ARG);
    p = plain(1.0f, 0);
    p.top_k = -1;
    cr_assert_eq(tg_sampler_create(&s, &p, V, &err), TG_ERR_ARG);
    p = plain(1.0f, 0);
    cr_assert_eq(tg_sampler_create(&s, &p, 0, &err), TG_ERR_ARG);
}

/* ---- non-finite logits and the smallest temperature (issue #16) ----------
 * The rule (sampler.h): NaN and -inf are probability 0; +inf tokens share
 * all the mass equally; nothing above -inf -> -1. Checked with the default
 * filters (top-k 40, top-p 0.95, min-p 0.05), with every filter off, and
 * greedy. */
static tg_sampler_params with_filters(float temp, uint64_t seed) {
    tg_sampler_params p = tg_sampler_defaults();
    p.temp = temp;
    p.seed = seed;
    return p;
}

Test(sampler, plus_infinity_logit_is_picked) {
    float x[V];
    random_logits(x, V, 21, 8.0f);
    x[13] = INFINITY;
    tg_sampler_params ps[] = {with_filters(0.8f, 1), plain(1.0f, 2), plain(0.0f, 3)};
    for (int k = 0; k < 3; k++) {
        tg_sampler *s = make(ps[k], V);
        for (int d = 0; d < 1000; d++) cr_assert_eq(tg_sampler_sample(s, x), 13, "params %d", k);
        tg_sampler_free(s);
    }
}

Test(sampler, two_plus_infinities_share_the_mass) {
    float x[V];
    random_logits(x, V, 22, 8.0f);
    x[50] = x[13] = INFINITY;
    x[7] = NAN;
    tg_sampler *s = make(with_filters(1.0f, 4), V);
    int n13 = 0, n50 = 0;
    for (int d = 0; d < 10000; d++) {
        int t = tg_sampler_sample(s, x);
        cr_assert(t == 13 || t == 50, "picked %d", t);
        n13 += t == 13;
        n50 += t == 50;
    }
    /* binomial(10000, 1/2): sd 50; 5 sd */
    cr_assert(abs(n13 - 5000) < 250, "13 drawn %d of 10000 times", n13);
    tg_sampler_free(s);
    s = make(plain(0.0f, 0), V);
    cr_assert_eq(tg_sampler_sample(s, x), 13, "greedy: the lowest +inf id");
    tg_sampler_free(s);
}

Test(sampler, nan_is_never_picked) {
    float x[V];
    random_logits(x, V, 23, 4.0f);
    for (int i = 0; i < V; i += 3) x[i] = NAN;
    x[0] = NAN; /* a NaN first must not win greedy either */
    int best = 1;
    for (int i = 1; i < V; i++)
        if (x[i] == x[i] && x[i] > x[best]) best = i;
    tg_sampler_params ps[] = {with_filters(0.8f, 5), plain(2.0f, 6)};
    for (int k = 0; k < 2; k++) {
        tg_sampler *s = make(ps[k], V);
        for (int d = 0; d < 5000; d++) {
            int t = tg_sampler_sample(s, x);
            cr_assert(t >= 0 && t < V && t % 3 != 0, "picked %d (a NaN logit)", t);
        }
        tg_sampler_free(s);
    }
    tg_sampler *g = make(plain(0.0f, 0), V);
    cr_assert_eq(tg_sampler_sample(g, x), best);
    tg_sampler_free(g);
}

Test(sampler, nothing_above_minus_infinity_is_an_error) {
    float nan_only[V], minf_only[V], mixed[V];
    for (int i = 0; i < V; i++) {
        nan_only[i] = NAN;
        minf_only[i] = -INFINITY;
        mixed[i] = i % 2 ? NAN : -INFINITY;
    }
    const float *cases[] = {nan_only, minf_only, mixed};
    tg_sampler_params ps[] = {with_filters(0.8f, 7), plain(1.0f, 8), plain(0.0f, 9)};
    for (int c = 0; c < 3; c++)
        for (int k = 0; k < 3; k++) {
            tg_sampler_params p = ps[k];
            for (int top_k = 0; top_k <= 5; top_k += 5) {
                p.top_k = top_k;
                tg_sampler *s = make(p, V);
                cr_assert_eq(tg_sampler_sample(s, cases[c]), -1, "case %d params %d top-k %d", c, k,
                             top_k);
                tg_sampler_free(s);
            }
        }
}

Test(sampler, minus_infinity_with_plus_infinity) {
    float x[V];
    for (int i = 0; i < V; i++) x[i] = -INFINITY;
    x[90] = INFINITY;
    x[3] = 1.0f;
    tg_sampler *s = make(with_filters(0.8f, 10), V);
    for (int d = 0; d < 100; d++) cr_assert_eq(tg_sampler_sample(s, x), 90);
    tg_sampler_free(s);
}

Test(sampler, smallest_temperature) {
    tg_sampler *s;
    tg_err err;
    /* 1e-45 (a subnormal) made 1/temp +inf: every probability NaN before */
    float tiny[] = {1e-45f, 1e-39f, 1.1e-38f};
    for (int i = 0; i < 3; i++) {
        tg_sampler_params p = with_filters(tiny[i], 0);
        cr_assert_eq(tg_sampler_create(&s, &p, V, &err), TG_ERR_ARG, "temp %g", tiny[i]);
        cr_assert(strstr(err.msg, "smallest usable") && strstr(err.msg, "greedy"), "%s", err.msg);
    }
    /* the smallest accepted temperature samples the argmax, even for
     * logits far apart (the product overflows to -inf, never NaN) */
    float x[V];
    random_logits(x, V, 24, 6.0f);
    x[40] = 3e38f;
    x[41] = -3e38f;
    tg_sampler *cold = make(with_filters(TG_SAMPLER_MIN_TEMP, 11), V);
    for (int d = 0; d < 100; d++) cr_assert_eq(tg_sampler_sample(cold, x), 40);
    tg_sampler_free(cold);
}

/* ---- the same choices as the previous sampler (the oracle) ------------------ */

/* The sampler's top-k became a partial selection (a guessed threshold, then
 * buckets) instead of a heap and a sort; sampler_oracle.c is the old code.
 * For the same seed, settings and logits both must pick the same token at
 * every step: over random vectors, ties, signed zeros, non-finite values,
 * huge and tiny ranges, and sequences whose distribution drifts or jumps
 * (so the threshold guessed from the previous token sometimes holds and
 * sometimes not). */

static uint64_t mix64(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static double unif(uint64_t *s) { return (double)(mix64(s) >> 11) * 0x1.0p-53; }
static double gauss(uint64_t *s) {
    double u = unif(s), v = unif(s);
    return sqrt(-2 * log(1 - u)) * cos(6.283185307179586 * v);
}

/* logits[n] of kind `kind` at step `step` of a sequence */
static void gen_logits(float *x, int n, int kind, int step, uint64_t *r) {
    double mean = 0, sd = 3;
    if (kind == 1) mean = 0.5 * step, sd = 1 + 0.3 * (step % 7); /* drifting */
    if (kind == 2) sd = step % 2 ? 0.01 : 30;                     /* jumping */
    for (int i = 0; i < n; i++) {
        double g = mean + sd * gauss(r);
        switch (kind) {
        case 3: x[i] = (float)floor(g); break;                       /* many ties */
        case 4: x[i] = (float)(floor(g * 0.25) * 0.0); break;        /* +0 and -0 only */
        case 5: x[i] = 1.5f; break;                                  /* all equal */
        case 6: x[i] = (float)(g * 1e37); break;                     /* range overflows */
        case 7: x[i] = (float)(g * 1e-42); break;                    /* subnormals */
        default: x[i] = (float)g; break;
        }
        if (kind == 8) { /* sprinkled non-finite values */
            uint64_t u = mix64(r) % 40;
            if (u == 0) x[i] = NAN;
            else if (u == 1) x[i] = -INFINITY;
            else if (u == 2 && step % 3 == 0) x[i] = INFINITY;
        }
        if (kind == 9 && mix64(r) % 4) x[i] = -INFINITY; /* most tokens masked */
    }
}

static void same_choices(int n, const int *ks, int nk, int kinds, int steps, int seeds) {
    static const float temps[] = {0.8f, 0.3f, 1.7f, 0.0f};
    static const float top_ps[] = {0.95f, 1.0f, 0.5f, 0.0f};
    static const float min_ps[] = {0.05f, 0.0f, 0.3f};
    float *x = malloc(sizeof(float) * (size_t)n);
    cr_assert(x);
    uint64_t r = 12345 + (uint64_t)n;
    long compared = 0;
    for (int ki = 0; ki < nk; ki++)
        for (int kind = 0; kind < kinds; kind++)
            for (int sd = 0; sd < seeds; sd++) {
                tg_sampler_params p = tg_sampler_defaults();
                p.top_k = ks[ki];
                p.temp = temps[(sd + kind) % 4];
                p.top_p = top_ps[(sd / 2 + ki) % 4];
                p.min_p = min_ps[(sd + ki + kind) % 3];
                p.repeat_penalty = sd % 3 == 2 ? 1.3f : 1.0f;
                p.seed = mix64(&r);
                tg_sampler *s = make(p, n);
                oracle_sampler *o = NULL;
                tg_err err;
                cr_assert_eq(oracle_sampler_create(&o, &p, n, &err), TG_OK, "%s", err.msg);
                for (int st = 0; st < steps; st++) {
                    gen_logits(x, n, kind, st, &r);
                    int a = tg_sampler_sample(s, x), b = oracle_sampler_sample(o, x);
                    cr_assert_eq(a, b,
                                 "V=%d top-k %d kind %d seed #%d step %d (temp %g top-p %g "
                                 "min-p %g penalty %g): picked %d, the old sampler %d",
                                 n, p.top_k, kind, sd, st, p.temp, p.top_p, p.min_p,
                                 p.repeat_penalty, a, b);
                    if (a >= 0) {
                        tg_sampler_accept(s, a);
                        oracle_sampler_accept(o, b);
                    }
                    compared++;
                }
                tg_sampler_free(s);
                oracle_sampler_free(o);
            }
    cr_assert(compared > 0);
    free(x);
}

Test(sampler, same_choices_as_the_old_sampler_small_vocabularies) {
    for (int n = 1; n <= 9; n++) {
        int ks[] = {0, 1, 2, n - 1, n, n + 3};
        same_choices(n, ks, 6, 10, 12, 4);
    }
    int ks[] = {1, 2, 5, 40, 96, 97, 0};
    same_choices(97, ks, 7, 10, 20, 6);
}

Test(sampler, same_choices_as_the_old_sampler_1024) {
    int ks[] = {40, 1, 2, 10, 41, 100, 500, 1023, 1024};
    same_choices(1024, ks, 9, 10, 25, 6);
}

Test(sampler, same_choices_as_the_old_sampler_gpt2_vocabulary, .timeout = 120) {
    int ks[] = {40, 200};
    same_choices(50257, ks, 2, 10, 6, 2);
}
