/* SPDX-License-Identifier: Zlib */
/*
    bench_report.c -- spreport: a results CSV in, the Markdown report, the plots and the
    documentation's numbers out.

        spreport RESULTS.csv OUT.md DATADIR [META.md]
        spreport --docs|--check RESULTS.csv META.md FILE.md...

    The first form writes OUT.md (tables of median ns/op with ratios to the free list and to
    glibc, frame times, memory, steady-state allocator calls, instruction and cache-miss counts,
    and a met / missed line per performance target with its numbers and reference; the threads
    section and its targets come from bench_report_threads.c), and DATADIR/plots.gp with the
    .dat files it reads, a gnuplot script that draws every plot as PNG and SVG next to OUT.md
    (bench_report_plots.c). META.md, when given, is copied under the title (machine, compiler,
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

#include "bench_floors.h"
#include "bench_report.h"

typedef struct row {
    char workload[24], impl[32], metric[48], unit[12];
    size_t n, size;
    double value;
} row;

static row *rows;
static size_t row_count;

static const char *const impl_order[] = {
    "spawnpool", "spawnpool_reclaim", "spawnpool_handles", "spawnpool_next", "spawnpool_iter",
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

/* Whether the run has any row of impl. */
static bool any_rows(const char *impl) {
    for (size_t i = 0; i < row_count; i++)
        if (strcmp(rows[i].impl, impl) == 0) return true;
    return false;
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
                "LL) warmed by the same loop. Exact: the same binary gives the same counts.\n\n"
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

/* ---------------------------------------------------------------------------------------------
   Targets (0.3): one line each, met or missed, with the numbers and the reference.
   ------------------------------------------------------------------------------------------ */

static void verdict(FILE *md, const char *target, bool have, bool pass, const char *detail) {
    fprintf(md, "| %s | %s | %s |\n", target, !have ? "no data" : pass ? "met" : "**missed**",
            detail);
}

typedef struct worst_cell {
    double ratio, subject_ns, peer_ns;
    double best; /* the other extreme: the best cell's ratio */
    char where[64];
    size_t cells, failing; /* cells compared, cells that miss the limit */
} worst_cell;

/* The worst cell of subject against peer over the timed workloads (lifo, churn, fifo), every
   size and N: the highest subject/peer (the lowest peer/subject when speedup). */
static bool worst_ratio(const char *subject, const char *peer, bool speedup, double limit,
                        const char *metric, worst_cell *w) {
    static const char *const workloads[] = {"lifo", "churn", "fifo"};
    static const size_t sizes[] = {16, 64, 256};
    memset(w, 0, sizeof *w);
    for (size_t k = 0; k < 3; k++)
        for (size_t s = 0; s < 3; s++) {
            size_t ns[N_MAX], n_count = ns_of(workloads[k], sizes[s], ns);
            for (size_t j = 0; j < n_count; j++) {
                double sp = 0, p = 0;
                if (!get(workloads[k], ns[j], sizes[s], subject, metric, &sp) ||
                    !get(workloads[k], ns[j], sizes[s], peer, metric, &p) || sp <= 0 || p <= 0)
                    continue;
                double r = speedup ? p / sp : sp / p;
                if (speedup ? r < limit : r > limit) w->failing++;
                if (w->cells == 0 || (speedup ? r > w->best : r < w->best)) w->best = r;
                if (w->cells == 0 || (speedup ? r < w->ratio : r > w->ratio)) {
                    w->ratio = r, w->subject_ns = sp, w->peer_ns = p;
                    snprintf(w->where, sizeof w->where, "%s %s %zu B", workloads[k],
                             n_label(ns[j]), sizes[s]);
                }
                w->cells++;
            }
        }
    return w->cells > 0;
}

/* The spawnpool rows a peer is compared with: those measured in the peer's own process,
   "spawnpool@<peer>" (tag "@<peer>"), when the run has them (see emit in bench_main.c), else the
   main process's (tag ""). True when the peer ran apart. */
static bool subject_for(const char *peer, char tag[48], char subject[64]) {
    snprintf(tag, 48, "@%s", peer);
    snprintf(subject, 64, "spawnpool%s", tag);
    if (any_rows(subject)) return true;
    tag[0] = '\0';
    snprintf(subject, 64, "spawnpool");
    return false;
}

bool report_versus_peer(const char *peer, report_versus *out) {
    char tag[48], subject[64];
    worst_cell w;
    subject_for(peer, tag, subject);
    memset(out, 0, sizeof *out);
    if (!worst_ratio(subject, peer, true, 1.0, "ns_per_op_min", &w)) return false;
    out->cells = w.cells, out->peer_faster = w.failing, out->worst = w.ratio, out->best = w.best;
    snprintf(out->where, sizeof out->where, "%s", w.where);
    return true;
}

/* A wall-clock target over every lifo, churn and fifo cell, on the minimum of the repeats;
   the worst cell on medians beside it. */
static void time_target(FILE *md, const char *target, const char *peer, bool speedup, double limit) {
    worst_cell w, m;
    char detail[640];
    /* A peer that ran in a process of its own (jemalloc) is judged against the rows of that
       process. */
    char tag[48], subject[64];
    bool apart = subject_for(peer, tag, subject);
    bool have = worst_ratio(subject, peer, speedup, limit, "ns_per_op_min", &w);
    worst_ratio(subject, peer, speedup, limit, "ns_per_op_median", &m);
    int len = snprintf(detail, sizeof detail,
                       "worst %s %.2fx (%s: spawnpool %.1f ns, %s %.1f ns); %zu of %zu cells miss; "
                       "on medians %.2fx (%s)",
                       speedup ? "speed-up" : "ratio", w.ratio, w.where, w.subject_ns, peer,
                       w.peer_ns, w.failing, w.cells, m.ratio, m.where);
    /* Against a peer, what the floors and the other checked layout do on the same cells: a
       cell that the bare free list misses too is out of any pool's reach; one that a checked
       layout makes is within a checked pool's. */
    static const char *const floors[] = {BENCH_FLOORS};
    for (size_t i = 0; speedup && i < sizeof floors / sizeof floors[0]; i++) {
        worst_cell f;
        char floor[64];
        snprintf(floor, sizeof floor, "%s%s", floors[i], tag);
        if (len < 0 || (size_t)len >= sizeof detail ||
            !worst_ratio(floor, peer, speedup, limit, "ns_per_op_min", &f))
            continue;
        len += snprintf(detail + len, sizeof detail - (size_t)len, "%s%s misses %zu", i ? ", " : "; ",
                        floors[i], f.failing);
    }
    if (apart && len > 0 && (size_t)len < sizeof detail)
        snprintf(detail + len, sizeof detail - (size_t)len,
                 " (%s ran in a process of its own: judged against spawnpool and the floors "
                 "measured in that process)", peer);
    verdict(md, target, have, have && w.failing == 0, have ? detail : "run make bench");
}

/* An instruction target of spawnpool's default pool: every cell under the limit. */
static void instr_target(FILE *md) {
    static const struct {
        const char *metric, *label;
        size_t n;
    } cells[] = {
        {"instr_per_pair_lifo", "LIFO 1k", 1000},
        {"instr_per_pair", "pair", 1000},
        {"instr_per_pair_churn", "churn 1k", 1000},
        {"instr_per_pair_churn", "churn 100k", 100000},
        {"instr_per_pair_churn", "churn 1M", 1000000},
    };
    char detail[512];
    size_t len = 0;
    bool have = false, pass = true;
    for (size_t i = 0; i < sizeof cells / sizeof cells[0]; i++) {
        double v = 0, ck = 0, fl = 0;
        if (!get("instr", cells[i].n, 64, "spawnpool", cells[i].metric, &v)) continue;
        have = true;
        if (v > 40.0) pass = false;
        bool has_ck = get("instr", cells[i].n, 64, "checked_side", cells[i].metric, &ck);
        bool has_fl = get("instr", cells[i].n, 64, "freelist", cells[i].metric, &fl);
        int wrote = snprintf(detail + len, sizeof detail - len, "%s%s %.1f", len ? "; " : "",
                             cells[i].label, v);
        if (wrote > 0 && (size_t)wrote < sizeof detail - len) len += (size_t)wrote;
        if (has_ck || has_fl) {
            wrote = snprintf(detail + len, sizeof detail - len, " (checked_side %.1f, freelist %.1f)",
                             has_ck ? ck : NAN, has_fl ? fl : NAN);
            if (wrote > 0 && (size_t)wrote < sizeof detail - len) len += (size_t)wrote;
        }
    }
    verdict(md, "At most 40 instructions per acquire + release pair (LIFO; churn 1k, 100k, 1M)",
            have, pass, have ? detail : "run make bench-instr");
}

/* Acquisition order against memory order, per pair: the worst of LIFO and churn. */
static void ordered_target(FILE *md) {
    static const size_t ns[] = {1000, 1000, 100000, 1000000};
    double worst = 0, o_worst = 0, m_worst = 0;
    char where[32] = "";
    bool have = false;
    for (size_t i = 0; i < 4; i++) {
        const char *metric = i == 0 ? "instr_per_pair_lifo" : "instr_per_pair_churn";
        double o = 0, m = 0;
        if (!get("instr", ns[i], 64, "spawnpool_ordered", metric, &o) ||
            !get("instr", ns[i], 64, "spawnpool", metric, &m) || m <= 0)
            continue;
        if (!have || o / m > worst) {
            worst = o / m, o_worst = o, m_worst = m;
            snprintf(where, sizeof where, "%s %s", i == 0 ? "LIFO" : "churn", n_label(ns[i]));
        }
        have = true;
    }
    char detail[256];
    snprintf(detail, sizeof detail, "worst %.2fx (%s: %.1f acquisition order against %.1f memory order)",
             worst, where, o_worst, m_worst);
    verdict(md, "Acquisition-order pool at most 1.5x the instructions of memory order per pair",
            have, have && worst <= 1.5, have ? detail : "run make bench-instr");
}

static void targets(FILE *md) {
    char detail[384];
    double a = 0, b = 0;
    fprintf(md, "\n## Targets\n\nThe 0.3 performance targets, for the default pool "
                "as users create it (`initial = 0`, grown by acquisition, memory order, no "
                "hooks). Instruction and cache-miss targets come from `make bench-instr` "
                "(callgrind, exact); wall-clock targets from `make bench`, judged on the minimum "
                "over the repeats, over every LIFO, random churn and FIFO cell (every N and "
                "object size measured; ratios from one run), the worst cell on medians beside "
                "it. Each line gives the reference it is judged against.\n\n"
                "| target | result | numbers |\n|---|---|---|\n");
    instr_target(md);

    bool have = get("instr", 1000, 64, "spawnpool", "instr_per_resolve", &a);
    if (!get("instr", 0, 64, "spawnpool", "instr_per_resolve_call", &b)) b = NAN;
    snprintf(detail, sizeof detail, "%.1f per resolve inlined in the caller's loop (as sokol's "
                                    "lookup is measured); %.1f in a function of its own (1000 "
                                    "live, 1 handle in 8 stale)", a, b);
    verdict(md, "At most 12 instructions per sp_resolve", have, have && a <= 12.0,
            have ? detail : "run make bench-instr");

    have = get("instr", 1000000, 64, "spawnpool", "d1_miss_per_pair_churn", &a) &&
           get("instr", 1000000, 64, "checked_side", "d1_miss_per_pair_churn", &b);
    double fl = NAN;
    if (!get("instr", 1000000, 64, "freelist", "d1_miss_per_pair_churn", &fl)) fl = NAN;
    snprintf(detail, sizeof detail, "%.2f D1 misses per pair against checked_side's %.2f "
                                    "(bare free list %.2f)", a, b, fl);
    verdict(md, "D1 misses per op at random churn, 1M live, no higher than the checked free list's",
            have, have && a <= b, have ? detail : "run make bench-instr");

    time_target(md, "Wall clock within 1.15x of the checked free list (checked_side)",
                "checked_side", false, 1.15);
    static const char *const peers[] = {"glibc", "mimalloc", "tcmalloc", "jemalloc", "gslice"};
    for (size_t i = 0; i < sizeof peers / sizeof peers[0]; i++) {
        char target[96];
        snprintf(target, sizeof target, "Faster than %s in every cell", peers[i]);
        time_target(md, target, peers[i], true, 1.0);
    }
    time_target(md, "At least 1.5x faster than glibc in every cell", "glibc", true, 1.5);

    ordered_target(md);

    static const size_t sizes[] = {16, 64, 256};
    bool mem_have = false, mem_ok = true, reserved = false;
    int len = snprintf(detail, sizeof detail, "bookkeeping per member at 1M:");
    for (size_t s = 0; s < 3; s++)
        if (get("memory", 1000000, sizes[s], "spawnpool", "overhead_per_member", &a)) {
            mem_have = true;
            /* 8 bytes a member plus the pool's fixed records spread over 1M (~0.001 B). */
            if (a > 8.01) mem_ok = false;
            if (len > 0 && (size_t)len < sizeof detail)
                len += snprintf(detail + len, sizeof detail - (size_t)len, " %.3f B at %zu B;", a,
                                sizes[s]);
        }
    verdict(md, "Bookkeeping at most 8 bytes a member in memory order", mem_have, mem_ok,
            mem_have ? detail : "run make bench");

    /* Reserved address space beside committed bytes: the memory workload's
       reserved_bytes_per_member column, once the pool's stats report it. */
    len = snprintf(detail, sizeof detail, "reserved / committed bytes per member at 1M:");
    for (size_t s = 0; s < 3; s++)
        if (get("memory", 1000000, sizes[s], "spawnpool", "reserved_bytes_per_member", &a) &&
            get("memory", 1000000, sizes[s], "spawnpool", "bytes_per_member", &b)) {
            reserved = true;
            if (len > 0 && (size_t)len < sizeof detail)
                len += snprintf(detail + len, sizeof detail - (size_t)len, " %.1f / %.1f B at %zu B;",
                                a, b, sizes[s]);
        }
    verdict(md, "Reserved address space reported apart from committed bytes", reserved, reserved,
            reserved ? detail : "the memory workload has no reserved_bytes_per_member column");

    /* Standing targets of earlier versions that 0.3 keeps. */
    have = get("reclaim", 1000, 64, "spawnpool_reclaim", "ns_per_op_min", &a) &&
           get("reclaim", 1000000, 64, "spawnpool_reclaim", "ns_per_op_min", &b);
    double r1 = 0, r2 = 0;
    bool ref = get("reclaim", 1000, 64, "array_order", "ns_per_op_min", &r1) &&
               get("reclaim", 1000000, 64, "array_order", "ns_per_op_min", &r2);
    snprintf(detail, sizeof detail, "%.2f ns at 1k, %.2f ns at 1M: %.2fx (array reference: %.0fx)",
             a, b, have ? b / a : 0.0, ref ? r2 / r1 : 0.0);
    verdict(md, "Reclaim-oldest at 1M within 1.5x of 1k (standing)", have, have && b / a <= 1.5,
            have ? detail : "run make bench");

    bool steady_have = false, steady_ok = true;
    double steady_max = 0;
    for (size_t i = 0; i < row_count; i++)
        if (strcmp(rows[i].workload, "steady") == 0) {
            steady_have = true;
            if (rows[i].value != 0) steady_ok = false;
            if (rows[i].value > steady_max) steady_max = rows[i].value;
        }
    snprintf(detail, sizeof detail, "most calls in any steady run: %.0f", steady_max);
    verdict(md, "Zero allocator calls in steady state (standing)", steady_have, steady_ok,
            steady_have ? detail : "run make bench");
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
            "- `spawnpool`: an `sp_pool` (DROP, memory order, no hooks); `spawnpool_reclaim` a "
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
    targets(md);
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
