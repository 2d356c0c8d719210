/* SPDX-License-Identifier: Zlib */
/* threads_internal.h -- what the thread-safe layer's files share: magazines, each thread's
   cache of a pool, the layer's state in the pool, and each thread's table of its caches.
   docs/threads.md has the design. Private. */
#ifndef SP_THREADS_INTERNAL_H
#define SP_THREADS_INTERNAL_H

#include "threads.h"

#if SP__HAVE_THREADS
#  include <pthread.h>

#  define SP__TS_DEFAULT_MAGAZINE 64u
#  define SP__TS_MAX_MAGAZINE 65536u
/* thread_cache_bytes' default: what a thread's two magazines of a pool may hold. 64-byte members
   keep the default magazines and their 16-fold growth (2 x 1024 x 64 = 128 KiB), members up to
   2 KiB the default size; larger members get smaller magazines (8 KiB ones: 16 a magazine). */
#  define SP__TS_DEFAULT_CACHE_BYTES ((size_t)256u * 1024u)
/* Adaptive magazines (Bonwick and Adams): the depot doubles the size of new magazines while
   visits are frequent and handed off between threads, up to this many times magazine_size (and
   SP__TS_MAX_MAGAZINE and the byte bound; in a pool with max, max / SP__TS_GROW_MAX_SHARE at
   most, never below magazine_size). A visit is frequent when it comes fewer than SP__TS_FREQUENT_MAGS magazines'
   worth of the thread's operations after its previous one; SP__TS_GROW_STRIKES such handed-off
   visits double the size. */
#  define SP__TS_GROW_FACTOR 16u
#  define SP__TS_GROW_MAX_SHARE 64u
#  define SP__TS_FREQUENT_MAGS 4u
#  define SP__TS_GROW_STRIKES 8u
/* A thread's visits count only once it has made this many magazines' worth (magazine_size) of
   operations since it took its cache: threads that live for a few hundred calls, taking over
   each other's caches, do not grow the magazines. */
#  define SP__TS_SETTLED_MAGS 16u

/* A magazine: up to cap free members of one pool, as slot indices. */
typedef struct sp__mag {
    struct sp__mag *next; /* in the depot's full or empty list */
    struct sp__mag *all;  /* every magazine of the pool, freed with it */
    uint32_t n, cap;
    uint32_t e[];
} sp__mag;

/* One thread's cache of one pool: owned by the pool (freed with it); its thread finds it through
   its table. Only its thread touches the magazines and writes the counters (relaxed atomic
   stores: sp_stats_get reads them any time). When its thread exits, its members go back to the
   depot and the cache stays, an orphan, for its counters and for the next thread. */
typedef struct sp__tcache {
    sp__mag *loaded, *prev;
    _Atomic uint64_t acquired, released;
    uint64_t ops_at_visit; /* acquired + released at its last depot visit (adaptive size) */
    uint64_t ops_at_take;  /* ... when its thread took it (a new cache, or an orphan's) */
    _Atomic int inside;    /* debug builds: its thread is inside a call on the pool */
    _Atomic bool orphan;   /* its thread exited (set without the pool's lock: see threads.c,
                              "Locks"): the pool takes its magazines back, its counters stay */
    struct sp__tcache *next;
} sp__tcache;

/* What the fast paths read of a thread-safe pool: its place in every thread's table, its one
   span (if so), and of each span number its member 0 and its word 0 less its first slot
   index's share, so that a slot index from a magazine names its word and member by arithmetic,
   reading no span header. They are derived in one place (sp__ts_routes_update, when spans come
   or go), under the lock, and read lock-free (relaxed: a thread holding a slot index saw its span published, through
   the lock or the member's own hand-over). */
typedef struct sp__ts_fast {
    uint32_t slot;         /* the pool's place in every thread's table */
    uint64_t id;           /* matches the thread's table entry */
    /* The pool's span while it has only one (a pool with max, or not yet grown), else NULL: a
       release finds it without the map, an acquisition its member without the span number. A
       thread holding a member or slot index of a later span got it after that span was
       published, so it reads NULL here, never a stale span. */
    _Atomic(const sp__span *) one_span;
    /* Its record's item_base and word_base; with several spans, still the last one span's
       (never cleared: a thread may read the span before a growth and these after it). */
    _Atomic uintptr_t one_item_base, one_word_base;
    /* The shortcut into the source's map for the top span's chunk (sp__owner_near_at): a release
       of a pool of several spans finds its span with one load. Read relaxed: a stale one names
       another chunk, or a leaf that is still the map's, and the map's own path answers. */
    _Atomic sp__owner_near near;
    _Atomic uintptr_t item_base[SP__SPAN_RECS];
    _Atomic uintptr_t word_base[SP__SPAN_RECS];
} sp__ts_fast;

typedef struct sp__ts {
    sp__ts_fast fast;
    /* The pool lock (growth, the depot, windows), recursive: hooks under it call back. A plain
       mutex and its holder's token with a count (see sp__ts_lock), not a recursive pthread
       mutex, so that a fork's child may release what the fork's prepare took. */
    pthread_mutex_t lock;
    _Atomic uintptr_t holder; /* the holding thread's token, or 0 (others compare it) */
    uint32_t depth;           /* the holder's locks */
    uint32_t mag_size;    /* new magazines' size: mag_first, doubled by contention */
    uint32_t mag_first;   /* magazine_size, within mag_most */
    uint32_t mag_most;    /* the most a magazine may grow to: 16 x magazine_size, within
                             SP__TS_MAX_MAGAZINE and thread_cache_bytes' members / 2 (at least 1) */
    uint32_t strikes;     /* frequent handed-off depot visits since the last doubling */
    const sp__tcache *last_visitor;
    sp__mag *full, *empty, *all_mags; /* the depot, and every magazine */
    uint32_t loose_n;     /* free members outside magazines (exited threads, windows): the first
                             loose_n entries of the pool's stack, which only the lock reaches
                             outside windows (the stack has room for every built member) */
    sp__tcache *caches;
    uint64_t acquired, released; /* lives counted outside the caches (windows, loose releases) */
    uint64_t win_acquired, win_released; /* the totals when the window opened */
    size_t peak;
    int window; /* depth */
    _Atomic uint64_t foreign_handles, forged_handles;
} sp__ts;

/* The calling thread's table: entry s is its cache of the pool in slot s, valid while the id
   matches that pool's (a pool gone, and its slot given to another, never matches). */
typedef struct sp__tl_entry {
    uint64_t id;
    sp__tcache *cache;
} sp__tl_entry;

typedef struct sp__tl_table {
    struct sp__tl_table *next, *prev; /* every thread's table (fork's child, unloading) */
    uint32_t cap;
    sp__tl_entry e[];
} sp__tl_table;

/* Read on every call of a thread-safe pool: the initial-exec model makes it one load from the
   thread pointer, where a shared library's default calls __tls_get_addr each time (a dlopened
   library's initial-exec variables come from glibc's reserve for them, which 8 bytes fit). */
#if defined(__ELF__) && (defined(__GNUC__) || defined(__clang__))
#  define SP__TLS_FAST __attribute__((tls_model("initial-exec")))
#else
#  define SP__TLS_FAST
#endif
extern _Thread_local sp__tl_table *sp__tl SP__TLS_FAST;

/* threads.c */
void sp__ts_lock(sp_pool *p);
void sp__ts_unlock(sp_pool *p);
sp__tcache *sp__ts_cache_slow(sp_pool *p);
sp__mag *sp__ts_mag_get(sp_pool *p);
void sp__ts_mag_put_empty(sp_pool *p, sp__mag *m);
void sp__ts_depot_visit(sp_pool *p, sp__tcache *c);
void sp__ts_loose_push(sp_pool *p, uint32_t idx);
bool sp__ts_orphans_collect(sp_pool *p);

/* threads_windows.c: the peak leased, from the caches' counters (under the lock) */
void sp__ts_note_peak(sp_pool *p);

/* The calling thread's cache of the pool whose fast view is f, or NULL when it has none yet: its
   table's entry for the pool's slot, when the id matches. */
static inline sp__tcache *sp__ts_cache_found(const sp__ts_fast *f) {
    const sp__tl_table *t = sp__tl;
    uint32_t s = f->slot;
    return SP__LIKELY(t && s < t->cap && t->e[s].id == f->id) ? t->e[s].cache : NULL;
}

/* The calling thread's cache of p, made on its first call (NULL, with a line, when memory
   fails). */
static inline sp__tcache *sp__ts_cache(sp_pool *p) {
    sp__tcache *c = sp__ts_cache_found(&p->ts->fast);
    return SP__LIKELY(c != NULL) ? c : sp__ts_cache_slow(p);
}

/* A thread's own counter, which other threads read with relaxed loads: only its thread writes
   it, so a relaxed load and store make the increment. */
static inline void sp__ts_count(_Atomic uint64_t *c) {
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1u, memory_order_relaxed);
}

/* The span holding slot idx, from a thread that holds the member or got idx from the pool (it
   saw the span published): its record from the index (rec_of). */
static inline sp__span *sp__ts_span_of(const sp_pool *p, uint32_t idx) {
    uint32_t n = atomic_load_explicit(&p->mem.rec_count, memory_order_acquire);
    uint32_t k = n ? rec_of(SP__REC_SHIFT(p), idx) : 0u;
    if (k >= n) return NULL;
    sp__span *s = atomic_load_explicit(&p->mem.recs[k].span, memory_order_acquire);
    return s && idx - s->first < atomic_load_explicit(&s->count, memory_order_acquire) ? s : NULL;
}

#endif
#endif
