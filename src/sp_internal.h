/* SPDX-License-Identifier: Zlib */
/* sp_internal.h -- what every part of the library shares (sp_pool, sp_dense, the registry, the
   thread-safe layer): the handle's bits, the log lines and how they are written, the C library
   allocator, pool tags, the interface through which a pool tells its owner about itself, the
   debug records, and the white-box hooks tests may call. Nothing here is public API. */
#ifndef SP_INTERNAL_H
#define SP_INTERNAL_H

/* The library defines the plain functions that the site macros would replace. */
#define SP_NO_SITE_MACROS
#include <spawnpool.h>

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#if SP_DEBUG
#  include <stdatomic.h> /* sp__one_thread */
#endif

/* Programmer errors the library cannot survive (a corrupted pool). Override to hook your own. */
#ifndef SP_ASSERT
#  include <assert.h>
#  define SP_ASSERT(c) assert(c)
#endif

#if defined(__GNUC__) || defined(__clang__)
#  define SP__LIKELY(x) __builtin_expect(!!(x), 1)
#  define SP__UNLIKELY(x) __builtin_expect(!!(x), 0)
#  define SP__NOINLINE __attribute__((noinline))
#  define SP__PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#  define SP__LIKELY(x) (x)
#  define SP__UNLIKELY(x) (x)
#  define SP__NOINLINE
#  define SP__PRINTF(f, a)
#endif

/* Threads need pthreads. Elsewhere (single-threaded WebAssembly, MSVC) a thread-safe pool is
   refused at creation with a line. */
#if !defined(_WIN32) && (!defined(__EMSCRIPTEN__) || defined(__EMSCRIPTEN_PTHREADS__))
#  define SP__HAVE_THREADS 1
#else
#  define SP__HAVE_THREADS 0
#endif

#if SP__HAVE_THREADS
#  include <pthread.h>
/* A lock held for a few instructions, never while another lock is taken or a callback runs
   (threads.c, "Locks"): a registry's index lock. Known to fork's handlers, which take it so that
   the child's copy is whole. */
typedef struct sp__leaf_lock {
    pthread_mutex_t m;
    struct sp__leaf_lock *next, *prev;
} sp__leaf_lock;
bool sp__leaf_init(sp__leaf_lock *l);
void sp__leaf_fini(sp__leaf_lock *l);
#endif

#if defined(__cplusplus)
#  define SP__STATIC_ASSERT(c, m) static_assert(c, m)
#else
#  define SP__STATIC_ASSERT(c, m) _Static_assert(c, m)
#endif

/* ---- handle bits (documented in spawnpool.h, HANDLES) -----------------------------------
   life (23 bits) | tag (17 bits) | slot index (24 bits). Every tag value is a tag (a pool
   without one issues no handles, so none is needed for "no tag"); the null handle is id 0,
   which no handle has, its life being at least 1. */
#define SP__SLOT_BITS 24u
#define SP__TAG_BITS 17u
#define SP__LIFE_BITS 23u
#define SP__SLOT_LIMIT (1u << SP__SLOT_BITS)      /* slot indices are below this */
#define SP__TAG_COUNT (1u << SP__TAG_BITS)        /* tags 0 .. SP__TAG_COUNT - 1 */
#define SP__LIFE_MAX ((1u << SP__LIFE_BITS) - 1u) /* the last life a handle can carry */
#define SP__NIL UINT32_MAX                        /* "no slot" */

static inline uint32_t sp__handle_slot(uint64_t id) { return (uint32_t)(id & (SP__SLOT_LIMIT - 1u)); }
static inline uint32_t sp__handle_tag(uint64_t id) {
    return (uint32_t)(id >> SP__SLOT_BITS) & (SP__TAG_COUNT - 1u);
}
static inline uint32_t sp__handle_life(uint64_t id) { return (uint32_t)(id >> (SP__SLOT_BITS + SP__TAG_BITS)); }
static inline sp_handle sp__handle_make(uint32_t life, uint32_t tag, uint32_t slot) {
    sp_handle h;
    h.id = (uint64_t)life << (SP__SLOT_BITS + SP__TAG_BITS) | (uint64_t)tag << SP__SLOT_BITS | slot;
    return h;
}

/* ---- log lines, one table (level, format), for sp_pool, sp_dense and the registry ---------- */
#define SP__MSG_LIST(X)                                                                          \
    X(MSG_NULL_DESC, SP_LOG_ERROR, "%s: desc is NULL")                                             \
    X(MSG_BAD_DESC, SP_LOG_ERROR, "%s: invalid descriptor: %s")                                    \
    X(MSG_NOMEM, SP_LOG_ERROR, "out of memory: %s")                                                \
    X(MSG_NO_TAG, SP_LOG_ERROR,                                                                   \
      "%s: no pool tag free: every one of the 131072 is taken by a live pool that issued "        \
      "handles, or retired (%u, their lives used up); destroy pools you no longer need")          \
    X(MSG_DOUBLE_RELEASE, SP_LOG_WARN, "release of %p: member is not leased (double release?)")    \
    X(MSG_FOREIGN, SP_LOG_WARN, "release of %p: not the start of a member of this pool (another "     \
      "pool's member? release it into that pool, or with sp_registry_release, which finds it)")     \
    X(MSG_FOREIGN_OWNED, SP_LOG_WARN, "release of %p: not the start of a member of this pool: it is " \
      "a member of pool '%s' (release it there, or with sp_registry_release)")                     \
    X(MSG_REENTER, SP_LOG_WARN, "release of %p: a hook is processing this member (re-entry)")      \
    X(MSG_GROWN, SP_LOG_WARN, "grew past max %zu: %zu members (max is a soft budget under GROW)")  \
    X(MSG_LEAKED, SP_LOG_WARN, "destroyed with %zu member(s) still leased (leaked)")               \
    X(MSG_RETIRED, SP_LOG_INFO, "slot %u retired: its life counter is exhausted")                  \
    X(MSG_SLOTS_FULL, SP_LOG_ERROR, "cannot grow: a pool holds at most 16777216 slots")            \
    X(MSG_IN_HOOK, SP_LOG_WARN, "%s called from one of this pool's hooks: refused")                \
    X(MSG_DESTROYING, SP_LOG_WARN, "acquire while the pool is being destroyed: refused")           \
    X(MSG_NOT_RECLAIMABLE, SP_LOG_WARN, "saturated and every leased member is busy in a hook")     \
    X(MSG_WRITTEN_AFTER_RELEASE, SP_LOG_ERROR,                                                     \
      "member %p (slot %u) was written after its release (released at %s:%d); to stop at the "    \
      "write, run under AddressSanitizer or valgrind")                                             \
    X(MSG_WRITTEN_AFTER_UNSITED_RELEASE, SP_LOG_ERROR,                                            \
      "member %p (slot %u) was written after its release (released without a site: sp_release_all, " \
      "a reclaim, or a call without the site macros); to stop at the write, run under "           \
      "AddressSanitizer or valgrind")                                                              \
    X(MSG_LEAK_SITE, SP_LOG_WARN, "%zu %s, acquired at %s:%d")                                     \
    X(MSG_LEAK_OTHER_SITES, SP_LOG_WARN, "%zu %s at other sites")                                  \
    X(MSG_FOREIGN_HANDLE, SP_LOG_WARN, "resolve of handle %llx: it belongs to another pool (%llu so far)") \
    X(MSG_FORGED_HANDLE, SP_LOG_WARN, "resolve of handle %llx: no such slot or life, forged? (%llu so far)") \
    X(MSG_NAME_CUT, SP_LOG_INFO, "name cut to %zu bytes (it had %zu): a pool name keeps at most %zu") \
    X(MSG_NO_SITES, SP_LOG_WARN, "%zu %s (sites not recorded: build with SP_DEBUG=1)")             \
    X(MSG_LEAK_NO_SITE, SP_LOG_WARN, "%zu %s, acquired without a site (a call that bypassed the site macros)") \
    X(MSG_REG_NULL_ARG, SP_LOG_ERROR, "%s: %s is NULL")                                            \
    X(MSG_REG_EMPTY_NAME, SP_LOG_ERROR, "%s: name is empty")                                       \
    X(MSG_REG_DUPLICATE, SP_LOG_ERROR, "sp_registry_add: a pool named '%s' already exists")        \
    X(MSG_REG_UNKNOWN, SP_LOG_WARN, "%s: no pool named '%s'")                                      \
    X(MSG_REG_NOT_OWNED, SP_LOG_WARN, "sp_registry_release of %p: no pool of this registry owns it") \
    X(MSG_REG_DESTROYING, SP_LOG_WARN, "%s: the registry is being destroyed: refused")             \
    X(MSG_REG_HOOK_RUNNING, SP_LOG_WARN, "%s while a hook of its pool '%s' runs: refused")         \
    X(MSG_REG_RELEASING_ALL, SP_LOG_WARN, "%s during sp_registry_release_all: refused")            \
    X(MSG_REG_RESTORING, SP_LOG_WARN,                                                              \
      "%s during sp_registry_restore (from its desc_of, io_of or load): refused")                 \
    X(MSG_NULL_POOL, SP_LOG_ERROR, "%s: pool is NULL")                                             \
    X(MSG_FROZEN, SP_LOG_WARN,                                                                     \
      "%s called from this pool's %s callback: refused (the pool must stay as it is while it runs)") \
    X(MSG_CLEARING, SP_LOG_WARN, "acquire while the pool is being cleared: refused")               \
    X(MSG_REENTER_LIFECYCLE, SP_LOG_WARN,                                                          \
      "release of %p: its create/dispose hook is running (re-entry)")                              \
    X(MSG_WALK_LOST, SP_LOG_INFO,                                                                  \
      "iteration stopped: its place was released and the pool has since made 2^31 acquisitions") \
    X(MSG_BAD_OVERFLOW, SP_LOG_WARN, "sp_set_overflow: %s: refused")                               \
    X(MSG_NO_RESERVE, SP_LOG_INFO,                                                                 \
      "could not reserve %zu bytes of address space: growing in ranges instead")                  \
    X(MSG_IN_ALLOCATOR, SP_LOG_WARN, "%s called from this pool's allocator: refused")              \
    X(MSG_TS_BAD_DESC, SP_LOG_ERROR, "sp_pool_create: threads = SP_THREADS_SAFE: %s")             \
    X(MSG_TS_NOT_QUIESCENT, SP_LOG_ERROR,                                                          \
      "%s while another thread is inside a call on this thread-safe pool (it needs quiescence)")   \
    X(MSG_TS_REFUSED, SP_LOG_WARN, "%s: refused in a thread-safe pool (%s)")                       \
    X(MSG_TWO_THREADS, SP_LOG_ERROR,                                                               \
      "%s while another thread is inside a call on this pool: refused (a pool takes one thread at " \
      "a time; to call it from several at once, create it with .threads = SP_THREADS_SAFE) "       \
      "(%llu so far)")                                                                              \
    X(MSG_TS_OVERLAP, SP_LOG_ERROR,                                                                \
      "%s while another thread is inside a call on this thread-safe pool that needs quiescence: "  \
      "refused (%llu so far)")                                                                      \
    X(MSG_CHECK_FAILED, SP_LOG_ERROR, "sp__pool_check: %s is not consistent")                      \
    X(MSG_DENSE_TWO_THREADS, SP_LOG_ERROR,                                                         \
      "%s while another thread is inside a call on this pool: refused (a dense pool takes one "    \
      "thread at a time: give each thread its own, or serialise the calls with a lock) "          \
      "(%llu so far)")                                                                              \
    X(MSG_DENSE_BUSY, SP_LOG_WARN, "%s called from this pool's on_move or logger: refused")        \
    X(MSG_DENSE_GROWN, SP_LOG_WARN, "grew past max (%zu) to %zu elements (%llu places past it)")   \
    X(MSG_DENSE_NOMEM_SLOTS, SP_LOG_ERROR, "out of memory growing the slot table to %zu slots")    \
    X(MSG_DENSE_NOMEM_GROW, SP_LOG_ERROR, "out of memory growing to %zu elements (%zu bytes)")     \
    X(MSG_DENSE_BAD_INDEX, SP_LOG_WARN, "remove_at: index %zu is not below count %zu")             \
    X(MSG_DENSE_NOT_ELEMENT, SP_LOG_WARN, "remove: %p is not an element of this pool")             \
    X(MSG_DENSE_PAST_LIVE, SP_LOG_WARN, "remove: %p is past the live elements (double remove?)")   \
    X(MSG_DENSE_EXPIRED, SP_LOG_WARN, "remove_handle: handle %#llx has expired (double remove?)")  \
    X(MSG_DENSE_FOREIGN, SP_LOG_WARN, "remove_handle: handle %#llx is not from this pool")         \
    X(MSG_SNAP_REFUSED, SP_LOG_ERROR, "%s: %s: refused")                                           \
    X(MSG_DENSE_FORGED, SP_LOG_WARN,                                                               \
      "remove_handle: handle %#llx names no slot or life of this pool (forged?)")                 \
    X(MSG_ZEROED_HOOKS, SP_LOG_WARN,                                                              \
      "sp_acquire_zeroed: the pool has a create or on_acquire hook, which sets its members' "     \
      "contents: refused (acquire with sp_acquire and let the hook clear what it needs)")          \
    X(MSG_SIZES_ZERO, SP_LOG_WARN, "%s: size 0: refused (ask for at least one byte; to end a "    \
      "member's life, call sp_sizes_release)")                                                     \
    X(MSG_SIZES_TOO_LARGE, SP_LOG_WARN, "%s: %zu bytes is above the largest class (%zu): refused " \
      "(give the set a table with a class that large, or allocate it elsewhere)")                  \
    X(MSG_SIZES_FOREIGN, SP_LOG_WARN, "%s of %p: not the start of a member of this size-class "   \
      "set (another set's or allocator's memory, or a pointer inside a member?)")                \
    X(MSG_SIZES_NOT_LEASED, SP_LOG_WARN, "%s of %p: the member is not leased (released "          \
      "already?): refused")                                                                        \
    X(MSG_SIZES_IN_CALLBACK, SP_LOG_WARN, "sp_sizes_destroy while a callback of its class '%s' "  \
      "runs (its logger or allocator): refused (destroy the set after that call returns)")

#define SP__MSG_ENUM(id, level, fmt) SP__##id,
typedef enum sp__msg { SP__MSG_LIST(SP__MSG_ENUM) SP__MSG_COUNT } sp__msg;
#undef SP__MSG_ENUM

/* Formats message msg with its arguments and hands it to logger (zero: the default) under
   name, at `level` (its own when level < 0). Every log line of the library goes through here. */
void sp__log_to_level(const sp_logger *logger, const char *name, int level, sp__msg msg, ...);
void sp__vlog_to(const sp_logger *logger, const char *name, int level, sp__msg msg, va_list ap);
#define sp__log_to(logger, name, ...) sp__log_to_level((logger), (name), -1, __VA_ARGS__)

/* The logger behind a zeroed sp_logger: warnings and errors to stderr. */
void sp__default_log(sp_log_level level, const char *pool_name, const char *message, void *user);

/* Every call of an allocator's alloc goes through here, so that the alignments the library asks
   for are the header's contract (next to sp_allocator): a power of two, never below
   sizeof(void *), which posix_memalign and aligned_alloc-based allocators need. */
static inline void *sp__alloc(const sp_allocator *a, size_t size, size_t align) {
    return a->alloc(size, align < sizeof(void *) ? sizeof(void *) : align, a->user);
}

/* The C library allocator behind a zeroed sp_allocator. */
void *sp__default_alloc(size_t size, size_t align, void *user);
void sp__default_free(void *ptr, size_t size, void *user);
/* The allocator a descriptor means: its own, or the C library's. */
sp_allocator sp__allocator_or_default(const sp_allocator *a);

/* One line for a NULL pool where a function needs one (the default logger: there is no other). */
void sp__null_pool(const char *function);

/* Rate-limited warnings: the first event, then each time the count reaches a power of two. */
static inline bool sp__worth_a_line(uint64_t count) { return (count & (count - 1u)) == 0; }

/* Counters sp_pool and sp_dense keep alike, and what sp_stats makes of them. */
typedef struct sp__counters {
    uint64_t created, disposed, acquired, reclaimed, dropped, grown_past_max;
    uint64_t leased_disposed; /* lives ended by clear/destroy, not by a release */
    uint64_t foreign_handles, forged_handles; /* refused lookups, for the rate-limited lines */
    uint64_t grow_warn_at;    /* the next grown_past_max value that logs a warning */
} sp__counters;
/* Fills the counters' part of *out; `leased` is the number of members leased now. */
void sp__counters_to_stats(const sp__counters *c, size_t leased, sp_stats *out);
/* True when another member grown past max is worth a warning (1, 2, 4, 8... past). */
bool sp__counters_grew(sp__counters *c, uint64_t past);

/* ---- pool tags ----------------------------------------------------------------------------
   Unique among the live pools that took one (thread-safe), shared by sp_pool and sp_dense. A
   pool takes its tag with its first handle; sp_dense at creation. sp__tag_acquire returns false
   when every tag is taken or retired; otherwise *first_life is the lowest life the pool may
   hand out: above every life an earlier pool handed out under that tag. sp__tag_release takes
   the highest life the pool handed out (0: none), which the tag's next pool starts above; a tag
   left with fewer than SP__TAG_LIFE_RESERVE lives retires for good. See tags.c. */
#define SP__TAG_LIFE_RESERVE (1u << 20)
bool sp__tag_acquire(uint32_t *tag, uint32_t *first_life);
void sp__tag_release(uint32_t tag, uint32_t highest_life);
/* Callbacks that read a pool (or dense pool) as it is, during which it must not change: its
   acquire/add, release/remove and growth are refused with a line naming the callback. */
enum { SP__THAWED, SP__FROZEN_PRIORITY, SP__FROZEN_SAVE, SP__FROZEN_LOAD };
static inline const char *sp__frozen_by(unsigned reason) {
    static const char *const names[] = {"", "priority", "snapshot save", "snapshot load"};
    return reason < sizeof names / sizeof names[0] ? names[reason] : "";
}

/* Records the object that took tag (an sp_pool, or an sp_dense when dense), for debuggers only:
   the printers in tools/debugger find a handle's pool through it. sp__tag_release forgets it. */
void sp__tag_holder_set(uint32_t tag, const void *holder, bool dense);
extern uintptr_t sp__tag_holders[SP__TAG_COUNT]; /* (tags.c: what the printers read) */
/* Takes this very tag (a restored pool takes its snapshot's back): false when a live pool holds
   it. Its mark is not consulted: see "SNAPSHOT AND RESTORE" in spawnpool.h for why. */
bool sp__tag_claim(uint32_t tag);
uint32_t sp__tags_retired(void);
/* White-box: a tag's high-water life, whether it retired. sp__tags_reset forgets the marks and
   retirements of every tag no live pool holds, as a fresh process would have them: for test
   processes that fake exhausted lives (sp__debug_set_life, sp__dense_set_life), which would
   otherwise retire tags for good. Handles of destroyed pools may then resolve again: tests
   only. */
uint32_t sp__tag_high_water(uint32_t tag);
bool sp__tag_is_retired(uint32_t tag);
void sp__tags_reset(void);
/* White-box: only tags below n are handed out (0: all), so that a test runs out of them
   without 131072 live pools. Taken tags above n stay taken. */
void sp__tags_limit(uint32_t n);
/* fork()'s handlers (threads.c) hold the tag table across the fork. */
void sp__tags_lock(void);
void sp__tags_unlock(void);

/* ---- a pool's owner --------------------------------------------------------------------
   A pool that belongs to something (the registry) tells it about its address ranges and its
   tag through this small interface and knows nothing else about it: registry.c uses pools,
   pool.c never calls into the registry, so the dependency runs one way. */
typedef struct sp__pool_owner {
    /* The pool's range [lo, hi) exists now; SP_ERR_NOMEM refuses it (the pool then gives the
       range back and reports an allocator failure). */
    sp_result (*range_added)(void *owner, sp_pool *pool, uintptr_t lo, uintptr_t hi);
    /* The range starting at lo is gone. */
    void (*range_removed)(void *owner, uintptr_t lo);
    /* The pool took its tag (its first handle); SP_ERR_NOMEM refuses it (no handle then). */
    sp_result (*tag_taken)(void *owner, sp_pool *pool, uint32_t tag);
    /* The pool is being destroyed, however that came about: it leaves its owner. */
    void (*pool_gone)(void *owner, const sp_pool *pool);
    /* The owner's pool that item is a built member of, or NULL: for the line of a release into
       the wrong pool. */
    const sp_pool *(*member_of)(void *owner, const void *item);
} sp__pool_owner;

/* What the registry asks of a pool (pool.c and the thread-safe layer answer). */
sp_pool *sp__pool_create_in(const sp_desc *desc, const sp__pool_owner *fns, void *owner,
                            const char *default_name);
/* sp_restore into an owner (snapshot.c); sp__pool_discard destroys a restored pool quietly
   (no hook, no leak line, its tag back as it was). */
sp_pool *sp__pool_restore_in(const sp_desc *desc, const void *buf, size_t size, const sp_snapshot_io *io,
                             const sp__pool_owner *fns, void *owner, const char *default_name);
void sp__pool_discard(sp_pool *pool);
bool sp__pool_has_member(const sp_pool *pool, const void *item); /* built, leased or free */
size_t sp__pool_leased(const sp_pool *pool);   /* exact for a thread-safe pool too */
bool sp__pool_in_callback(const sp_pool *pool); /* a hook of it runs, or it is being destroyed */
bool sp__pool_destroying(const sp_pool *pool);
bool sp__pool_tag(const sp_pool *pool, uint32_t *tag); /* false: it has none yet */
const sp_logger *sp__pool_logger(const sp_pool *pool);

/* ---- debug records (SP_DEBUG >= 1) ------------------------------------------------------
   One record a member slot, beside its other bookkeeping: where the member was last acquired
   and released, and the checksum taken at release where no sanitizer watches. */
#if SP_DEBUG
typedef struct sp__dbg {
    const char *acq_file, *rel_file;
    uint32_t acq_line, rel_line;
    uint32_t sum;
    uint32_t has_sum;
} sp__dbg;
#  define SP__DBG_BYTES sizeof(sp__dbg)
/* A member becomes free (released or built): checksum, optional fill, poison. */
void sp__dbg_freed(const sp_pool *p, sp__dbg *rec, void *item, size_t item_size, bool fill);
/* A free member is about to be handed out: unpoison, then verify the checksum. */
void sp__dbg_leasing(const sp_pool *p, sp__dbg *rec, void *item, size_t item_size, uint32_t idx);
/* Memory that no live member occupies / that is used again. */
void sp__dbg_poison(void *mem, size_t size);
void sp__dbg_unpoison(void *mem, size_t size);
/* One thread at a time inside an object that takes one (a pool that is not thread-safe, a
   thread-safe one's window, an sp_dense): the thread inside a call now, and the calls refused
   for it. */
typedef struct sp__one_thread {
    _Atomic uintptr_t inside;  /* the calling thread's token (0: none) */
    _Atomic uint64_t overlaps; /* calls refused, for the rate-limited line */
} sp__one_thread;
void sp__one_thread_init(sp__one_thread *t);
/* 1: the calling thread entered (sp__one_thread_leave when its call ends); 0: it is inside
   already (a callback's call); -1: another thread is inside: refused, with line msg (`call`
   and the count) through logger under name (the first, then at each power of two), so the
   caller must read nothing of the object's state. */
int sp__one_thread_enter(sp__one_thread *t, const sp_logger *logger, const char *name, sp__msg msg,
                         const char *call);
void sp__one_thread_leave(sp__one_thread *t);
/* A pool's check: sp__one_thread_enter, or 0 for a thread-safe pool outside a window (any
   thread may call it then). */
int sp__dbg_enter(sp_pool *p, const char *call);
void sp__dbg_leave(sp_pool *p);
/* At the top of a public call: `enter` (1, 0 or -1 as sp__one_thread_enter) decides; when the
   calling thread entered, the call makes itself again (`again`, which finds its thread inside
   and runs) and runs `leave`; when another thread is inside, it returns `refused`. */
#  define SP__ONE_THREAD_CALL(enter, leave, type, refused, again)                                 \
      do {                                                                                        \
          int in_ = (enter);                                                                      \
          if (in_ < 0) return refused;                                                            \
          if (in_ > 0) {                                                                          \
              type r_ = again;                                                                    \
              leave;                                                                              \
              return r_;                                                                          \
          }                                                                                       \
      } while (0)
/* The same for a pool. Nothing with SP_DEBUG=0. */
#  define SP__ONE_THREAD(p, name, type, refused, again)                                           \
      SP__ONE_THREAD_CALL(sp__dbg_enter((p), (name)), sp__dbg_leave(p), type, refused, again)
#else
#  define SP__DBG_BYTES ((size_t)0)
#  define SP__ONE_THREAD(p, name, type, refused, again) ((void)0)
#endif

/* ---- white-box test hooks ------------------------------------------------------------- */
/* Sets the life counter of the slot holding item (a built member), to test exhaustion. */
void sp__debug_set_life(sp_pool *pool, const void *item, uint32_t life);
/* Sets the acquisition counter (stats.acquired and the stamps that follow), to test wrap-around
   of the 32-bit acquisition stamps without 2^32 acquisitions. */
void sp__debug_set_acquired(sp_pool *pool, uint64_t acquired);
/* Checks every internal invariant (spans, stack, states, counts); returns false and logs on
   error. O(size). */
bool sp__pool_check(const sp_pool *pool);

#endif
