/* SPDX-License-Identifier: Zlib */
/*
    bench_threads.c -- the threads workloads of spbench: one pool (or allocator) shared by 1, 2,
    4 and 8 threads (4 and 8 oversubscribe a 2-core machine, to show behaviour under preemption).

        spbench --workload threads_local|threads_cross|threads_mixed [--quick] [--impl a,b]
                [--n 1,2,4,8]        (--n: the thread counts)

    threads_local  each thread churns its own working set of WORKING members: release a random
                   one, acquire its replacement (one pair);
    threads_cross  producer/consumer in a ring: each thread acquires bursts of BURST members and
                   hands them to the next thread through a single-producer single-consumer
                   queue, and releases what the previous thread handed it; every member is
                   released on another thread than the one that acquired it. With one thread
                   the ring closes on itself: the thread alternates roles on its own queue
                   (acquire a burst, release it oldest first);
    threads_mixed  local churn as threads_local, with one pair in four a hand-off as in
                   threads_cross (bursts of BURST / 4 spread evenly among the local pairs).
    Every thread does `ops` pairs per segment. The threads of one thread count live for the whole
    run of that count (a team parked on a barrier), so per-thread caches stay warm between
    segments as in a long-running program; the implementations are interleaved repeat by repeat
    (rotating which goes first) as in the single-thread workloads. A segment's time is from the
    first thread's start to the last thread's end; rows: ns_per_op_min / _median = that time
    divided by every thread's pairs together (the inverse of the throughput; lower is better),
    mpairs_per_s = the throughput at the minimum. The minimum is over the undisturbed repeats:
    those in which the threads spent less than 5% of their time runnable but waiting for a CPU
    (/proc/thread-self/schedstat), since on a busy machine 2 threads may take turns on one core
    and a lock that was never contended looks cheap (oversubscribed, every repeat counts).
    undisturbed_repeats says how many there were (0: the minimum is of all repeats);
    cores_at_min (the threads' CPU time over the wall time) and cpu_wait_at_min describe the
    repeat of the minimum. The CSV's n column is the thread count.

    Implementations: spawnpool_ts (a thread-safe pool), spawnpool (the plain
    pool, one thread only: the reference for the thread-safe mode's cost), checked_cas (the
    floor of a thread-safe checked pool: per-thread free lists, one CAS a release; below),
    checked_side (bench_impls.c's checked free list, one thread only: checked_cas's
    reference), spawnpool_mutex (the
    plain pool behind a pthread mutex: the naive answer), boost_singleton (boost::singleton_pool
    and its mutex), gslice, glibc, mimalloc, tcmalloc and jemalloc (bench_impls.c's peers, which
    are thread-safe as they are; jemalloc only in a process that preloads it).
*/
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

enum {
    ITEM = 64,        /* member size: boost::singleton_pool's is a template argument */
    WORKING = 1024,   /* members each thread keeps live in threads_local and threads_mixed */
    BURST = 64,       /* members a thread acquires before handing them on (threads_cross) */
    QUEUE_CAP = 256,  /* hand-off queue slots, a power of two */
    THREADS_MAX = 64, /* the most --n accepts */
    CELLS_MAX = 16,
};

/* ---------------------------------------------------------------------------------------------
   Implementations only the threads workloads have.
   ------------------------------------------------------------------------------------------ */

/* The plain pool, grown by acquisition, unbounded (a thread-safe pool's magazines hold members
   beyond what the workload has live, so no max for any spawnpool variant here). */
static sp_pool *tb_pool_create(const char *name, bool thread_safe) {
    sp_desc desc = {.name = name, .item_size = ITEM};
    if (thread_safe) desc.threads = SP_THREADS_SAFE; /* magazine_size 0: the library's default */
    sp_pool *pool = sp_pool_create(&desc);
    if (pool == NULL) fprintf(stderr, "spbench: sp_pool_create failed for %s\n", name);
    return pool;
}

static bool plain_open(void **state, size_t item_size, size_t capacity) {
    (void)item_size, (void)capacity;
    return (*state = tb_pool_create("bench_plain", false)) != NULL;
}
static void pool_close(void *state) { sp_pool_destroy(state); }
static void *pool_acquire(void *state) { return sp_acquire(state); }
static void pool_release(void *state, void *item) { (void)sp_release(state, item); }

/* The thread-safe pool (sp_desc.threads = SP_THREADS_SAFE, the default magazine size). */
static bool ts_open(void **state, size_t item_size, size_t capacity) {
    (void)item_size, (void)capacity;
    return (*state = tb_pool_create("bench_ts", true)) != NULL;
}
static const bench_impl impl_ts = {"spawnpool_ts", ts_open, pool_close, pool_acquire,
                                   pool_release, NULL};
#define TB_HAVE_TS 1 /* a build against a library without thread-safe pools sets 0 */

/* The naive answer: the plain pool, every call under one pthread mutex. */
typedef struct mutex_pool {
    pthread_mutex_t lock;
    sp_pool *pool;
} mutex_pool;

static bool mutex_open(void **state, size_t item_size, size_t capacity) {
    (void)item_size, (void)capacity;
    mutex_pool *m = malloc(sizeof *m);
    if (m == NULL) return false;
    m->pool = tb_pool_create("bench_mutex", false);
    if (m->pool == NULL || pthread_mutex_init(&m->lock, NULL) != 0) {
        if (m->pool) sp_pool_destroy(m->pool);
        free(m);
        return false;
    }
    *state = m;
    return true;
}
static void mutex_close(void *state) {
    mutex_pool *m = state;
    pthread_mutex_destroy(&m->lock);
    sp_pool_destroy(m->pool);
    free(m);
}
static void *mutex_acquire(void *state) {
    mutex_pool *m = state;
    pthread_mutex_lock(&m->lock);
    void *item = sp_acquire(m->pool);
    pthread_mutex_unlock(&m->lock);
    return item;
}
static void mutex_release(void *state, void *item) {
    mutex_pool *m = state;
    pthread_mutex_lock(&m->lock);
    (void)sp_release(m->pool, item);
    pthread_mutex_unlock(&m->lock);
}

static bool singleton_open(void **state, size_t item_size, size_t capacity) {
    (void)capacity;
    *state = NULL;
    return item_size == ITEM;
}
/* Every block is back by then (the drain job ran): give the chunks back to the system. */
static void singleton_close(void *state) {
    (void)state;
    bench_singleton_purge();
}
static void *singleton_acquire(void *state) {
    (void)state;
    return bench_singleton_malloc();
}
static void singleton_release(void *state, void *item) {
    (void)state;
    bench_singleton_free(item);
}

/* ---------------------------------------------------------------------------------------------
   checked_cas: the floor of a thread-safe checked pool. bench_impls.c's checked_side (a free
   list of members with a side array of state words, each release checked with the exact
   range-and-stride test and the state word), made thread-safe in the cheapest way that keeps
   a racing double release exact: each thread keeps its own free members (a thread-local
   stack of pointers, nothing shared between threads on the way), and a release makes the one atomic
   compare-and-swap LEASED -> FREE on the member's state word, so that of two threads releasing
   the same member exactly one wins. An acquisition is a pop and a release store of LEASED (a
   FREE word changes only in its owner's hands). A thread whose stack is empty takes a chunk of
   never-used members from a shared counter (the only shared write, once per CAS_CHUNK); there
   is no depot, no growth, no stats, no hooks, no handles, and a member released on another
   thread stays with that thread. What a thread-safe spawnpool pool costs beyond it is what its
   design costs; what checked_cas costs beyond checked_side (one thread) is what exact racing
   release detection costs any design.
   ------------------------------------------------------------------------------------------ */

enum { CAS_CAP = 1 << 17, CAS_CHUNK = 64, CAS_FREE = 0, CAS_LEASED = 1 };

typedef struct cas_floor {
    unsigned char *items;
    _Atomic uint32_t *side;
    _Alignas(64) _Atomic size_t fresh; /* never-used members handed out so far */
    _Alignas(64) _Atomic size_t refused;
} cas_floor;

/* The calling thread's free members of one floor: a stack of pointers (as a spawnpool
   magazine, nothing written into a free member), found with one thread-local compare. */
static _Thread_local struct {
    const cas_floor *owner;
    void **stack;
    size_t n, cap;
} cas_tl;

static bool cas_open(void **state, size_t item_size, size_t capacity) {
    (void)capacity;
    if (item_size != ITEM) return false;
    cas_floor *c = aligned_alloc(64, sizeof *c);
    if (c == NULL) return false;
    memset(c, 0, sizeof *c);
    c->items = aligned_alloc(64, (size_t)CAS_CAP * ITEM);
    c->side = aligned_alloc(64, (size_t)CAS_CAP * sizeof *c->side); /* lines of its own */
    if (c->items == NULL || c->side == NULL) {
        free(c->items), free(c->side), free(c);
        return false;
    }
    memset(c->side, 0, (size_t)CAS_CAP * sizeof *c->side); /* CAS_FREE */
    *state = c;
    return true;
}
static void cas_close(void *state) {
    cas_floor *c = state;
    if (atomic_load(&c->refused))
        fprintf(stderr, "spbench: checked_cas refused %zu releases\n", atomic_load(&c->refused));
    free(c->items), free(c->side), free(c);
}
/* The member index of item, or CAS_CAP: checked_side's exact test (stride 64: rotate by 6,
   the odd part 1). */
static inline size_t cas_index(const cas_floor *c, const void *item) {
    uint64_t off = (uint64_t)((uintptr_t)item - (uintptr_t)c->items);
    uint64_t q = (off >> 6) | (off << 58);
    return q < CAS_CAP ? (size_t)q : CAS_CAP;
}
/* The thread's first call on c, or its stack is full: (re)claim the stack, with room. False
   when memory fails. */
static __attribute__((noinline)) bool cas_room(const cas_floor *c) {
    if (cas_tl.owner != c) { /* another floor's members are dropped with it */
        cas_tl.owner = c;
        cas_tl.n = 0;
    }
    if (cas_tl.n < cas_tl.cap) return true;
    size_t cap = cas_tl.cap ? cas_tl.cap * 2u : 4096u;
    void **grown = realloc(cas_tl.stack, cap * sizeof *grown);
    if (grown == NULL) return false;
    cas_tl.stack = grown;
    cas_tl.cap = cap;
    return true;
}
static __attribute__((noinline)) void *cas_refill(cas_floor *c) {
    size_t first = atomic_fetch_add_explicit(&c->fresh, CAS_CHUNK, memory_order_relaxed);
    if (first >= CAS_CAP) return NULL;
    for (size_t i = first + CAS_CHUNK; i-- > first + 1;) {
        if (!cas_room(c)) return NULL;
        cas_tl.stack[cas_tl.n++] = c->items + i * ITEM;
    }
    return c->items + first * ITEM;
}
static void *cas_acquire(void *state) {
    cas_floor *c = state;
    void *item;
    if (cas_tl.owner == c && cas_tl.n > 0) item = cas_tl.stack[--cas_tl.n];
    else if ((item = cas_refill(c)) == NULL) return NULL;
    atomic_store_explicit(&c->side[cas_index(c, item)], CAS_LEASED, memory_order_release);
    return item;
}
static void cas_release(void *state, void *item) {
    cas_floor *c = state;
    size_t i = cas_index(c, item);
    uint32_t expected = CAS_LEASED;
    if (i >= CAS_CAP || !atomic_compare_exchange_strong_explicit(&c->side[i], &expected, CAS_FREE,
                                                                 memory_order_acq_rel,
                                                                 memory_order_acquire)) {
        atomic_fetch_add(&c->refused, 1);
        return;
    }
    if (cas_tl.owner != c || cas_tl.n == cas_tl.cap) {
        if (!cas_room(c)) return; /* out of memory: the member is lost to the floor */
    }
    cas_tl.stack[cas_tl.n++] = item;
}

static const bench_impl impl_plain = {"spawnpool", plain_open, pool_close, pool_acquire,
                                      pool_release, NULL};
static const bench_impl impl_cas = {"checked_cas", cas_open, cas_close, cas_acquire, cas_release,
                                    NULL};
static const bench_impl impl_mutex = {"spawnpool_mutex", mutex_open, mutex_close, mutex_acquire,
                                      mutex_release, NULL};
static const bench_impl impl_singleton = {"boost_singleton", singleton_open, singleton_close,
                                          singleton_acquire, singleton_release, NULL};

/* Report order. The peers are bench_impls.c's own, looked up by name. */
static const char *const tb_order[] = {
    "spawnpool_ts", "spawnpool", "checked_cas", "checked_side", "spawnpool_mutex",
    "boost_singleton", "gslice", "glibc", "mimalloc", "tcmalloc",
};

/* The pool's own pair for the two spawnpool rows, as bench_impl_pool_pair gives it for the
   generic workloads' (see bench.h), else NULL. */
static const bench_pool_pair *tb_pool_pair(const bench_impl *impl) {
    return impl->acquire == pool_acquire && impl->release == pool_release ? &bench_spawnpool_pair : NULL;
}

static const bench_impl *tb_find(const char *name) {
#if TB_HAVE_TS
    if (strcmp(name, impl_ts.name) == 0) return &impl_ts;
#endif
    if (strcmp(name, impl_plain.name) == 0) return &impl_plain;
    if (strcmp(name, impl_mutex.name) == 0) return &impl_mutex;
    if (strcmp(name, impl_cas.name) == 0) return &impl_cas;
    if (strcmp(name, impl_singleton.name) == 0) return &impl_singleton;
    if (strcmp(name, "spawnpool_ts") == 0) return NULL;
    return bench_impl_find(name);
}

/* ---------------------------------------------------------------------------------------------
   The hand-off queue: single producer, single consumer, a ring of QUEUE_CAP pointers. Head and
   tail on lines of their own, and each side publishes its counter once per batch, not once per
   member: the queue's own cache-line traffic stays small beside the allocator's, which is what
   the cross workloads measure (each member's line still moves to the releasing thread).
   ------------------------------------------------------------------------------------------ */

typedef struct tb_queue {
    _Alignas(64) _Atomic size_t head; /* next slot to read (consumer) */
    _Alignas(64) _Atomic size_t tail; /* next slot to write (producer) */
    _Alignas(64) void *slot[QUEUE_CAP];
} tb_queue;

/* Producer: room for at most `want` more members; returns how many fit. */
static size_t queue_room(tb_queue *q, size_t want) {
    size_t used = atomic_load_explicit(&q->tail, memory_order_relaxed) -
                  atomic_load_explicit(&q->head, memory_order_acquire);
    return QUEUE_CAP - used < want ? QUEUE_CAP - used : want;
}

/* Consumer: how many members are there to read. */
static size_t queue_ready(tb_queue *q) {
    return atomic_load_explicit(&q->tail, memory_order_acquire) -
           atomic_load_explicit(&q->head, memory_order_relaxed);
}

/* ---------------------------------------------------------------------------------------------
   The team: `threads` workers parked on a barrier; the main thread posts a job (fill, run,
   drain, exit) for one cell, releases them, and waits for them at the second barrier.
   ------------------------------------------------------------------------------------------ */

typedef enum tb_job { JOB_FILL, JOB_RUN, JOB_DRAIN, JOB_EXIT } tb_job;
typedef enum tb_kind { KIND_LOCAL, KIND_CROSS, KIND_MIXED } tb_kind;

typedef struct tb_cell {
    const bench_impl *impl;
    const bench_pool_pair *pair; /* tb_pool_pair(impl) */
    void *state;
    double *samples;
    double *cores;  /* per repeat: CPU time of the threads over the wall time */
    double *waited; /* per repeat: share of the threads' time runnable without a CPU */
    _Atomic bool failed; /* an acquisition returned NULL: the cell's rows are dropped */
} tb_cell;

struct tb_team;

typedef struct tb_worker {
    _Alignas(64) struct tb_team *team; /* a line of its own: no false sharing between workers */
    size_t index;
    pthread_t thread;
    void **live[CELLS_MAX]; /* the working set, per cell */
    uint64_t rng;
    uint64_t t0, t1;        /* this thread's part of the segment */
    uint64_t cpu0, cpu1;    /* the same in this thread's CPU time */
    uint64_t wait0, wait1;  /* and in its time waiting for a CPU */
} tb_worker;

typedef struct tb_team {
    size_t threads, ops;
    tb_kind kind;
    pthread_barrier_t start, end;
    tb_job job;
    _Atomic size_t ready; /* workers that have started the job */
    size_t cell_index;
    tb_cell *cell;
    tb_worker workers[THREADS_MAX];
    tb_queue *queues; /* queues[i]: from worker i - 1 to worker i */
} tb_team;

static uint64_t tb_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The calling thread's CPU time: summed over the threads and divided by the wall time, how
   many cores the segment really had (a busy machine may give 2 threads one core between them,
   and the minimum over repeats would then favour the locks that were never contended). */
static uint64_t tb_cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The calling thread's time runnable but waiting for a CPU (ns): the second field of
   /proc/thread-self/schedstat; 0 where Linux does not provide it. Over a segment, it says
   whether another job took the cores the threads should have had. */
static uint64_t tb_runq_wait(void) {
    char buf[96];
    int fd = open("/proc/thread-self/schedstat", O_RDONLY);
    if (fd < 0) return 0;
    ssize_t got = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (got <= 0) return 0;
    buf[got] = '\0';
    unsigned long long run = 0, wait = 0;
    return sscanf(buf, "%llu %llu", &run, &wait) == 2 ? (uint64_t)wait : 0;
}

static inline uint64_t tb_rng(uint64_t *s) { /* splitmix64, as bench_main.c */
    uint64_t z = (*s += 0x9E3779B97F4A7C15u);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    return z ^ (z >> 31);
}

static void tb_fail(tb_cell *c, const char *what) {
    if (!atomic_exchange(&c->failed, true))
        fprintf(stderr, "spbench: %s returned NULL in %s; dropping its rows\n", c->impl->name,
                what);
}

/* A worker calls each implementation through pointers to its own functions: the spawnpool
   rows sp_acquire and sp_release (c->pair), the others their bench_impl pair; `typed` is a
   constant in each copy of the loop below. */
#define TB_ACQUIRE(c, typed) ((typed) ? (c)->pair->acquire((c)->state) : (c)->impl->acquire((c)->state))
#define TB_RELEASE(c, typed, item) \
    ((typed) ? (void)(c)->pair->release((c)->state, (item)) : (c)->impl->release((c)->state, (item)))

/* One local pair: release a random member of the working set, acquire its replacement. */
static inline void local_pair(uint64_t *rng, tb_cell *c, void **live, size_t i, bool typed) {
    size_t k = (size_t)(((tb_rng(rng) >> 32) * WORKING) >> 32);
    if (live[k] != NULL) TB_RELEASE(c, typed, live[k]);
    uint64_t *p = TB_ACQUIRE(c, typed);
    live[k] = p;
    if (p == NULL) tb_fail(c, "threads_local");
    else *p = i;
}

/* `local` local pairs and `handoffs` hand-offs to the next thread, the hand-offs spread evenly
   (a burst of BURST at a time when there are no local pairs: threads_cross), and as many
   releases of what the previous thread hands over. NULLs from a failed acquisition are handed
   on too, so the counts still meet and no thread waits for ever. */
static inline __attribute__((always_inline)) void run_segment_in(tb_worker *w, tb_cell *c, size_t local,
                                                                  size_t handoffs, bool typed) {
    tb_team *t = w->team;
    tb_queue *in = &t->queues[w->index], *out = &t->queues[(w->index + 1) % t->threads];
    void **live = w->live[t->cell_index];
    size_t done = 0, sent = 0, received = 0;
    uint64_t rng = w->rng;
    while (done < local || sent < handoffs || received < handoffs) {
        bool progress = false;
        if (done < local) {
            local_pair(&rng, c, live, done++, typed);
            progress = true;
        }
        /* Hand-offs due: a burst of BURST at a time without local pairs, else bursts of
           BURST / 4 spread evenly over the local pairs. */
        size_t due = local == 0      ? sent + BURST
                     : done == local ? handoffs
                                     : (done * handoffs / local) / (BURST / 4) * (BURST / 4);
        if (due > handoffs) due = handoffs;
        size_t room = sent < due ? queue_room(out, due - sent) : 0;
        if (room > 0) {
            size_t tail = atomic_load_explicit(&out->tail, memory_order_relaxed);
            for (size_t i = 0; i < room; i++) {
                uint64_t *p = TB_ACQUIRE(c, typed);
                if (p == NULL) tb_fail(c, "a hand-off");
                else *p = sent + i;
                out->slot[(tail + i) & (QUEUE_CAP - 1)] = p;
            }
            atomic_store_explicit(&out->tail, tail + room, memory_order_release);
            sent += room;
            progress = true;
        }
        size_t ready = received < handoffs ? queue_ready(in) : 0;
        if (ready > 0) {
            size_t head = atomic_load_explicit(&in->head, memory_order_relaxed);
            for (size_t i = 0; i < ready; i++) {
                void *item = in->slot[(head + i) & (QUEUE_CAP - 1)];
                if (item != NULL) TB_RELEASE(c, typed, item);
            }
            atomic_store_explicit(&in->head, head + ready, memory_order_release);
            received += ready;
            progress = true;
        }
        if (!progress) sched_yield(); /* the other end is not running: let it */
    }
    w->rng = rng;
}
static void run_segment(tb_worker *w, tb_cell *c, size_t local, size_t handoffs) {
    if (c->pair)
        run_segment_in(w, c, local, handoffs, true);
    else
        run_segment_in(w, c, local, handoffs, false);
}

static void *worker_main(void *arg) {
    tb_worker *w = arg;
    tb_team *t = w->team;
    for (;;) {
        pthread_barrier_wait(&t->start);
        tb_job job = t->job;
        if (job == JOB_EXIT) break;
        tb_cell *c = t->cell;
        void **live = w->live[t->cell_index];
        /* Leaving a barrier takes each thread a wake-up (tens of microseconds, one after the
           other): start together, once every thread runs, or a short segment would time the
           threads one after another. Oversubscribed, the waiting ones yield to the rest. */
        w->wait0 = tb_runq_wait(); /* before the start: a thread preempted there waited too */
        atomic_fetch_add(&t->ready, 1);
        for (unsigned spin = 0; atomic_load(&t->ready) < t->threads; spin++)
            if (spin > 1000) sched_yield();
        w->t0 = tb_now();
        w->cpu0 = tb_cpu_now();
        if (job == JOB_FILL) {
            for (size_t i = 0; i < WORKING; i++) {
                live[i] = c->impl->acquire(c->state);
                if (live[i] == NULL) tb_fail(c, "the fill");
            }
        } else if (job == JOB_DRAIN) {
            for (size_t i = 0; i < WORKING; i++)
                if (live[i] != NULL) c->impl->release(c->state, live[i]);
        } else if (t->kind == KIND_LOCAL) {
            run_segment(w, c, t->ops, 0);
        } else if (t->kind == KIND_CROSS) {
            run_segment(w, c, 0, t->ops);
        } else {
            run_segment(w, c, t->ops - t->ops / 4, t->ops / 4);
        }
        w->cpu1 = tb_cpu_now();
        w->t1 = tb_now();
        w->wait1 = tb_runq_wait();
        pthread_barrier_wait(&t->end);
    }
    return NULL;
}

/* Runs one job on every worker; returns the wall time from the first start to the last end,
   in *cores the threads' CPU time over it and in *waited the share of the threads' time spent
   runnable without a CPU. */
static uint64_t team_job(tb_team *t, tb_job job, size_t cell_index, tb_cell *cell, double *cores,
                         double *waited) {
    t->job = job;
    atomic_store(&t->ready, 0);
    t->cell_index = cell_index;
    t->cell = cell;
    pthread_barrier_wait(&t->start);
    if (job == JOB_EXIT) return 0;
    pthread_barrier_wait(&t->end);
    uint64_t t0 = t->workers[0].t0, t1 = t->workers[0].t1, cpu = 0, wait = 0;
    for (size_t i = 0; i < t->threads; i++) {
        if (t->workers[i].t0 < t0) t0 = t->workers[i].t0;
        if (t->workers[i].t1 > t1) t1 = t->workers[i].t1;
        cpu += t->workers[i].cpu1 - t->workers[i].cpu0;
        wait += t->workers[i].wait1 - t->workers[i].wait0;
    }
    double span = t1 > t0 ? (double)(t1 - t0) : 1;
    if (cores != NULL) *cores = (double)cpu / span;
    if (waited != NULL) *waited = (double)wait / (span * (double)t->threads);
    return t1 - t0;
}

/* ---------------------------------------------------------------------------------------------
   One thread count of one workload: every selected implementation, interleaved.
   ------------------------------------------------------------------------------------------ */

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void emit(const char *workload, size_t threads, const char *impl, const char *metric,
                 double value, const char *unit) {
    printf("%s,%zu,%d,%s,%s,%.4f,%s\n", workload, threads, ITEM, impl, metric, value, unit);
    fflush(stdout);
}

static int run_count(const char *workload, tb_kind kind, size_t threads, size_t ops,
                     size_t repeats, const char *impls) {
    /* jemalloc replaces malloc only in a process that preloads it: there it runs alone. */
    bool jemalloc_only = impls != NULL && strcmp(impls, "jemalloc") == 0;
    const char *names[CELLS_MAX];
    size_t name_count = 0;
    if (jemalloc_only) names[name_count++] = "jemalloc";
    else
        for (size_t i = 0; i < sizeof tb_order / sizeof tb_order[0]; i++) names[name_count++] = tb_order[i];

    tb_cell *cells = calloc(CELLS_MAX, sizeof *cells);
    tb_team *t = calloc(1, sizeof *t);
    if (cells == NULL || t == NULL) {
        fprintf(stderr, "spbench: out of memory\n");
        free(cells), free(t);
        return 1;
    }
    size_t count = 0;
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    size_t cpus = online > 0 ? (size_t)online : 1;
    for (size_t i = 0; i < name_count; i++) {
        if (!jemalloc_only && impls != NULL && !bench_list_has(impls, names[i])) continue;
        const bench_impl *impl = tb_find(names[i]);
        if (impl == NULL) { /* the thread-safe pool, before the library has it */
            emit(workload, threads, names[i], "not_built", 0, "flag");
            continue;
        }
        bool single = strcmp(impl->name, "spawnpool") == 0 || strcmp(impl->name, "checked_side") == 0;
        if (single && threads > 1) continue; /* the one-thread references */
        tb_cell *c = &cells[count];
        c->impl = impl;
        c->pair = tb_pool_pair(impl);
        /* checked_side has no growth: a chunk of members enough for one thread's workload */
        if (!impl->open(&c->state, ITEM, strcmp(impl->name, "checked_side") == 0 ? 1u << 16 : 0u)) continue;
        c->samples = calloc(repeats, sizeof *c->samples);
        c->cores = calloc(repeats, sizeof *c->cores);
        c->waited = calloc(repeats, sizeof *c->waited);
        if (c->samples == NULL || c->cores == NULL || c->waited == NULL) {
            free(c->samples), free(c->cores), free(c->waited);
            impl->close(c->state);
            continue;
        }
        count++;
    }
    t->threads = threads;
    t->ops = ops;
    t->kind = kind;
    t->queues = aligned_alloc(64, threads * sizeof *t->queues);
    bool ok = t->queues != NULL;
    if (ok) memset(t->queues, 0, threads * sizeof *t->queues);
    for (size_t i = 0; ok && i < threads; i++)
        for (size_t k = 0; k < count; k++)
            ok = (t->workers[i].live[k] = calloc(WORKING, sizeof(void *))) != NULL;
    ok = ok && pthread_barrier_init(&t->start, NULL, (unsigned)threads + 1u) == 0 &&
         pthread_barrier_init(&t->end, NULL, (unsigned)threads + 1u) == 0;
    size_t started = 0;
    for (; ok && started < threads; started++) {
        tb_worker *w = &t->workers[started];
        w->team = t;
        w->index = started;
        w->rng = 0x7EA4u + started * 0x1000193u;
        if (pthread_create(&w->thread, NULL, worker_main, w) != 0) {
            fprintf(stderr, "spbench: pthread_create failed\n");
            ok = false;
            break;
        }
        /* One CPU per worker while there are enough: left to itself, the scheduler often runs
           both workers of a 2-thread team on one CPU for whole segments while any other job
           (even a niced one) runs on the other, and such a repeat measures nothing about
           scaling. Oversubscribed teams are left to the scheduler: preemption is what they
           show. */
        if (threads <= cpus) {
            cpu_set_t set;
            CPU_ZERO(&set);
            CPU_SET(started, &set);
            (void)pthread_setaffinity_np(w->thread, sizeof set, &set);
        }
    }
    if (ok) {
        for (size_t k = 0; k < count; k++) {
            if (kind != KIND_CROSS) team_job(t, JOB_FILL, k, &cells[k], NULL, NULL);
            team_job(t, JOB_RUN, k, &cells[k], NULL, NULL); /* warm-up, untimed */
        }
        for (size_t r = 0; r < repeats; r++)
            for (size_t j = 0; j < count; j++) {
                size_t k = (j + r) % count;
                double cores = 0, waited = 0;
                uint64_t ns = team_job(t, JOB_RUN, k, &cells[k], &cores, &waited);
                cells[k].samples[r] = (double)ns / (double)(threads * ops);
                cells[k].cores[r] = cores;
                cells[k].waited[r] = waited;
            }
        for (size_t k = 0; k < count; k++)
            if (kind != KIND_CROSS) team_job(t, JOB_DRAIN, k, &cells[k], NULL, NULL);
        team_job(t, JOB_EXIT, 0, NULL, NULL, NULL);
    }
    /* The workers return their thread caches as they exit, before any pool is destroyed. */
    for (size_t i = 0; i < started; i++) pthread_join(t->workers[i].thread, NULL);
    for (size_t k = 0; k < count; k++) {
        tb_cell *c = &cells[k];
        if (ok && !atomic_load(&c->failed)) {
            /* The minimum over the undisturbed repeats (threads waited for a CPU less than 5%
               of their time; oversubscribed, every repeat counts): on a shared machine the
               plain minimum is often a repeat in which the threads took turns on one core,
               and a lock then looks uncontended. When no repeat was undisturbed, the minimum
               of all, and undisturbed_repeats = 0 says so. */
            size_t at_min = repeats, undisturbed = 0;
            for (size_t r = 0; r < repeats; r++) {
                if (threads <= cpus && c->waited[r] >= 0.05) continue;
                undisturbed++;
                if (at_min == repeats || c->samples[r] < c->samples[at_min]) at_min = r;
            }
            if (at_min == repeats) {
                at_min = 0;
                for (size_t r = 1; r < repeats; r++)
                    if (c->samples[r] < c->samples[at_min]) at_min = r;
            }
            double cores = c->cores[at_min], waited = c->waited[at_min], mn = c->samples[at_min];
            qsort(c->samples, repeats, sizeof *c->samples, cmp_double);
            double med = repeats % 2 ? c->samples[repeats / 2]
                                     : (c->samples[repeats / 2 - 1] + c->samples[repeats / 2]) / 2;
            emit(workload, threads, c->impl->name, "ns_per_op_median", med, "ns");
            emit(workload, threads, c->impl->name, "ns_per_op_min", mn, "ns");
            emit(workload, threads, c->impl->name, "mpairs_per_s", 1000.0 / mn, "Mpairs/s");
            emit(workload, threads, c->impl->name, "cores_at_min", cores, "cores");
            emit(workload, threads, c->impl->name, "cpu_wait_at_min", waited, "share");
            emit(workload, threads, c->impl->name, "undisturbed_repeats", (double)undisturbed,
                 "repeats");
        }
        c->impl->close(c->state);
        free(c->samples);
        free(c->cores);
        free(c->waited);
        for (size_t i = 0; i < threads; i++) free(t->workers[i].live[k]);
    }
    if (ok) {
        pthread_barrier_destroy(&t->start);
        pthread_barrier_destroy(&t->end);
    }
    free(t->queues);
    free(t);
    free(cells);
    return ok ? 0 : 1;
}

int bench_threads_run(const char *workload, bool quick, const char *impls, const size_t *threads,
                      size_t thread_count) {
    static const size_t default_threads[] = {1, 2, 4, 8};
    tb_kind kind;
    if (strcmp(workload, "threads_local") == 0) kind = KIND_LOCAL;
    else if (strcmp(workload, "threads_cross") == 0) kind = KIND_CROSS;
    else if (strcmp(workload, "threads_mixed") == 0) kind = KIND_MIXED;
    else return 2;
    if (threads == NULL) {
        threads = default_threads;
        thread_count = sizeof default_threads / sizeof default_threads[0];
    }
    /* Pairs per thread per segment: long enough at 8 threads on 2 cores for the scheduler to
       preempt threads inside a segment (several time slices), short enough to repeat. */
    size_t ops = quick ? 20000 : 100000, repeats = quick ? 11 : 21;
    for (size_t i = 0; i < thread_count; i++) {
        if (threads[i] == 0 || threads[i] > THREADS_MAX) {
            fprintf(stderr, "spbench: thread counts are 1 to %d\n", THREADS_MAX);
            return 2;
        }
        fprintf(stderr, "%s threads=%zu\n", workload, threads[i]);
        if (run_count(workload, kind, threads[i], ops, repeats, impls) != 0) return 1;
    }
    return 0;
}
