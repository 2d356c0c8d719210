/* SPDX-License-Identifier: Zlib */
/*
    bench_main.c -- spbench, the benchmark driver: one workload per process.

        spbench --workload lifo|churn|fifo|reclaim|resolve|iterate|frame|memory|steady
                [--quick] [--impl a,b,...] [--n 1000,100000] [--sizes 16,64,256]
                [--datadir DIR]
        spbench --workload threads_local|threads_cross|threads_mixed ...   (bench_threads.c)

    prints CSV rows (workload,n,item_size,impl,metric,value,unit; no header) on stdout and
    progress on stderr. bench/run.sh runs every workload and writes build/bench/results/.

    Method, so that ratios taken in one run mean something:
    - every implementation is set up first and warmed with one untimed segment, then the timed
      repeats interleave the implementations (rotating which goes first) so that a noisy
      second on a shared machine lands on all of them, not on one;
    - each repeat times one segment of operations with CLOCK_MONOTONIC and reports ns per
      operation; the CSV carries the median and the minimum over repeats. Segments are short
      (about a millisecond) and many, so that on a busy machine some run undisturbed: the
      minimum is then the cost of the code, the median that plus the machine's noise;
    - every implementation's live array lies at the same page offset in a repeat, a different
      one each repeat (live_offset), so that none draws a placement of its own;
    - every operation goes through the same indirect call (bench_impl), the floor included;
    - each acquired object is written, as a program would, so untouched memory is not free.
    An "op" is one acquire plus one release (lifo, churn, fifo), one reclaiming acquisition
    (reclaim), one resolve (resolve), one member updated (iterate). spawnpool_next is spawnpool
    iterated with sp_first/sp_next instead of sp_each, spawnpool_iter with the sp_iter cursor;
    they run in the iterate workload only.
*/
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "bench_util.h"
#include "bench_floors.h"
#include "spawnpool_dense.h"

/* ---------------------------------------------------------------------------------------------
   Parameters
   ------------------------------------------------------------------------------------------ */

typedef struct bench_params {
    size_t ops;           /* operations per timed segment (=5e4; quick 2e4) */
    size_t repeats;       /* timed segments per implementation (=31; quick 11) */
    size_t frames;        /* frames of the frame workload (=10000; quick 1000) */
    size_t ns[8], n_count;
    size_t sizes[8], size_count;
    const char *impls;    /* comma list, or NULL for all */
    const char *rows_of;  /* print only this implementation's rows and those of beside[] (NULL:
                             every one's) */
    const char *datadir;  /* where the frame workload writes its distribution */
} bench_params;

static bench_params params = {
    .ops = 50000, .repeats = 31, .frames = 10000,
    .ns = {1000, 100000, 1000000}, .n_count = 3,
    .sizes = {16, 64, 256}, .size_count = 3,
};

/* Keeps results of reads alive so the compiler cannot drop the loops. */
static volatile uint64_t bench_sink;

/* A uniform index below n (n < 2^32) without a division. */

/* With rows_of set (jemalloc's process), these implementations' rows are printed too, named
   "<impl>@<rows_of>": spawnpool and the floors measured in the same process, interleaved with
   it, so that spreport judges the peer against them and not against the main process's rows,
   which ran at another time (two processes minutes apart differed by up to 1.8x at churn 1M). */
static const char *const beside[] = {"spawnpool", BENCH_FLOORS};

static void emit(const char *workload, size_t n, size_t item_size, const char *impl,
                 const char *metric, double value, const char *unit) {
    char tagged[64];
    if (params.rows_of != NULL && strcmp(impl, params.rows_of) != 0) {
        size_t i = 0;
        while (i < sizeof beside / sizeof beside[0] && strcmp(impl, beside[i]) != 0) i++;
        if (i == sizeof beside / sizeof beside[0]) return;
        snprintf(tagged, sizeof tagged, "%s@%s", impl, params.rows_of);
        impl = tagged;
    }
    printf("%s,%zu,%zu,%s,%s,%.4f,%s\n", workload, n, item_size, impl, metric, value, unit);
    fflush(stdout);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_of(double *v, size_t count) {
    qsort(v, count, sizeof *v, cmp_double);
    return count % 2 ? v[count / 2] : (v[count / 2 - 1] + v[count / 2]) / 2.0;
}

/* Whether the comma-separated list holds name exactly (NULL: an empty list). */
bool bench_list_has(const char *list, const char *name) {
    if (list == NULL) return false;
    size_t len = strlen(name);
    for (const char *p = strstr(list, name); p != NULL; p = strstr(p + 1, name))
        if ((p == list || p[-1] == ',') && (p[len] == ',' || p[len] == '\0')) return true;
    return false;
}

static bool impl_selected(const char *name) {
    return params.impls == NULL || bench_list_has(params.impls, name);
}

static void *xcalloc(size_t count, size_t size) {
    void *p = calloc(count, size);
    if (p == NULL) {
        fprintf(stderr, "spbench: out of memory (%zu x %zu)\n", count, size);
        exit(1);
    }
    return p;
}

/* ---------------------------------------------------------------------------------------------
   Generic workloads: every implementation through bench_impl.
   ------------------------------------------------------------------------------------------ */

typedef struct cell {
    const bench_impl *impl;
    const bench_pool_pair *pair; /* bench_impl_pool_pair(impl) */
    void *state;
    size_t n, item_size;
    void **live;
    unsigned char *live_mem; /* run_generic: a page more than live needs, page-aligned */
    size_t head;
    uint64_t rng;
    double *samples;
    bool failed;
} cell;

typedef struct particle {
    float x, y, vx, vy;
} particle;

static void cell_fail(cell *c, const char *what) {
    if (!c->failed)
        fprintf(stderr, "spbench: %s returned NULL in %s at n=%zu size=%zu; dropping its rows\n",
                c->impl->name, what, c->n, c->item_size);
    c->failed = true;
}

/* Fills the live array with n fresh objects. */
static void cell_fill(cell *c) {
    void *(*acquire)(void *) = c->impl->acquire;
    for (size_t i = 0; i < c->n; i++) {
        particle *p = acquire(c->state);
        if (p == NULL) {
            cell_fail(c, "fill");
            c->n = i; /* only these are live */
            return;
        }
        *p = (particle){0.0f, 0.0f, (float)(i % 7), 1.0f};
        c->live[i] = p;
    }
}

/* Releases a random half in random order and refills it, so that neither the pointer array
   nor a pool's leased list walks memory in address order, as after a while in a game. */
static void cell_scramble(cell *c) {
    size_t n = c->n, half = n / 2;
    size_t *idx = xcalloc(n, sizeof *idx);
    for (size_t i = 0; i < n; i++) idx[i] = i;
    for (size_t i = n; i-- > 1;) {
        size_t j = rng_below(&c->rng, i + 1), t = idx[i];
        idx[i] = idx[j];
        idx[j] = t;
    }
    for (size_t i = 0; i < half; i++) c->impl->release(c->state, c->live[idx[i]]);
    for (size_t i = 0; i < half; i++) {
        particle *p = c->impl->acquire(c->state);
        c->live[idx[i]] = p;
        if (p == NULL) {
            cell_fail(c, "scramble");
            break;
        }
        *p = (particle){0.0f, 0.0f, (float)(i % 7), 1.0f};
    }
    free(idx);
}

static void cell_drain(cell *c) {
    for (size_t i = 0; i < c->n; i++)
        if (c->live[i] != NULL) c->impl->release(c->state, c->live[i]);
}

/* The timing loops call each implementation through pointers to its own functions:
   spawnpool's plain rows sp_acquire and sp_release (c->pair), every other row its bench_impl
   pair. Each loop is written once, for `typed` a constant: its segment function makes one
   copy of it for each. */
typedef struct cell_calls {
    void *(*acquire)(void *);
    void (*release)(void *, void *);
    void *(*pool_acquire)(sp_pool *);
    sp_result (*pool_release)(sp_pool *, void *);
} cell_calls;
static inline cell_calls cell_calls_of(const cell *c) {
    return (cell_calls){c->impl->acquire, c->impl->release, c->pair ? c->pair->acquire : NULL,
                        c->pair ? c->pair->release : NULL};
}
#define CELL_ACQUIRE(f, typed, st) ((typed) ? (f).pool_acquire(st) : (f).acquire(st))
#define CELL_RELEASE(f, typed, st, item) ((typed) ? (void)(f).pool_release((st), (item)) : (f).release((st), (item)))

/* LIFO bursts: acquire n, release them newest first. The pool is empty between bursts. */
static inline __attribute__((always_inline)) size_t lifo_run(cell *c, size_t ops, bool typed) {
    const cell_calls f = cell_calls_of(c);
    void *st = c->state;
    void **live = c->live;
    size_t n = c->n, rounds = ops / n ? ops / n : 1;
    for (size_t r = 0; r < rounds; r++) {
        for (size_t i = 0; i < n; i++) {
            uint64_t *p = CELL_ACQUIRE(f, typed, st);
            if (p == NULL) {
                cell_fail(c, "lifo");
                for (size_t k = i; k-- > 0;) CELL_RELEASE(f, typed, st, live[k]);
                return 1;
            }
            *p = i;
            live[i] = p;
        }
        for (size_t i = n; i-- > 0;) CELL_RELEASE(f, typed, st, live[i]);
    }
    return rounds * n;
}
static size_t lifo_segment(cell *c, size_t ops) { return c->pair ? lifo_run(c, ops, true) : lifo_run(c, ops, false); }

/* Random churn at n live: release a random live object, acquire its replacement. */
static inline __attribute__((always_inline)) size_t churn_run(cell *c, size_t ops, bool typed) {
    const cell_calls f = cell_calls_of(c);
    void *st = c->state;
    void **live = c->live;
    size_t n = c->n;
    for (size_t i = 0; i < ops; i++) {
        size_t k = rng_below(&c->rng, n);
        CELL_RELEASE(f, typed, st, live[k]);
        uint64_t *p = CELL_ACQUIRE(f, typed, st);
        live[k] = p;
        if (p == NULL) {
            cell_fail(c, "churn");
            return 1;
        }
        *p = i;
    }
    return ops;
}
static size_t churn_segment(cell *c, size_t ops) { return c->pair ? churn_run(c, ops, true) : churn_run(c, ops, false); }

/* FIFO at n live: release the oldest, acquire a replacement (a ring of live objects). */
static inline __attribute__((always_inline)) size_t fifo_run(cell *c, size_t ops, bool typed) {
    const cell_calls f = cell_calls_of(c);
    void *st = c->state;
    void **live = c->live;
    size_t n = c->n, head = c->head;
    for (size_t i = 0; i < ops; i++) {
        CELL_RELEASE(f, typed, st, live[head]);
        uint64_t *p = CELL_ACQUIRE(f, typed, st);
        live[head] = p;
        if (p == NULL) {
            cell_fail(c, "fifo");
            return 1;
        }
        *p = i;
        head = head + 1 == n ? 0 : head + 1;
    }
    c->head = head;
    return ops;
}
static size_t fifo_segment(cell *c, size_t ops) { return c->pair ? fifo_run(c, ops, true) : fifo_run(c, ops, false); }

static bool particle_update(void *item, void *user) {
    particle *p = item;
    const float dt = *(const float *)user;
    p->x += p->vx * dt;
    p->y += p->vy * dt;
    return true;
}

/* Iterate and update every live particle. spawnpool walks its own leased list with sp_each
   (spawnpool_next: with sp_first/sp_next; spawnpool_iter: with the sp_iter cursor); the others
   walk the array of pointers a malloc user has to keep. */
static size_t iterate_segment(cell *c, size_t ops) {
    size_t n = c->n, rounds = ops / n ? ops / n : 1;
    float dt = 1.0f / 60.0f;
    sp_pool *pool = c->impl->pool ? c->impl->pool(c->state) : NULL;
    bool by_next = strcmp(c->impl->name, "spawnpool_next") == 0;
    bool by_iter = strcmp(c->impl->name, "spawnpool_iter") == 0;
    size_t visited = 0;
    for (size_t r = 0; r < rounds; r++) {
        if (pool != NULL && by_iter) {
            for (sp_iter it = sp_iter_first(pool); it.item != NULL; sp_iter_next(pool, &it)) {
                particle *p = it.item;
                p->x += p->vx * dt;
                p->y += p->vy * dt;
                visited++;
            }
        } else if (pool != NULL && !by_next) {
            visited += sp_each(pool, particle_update, &dt);
        } else if (pool != NULL) {
            for (void *it = sp_first(pool); it != NULL; it = sp_next(pool, it)) {
                particle *p = it;
                p->x += p->vx * dt;
                p->y += p->vy * dt;
                visited++;
            }
        } else {
            for (size_t i = 0; i < n; i++) {
                particle *p = c->live[i];
                p->x += p->vx * dt;
                p->y += p->vy * dt;
            }
            visited += n;
        }
    }
    if (visited != rounds * n) cell_fail(c, "iterate (member count)");
    return rounds * n;
}

typedef struct generic_workload {
    const char *name;
    bool fill;    /* start with n live */
    bool scramble; /* churn n times before timing, so live objects are not in address order */
    size_t (*segment)(cell *c, size_t ops);
    const char *skip; /* implementations this workload does not run (comma list) */
} generic_workload;

static const generic_workload generic_workloads[] = {
    {"lifo", false, false, lifo_segment, "spawnpool_next,spawnpool_iter"},
    {"churn", true, false, churn_segment, "spawnpool_next,spawnpool_iter"},
    {"fifo", true, false, fifo_segment, "spawnpool_next,spawnpool_iter"},
    {"iterate", true, true, iterate_segment,
     "spawnpool_grown,spawnpool_reclaim,spawnpool_handles,checked_header,checked_side,"
     "checked_bits,checked_gen,checked_dense,checked_plan,checked_plan_byte"},
};

/* Where the live array starts in its page in repeat r (warm-up: r = 0). The CPU matches a load
   against the stores still in flight on the address's low 12 bits first, so two arrays walked in
   step whose page offsets are a few entries apart (the live array and an implementation's own,
   walked at the same index in lifo and fifo) make every load wait on a store to the other: the
   same code ran 3.0 to 6.0 ns a pair in LIFO 1k depending only on this offset. Each implementation
   used to get its array from calloc wherever the heap had room, so each drew its own offset, and
   a ratio of two of them measured placement as much as code. Now every implementation gets the
   same offset in a repeat, and a different one each repeat (a step of ~0.62 pages, so that a few
   repeats cover the page): the minimum is each one's best placement of the same set, the median
   a typical one. */
static size_t live_offset(size_t r) { return (r * 2528u) % 4096u; }

/* Puts c's live array at page offset off (outside the timed segment). */
static void cell_place_live(cell *c, size_t off) {
    void **to = (void **)(void *)(c->live_mem + off);
    if (to != c->live) memmove(to, c->live, c->n * sizeof *c->live);
    c->live = to;
}

static void run_generic(const generic_workload *w, size_t n, size_t item_size,
                        const bench_impl *const *impls, size_t impl_count) {
    cell *cells = xcalloc(impl_count, sizeof *cells);
    size_t count = 0;
    for (size_t i = 0; i < impl_count; i++) {
        if (!impl_selected(impls[i]->name) || bench_list_has(w->skip, impls[i]->name)) continue;
        cell *c = &cells[count];
        c->impl = impls[i];
        c->pair = bench_impl_pool_pair(impls[i]);
        c->n = n;
        c->item_size = item_size;
        c->rng = 0x5EED5EEDu + n;
        if (!c->impl->open(&c->state, item_size, n)) continue;
        size_t live_bytes = (n * sizeof *c->live + 4095u) / 4096u * 4096u + 4096u;
        c->live_mem = aligned_alloc(4096, live_bytes);
        if (c->live_mem == NULL) {
            fprintf(stderr, "spbench: out of memory (%zu bytes)\n", live_bytes);
            exit(1);
        }
        memset(c->live_mem, 0, live_bytes);
        c->live = (void **)(void *)(c->live_mem + live_offset(0));
        c->samples = xcalloc(params.repeats, sizeof *c->samples);
        if (w->fill) cell_fill(c);
        if (w->scramble && !c->failed) cell_scramble(c);
        if (!c->failed) w->segment(c, params.ops); /* warm-up, untimed */
        count++;
    }
    for (size_t r = 0; r < params.repeats; r++) {
        for (size_t k = 0; k < count; k++) {
            cell *c = &cells[(k + r) % count];
            if (c->failed) continue;
            cell_place_live(c, live_offset(r));
            uint64_t t0 = now_ns();
            size_t done = w->segment(c, params.ops);
            uint64_t t1 = now_ns();
            c->samples[r] = (double)(t1 - t0) / (double)done;
        }
    }
    for (size_t k = 0; k < count; k++) {
        cell *c = &cells[k];
        if (!c->failed) {
            double mn = c->samples[0];
            for (size_t r = 1; r < params.repeats; r++)
                if (c->samples[r] < mn) mn = c->samples[r];
            emit(w->name, n, item_size, c->impl->name, "ns_per_op_median",
                 median_of(c->samples, params.repeats), "ns");
            emit(w->name, n, item_size, c->impl->name, "ns_per_op_min", mn, "ns");
        }
        if (w->fill) cell_drain(c);
        c->impl->close(c->state);
        free(c->live_mem);
        free(c->samples);
    }
    free(cells);
}

/* ---------------------------------------------------------------------------------------------
   Reclaim-oldest at n live: spawnpool RECLAIM against an array kept in acquisition order.
   ------------------------------------------------------------------------------------------ */

typedef struct order_ref {
    bench_freelist fl;
    void **order; /* order[0] is the oldest */
    size_t n;
} order_ref;

/* BeePool's way: the oldest is order[0]; taking it shifts every other entry down. */
static size_t order_segment(order_ref *o, size_t ops) {
    for (size_t i = 0; i < ops; i++) {
        uint64_t *victim = o->order[0];
        memmove(o->order, o->order + 1, (o->n - 1) * sizeof *o->order);
        o->order[o->n - 1] = victim;
        *victim = i;
    }
    return ops;
}

static size_t reclaim_segment(sp_pool *pool, size_t ops, bool *failed) {
    for (size_t i = 0; i < ops; i++) {
        uint64_t *p = sp_acquire(pool);
        if (p == NULL) {
            *failed = true;
            return 1;
        }
        *p = i;
    }
    return ops;
}

static void run_reclaim(size_t n, size_t item_size) {
    bool run_sp = impl_selected("spawnpool_reclaim"), run_ref = impl_selected("array_order");
    sp_pool *pool = NULL;
    bool failed = false;
    if (run_sp) {
        /* Grown by acquisition (initial 0), as users create pools. */
        pool = sp_pool_create(&(sp_desc){.name = "reclaim", .item_size = item_size, .max = n,
                                         .overflow = SP_OVERFLOW_RECLAIM});
        if (pool == NULL) run_sp = false;
        for (size_t i = 0; run_sp && i < n; i++)
            if (sp_acquire(pool) == NULL) failed = true;
        if (run_sp && !failed) reclaim_segment(pool, params.ops, &failed);
    }
    order_ref ref = {.n = n};
    if (run_ref) {
        bench_freelist_init(&ref.fl, item_size, n);
        ref.order = xcalloc(n, sizeof *ref.order);
        for (size_t i = 0; i < n; i++) ref.order[i] = bench_freelist_pop(&ref.fl);
    }
    /* The array reference is O(n) per op: give it fewer ops so a segment takes similar time. */
    size_t ref_ops = params.ops * 64u / n;
    if (ref_ops < 32) ref_ops = 32;
    if (ref_ops > params.ops) ref_ops = params.ops;
    if (run_ref) order_segment(&ref, ref_ops);
    double *s_sp = xcalloc(params.repeats, sizeof(double));
    double *s_ref = xcalloc(params.repeats, sizeof(double));
    for (size_t r = 0; r < params.repeats; r++) {
        for (int k = 0; k < 2; k++) {
            bool sp_turn = ((size_t)k + r) % 2 == 0;
            uint64_t t0 = now_ns(), t1;
            if (sp_turn && run_sp && !failed) {
                size_t done = reclaim_segment(pool, params.ops, &failed);
                t1 = now_ns();
                s_sp[r] = (double)(t1 - t0) / (double)done;
            } else if (!sp_turn && run_ref) {
                size_t done = order_segment(&ref, ref_ops);
                t1 = now_ns();
                s_ref[r] = (double)(t1 - t0) / (double)done;
            }
        }
    }
    if (run_sp) {
        sp_stats st;
        sp_stats_get(pool, &st);
        if (failed || st.reclaimed == 0) {
            fprintf(stderr, "spbench: spawnpool RECLAIM did not reclaim at n=%zu\n", n);
        } else {
            double mn = s_sp[0];
            for (size_t r = 1; r < params.repeats; r++) mn = s_sp[r] < mn ? s_sp[r] : mn;
            emit("reclaim", n, item_size, "spawnpool_reclaim", "ns_per_op_median",
                 median_of(s_sp, params.repeats), "ns");
            emit("reclaim", n, item_size, "spawnpool_reclaim", "ns_per_op_min", mn, "ns");
        }
        sp_release_all(pool);
        sp_pool_destroy(pool);
    }
    if (run_ref) {
        double mn = s_ref[0];
        for (size_t r = 1; r < params.repeats; r++) mn = s_ref[r] < mn ? s_ref[r] : mn;
        emit("reclaim", n, item_size, "array_order", "ns_per_op_median",
             median_of(s_ref, params.repeats), "ns");
        emit("reclaim", n, item_size, "array_order", "ns_per_op_min", mn, "ns");
        bench_freelist_fini(&ref.fl);
        free(ref.order);
    }
    free(s_sp);
    free(s_ref);
}

/* ---------------------------------------------------------------------------------------------
   Resolve: random handles over n live members, one in nine stale.
   ------------------------------------------------------------------------------------------ */

/* The floor: a slot array with a generation per slot, id = generation << 32 | slot. */
typedef struct gen_table {
    char *items;
    uint32_t *gens;
    size_t slot_size, count;
} gen_table;

static void *gen_resolve(void *state, uint64_t id) {
    gen_table *t = state;
    size_t slot = (size_t)(uint32_t)id;
    if (slot >= t->count || t->gens[slot] != (uint32_t)(id >> 32)) return NULL;
    return t->items + slot * t->slot_size;
}

static void *sp_resolve_id(void *state, uint64_t id) {
    return sp_resolve(state, (sp_handle){id});
}

static size_t resolve_segment(void *(*resolve)(void *, uint64_t), void *state,
                              const uint64_t *ids, size_t m, uint64_t *rng, size_t ops) {
    uint64_t sum = 0;
    for (size_t i = 0; i < ops; i++) {
        const uint64_t *p = resolve(state, ids[rng_below(rng, m)]);
        if (p != NULL) sum += *p;
    }
    bench_sink += sum;
    return ops;
}

static void run_resolve(size_t n, size_t item_size) {
    size_t m = n + n / 8; /* built members; every ninth handle is stale */
    struct {
        const char *name;
        void *(*resolve)(void *, uint64_t);
        void *state;
        uint64_t *ids;
        uint64_t rng;
        double *samples;
        bool on;
    } r2[2] = {{"spawnpool_handles", sp_resolve_id, NULL, NULL, 7, NULL, false},
               {"freelist", gen_resolve, NULL, NULL, 7, NULL, false}};
    gen_table table = {0};
    for (int k = 0; k < 2; k++) {
        if (!impl_selected(r2[k].name)) continue;
        r2[k].ids = xcalloc(m, sizeof(uint64_t));
        r2[k].samples = xcalloc(params.repeats, sizeof(double));
        if (k == 0) {
            sp_pool *pool = sp_pool_create(&(sp_desc){.name = "resolve", .item_size = item_size,
                                                      .max = m}); /* grown, as users do */
            if (pool == NULL) continue;
            void **items = xcalloc(m, sizeof(void *));
            for (size_t i = 0; i < m; i++) {
                items[i] = sp_acquire(pool);
                if (items[i] == NULL) break;
                *(uint64_t *)items[i] = i;
                r2[k].ids[i] = sp_handle_of(pool, items[i]).id;
            }
            for (size_t i = 0; i < m; i += 9)
                if (items[i] != NULL) sp_release(pool, items[i]);
            free(items);
            r2[k].state = pool;
        } else {
            table.slot_size = (item_size + 15u) & ~(size_t)15u;
            table.count = m;
            table.items = xcalloc(m, table.slot_size);
            table.gens = xcalloc(m, sizeof(uint32_t));
            for (size_t i = 0; i < m; i++) {
                table.gens[i] = 1;
                *(uint64_t *)(table.items + i * table.slot_size) = i;
                r2[k].ids[i] = (uint64_t)1 << 32 | i;
            }
            for (size_t i = 0; i < m; i += 9) table.gens[i]++;
            r2[k].state = &table;
        }
        r2[k].on = true;
        resolve_segment(r2[k].resolve, r2[k].state, r2[k].ids, m, &r2[k].rng, params.ops);
    }
    for (size_t r = 0; r < params.repeats; r++) {
        for (int j = 0; j < 2; j++) {
            int k = (int)(((size_t)j + r) % 2);
            if (!r2[k].on) continue;
            uint64_t t0 = now_ns();
            size_t done = resolve_segment(r2[k].resolve, r2[k].state, r2[k].ids, m, &r2[k].rng,
                                          params.ops);
            uint64_t t1 = now_ns();
            r2[k].samples[r] = (double)(t1 - t0) / (double)done;
        }
    }
    for (int k = 0; k < 2; k++) {
        if (r2[k].on) {
            double mn = r2[k].samples[0];
            for (size_t r = 1; r < params.repeats; r++)
                mn = r2[k].samples[r] < mn ? r2[k].samples[r] : mn;
            emit("resolve", n, item_size, r2[k].name, "ns_per_op_median",
                 median_of(r2[k].samples, params.repeats), "ns");
            emit("resolve", n, item_size, r2[k].name, "ns_per_op_min", mn, "ns");
        }
        free(r2[k].ids);
        free(r2[k].samples);
    }
    if (r2[0].on) {
        sp_release_all(r2[0].state);
        sp_pool_destroy(r2[0].state);
    }
    free(table.items);
    free(table.gens);
}

/* ---------------------------------------------------------------------------------------------
   Frame: a fountain of sparks, 200 spawned a frame plus a 10000-spark explosion every 60
   frames, each living 30..149 frames (explosions 10..39). Every implementation runs the same
   simulation in lockstep, frame by frame, in rotating order.
   ------------------------------------------------------------------------------------------ */

enum { FRAME_ITEM = 64, FRAME_SPAWN = 200, FRAME_BURST = 10000, FRAME_BURST_EVERY = 60 };

typedef struct spark {
    float x, y, z, vx, vy, vz;
    int32_t life;
    uint32_t seed;
    float color[8];
} spark;

typedef struct frame_sim {
    const bench_impl *impl;
    void *state;
    spark **live;
    size_t count, cap;
    uint64_t rng;
    double *ms;
    bool failed;
} frame_sim;

static void frame_step(frame_sim *s, size_t frame) {
    void *(*acquire)(void *) = s->impl->acquire;
    void (*release)(void *, void *) = s->impl->release;
    bool burst = frame % FRAME_BURST_EVERY == 0;
    size_t spawn = FRAME_SPAWN + (burst ? FRAME_BURST : 0);
    for (size_t i = 0; i < spawn && s->count < s->cap; i++) {
        spark *p = acquire(s->state);
        if (p == NULL) {
            s->failed = true;
            break;
        }
        uint64_t r = rng_next(&s->rng);
        p->x = p->y = p->z = 0.0f;
        p->vx = (float)(r & 0xff) / 256.0f - 0.5f;
        p->vy = 4.0f + (float)((r >> 8) & 0xff) / 64.0f;
        p->vz = (float)((r >> 16) & 0xff) / 256.0f - 0.5f;
        p->life = burst && i >= FRAME_SPAWN ? 10 + (int32_t)((r >> 24) % 30)
                                            : 30 + (int32_t)((r >> 24) % 120);
        p->seed = (uint32_t)(r >> 40);
        s->live[s->count++] = p;
    }
    const float dt = 1.0f / 60.0f;
    for (size_t i = 0; i < s->count;) {
        spark *p = s->live[i];
        p->x += p->vx * dt;
        p->y += p->vy * dt;
        p->z += p->vz * dt;
        p->vy -= 9.81f * dt;
        if (--p->life <= 0) {
            release(s->state, p);
            s->live[i] = s->live[--s->count];
        } else {
            i++;
        }
    }
}

static double percentile_sorted(const double *v, size_t count, double q) {
    size_t k = (size_t)(q * (double)(count - 1) + 0.5);
    return v[k < count ? k : count - 1];
}

/* The variants of the spawnpool pool that the frame and memory workloads leave out: their pool
   is `spawnpool` (grown on demand in frame, where capacity is 0), the rest differ elsewhere. */
static const char *const spawnpool_variants =
    "spawnpool_grown,spawnpool_reclaim,spawnpool_handles,spawnpool_next,spawnpool_iter";

static void run_frame(const bench_impl *const *impls, size_t impl_count) {
    frame_sim *sims = xcalloc(impl_count, sizeof *sims);
    size_t count = 0, frames = params.frames;
    for (size_t i = 0; i < impl_count; i++) {
        const char *name = impls[i]->name;
        if (!impl_selected(name) || bench_list_has(spawnpool_variants, name)) continue;
        frame_sim *s = &sims[count];
        s->impl = impls[i];
        /* Capacity 0: nobody knows the peak, every implementation grows on demand. */
        if (!s->impl->open(&s->state, sizeof(spark), 0)) continue;
        s->cap = 1u << 20;
        s->live = xcalloc(s->cap, sizeof *s->live);
        s->ms = xcalloc(frames, sizeof *s->ms);
        s->rng = 42;
        count++;
    }
    for (size_t f = 0; f < frames; f++) {
        for (size_t k = 0; k < count; k++) {
            frame_sim *s = &sims[(k + f) % count];
            if (s->failed) continue;
            uint64_t t0 = now_ns();
            frame_step(s, f);
            s->ms[f] = (double)(now_ns() - t0) / 1e6;
        }
    }
    FILE *dat = NULL;
    if (params.datadir != NULL) {
        char path[4096];
        snprintf(path, sizeof path, "%s/frame_times.dat", params.datadir);
        dat = fopen(path, "w");
        if (dat == NULL) fprintf(stderr, "spbench: cannot write %s: %s\n", path, strerror(errno));
    }
    for (size_t k = 0; k < count; k++) {
        frame_sim *s = &sims[k];
        if (s->failed) {
            fprintf(stderr, "spbench: %s returned NULL in the frame workload\n", s->impl->name);
        } else {
            double sum = 0;
            for (size_t f = 0; f < frames; f++) sum += s->ms[f];
            qsort(s->ms, frames, sizeof *s->ms, cmp_double);
            emit("frame", frames, FRAME_ITEM, s->impl->name, "frame_ms_p50",
                 percentile_sorted(s->ms, frames, 0.50), "ms");
            emit("frame", frames, FRAME_ITEM, s->impl->name, "frame_ms_p99",
                 percentile_sorted(s->ms, frames, 0.99), "ms");
            emit("frame", frames, FRAME_ITEM, s->impl->name, "frame_ms_max", s->ms[frames - 1],
                 "ms");
            emit("frame", frames, FRAME_ITEM, s->impl->name, "frame_ms_mean",
                 sum / (double)frames, "ms");
        }
        for (size_t i = 0; i < s->count; i++) s->impl->release(s->state, s->live[i]);
        s->impl->close(s->state);
        free(s->live);
    }
    /* The distribution: one row per 0.1 percentile, one column per implementation. */
    if (dat != NULL) {
        fprintf(dat, "percentile");
        for (size_t k = 0; k < count; k++) fprintf(dat, " %s", sims[k].impl->name);
        fprintf(dat, "\n");
        for (int q = 0; q <= 1000; q++) {
            fprintf(dat, "%.1f", q / 10.0);
            for (size_t k = 0; k < count; k++)
                fprintf(dat, " %.5f",
                        sims[k].failed ? 0.0 : percentile_sorted(sims[k].ms, frames, q / 1000.0));
            fprintf(dat, "\n");
        }
        fclose(dat);
    }
    for (size_t k = 0; k < count; k++) free(sims[k].ms);
    free(sims);
}

/* ---------------------------------------------------------------------------------------------
   Memory held per member at n members. Each implementation runs in a child process of its
   own, so memory another one freed cannot hide in its numbers.
   ------------------------------------------------------------------------------------------ */

static size_t rss_bytes(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long size = 0, resident = 0;
    if (f != NULL) {
        if (fscanf(f, "%lu %lu", &size, &resident) != 2) resident = 0;
        fclose(f);
    }
    return (size_t)resident * (size_t)sysconf(_SC_PAGESIZE);
}

static size_t glibc_held(void) {
    struct mallinfo2 mi = mallinfo2();
    return mi.arena + mi.hblkhd;
}

static void memory_child(const bench_impl *impl, size_t n, size_t item_size) {
    void **live = xcalloc(n, sizeof *live);
    memset(live, 1, n * sizeof *live); /* fault the array in before the baseline */
    size_t rss0 = rss_bytes(), held0 = glibc_held();
    void *state;
    if (!impl->open(&state, item_size, n)) _exit(0);
    for (size_t i = 0; i < n; i++) {
        live[i] = impl->acquire(state);
        if (live[i] == NULL) {
            fprintf(stderr, "spbench: %s returned NULL in memory at %zu\n", impl->name, i);
            _exit(1);
        }
        *(uint64_t *)live[i] = i;
    }
    size_t rss = rss_bytes() - rss0, held = glibc_held() - held0;
    double per_rss = (double)rss / (double)n, per = per_rss;
    const char *how = "rss";
    double reserved_per = -1.0; /* a pool's reserved address space a member, apart from bytes */
    if (impl->pool != NULL) {
        sp_stats st;
        sp_stats_get(impl->pool(state), &st);
        per = (double)st.bytes / (double)n;
        reserved_per = (double)st.bytes_reserved / (double)n;
        how = "sp_stats";
    } else if (strcmp(impl->name, "glibc") == 0) {
        per = (double)held / (double)n;
        how = "mallinfo2";
    }
    emit("memory", n, item_size, impl->name, "bytes_per_member", per, "B");
    emit("memory", n, item_size, impl->name, "overhead_per_member", per - (double)item_size, "B");
    emit("memory", n, item_size, impl->name, "rss_bytes_per_member", per_rss, "B");
    if (reserved_per >= 0.0)
        emit("memory", n, item_size, impl->name, "reserved_bytes_per_member", reserved_per, "B");
    fprintf(stderr, "memory %s size %zu: %.2f B/member (%s), %.2f by RSS\n", impl->name,
            item_size, per, how, per_rss);
    _exit(0);
}

static void run_memory(const bench_impl *const *impls, size_t impl_count, size_t n,
                       size_t item_size) {
    for (size_t i = 0; i < impl_count; i++) {
        const char *name = impls[i]->name;
        if (!impl_selected(name) || bench_list_has(spawnpool_variants, name)) continue;
        fflush(stdout);
        fflush(stderr);
        pid_t pid = fork();
        if (pid < 0) {
            perror("fork");
            return;
        }
        if (pid == 0) memory_child(impls[i], n, item_size);
        int status = 0;
        waitpid(pid, &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            fprintf(stderr, "spbench: memory run of %s failed\n", impls[i]->name);
    }
}

/* ---------------------------------------------------------------------------------------------
   Steady state: after warm-up, spawnpool must not call its allocator at all. Counted through
   an sp_allocator that forwards to the C library.
   ------------------------------------------------------------------------------------------ */

typedef struct counting {
    uint64_t allocs, frees;
} counting;

static void *counting_alloc(size_t size, size_t align, void *user) {
    ((counting *)user)->allocs++;
    if (align < sizeof(void *)) align = sizeof(void *);
    void *p = NULL;
    return posix_memalign(&p, align, size ? size : 1) == 0 ? p : NULL;
}

static void counting_free(void *ptr, size_t size, void *user) {
    (void)size;
    ((counting *)user)->frees++;
    free(ptr);
}

static void run_steady(size_t n, size_t item_size) {
    static const struct {
        const char *name;
        sp_overflow policy;
        bool handles;
    } variants[] = {{"spawnpool", SP_OVERFLOW_DROP, false},
                    {"spawnpool_reclaim", SP_OVERFLOW_RECLAIM, false},
                    {"spawnpool_handles", SP_OVERFLOW_DROP, true}};
    for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++) {
        if (!impl_selected(variants[v].name)) continue;
        counting calls = {0, 0};
        sp_pool *pool = sp_pool_create(&(sp_desc){
            .name = "steady", .item_size = item_size, .max = n,
            .overflow = variants[v].policy,
            .allocator = {.alloc = counting_alloc, .free = counting_free, .user = &calls}});
        if (pool == NULL) {
            fprintf(stderr, "spbench: steady: sp_pool_create failed\n");
            continue;
        }
        void **live = xcalloc(n, sizeof *live);
        uint64_t rng = 3;
        bool failed = false;
        uint64_t before = 0;
        /* Pass 0 warms up (the pool grows to n); pass 1 is counted. */
        for (int pass = 0; pass < 2 && !failed; pass++) {
            if (pass == 1) before = calls.allocs + calls.frees;
            for (size_t i = 0; i < n && !failed; i++) failed = (live[i] = sp_acquire(pool)) == NULL;
            for (size_t i = 0; i < params.ops / 4 && !failed; i++) { /* churn */
                size_t k = rng_below(&rng, n);
                sp_release(pool, live[k]);
                failed = (live[k] = sp_acquire(pool)) == NULL;
                if (variants[v].handles && !failed)
                    failed = sp_resolve(pool, sp_handle_of(pool, live[k])) != live[k];
            }
            if (variants[v].policy == SP_OVERFLOW_RECLAIM) /* saturated: every acquire reclaims */
                for (size_t i = 0; i < params.ops / 4 && !failed; i++)
                    failed = sp_acquire(pool) == NULL;
            sp_release_all(pool); /* LIFO-style emptying; the next pass refills */
        }
        if (failed) {
            fprintf(stderr, "spbench: steady: %s failed\n", variants[v].name);
        } else {
            emit("steady", n, item_size, variants[v].name, "allocator_calls",
                 (double)(calls.allocs + calls.frees - before), "calls");
        }
        sp_pool_destroy(pool);
        free(live);
    }
}

/* ---------------------------------------------------------------------------------------------
   Snapshot: sp_snapshot + sp_restore of n leased plain members (64 B) against the least a save
   and a load must do, memcpy of the members' bytes out to a buffer and back into fresh memory
   (malloc'd and touched there, as the restored pool's new spans are). Each timing is the median
   of the repeats; the restored pool's destruction and the fresh block's free are outside it.
   ------------------------------------------------------------------------------------------ */

static void run_snapshot(size_t n, size_t item_size) {
    sp_pool *pool = sp_pool_create(&(sp_desc){.name = "snapshot", .item_size = item_size});
    if (pool == NULL) {
        fprintf(stderr, "spbench: snapshot: sp_pool_create failed\n");
        return;
    }
    bool failed = false;
    for (size_t i = 0; i < n && !failed; i++) {
        unsigned char *m = sp_acquire(pool);
        failed = m == NULL;
        if (m) memset(m, (int)(i & 0xFF), item_size);
    }
    size_t size = sp_snapshot_size(pool, NULL);
    unsigned char *buf = failed ? NULL : malloc(size);
    unsigned char *bytes = malloc(n * item_size);
    if (!buf || !bytes) {
        fprintf(stderr, "spbench: snapshot: setup failed\n");
        sp_pool_destroy(pool);
        free(buf);
        free(bytes);
        return;
    }
    for (size_t i = 0; i < n; i++) memset(bytes + i * item_size, (int)(i & 0xFF), item_size);
    size_t repeats = params.repeats > 64 ? 64 : params.repeats;
    if (repeats > 9) repeats = 9; /* each repeat moves 2 x n x item_size bytes and maps as much */
    double sp_ns[64], ref_ns[64], save_ns[64];
    const sp_desc desc = {.name = "snapshot", .item_size = item_size};
    for (size_t r = 0; r < repeats && !failed; r++) {
        uint64_t t0 = now_ns();
        failed = sp_snapshot(pool, buf, size, NULL) != SP_OK;
        uint64_t t1 = now_ns();
        sp_pool *back = failed ? NULL : sp_restore(&desc, buf, size, NULL);
        uint64_t t2 = now_ns();
        failed = failed || back == NULL;
        if (back) sp_release_all(back); /* (no leak line) */
        sp_pool_destroy(back);
        save_ns[r] = (double)(t1 - t0);
        sp_ns[r] = (double)(t2 - t0);
        /* the reference: out to the buffer, back into fresh memory */
        uint64_t u0 = now_ns();
        memcpy(buf, bytes, n * item_size);
        unsigned char *fresh = malloc(n * item_size);
        if (fresh) memcpy(fresh, buf, n * item_size);
        uint64_t u1 = now_ns();
        failed = failed || fresh == NULL;
        bench_sink += fresh ? fresh[n * item_size / 2] : 0u;
        free(fresh);
        ref_ns[r] = (double)(u1 - u0);
    }
    if (failed) {
        fprintf(stderr, "spbench: snapshot: failed\n");
    } else {
        emit("snapshot", n, item_size, "spawnpool", "save_restore_ns", median_of(sp_ns, repeats), "ns");
        emit("snapshot", n, item_size, "spawnpool", "save_ns", median_of(save_ns, repeats), "ns");
        emit("snapshot", n, item_size, "memcpy", "save_restore_ns", median_of(ref_ns, repeats), "ns");
    }
    sp_release_all(pool);
    sp_pool_destroy(pool);
    free(buf);
    free(bytes);
}

/* ---------------------------------------------------------------------------------------------
   Command line
   ------------------------------------------------------------------------------------------ */

/* ---------------------------------------------------------------------------------------------
   Dense: sp_dense (a packed array, swap-remove) against sp_pool for a particle system's two
   jobs: updating every particle (dense_iterate, ns per particle) and random churn (dense_churn,
   remove a random particle and add one, ns per pair). Both hold n live 64-byte particles.
   ------------------------------------------------------------------------------------------ */

typedef struct dense_cell {
    sp_dense *dense;
    sp_pool *pool;
    void **live; /* the pool's members, for picking a random one to release */
    size_t n;
    uint64_t rng;
    double iterate[64], churn[64];
} dense_cell;

static size_t dense_iterate_segment(dense_cell *c, size_t ops) {
    size_t rounds = ops / c->n ? ops / c->n : 1, visited = 0;
    float dt = 1.0f / 60.0f;
    for (size_t r = 0; r < rounds; r++) {
        if (c->dense) {
            particle *p = sp_dense_data(c->dense);
            size_t count = sp_dense_count(c->dense);
            for (size_t i = 0; i < count; i++) {
                p[i].x += p[i].vx * dt;
                p[i].y += p[i].vy * dt;
            }
            visited += count;
        } else {
            visited += sp_each(c->pool, particle_update, &dt);
        }
    }
    return visited;
}

static size_t dense_churn_segment(dense_cell *c, size_t ops) {
    particle fresh = {0, 0, 1, 1};
    for (size_t k = 0; k < ops; k++) {
        size_t i = rng_below(&c->rng, c->n);
        if (c->dense) {
            sp_dense_remove_at(c->dense, i);
            sp_dense_add(c->dense, &fresh);
        } else {
            sp_release(c->pool, c->live[i]);
            c->live[i] = sp_acquire(c->pool);
        }
    }
    return ops;
}

static void run_dense(size_t n, size_t item_size) {
    dense_cell cells[2];
    memset(cells, 0, sizeof cells);
    size_t repeats = params.repeats < 64 ? params.repeats : 64;
    for (int k = 0; k < 2; k++) {
        dense_cell *c = &cells[k];
        c->n = n;
        c->rng = 0xDE5E0000u + n;
        if (k == 0) {
            c->dense = sp_dense_create(&(sp_dense_desc){.name = "bench", .item_size = item_size, .max = n,
                                                        .initial = n});
        } else {
            c->pool = sp_pool_create(&(sp_desc){.name = "bench", .item_size = item_size, .max = n,
                                                .initial = n});
            c->live = xcalloc(n, sizeof *c->live);
        }
        particle fresh = {0, 0, 1, 1};
        for (size_t i = 0; i < n; i++) {
            if (c->dense) sp_dense_add(c->dense, &fresh);
            else c->live[i] = sp_acquire(c->pool);
        }
        dense_churn_segment(c, n); /* scramble: live members out of address order; warm-up */
        dense_iterate_segment(c, params.ops);
    }
    for (size_t r = 0; r < repeats; r++) {
        for (int j = 0; j < 2; j++) {
            dense_cell *c = &cells[(j + (int)r) % 2];
            uint64_t t0 = now_ns();
            size_t done = dense_iterate_segment(c, params.ops);
            uint64_t t1 = now_ns();
            c->iterate[r] = (double)(t1 - t0) / (double)done;
            t0 = now_ns();
            done = dense_churn_segment(c, params.ops);
            t1 = now_ns();
            c->churn[r] = (double)(t1 - t0) / (double)done;
        }
    }
    for (int k = 0; k < 2; k++) {
        dense_cell *c = &cells[k];
        const char *impl = c->dense ? "sp_dense" : "spawnpool";
        double *series[2] = {c->iterate, c->churn};
        const char *names[2] = {"dense_iterate", "dense_churn"};
        for (int w = 0; w < 2; w++) {
            double mn = series[w][0];
            for (size_t r = 1; r < repeats; r++)
                if (series[w][r] < mn) mn = series[w][r];
            emit(names[w], n, item_size, impl, "ns_per_op_median", median_of(series[w], repeats), "ns");
            emit(names[w], n, item_size, impl, "ns_per_op_min", mn, "ns");
        }
        if (c->dense) sp_dense_destroy(c->dense);
        if (c->pool) {
            sp_release_all(c->pool);
            sp_pool_destroy(c->pool);
        }
        free(c->live);
    }
}

static size_t parse_list(const char *s, size_t *out, size_t cap) {
    size_t count = 0;
    while (*s && count < cap) {
        char *end;
        unsigned long long v = strtoull(s, &end, 10);
        if (end == s) break;
        out[count++] = (size_t)v;
        s = *end == ',' ? end + 1 : end;
    }
    return count;
}

static int usage(void) {
    fprintf(stderr,
            "usage: spbench --workload lifo|churn|fifo|reclaim|resolve|iterate|frame|memory|steady|dense|snapshot|embed|sizes\n"
            "               [--quick] [--impl a,b] [--n 1000,100000] [--sizes 16,64,256]\n"
            "               [--datadir DIR]\n"
            "       spbench --workload threads_local|threads_cross|threads_mixed [--quick]\n"
            "               [--impl a,b] [--n 1,2,4,8]   (--n: thread counts)\n");
    return 2;
}

int main(int argc, char **argv) {
    const char *workload = NULL;
    bool quick = false, n_given = false, sizes_given = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--quick") == 0) {
            quick = true;
        } else if (strcmp(a, "--workload") == 0 && v) {
            workload = v, i++;
        } else if (strcmp(a, "--impl") == 0 && v) {
            params.impls = v, i++;
        } else if (strcmp(a, "--n") == 0 && v) {
            params.n_count = parse_list(v, params.ns, 8), n_given = true, i++;
        } else if (strcmp(a, "--sizes") == 0 && v) {
            params.size_count = parse_list(v, params.sizes, 8), sizes_given = true, i++;
        } else if (strcmp(a, "--datadir") == 0 && v) {
            params.datadir = v, i++;
        } else {
            return usage();
        }
    }
    if (workload == NULL) return usage();
    if (strcmp(workload, "embed") == 0) return bench_embed_run(quick); /* bench_embed.c */
    if (strcmp(workload, "sizes") == 0) return bench_sizes_run(quick, params.impls); /* bench_sizes.c */
    if (strncmp(workload, "threads_", 8) == 0) /* bench_threads.c; --n gives thread counts */
        return bench_threads_run(workload, quick, params.impls, n_given ? params.ns : NULL,
                                 params.n_count);
    if (quick) {
        params.ops = 20000;
        params.repeats = 11;
        params.frames = 1000;
    }
    size_t impl_count;
    const bench_impl *const *impls = bench_impls(&impl_count);
    /* jemalloc replaces malloc, so it runs in a process of its own that preloads it (run.sh). In
       lifo, churn and fifo it still runs in the same company as everyone else: a cell's
       implementations take turns, and the others' memory traffic between two of its segments is
       part of what each one is measured under. Alone, jemalloc started every segment with its
       own members in the cache (churn 64k 16 B: 8 ns a pair alone, 32-38 ns in company, where
       the free list takes 11-12). So that process runs the usual set with jemalloc in glibc's
       place (malloc is jemalloc's there) and prints jemalloc's rows, and those of spawnpool and
       the floors tagged "@jemalloc" (emit). Elsewhere it runs alone: memory counts bytes, and
       the threads workloads run one implementation at a time. */
    const bench_impl *jemalloc_only[1];
    const bench_impl *company[32];
    if (params.impls != NULL && strcmp(params.impls, "jemalloc") == 0) {
        const bench_impl *jemalloc = bench_impl_find("jemalloc");
        bool in_company = strcmp(workload, "lifo") == 0 || strcmp(workload, "churn") == 0 ||
                          strcmp(workload, "fifo") == 0;
        if (in_company && impl_count <= sizeof company / sizeof company[0]) {
            for (size_t i = 0; i < impl_count; i++)
                company[i] = strcmp(impls[i]->name, "glibc") == 0 ? jemalloc : impls[i];
            impls = company;
            params.impls = NULL; /* every one runs */
            params.rows_of = "jemalloc";
        } else {
            jemalloc_only[0] = jemalloc;
            impls = jemalloc_only;
            impl_count = 1;
        }
    }
    /* Sizes matter for allocation; the rest of the workloads use 64-byte objects. */
    bool sized = strcmp(workload, "lifo") == 0 || strcmp(workload, "churn") == 0 ||
                 strcmp(workload, "fifo") == 0 || strcmp(workload, "memory") == 0;
    /* Quick mode keeps the 64-byte case only, except for memory, which is cheap. */
    if ((!sized || (quick && strcmp(workload, "memory") != 0)) && !sizes_given) {
        params.sizes[0] = 64;
        params.size_count = 1;
    }
    if ((strcmp(workload, "memory") == 0 || strcmp(workload, "snapshot") == 0) && !n_given) {
        params.ns[0] = 1000000;
        params.n_count = 1;
    }
    for (size_t g = 0; g < sizeof generic_workloads / sizeof generic_workloads[0]; g++) {
        if (strcmp(workload, generic_workloads[g].name) != 0) continue;
        for (size_t s = 0; s < params.size_count; s++)
            for (size_t k = 0; k < params.n_count; k++) {
                fprintf(stderr, "%s n=%zu size=%zu\n", workload, params.ns[k], params.sizes[s]);
                run_generic(&generic_workloads[g], params.ns[k], params.sizes[s], impls,
                            impl_count);
            }
        return 0;
    }
    for (size_t s = 0; s < params.size_count; s++) {
        for (size_t k = 0; k < params.n_count; k++) {
            size_t n = params.ns[k], size = params.sizes[s];
            fprintf(stderr, "%s n=%zu size=%zu\n", workload, n, size);
            if (strcmp(workload, "reclaim") == 0) run_reclaim(n, size);
            else if (strcmp(workload, "resolve") == 0) run_resolve(n, size);
            else if (strcmp(workload, "memory") == 0) run_memory(impls, impl_count, n, size);
            else if (strcmp(workload, "steady") == 0) run_steady(n, size);
            else if (strcmp(workload, "dense") == 0) run_dense(n, size);
            else if (strcmp(workload, "snapshot") == 0) run_snapshot(n, size);
            else if (strcmp(workload, "frame") == 0) {
                run_frame(impls, impl_count);
                return 0;
            } else return usage();
        }
    }
    return 0;
}
