/* SPDX-License-Identifier: Zlib */
/*
    bench_report.h -- what spreport's parts share: the loaded CSV (bench_report.c) and the
    threads section written from it (bench_report_threads.c).
*/
#ifndef SP_BENCH_REPORT_H
#define SP_BENCH_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* The value of one CSV row (n = 0: any n); the last one wins. */
bool report_get(const char *workload, size_t n, size_t size, const char *impl, const char *metric,
                double *out);

/* The "## Threads" section: the targets of the thread-safe pool, met or missed with their
   numbers, then ns per pair at each thread count for every implementation of each threads
   workload. Nothing when the CSV has no threads rows. */
void report_threads(FILE *md);

#endif /* SP_BENCH_REPORT_H */
