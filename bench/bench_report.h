/* SPDX-License-Identifier: Zlib */
/*
    bench_report.h -- what spreport's parts share: the loaded CSV (bench_report.c), the targets
    judged from it (bench_report_targets.c), the threads section (bench_report_threads.c), the
    plots (bench_report_plots.c) and the documentation's tables (bench_report_docs.c).
*/
#ifndef SP_BENCH_REPORT_H
#define SP_BENCH_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

enum { REPORT_N_MAX = 16 };

/* The value of one CSV row (n = 0: any n); the last one wins. */
bool report_get(const char *workload, size_t n, size_t size, const char *impl, const char *metric,
                double *out);

/* Calls fn with every row of workload and metric, in the CSV's order. */
typedef void report_row_fn(const char *impl, size_t n, size_t size, double value, void *ctx);
void report_each_row(const char *workload, const char *metric, report_row_fn *fn, void *ctx);

/* Whether the run has a row of impl in workload at `size` (any size when size is 0). */
bool report_has(const char *workload, size_t size, const char *impl);

/* The distinct N of a workload at `size` (every size when 0), ascending; at most REPORT_N_MAX. */
size_t report_ns(const char *workload, size_t size, size_t out[REPORT_N_MAX]);

/* "1k", "16k", "1M": N as the tables and axes show it (four calls' results live at once). */
const char *report_n_label(size_t n);

/* ns per op with three significant digits or so: "4.08", "31.5", "1234". */
void report_fmt_ns(char *buf, size_t cap, double v);

/* Spawnpool against a peer over every LIFO, random churn and FIFO cell (every N and size), on
   the minimum over the repeats: how many cells both have, in how many the peer is faster, and
   spawnpool's worst speed-up (peer time / spawnpool time) with where it was. A peer that ran in
   a process of its own (jemalloc) is compared with the spawnpool measured in that process.
   (bench_report_targets.c) */
typedef struct report_versus {
    size_t cells, peer_faster;
    double worst;    /* the lowest peer / spawnpool */
    double best;     /* the highest */
    char where[64];  /* the worst cell: "churn 256k 16 B" */
} report_versus;
bool report_versus_peer(const char *peer, report_versus *out);

/* The "## Targets" section: a line per target of 0.5, met, missed or no data, with its numbers
   (bench_report_targets.c). */
void report_targets(FILE *md);

/* The thread-safe pool's line of the targets: threads_local and threads_cross at 1 and 2
   threads within 1.15x of the floor checked_cas (bench_report_threads.c). */
void report_threads_target(FILE *md);

/* The "## Threads" section: the targets of the thread-safe pool, met or missed with their
   numbers, then ns per pair at each thread count for every implementation of each threads
   workload. Nothing when the CSV has no threads rows. */
void report_threads(FILE *md);

/* The name of an implementation in plots and docs ("glibc malloc", "boost::pool"). */
const char *report_label(const char *impl);

/* DATADIR/plots.gp (and the .dat files it reads): every plot, PNG and SVG, into OUTDIR. */
void report_plots(const char *datadir, const char *outdir);

/* Rewrites the generated regions of each Markdown file (<!-- spreport:NAME --> up to
   <!-- /spreport -->) from the loaded run, META being the run's latest.md (its Machine: and
   Run: lines name the run). With check, writes nothing and reports each region that differs.
   Returns 0 when every region was known (and, with check, current), else 1. */
int report_docs(const char *meta, char **files, int file_count, bool check);

#endif /* SP_BENCH_REPORT_H */
