/* SPDX-License-Identifier: Zlib */
/* sp_threads.h -- what the thread-safe pool's two files share (threads.c: creation, the
   per-thread table and thread exit, the quiescent windows, stats; magazine.c: magazines, the
   depot, acquire, release, resolve) and the dispatch points the plain files call. docs/threads.md
   has the design. Private. */
#ifndef SP_THREADS_H
#define SP_THREADS_H

#include "pool_internal.h"

/* Threads need pthreads and the GCC/Clang atomic builtins (which work on the plain slot words
   that the single-threaded code also uses). Elsewhere (single-threaded WebAssembly, MSVC) a
   thread-safe pool is refused at creation with a line. */
#if (defined(__GNUC__) || defined(__clang__)) && !defined(_WIN32) && \
    (!defined(__EMSCRIPTEN__) || defined(__EMSCRIPTEN_PTHREADS__))
#  define SP__HAVE_THREADS 1
#  include <pthread.h>
#else
#  define SP__HAVE_THREADS 0
#endif

#define SP__TS_DEFAULT_MAGAZINE 64u
#define SP__TS_MAX_MAGAZINE 65536u
/* Adaptive magazines (Bonwick and Adams): the depot doubles the size of new magazines while
   visits are frequent and handed off between threads, up to this many times magazine_size
   (and SP__TS_MAX_MAGAZINE; in a pool with max, max / SP__TS_GROW_MAX_SHARE at most, never
   below magazine_size). */
#define SP__TS_GROW_FACTOR 16u
#define SP__TS_GROW_MAX_SHARE 64u
/* A depot visit is frequent when it comes fewer than this many magazines' worth of the
   thread's operations after its previous one; this many frequent handed-off visits double the
   size. */
#define SP__TS_FREQUENT_MAGS 4u
#define SP__TS_GROW_STRIKES 8u
/* A thread's visits count only once it has made this many magazines' worth (magazine_size) of
   operations since it took its cache: threads that live for a few hundred calls, taking over
   each other's caches, do not grow the magazines. */
#define SP__TS_SETTLED_MAGS 16u
/* A thread-safe pool without a reservation allocates its slots once, for this many members or
   max, whichever is more: slots that other threads read and CAS must never move. */
#define SP__TS_FALLBACK_SLOTS (1u << 20)
/* tag of a thread-safe pool outside a window: no handle's tag, so sp_resolve's tests fail */
#define SP__TS_NO_TAG (SP__TAG_MAX + 1u)

/* Call from the out-of-line paths: is this a thread-safe pool outside a window? */
#define SP__TS(p) SP__UNLIKELY((p)->ts != NULL && !(p)->ts_view)

/* A thread-safe pool's fast range's member count (published: see sp__ts), 0 for any other pool
   and in a window: how release_unmatched's dispatch and the magazines read it outside the lock. */
#if SP__HAVE_THREADS
#  define SP__TS_FAST_COUNT(p) __atomic_load_n(&(p)->ts_fast_count, __ATOMIC_RELAXED)
#else
#  define SP__TS_FAST_COUNT(p) ((p)->ts_fast_count)
#endif

#if SP__HAVE_THREADS
#  define SP__LOAD(ptr) __atomic_load_n((ptr), __ATOMIC_ACQUIRE)
#  define SP__LOAD_RELAXED(ptr) __atomic_load_n((ptr), __ATOMIC_RELAXED)
#  define SP__STORE(ptr, v) __atomic_store_n((ptr), (v), __ATOMIC_RELEASE)
#  define SP__STORE_RELAXED(ptr, v) __atomic_store_n((ptr), (v), __ATOMIC_RELAXED)
#  define SP__CAS(ptr, expected, desired)                                                         \
      __atomic_compare_exchange_n((ptr), (expected), (desired), false, __ATOMIC_ACQ_REL,          \
                                  __ATOMIC_ACQUIRE)

/* A magazine: up to mag_size free members of one pool, as slot indexes. An index rather than
   the member's address and its word's (16 bytes), so that an entry is one scaled access: the
   fast release stores the number sp_release computed (in the fast range it is the slot index)
   and nothing else, the fast acquire finds the word (slots + 8 * idx: a thread-safe pool's
   slots never move and are 8 bytes, never ordered) and the member (top_items + idx * stride)
   from it. A member outside the fast range (a fallback pool's, a reserved pool's second range)
   carries SP__MENTRY_FAR, so that the fast acquire tells it by the sign bit and leaves it to
   the general path, which finds it through the published ranges. The mark is set when the
   member enters a magazine: a fast range member stays one while in a magazine (windows, where
   ranges change, drain them first). */
typedef uint32_t sp__mentry;
#define SP__MENTRY_FAR 0x80000000u /* slot indexes are below SP__SLOT_LIMIT */

typedef struct sp__mag {
    struct sp__mag *next; /* in the depot's full or empty list */
    struct sp__mag *all;  /* every magazine of the pool, freed with it */
    uint32_t n, cap;      /* members held, room (magazines grow: see SP__TS_GROW_FACTOR) */
    sp__mentry guard;     /* SP__MENTRY_FAR, as if e[-1]: the fast acquire's one sign test
                             refuses an empty magazine too */
    sp__mentry e[];
} sp__mag;

SP__STATIC_ASSERT(offsetof(sp__mag, e) == offsetof(sp__mag, guard) + sizeof(sp__mentry),
                  "the guard must sit where e[-1] would");

static inline void sp__mentry_set(const sp_pool *p, sp__mentry *e, uint32_t idx) {
    *e = idx < SP__TS_FAST_COUNT(p) ? idx : idx | SP__MENTRY_FAR;
}

static inline uint32_t sp__mentry_idx(const sp__mentry *e) { return *e & ~SP__MENTRY_FAR; }

/* A thread's own counter, which other threads read with relaxed atomic loads (sp_stats_get).
   Only its thread writes it, so the increment need not be atomic, only the store: on x86-64
   one add to memory is that store (an aligned 8-byte write is never torn), where GCC makes a
   relaxed atomic load, add and store three instructions. ThreadSanitizer builds keep the
   atomic store, so that it checks what the C code says. */
#if defined(__SANITIZE_THREAD__)
#  define SP__TSAN 1
#elif defined(__has_feature)
#  if __has_feature(thread_sanitizer) /* clang's spelling */
#    define SP__TSAN 1
#  endif
#endif
/* The same for a slot word that only the calling thread writes, with a release store: the
   word of a free member in the thread's magazine (a release's CAS from another thread wants a
   LEASED word, so it fails without changing it; resolve and handle_of only read). On x86-64
   every store is a release and an aligned 4-byte one is never torn: one add to memory (after
   a compiler barrier), where GCC makes the load, add and store three. */
#if (defined(__x86_64__) || defined(__amd64__)) && !defined(SP__TSAN)
#  define SP__COUNT(ptr) __asm__("addq $1, %0" : "+m"(*(ptr)))
#  define SP__OWN_ADD_RELEASE(ptr, v) __asm__ volatile("addl %1, %0" : "+m"(*(ptr)) : "ri"(v) : "memory")
#else
#  define SP__COUNT(ptr) SP__STORE_RELAXED((ptr), *(ptr) + 1u)
#  define SP__OWN_ADD_RELEASE(ptr, v) SP__STORE((ptr), SP__LOAD_RELAXED(ptr) + (v))
#endif

/* One thread's cache of one pool. Owned by the pool (freed with it); the thread finds it
   through its thread-local table. Only its thread touches loaded, prev and the counters
   (the counters with relaxed atomic stores, so that sp_stats_get may read them any time). */
typedef struct sp__tcache {
    sp__mag *loaded, *prev;
    uint64_t acquired, released;
    uint64_t ops_at_visit; /* acquired + released at its last depot visit (adaptive size) */
    uint64_t ops_at_take;  /* ... when its thread took it (a new cache, or an orphan's) */
    int inside;           /* debug builds: its thread is inside a call on the pool */
    bool orphan;          /* its thread exited (an atomic flag: the exit sets it without the
                             pool lock): the pool takes its magazines back, its counters stay */
    struct sp__tcache *next; /* the pool's caches */
} sp__tcache;

typedef struct sp__ts_range {
    uintptr_t items;
    uint32_t first, count;
} sp__ts_range;

typedef struct sp__ts {
    uint64_t id;          /* unique for the process's life, never 0: the thread tables check it */
    uint32_t mag_size;    /* new magazines' size: magazine_size, doubled by contention */
    uint32_t mag_first;   /* magazine_size (growth batches, the growth limit) */
    uint32_t strikes;     /* frequent handed-off depot visits since the last doubling or the
                             last infrequent visit */
    const struct sp__tcache *last_visitor; /* the depot's last visitor: is a visit a handoff */
    /* The fast range: a reserved pool's first range (its members from slot 0, at the
       reservation's start, which is also the constant view's top_items, so that sp_release's
       member number is the slot index); 0 in a fallback pool. Its built members are
       p->ts_fast_count, published (relaxed: a thread holding a member saw its range grow
       through the lock), 0 in a window and in a fallback pool: their calls take the general
       paths. */
    uintptr_t fast_items;
    /* The pool lock (growth, the depot, windows), recursive: hooks under it call back. A plain
       mutex and its holder's token with a count (see sp__ts_lock), not a recursive pthread
       mutex, so that a fork's child may release what the fork's prepare took. */
    pthread_mutex_t lock;
    uintptr_t holder;     /* the holding thread's token (atomic: others compare it), or 0 */
    uint32_t depth;       /* the holder's locks */
    uint32_t tag;         /* the pool's tag (p->tag is SP__TS_NO_TAG outside windows) */
    sp__mag *full, *empty, *all_mags; /* the depot, and every magazine */
    uint32_t free_head;   /* loose free members (from windows, exited threads), via slot next */
    sp__tcache *caches;
    uint64_t acquired, released; /* lives counted outside the caches' counters (windows) */
    uint64_t win_acquired, win_released; /* their totals when the window opened */
    size_t peak;
    int window;           /* window depth */
    uint32_t slots_alloc; /* fallback: slots allocated (once) */
    /* published for the lock-free lookups: written under the lock with atomic stores */
    uint32_t pub_slot_cap, pub_count;
    sp__ts_range pub[SP__RANGE_MAX];
    uint64_t foreign_handles, forged_handles;
    struct sp__ts *live_next; /* the process's live thread-safe pools */
    sp_pool *pool;            /* whose state this is (for fork's handlers) */
} sp__ts;

/* A lock that is held for a few instructions, never while another lock is taken or a callback
   runs (threads.c, "Locks"): a registry's index lock. Known to fork's handlers, which take it
   so that the child's copy is whole. */
typedef struct sp__ts_leaf {
    pthread_mutex_t m;
    struct sp__ts_leaf *next, *prev;
} sp__ts_leaf;
bool sp__ts_leaf_init(sp__ts_leaf *l);
void sp__ts_leaf_fini(sp__ts_leaf *l);

/* The calling thread's last cache lookup (threads.c), tried first: one TLS block. */
typedef struct sp__tl_last {
    sp_pool *pool;
    uint64_t id;
    sp__tcache *cache;
} sp__tl_last;
#  if defined(__EMSCRIPTEN__)
#    define SP__TLS _Thread_local
#  else
#    define SP__TLS _Thread_local __attribute__((tls_model("initial-exec")))
#  endif
extern SP__TLS sp__tl_last sp__tl;

/* threads.c */
sp__tcache *sp__ts_cache_slow(sp_pool *p);

/* The calling thread's cache of p (NULL, with a line, when memory fails). The id alone
   decides: unique among all pools for the process's life, so an entry for a destroyed pool
   at the same address never matches. */
static inline sp__tcache *sp__ts_cache(sp_pool *p) {
    if (SP__LIKELY(sp__tl.id == p->ts->id)) return sp__tl.cache;
    return sp__ts_cache_slow(p);
}
void sp__ts_lock(sp_pool *p);
void sp__ts_unlock(sp_pool *p);
bool sp__ts_orphans_collect(sp_pool *p);
sp__mag *sp__ts_mag_get(sp_pool *p);
void sp__ts_mag_put_empty(sp_pool *p, sp__mag *m);
void sp__ts_depot_visit(sp_pool *p, sp__tcache *c);
void sp__ts_note_peak(sp_pool *p);
#endif

/* The calls that need quiescence: outside a window, open one, make the same call (the plain
   code, in the plain view), close it. */
#define SP__TS_WINDOWED(p, name, type, call)                                                      \
    do {                                                                                          \
        if (SP__TS(p)) {                                                                          \
            sp_pool *w_ = (sp_pool *)(uintptr_t)(p);                                              \
            sp__ts_window_begin(w_, name);                                                        \
            type r_ = call;                                                                       \
            sp__ts_window_end(w_);                                                                \
            return r_;                                                                            \
        }                                                                                         \
    } while (0)

/* threads.c: lifecycle, windows, the calls that need quiescence */
bool sp__ts_attach(sp_pool *p, const sp_desc *d);
bool sp__ts_destroy_begin(sp_pool *p);
void sp__ts_free(sp_pool *p);
void sp__ts_window_begin(sp_pool *p, const char *call);
void sp__ts_window_end(sp_pool *p);
void sp__ts_routes(sp_pool *p);
void sp__ts_publish(sp_pool *p);
bool sp__ts_slots_reserve(sp_pool *p, uint32_t need);
void sp__ts_stats(const sp_pool *p, sp_stats *out);
size_t sp__ts_prewarm(sp_pool *p, size_t n);
sp_result sp__ts_set(sp_pool *p, const sp_overflow *overflow, const size_t *max);
/* magazine.c: the calls any thread may make. The _fast entries are the dispatch points'
   (acquire_empty with no free list, release_unmatched with sp_release's member number q
   against top_items, q below the fast range's member count): a pop or a push on the thread's loaded magazine, else the general
   path. */
void *sp__ts_acquire_fast(sp_pool *p, const void *arg);
sp_result sp__ts_release_fast(sp_pool *p, uint64_t q);
void *sp__ts_acquire(sp_pool *p, const void *arg, bool force, const char *file, int line);
sp_result sp__ts_release(sp_pool *p, void *item, const char *file, int line);
void *sp__ts_resolve(const sp_pool *p, sp_handle h);
void *sp__ts_resolve_fast(const sp_pool *p, sp_handle h);
sp_handle sp__ts_handle_of(const sp_pool *p, const void *item);
uint32_t sp__ts_index_of(const sp_pool *p, const void *item);
bool sp__ts_is_leased(const sp_pool *p, const void *item, bool or_free);

#endif
