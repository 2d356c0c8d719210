/* SPDX-License-Identifier: Zlib */
/* sp_internal.h -- what the pool, the registry and the support code share, and what white-box
   tests may look at. Nothing here is part of the public API. */
#ifndef SP_INTERNAL_H
#define SP_INTERNAL_H

/* The library defines the plain functions that the site macros would replace. */
#define SP_NO_SITE_MACROS
/* ... and the exported sp_resolve, which the header would otherwise define inline. */
#ifndef SP_NO_INLINE
#  define SP_NO_INLINE
#endif
#include <spawnpool.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#if SP_DEBUG
#  include <stdatomic.h>
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

/* An empty asm that the compiler must assume changes x: it keeps GCC from computing a slot's
   address once into a register where addressing it in each access is an instruction less (the
   header's SP__HOT_OPAQUE, for the library's own hot paths). */
#define SP__OPAQUE(x) SP__HOT_OPAQUE(x)

/* ---- handle bits (documented in spawnpool.h, HANDLES) ----------------------------------- */
#define SP__SLOT_BITS 24u
#define SP__TAG_BITS 12u
#define SP__LIFE_BITS 28u
#define SP__SLOT_LIMIT (1u << SP__SLOT_BITS)         /* slot indices are below this */
#define SP__TAG_MAX ((1u << SP__TAG_BITS) - 1u)      /* tags 1..4095; 0 is never used */
#define SP__LIFE_MAX ((1u << SP__LIFE_BITS) - 1u)    /* last life a slot may have */
#define SP__NIL UINT32_MAX                           /* "no slot" in links */

/* ---- per-slot bookkeeping: 8 bytes a member (16 in acquisition order) -------------------
   word = life << 4 | flags. `life` is the slot's current life (the one a handle names while the
   member is leased; the next one to hand out while it is free). next links the member into at
   most one list: the free list, the unbuilt list, or (SP_ORDER_ACQUISITION pools only, whose
   slots are the 16-byte sp__oslot, with a back link) the lease list, doubly linked, oldest
   acquisition at the head; the lease list's links are indices times 8 (see sp__oslot), the other
   lists' slot indices. In a memory-order pool a leased slot is in no list and has no back link.
   LEASED is state 0, so that a leased member's word has its low three bits clear exactly when
   no hook is running on it: the release's check is one test (see releasable in lease.c).
   A memory-order member leased with no flag set has its own slot index in next (the plain
   acquisition writes it), and next holds a slot's own index in no other state of such a pool (a
   list never links a slot to itself; SP__NIL and the marks are no index; an acquisition-order
   pool marks nothing and resolves out of line): the header's inline sp_resolve
   then compares the slot's 8 bytes with the handle less the pool's tag, the index against
   next and life << 4 against the word, whose flags lie beside the tag's top 4 bits (see
   docs/design.md). So whatever sets a flag or ends the life of a leased memory-order member
   first clears that mark (slot_unmark; a hook puts it back after, slot_remark), and a member
   that keeps no mark only resolves through the library. next comes first so that a little-endian 64-bit load reads word << 32 | next. */
enum {
    SP__LEASED = 0u,  /* handed out */
    SP__FREE = 1u,    /* built, ready to hand out */
    SP__UNBUILT = 2u, /* memory reserved, no member built */
    SP__RETIRED = 3u, /* life counter exhausted: never used again */
    SP__STATE_MASK = 3u,
    SP__BUSY = 4u, /* a hook is running on this member: it must not be released or reclaimed */
    SP__RELEASING = 8u, /* (with BUSY) its on_release is running: no longer iterated */
    SP__FLAG_BITS = 4u
};

/* What a word gains when its free member is leased (wrapping), and when a leased member's life
   ends and the next life begins, free: the life goes up, the state from LEASED to FREE. */
#define SP__TO_LEASED ((uint32_t)SP__LEASED - (uint32_t)SP__FREE)
#define SP__TO_NEXT_FREE ((1u << SP__FLAG_BITS) + (uint32_t)SP__FREE - (uint32_t)SP__LEASED)

#if defined(__BYTE_ORDER__) && defined(__ORDER_BIG_ENDIAN__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
typedef struct sp__slot {
    uint32_t word;
    uint32_t next;
} sp__slot;
#else
typedef struct sp__slot {
    uint32_t next;
    uint32_t word;
} sp__slot;
#endif

/* The slot of an acquisition-order pool: the same, the lease list's back link, in the same
   cache line as the rest (an unlink touches the neighbours' slots and nothing else), and the
   acquisition's sequence number (the low 32 bits of `acquired` when it was leased), which tells
   sp_each which members a callback acquired. 16 bytes: never split across cache lines. The
   lease list's links, both ways (next while the member is leased, and prev8), are kept as the
   neighbour's index times 8 (SP__NIL * 8 for the lease list's ends: lease_link in
   pool_internal.h), half its byte offset from slot 0, so the hot paths address a neighbour
   without a shift (x86 addresses scale by 2 as well as by 8). */
typedef struct sp__oslot {
    sp__slot s;
    uint32_t prev8;
    uint32_t stamp;
} sp__oslot;

static inline uint32_t sp__life(const sp__slot *s) { return s->word >> SP__FLAG_BITS; }
static inline uint32_t sp__state(const sp__slot *s) { return s->word & SP__STATE_MASK; }

/* One address range of members. A pool's slot indices are cut into ranges in order: range c
   owns indices [first, first + cap). Range 0 is the reserved range when the pool could reserve
   address space (its members are committed as the pool grows: `count` of them so far) or the
   first of the fallback's geometric ranges (each twice the previous, allocated whole). A range
   given back (fallback only) keeps its record (items NULL, count 0), so that its indices, whose
   slots keep their lives, are used again by the next range of the same number. */
typedef struct sp__range {
    unsigned char *items; /* its first member; NULL when given back */
    uint32_t first;       /* slot index of its first member */
    uint32_t cap;         /* members it can ever hold */
    uint32_t count;       /* members with memory (committed or allocated): the recognised ones */
    uint32_t built;       /* members built in it */
} sp__range;

/* The most ranges a pool can have: the geometric ranges from one member double up to the slot
   limit in 25 steps (the default start of 256 members takes 17). */
#define SP__RANGE_MAX 26u

#define SP__NAME_CAP 48

struct sp_pool {
    /* hot: the fast paths (sp_acquire, sp_release, sp_resolve) read these, in one cache line.
       Every field from free_head to slot_size is derived in sp__routes_update (or kept by the
       fast paths themselves) and routes whatever the fast paths do not handle out of line. */
    uint32_t free_head;
    uint32_t plain_below; /* SP__NIL when plain_acquire, else 0: a free head below it takes
                             the plain path (one compare for "a free member, and plain") */
    /* The range tried first, copied here so that a release reads no range record: the
       reserved range, or the fallback's largest. top_count 0: none yet. */
    uintptr_t top_items;
    uint64_t stride_inv; /* inverse of the odd part of stride, mod 2^64 */
    uint64_t top_plain; /* top_count when its releases may take the plain path (plain_release),
                           else 0: sp_release's one range test then also checks the route */
    uint64_t top_first; /* the top range's first slot index (64 bits: added to a 64-bit member
                           number in sp_release, no widening) */
    unsigned char *slots; /* flat, slot_size bytes a slot index; grows, never shrinks */
    size_t stride;
    uintptr_t items0; /* where slot index 0's member would lie were it in the top range
                         (top_items - top_first * stride, wrapping): a plain acquisition's and
                         resolve's address is items0 + idx * stride, one multiply-add */
    uint64_t acquired;
    /* peak_leased - leased, kept instead of `leased` so that an acquisition updates both in one
       decrement and one (never taken) branch, and a release in one increment: leased is
       peak_leased - headroom (sp__leased). Exact: an acquisition that finds headroom 0 has
       leased == peak_leased and raises the peak instead (see leased_inc in pool_internal.h). */
    ptrdiff_t headroom;
    size_t peak_leased;
    uint64_t tag_bits;      /* tag << SP__SLOT_BITS: a handle's tag in place */
    uint64_t resolve_below; /* slot_cap when the pool is in memory order (8-byte slots) and one
                               live range holds every member, else 0: a handle whose low 32
                               bits (tag subtracted) are below it resolves in line */
    uint32_t stride_rot;    /* stride = odd << stride_rot */
    uint32_t slot_size;     /* sizeof(sp__slot), or sizeof(sp__oslot) when ordered */
    uint32_t life_first; /* every slot's first life: above all lives of earlier pools of its tag */
    uint32_t top_count;     /* the top range's recognised members */
    /* warm: the routes' inputs and the out-of-line paths */
    /* (the lease list's ends live in the slot before slot 0: lease_ends in pool_internal.h) */
    bool ordered;        /* SP_ORDER_ACQUISITION: the lease list is kept */
    bool plain_acquire;  /* no lease list, no on_acquire, one live range: an acquisition is a
                            pop, a count and the member's place in the top range */
    bool plain_release;  /* no lease list, no on_release */
    bool plain_reclaim;  /* lease list, no hooks, no priority: a reclaim just moves the oldest */
    bool release_slow;   /* a release that is not plain takes release_general: on_release is
                            set, or a priority callback or a teardown is running (routes_update) */
    bool ordered_acquire; /* acquisition order, no on_acquire, one live range: a free member is
                             popped and appended to the lease list in line (sp__acquire_other) */
    /* sp_acquire's way out of its plain path (routes_update): straight to an acquisition-order
       pool's free member (ordered_acquire), else through the general tests */
    void *(*acquire_miss)(struct sp_pool *p);
    uint64_t top_ordered; /* top_count when an acquisition-order pool's releases of the top
                             range need no hook and no diversion (release_ordered), else 0 */
    uint32_t slot_cap;  /* slot indices below this exist (committed or allocated) */
#if SP_DEBUG
    struct sp__dbg *dbg; /* debug records, parallel to slots */
    /* the thread inside a call on the pool (0: none), and the calls refused for overlapping
       another thread's: see sp__dbg_enter */
    _Atomic(uintptr_t) dbg_thread;
    _Atomic(uint64_t) dbg_overlaps;
#endif
    sp__range ranges[SP__RANGE_MAX];
    uint32_t range_count;             /* numbers in use (given-back ones included) */
    uint32_t top;                     /* the range copied into top_* */
    uint8_t by_address[SP__RANGE_MAX]; /* the live ranges' numbers, lowest address first */
    uint32_t live_ranges;             /* entries in by_address */
    uint64_t leased_disposed; /* lives ended by clear/destroy: released = acquired - leased - this */
    sp_acquire_fn on_acquire;
    sp_release_fn on_release;
    void *user;

    /* cold */
    uint32_t unbuilt_head;
    uint32_t tag;
    uint64_t foreign_handles, forged_handles; /* refused resolves, for rate-limited warnings */
    size_t size;     /* built members */
    size_t reserved; /* members with memory: the live ranges' counts */
    size_t max;
    size_t chunk_items; /* the first range's members (fallback), the commit step (reserved) */
    /* Virtual memory (sp_os.h), when the pool reserved its range: vm.reserve set and
       reserved_items non-NULL. One reservation for the pool's life: the members, then the
       bookkeeping (slots, then the debug records) at reserved_books; neither ever moves. */
    struct {
        void *(*reserve)(size_t size, void *user);
        bool (*commit)(void *addr, size_t size, void *user);
        void (*decommit)(void *addr, size_t size, void *user);
        void (*release)(void *addr, size_t size, void *user);
        void *user;
    } vm;
    unsigned char *reserved_items, *reserved_books;
    size_t reserved_items_size, reserved_books_size; /* bytes of address space */
    size_t committed_items; /* bytes committed at reserved_items */
    size_t page;            /* the commit granularity */
    size_t item_size, item_align;
    size_t bytes;
    uint64_t created, disposed, reclaimed, dropped, grown_past_max;
    uint64_t grow_warn_at; /* next grown_past_max value that logs a warning */
    uint32_t reclaim_cursor; /* unordered pools: a reclaim looks for its victim from here */
    sp_overflow overflow;
    sp_create_fn create;
    sp_dispose_fn dispose;
    sp_priority_fn priority;
    sp_allocator allocator;
    sp_logger logger;
    int hook_depth;   /* hooks of this pool running right now (priority and sp_each
                         callbacks included) */
    int scoring;      /* priority callbacks running: acquire and release are refused */
    int allocating;   /* allocator callbacks running (they count in hook_depth too): acquisitions
                         that would grow the pool, and sp_prewarm, are refused */
    bool destroying;
    bool tearing_down; /* sp_clear or sp_pool_destroy running: acquisitions are refused */
    uint32_t doomed;   /* during a teardown: the free members still to dispose (the free list
                          is detached, so that every acquisition reaches the slow path) */
    uint64_t stamp_origin; /* acquisition stamps compare as (stamp - origin): see stamps_fresh */
    bool fixed;       /* fixed-buffer mode: everything lives in the caller's buffer */
    bool ts_view;     /* thread-safe pools: a window is open (see `ts` below) */
    size_t capacity;  /* fixed-buffer mode: members that fit */
    const struct sp__pool_owner *owner_fns; /* the owner (the registry) and its interface, or NULL */
    void *owner;
    /* Thread-safe pools (threads.c, magazine.c): their shared state, else NULL. Outside a
       quiescent window (ts_view false) the fields the inline paths read without a lock stay
       constant: not plain (plain_below, top_plain, resolve_below 0), no top range (top_count,
       top_first, live_ranges 0; top_items is the fast range's start, see sp__ts), no free
       list, and `tag` SP__TAG_MAX + 1, so that every acquisition, release and resolve leaves
       the inline paths for the thread-safe code. A window (the calls
       that need quiescence) installs the plain view under the pool lock, and the plain code runs. */
    struct sp__ts *ts;
    /* What the thread-safe fast paths read (magazine.c), here to save a load: the pool's id
       (sp__ts), compared with the thread's last cache lookup, or no id (never matches) when
       it has on_acquire or on_release (hooked calls take the general path); and its fast
       range's member count (see sp__ts.fast_items; the range starts at top_items). */
    uint64_t ts_fast_id;
    uint32_t ts_fast_count;
    uint64_t ts_tag_bits; /* the real tag in place (tag_bits holds the constant view's) */
    char name[SP__NAME_CAP];
};

/* The header's inline sp_resolve reads these fields through struct sp__pool_hot: they must lie
   where it says (and sp__resolve_slow_l3 be renamed if they ever move or change meaning). */
#define SP__HOT_AT(f, g) (offsetof(struct sp_pool, f) == offsetof(struct sp__pool_hot, g))
#if defined(__cplusplus)
#  define SP__STATIC_ASSERT(c, m) static_assert(c, m)
#else
#  define SP__STATIC_ASSERT(c, m) _Static_assert(c, m)
#endif
SP__STATIC_ASSERT(SP__HOT_AT(slots, slots) && SP__HOT_AT(stride, stride) &&
                      SP__HOT_AT(items0, items0) && SP__HOT_AT(tag_bits, tag_bits) &&
                      SP__HOT_AT(resolve_below, resolve_below) && SP__HOT_AT(slot_size, _slot_size) &&
                      SP__HOT_AT(life_first, life_first),
                  "struct sp_pool must begin as struct sp__pool_hot (include/spawnpool.h)");

/* Members leased now (see headroom). */
static inline size_t sp__leased(const sp_pool *p) { return p->peak_leased - (size_t)p->headroom; }

/* ---- log lines, one table (level, format) --------------------------------------------- */
#define SP__MSG_LIST(X)                                                                          \
    X(MSG_NULL_DESC, SP_LOG_ERROR, "sp_pool_create: desc is NULL")                                 \
    X(MSG_BAD_DESC, SP_LOG_ERROR, "sp_pool_create: invalid descriptor: %s")                        \
    X(MSG_NOMEM, SP_LOG_ERROR, "out of memory: %s")                                                \
    X(MSG_NO_TAG, SP_LOG_ERROR, "sp_pool_create: no pool tag free: of the 4095, %u retired (lives used up), the rest in live pools") \
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
    X(MSG_NOT_RECLAIMABLE, SP_LOG_WARN, "saturated and every leased member is busy in a hook")   \
    X(MSG_WRITTEN_AFTER_RELEASE, SP_LOG_ERROR,                                                     \
      "member %p (slot %u) was written after its release (released at %s:%d); to stop at the "    \
      "write, run under AddressSanitizer or valgrind")                                             \
    X(MSG_LEAK_SITE, SP_LOG_WARN, "%zu %s, acquired at %s:%d")                                     \
    X(MSG_LEAK_OTHER_SITES, SP_LOG_WARN, "%zu %s at other sites")                                  \
    X(MSG_FOREIGN_HANDLE, SP_LOG_WARN, "resolve of handle %llx: it belongs to another pool (%llu so far)") \
    X(MSG_FORGED_HANDLE, SP_LOG_WARN, "resolve of handle %llx: no such slot or life, forged? (%llu so far)") \
    X(MSG_NAME_CUT, SP_LOG_INFO, "name cut to %zu bytes (it had %zu): a pool name keeps at most 47")                     \
    X(MSG_NO_SITES, SP_LOG_WARN, "%zu %s (sites not recorded: build with SP_DEBUG=1)") \
    X(MSG_LEAK_NO_SITE, SP_LOG_WARN, "%zu %s, acquired without a site (a call that bypassed the site macros)") \
    X(MSG_WRITTEN_AFTER_UNSITED_RELEASE, SP_LOG_ERROR,                                            \
      "member %p (slot %u) was written after its release (released without a site: sp_release_all, " \
      "a reclaim, or a call without the site macros); to stop at the write, run under "           \
      "AddressSanitizer or valgrind") \
    X(MSG_REG_NULL_ARG, SP_LOG_ERROR, "%s: %s is NULL")                                            \
    X(MSG_REG_EMPTY_NAME, SP_LOG_ERROR, "%s: name is empty")                                       \
    X(MSG_REG_DUPLICATE, SP_LOG_ERROR, "sp_registry_add: a pool named '%s' already exists")        \
    X(MSG_REG_UNKNOWN, SP_LOG_WARN, "%s: no pool named '%s'")                                      \
    X(MSG_REG_NOT_OWNED, SP_LOG_WARN, "sp_registry_release of %p: no pool of this registry owns it") \
    X(MSG_REG_DESTROYING, SP_LOG_WARN, "%s: the registry is being destroyed: refused")             \
    X(MSG_REG_HOOK_RUNNING, SP_LOG_WARN, "%s while a hook of its pool '%s' runs: refused")         \
    X(MSG_REG_RELEASING_ALL, SP_LOG_WARN, "%s during sp_registry_release_all: refused") \
    X(MSG_NULL_POOL, SP_LOG_ERROR, "%s: pool is NULL")                                             \
    X(MSG_IN_PRIORITY, SP_LOG_WARN,                                                                \
      "%s called from this pool's priority callback: refused (priority only scores)")              \
    X(MSG_CLEARING, SP_LOG_WARN, "acquire while the pool is being cleared: refused")               \
    X(MSG_REENTER_LIFECYCLE, SP_LOG_WARN,                                                          \
      "release of %p: its create/dispose hook is running (re-entry)")                              \
    X(MSG_WALK_LOST, SP_LOG_INFO,                                                                  \
      "iteration stopped: its place was released and the pool has since made 2^31 acquisitions") \
    X(MSG_BAD_OVERFLOW, SP_LOG_WARN, "sp_set_overflow: %s: refused")                              \
    X(MSG_NO_RESERVE, SP_LOG_INFO,                                                                 \
      "could not reserve %zu bytes of address space: growing in ranges instead")                  \
    X(MSG_IN_ALLOCATOR, SP_LOG_WARN, "%s called from this pool's allocator: refused")               \
    X(MSG_TS_BAD_DESC, SP_LOG_ERROR, "sp_pool_create: threads = SP_THREADS_SAFE: %s")              \
    X(MSG_TS_NOT_QUIESCENT, SP_LOG_ERROR,                                                          \
      "%s while another thread is inside a call on this thread-safe pool (it needs quiescence)")   \
    X(MSG_TS_SLOTS_FULL, SP_LOG_ERROR,                                                             \
      "cannot grow: a thread-safe pool without a reservation holds at most %u slots")              \
    X(MSG_TS_REFUSED, SP_LOG_WARN, "%s: refused in a thread-safe pool (%s)")                    \
    X(MSG_TWO_THREADS, SP_LOG_ERROR,                                                               \
      "%s while another thread is inside a call on this pool: refused (a pool takes one thread at " \
      "a time; to call it from several at once, create it with .threads = SP_THREADS_SAFE) "       \
      "(%llu so far)")                                                                              \
    X(MSG_TS_OVERLAP, SP_LOG_ERROR,                                                                \
      "%s while another thread is inside a call on this thread-safe pool that needs quiescence: "  \
      "refused (%llu so far)")

#define SP__MSG_ENUM(id, level, fmt) SP__##id,
typedef enum sp__msg { SP__MSG_LIST(SP__MSG_ENUM) SP__MSG_COUNT } sp__msg;
#undef SP__MSG_ENUM

/* Logs message `msg` (with printf arguments) through the pool's logger, or through the
   default logger when pool is NULL. */
void sp__log(const sp_pool *pool, sp__msg msg, ...);
/* Same, at an explicit level instead of the message's own. */
void sp__log_level(const sp_pool *pool, sp_log_level level, sp__msg msg, ...);
/* Same, with an explicit logger and name (for descriptors that never became a pool). */
void sp__log_to(const sp_logger *logger, const char *name, sp__msg msg, ...);

/* The logger behind a zeroed sp_logger: warnings and errors to stderr. */
void sp__default_log(sp_log_level level, const char *pool_name, const char *message, void *user);

/* Every call of an allocator's alloc goes through here, so that the alignments the library asks
   for are the header's contract (next to sp_allocator): a power of two, never below
   sizeof(void *), which posix_memalign and aligned_alloc-based allocators need. The library's
   own types ask for less (4 for slots) or for 64 (caches, magazines, ranges): raised here, in one
   place. */
static inline void *sp__alloc(const sp_allocator *a, size_t size, size_t align) {
    return a->alloc(size, align < sizeof(void *) ? sizeof(void *) : align, a->user);
}

/* The C library allocator behind a zeroed sp_allocator. */
void *sp__default_alloc(size_t size, size_t align, void *user);
void sp__default_free(void *ptr, size_t size, void *user);

/* Pool tags, unique among live pools (thread-safe), shared by sp_pool and sp_dense. Acquire
   returns 0 when every tag is taken or retired; otherwise *first_life is the life the pool's
   slots start at: above every life any earlier pool handed out under that tag. Release takes
   the highest life the pool handed out (0: none), which its tag's next pool starts above; a
   tag left with fewer than SP__TAG_LIFE_RESERVE lives retires for good. See support.c. */
#define SP__TAG_LIFE_RESERVE (1u << 24)
uint32_t sp__tag_acquire(uint32_t *first_life);
void sp__tag_release(uint32_t tag, uint32_t highest_life);
/* White-box: a tag's high-water life, whether it retired, how many retired. sp__tags_reset
   forgets the marks and retirements of every tag no live pool holds, as a fresh process would
   have them: for test processes that fake exhausted lives (sp__debug_set_life,
   sp__dense_set_life), which would otherwise retire tags for good. Handles of destroyed pools
   may then resolve again: tests only. */
uint32_t sp__tag_high_water(uint32_t tag);
bool sp__tag_is_retired(uint32_t tag);
uint32_t sp__tags_retired(void);
void sp__tags_reset(void);
/* fork()'s handlers (threads.c) hold the tag table across the fork. */
void sp__tags_lock(void);
void sp__tags_unlock(void);

/* ---- a pool's owner ------------------------------------------------------------------
   A pool that belongs to something (the registry) tells it about its address ranges through
   this small interface and knows nothing else about it: registry.c uses pools, pool.c never
   calls into the registry, so the dependency runs one way. */
typedef struct sp__pool_owner {
    /* The pool's range [lo, hi) exists now; SP_ERR_NOMEM refuses it (the pool then gives the
       range back and reports an allocator failure). */
    sp_result (*range_added)(void *owner, sp_pool *pool, uintptr_t lo, uintptr_t hi);
    /* The range starting at lo is gone. */
    void (*range_removed)(void *owner, uintptr_t lo);
    /* The pool is being destroyed, however that came about: it leaves its owner. */
    void (*pool_gone)(void *owner, const sp_pool *pool);
    /* The owner's pool that item is a built member of, or NULL: for the line of a release into
       the wrong pool. */
    const sp_pool *(*member_of)(void *owner, const void *item);
} sp__pool_owner;

/* Creates a pool that belongs to `owner` (NULL: none) from the start, so that its first ranges
   are already known to the owner when its create hooks run. */
sp_pool *sp__pool_create_in(const sp_desc *desc, const sp__pool_owner *fns, void *owner,
                            const char *default_name);
/* True when item is the start of a built member of pool. O(1) expected. */
bool sp__pool_has_member(const sp_pool *pool, const void *item);
/* Members leased now, in every kind of pool (a thread-safe one's from its threads' counters,
   under its lock: exact when no other thread is inside it). */
size_t sp__pool_leased(const sp_pool *pool);
/* True while one of pool's callbacks runs on this thread (or on any, for a plain pool), or it
   is being destroyed: what must not be pulled from under the caller. */
bool sp__pool_in_callback(const sp_pool *pool);

/* ---- debug records (SP_DEBUG >= 1) ------------------------------------------------------
   One record per slot, in a flat array beside the slots (p->dbg): where the member was last
   acquired and released, and the checksum taken at release where no sanitizer watches. */
#if SP_DEBUG
typedef struct sp__dbg {
    const char *acq_file, *rel_file;
    uint32_t acq_line, rel_line;
    uint32_t sum;
    uint32_t has_sum;
} sp__dbg;
#  define SP__DBG_BYTES sizeof(sp__dbg)
#else
#  define SP__DBG_BYTES ((size_t)0)
#endif

#if SP_DEBUG
/* A member becomes free (released or prewarmed): checksum, optional fill, poison. */
void sp__dbg_freed(const sp_pool *p, sp__dbg *rec, void *item);
/* A free member is about to be handed out: unpoison, then verify the checksum. */
void sp__dbg_leasing(const sp_pool *p, sp__dbg *rec, void *item, uint32_t idx);
/* Memory that no live member occupies (unbuilt or retired slots) / that is used again. */
void sp__dbg_poison(void *mem, size_t size);
void sp__dbg_unpoison(void *mem, size_t size);
/* One thread at a time inside a pool that is not thread-safe (or inside a thread-safe one's
   window). 1: the calling thread entered (sp__dbg_leave when its call ends); 0: it is inside
   already (a callback's call), or the pool takes any thread; -1: another thread is inside:
   refused, with a line (the first, then at each power of two, so that a loop of overlaps cannot
   flood the log), logged without touching the pool's state. */
int sp__dbg_enter(sp_pool *p, const char *call);
void sp__dbg_leave(sp_pool *p);
/* At the top of a public call: it enters, makes itself again (`again`, which finds its thread
   inside and runs) and leaves; when another thread is inside, it returns `refused`. Nothing
   with SP_DEBUG=0. */
#  define SP__ONE_THREAD(p, name, type, refused, again)                                           \
      do {                                                                                        \
          int in_ = sp__dbg_enter((p), (name));                                                   \
          if (in_ < 0) return refused;                                                            \
          if (in_ > 0) {                                                                          \
              type r_ = again;                                                                    \
              sp__dbg_leave(p);                                                                   \
              return r_;                                                                          \
          }                                                                                       \
      } while (0)
#else
#  define SP__ONE_THREAD(p, name, type, refused, again) ((void)0)
#endif
/* Where a call came from, for the _at variants: NULL/0 when unknown. */
void sp__dbg_note_acquire(sp_pool *p, void *item, const char *file, int line);
void sp__dbg_note_release(sp_pool *p, void *item, const char *file, int line);

/* ---- thread-safe pools (threads.c): what the other files call -------------------------
   Hooks and log lines of a thread-safe pool run on many threads at once: they count as hooks
   of their pool on their own thread only (a frame on a thread-local list), not in the shared
   hook_depth. */
typedef struct sp__hook_frame {
    const struct sp_pool *pool;
    const void *item; /* the member the hook runs on (NULL: a log line) */
    struct sp__hook_frame *up;
} sp__hook_frame;
void sp__ts_hook_enter(sp__hook_frame *f, const sp_pool *p, const void *item);
void sp__ts_hook_leave(const sp__hook_frame *f);
bool sp__ts_in_hook(const sp_pool *p);
/* True while this thread runs a hook of p on item (a release from it is a re-entry; from any
   other thread, a member in another thread's hook is simply not leased by the caller). */
bool sp__ts_in_member_hook(const sp_pool *p, const void *item);

/* ---- white-box test hooks ------------------------------------------------------------- */
/* Sets the life counter of the slot holding item (a built member), to test exhaustion. */
void sp__debug_set_life(sp_pool *pool, const void *item, uint32_t life);
/* Sets the acquisition counter (stats.acquired and the stamps that follow), to test wrap-around
   of the 32-bit acquisition stamps without 2^32 acquisitions. */
void sp__debug_set_acquired(sp_pool *pool, uint64_t acquired);
/* Checks every internal invariant (lists, counts, states); returns false and logs on error.
   O(size). */
bool sp__pool_check(const sp_pool *pool);

#endif
