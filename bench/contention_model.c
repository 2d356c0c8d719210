/* SPDX-License-Identifier: Zlib */
/*
    contention_model.c -- spmodel (`make bench-model`): how far a magazine-and-depot pool scales,
    from costs measured on this machine.

        spmodel [--quick] [--out FILE.md]

    Part 1 measures, each as the minimum over repeats (as spbench does):
    - the fast path: one sp_acquire or sp_release of the plain pool (a thread-safe pool's fast
      path costs at least that: the model's t_fast), and one pop or push of a pointer in a
      thread's own array (a bare magazine: the fastest a fast path can be, the worst case);
    - the depot's critical section: a lock around a stack of magazine pointers, one visit =
      lock, push or pop one magazine, unlock; with a pthread mutex and with a test-and-test-and-
      set spin lock (yielding after a while), the cheapest lock a depot could use. Uncontended
      (one thread); back to back (2, 4, 8 threads doing nothing else: an unfair lock lets one
      thread re-take it while the others wait, so this is throughput, not handoffs); handed off
      (threads take turns, so every visit follows another core's: the lock's and the stack's
      lines move on every visit, the service time of a depot with waiters; 4 and 8 threads
      oversubscribe the cores, so a turn may wait for a preempted thread); and the handoff
      with no lock at all (the lines moving, nothing else: this machine's floor);
    - an uncontended lock + unlock alone, for what the lock itself costs.
    Part 2 is the model, for N = 1..64 cores and magazine sizes 16, 32, 64, 128, each thread
    doing w ns of its own work between two pool operations (w = 0: nothing but pool
    operations, the worst case; 100 ns; 1 us):
    - depot visits per operation v: local churn 1/M (a magazine's worth of operations between
      visits; an upper bound in steady state, where a thread with two magazines rarely visits);
      producer/consumer 2/M (every magazine crosses the depot: the producer returns an empty one
      and takes a full one per M acquisitions, the consumer the reverse per M releases);
    - the depot is one server with deterministic service time S: M/D/1, utilisation
      rho = N * lambda * S with lambda = v / t the visit rate of a thread whose operation takes
      t = w + t_fast + v * (S + Wq), Wq = r * S / (2 * (1 - r)) the mean wait, r the load of the
      other N - 1 threads (a thread never waits for itself). The fixed point (threads slow down
      as they wait, which bounds rho below 1) is found by bisection;
    - S two ways: the uncontended visit (the best case: nothing moves between cores) and the
      visit handed off between 2 threads (every visit after another core's: what a depot with
      waiters delivers, this machine's cache-line transfers included);
    - "saturated" where rho reaches 0.9 (waits of 4.5 service times; per-thread throughput
      falling away from linear), and the largest S at which 64 cores stay below that.
    It prints Markdown on stdout (and to --out).
*/
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "spawnpool.h"

enum { DEPOT_CAP = 4096, MAG_MAX = 128, WORKERS_MAX = 8, CORES = 64 };

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static volatile uintptr_t model_sink;

/* ---------------------------------------------------------------------------------------------
   The fast path: a thread's magazine, M pointers to 64-byte members.
   ------------------------------------------------------------------------------------------ */

typedef struct magazine {
    size_t count;
    void *slot[MAG_MAX];
} magazine;

/* ns per operation (an acquire or a release) over `pairs` release + acquire pairs on a
   half-full magazine, the member written after each acquire as a program would. */
static double fast_path_ns(size_t pairs) {
    static _Alignas(64) uint64_t members[MAG_MAX][8];
    magazine mag = {0, {0}};
    for (size_t i = 0; i < MAG_MAX / 2; i++) mag.slot[mag.count++] = members[i];
    void *held[16];
    for (size_t i = 0; i < 16; i++) held[i] = members[MAG_MAX / 2 + i];
    uint64_t t0 = now_ns();
    for (size_t i = 0; i < pairs; i++) {
        size_t k = i & 15u;
        mag.slot[mag.count++] = held[k];                  /* release */
        uint64_t *p = mag.slot[--mag.count];              /* acquire */
        __asm__ volatile("" : : "r"(&mag) : "memory");    /* keep the magazine in memory */
        p[0] = i;
        held[k] = p;
    }
    uint64_t t1 = now_ns();
    model_sink = (uintptr_t)held[0];
    return (double)(t1 - t0) / (double)(2 * pairs);
}

/* ns per operation of the plain pool (sp_acquire or sp_release, 500 of 1000 members leased):
   a thread-safe pool's fast path costs at least this (its target: within 1.5x of it), so it is
   the model's fast path; the bare magazine above is the worst case (the fastest possible). */
static double plain_pool_ns(size_t pairs) {
    sp_pool *pool = sp_pool_create(&(sp_desc){.name = "model", .item_size = 64});
    if (pool == NULL) return 0;
    void *held[1000];
    for (size_t i = 0; i < 1000; i++) held[i] = sp_acquire(pool);
    for (size_t i = 500; i < 1000; i++) sp_release(pool, held[i]);
    uint64_t t0 = now_ns();
    for (size_t i = 0; i < pairs; i++) {
        uint64_t *p = sp_acquire(pool);
        p[0] = i;
        sp_release(pool, p);
    }
    uint64_t t1 = now_ns();
    sp_release_all(pool);
    sp_pool_destroy(pool);
    return (double)(t1 - t0) / (double)(2 * pairs);
}

/* ---------------------------------------------------------------------------------------------
   The depot: a stack of magazine pointers behind a lock.
   ------------------------------------------------------------------------------------------ */

/* LOCK_NONE: no lock, for the handoff's floor (the lines moving between cores, nothing else);
   only meaningful when the threads take turns. */
typedef enum lock_kind { LOCK_MUTEX, LOCK_SPIN, LOCK_NONE } lock_kind;

/* The lock, the count and the turn of the handoff measurement share one line, as a compact
   depot would keep its lock and count; the stack follows. */
typedef struct depot {
    _Alignas(64) pthread_mutex_t mutex;
    atomic_bool spin;
    size_t count;
    _Atomic size_t turn; /* handoff mode: whose visit is next (see visit_thread) */
    _Alignas(64) void *stack[DEPOT_CAP];
} depot;

static inline void depot_lock(depot *d, lock_kind kind) {
    if (kind == LOCK_NONE) return;
    if (kind == LOCK_MUTEX) {
        pthread_mutex_lock(&d->mutex);
        return;
    }
    for (unsigned spins = 0;;) {
        if (!atomic_exchange_explicit(&d->spin, true, memory_order_acquire)) return;
        while (atomic_load_explicit(&d->spin, memory_order_relaxed))
            if (++spins > 200) sched_yield(); /* the holder may be preempted */
    }
}

static inline void depot_unlock(depot *d, lock_kind kind) {
    if (kind == LOCK_MUTEX) pthread_mutex_unlock(&d->mutex);
    else if (kind == LOCK_SPIN) atomic_store_explicit(&d->spin, false, memory_order_release);
}

/* One visit: a push (odd calls) or a pop (even calls) of one magazine pointer. */
static inline void depot_visit(depot *d, lock_kind kind, void *mag, size_t i) {
    depot_lock(d, kind);
    if ((i & 1u) && d->count < DEPOT_CAP) d->stack[d->count++] = mag;
    else if (d->count > 0) model_sink = (uintptr_t)d->stack[--d->count];
    depot_unlock(d, kind);
}

typedef struct visit_job {
    depot *d;
    lock_kind kind;
    size_t visits, threads, index;
    bool handoff; /* take turns (see depot.turn) */
    pthread_barrier_t *start;
    uint64_t t0, t1; /* this thread's visits, timed by itself (the main thread may not run) */
} visit_job;

static _Atomic size_t visit_ready; /* threads past the barrier: they start together */

/* Handoff mode: threads take turns (depot.turn), so that every visit follows one by
   another thread, as when the depot has waiters: the lock and the stack move between cores on
   every visit. Without it an unfair lock (glibc's mutex) lets one thread re-take it while the
   other sleeps, and measures a throughput with almost no handoffs. */

static void *visit_thread(void *arg) {
    visit_job *j = arg;
    magazine mine;
    pthread_barrier_wait(j->start);
    atomic_fetch_add(&visit_ready, 1);
    for (unsigned spin = 0; atomic_load(&visit_ready) < j->threads; spin++)
        if (spin > 1000) sched_yield();
    j->t0 = now_ns();
    if (j->handoff) {
        for (size_t i = 0; i < j->visits; i++) {
            for (unsigned spin = 0; atomic_load_explicit(&j->d->turn, memory_order_acquire) %
                                        j->threads != j->index; spin++)
                if (spin > 20000) sched_yield(); /* the next in turn may be preempted */
            depot_lock(j->d, j->kind);
            if ((i & 1u) && j->d->count < DEPOT_CAP) j->d->stack[j->d->count++] = &mine;
            else if (j->d->count > 0) model_sink = (uintptr_t)j->d->stack[--j->d->count];
            atomic_store_explicit(&j->d->turn, j->d->turn + 1, memory_order_release);
            depot_unlock(j->d, j->kind);
        }
    } else {
        for (size_t i = 0; i < j->visits; i++) depot_visit(j->d, j->kind, &mine, i);
    }
    j->t1 = now_ns();
    return NULL;
}

/* ns per visit with `threads` threads visiting the depot back to back: wall time over every
   thread's visits together (threads = 1: the uncontended visit). */
static double depot_ns(depot *d, lock_kind kind, size_t threads, size_t visits, bool handoff) {
    pthread_t tid[WORKERS_MAX];
    visit_job jobs[WORKERS_MAX];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, (unsigned)threads + 1u);
    atomic_store(&visit_ready, 0);
    atomic_store(&d->turn, 0);
    for (size_t i = 0; i < threads; i++) {
        jobs[i] = (visit_job){d, kind, visits, threads, i, handoff, &start, 0, 0};
        pthread_create(&tid[i], NULL, visit_thread, &jobs[i]);
    }
    pthread_barrier_wait(&start);
    for (size_t i = 0; i < threads; i++) pthread_join(tid[i], NULL);
    pthread_barrier_destroy(&start);
    uint64_t t0 = jobs[0].t0, t1 = jobs[0].t1; /* first start to last end */
    for (size_t i = 1; i < threads; i++) {
        if (jobs[i].t0 < t0) t0 = jobs[i].t0;
        if (jobs[i].t1 > t1) t1 = jobs[i].t1;
    }
    return (double)(t1 - t0) / (double)(threads * visits);
}

/* An uncontended lock + unlock with nothing inside. */
static double lock_only_ns(depot *d, lock_kind kind, size_t n) {
    uint64_t t0 = now_ns();
    for (size_t i = 0; i < n; i++) {
        depot_lock(d, kind);
        __asm__ volatile("" ::: "memory");
        depot_unlock(d, kind);
    }
    return (double)(now_ns() - t0) / (double)n;
}

/* ---------------------------------------------------------------------------------------------
   The model.
   ------------------------------------------------------------------------------------------ */

typedef struct point {
    double rho, per_thread_mops, total_mops, efficiency;
} point;

/* N threads, v depot visits per op, t_fast ns of a thread's own time per op outside the depot
   (fast path plus the program's work), service S ns: the M/D/1 fixed point. */
static point model(size_t n, double v, double t_fast, double s) {
    double lo = 0, hi = v / t_fast; /* visits per ns of one thread */
    if (hi * (double)n * s >= 1.0) hi = 1.0 / ((double)n * s);
    for (int it = 0; it < 200; it++) {
        /* An arriving thread finds the other N - 1 threads' load (the arrival theorem of
           closed queues): one thread alone never waits for itself. */
        double lambda = (lo + hi) / 2, others = (double)(n - 1) * lambda * s;
        double wq = others < 1 ? others * s / (2 * (1 - others)) : 1e300;
        double t = t_fast + v * (s + wq);
        if (v / t > lambda) lo = lambda; /* threads would visit faster than assumed */
        else hi = lambda;
    }
    double lambda = lo, rho = (double)n * lambda * s;
    point p;
    p.rho = rho;
    p.per_thread_mops = lambda / v * 1000.0; /* ops per ns -> millions per second */
    p.total_mops = p.per_thread_mops * (double)n;
    p.efficiency = p.per_thread_mops / (1000.0 / (t_fast + v * s));
    return p;
}

/* The first N at which rho reaches `limit`, or 0 when 64 cores stay below it. */
static size_t saturation_n(double v, double t_fast, double s, double limit) {
    for (size_t n = 1; n <= CORES; n++)
        if (model(n, v, t_fast, s).rho >= limit) return n;
    return 0;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The minimum over repeats, as spbench: on a shared machine a repeat in which another job took
   one of the cores times context switches instead of the lock (a handoff between the two cores
   then costs microseconds), and the minimum is the repeat in which the threads ran at once. */
static double visit_summary(depot *d, lock_kind k, size_t threads, size_t visits, bool handoff,
                            int repeats) {
    double v[64];
    if (repeats > 64) repeats = 64;
    for (int r = 0; r < repeats; r++) v[r] = depot_ns(d, k, threads, visits, handoff);
    qsort(v, (size_t)repeats, sizeof *v, cmp_double);
    return v[0];
}

static double lock_only_min(depot *d, lock_kind kind, size_t n, int repeats) {
    double best = lock_only_ns(d, kind, n);
    for (int r = 1; r < repeats; r++) {
        double v = lock_only_ns(d, kind, n);
        if (v < best) best = v;
    }
    return best;
}

int main(int argc, char **argv) {
    bool quick = false;
    const char *out_path = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) quick = true;
        else if (strcmp(argv[i], "--out") == 0 && i + 1 < argc) out_path = argv[++i];
        else {
            fprintf(stderr, "usage: spmodel [--quick] [--out FILE.md]\n");
            return 2;
        }
    }
    int repeats = quick ? 7 : 15;
    size_t visits = quick ? 50000 : 200000;
    depot *d = aligned_alloc(64, sizeof *d);
    if (d == NULL) return 1;
    memset(d, 0, sizeof *d);
    pthread_mutex_init(&d->mutex, NULL);
    for (size_t i = 0; i < DEPOT_CAP / 2; i++) d->stack[d->count++] = d; /* half full */

    fprintf(stderr, "spmodel: measuring (fast path, depot visits at 1, 2, 4, 8 threads)\n");
    double fast = fast_path_ns(visits * 10);
    for (int r = 1; r < repeats; r++) {
        double v = fast_path_ns(visits * 10);
        if (v < fast) fast = v;
    }
    double bare = fast;
    fast = plain_pool_ns(visits * 10);
    for (int r = 1; r < repeats; r++) {
        double v = plain_pool_ns(visits * 10);
        if (v < fast) fast = v;
    }
    static const size_t counts[] = {1, 2, 4, 8};
    static const char *const lock_names[] = {"pthread mutex", "spin lock (TTAS, yields)"};
    double floor2 = visit_summary(d, LOCK_NONE, 2, visits / 4, true, repeats);
    double visit[2][4], handoff[2][4], lock_only[2];
    for (int k = 0; k < 2; k++) {
        lock_only[k] = lock_only_min(d, (lock_kind)k, visits, repeats);
        for (size_t c = 0; c < 4; c++) {
            visit[k][c] = visit_summary(d, (lock_kind)k, counts[c],
                                        counts[c] > 2 ? visits / 4 : visits, false, repeats);
            /* Taking turns oversubscribed waits for preempted threads: fewer visits. */
            if (c > 0)
                handoff[k][c] = visit_summary(d, (lock_kind)k, counts[c],
                                              counts[c] > 2 ? visits / 100 : visits / 4, true,
                                              repeats);
        }
    }

    FILE *outs[2] = {stdout, out_path ? fopen(out_path, "w") : NULL};
    if (out_path && outs[1] == NULL) perror(out_path);
    for (int o = 0; o < 2; o++) {
        FILE *f = outs[o];
        if (f == NULL) continue;
        fprintf(f, "### Measured (`make bench-model`, %s mode: minimum of %d repeats)\n\n"
                   "| quantity | ns |\n|---|---:|\n", quick ? "quick" : "full", repeats);
        fprintf(f, "| plain pool, one sp_acquire or sp_release (t_fast, the model's fast path) | %.2f |\n",
                fast);
        fprintf(f, "| bare magazine, one pop or push of a pointer (the fastest possible fast path) | %.2f |\n",
                bare);
        fprintf(f, "| no lock: the depot's lines handed between 2 threads taking turns (the "
                   "handoff's floor on this machine) | %.2f |\n", floor2);
        for (int k = 0; k < 2; k++) {
            fprintf(f, "| %s: lock + unlock, uncontended | %.2f |\n", lock_names[k], lock_only[k]);
            fprintf(f, "| %s: depot visit (lock, push or pop one magazine, unlock), 1 thread | %.2f |\n",
                    lock_names[k], visit[k][0]);
            for (size_t c = 1; c < 4; c++)
                fprintf(f, "| %s: depot visit, %zu threads back to back%s (per visit) | %.2f |\n",
                        lock_names[k], counts[c], c > 1 ? ", oversubscribed" : "", visit[k][c]);
            for (size_t c = 1; c < 4; c++)
                fprintf(f, "| %s: depot visit handed off, %zu threads taking turns%s (per "
                           "visit)%s | %.2f |\n",
                        lock_names[k], counts[c], c > 1 ? ", oversubscribed" : "",
                        c == 1 ? ": S contended" : "", handoff[k][c]);
        }
        static const size_t mags[] = {16, 32, 64, 128};
        static const size_t show[] = {1, 2, 4, 8, 16, 32, 64};
        static const double work[] = {0, 100, 1000}; /* ns of the program's own between ops */
        for (int k = 0; k < 2; k++) {
            double s_unc = visit[k][0], s_con = handoff[k][1];
            fprintf(f, "\n### Model, depot behind a %s (t_fast %.2f ns; S = %.2f ns uncontended, "
                       "%.2f ns handed off)\n\n"
                       "Cores at which the depot lock reaches 90%% utilisation (\"-\": not within "
                       "64), for w ns of the program's own work between two pool operations, "
                       "and the largest S that keeps 64 cores below 90%%:\n\n"
                       "| w, M | local (1/M), S uncontended | local, S handed off | cross (2/M), "
                       "S uncontended | cross, S handed off | largest S for 64 cores: local / "
                       "cross |\n|---|---:|---:|---:|---:|---:|\n",
                    lock_names[k], fast, s_unc, s_con);
            for (size_t wi = 0; wi < 3; wi++)
                for (size_t m = 0; m < 4; m++) {
                    double t = fast + work[wi], mm = (double)mags[m];
                    fprintf(f, "| %.0f ns, %zu |", work[wi], mags[m]);
                    for (int pattern = 0; pattern < 2; pattern++)
                        for (int which = 0; which < 2; which++) {
                            double v = (pattern ? 2.0 : 1.0) / mm;
                            size_t n = saturation_n(v, t, which ? s_con : s_unc, 0.9);
                            if (n) fprintf(f, " %zu |", n);
                            else fprintf(f, " - |");
                        }
                    /* rho(64) = 0.9 at the fixed point: bisect on S. */
                    for (int pattern = 0; pattern < 2; pattern++) {
                        double v = (pattern ? 2.0 : 1.0) / mm, lo = 0, hi = 1e6;
                        for (int it = 0; it < 100; it++) {
                            double mid = (lo + hi) / 2;
                            if (model(CORES, v, t, mid).rho < 0.9) lo = mid;
                            else hi = mid;
                        }
                        fprintf(f, pattern ? " %.1f ns |\n" : " %.1f ns /", lo);
                    }
                }
            fprintf(f, "\nPer-thread throughput as a share of one thread's alone (efficiency), "
                       "and the lock's utilisation, w = 100 ns, S handed off:\n\n| pattern, M |");
            for (size_t i = 0; i < sizeof show / sizeof show[0]; i++) fprintf(f, " N=%zu |", show[i]);
            fprintf(f, "\n|---|");
            for (size_t i = 0; i < sizeof show / sizeof show[0]; i++) fprintf(f, "---:|");
            fprintf(f, "\n");
            for (int pattern = 0; pattern < 2; pattern++)
                for (size_t m = 0; m < 4; m++) {
                    double v = (pattern ? 2.0 : 1.0) / (double)mags[m];
                    fprintf(f, "| %s, %zu |", pattern ? "cross" : "local", mags[m]);
                    for (size_t i = 0; i < sizeof show / sizeof show[0]; i++) {
                        point p = model(show[i], v, fast + 100.0, s_con);
                        fprintf(f, " %.0f%% (%.2f) |", p.efficiency * 100, p.rho);
                    }
                    fprintf(f, "\n");
                }
        }
    }
    if (outs[1]) fclose(outs[1]);
    pthread_mutex_destroy(&d->mutex);
    free(d);
    return 0;
}
