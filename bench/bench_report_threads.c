/* SPDX-License-Identifier: Zlib */
/*
    bench_report_threads.c -- spreport's threads section: the targets of the thread-safe pool
    judged from the threads workloads (bench/bench_threads.c) and callgrind's pair count, then a
    table per workload of ns per pair at 1, 2, 4 and 8 threads for every implementation.

    The thread-safe pool (spawnpool_ts) may be absent: spbench then writes a not_built row for
    it, and its rows and targets say "not built" rather than showing any number. The peers'
    numbers are shown beside each target anyway, so a reader sees what the pool will be judged
    against (and whether the machine scaled at all: a peer that doubles its throughput at two
    threads shows there were two cores to use).

    Each target's line also gives the floor's number where it has one: checked_cas, the
    cheapest thread-safe checked pool (per-thread free members, one CAS a release; see
    bench_threads.c), which no thread-safe pool that detects racing releases exactly can beat.
    Where the floor misses a target too, the target asks more than the machine gives.
*/
#include <math.h>
#include <string.h>

#include "bench_report.h"

static const char *const tr_impls[] = {
    "spawnpool_ts", "spawnpool", "checked_cas", "checked_side", "spawnpool_mutex",
    "boost_singleton", "gslice", "glibc", "mimalloc", "tcmalloc", "jemalloc",
};
static const char *const tr_peers[] = {
    "spawnpool_mutex", "boost_singleton", "gslice", "glibc", "mimalloc", "tcmalloc", "jemalloc",
};
static const size_t tr_counts[] = {1, 2, 4, 8};
static const struct {
    const char *name, *what;
} tr_workloads[] = {
    {"threads_local", "Each thread churns its own 1024 members: release a random one, acquire its "
                      "replacement."},
    {"threads_cross", "Producer/consumer in a ring: each thread acquires bursts of 64 and hands "
                      "them to the next thread, which releases them (one thread: it alternates "
                      "roles on its own queue)."},
    {"threads_mixed", "threads_local with one pair in four handed to the next thread instead."},
};

enum { TR_IMPLS = sizeof tr_impls / sizeof tr_impls[0], TR_PEERS = sizeof tr_peers / sizeof tr_peers[0] };

static bool tr_min(const char *workload, size_t threads, const char *impl, double *out) {
    return report_get(workload, threads, 64, impl, "ns_per_op_min", out) && *out > 0;
}

static bool ts_not_built(void) {
    double v;
    for (size_t w = 0; w < 3; w++)
        if (report_get(tr_workloads[w].name, 0, 64, "spawnpool_ts", "not_built", &v)) return true;
    return false;
}

/* True when no repeat of impl at `threads` ran undisturbed (spbench's undisturbed_repeats):
   the machine was busy, and its minimum is not the code's cost. */
static bool tr_busy(const char *workload, size_t threads, const char *impl) {
    double v;
    return report_get(workload, threads, 64, impl, "undisturbed_repeats", &v) && v == 0;
}

static const char *const tr_inconclusive = "inconclusive (no undisturbed 2-thread repeat: the "
                                           "machine was busy)";

static void tr_verdict(FILE *md, const char *target, const char *result, const char *detail) {
    fprintf(md, "| %s | %s | %s |\n", target, result, detail);
}

/* Appends printf-style text to buf (of cap bytes, len used so far); returns the new length. */
static size_t tr_append(char *buf, size_t cap, size_t len, const char *fmt, double a, double b,
                        const char *s) {
    if (len >= cap) return len;
    int wrote = snprintf(buf + len, cap - len, fmt, s, a, b);
    return wrote > 0 ? len + (size_t)wrote : len;
}

/* "peers' two-thread scaling: tcmalloc 1.95x, ..." for the first target's context. */
static size_t peer_scaling(char *buf, size_t cap, size_t len) {
    len = tr_append(buf, cap, len, "%speers' 2-thread speed-ups:", 0, 0, len ? "; " : "");
    bool any = false;
    for (size_t p = 0; p < TR_PEERS; p++) {
        double one, two;
        if (!tr_min("threads_local", 1, tr_peers[p], &one) ||
            !tr_min("threads_local", 2, tr_peers[p], &two))
            continue;
        double cores;
        if (report_get("threads_local", 2, 64, tr_peers[p], "cores_at_min", &cores))
            len = tr_append(buf, cap, len, " %s %.2fx (%.1f cores),", one / two, cores, tr_peers[p]);
        else
            len = tr_append(buf, cap, len, " %s %.2fx,", one / two, 0, tr_peers[p]);
        any = true;
    }
    if (any && len < cap) buf[--len] = '\0'; /* the last comma */
    return len;
}

static void target_scaling(FILE *md, bool absent) {
    const char *target = "Thread-safe pool: 2-thread threads_local throughput at least 1.8x one "
                         "thread's";
    char detail[768];
    size_t len = 0;
    double one, two;
    bool have = tr_min("threads_local", 1, "spawnpool_ts", &one) &&
                tr_min("threads_local", 2, "spawnpool_ts", &two);
    if (have) {
        len = tr_append(detail, sizeof detail, len, "%s%.2fx: %.2f ns per pair on 1 thread", one / two,
                        one, "");
        len = tr_append(detail, sizeof detail, len, "%s, %.2f on 2 (all pairs together)", two, 0, "");
        double cores;
        if (report_get("threads_local", 2, 64, "spawnpool_ts", "cores_at_min", &cores))
            len = tr_append(detail, sizeof detail, len, "%s, which had %.2f cores", cores, 0, "");
    }
    double f1, f2;
    if (tr_min("threads_local", 1, "checked_cas", &f1) && tr_min("threads_local", 2, "checked_cas", &f2))
        len = tr_append(detail, sizeof detail, len, "%s; the floor checked_cas %.2fx (%.2f ns on 2)",
                        f1 / f2, f2, len ? "" : "");
    peer_scaling(detail, sizeof detail, len);
    bool busy = tr_busy("threads_local", 2, "spawnpool_ts");
    tr_verdict(md, target,
               absent ? "not built" : !have ? "no data" : busy ? tr_inconclusive
                                       : one / two >= 1.8 ? "met" : "**missed**",
               detail);
}

static void target_single(FILE *md, bool absent) {
    const char *target = "Thread-safe mode on one thread within 1.5x of the plain pool per pair "
                         "(time and instructions)";
    char detail[768];
    size_t len = 0;
    double ts, plain, its = 0, iplain = 0;
    bool have = tr_min("threads_local", 1, "spawnpool_ts", &ts) &&
                tr_min("threads_local", 1, "spawnpool", &plain);
    bool have_instr = report_get("instr", 1000, 64, "spawnpool_ts", "instr_per_pair", &its) &&
                      report_get("instr", 1000, 64, "spawnpool", "instr_per_pair", &iplain) &&
                      iplain > 0;
    bool pass = have && ts / plain <= 1.5 && (!have_instr || its / iplain <= 1.5);
    if (have)
        len = tr_append(detail, sizeof detail, len, "%stime %.2fx (threads_local, 1 thread: %.2f ns",
                        ts / plain, ts, "");
    if (have) len = tr_append(detail, sizeof detail, len, "%s against %.2f ns)", plain, 0, "");
    if (have_instr)
        len = tr_append(detail, sizeof detail, len, "%sinstructions %.2fx (%.1f", its / iplain, its,
                        len ? "; " : "");
    if (have_instr)
        len = tr_append(detail, sizeof detail, len, "%s against %.1f per pair, callgrind)", iplain, 0, "");
    else if (!absent)
        len = tr_append(detail, sizeof detail, len, "%sinstructions: run make bench-instr", 0, 0,
                        len ? "; " : "");
    double fc, fs;
    if (tr_min("threads_local", 1, "checked_cas", &fc) && tr_min("threads_local", 1, "checked_side", &fs)) {
        len = tr_append(detail, sizeof detail, len, "%sthe floor: checked_cas %.2f ns against checked_side %.2f",
                        fc, fs, len ? "; " : "");
        len = tr_append(detail, sizeof detail, len, "%s ns, %.2fx (what one CAS a release costs any design)",
                        fc / fs, 0, "");
    }
    if (!have) {
        double p;
        if (tr_min("threads_local", 1, "spawnpool", &p))
            tr_append(detail, sizeof detail, len, "%splain pool %.2f ns per pair on 1 thread", p, 0,
                      len ? "; " : "");
    }
    tr_verdict(md, target, absent ? "not built" : !have ? "no data" : pass ? "met" : "**missed**",
               detail);
}

/* Faster than every peer at 2 threads in threads_local and threads_cross. */
static void target_peers(FILE *md, bool absent) {
    const char *target = "Thread-safe pool faster than every peer in threads_local and "
                         "threads_cross at 2 threads";
    char detail[768];
    size_t len = 0, beaten = 0, compared = 0;
    bool have = false;
    for (size_t w = 0; w < 2; w++) {
        const char *wl = tr_workloads[w].name;
        double ts = NAN, best = INFINITY;
        const char *best_peer = NULL;
        for (size_t p = 0; p < TR_PEERS; p++) {
            double v;
            if (tr_min(wl, 2, tr_peers[p], &v) && v < best) best = v, best_peer = tr_peers[p];
        }
        bool mine = tr_min(wl, 2, "spawnpool_ts", &ts);
        if (mine) {
            have = true;
            for (size_t p = 0; p < TR_PEERS; p++) {
                double v;
                if (!tr_min(wl, 2, tr_peers[p], &v)) continue;
                compared++;
                if (ts < v) beaten++;
            }
        }
        if (best_peer == NULL) continue;
        len = tr_append(detail, sizeof detail, len, "%s", 0, 0, len ? "; " : "");
        len = tr_append(detail, sizeof detail, len, "%s: fastest peer", 0, 0, wl);
        len = tr_append(detail, sizeof detail, len, " %s %.2f ns per pair", best, 0, best_peer);
        if (mine) len = tr_append(detail, sizeof detail, len, "%s, spawnpool_ts %.2f ns", ts, 0, "");
        double floor;
        if (tr_min(wl, 2, "checked_cas", &floor))
            len = tr_append(detail, sizeof detail, len, "%s, the floor checked_cas %.2f ns", floor, 0, "");
    }
    if (have)
        tr_append(detail, sizeof detail, len, "%s; faster than %.0f of %.0f peer cells", (double)beaten,
                  (double)compared, "");
    bool busy = tr_busy("threads_local", 2, "spawnpool_ts") || tr_busy("threads_cross", 2, "spawnpool_ts");
    tr_verdict(md, target,
               absent ? "not built" : !have ? "no data" : busy ? tr_inconclusive
                                       : beaten == compared ? "met" : "**missed**",
               detail);
}

/* threads_cross within 2x of threads_local, at 1 and 2 threads (the counts with a core each). */
static void target_cross(FILE *md, bool absent) {
    const char *target = "Thread-safe pool: threads_cross within 2x of threads_local (1 and 2 "
                         "threads)";
    char detail[768];
    size_t len = 0;
    bool have = false, pass = true;
    for (size_t i = 0; i < 2; i++) {
        double local, cross;
        if (!tr_min("threads_local", tr_counts[i], "spawnpool_ts", &local) ||
            !tr_min("threads_cross", tr_counts[i], "spawnpool_ts", &cross))
            continue;
        have = true;
        if (cross / local > 2.0) pass = false;
        len = tr_append(detail, sizeof detail, len, "%s%.2fx at %.0f thread(s)", cross / local,
                        (double)tr_counts[i], len ? "; " : "");
        len = tr_append(detail, sizeof detail, len, "%s (%.2f against %.2f ns", cross, local, "");
        double fl, fx;
        if (tr_min("threads_local", tr_counts[i], "checked_cas", &fl) &&
            tr_min("threads_cross", tr_counts[i], "checked_cas", &fx))
            len = tr_append(detail, sizeof detail, len, "%s; the floor checked_cas %.2fx, %.2f ns)",
                            fx / fl, fx, "");
        else
            len = tr_append(detail, sizeof detail, len, "%s)", 0, 0, "");
    }
    if (!have) snprintf(detail, sizeof detail, "-");
    bool busy = tr_busy("threads_local", 2, "spawnpool_ts") || tr_busy("threads_cross", 2, "spawnpool_ts");
    tr_verdict(md, target,
               absent ? "not built" : !have ? "no data" : busy ? tr_inconclusive
                                       : pass ? "met" : "**missed**",
               detail);
}

/* 0.5's target (issue 24): the thread-safe pool within 1.15x of the floor checked_cas in
   threads_local and threads_cross at 1 and 2 threads (the counts with a core each). A 2-thread
   cell with no undisturbed repeat of either is not judged: its minimum is not the code's. */
void report_threads_target(FILE *md) {
    const char *target = "Thread-safe pool: `threads_local` and `threads_cross` at 1 and 2 "
                         "threads within 1.15x of `checked_cas`";
    char detail[768];
    size_t len = 0, cells = 0, missed = 0, busy = 0;
    for (size_t w = 0; w < 2; w++)
        for (size_t i = 0; i < 2; i++) {
            const char *wl = tr_workloads[w].name;
            double ts, cas;
            if (!tr_min(wl, tr_counts[i], "spawnpool_ts", &ts) ||
                !tr_min(wl, tr_counts[i], "checked_cas", &cas))
                continue;
            bool disturbed = tr_busy(wl, tr_counts[i], "spawnpool_ts") ||
                             tr_busy(wl, tr_counts[i], "checked_cas");
            cells++;
            if (disturbed) busy++;
            else if (ts / cas > 1.15) missed++;
            len = tr_append(detail, sizeof detail, len, "%s", 0, 0, len ? "; " : "");
            len = tr_append(detail, sizeof detail, len, "%s at %.0f:", (double)tr_counts[i], 0, wl);
            len = tr_append(detail, sizeof detail, len, "%s %.2fx (%.2f ns", ts / cas, ts, "");
            len = tr_append(detail, sizeof detail, len, "%s against %.2f", cas, 0, "");
            len = tr_append(detail, sizeof detail, len, "%s)", 0, 0,
                            disturbed ? ", busy: not judged" : "");
        }
    if (cells > 0)
        tr_append(detail, sizeof detail, len, "%s; %.0f of %.0f cells miss", (double)missed,
                  (double)(cells - busy), "");
    const char *result = ts_not_built() ? "not built" : cells == 0 ? "no data"
                         : missed > 0 ? "**missed**" : busy > 0 ? tr_inconclusive : "met";
    tr_verdict(md, target, result, cells > 0 ? detail : "run make bench");
}

static void tr_table(FILE *md, const char *workload, const char *what, bool absent) {
    fprintf(md, "\n### %s\n\n%s Each cell: median · minimum ns per pair over the repeats, all "
                "threads' pairs together (lower is better), the throughput at the minimum, and "
                "for 2 threads or more the cores that repeat had (the threads' CPU time over the "
                "wall time). The minimum is over the undisturbed repeats, in which the threads "
                "waited for a CPU less than 5%% of their time (oversubscribed: all repeats); "
                "\"busy\": there was none, the machine was busy, the threads took turns on a "
                "core and a lock looks cheaper than it is under contention.\n\n"
                "| implementation | 1 thread | 2 threads | 4 threads | 8 threads |\n"
                "|---|---:|---:|---:|---:|\n",
            workload, what);
    for (size_t i = 0; i < TR_IMPLS; i++) {
        const char *impl = tr_impls[i];
        bool ts = strcmp(impl, "spawnpool_ts") == 0, any = false;
        double v;
        for (size_t k = 0; k < 4 && !any; k++) any = tr_min(workload, tr_counts[k], impl, &v);
        if (!any && !(ts && absent)) continue;
        fprintf(md, "| %s |", impl);
        for (size_t k = 0; k < 4; k++) {
            double mn, med;
            if (ts && absent) fprintf(md, " not built |");
            else if (!tr_min(workload, tr_counts[k], impl, &mn) ||
                     !report_get(workload, tr_counts[k], 64, impl, "ns_per_op_median", &med))
                fprintf(md, " - |");
            else if (tr_counts[k] > 1 &&
                     report_get(workload, tr_counts[k], 64, impl, "cores_at_min", &v))
                fprintf(md, " %.1f · %.1f (%.0f M/s, %.1f cores%s) |", med, mn, 1000.0 / mn, v,
                        tr_busy(workload, tr_counts[k], impl) ? ", busy" : "");
            else
                fprintf(md, " %.1f · %.1f (%.0f M/s) |", med, mn, 1000.0 / mn);
        }
        fprintf(md, "\n");
    }
}

void report_threads(FILE *md) {
    bool any = false;
    double v;
    for (size_t w = 0; w < 3 && !any; w++)
        for (size_t i = 0; i < TR_IMPLS && !any; i++)
            any = report_get(tr_workloads[w].name, 0, 64, tr_impls[i], "ns_per_op_min", &v) ||
                  report_get(tr_workloads[w].name, 0, 64, tr_impls[i], "not_built", &v);
    if (!any) return;
    bool absent = ts_not_built();
    fprintf(md, "\n## Threads\n\nOne pool (or allocator) shared by 1, 2, 4 and 8 threads, "
                "64-byte members; 4 and 8 threads oversubscribe a 2-core machine, to show "
                "behaviour under preemption. `spawnpool_ts`: a thread-safe pool (per-thread "
                "magazines and a depot, the default magazine size); `spawnpool`: the plain pool, "
                "one thread only (the reference for the thread-safe mode's cost); "
                "`checked_cas`: the floor of a thread-safe checked pool (each thread's own free "
                "members, a release is one compare-and-swap on the member's state word, as exact "
                "racing-release detection needs; nothing else shared); `checked_side`: the "
                "checked free list it is made from, one thread only; "
                "`spawnpool_mutex`: the plain pool behind a pthread mutex (the naive answer); "
                "`boost_singleton`: boost::singleton_pool with its default mutex; `gslice`, "
                "`glibc`, `mimalloc`, `tcmalloc`, `jemalloc`: the allocators' malloc/free. "
                "Up to 2 threads each worker has a CPU of its own (pinned); 4 and 8 are left to "
                "the scheduler. "
                "Targets judged on the minimum over the undisturbed repeats (below); ratios within one run.%s\n\n"
                "| target | result | numbers |\n|---|---|---|\n",
            absent ? " The thread-safe pool was not built: this library has no thread-safe pools "
                     "yet, so its rows say so and no number stands in for it."
                   : "");
    target_scaling(md, absent);
    target_single(md, absent);
    target_peers(md, absent);
    target_cross(md, absent);
    for (size_t w = 0; w < 3; w++) tr_table(md, tr_workloads[w].name, tr_workloads[w].what, absent);
}
