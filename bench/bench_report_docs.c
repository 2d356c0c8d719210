/* SPDX-License-Identifier: Zlib */
/*
    bench_report_docs.c -- spreport --docs / --check: the documentation's numbers, from the CSV.

    A Markdown file marks each generated region with two comments on lines of their own:

        <!-- spreport:churn -->
        (generated: a table, a list)
        <!-- /spreport -->

    --docs replaces what lies between them with the region's text from the loaded run; --check
    writes nothing and names each region that differs, so `make test` fails when the docs quote
    numbers of another run (or numbers typed by hand) and `make bench-docs` brings them back.
    A region name the generator does not know fails both. The regions are listed in `regions`
    below; each writes Markdown from the CSV only (and META, the run's latest.md, for the lines
    that name the run), so the same CSV gives the same text.
*/
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "bench_floors.h"
#include "bench_report.h"

/* The rivals of the tables, in column order: the malloc allocators, then the other pools. */
static const char *const peers[] = {"glibc", "mimalloc", "tcmalloc", "jemalloc", "gslice",
                                    "boost_pool"};
enum { PEERS = sizeof peers / sizeof peers[0] };
/* The floors the docs name (latest.md's targets count them): a free list with no checks, and the
   two that check their releases with a state bit or a byte a member beside an index stack. */
static const char *const doc_floors[] = {BENCH_TARGET_FLOORS};
enum { DOC_FLOORS = sizeof doc_floors / sizeof doc_floors[0] };
static const size_t sizes[] = {16, 64, 256};

static const char *meta_path;

static void ns_cell(FILE *md, double v) {
    char buf[32];
    report_fmt_ns(buf, sizeof buf, v);
    fprintf(md, " %s |", buf);
}

/* A peer's time over spawnpool's in one cell, bold where the peer is faster. spawnpool's time
   comes from the peer's own process when it ran apart (jemalloc). */
static void ratio_cell(FILE *md, const char *w, size_t n, size_t size, const char *peer) {
    char subject[64];
    double sp, p;
    snprintf(subject, sizeof subject, "spawnpool@%s", peer);
    if (!report_has(w, 0, subject)) snprintf(subject, sizeof subject, "spawnpool");
    if (!report_get(w, n, size, subject, "ns_per_op_min", &sp) ||
        !report_get(w, n, size, peer, "ns_per_op_min", &p) || sp <= 0) {
        fprintf(md, " - |");
        return;
    }
    fprintf(md, p < sp ? " **%.2fx** |" : " %.2fx |", p / sp);
}

/* ---------------------------------------------------------------------------------------------
   Regions
   ------------------------------------------------------------------------------------------ */

/* The run: the Run:, Machine:, Compiler: and Peers: lines of its latest.md, as a list. */
static bool region_run(FILE *md) {
    FILE *meta = fopen(meta_path, "r");
    if (meta == NULL) {
        perror(meta_path);
        return false;
    }
    static const char *const keys[] = {"Run: ", "Machine: ", "Compiler: ", "Peers: "};
    char line[1024];
    bool any = false;
    for (size_t k = 0; k < 4; k++) {
        rewind(meta);
        while (fgets(line, sizeof line, meta) != NULL) {
            if (strncmp(line, keys[k], strlen(keys[k])) != 0) continue;
            line[strcspn(line, "\n")] = '\0';
            /* one space where the run script left two, no trailing separator */
            char out[1024];
            size_t o = 0;
            for (size_t i = 0; line[i] && o + 1 < sizeof out; i++)
                if (!(line[i] == ' ' && (line[i + 1] == ' ' || line[i + 1] == '\0')))
                    out[o++] = line[i];
            out[o] = '\0';
            while (o > 0 && out[o - 1] == ';') out[--o] = '\0';
            fprintf(md, "- %s\n", out);
            any = true;
            break;
        }
    }
    fclose(meta);
    return any;
}

/* Spawnpool against each peer and floor over every LIFO, churn and FIFO cell. */
static bool region_versus(FILE *md) {
    fprintf(md, "| against | cells where spawnpool is faster | their time / spawnpool's | "
                "spawnpool's worst cell |\n|---|---:|---:|---|\n");
    bool any = false;
    for (size_t i = 0; i < PEERS + DOC_FLOORS; i++) {
        const char *peer = i < PEERS ? peers[i] : doc_floors[i - PEERS];
        report_versus v;
        if (!report_versus_peer(peer, &v)) continue;
        fprintf(md, "| %s%s | %zu of %zu | %.2fx to %.2fx | %s (%.2fx) |\n", report_label(peer),
                i < PEERS ? "" : " (floor)", v.cells - v.peer_faster, v.cells, v.worst, v.best,
                v.where, v.worst);
        any = true;
    }
    return any;
}

/* The faster of the checked floors in a cell (the reference of 0.5's first target). */
static bool checked_floor(const char *w, size_t n, size_t size, double *out) {
    bool any = false;
    for (size_t i = 1; i < DOC_FLOORS; i++) {
        double v;
        if (report_get(w, n, size, doc_floors[i], "ns_per_op_min", &v) && (!any || v < *out))
            *out = v, any = true;
    }
    return any;
}

/* The timing table of lifo, churn or fifo: a row per size and N. */
static bool timing(FILE *md, const char *w) {
    size_t rows = 0;
    fprintf(md, "| live | size | spawnpool, ns | %s, ns | checked floor, ns |",
            report_label(doc_floors[0]));
    for (size_t p = 0; p < PEERS; p++) fprintf(md, " %s |", report_label(peers[p]));
    fprintf(md, "\n|---:|---:|---:|---:|---:|");
    for (size_t p = 0; p < PEERS; p++) fprintf(md, "---:|");
    fprintf(md, "\n");
    for (size_t s = 0; s < 3; s++) {
        size_t ns[REPORT_N_MAX], count = report_ns(w, sizes[s], ns);
        for (size_t k = 0; k < count; k++) {
            double sp, fl;
            if (!report_get(w, ns[k], sizes[s], "spawnpool", "ns_per_op_min", &sp)) continue;
            fprintf(md, "| %s | %zu B |", report_n_label(ns[k]), sizes[s]);
            ns_cell(md, sp);
            if (report_get(w, ns[k], sizes[s], doc_floors[0], "ns_per_op_min", &fl)) ns_cell(md, fl);
            else fprintf(md, " - |");
            if (checked_floor(w, ns[k], sizes[s], &fl)) ns_cell(md, fl);
            else fprintf(md, " - |");
            for (size_t p = 0; p < PEERS; p++) ratio_cell(md, w, ns[k], sizes[s], peers[p]);
            fprintf(md, "\n");
            rows++;
        }
    }
    return rows > 0;
}

static bool region_lifo(FILE *md) { return timing(md, "lifo"); }
static bool region_churn(FILE *md) { return timing(md, "churn"); }
static bool region_fifo(FILE *md) { return timing(md, "fifo"); }

/* A table of ns per op at 64 B against N, a column per implementation (label given). */
static bool by_n(FILE *md, const char *w, const char *const impls[], const char *const heads[],
                 size_t count) {
    size_t ns[REPORT_N_MAX], n_count = report_ns(w, 64, ns);
    if (n_count == 0) return false;
    fprintf(md, "| live |");
    for (size_t i = 0; i < count; i++) fprintf(md, " %s |", heads[i]);
    fprintf(md, "\n|---:|");
    for (size_t i = 0; i < count; i++) fprintf(md, "---:|");
    fprintf(md, "\n");
    for (size_t k = 0; k < n_count; k++) {
        fprintf(md, "| %s |", report_n_label(ns[k]));
        for (size_t i = 0; i < count; i++) {
            double v;
            if (report_get(w, ns[k], 64, impls[i], "ns_per_op_min", &v)) ns_cell(md, v);
            else fprintf(md, " - |");
        }
        fprintf(md, "\n");
    }
    return true;
}

static bool region_reclaim(FILE *md) {
    static const char *const impls[] = {"spawnpool_reclaim", "array_order"};
    static const char *const heads[] = {"spawnpool, RECLAIM pool, ns",
                                        "array kept in acquisition order, ns"};
    return by_n(md, "reclaim", impls, heads, 2);
}

static bool region_resolve(FILE *md) {
    static const char *const impls[] = {"spawnpool_handles", "freelist"};
    static const char *const heads[] = {"`sp_resolve`, ns", "bare generation-checked table, ns"};
    return by_n(md, "resolve", impls, heads, 2);
}

/* Iteration: spawnpool's three walks, and the fastest and slowest array of pointers. */
static bool region_iterate(FILE *md) {
    static const char *const arrays[] = {"freelist", "boost_pool", "gslice", "glibc",
                                         "mimalloc", "tcmalloc", "jemalloc"};
    size_t ns[REPORT_N_MAX], n_count = report_ns("iterate", 64, ns);
    if (n_count == 0) return false;
    fprintf(md, "| live | `sp_each`, ns | `sp_iter`, ns | `sp_first`/`sp_next`, ns | array of "
                "pointers, ns (fastest and slowest allocator) |\n|---:|---:|---:|---:|---:|\n");
    for (size_t k = 0; k < n_count; k++) {
        static const char *const walks[] = {"spawnpool", "spawnpool_iter", "spawnpool_next"};
        fprintf(md, "| %s |", report_n_label(ns[k]));
        for (size_t i = 0; i < 3; i++) {
            double v;
            if (report_get("iterate", ns[k], 64, walks[i], "ns_per_op_min", &v)) ns_cell(md, v);
            else fprintf(md, " - |");
        }
        double lo = 0, hi = 0;
        bool any = false;
        for (size_t a = 0; a < sizeof arrays / sizeof arrays[0]; a++) {
            double v;
            if (!report_get("iterate", ns[k], 64, arrays[a], "ns_per_op_min", &v)) continue;
            if (!any || v < lo) lo = v;
            if (!any || v > hi) hi = v;
            any = true;
        }
        char a[32], b[32];
        report_fmt_ns(a, sizeof a, lo);
        report_fmt_ns(b, sizeof b, hi);
        if (any) fprintf(md, " %s to %s |\n", a, b);
        else fprintf(md, " - |\n");
    }
    return true;
}

static bool region_frame(FILE *md) {
    static const char *const impls[] = {"spawnpool", "freelist", "boost_pool", "gslice", "glibc",
                                        "mimalloc", "tcmalloc", "jemalloc"};
    bool any = false;
    fprintf(md, "| implementation | p50, ms | p99, ms | max, ms |\n|---|---:|---:|---:|\n");
    for (size_t i = 0; i < sizeof impls / sizeof impls[0]; i++) {
        double p50, p99, mx;
        if (!report_get("frame", 0, 64, impls[i], "frame_ms_p50", &p50) ||
            !report_get("frame", 0, 64, impls[i], "frame_ms_p99", &p99) ||
            !report_get("frame", 0, 64, impls[i], "frame_ms_max", &mx))
            continue;
        fprintf(md, "| %s | %.3f | %.3f | %.3f |\n", report_label(impls[i]), p50, p99, mx);
        any = true;
    }
    return any;
}

static bool region_memory(FILE *md) {
    static const char *const impls[] = {"spawnpool", "freelist", "checked_plan",
                                        "checked_plan_byte", "glibc", "mimalloc", "tcmalloc",
                                        "jemalloc", "gslice", "boost_pool"};
    bool any = false;
    fprintf(md, "| implementation | 16 B members | 64 B | 256 B |\n|---|---:|---:|---:|\n");
    for (size_t i = 0; i < sizeof impls / sizeof impls[0]; i++) {
        if (!report_has("memory", 0, impls[i])) continue;
        fprintf(md, "| %s |", report_label(impls[i]));
        for (size_t s = 0; s < 3; s++) {
            double v;
            if (report_get("memory", 1000000, sizes[s], impls[i], "bytes_per_member", &v))
                fprintf(md, " %.1f (+%.1f) |", v, v - (double)sizes[s]);
            else
                fprintf(md, " - |");
        }
        fprintf(md, "\n");
        any = true;
    }
    return any;
}

static bool region_threads(FILE *md) {
    static const char *const impls[] = {"spawnpool_ts", "checked_cas", "spawnpool_mutex",
                                        "boost_singleton", "gslice", "glibc", "mimalloc",
                                        "tcmalloc", "jemalloc"};
    static const struct {
        const char *w;
        size_t threads;
    } cols[] = {{"threads_local", 1}, {"threads_local", 2}, {"threads_cross", 1},
                {"threads_cross", 2}};
    bool any = false;
    fprintf(md, "| implementation | own members, 1 thread | own members, 2 threads | handed to "
                "the next thread, 1 | handed on, 2 |\n|---|---:|---:|---:|---:|\n");
    for (size_t i = 0; i < sizeof impls / sizeof impls[0]; i++) {
        if (!report_has("threads_local", 0, impls[i])) continue;
        fprintf(md, "| %s |", report_label(impls[i]));
        for (size_t c = 0; c < 4; c++) {
            double v;
            if (report_get(cols[c].w, cols[c].threads, 64, impls[i], "ns_per_op_min", &v) && v > 0)
                ns_cell(md, v);
            else
                fprintf(md, " - |");
        }
        fprintf(md, "\n");
        any = true;
    }
    return any;
}

static bool region_dense(FILE *md) {
    size_t ns[REPORT_N_MAX], n_count = report_ns("dense_iterate", 64, ns);
    if (n_count == 0) return false;
    fprintf(md, "| live | update every particle: `sp_dense` / `sp_pool`, ns a particle | remove a "
                "random one and add one: `sp_dense` / `sp_pool`, ns a pair |\n|---:|---|---|\n");
    for (size_t k = 0; k < n_count; k++) {
        double di, pi, dc, pc;
        char a[32], b[32], c[32], d[32];
        if (!report_get("dense_iterate", ns[k], 64, "sp_dense", "ns_per_op_min", &di) ||
            !report_get("dense_iterate", ns[k], 64, "spawnpool", "ns_per_op_min", &pi) ||
            !report_get("dense_churn", ns[k], 64, "sp_dense", "ns_per_op_min", &dc) ||
            !report_get("dense_churn", ns[k], 64, "spawnpool", "ns_per_op_min", &pc))
            continue;
        report_fmt_ns(a, sizeof a, di), report_fmt_ns(b, sizeof b, pi);
        report_fmt_ns(c, sizeof c, dc), report_fmt_ns(d, sizeof d, pc);
        fprintf(md, "| %s | %s / %s | %s / %s |\n", report_n_label(ns[k]), a, b, c, d);
    }
    return true;
}

/* A row of the embed workload, whatever its n (the count it is about: full and quick runs
   differ); *n gets it. */
static bool embed_get(const char *impl, const char *metric, size_t *n, double *v) {
    size_t ns[REPORT_N_MAX], n_count = report_ns("embed", 0, ns);
    for (size_t k = 0; k < n_count; k++)
        if (report_get("embed", ns[k], 0, impl, metric, v)) return *n = ns[k], true;
    return false;
}

/* The embed workload (bench/bench_embed.c) in a few lines: the guide's numbers for library
   authors. */
static bool region_embed(FILE *md) {
    size_t n, m, k;
    double a, b, c, d;
    bool any = false;
    if (embed_get("spawnpool", "world_ns", &n, &a) && embed_get("malloc", "world_ns", &m, &b) &&
        embed_get("spawnpool", "world_os_calls", &k, &c)) {
        fprintf(md, "- **A world made, used and torn down** (53 pools of 16 B to 2 KiB, 24 members "
                    "acquired from each, half of them released, every pool destroyed; the median "
                    "of %zu worlds): %.1f µs, against %.1f µs for the same objects from malloc "
                    "and free; %.0f system calls a world once warm.\n", n, a / 1000.0, b / 1000.0,
                c);
        any = true;
    }
    if (embed_get("spawnpool", "world_reserved_bytes", &n, &a) &&
        embed_get("spawnpool", "world_process_reserved_bytes", &m, &b) &&
        embed_get("spawnpool", "pools1000_reserved_bytes", &k, &c) &&
        embed_get("spawnpool", "pools1000_process_reserved_bytes", &k, &d)) {
        fprintf(md, "- **Address space** (reserved, committed only as members are built): a live "
                    "world's %zu pools hold %.1f MiB of it (new reservations of the process for "
                    "them: %.1f MiB); %zu live pools of 100 64-byte members hold %.1f MiB, the "
                    "process %.1f MiB.\n", n, a / 1048576.0, b / 1048576.0, k, c / 1048576.0,
                d / 1048576.0);
        any = true;
    }
    if (embed_get("spawnpool", "pools_no_handle_ok", &n, &a) &&
        embed_get("spawnpool", "pools_no_handle_ns", &n, &b) &&
        embed_get("spawnpool", "pools_handle_ok", &m, &c) &&
        embed_get("spawnpool", "pools_handle_ns", &m, &d)) {
        fprintf(md, "- **Many live pools**: of %zu pools with a member each, all alive at once, "
                    "%.0f worked (created, acquired from, released to, destroyed), %.2f µs a "
                    "pool; of %zu with a handle each, %.0f resolved theirs, %.2f µs a pool.\n",
                n, a, b / 1000.0, m, c, d / 1000.0);
        any = true;
    }
    if (embed_get("spawnpool", "ts_alternating_ns", &n, &a) &&
        embed_get("spawnpool", "ts_one_pool_ns", &m, &b)) {
        fprintf(md, "- **Thread-safe pools in turn**: one thread's acquire and release pair on "
                    "%zu thread-safe pools of 64-byte members in turn, %.1f ns; on one, %.1f ns.\n",
                n, a, b);
        any = true;
    }
    return any;
}

/* What to expect, in a few lines: the README's summary and the top of performance.md. */
static bool region_expect(FILE *md) {
    bool any = false;
    report_versus v[PEERS];
    bool have[PEERS];
    size_t cells = 0, faster = 0, slower = 0;
    for (size_t p = 0; p < PEERS; p++) {
        have[p] = report_versus_peer(peers[p], &v[p]);
        if (!have[p]) continue;
        if (v[p].cells > cells) cells = v[p].cells;
        if (v[p].peer_faster == 0) faster++;
        else slower++;
    }
    if (cells > 0) {
        fprintf(md, "- **Acquire and release** (LIFO bursts, random churn and FIFO; %zu cells: "
                    "every size and number of live members measured):", cells);
        for (size_t p = 0, k = 0; p < PEERS; p++)
            if (have[p] && v[p].peer_faster == 0)
                k++, fprintf(md, "%s %s", k == 1 ? " faster than" : k == faster ? " and" : ",",
                             report_label(peers[p]));
        if (faster > 0) fprintf(md, " in every cell%s", slower ? ";" : ".\n");
        for (size_t p = 0, k = 0; p < PEERS; p++)
            if (have[p] && v[p].peer_faster > 0)
                k++, fprintf(md, "%s %s in %zu (at worst %.2fx its time, %s)%s",
                             k == 1 ? " slower than" : k == slower ? " and" : "",
                             report_label(peers[p]), v[p].peer_faster, 1.0 / v[p].worst,
                             v[p].where, k == slower ? ".\n" : ",");
        any = true;
    }
    double a, b, c, d;
    if (report_get("instr", 1000, 64, "spawnpool", "instr_per_pair", &a)) {
        fprintf(md, "- **Instructions**: %.0f per acquire + release pair under callgrind", a);
        if (report_get("instr", 1000, 64, "freelist", "instr_per_pair_lifo", &b))
            fprintf(md, " (a bare free list: %.0f)", b);
        fprintf(md, ".\n");
        any = true;
    }
    if (report_get("memory", 1000000, 64, "spawnpool", "overhead_per_member", &a)) {
        fprintf(md, "- **Memory**: %.1f bytes of bookkeeping a member at 1M members", a);
        if (report_get("memory", 1000000, 64, "glibc", "overhead_per_member", &b))
            fprintf(md, " (glibc malloc: %.1f)", b);
        fprintf(md, "; a warm pool makes no allocator calls");
        double most = -1;
        size_t ns[REPORT_N_MAX], n_count = report_ns("steady", 64, ns);
        for (size_t k = 0; k < n_count; k++)
            if (report_get("steady", ns[k], 64, "spawnpool", "allocator_calls", &b) && b > most)
                most = b;
        if (most >= 0) fprintf(md, " (%.0f in the steady-state workload)", most);
        fprintf(md, ".\n");
        any = true;
    }
    if (report_get("reclaim", 1000, 64, "spawnpool_reclaim", "ns_per_op_min", &a) &&
        report_get("reclaim", 1000000, 64, "spawnpool_reclaim", "ns_per_op_min", &b)) {
        char x[32], y[32];
        report_fmt_ns(x, sizeof x, a), report_fmt_ns(y, sizeof y, b);
        fprintf(md, "- **Reclaim the oldest** of a full pool: %s ns at 1k live, %s ns at 1M.\n", x,
                y);
        any = true;
    }
    if (report_get("iterate", 1000000, 64, "spawnpool", "ns_per_op_min", &a) &&
        report_get("iterate", 1000000, 64, "glibc", "ns_per_op_min", &b)) {
        char x[32], y[32];
        report_fmt_ns(x, sizeof x, a), report_fmt_ns(y, sizeof y, b);
        fprintf(md, "- **Walking every member** with `sp_each` at 1M: %s ns a member, against %s "
                    "through an array of pointers to malloc'd objects.\n", x, y);
        any = true;
    }
    if (report_get("frame", 0, 64, "spawnpool", "frame_ms_p99", &a) &&
        report_get("frame", 0, 64, "glibc", "frame_ms_p99", &b) &&
        report_get("frame", 0, 64, "spawnpool", "frame_ms_p50", &c) &&
        report_get("frame", 0, 64, "glibc", "frame_ms_p50", &d)) {
        fprintf(md, "- **A game frame** (the fountain workload): p50 %.3f ms, p99 %.3f ms; with "
                    "glibc malloc %.3f and %.3f.\n", c, a, d, b);
        any = true;
    }
    if (report_get("threads_local", 1, 64, "spawnpool_ts", "ns_per_op_min", &a) &&
        report_get("threads_local", 2, 64, "spawnpool_ts", "ns_per_op_min", &b) && a > 0 && b > 0) {
        fprintf(md, "- **A thread-safe pool** on 2 threads: %.2fx the pairs a second of one "
                    "thread (%.2f against %.2f ns a pair, all threads together).\n", a / b, b, a);
        any = true;
    }
    return any;
}

static const struct {
    const char *name;
    bool (*write)(FILE *md);
} regions[] = {
    {"run", region_run},         {"versus", region_versus},   {"expect", region_expect},
    {"lifo", region_lifo},       {"churn", region_churn},     {"fifo", region_fifo},
    {"reclaim", region_reclaim}, {"resolve", region_resolve}, {"iterate", region_iterate},
    {"frame", region_frame},     {"memory", region_memory},   {"threads", region_threads},
    {"dense", region_dense},     {"embed", region_embed},
};

/* ---------------------------------------------------------------------------------------------
   Splicing
   ------------------------------------------------------------------------------------------ */

static char *read_all(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        perror(path);
        return NULL;
    }
    size_t cap = 1 << 16, used = 0;
    char *buf = malloc(cap + 1);
    while (buf != NULL) {
        used += fread(buf + used, 1, cap - used, f);
        if (used < cap) break;
        char *grown = realloc(buf, cap * 2 + 1);
        if (grown == NULL) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = grown, cap *= 2;
    }
    fclose(f);
    if (buf != NULL) buf[used] = '\0', *len = used;
    return buf;
}

/* Writes a region's text with its list items wrapped at 100 columns, as the docs' own text is
   (continuation lines indented two spaces); tables and other lines as they are. */
static void write_wrapped(FILE *o, const char *text, size_t len) {
    const char *p = text, *end = text + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t line_len = nl ? (size_t)(nl - p) : (size_t)(end - p);
        if (line_len <= 100 || strncmp(p, "- ", 2) != 0) {
            fwrite(p, 1, line_len + (nl != NULL), o);
            p += line_len + (nl != NULL);
            continue;
        }
        size_t col = 0, indent = 0;
        const char *w = p, *line_end = p + line_len;
        while (w < line_end) {
            const char *sp = memchr(w, ' ', (size_t)(line_end - w));
            size_t word = sp ? (size_t)(sp - w) : (size_t)(line_end - w);
            if (col > indent && col + 1 + word > 100) {
                fputs("\n  ", o);
                col = indent = 2;
            } else if (col > indent) {
                fputc(' ', o);
                col++;
            }
            fwrite(w, 1, word, o);
            col += word;
            w += word + (sp != NULL);
        }
        fputc('\n', o);
        p += line_len + (nl != NULL);
    }
}

/* The region named by a start line "<!-- spreport:NAME -->" (NULL when it is not one). */
static bool region_name(const char *line, size_t len, char *name, size_t cap) {
    static const char open[] = "<!-- spreport:";
    if (len < sizeof open + 4 || strncmp(line, open, sizeof open - 1) != 0) return false;
    const char *end = strstr(line, " -->");
    if (end == NULL || end > line + len) return false;
    size_t n = (size_t)(end - line) - (sizeof open - 1);
    if (n == 0 || n >= cap) return false;
    memcpy(name, line + sizeof open - 1, n);
    name[n] = '\0';
    return true;
}

/* A region's text as the file should have it: a blank line, then the generated Markdown with
   its list items wrapped. NULL when out of memory; *rows false when the run has none for it. */
static char *region_text(size_t r, size_t *len, bool *rows) {
    char *raw = NULL, *text = NULL;
    size_t raw_len = 0;
    FILE *g = open_memstream(&raw, &raw_len);
    if (g == NULL) return NULL;
    fputc('\n', g);
    *rows = regions[r].write(g);
    fclose(g);
    FILE *w = open_memstream(&text, len);
    if (w != NULL) {
        write_wrapped(w, raw, raw_len);
        fclose(w);
    }
    free(raw);
    return text;
}

/* One file: returns 0 when every region is known and (with check) current. */
static int splice(const char *path, bool check) {
    size_t len = 0;
    char *text = read_all(path, &len);
    if (text == NULL) return 1;
    char *out = NULL;
    size_t out_len = 0;
    FILE *o = open_memstream(&out, &out_len);
    int rc = 0, found = 0, stale = 0;
    const char *p = text, *end = text + len;
    while (p < end && o != NULL) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t line_len = nl ? (size_t)(nl - p) : (size_t)(end - p);
        fwrite(p, 1, line_len + (nl != NULL), o);
        char name[64];
        if (!region_name(p, line_len, name, sizeof name) || nl == NULL) {
            p += line_len + (nl != NULL);
            continue;
        }
        found++;
        const char *body = nl + 1, *close = strstr(nl, "\n<!-- /spreport -->");
        if (close == NULL) {
            fprintf(stderr, "%s: region %s has no <!-- /spreport --> line\n", path, name);
            rc = 1;
            break;
        }
        size_t r = 0;
        while (r < sizeof regions / sizeof regions[0] && strcmp(regions[r].name, name) != 0) r++;
        if (r == sizeof regions / sizeof regions[0]) {
            fprintf(stderr, "%s: unknown region spreport:%s\n", path, name);
            rc = 1;
        } else {
            bool rows = false;
            size_t new_len = 0, old_len = (size_t)(close + 1 - body); /* to the closing line */
            char *fresh = region_text(r, &new_len, &rows);
            if (!rows) {
                fprintf(stderr, "%s: region %s: the run has no rows for it\n", path, name);
                rc = 1;
            }
            if (fresh == NULL || new_len != old_len || memcmp(fresh, body, old_len) != 0) {
                stale++;
                if (check)
                    fprintf(stderr, "%s: region spreport:%s quotes numbers that are not the "
                                    "run's\n", path, name);
            }
            if (fresh != NULL) fwrite(fresh, 1, new_len, o);
            free(fresh);
        }
        p = close + 1; /* the closing line is copied next */
    }
    if (o != NULL) fclose(o);
    if (rc == 0 && stale > 0 && check) {
        fprintf(stderr, "%s: %d of %d regions are not the run's: run `make bench-docs`\n", path,
                stale, found);
        rc = 1;
    } else if (rc == 0 && stale > 0) {
        FILE *f = fopen(path, "wb");
        if (f == NULL || fwrite(out, 1, out_len, f) != out_len) {
            perror(path);
            rc = 1;
        }
        if (f != NULL) fclose(f);
        if (rc == 0) printf("%s: %d of %d regions rewritten\n", path, stale, found);
    } else if (rc == 0) {
        printf("%s: %d regions current\n", path, found);
    }
    free(out);
    free(text);
    return rc;
}

int report_docs(const char *meta, char **files, int file_count, bool check) {
    int rc = 0;
    meta_path = meta;
    for (int i = 0; i < file_count; i++) rc |= splice(files[i], check);
    return rc;
}
