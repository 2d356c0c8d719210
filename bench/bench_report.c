/* SPDX-License-Identifier: Zlib */
/*
    bench_report.c -- spreport: a results CSV in, the Markdown report, the plots and the
    documentation's numbers out.

        spreport RESULTS.csv OUT.md DATADIR [META.md]
        spreport --docs|--check RESULTS.csv META.md FILE.md...

    The first form writes OUT.md (a met / missed line per target of 0.5 with its numbers and
    reference, from bench_report_targets.c; the threads section from bench_report_threads.c;
    tables of ns/op with ratios to the free list and to glibc, frame times, memory,
    steady-state allocator calls, and instruction and cache-miss counts as information), and
    DATADIR/plots.gp with the .dat files it reads, a gnuplot script that draws every plot as
    PNG and SVG next to OUT.md (bench_report_plots.c). META.md, when given, is copied under the title (machine, compiler,
    date). The N columns are the ones the CSV has.
    The second form rewrites (--check: compares) the generated regions of the given Markdown
    files, the documentation's tables and quoted numbers (bench_report_docs.c), so that every
    number the docs quote comes from the CSV.
*/
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_report.h"

typedef struct row {
    char workload[24], impl[32], metric[48], unit[12];
    size_t n, size;
    double value;
} row;

static row *rows;
static size_t row_count;

static const char *const impl_order[] = {
    "spawnpool", "spawnpool_grown", "spawnpool_reclaim", "spawnpool_handles", "spawnpool_next",
    "spawnpool_iter",
    "freelist",
    "checked_header", "checked_side", "checked_bits", "checked_gen", "checked_dense",
    "checked_plan", "checked_plan_byte", "array_order",
    "boost_pool", "gslice", "glibc", "mimalloc", "tcmalloc", "jemalloc", "sp_dense",
};
enum { IMPL_COUNT = sizeof impl_order / sizeof impl_order[0] };

enum { N_MAX = REPORT_N_MAX };

static bool load(const char *path) {
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        perror(path);
        return false;
    }
    char line[512];
    size_t cap = 0;
    while (fgets(line, sizeof line, f) != NULL) {
        if (strncmp(line, "workload,", 9) == 0) continue;
        row r;
        memset(&r, 0, sizeof r);
        if (sscanf(line, "%23[^,],%zu,%zu,%31[^,],%47[^,],%lf,%11[^,\n]", r.workload, &r.n, &r.size,
                   r.impl, r.metric, &r.value, r.unit) != 7)
            continue;
        if (row_count == cap) {
            cap = cap ? cap * 2 : 256;
            row *grown = realloc(rows, cap * sizeof *rows);
            if (grown == NULL) return false;
            rows = grown;
        }
        rows[row_count++] = r;
    }
    fclose(f);
    return true;
}

/* The value for a key; the last one wins, so an appended re-run replaces earlier numbers. */
static bool get(const char *workload, size_t n, size_t size, const char *impl, const char *metric,
                double *out) {
    bool found = false;
    for (size_t i = 0; i < row_count; i++) {
        const row *r = &rows[i];
        if ((n == 0 || r->n == n) && r->size == size && strcmp(r->workload, workload) == 0 &&
            strcmp(r->impl, impl) == 0 && strcmp(r->metric, metric) == 0) {
            *out = r->value;
            found = true;
        }
    }
    return found;
}

static bool has_impl(const char *workload, size_t size, const char *impl) {
    for (size_t i = 0; i < row_count; i++)
        if (rows[i].size == size && strcmp(rows[i].workload, workload) == 0 &&
            strcmp(rows[i].impl, impl) == 0)
            return true;
    return false;
}

/* The distinct N of a workload (at every size when size is 0), ascending; at most N_MAX. */
static size_t ns_of(const char *workload, size_t size, size_t out[N_MAX]) {
    size_t count = 0;
    for (size_t i = 0; i < row_count; i++) {
        const row *r = &rows[i];
        if (strcmp(r->workload, workload) != 0 || (size != 0 && r->size != size)) continue;
        size_t k = 0;
        while (k < count && out[k] < r->n) k++;
        if ((k < count && out[k] == r->n) || count == N_MAX) continue;
        memmove(out + k + 1, out + k, (count - k) * sizeof *out);
        out[k] = r->n;
        count++;
    }
    return count;
}

/* "1k", "16k", "1M", "1000000" -> short labels for tables and axes. */
static const char *n_label(size_t n) {
    static char buf[4][24];
    static int next;
    char *b = buf[next++ & 3];
    if (n >= 1000000 && n % 1000000 == 0) snprintf(b, sizeof buf[0], "%zuM", n / 1000000);
    else if (n >= 1000 && n % 1000 == 0) snprintf(b, sizeof buf[0], "%zuk", n / 1000);
    else snprintf(b, sizeof buf[0], "%zu", n);
    return b;
}

static void fmt_ns(char *buf, size_t cap, double v) {
    if (v >= 1000.0) snprintf(buf, cap, "%.0f", v);
    else if (v >= 10.0) snprintf(buf, cap, "%.1f", v);
    else snprintf(buf, cap, "%.2f", v);
}

/* What the other parts of spreport read (bench_report.h). */
bool report_get(const char *workload, size_t n, size_t size, const char *impl, const char *metric,
                double *out) {
    return get(workload, n, size, impl, metric, out);
}

void report_each_row(const char *workload, const char *metric, report_row_fn *fn, void *ctx) {
    for (size_t i = 0; i < row_count; i++)
        if (strcmp(rows[i].workload, workload) == 0 && strcmp(rows[i].metric, metric) == 0)
            fn(rows[i].impl, rows[i].n, rows[i].size, rows[i].value, ctx);
}

bool report_has(const char *workload, size_t size, const char *impl) {
    for (size_t i = 0; i < row_count; i++)
        if ((size == 0 || rows[i].size == size) && strcmp(rows[i].workload, workload) == 0 &&
            strcmp(rows[i].impl, impl) == 0)
            return true;
    return false;
}

size_t report_ns(const char *workload, size_t size, size_t out[REPORT_N_MAX]) {
    return ns_of(workload, size, out);
}

const char *report_n_label(size_t n) { return n_label(n); }

void report_fmt_ns(char *buf, size_t cap, double v) { fmt_ns(buf, cap, v); }

/* ---------------------------------------------------------------------------------------------
   Tables
   ------------------------------------------------------------------------------------------ */

static void timing_table(FILE *md, const char *workload, size_t size, const char *what) {
    bool any = false;
    for (size_t i = 0; i < IMPL_COUNT && !any; i++) any = has_impl(workload, size, impl_order[i]);
    if (!any) return;
    size_t ns[N_MAX], n_count = ns_of(workload, size, ns);
    fprintf(md, "\n### %s, %zu-byte objects\n\n%s\n\n| implementation |", workload, size, what);
    for (size_t k = 0; k < n_count; k++) fprintf(md, " %s |", n_label(ns[k]));
    fprintf(md, "\n|---|");
    for (size_t k = 0; k < n_count; k++) fprintf(md, "---:|");
    fprintf(md, "\n");
    for (size_t i = 0; i < IMPL_COUNT; i++) {
        const char *impl = impl_order[i];
        if (!has_impl(workload, size, impl)) continue;
        fprintf(md, "| %s |", impl);
        for (size_t k = 0; k < n_count; k++) {
            double med = 0, v = 0, fl = 0, gl = 0;
            char cell[128], num[32], num_med[32];
            if (!get(workload, ns[k], size, impl, "ns_per_op_min", &v) ||
                !get(workload, ns[k], size, impl, "ns_per_op_median", &med)) {
                fprintf(md, " - |");
                continue;
            }
            fmt_ns(num, sizeof num, v);
            fmt_ns(num_med, sizeof num_med, med);
            int len = snprintf(cell, sizeof cell, "%s · %s", num_med, num);
            bool has_fl = get(workload, ns[k], size, "freelist", "ns_per_op_min", &fl);
            bool has_gl = get(workload, ns[k], size, "glibc", "ns_per_op_min", &gl);
            if (has_fl || has_gl) {
                char a[24] = "-", b[24] = "-";
                if (has_fl) snprintf(a, sizeof a, "%.2fx", v / fl);
                if (has_gl) snprintf(b, sizeof b, "%.2fx", v / gl);
                snprintf(cell + len, sizeof cell - (size_t)len, " (%s / %s)", a, b);
            }
            fprintf(md, " %s |", cell);
        }
        fprintf(md, "\n");
    }
}

static void frame_table(FILE *md) {
    fprintf(md, "\n## Game frame (fountain: 200 sparks a frame, a 10000-spark explosion every "
                "60 frames)\n\n");
    fprintf(md, "| implementation | p50 ms | p99 ms | max ms | mean ms |\n"
                "|---|---:|---:|---:|---:|\n");
    for (size_t i = 0; i < IMPL_COUNT; i++) {
        double p50 = 0, p99 = 0, mx = 0, mean = 0;
        if (!get("frame", 0, 64, impl_order[i], "frame_ms_p50", &p50)) continue;
        if (!get("frame", 0, 64, impl_order[i], "frame_ms_p99", &p99)) p99 = NAN;
        if (!get("frame", 0, 64, impl_order[i], "frame_ms_max", &mx)) mx = NAN;
        if (!get("frame", 0, 64, impl_order[i], "frame_ms_mean", &mean)) mean = NAN;
        fprintf(md, "| %s | %.3f | %.3f | %.3f | %.3f |\n", impl_order[i], p50, p99, mx, mean);
    }
}

static void memory_table(FILE *md) {
    static const size_t sizes[] = {16, 64, 256};
    fprintf(md, "\n## Memory held per member at 1M members\n\nBytes per member, everything the "
                "allocator holds included (spawnpool: `sp_stats.bytes`; glibc: `mallinfo2`; "
                "others: RSS growth, each in a process of its own). In brackets: bytes beyond "
                "the object itself.\n\n");
    fprintf(md, "| implementation | 16 B | 64 B | 256 B |\n|---|---:|---:|---:|\n");
    for (size_t i = 0; i < IMPL_COUNT; i++) {
        if (!has_impl("memory", 64, impl_order[i]) && !has_impl("memory", 16, impl_order[i]))
            continue;
        fprintf(md, "| %s |", impl_order[i]);
        for (size_t s = 0; s < 3; s++) {
            double v = 0;
            if (get("memory", 1000000, sizes[s], impl_order[i], "bytes_per_member", &v))
                fprintf(md, " %.1f (+%.1f) |", v, v - (double)sizes[s]);
            else
                fprintf(md, " - |");
        }
        fprintf(md, "\n");
    }
}

static void steady_table(FILE *md) {
    fprintf(md, "\n## Allocator calls in steady state\n\nCalls to the pool's `sp_allocator` "
                "during a second pass of fill, churn, reclaim and release-all, after a first "
                "pass warmed the pool up.\n\n| implementation |");
    size_t ns[N_MAX], n_count = ns_of("steady", 64, ns);
    for (size_t k = 0; k < n_count; k++) fprintf(md, " %s |", n_label(ns[k]));
    fprintf(md, "\n|---|");
    for (size_t k = 0; k < n_count; k++) fprintf(md, "---:|");
    fprintf(md, "\n");
    for (size_t i = 0; i < IMPL_COUNT; i++) {
        if (!has_impl("steady", 64, impl_order[i])) continue;
        fprintf(md, "| %s |", impl_order[i]);
        for (size_t k = 0; k < n_count; k++) {
            double v = 0;
            if (get("steady", ns[k], 64, impl_order[i], "allocator_calls", &v))
                fprintf(md, " %.0f |", v);
            else
                fprintf(md, " - |");
        }
        fprintf(md, "\n");
    }
}

/* The implementations spinstr measures, in table order, and what each is. */
static const struct {
    const char *impl, *what;
} instr_impls[] = {
    {"spawnpool", "default pool (initial 0, grown, memory order)"},
    {"spawnpool_ordered", "the same in acquisition order"},
    {"spawnpool_presized", "initial = max = N (built whole)"},
    {"checked_side", "free list checking releases (side array)"},
    {"checked_bits", "checked, state bitmap and index stack"},
    {"checked_dense", "checked, state byte, index stack, no counters of its own"},
    {"checked_plan", "planned layout whole: state bit, 4-byte stack, counters, pool tests"},
    {"checked_plan_byte", "the same with a state byte and a 3-byte stack (8 B a member)"},
    {"freelist", "bare free list"},
};
enum { INSTR_IMPLS = sizeof instr_impls / sizeof instr_impls[0] };

static void instr_table(FILE *md) {
    static const size_t churn_ns[] = {1000, 100000, 1000000};
    bool any = false;
    for (size_t i = 0; i < INSTR_IMPLS; i++) any |= has_impl("instr", 64, instr_impls[i].impl);
    if (!any) return;
    fprintf(md, "\n## Instructions and cache misses per operation (callgrind, `make bench-instr`)\n\n"
                "Per acquire + release pair, 64-byte members, counted inside the two functions "
                "only (callgrind `--toggle-collect`: the loop around the calls is not counted; "
                "in brackets the whole loop body). D1 / LL: data cache misses per pair inside "
                "the functions at 1M live, from callgrind's cache simulation (32 KiB L1, 32 MiB "
                "LL) warmed by the same loop. Exact: the same binary gives the same counts. "
                "Information, not targets: wall clock judges (above).\n\n"
                "| implementation | LIFO 1k | churn 1k | churn 100k | churn 1M | D1 / LL misses, churn 1M |\n"
                "|---|---:|---:|---:|---:|---:|\n");
    for (size_t i = 0; i < INSTR_IMPLS; i++) {
        const char *impl = instr_impls[i].impl;
        if (!has_impl("instr", 64, impl)) continue;
        fprintf(md, "| %s: %s |", impl, instr_impls[i].what);
        for (size_t c = 0; c < 4; c++) {
            const char *metric = c == 0 ? "instr_per_pair_lifo" : "instr_per_pair_churn";
            size_t n = c == 0 ? 1000 : churn_ns[c - 1];
            char loop_metric[64];
            snprintf(loop_metric, sizeof loop_metric, "%s_loop", metric);
            double v = 0, loop = 0;
            if (get("instr", n, 64, impl, metric, &v) && get("instr", n, 64, impl, loop_metric, &loop))
                fprintf(md, " %.1f (%.1f) |", v, loop);
            else
                fprintf(md, " - |");
        }
        double d1 = 0, ll = 0;
        if (get("instr", 1000000, 64, impl, "d1_miss_per_pair_churn", &d1) &&
            get("instr", 1000000, 64, impl, "ll_miss_per_pair_churn", &ll))
            fprintf(md, " %.2f / %.2f |\n", d1, ll);
        else
            fprintf(md, " - |\n");
    }
    static const struct {
        const char *impl, *metric, *op;
    } ops[] = {
        {"spawnpool", "instr_per_pair", "sp_acquire + sp_release of one member, 500 of 1000 leased"},
        {"spawnpool", "instr_per_resolve_call", "sp_resolve in a function of its own (one call), 1000 live, 1 handle in 8 stale"},
        {"spawnpool", "instr_per_pair_with_handle", "sp_acquire_handle + sp_release"},
        {"spawnpool_reclaim", "instr_per_reclaim", "sp_acquire on a saturated RECLAIM pool of 1000"},
        {"spawnpool_ts", "instr_per_pair",
         "sp_acquire + sp_release of a thread-safe pool on one thread, 500 of 1000 leased"},
    };
    fprintf(md, "\nThe default pool's other fast paths, and the thread-safe pool's pair:\n\n| operation | in the functions | whole loop |\n"
                "|---|---:|---:|\n");
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        double v = 0, loop = 0;
        char metric_loop[64];
        snprintf(metric_loop, sizeof metric_loop, "%s_loop", ops[i].metric);
        if (!get("instr", 0, 64, ops[i].impl, ops[i].metric, &v)) {
            if (get("instr", 0, 64, ops[i].impl, "not_built", &v))
                fprintf(md, "| %s | not built | not built |\n", ops[i].op);
            continue;
        }
        if (!get("instr", 0, 64, ops[i].impl, metric_loop, &loop)) loop = NAN;
        fprintf(md, "| %s | %.1f | %.1f |\n", ops[i].op, v, loop);
    }
    double inl = 0;
    if (get("instr", 1000, 64, "spawnpool", "instr_per_resolve", &inl))
        fprintf(md, "| sp_resolve inlined in the caller's loop (the loop with it less the loop "
                    "without it), 1000 live, 1 handle in 8 stale | %.1f | |\n", inl);
}

int main(int argc, char **argv) {
    bool docs = argc > 1 && strcmp(argv[1], "--docs") == 0;
    bool check = argc > 1 && strcmp(argv[1], "--check") == 0;
    if (argc < 4 || ((docs || check) && argc < 5)) {
        fprintf(stderr, "usage: spreport RESULTS.csv OUT.md DATADIR [META.md]\n"
                        "       spreport --docs|--check RESULTS.csv META.md FILE.md...\n");
        return 2;
    }
    if (docs || check) {
        if (!load(argv[2])) return 1;
        return report_docs(argv[3], argv + 4, argc - 4, check);
    }
    if (!load(argv[1])) return 1;
    FILE *md = fopen(argv[2], "w");
    if (md == NULL) {
        perror(argv[2]);
        return 1;
    }
    const char *csv_name = strrchr(argv[1], '/') ? strrchr(argv[1], '/') + 1 : argv[1];
    fprintf(md, "# spawnpool benchmark results\n\nGenerated by `spreport` from `%s` "
                "(%zu rows). Regenerate with `make bench` (QUICK=1 for a short run). Method and "
                "findings: [docs/performance.md](../../docs/performance.md).\n\n",
            csv_name, row_count);
    if (argc > 4) {
        FILE *meta = fopen(argv[4], "r");
        if (meta != NULL) {
            char buf[512];
            while (fgets(buf, sizeof buf, meta) != NULL) fputs(buf, md);
            fclose(meta);
        }
    }
    fprintf(md,
            "\n## Implementations\n\n"
            "- `spawnpool`: an `sp_pool` (DROP, memory order, no hooks, `max` the cell's live "
            "count: its members in one span); `spawnpool_grown` the same with no `max`, as most "
            "users create one, grown by acquisition into several spans (information, not "
            "judged); `spawnpool_reclaim` a "
            "RECLAIM pool (acquisition order; saturated in the reclaim workload); "
            "`spawnpool_handles` acquisitions with `sp_acquire_handle`, and `sp_resolve` in the "
            "resolve workload; `spawnpool_next` iteration with `sp_first`/`sp_next` instead of "
            "`sp_each`.\n"
            "- The floors, what a pool cannot beat: `freelist` a bare intrusive free list (no "
            "checks); `checked_header` and `checked_side` free lists that only check their "
            "releases (a state word in a header before each member, or in an array beside the "
            "members, as spawnpool keeps it); `checked_bits` the same checks with the state "
            "in a bitmap (a bit a member) and the free members in a stack of their indexes, so "
            "that a pair reaches one cold line, the member's, and no other (no handles); "
            "`checked_gen` checked_bits plus a 4-byte life a member moved on at each release, "
            "the least that exact generational handles write (it brings the second line "
            "back); `checked_dense` a state byte a member and an index stack whose top is the "
            "free count (no counters of its own); `checked_plan` and `checked_plan_byte` the "
            "hot path of a layout spawnpool could take, whole: a state bit or byte a member "
            "for plain leases (lives moved only for leases given a handle), an index stack "
            "whose top is the free count, the peak as its low water, `acquired` counted, and "
            "spawnpool's tests of a NULL pool, an empty stack and a release out of the plain "
            "range (CHANGELOG.md, 0.4.0, \"What the measurements decided\").\n"
            "- `array_order`: the reclaim workload's reference, an array of members kept in "
            "acquisition order, whose oldest is removed by shifting the rest (O(n)); the way a "
            "naive reclaim-oldest pool does it.\n"
            "- Peers: `boost_pool` (boost::pool<>), `gslice` (GLib's slice allocator), "
            "`glibc`, `mimalloc`, `tcmalloc`, `jemalloc` (malloc/free of each); `sp_dense` the "
            "packed dense pool.\n");
    report_targets(md);
    report_threads(md);
    fprintf(md, "\n## Time per operation\n\nEach cell: median · minimum ns per op over the "
                "repeats; in brackets the minimum's ratio to the bare free list's / to glibc "
                "malloc's (below 1 is faster).\n");
    timing_table(md, "lifo", 64, "Acquire N, then release them newest first; op = one pair.");
    timing_table(md, "churn", 64, "N live; release a random one, acquire a replacement; op = "
                                   "one pair.");
    timing_table(md, "fifo", 64, "N live; release the oldest, acquire a replacement; op = one "
                                  "pair.");
    timing_table(md, "reclaim", 64, "N live in a saturated pool; every acquisition reclaims the "
                                     "oldest. array_order keeps acquisition order in an array "
                                     "(O(n) removal of the oldest).");
    timing_table(md, "resolve", 64, "Random handles over N live members, 1 in 9 stale; op = one "
                                     "resolve. freelist: a bare generation-checked slot table.");
    timing_table(md, "iterate", 64, "Visit and update every live particle; spawnpool walks "
                                     "with sp_each, spawnpool_next with sp_first/sp_next, "
                                     "spawnpool_iter with the sp_iter cursor, the others an "
                                     "array of pointers.");
    timing_table(md, "dense_iterate", 64, "A particle system's update: sp_dense loops over its packed "
                                           "array, spawnpool walks its members with sp_each (after "
                                           "random churn, so neither is in address order); op = one "
                                           "particle.");
    timing_table(md, "dense_churn", 64, "Remove a random particle and add one: sp_dense swap-removes "
                                         "(moving the last element), spawnpool releases and "
                                         "acquires; op = one pair.");
    for (size_t s = 0; s < 2; s++) {
        size_t size = s ? 256 : 16;
        timing_table(md, "lifo", size, "As above.");
        timing_table(md, "churn", size, "As above.");
        timing_table(md, "fifo", size, "As above.");
    }
    frame_table(md);
    memory_table(md);
    steady_table(md);
    instr_table(md);
    fclose(md);
    char outdir[4096];
    snprintf(outdir, sizeof outdir, "%s", argv[2]);
    char *slash = strrchr(outdir, '/');
    if (slash != NULL) *slash = '\0';
    else snprintf(outdir, sizeof outdir, ".");
    report_plots(argv[3], outdir);
    return 0;
}
