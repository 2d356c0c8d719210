/* SPDX-License-Identifier: Zlib */
/*
    bench_report_targets.c -- spreport's "Targets" section: a line per target of 0.5 (issue 24),
    met, missed or no data, with the numbers it was judged on and what it was judged against.

    Wall-clock targets are judged on the minimum over the repeats (ns_per_op_min) over every
    LIFO, random churn and FIFO cell the run has (each N; 16, 64 and 256 B), ratios within one
    run, with the worst cell on medians beside. A peer that ran in a process of its own
    (jemalloc) is judged against the spawnpool and the floors measured in that process, its
    "@jemalloc" rows (bench_main.c's emit). The thread-safe pool's line comes from
    bench_report_threads.c; instruction counts are information (bench_report.c's table).
*/
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "bench_floors.h"
#include "bench_report.h"

static const char *const matrix_workloads[] = {"lifo", "churn", "fifo"};
static const size_t matrix_sizes[] = {16, 64, 256};
static const char *const target_floors[] = {BENCH_TARGET_FLOORS};
enum { TARGET_FLOORS = sizeof target_floors / sizeof target_floors[0] };

/* Issue 24's slack: spawnpool within 1.10x of the checked floors, and of a peer that no floor
   beats. */
static const double slack = 1.10;

static void line(FILE *md, const char *target, const char *result, const char *detail) {
    fprintf(md, "| %s | %s | %s |\n", target, result, detail);
}

static void judged(FILE *md, const char *target, bool pass, const char *detail) {
    line(md, target, pass ? "met" : "**missed**", detail);
}

/* Appends printf-style text to the string in buf (of cap bytes), cut at cap. */
static void appendf(char *buf, size_t cap, const char *fmt, ...) {
    size_t len = strlen(buf);
    if (len + 1 >= cap) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + len, cap - len, fmt, ap);
    va_end(ap);
}

static bool time_of(const char *w, size_t n, size_t size, const char *impl, const char *metric,
                    double *out) {
    return report_get(w, n, size, impl, metric, out) && *out > 0;
}

/* ---------------------------------------------------------------------------------------------
   The matrix: every LIFO, churn and FIFO cell
   ------------------------------------------------------------------------------------------ */

typedef void cell_fn(const char *w, size_t n, size_t size, void *ctx);

static void each_cell(cell_fn *fn, void *ctx) {
    for (size_t k = 0; k < sizeof matrix_workloads / sizeof matrix_workloads[0]; k++)
        for (size_t s = 0; s < sizeof matrix_sizes / sizeof matrix_sizes[0]; s++) {
            size_t ns[REPORT_N_MAX], count = report_ns(matrix_workloads[k], matrix_sizes[s], ns);
            for (size_t j = 0; j < count; j++) fn(matrix_workloads[k], ns[j], matrix_sizes[s], ctx);
        }
}

/* A comparison over the cells: time ratios spawnpool / reference, higher is worse. */
typedef struct tally {
    size_t cells, missed, by_rule;
    double worst, best;
    double subject_ns, ref_ns; /* the worst cell's times */
    const char *ref;           /* and its reference */
    char where[48];            /* "churn 256k 16 B" */
} tally;

static void tally_add(tally *t, const char *w, size_t n, size_t size, double sp, double ref,
                      const char *ref_name, bool met) {
    double r = sp / ref;
    if (t->cells == 0 || r > t->worst) {
        t->worst = r, t->subject_ns = sp, t->ref_ns = ref, t->ref = ref_name;
        snprintf(t->where, sizeof t->where, "%s %s %zu B", w, report_n_label(n), size);
    }
    if (t->cells == 0 || r < t->best) t->best = r;
    t->cells++;
    t->missed += !met;
}

/* The spawnpool rows a peer is compared with, and the floors' tag: those of the peer's own
   process ("spawnpool@jemalloc") when the run has them, else the main process's. */
static bool apart_of(const char *peer, char tag[40]) {
    char subject[64];
    snprintf(subject, sizeof subject, "spawnpool@%s", peer);
    for (size_t k = 0; k < sizeof matrix_workloads / sizeof matrix_workloads[0]; k++)
        if (report_has(matrix_workloads[k], 0, subject)) {
            snprintf(tag, 40, "@%s", peer);
            return true;
        }
    tag[0] = '\0';
    return false;
}

/* Spawnpool against the faster of the two checked floors in each cell. */
typedef struct floor_ctx {
    const char *metric;
    tally t;
    size_t bit_faster, byte_faster;
} floor_ctx;

static void floor_cell(const char *w, size_t n, size_t size, void *ctx) {
    floor_ctx *c = ctx;
    double sp, bit, byte;
    if (!time_of(w, n, size, "spawnpool", c->metric, &sp)) return;
    bool has_bit = time_of(w, n, size, "checked_plan", c->metric, &bit);
    bool has_byte = time_of(w, n, size, "checked_plan_byte", c->metric, &byte);
    if (!has_bit && !has_byte) return;
    bool use_bit = has_bit && (!has_byte || bit <= byte);
    double ref = use_bit ? bit : byte;
    c->bit_faster += use_bit, c->byte_faster += !use_bit;
    tally_add(&c->t, w, n, size, sp, ref, use_bit ? "checked_plan" : "checked_plan_byte",
              sp <= slack * ref);
}

static void target_floors_line(FILE *md) {
    floor_ctx c = {.metric = "ns_per_op_min"}, m = {.metric = "ns_per_op_median"};
    each_cell(floor_cell, &c);
    each_cell(floor_cell, &m);
    const char *target = "Within 1.10x of the faster of `checked_plan` and `checked_plan_byte`, "
                         "every cell";
    if (c.t.cells == 0) {
        line(md, target, "no data", "run make bench");
        return;
    }
    char detail[512] = "", a[32], b[32];
    report_fmt_ns(a, sizeof a, c.t.subject_ns);
    report_fmt_ns(b, sizeof b, c.t.ref_ns);
    appendf(detail, sizeof detail,
            "worst %.2fx (%s: spawnpool %s ns, %s %s ns); %zu of %zu cells miss; the faster "
            "floor: checked_plan in %zu cells, checked_plan_byte in %zu",
            c.t.worst, c.t.where, a, c.t.ref, b, c.t.missed, c.t.cells, c.bit_faster,
            c.byte_faster);
    if (m.t.cells > 0)
        appendf(detail, sizeof detail, "; on medians worst %.2fx (%s)", m.t.worst, m.t.where);
    judged(md, target, c.t.missed == 0, detail);
}

/* Spawnpool against a peer: at least `limit` times faster in each cell, or, where no floor
   beats the peer, within 1.10x of it (issue 24's rule: the peer is at what any pool reaches). */
typedef struct peer_ctx {
    const char *peer, *metric, *tag;
    double limit;
    tally t;
    size_t floor_missed[TARGET_FLOORS]; /* cells a floor misses the same target in */
} peer_ctx;

static void peer_cell(const char *w, size_t n, size_t size, void *ctx) {
    peer_ctx *c = ctx;
    char subject[64];
    double sp, p;
    snprintf(subject, sizeof subject, "spawnpool%s", c->tag);
    if (!time_of(w, n, size, subject, c->metric, &sp) ||
        !time_of(w, n, size, c->peer, c->metric, &p))
        return;
    bool measured = false, beaten = false;
    for (size_t i = 0; i < TARGET_FLOORS; i++) {
        char floor[64];
        double f;
        snprintf(floor, sizeof floor, "%s%s", target_floors[i], c->tag);
        if (!time_of(w, n, size, floor, c->metric, &f)) continue;
        measured = true;
        beaten |= f < p;
        c->floor_missed[i] += p < c->limit * f;
    }
    bool met = p >= c->limit * sp;
    bool by_rule = !met && measured && !beaten && sp <= slack * p;
    c->t.by_rule += by_rule;
    tally_add(&c->t, w, n, size, sp, p, c->peer, met || by_rule);
}

static void target_peer_line(FILE *md, const char *target, const char *peer, double limit) {
    char tag[40];
    bool apart = apart_of(peer, tag);
    peer_ctx c = {.peer = peer, .metric = "ns_per_op_min", .tag = tag, .limit = limit};
    peer_ctx m = {.peer = peer, .metric = "ns_per_op_median", .tag = tag, .limit = limit};
    each_cell(peer_cell, &c);
    each_cell(peer_cell, &m);
    if (c.t.cells == 0) {
        line(md, target, "no data", "run make bench");
        return;
    }
    char detail[768] = "", a[32], b[32];
    report_fmt_ns(a, sizeof a, c.t.subject_ns);
    report_fmt_ns(b, sizeof b, c.t.ref_ns);
    appendf(detail, sizeof detail,
            "worst speed-up %.2fx (%s: spawnpool %s ns, %s %s ns); %zu of %zu cells miss, %zu "
            "met by the floors' rule",
            1.0 / c.t.worst, c.t.where, a, peer, b, c.t.missed, c.t.cells, c.t.by_rule);
    if (m.t.cells > 0)
        appendf(detail, sizeof detail, "; on medians worst %.2fx (%s)", 1.0 / m.t.worst,
                m.t.where);
    appendf(detail, sizeof detail, "; cells the floors miss:");
    for (size_t i = 0; i < TARGET_FLOORS; i++)
        appendf(detail, sizeof detail, "%s %s %zu", i ? "," : "", target_floors[i],
                c.floor_missed[i]);
    if (apart)
        appendf(detail, sizeof detail, " (%s ran in a process of its own: judged against "
                "spawnpool and the floors measured in that process)", peer);
    judged(md, target, c.t.missed == 0, detail);
}

bool report_versus_peer(const char *peer, report_versus *out) {
    char tag[40];
    apart_of(peer, tag);
    peer_ctx c = {.peer = peer, .metric = "ns_per_op_min", .tag = tag, .limit = 1.0};
    each_cell(peer_cell, &c);
    memset(out, 0, sizeof *out);
    if (c.t.cells == 0) return false;
    /* The plain count: a cell where the peer is faster, whatever the floors do. */
    out->cells = c.t.cells, out->peer_faster = c.t.missed + c.t.by_rule;
    out->worst = 1.0 / c.t.worst, out->best = 1.0 / c.t.best;
    snprintf(out->where, sizeof out->where, "%s", c.t.where);
    return true;
}

/* ---------------------------------------------------------------------------------------------
   Memory, steady state, reclaim and the frame
   ------------------------------------------------------------------------------------------ */

static void target_bookkeeping(FILE *md) {
    const char *target = "Bookkeeping at most 9 bytes a member in memory order";
    char detail[512] = "bytes beyond the object at 1M members:";
    bool have = false, pass = true;
    for (size_t s = 0; s < sizeof matrix_sizes / sizeof matrix_sizes[0]; s++) {
        double v;
        if (!report_get("memory", 1000000, matrix_sizes[s], "spawnpool", "overhead_per_member", &v))
            continue;
        appendf(detail, sizeof detail, "%s %.2f at %zu B", have ? "," : "", v, matrix_sizes[s]);
        have = true;
        pass &= v <= 9.0;
    }
    if (!have) {
        line(md, target, "no data", "run make bench");
        return;
    }
    for (size_t i = 1; i < TARGET_FLOORS; i++) { /* the checked floors, at 64 B */
        double v;
        if (report_get("memory", 1000000, 64, target_floors[i], "overhead_per_member", &v))
            appendf(detail, sizeof detail, "%s %s %.2f", i == 1 ? "; at 64 B" : ",",
                    target_floors[i], v);
    }
    /* The memory workload counts all the pool holds (sp_stats.bytes): its bookkeeping and
       whatever it committed beyond the members, so the line is an upper bound on bookkeeping. */
    appendf(detail, sizeof detail,
            " (spawnpool's sp_stats.bytes, all it holds: at most its bookkeeping)");
    judged(md, target, pass, detail);
}

typedef struct steady_ctx {
    size_t rows;
    double most;
    char where[64];
} steady_ctx;

static void steady_row(const char *impl, size_t n, size_t size, double v, void *ctx) {
    steady_ctx *c = ctx;
    (void)size;
    if (c->rows++ == 0 || v > c->most) {
        c->most = v;
        snprintf(c->where, sizeof c->where, "%s at %s", impl, report_n_label(n));
    }
}

static void target_steady(FILE *md) {
    steady_ctx c = {0};
    report_each_row("steady", "allocator_calls", steady_row, &c);
    const char *target = "Zero allocations in steady state";
    if (c.rows == 0) {
        line(md, target, "no data", "run make bench");
        return;
    }
    char detail[160] = "";
    if (c.most > 0)
        appendf(detail, sizeof detail, "%.0f allocator calls in a steady pass (%s; the most of "
                "%zu runs)", c.most, c.where, c.rows);
    else
        appendf(detail, sizeof detail, "no allocator call in the steady passes of %zu runs",
                c.rows);
    judged(md, target, c.most == 0, detail);
}

static void target_snapshot(FILE *md) {
    const char *target = "Snapshot: save + restore of 1M 64-byte plain members within 2x of memcpy";
    double sp, ref;
    if (!time_of("snapshot", 1000000, 64, "spawnpool", "save_restore_ns", &sp) ||
        !time_of("snapshot", 1000000, 64, "memcpy", "save_restore_ns", &ref)) {
        line(md, target, "no data", "run make bench");
        return;
    }
    char detail[256] = "";
    appendf(detail, sizeof detail, "%.2fx: %.1f ms for sp_snapshot + sp_restore, %.1f ms for memcpy "
            "of the members' bytes out and back into fresh memory (medians)", sp / ref, sp / 1e6, ref / 1e6);
    judged(md, target, sp / ref <= 2.0, detail);
}

static void target_reclaim(FILE *md) {
    const char *target = "Reclaim-oldest at 1M within 1.5x of 1k";
    double a, b, r1, r2;
    if (!time_of("reclaim", 1000, 64, "spawnpool_reclaim", "ns_per_op_min", &a) ||
        !time_of("reclaim", 1000000, 64, "spawnpool_reclaim", "ns_per_op_min", &b)) {
        line(md, target, "no data", "run make bench");
        return;
    }
    char detail[192] = "";
    appendf(detail, sizeof detail, "%.2f ns at 1k, %.2f ns at 1M: %.2fx", a, b, b / a);
    if (time_of("reclaim", 1000, 64, "array_order", "ns_per_op_min", &r1) &&
        time_of("reclaim", 1000000, 64, "array_order", "ns_per_op_min", &r2))
        appendf(detail, sizeof detail, " (an array kept in order: %.0fx)", r2 / r1);
    judged(md, target, b / a <= 1.5, detail);
}

static void target_frame(FILE *md) {
    const char *target = "Frame p99 below glibc's (the fountain workload)";
    double sp, gl, sp50, gl50;
    if (!report_get("frame", 0, 64, "spawnpool", "frame_ms_p99", &sp) ||
        !report_get("frame", 0, 64, "glibc", "frame_ms_p99", &gl)) {
        line(md, target, "no data", "run make bench");
        return;
    }
    char detail[160] = "";
    appendf(detail, sizeof detail, "p99 %.3f ms against glibc's %.3f", sp, gl);
    if (report_get("frame", 0, 64, "spawnpool", "frame_ms_p50", &sp50) &&
        report_get("frame", 0, 64, "glibc", "frame_ms_p50", &gl50))
        appendf(detail, sizeof detail, " (p50 %.3f and %.3f)", sp50, gl50);
    judged(md, target, sp < gl, detail);
}

/* ---------------------------------------------------------------------------------------------
   The embed workload (bench_embed.c): n is the count a row is about, item size 0
   ------------------------------------------------------------------------------------------ */

static const char *const no_embed = "the run has no embed rows (`spbench --workload embed`; "
                                    "runs before 0.5 have none)";

/* A row of the embed workload at its largest n (a row per metric in a run). */
static bool embed_row(const char *impl, const char *metric, size_t *n, double *v) {
    size_t ns[REPORT_N_MAX], count = report_ns("embed", 0, ns);
    for (size_t k = count; k-- > 0;)
        if (report_get("embed", ns[k], 0, impl, metric, v)) {
            *n = ns[k];
            return true;
        }
    return false;
}

static const char *mib(char buf[32], double bytes) {
    double gib = 1024.0 * 1024 * 1024;
    if (bytes >= gib) snprintf(buf, 32, "%.2f GiB", bytes / gib);
    else snprintf(buf, 32, "%.1f MiB", bytes / (1024.0 * 1024));
    return buf;
}

static void target_worlds(FILE *md) {
    const char *target = "embed: 1,000 worlds of 53 pools within 1.5x of malloc";
    size_t n, nm;
    double sp, mal;
    if (!embed_row("spawnpool", "world_ns", &n, &sp) ||
        !embed_row("malloc", "world_ns", &nm, &mal) || mal <= 0) {
        line(md, target, "no data", no_embed);
        return;
    }
    char detail[256] = "";
    appendf(detail, sizeof detail, "%.2fx: %.1f µs a world against %.1f µs on malloc (the median "
            "of %zu worlds)", sp / mal, sp / 1000, mal / 1000, n);
    judged(md, target, sp / mal <= 1.5, detail);
}

static void target_world_calls(FILE *md) {
    const char *target = "embed: no system call per world in steady state";
    size_t n;
    double v;
    if (!embed_row("spawnpool", "world_os_calls", &n, &v)) {
        line(md, target, "no data", no_embed);
        return;
    }
    char detail[160] = "";
    appendf(detail, sizeof detail, "%.2f system calls a world (virtual memory), over %zu worlds "
            "after a warm-up", v, n);
    judged(md, target, v == 0, detail);
}

/* Address space: the pools' own reservations (judged), the process's growth beside. */
static void target_reserved(FILE *md, const char *target, const char *prefix, double limit) {
    char metric[64], a[32], b[32];
    size_t n;
    double v, process;
    snprintf(metric, sizeof metric, "%s_reserved_bytes", prefix);
    if (!embed_row("spawnpool", metric, &n, &v)) {
        line(md, target, "no data", no_embed);
        return;
    }
    char detail[256] = "";
    appendf(detail, sizeof detail, "%s reserved by the %zu pools (limit %s)", mib(a, v), n,
            mib(b, limit));
    snprintf(metric, sizeof metric, "%s_process_reserved_bytes", prefix);
    if (embed_row("spawnpool", metric, &n, &process))
        appendf(detail, sizeof detail, "; the process's reservations grew by %s while they were "
                "made", mib(a, process));
    judged(md, target, v <= limit, detail);
}

/* Live pools, all working: judged only at the target's count (a quick run makes fewer). */
static void target_live_pools(FILE *md, const char *target, const char *metric, size_t asked) {
    size_t n;
    double ok;
    if (!embed_row("spawnpool", metric, &n, &ok)) {
        line(md, target, "no data", no_embed);
        return;
    }
    char detail[256] = "";
    appendf(detail, sizeof detail, "%.0f of %zu live pools worked", ok, n);
    if (n < asked)
        appendf(detail, sizeof detail, " (fewer than the target's: a quick run; make bench runs "
                "them all)");
    if (ok < (double)n || n >= asked) judged(md, target, ok >= (double)n, detail);
    else line(md, target, "no data", detail);
}

static void target_alternating(FILE *md) {
    const char *target = "embed: a thread alternating between 8 thread-safe pools within 1.25x "
                         "of one pool's pair";
    size_t n, n1;
    double alt, one;
    if (!embed_row("spawnpool", "ts_alternating_ns", &n, &alt) ||
        !embed_row("spawnpool", "ts_one_pool_ns", &n1, &one) || one <= 0) {
        line(md, target, "no data", no_embed);
        return;
    }
    char detail[192] = "";
    appendf(detail, sizeof detail, "%.2fx: %.2f ns a pair on %zu pools in turn, %.2f on one",
            alt / one, alt, n, one);
    judged(md, target, alt / one <= 1.25, detail);
}


/* ---------------------------------------------------------------------------------------------
   Size classes (bench_sizes.c): n live buffers, item size 0 for mixed sizes, 64 for one size
   ------------------------------------------------------------------------------------------ */

/* A mixed cell's place names no object size. */
static void where_mixed(tally *t) {
    char *z = strstr(t->where, " 0 B");
    if (z) *z = '\0';
}

static const char *const no_sizes = "the run has no sizes rows (`spbench --workload sizes`)";

/* The set against a plain pool's pair: one pool of 64 B in the 64-byte cells, the same pools in
   a table the caller keeps (passing the class back) in the mixed ones. */
static void target_sizes_pair(FILE *md) {
    const char *target = "sizes: acquire+release within 1.25x of a plain pool's pair of the same size";
    tally t = {0};
    for (size_t size = 0; size <= 64; size += 64) {
        size_t ns[REPORT_N_MAX], count = report_ns("sizes", size, ns);
        for (size_t k = 0; k < count; k++) {
            double set, ref;
            const char *ref_name = size ? "spawnpool" : "spawnpool_pools";
            if (!time_of("sizes", ns[k], size, "spawnpool_sizes", "ns_per_pair_min", &set) ||
                !time_of("sizes", ns[k], size, ref_name, "ns_per_pair_min", &ref))
                continue;
            tally_add(&t, size ? "one size" : "mixed", ns[k], size, set, ref, ref_name, set <= 1.25 * ref);
        }
    }
    if (t.cells == 0) {
        line(md, target, "no data", no_sizes);
        return;
    }
    where_mixed(&t);
    char detail[256] = "";
    appendf(detail, sizeof detail, "worst %.2fx (%s: the set %.1f ns, %s %.1f ns), best %.2fx; %zu of %zu cells miss",
            t.worst, t.where, t.subject_ns, t.ref, t.ref_ns, t.best, t.missed, t.cells);
    judged(md, target, t.missed == 0, detail);
}

static void target_sizes_peer(FILE *md, const char *peer) {
    char target[128], subject[64];
    snprintf(target, sizeof target, "sizes: faster than %s in a churn of mixed sizes (16 B-8 KiB; 1k, 64k, 1M live)", peer);
    snprintf(subject, sizeof subject, "spawnpool_sizes@%s", peer);
    if (!report_has("sizes", 0, subject)) snprintf(subject, sizeof subject, "spawnpool_sizes");
    tally t = {0};
    size_t ns[REPORT_N_MAX], count = report_ns("sizes", 0, ns);
    for (size_t k = 0; k < count; k++) {
        double set, ref;
        if (!time_of("sizes", ns[k], 0, subject, "ns_per_pair_min", &set) ||
            !time_of("sizes", ns[k], 0, peer, "ns_per_pair_min", &ref))
            continue;
        tally_add(&t, "mixed", ns[k], 0, set, ref, peer, set < ref);
    }
    if (t.cells == 0) {
        line(md, target, "no data", no_sizes);
        return;
    }
    where_mixed(&t);
    char detail[256] = "";
    appendf(detail, sizeof detail, "worst %.2fx (%s: the set %.1f ns, %s %.1f ns), best %.2fx; %zu of %zu cells miss",
            t.worst, t.where, t.subject_ns, peer, t.ref_ns, t.best, t.missed, t.cells);
    judged(md, target, t.missed == 0, detail);
}

static void target_sizes_threads(FILE *md) {
    const char *target = "sizes: a thread-safe set at 2 threads within 1.15x of the thread-safe pools' pair";
    double set, ref;
    if (!time_of("sizes_threads", 2, 0, "spawnpool_sizes_ts", "ns_per_pair_min", &set) ||
        !time_of("sizes_threads", 2, 0, "spawnpool_pools_ts", "ns_per_pair_min", &ref)) {
        line(md, target, "no data", no_sizes);
        return;
    }
    char detail[160] = "";
    appendf(detail, sizeof detail, "%.2fx: %.1f ns a pair a thread, the pools in a table %.1f", set / ref, set, ref);
    judged(md, target, set <= 1.15 * ref, detail);
}

static void target_sizes_memory(FILE *md) {
    const char *target = "sizes: bookkeeping within 1.1x of the pools it is made of";
    size_t ns[REPORT_N_MAX], count = report_ns("sizes_memory", 0, ns);
    double set = 0, pools = 0;
    if (count == 0 || !report_get("sizes_memory", ns[count - 1], 0, "spawnpool_sizes", "bytes", &set) ||
        !report_get("sizes_memory", ns[count - 1], 0, "spawnpool_pools", "bytes", &pools) || pools <= 0) {
        line(md, target, "no data", no_sizes);
        return;
    }
    char detail[160] = "";
    appendf(detail, sizeof detail, "%.4fx at %s live: the set %.0f B, the same pools alone %.0f B", set / pools,
            report_n_label(ns[count - 1]), set, pools);
    judged(md, target, set <= 1.1 * pools, detail);
}

void report_targets(FILE *md) {
    fprintf(md, "\n## Targets\n\nThe targets of 0.5, for the default pool (`initial = 0`, "
                "grown by acquisition, `max` the cell's live count, memory order, no hooks). "
                "Wall-clock lines "
                "are judged on the minimum over the repeats, over every LIFO, random churn and "
                "FIFO cell of the run (every N and object size measured, ratios within one run), "
                "the worst cell on medians beside it; a peer that ran in a process of its own "
                "(jemalloc) against the spawnpool and the floors measured in that process. "
                "Against a peer, a cell where no floor (`freelist`, `checked_plan`, "
                "`checked_plan_byte`) beats the peer either counts as met when spawnpool is "
                "within 1.10x of the peer (\"met by the floors' rule\"). Instruction counts "
                "(`make bench-instr`) are information, below, not targets.\n\n"
                "| target | result | numbers |\n|---|---|---|\n");
    target_floors_line(md);
    static const char *const peers[] = {"glibc", "mimalloc", "tcmalloc", "gslice", "jemalloc"};
    for (size_t i = 0; i < sizeof peers / sizeof peers[0]; i++) {
        char target[96];
        snprintf(target, sizeof target, "Faster than %s in every cell", peers[i]);
        target_peer_line(md, target, peers[i], 1.0);
    }
    target_peer_line(md, "At least 1.5x faster than glibc in every cell", "glibc", 1.5);
    report_threads_target(md);
    target_bookkeeping(md);
    target_steady(md);
    target_reclaim(md);
    target_snapshot(md);
    target_frame(md);
    target_worlds(md);
    target_world_calls(md);
    target_reserved(md, "embed: a live world of 53 pools reserves at most 64 MiB", "world",
                    64.0 * 1024 * 1024);
    target_reserved(md, "embed: 1,000 live pools of 100 64-byte members reserve at most 4 GiB",
                    "pools1000", 4.0 * 1024 * 1024 * 1024);
    target_live_pools(md, "embed: 100,000 live pools without handles, all working",
                      "pools_no_handle_ok", 100000);
    target_live_pools(md, "embed: 65,536 live pools with a handle each, all working",
                      "pools_handle_ok", 65536);
    target_alternating(md);
    target_sizes_pair(md);
    static const char *const sizes_peers[] = {"glibc", "mimalloc", "tcmalloc", "jemalloc"};
    for (size_t i = 0; i < sizeof sizes_peers / sizeof sizes_peers[0]; i++) target_sizes_peer(md, sizes_peers[i]);
    target_sizes_threads(md);
    target_sizes_memory(md);
}
