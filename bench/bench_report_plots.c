/* SPDX-License-Identifier: Zlib */
/*
    bench_report_plots.c -- spreport's plots: DATADIR/plots.gp and the .dat files it reads, from
    the loaded CSV alone (no benchmark run needed), drawn by gnuplot as PNG and SVG.

    Every plot answers one question: how spawnpool does against each allocator and pool. A figure
    has a column of panels per object size measured and a row per group of rivals (the malloc
    allocators; the other pools and spawnpool's own modes), at most six lines a panel, each
    labelled at its right end in its colour (no legend to decode), and the floors, the free lists
    no pool can beat, as a grey band from the fastest to the slowest of them. One colour per
    implementation in every plot, the frame-time bars included.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench_floors.h"
#include "bench_report.h"

/* ---------------------------------------------------------------------------------------------
   The style: one colour and one label per implementation, everywhere
   ------------------------------------------------------------------------------------------ */

static const struct {
    const char *impl, *color, *label;
} styles[] = {
    {"spawnpool", "#d62728", "spawnpool"},
    {"spawnpool_grown", "#f4a6a6", "spawnpool, no max (several spans)"},
    {"spawnpool_reclaim", "#ff7f0e", "spawnpool, RECLAIM pool"},
    {"spawnpool_handles", "#e377c2", "spawnpool + handles"},
    {"spawnpool_iter", "#ff7f0e", "spawnpool, sp_iter"},
    {"spawnpool_next", "#e377c2", "spawnpool, sp_next"},
    {"glibc", "#1f77b4", "glibc malloc"},
    {"mimalloc", "#2ca02c", "mimalloc"},
    {"tcmalloc", "#9467bd", "tcmalloc"},
    {"jemalloc", "#8c564b", "jemalloc"},
    {"gslice", "#17becf", "GSlice"},
    {"boost_pool", "#bcbd22", "boost::pool"},
    {"freelist", "#000000", "bare free list"},
    {"array_order", "#7f7f7f", "array, O(n) removal"},
    {"checked_side", "#555555", "free list checking releases"},
    {"checked_plan", "#555555", "checked free list, state bit"},
    {"checked_plan_byte", "#555555", "checked free list, state byte"},
    {"spawnpool_ts", "#d62728", "spawnpool, thread-safe pool"},
    {"checked_cas", "#555555", "checked free list, a CAS a release (floor)"},
    {"spawnpool_mutex", "#ff7f0e", "spawnpool behind a mutex"},
    {"boost_singleton", "#bcbd22", "boost::singleton_pool"},
};
static const char *const band_color = "#9a9a9a";

static const char *style_color(const char *impl) {
    for (size_t i = 0; i < sizeof styles / sizeof styles[0]; i++)
        if (strcmp(styles[i].impl, impl) == 0) return styles[i].color;
    return "#555555";
}

const char *report_label(const char *impl) {
    for (size_t i = 0; i < sizeof styles / sizeof styles[0]; i++)
        if (strcmp(styles[i].impl, impl) == 0) return styles[i].label;
    return impl;
}

/* ---------------------------------------------------------------------------------------------
   The figures
   ------------------------------------------------------------------------------------------ */

enum { LINES_MAX = 6, BAND_MAX = 12, ROWS_MAX = 2 };

/* A line is "impl" or "impl=label" (a label of its own in this figure). */
typedef struct panel_row {
    const char *subject;            /* the row's rivals, in each panel's title */
    const char *lines[LINES_MAX];   /* spawnpool first */
    const char *band[BAND_MAX];     /* the band spans these at each N; none: no band */
    const char *band_label;
} panel_row;

#define FLOOR_BAND {BENCH_FLOORS}, "free lists (floors)"

/* Time on a log scale in every figure: equal ratios are equal distances, whatever N. */
static const struct {
    const char *workload, *title, *unit;
    bool per_size;
    panel_row rows[ROWS_MAX];
} figures[] = {
    {"lifo", "LIFO bursts: acquire N, release them newest first", "ns per pair", true,
     {{"malloc/free", {"spawnpool", "glibc", "mimalloc", "tcmalloc", "jemalloc"}, FLOOR_BAND},
      {"pools",
       {"spawnpool", "spawnpool_grown", "spawnpool_reclaim", "spawnpool_handles", "boost_pool",
        "gslice"},
       FLOOR_BAND}}},
    {"churn", "Random churn at N live: release a random one, acquire a replacement",
     "ns per pair", true,
     {{"malloc/free", {"spawnpool", "glibc", "mimalloc", "tcmalloc", "jemalloc"}, FLOOR_BAND},
      {"pools",
       {"spawnpool", "spawnpool_grown", "spawnpool_reclaim", "spawnpool_handles", "boost_pool",
        "gslice"},
       FLOOR_BAND}}},
    {"fifo", "FIFO at N live: release the oldest, acquire a replacement", "ns per pair", true,
     {{"malloc/free", {"spawnpool", "glibc", "mimalloc", "tcmalloc", "jemalloc"}, FLOOR_BAND},
      {"pools",
       {"spawnpool", "spawnpool_grown", "spawnpool_reclaim", "spawnpool_handles", "boost_pool",
        "gslice"},
       FLOOR_BAND}}},
    {"reclaim", "Reclaim the oldest at N live (a saturated pool)", "ns per acquisition", false,
     {{"an array kept in order", {"spawnpool_reclaim", "array_order"}, {NULL}, NULL}}},
    {"resolve", "Handle resolve over N live, 1 handle in 9 stale", "ns per resolve", false,
     {{"a bare table", {"spawnpool_handles=spawnpool, sp_resolve",
                        "freelist=bare generation-checked table"}, {NULL}, NULL}}},
    {"iterate", "Visit and update every live member", "ns per member", false,
     {{"arrays of pointers", {"spawnpool=spawnpool, sp_each", "spawnpool_iter", "spawnpool_next"},
       {"freelist", "boost_pool", "gslice", "glibc", "mimalloc", "tcmalloc", "jemalloc"},
       "arrays of pointers"}}},
};

/* A line's implementation (written into buf) and label. */
static const char *line_impl(const char *line, char *buf, size_t cap, const char **label) {
    const char *eq = strchr(line, '=');
    size_t len = eq ? (size_t)(eq - line) : strlen(line);
    if (len >= cap) len = cap - 1;
    memcpy(buf, line, len);
    buf[len] = '\0';
    *label = eq ? eq + 1 : report_label(buf);
    return buf;
}

/* Whether the row has anything to compare at `size`: spawnpool's line and one more. */
static bool row_has_data(const char *w, size_t size, const panel_row *row) {
    size_t count = 0;
    for (size_t l = 0; l < LINES_MAX && row->lines[l]; l++) {
        char impl[48];
        const char *label;
        if (report_has(w, size, line_impl(row->lines[l], impl, sizeof impl, &label))) count++;
    }
    return count >= 2;
}

static bool band_at(const char *w, size_t n, size_t size, const panel_row *row, double *lo,
                    double *hi) {
    bool any = false;
    for (size_t b = 0; b < BAND_MAX && row->band[b]; b++) {
        double v;
        if (!report_get(w, n, size, row->band[b], "ns_per_op_min", &v)) continue;
        if (!any || v < *lo) *lo = v;
        if (!any || v > *hi) *hi = v;
        any = true;
    }
    return any;
}

typedef struct label {
    double y;
    const char *text, *color;
} label;

static int by_y(const void *a, const void *b) {
    double d = ((const label *)a)->y - ((const label *)b)->y;
    return d < 0 ? -1 : d > 0;
}

/* Spreads the labels (y as log10 of the value) at least `gap` apart, upwards from
   the lowest, then back down as a block if the top one left the plot. */
static void spread(label *labels, size_t count, double gap, double top) {
    qsort(labels, count, sizeof *labels, by_y);
    for (size_t i = 1; i < count; i++)
        if (labels[i].y < labels[i - 1].y + gap) labels[i].y = labels[i - 1].y + gap;
    if (count > 0 && labels[count - 1].y > top) {
        double shift = labels[count - 1].y - top;
        for (size_t i = 0; i < count; i++) labels[i].y -= shift;
    }
}

/* One panel: its .dat file (n, band low, band high, then a column per line) and its plot. */
static void panel(FILE *gp, const char *datadir, const char *w, size_t size, size_t r,
                  const panel_row *row, const char *unit) {
    char name[96], path[4096];
    snprintf(name, sizeof name, "%s_%zu_%zu.dat", w, size, r);
    snprintf(path, sizeof path, "%s/%s", datadir, name);
    FILE *dat = fopen(path, "w");
    if (dat == NULL) {
        perror(path);
        return;
    }
    size_t ns[REPORT_N_MAX], n_count = report_ns(w, size, ns);
    char impls[LINES_MAX][48];
    const char *labels_text[LINES_MAX];
    size_t line_count = 0;
    for (size_t l = 0; l < LINES_MAX && row->lines[l]; l++) {
        const char *impl = line_impl(row->lines[l], impls[line_count], sizeof impls[0],
                                     &labels_text[line_count]);
        if (report_has(w, size, impl)) line_count++;
    }
    bool band = false;
    double ymin = INFINITY, ymax = 0;
    label labels[LINES_MAX + 1];
    size_t label_count = 0;
    double last[LINES_MAX + 1];
    bool have_last[LINES_MAX + 1] = {false};
    fprintf(dat, "# n band_lo band_hi");
    for (size_t l = 0; l < line_count; l++) fprintf(dat, " %s", impls[l]);
    fprintf(dat, "\n");
    for (size_t k = 0; k < n_count; k++) {
        double lo = 0, hi = 0;
        if (band_at(w, ns[k], size, row, &lo, &hi)) {
            fprintf(dat, "%zu %g %g", ns[k], lo, hi);
            band = true;
            ymin = fmin(ymin, lo), ymax = fmax(ymax, hi);
            last[LINES_MAX] = (lo + hi) / 2, have_last[LINES_MAX] = true;
        } else {
            fprintf(dat, "%zu ? ?", ns[k]);
        }
        for (size_t l = 0; l < line_count; l++) {
            double v;
            if (report_get(w, ns[k], size, impls[l], "ns_per_op_min", &v)) {
                fprintf(dat, " %g", v);
                ymin = fmin(ymin, v), ymax = fmax(ymax, v);
                last[l] = v, have_last[l] = true;
            } else {
                fprintf(dat, " ?");
            }
        }
        fprintf(dat, "\n");
    }
    fclose(dat);

    /* The axes: the N measured, with room either side; y from 0 (log: the data's decades). */
    fprintf(gp, "set xrange [%g:%g]\nset xtics (", (double)ns[0] / 1.4,
            (double)ns[n_count - 1] * 1.4);
    for (size_t k = 0; k < n_count; k++)
        fprintf(gp, "%s'%s' %zu", k ? ", " : "", report_n_label(ns[k]), ns[k]);
    fprintf(gp, ")\n");
    double y0 = ymin / 1.6, y1 = ymax * 1.6;
    fprintf(gp, "set yrange [%g:%g]\nset ytics (", y0, y1);
    /* Ticks at 1, 2, 5 a decade; finer over a narrow range, one a decade over a wide one. */
    static const double fine[] = {1, 1.5, 2, 3, 4, 5, 6, 8}, usual[] = {1, 2, 5}, wide[] = {1};
    double span = log10(y1 / y0);
    const double *steps = span < 1.3 ? fine : span <= 3 ? usual : wide;
    size_t step_count = span < 1.3 ? 8 : span <= 3 ? 3 : 1;
    bool first_tic = true;
    for (double decade = pow(10, floor(log10(y0))); decade < y1; decade *= 10)
        for (size_t m = 0; m < step_count; m++) {
            double t = decade * steps[m];
            if (t < y0 || t > y1) continue;
            fprintf(gp, "%s'%g' %g", first_tic ? "" : ", ", t, t);
            first_tic = false;
        }
    fprintf(gp, ")\nset ylabel '%s (minimum of the repeats)'\n", unit);
    double top = log10(y1) - 0.03 * (log10(y1) - log10(y0));
    double gap = 0.065 * (log10(y1) - log10(y0));
    fprintf(gp, "set title '%zu-byte members: spawnpool against %s'\n", size, row->subject);

    /* Each line's label at the height of its last point, just right of the plot. */
    for (size_t l = 0; l <= line_count; l++) {
        size_t at = l < line_count ? l : LINES_MAX;
        if (!have_last[at]) continue;
        labels[label_count].y = log10(last[at]);
        labels[label_count].text = l < line_count ? labels_text[l] : row->band_label;
        labels[label_count].color = l < line_count ? style_color(impls[l]) : band_color;
        label_count++;
    }
    spread(labels, label_count, gap, top);
    for (size_t i = 0; i < label_count; i++)
        fprintf(gp, "set label %zu '%s' at graph 1.03, first %g left tc rgb '%s' font ',9'\n",
                i + 1, labels[i].text, pow(10, labels[i].y),
                labels[i].color);

    bool first = true;
    if (band) {
        fprintf(gp, "plot '%s/%s' using 1:2:3 with filledcurves fc rgb '%s' "
                    "fs transparent solid 0.3 noborder notitle",
                datadir, name, band_color);
        first = false;
    }
    for (size_t l = 0; l < line_count; l++) {
        bool ours = strcmp(impls[l], "spawnpool") == 0 || l == 0;
        fprintf(gp, "%s '%s/%s' using 1:%zu with linespoints lw %s pt 7 ps %s lc rgb '%s' notitle",
                first ? "plot" : ",", datadir, name, l + 4, ours ? "3.5" : "2",
                ours ? "0.8" : "0.55", style_color(impls[l]));
        first = false;
    }
    fprintf(gp, "\nunset label\n");
}

static const char *const terminals[2][2] = {
    {"pngcairo size %d,%d noenhanced font ',10'", "png"},
    {"svg size %d,%d dynamic noenhanced font ',10'", "svg"},
};

static void set_terminal(FILE *gp, int fmt, int width, int height, const char *outdir,
                         const char *name) {
    fprintf(gp, "set terminal ");
    fprintf(gp, terminals[fmt][0], width, height);
    fprintf(gp, "\nset output '%s/%s.%s'\n", outdir, name, terminals[fmt][1]);
}

static void figure(FILE *gp, const char *datadir, const char *outdir, size_t f) {
    static const size_t sizes[] = {16, 64, 256};
    const char *w = figures[f].workload;
    size_t cols[3], col_count = 0, row_count = 0;
    for (size_t s = 0; s < 3; s++) {
        if (!figures[f].per_size && sizes[s] != 64) continue;
        bool any = false;
        for (size_t r = 0; r < ROWS_MAX && figures[f].rows[r].subject; r++)
            any |= row_has_data(w, sizes[s], &figures[f].rows[r]);
        if (any) cols[col_count++] = sizes[s];
    }
    for (size_t r = 0; r < ROWS_MAX && figures[f].rows[r].subject; r++) row_count++;
    if (col_count == 0) return;
    for (int fmt = 0; fmt < 2; fmt++) {
        set_terminal(gp, fmt, col_count > 1 ? (int)col_count * 560 : 900,
                     (int)row_count * 380 + 40, outdir, w);
        fprintf(gp, "set multiplot layout %zu,%zu title '%s (lower is better)' font ',12'\n",
                row_count, col_count, figures[f].title);
        for (size_t r = 0; r < row_count; r++)
            for (size_t c = 0; c < col_count; c++) {
                if (row_has_data(w, cols[c], &figures[f].rows[r]))
                    panel(gp, datadir, w, cols[c], r, &figures[f].rows[r], figures[f].unit);
                else
                    fprintf(gp, "set multiplot next\n");
            }
        fprintf(gp, "unset multiplot\n");
    }
}

/* Frame times: p50 and p99 of every implementation as a pair of bars in its colour, the value
   on each. */
static void frame_figure(FILE *gp, const char *datadir, const char *outdir) {
    static const char *const impls[] = {"spawnpool", "freelist", "boost_pool", "gslice", "glibc",
                                        "mimalloc", "tcmalloc", "jemalloc"};
    char path[4096];
    snprintf(path, sizeof path, "%s/frame_bars.dat", datadir);
    FILE *bars = fopen(path, "w");
    if (bars == NULL) return;
    size_t count = 0;
    fprintf(bars, "# label p50 p99 color\n");
    for (size_t i = 0; i < sizeof impls / sizeof impls[0]; i++) {
        double p50, p99;
        if (!report_get("frame", 0, 64, impls[i], "frame_ms_p50", &p50) ||
            !report_get("frame", 0, 64, impls[i], "frame_ms_p99", &p99))
            continue;
        fprintf(bars, "\"%s\" %g %g %ld\n", report_label(impls[i]), p50, p99,
                strtol(style_color(impls[i]) + 1, NULL, 16));
        count++;
    }
    fclose(bars);
    if (count == 0) return;
    for (int fmt = 0; fmt < 2; fmt++) {
        set_terminal(gp, fmt, 900, 460, outdir, "frame");
        fprintf(gp, "unset logscale\nset xrange [-0.6:%g]\nset yrange [0:*]\nset xtics rotate by -25\n"
                    "set ylabel 'ms per frame'\nset xlabel ''\nset key top left\n"
                    "set boxwidth 0.38\nset style fill solid 0.9 noborder\n"
                    "set title 'Game frame (the fountain workload): frame time, p50 (solid) and "
                    "p99 (pale); lower is better' font ',12'\n"
                    "plot '%s' using ($0-0.2):2:(0.38):4:xtic(1) with boxes lc rgb variable "
                    "notitle, '' using ($0+0.2):3:(0.38):4 with boxes lc rgb variable "
                    "fs transparent solid 0.35 notitle, "
                    "'' using ($0-0.2):2:(sprintf('%%.2f', $2)) with labels offset 0,0.6 font ',8' "
                    "notitle, '' using ($0+0.2):3:(sprintf('%%.2f', $3)) with labels offset 0,0.6 "
                    "font ',8' notitle\n",
                (double)count - 0.4, path);
    }
}

void report_plots(const char *datadir, const char *outdir) {
    char path[4096];
    snprintf(path, sizeof path, "%s/plots.gp", datadir);
    FILE *gp = fopen(path, "w");
    if (gp == NULL) {
        perror(path);
        return;
    }
    fprintf(gp, "# generated by spreport (bench/bench_report_plots.c)\n"
                "set datafile missing '?'\nset logscale x\nset grid lc rgb '#dddddd'\n"
                "set border lc rgb '#555555'\nset key off\nset rmargin 22\n"
                "set logscale y\nset xlabel 'live members N'\n");
    for (size_t f = 0; f < sizeof figures / sizeof figures[0]; f++) figure(gp, datadir, outdir, f);
    fprintf(gp, "set rmargin -1\nunset logscale\nset ytics auto\nset grid noxtics\n");
    frame_figure(gp, datadir, outdir);
    fclose(gp);
}
