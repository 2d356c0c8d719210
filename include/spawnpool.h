/* SPDX-License-Identifier: Zlib */
/*
    spawnpool.h -- object pools for C: build members once, hand them out, take them back.

    A game that fires twenty bullets a second should not allocate and free twenty objects a
    second. A spawnpool pool builds members once, hands them out with sp_acquire(), takes them
    back with sp_release() and reuses them. Everything on the hot path is O(1), members never
    move, and once a pool is warm it never calls the allocator again.

    QUICK START
    ===========
        typedef struct bullet { float x, y, vx, vy; int damage; } bullet;

        static void bullet_fire(void *item, const void *arg, void *user) {
            const bullet *muzzle = (const bullet *)arg;
            *(bullet *)item = *muzzle;               // every life starts here
            (void)user;
        }

        sp_pool *bullets = sp_pool_create(&(sp_desc){
            .name = "bullets",
            .item_size = sizeof(bullet),
            .initial = 32,                           // built at load, not on the first shot
            .max = 64,                               // hard cap on live bullets
            .overflow = SP_OVERFLOW_RECLAIM,         // full? recycle the oldest bullet
            .on_acquire = bullet_fire,
        });
        bullet *b = (bullet *)sp_acquire_with(bullets, &muzzle);
        sp_handle h = sp_handle_of(bullets, b);     // a reference that expires with this life
        ...
        sp_release(bullets, b);                     // b's life ends; h stops resolving
        sp_pool_destroy(bullets);

    HOOKS
    =====
    create      once per member, when it is built (its memory is zeroed first)
    on_acquire  on every acquisition, with the caller's `arg`; prewarming is not an acquisition
    on_release  on every release path: sp_release, sp_release_all, and a RECLAIM
    dispose     once per built member when it is destroyed: sp_trim, sp_clear, sp_pool_destroy
                (clear and destroy run dispose, not on_release, on members still leased:
                release first with sp_release_all, or sp_registry_release_all for a scene)
    A recycled member keeps its contents: only hooks reset it. A hook may acquire and release
    members of any pool, its own included, except the member it is processing. Refused inside
    any hook of a pool (one line each, nothing changes): sp_pool_destroy, sp_clear and sp_trim
    of that pool. `priority` callbacks, the callbacks of sp_each and sp_leased_each, and the
    pool's logger (while it logs one of the pool's lines) count as hooks of their pool too, and
    so do the allocator's functions (they run in the middle of growth, trim and teardown): inside
    them, moreover, acquisitions that would grow the pool (none is free) and sp_prewarm of it
    are refused (NULL and a line, not a drop). While sp_clear or sp_pool_destroy runs, every acquisition from that
    pool is refused (NULL and a line, not a drop), so dispose cannot be handed a member that the
    teardown then destroys; releasing other members from dispose is fine (on_release runs, then
    dispose). docs/safety.md has the whole table of what each callback may do.

    OVERFLOW POLICIES
    =================
    A pool grows one member at a time until `max` members are built. When it is saturated (no
    free member, `max` reached):
    SP_OVERFLOW_DROP     sp_acquire returns NULL and counts `dropped` (the default).
    SP_OVERFLOW_RECLAIM  the lowest-`priority` leased member is released and handed straight
                         back: on_release, then on_acquire, same pointer. Counts `reclaimed`.
                         Without `priority`: the oldest acquisition (SP_ORDER_ACQUISITION), or
                         the next in turn (SP_ORDER_MEMORY, see below). On priority ties: the
                         first in the pool's order, that is the oldest acquisition, or in memory
                         order the lowest slot (span by span, by address within a span).
                         `priority` must be a pure scoring function: it runs as a hook, and
                         inside it acquisitions, releases, sp_release_all and sp_prewarm on its
                         own pool are refused with one line (sp_release returns
                         SP_ERR_INVALID, an acquisition NULL without counting a drop), so the
                         members it scores stay as they are until the reclaim takes one.
    SP_OVERFLOW_GROW     `max` is a soft budget: the pool builds past it, counts
                         `grown_past_max` and logs a warning.
    sp_acquire_force() reclaims where sp_acquire would drop, so it returns NULL only on allocator
    failure or when every leased member is busy in a hook (an acquisition from inside the hooks
    of the only leased members: logged, and counted as no drop).

    ORDER OF THE LEASED MEMBERS
    ===========================
    Iteration (sp_first/sp_next, sp_iter, sp_each, sp_release_all, sp_leased_each) and the
    reclaim victim follow the pool's `order`, chosen at creation. MIND THE DEFAULT: a pool that
    leaves `.order` out walks its members in MEMORY order, not in the order they were acquired,
    unless its overflow is SP_OVERFLOW_RECLAIM. Code ported from a linked list that appends new
    objects (update order = creation order) must say `.order = SP_ORDER_ACQUISITION` to keep
    behaving the same; memory order is faster to walk and to release, and is the right default
    only where the order of updates does not matter.
    SP_ORDER_ACQUISITION  oldest acquisition first; a reclaim takes the oldest. Kept in a list
                          beside the members (12 bytes each) that every acquire and release
                          updates, with the member's state word (a release also writes its two
                          neighbours' links: up to two more cache lines). The default under
                          SP_OVERFLOW_RECLAIM.
    SP_ORDER_MEMORY       memory order: span by span, each in address order, which is also the
                          fastest order to walk. Without on_acquire and on_release, acquire and
                          release touch only the top of the stack of free members and one byte
                          of a map, not even the member's state word. A reclaim
                          (sp_acquire_force, or RECLAIM set later with sp_set_overflow) takes
                          the next leased member after the one it took last, round robin in
                          memory order. The default otherwise.
    Free members are handed out lowest address first when they were built (on demand, by
    `initial` or by sp_prewarm), so a pool filled in order is in acquisition order in memory
    too, and a memory-order RECLAIM takes the oldest of a saturated pool filled in order. A
    released member is the next one handed out (the free members are a stack).

    HANDLES
    =======
    A plain pointer to a released member still works: it points at whatever the pool hands out
    next. An sp_handle expires with the life it was taken in: sp_resolve() returns the member
    while that life lasts and NULL after (release, reclaim, clear, destroy), and NULL for a
    handle from another pool. A stale handle (its life ended) is the normal case and silent; a
    handle of another pool, or a forged id, is a bug and logs a warning, rate-limited per pool
    and kind: the first, then each time the count reaches a power of two, with the count
    ("... (1024 so far)"), so 200,000 bad lookups log 18 lines. The 64 bits of sp_handle.id are

        bits 63..41  life     (23 bits) the slot's life when the handle was taken, never 0
        bits 40..24  pool tag (17 bits) unique among the live pools that took one
        bits 23..0   slot     (24 bits) index of the member's slot in its pool

    id 0 is the null handle. A pool takes its tag with its first handle (sp_handle_of or
    sp_acquire_handle; a thread-safe pool at creation, as sp_dense does), so a pool that never
    issues a handle takes none, and the number of such pools is limited by memory only. At most
    131,072 pools with a tag are alive at once: beyond that a pool's first handle is refused
    (the null handle, or NULL from sp_acquire_handle, and a line), and a thread-safe pool cannot
    be created. A slot's life moves on only when a life that had a handle ends, so leases
    without a handle use up no lives. A slot whose life counter is exhausted is retired when
    that life ends, never reused, so a stale handle can never match by wrap-around (a
    fixed-buffer pool then has one member less), after 2^23 - 1 lives with a handle of one
    slot at most and 2^20 + 1 at least. A pool holds at most 2^24 slots.
    A handle never resolves in any pool but the one that issued it, nor in another life, for
    the life of the process (the one exception is a pool restored from a snapshot, which takes
    the saved tag and lives back: see SNAPSHOT AND RESTORE), even though tags come back (a game that rebuilds its pools every
    level gets a destroyed pool's tag again): a pool that takes a tag hands out only lives
    above every life that tag ever handed out, and a tag with fewer than 2^20 lives left is
    retired for good. The bound: each tag serves 2^23 - 2^20 - 1 lives, and a pool uses up as
    many as its busiest slot handed out handles of, so first handles are refused (logged) only
    after the process's pools have used up about 9.6 x 10^11 lives that way (100 pools a level
    whose busiest slots hand out handles of 10,000 lives each, a level a minute: 1.8 years).
    sp_dense shares the tags and the rule. See docs/design.md, "Handles and tags".
    sp_resolve is a call into the library: the top span's member is one comparison of its state
    word with the handle.

    MEMORY
    ======
    Members live in spans, which never move: the first holds `chunk_items` members (by default
    as many as a 64 KiB segment holds, 1 to 256, or `initial` when that is more; at most max),
    each later one twice the one before. Where the platform has virtual memory, spans come from
    one source of address space that all of the process's pools share: it reserves regions as
    pools need them (64 MiB first, each next one twice the last, up to 64 GiB a region), cuts
    them into blocks of 64 KiB segments, and keeps small blocks (up to 256 KiB) committed when
    pools give them back, so that creating and destroying a small pool in steady state makes no
    system call; a larger span is committed as it fills. A pool with `max` takes its one span
    of max members from it at once (address space, committed as it fills). stats.bytes counts
    what is committed or allocated, stats.bytes_reserved the address space of the pool's
    blocks, which costs no memory. sp_trim gives back the spans without a built member and
    decommits the pages above a span's highest built member (in a span committed as it fills);
    sp_clear and sp_pool_destroy give back every span. An `allocator` with reserve/commit/decommit/release gets a source of its own over
    them. Where nothing can be reserved (an `allocator` with alloc/free only, WebAssembly,
    SP_NO_VIRTUAL_MEMORY; or, with one info line, a source that can reserve no more: a 32-bit
    address space used up, ulimit -v), spans are allocated from `allocator` (default: the C
    library), `chunk_items` members first and each twice the previous. Bookkeeping: a 4-byte
    state word a member, a 3-byte entry in the stack of free members and a byte of a map (8
    bytes in all); 12 bytes more in acquisition order, 32 more in a debug library. With `buffer` set, the pool
    and everything it keeps live in that buffer and the allocator is never called;
    sp_buffer_size() says how many bytes a given number of members needs, so it depends on the
    order and on the library's SP_DEBUG too. See docs/design.md.

    ERROR REPORTING AND LOGGING
    ===========================
    Misuse the library survives (a double release, a foreign pointer, an invalid descriptor)
    returns a result code or NULL, changes nothing and logs one line naming the pool through
    `logger` (default: warnings and errors to stderr). Expected conditions, such as a full pool
    under DROP, return NULL and count, silently. A NULL pool where a function needs one returns
    its documented error value (NULL, 0, false, SP_ERR_INVALID) and logs one error line through
    the default logger ("sp_release: pool is NULL"); sp_pool_destroy(NULL) and
    sp_release(pool, NULL) do nothing, silently, like free(NULL).

    DEBUG CHECKS
    ============
    With SP_DEBUG >= 1 (the default unless NDEBUG is defined) a free member is poisoned: under
    AddressSanitizer it is unaddressable, so a stale pointer's read or write is reported at the
    faulting line; under valgrind it is no-access; elsewhere a checksum taken at release and
    checked at the next acquisition reports a write-after-release with the pool, the member and
    where it was released. Contents survive: poisoning never overwrites a member (SP_DEBUG=2
    fills members of pools without a `create` hook with 0xDD). sp_acquire and friends are then
    macros that record __FILE__/__LINE__, so that leak reports name acquisition sites:
        bullets: 3 leaked, acquired at game.c:120
    sp_leak_report() prints the same at any time; sp_leased_each() walks them. With SP_DEBUG=0
    the library records no sites and says so: "bullets: 3 leaked (sites not recorded: build
    with SP_DEBUG=1)". A game that acquires through its own function (entity_create) records
    that function's line unless it forwards its caller's site: give it an _at twin that takes
    file and line and calls sp_acquire_with_at, and a macro that supplies them:
        entity *entity_create_at(game *g, float x, float y, const char *file, int line);
        #define entity_create(...) entity_create_at(__VA_ARGS__, __FILE__, __LINE__)
    (docs/guide.md, "Porting from a linked list", has the whole example). See docs/safety.md.
    The checks need the library itself built with them: `cmake --install` installs
    libspawnpool (SP_DEBUG=0 in Release) and libspawnpool-debug (SP_DEBUG=1); CMake's
    spawnpool::spawnpool links the debug one in Debug configurations, pkg-config users ask for
    spawnpool-debug. The library's level decides, not yours: a program compiled without NDEBUG
    against libspawnpool takes its plain paths (the site macros' _at calls jump to them).

    THREADS
    =======
    By default a pool is used by one thread at a time (which thread may change between calls,
    given the usual synchronisation); different pools may be used by different threads. A debug
    build (the library at SP_DEBUG >= 1) checks it: a call into such a pool while another thread
    is inside one is refused (NULL, SP_ERR_INVALID or 0; nothing changes) with one error line,
        particles: sp_release while another thread is inside a call on this pool: refused (a
        pool takes one thread at a time; to call it from several at once, create it with
        .threads = SP_THREADS_SAFE) (1 so far)
    logged the first time and then at each power of two. A release build does not check: the
    calls race, and the pool's state is undefined from then on (members handed to two owners,
    counters that wrap); ThreadSanitizer reports the race.
    With `.threads = SP_THREADS_SAFE` any thread may call the pool at any time, with the same
    functions, results, hooks and checks:
        sp_pool *sparks = sp_pool_create(&(sp_desc){
            .item_size = sizeof(spark), .threads = SP_THREADS_SAFE });
    Each thread keeps a cache of free members per pool (two magazines of `magazine_size`,
    default 64), found in the thread's table at the pool's place, so that a thread alternating
    between pools keeps its fast path with each: acquire and release touch only it, and a depot
    under the pool's lock trades whole magazines; growth, refills and the calls below that say
    "lock" take the lock. Any thread may release a member that another acquired. Traffic that
    keeps crossing the depot between threads (producer/consumer) doubles the size of new
    magazines, up to 16 x magazine_size (and max / 64 in a pool with max).
    What a thread parks is bounded in bytes too: its two magazines of a pool hold at most
    `thread_cache_bytes` of members (default 256 KiB, counted in member strides: item_size
    rounded up to item_align), or one member each when a member is larger than half of it; the
    bound caps magazine_size and the growth, and leaves the per-call paths as they are. At the
    default, members up to 128 bytes keep magazines of 64 growing to 1024, members up to 2 KiB
    start at 64, an 8 KiB pool's magazines hold 16. So N threads that use M thread-safe pools
    hold at most, free in their caches (N: the most threads alive at once that used a pool; an
    exited thread's cache is the next thread's):
        members      N x the sum over the M pools of max(thread_cache_bytes, 2 x stride)
        bookkeeping  N x the sum over the M pools of 64 + 2 x (24 + 4 x most, rounded up to 64)
    where most is a magazine's largest size (1024 at the defaults: 8,384 bytes a pool), and a
    table of 16 bytes per pool slot a thread. 8 threads x 14 message-size
    pools of 16 B to 8 KiB at the defaults: 2.97 MiB of members a thread once every pool's
    magazines have grown, 23.7 MiB in all (37.6 MiB a thread without the bound; docs/threads.md,
    "How much the caches hold"). The depot and the loose members are the pool's free members,
    as in any pool (sp_trim gives them back).
    Safe from any thread at any time:
    sp_acquire, _with, _force (no reclaim: it acts as sp_acquire), sp_acquire_handle,
    sp_release, sp_resolve, sp_handle_of, sp_is_leased, sp_prewarm (lock), sp_stats_get (lock;
    exact when no other thread is inside the pool, its counters monotone otherwise),
    sp_set_max and sp_set_overflow (lock), sp_pool_name, and on a registry of such pools
    sp_spawn, sp_registry_release, sp_registry_owner, sp_registry_resolve.
    - Of two threads releasing the same member, exactly one gets SP_OK and the other
      SP_ERR_NOT_LEASED (with the usual line): the release is one atomic transition of the
      member's slot word. (As in any pool, a release of a member that another thread acquired
      again meanwhile releases that new life: a pointer names no life; a handle does.)
    - sp_resolve stays lock-free and never returns a member of another life: what it returns
      was leased in the handle's life at the moment of its one atomic load. Another thread may
      release it right after: keep it alive by your own protocol (the thread that releases it
      is the one that owns it, a reference count, a phase barrier).
    - Hooks run on the calling thread: on_acquire and on_release of different members run
      concurrently on different threads (never two hooks on one member); create runs under the
      pool lock (a growth batch) and dispose under it or inside a quiescent call; the logger may
      be called from several threads at once. Hooks may call back into their pool as in a plain
      pool (the lock is recursive); destroy, clear and trim are refused inside them.
    - max and DROP hold exactly for built members (growth is under the lock). A DROP pool may
      refuse while free members sit in other threads' caches: at most two magazines per other
      thread, 2 x magazine_size until they grow and at most 2 x max / 64 after, and never
      more than thread_cache_bytes of them (the depot, the loose members and what exited
      threads left in their caches are taken first).
    - Need quiescence (no other thread inside a call on the pool, and their calls ordered
      before and after by a join, a barrier or a lock): sp_each, sp_leased_each, sp_first /
      sp_next, sp_iter_first / sp_iter_next (each call), sp_release_all, sp_leak_report,
      sp_trim, sp_clear, sp_pool_destroy, and sp_registry_add / remove / destroy /
      release_all. They gather every thread's cache and run as for a plain pool; debug builds
      log an error when they find another thread inside the pool, and refuse (with a line) a
      call that another thread makes into it while they run.
    - Refused at creation, with a line naming the field: SP_OVERFLOW_RECLAIM, `priority`,
      SP_ORDER_ACQUISITION, a fixed `buffer` (and later sp_set_overflow(RECLAIM)); also in a
      build without threads (single-threaded WebAssembly).
    - A thread-safe pool takes its pool tag at creation (see HANDLES). Its spans never move,
      so other threads read its members' state words while it grows, wherever its memory
      comes from.
    - A thread's caches are the pool's: a thread that exits leaves its cache to the pool (the
      next thread adopts it; a refill that would otherwise grow or drop takes its members
      back), and they are freed with the pool, in either order. Link with -pthread (CMake's
      spawnpool targets carry it).
    - Lifecycle (docs/threads.md): pools that are never destroyed, and exit() while other
      threads are inside pools, are fine. After fork() the child may use every thread-safe
      pool as the forking thread left it: the other threads' leased members stay leased, what
      they cached is the child's. A shared library that embeds spawnpool may be unloaded
      (dlclose) once its thread-safe pools are destroyed.
    A pool without SP_THREADS_SAFE pays nothing for the mode. See docs/threads.md.

    SIZE CLASSES AND ZEROED MEMBERS
    ===============================
    sp_acquire_zeroed() hands out a member with its item_size bytes zeroed (calloc), skipping
    the memset when the pool builds the member for the call. For buffers of many sizes,
    include/spawnpool_sizes.h makes one sp_sizes object of a pool per size class: acquire by
    size, release by the pointer alone (O(1)), resize as realloc does, calloc-like zeroing, per-
    class stats; its header's top is its manual.

    C++: include/spawnpool.hpp wraps a pool in sp::pool<T>, which constructs and destroys the
    objects it hands out (docs/guide.md, section 12).

    SNAPSHOT AND RESTORE
    ====================
    sp_snapshot() writes a pool's whole state into your buffer (sp_snapshot_size() says how
    much first) and sp_restore() makes a new pool of it from the same descriptor: every built
    member's bytes (memcpy, or your save/load callbacks for members holding pointers or
    resources), every slot's life, which members are leased, the free order, the acquisition
    order, the counters behind sp_stats (created, acquired, released, peak_leased...), max and
    the overflow policy as sp_set_max/sp_set_overflow left them. After a restore every handle
    issued before the save resolves to the restored member, every stale one stays stale, and
    the acquisitions that follow hand out the same slots, and handles, in the same order as the
    saved pool would have (replay-exact: rollback, replays, save games).
    - The pool tag: a restored pool takes its snapshot's tag back, so its handles are the saved
      pool's ids. Refused (one line, nothing made) while a live pool of this process holds that
      tag: destroy the pool you roll back first. A handle of an earlier pool of this process
      under the same tag, with a life above the saved pool's first, cannot be told from a saved
      handle and may resolve in the restored pool (in a rollback that earlier pool is the one
      you rolled back, whose handles then name the same members). A snapshot of a pool that
      never issued a handle has no tag: the restored pool takes one with its first handle, as
      any pool does (its handles then differ from another process's in tag and life).
    - save and load count as hooks of their pool (destroy, clear and trim are refused) and read
      it as it is: acquire, release, sp_release_all and sp_prewarm on it are refused inside
      them with one line, as inside `priority` (sp_dense: adds, removes and reserve).
    - Hooks: none runs at restore or at save (not create, not on_acquire): the members come back
      as they were saved, through `load` when you give one; `dispose` runs on them later as on
      any member. If `load` refuses a member, dispose runs on the members loaded before it and
      the restore fails.
    - Every built member is saved, free or leased: a free member keeps what create made of it.
    - Refused, with one line and nothing allocated: a truncated, corrupt (checksum) or foreign
      (magic, format version) buffer, a descriptor that does not match the snapshot's (item
      size and alignment, order, chunk_items, fixed buffer or not), io that does not match the
      one saved with, a fixed buffer smaller than the saved one's capacity, allocator failure.
    - Thread-safe pools are refused, and so is a snapshot taken from inside one of the pool's
      hooks (its state is mid-change there).
    - sp_dense (spawnpool_dense.h) and a registry (all its pools, names and the tags behind
      cross-pool handles: sp_registry_snapshot / sp_registry_restore) follow the same rules.
    - The format is little-endian and independent of the build's debug level. Replay-exactness
      of growth past the saved spans holds for restores by the same build (with or without
      virtual memory, span sizes differ). stats.bytes describes the new pool's own memory.

    See docs/design.md for the memory layout and complexity of every call.
*/
#ifndef SPAWNPOOL_H
#define SPAWNPOOL_H

#define SP_VERSION_MAJOR 0
#define SP_VERSION_MINOR 5
#define SP_VERSION_PATCH 0
#define SP_VERSION "0.5.0"
/* MAJOR * 10000 + MINOR * 100 + PATCH, for #if; sp_version_number() is the library's own. */
#define SP_VERSION_NUMBER (SP_VERSION_MAJOR * 10000 + SP_VERSION_MINOR * 100 + SP_VERSION_PATCH)

/* Debug checks (see DEBUG CHECKS above): 0 off, 1 poisoning + acquisition sites + write-after-
   release checksums, 2 also fills released members of pools without a `create` hook.
   (=1 unless NDEBUG is defined). The library and your code may use different levels. */
#ifndef SP_DEBUG
#  ifdef NDEBUG
#    define SP_DEBUG 0
#  else
#    define SP_DEBUG 1
#  endif
#endif

/* SP_API marks exported functions; define it yourself to override (=nothing, or the
   visibility attribute when building the shared library). The static libraries are built with
   it empty and -fvisibility=hidden (CMake's SP_STATIC_HIDDEN, on by default), so that a shared
   library that embeds one exports none of its symbols; building the sources yourself into a
   shared library, do the same: -fvisibility=hidden -DSP_API= (README, "Embedding"). */
#ifndef SP_API
#  if defined(_WIN32) && defined(SP_SHARED) && defined(SP_BUILDING)
#    define SP_API __declspec(dllexport)
#  elif defined(_WIN32) && defined(SP_SHARED)
#    define SP_API __declspec(dllimport)
#  elif defined(__GNUC__) && defined(SP_BUILDING)
#    define SP_API __attribute__((visibility("default")))
#  else
#    define SP_API
#  endif
#endif

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------------
   Types
   ------------------------------------------------------------------------------------------ */

typedef struct sp_pool sp_pool;         /* opaque; create with sp_pool_create */
typedef struct sp_registry sp_registry; /* opaque; create with sp_registry_create */

/* A reference to one life of one member; see HANDLES above for the bits. id 0 is null. */
typedef struct sp_handle {
    uint64_t id;
} sp_handle;

/* What a saturated pool does on acquire; see OVERFLOW POLICIES above. */
typedef enum sp_overflow {
    SP_OVERFLOW_DROP = 0,
    SP_OVERFLOW_RECLAIM = 1,
    SP_OVERFLOW_GROW = 2
} sp_overflow;

/* Which order iteration and reclaims follow; see ORDER OF THE LEASED MEMBERS above. */
typedef enum sp_order {
    SP_ORDER_DEFAULT = 0,     /* ACQUISITION under SP_OVERFLOW_RECLAIM, MEMORY otherwise */
    SP_ORDER_ACQUISITION = 1, /* oldest acquisition first */
    SP_ORDER_MEMORY = 2       /* address order, span by span */
} sp_order;

/* Result codes and their descriptions, in one table so the two never drift apart. */
#define SP_RESULT_LIST(X)                                                                         \
    X(SP_OK, 0, "ok")                                                                             \
    X(SP_ERR_NOT_LEASED, 1, "member is not leased (double release?)")                             \
    X(SP_ERR_FOREIGN, 2, "pointer is not the start of a member of this pool")                     \
    X(SP_ERR_INVALID, 3, "invalid argument")                                                      \
    X(SP_ERR_NOMEM, 4, "out of memory")

#define SP__RESULT_ENUM(name, value, text) name = value,
typedef enum sp_result { SP_RESULT_LIST(SP__RESULT_ENUM) SP_RESULT_COUNT } sp_result;
#undef SP__RESULT_ENUM

typedef enum sp_log_level {
    SP_LOG_ERROR = 0,
    SP_LOG_WARN = 1,
    SP_LOG_INFO = 2
} sp_log_level;

/* Memory source for a pool's members and bookkeeping. Zero means the C library and the
   platform's virtual memory.

   alloc/free: both or neither. `free` gets the size that `alloc` was asked for. `alloc` returns
   NULL on failure; the pool then reports SP_ERR_NOMEM / NULL and stays consistent. What `alloc`
   is asked for: a size above 0, and an `align` that is a power of two from sizeof(void *) (so
   that an allocator over posix_memalign or aligned_alloc serves every request) to the larger of
   64 and the members' item_align: 64 for spans of members, thread caches and magazines (each
   starts a cache line), item_align for spans of members aligned past that, sizeof(void *) to
   16 for the rest of the bookkeeping (pool and registry records, the stack of free members,
   the plain map, tables). The same holds for a registry's allocator and sp_dense's.

   reserve/commit/decommit/release: all four or none (a pool with some but not all is refused).
   With all four, the pool gets a memory source of its own over them: regions of address space
   reserved as its spans need them, cut into blocks of 64 KiB segments, committed as the spans
   fill, released when the pool is destroyed. With all four zero it shares the process's source
   over the platform's virtual memory (mmap/mprotect, VirtualAlloc) when alloc and free are
   zero too, and otherwise (a custom alloc/free alone, WebAssembly, a build with
   SP_NO_VIRTUAL_MEMORY) allocates its spans from `alloc`, each twice the previous. Members
   never move either way. The contract for your own:
   - reserve(size): address space for size bytes, no access needed yet; aligned to at least
     the page size (sysconf(_SC_PAGESIZE), GetSystemInfo's dwPageSize). size is a multiple of
     64 KiB. NULL when impossible: the pool goes on with spans from `alloc` (one info line), it
     does not fail.
   - commit(addr, size): makes a part of a reservation readable and writable; true on success.
     addr and size are multiples of the page size, inside one reservation, and not committed
     already. false is an allocator failure (SP_ERR_NOMEM / NULL; the pool stays consistent).
     The pool does not rely on the contents (the platform's read zero).
   - decommit(addr, size): the pool no longer needs these committed pages (sp_trim, a span
     given back); return their memory or keep it, as you like. The pool commits them again
     before it touches them. Small blocks given back stay committed, up to 64 MiB, for the
     pool's next spans.
   - release(addr, size): a whole reservation, exactly as reserve returned and was asked, when
     the pool is destroyed. Nothing in it is committed-and-needed any more.
   The pool's record, its stack of free members and its plain map still come
   from alloc/free (=C library). */
typedef struct sp_allocator {
    void *(*alloc)(size_t size, size_t align, void *user);
    void (*free)(void *ptr, size_t size, void *user);
    void *user;
    void *(*reserve)(size_t size, void *user);
    bool (*commit)(void *addr, size_t size, void *user);
    void (*decommit)(void *addr, size_t size, void *user);
    void (*release)(void *addr, size_t size, void *user);
} sp_allocator;

/* Where log lines go. `pool_name` is the pool's name ("" when it has none). */
typedef struct sp_logger {
    void (*log)(sp_log_level level, const char *pool_name, const char *message, void *user);
    void *user;
} sp_logger;

typedef void (*sp_create_fn)(void *item, void *user);
typedef void (*sp_acquire_fn)(void *item, const void *arg, void *user);
typedef void (*sp_release_fn)(void *item, void *user);
typedef void (*sp_dispose_fn)(void *item, void *user);
typedef double (*sp_priority_fn)(const void *item, void *user);

/* Everything a pool is made from. Zero means default: fill it with designated initializers. */
/* Who may call a pool: one thread at a time (the default), or any thread at any time. */
typedef enum sp_threads {
    SP_THREADS_NONE = 0, /* one thread at a time (it may change between calls) */
    SP_THREADS_SAFE = 1  /* per-thread caches, atomic slot transitions: see THREADS */
} sp_threads;

typedef struct sp_desc {
    const char *name;       /* for log lines and the registry; copied, at most 47 bytes (a
                               longer name is cut and an info line says so) (="") */
    size_t item_size;       /* bytes per member; required */
    size_t item_align;      /* power of two (=0: natural for item_size, at most 16) */
    size_t initial;         /* members built at creation (=0) */
    size_t max;             /* most members built (=0: unbounded); mutable with sp_set_max */
    sp_overflow overflow;   /* what a saturated pool does (=SP_OVERFLOW_DROP) */
    sp_order order;         /* iteration and reclaim order, fixed for the pool's life
                               (=ACQUISITION under RECLAIM, MEMORY otherwise: NOT the order of
                               acquisition unless you ask for it; see ORDER OF THE LEASED
                               MEMBERS) */
    size_t chunk_items;     /* the first span's members, each later span twice the one before
                               (=0: as many as a 64 KiB segment holds, 1 to 256, or initial
                               when that is more; at most max) */
    sp_create_fn create;    /* once per member when built */
    sp_acquire_fn on_acquire; /* every acquisition */
    sp_release_fn on_release; /* every release path */
    sp_dispose_fn dispose;  /* once per member when destroyed */
    sp_priority_fn priority; /* RECLAIM victim: the lowest value; ties go to the first in the
                                pool's order (=NULL: the oldest; see order). A pure scoring
                                function: acquire and release on its own pool are refused
                                inside it (see OVERFLOW POLICIES) */
    void *user;             /* passed to every hook */
    sp_allocator allocator; /* (=C library) */
    sp_logger logger;       /* (=warnings and errors to stderr) */
    void *buffer;           /* fixed-memory mode: everything lives here (=NULL) */
    size_t buffer_size;     /* bytes at `buffer` */
    sp_threads threads;     /* SP_THREADS_SAFE: any thread may call the pool at any time (see
                               THREADS) (=SP_THREADS_NONE: one thread at a time) */
    size_t magazine_size;   /* thread-safe pools: free members per per-thread magazine; each
                               thread caches up to two magazines per pool; the starting size,
                               grown for cross-thread traffic (see THREADS) (=0: 64; at most
                               65536) */
    size_t thread_cache_bytes; /* thread-safe pools: the most bytes of free members one thread
                                  keeps in its two magazines of this pool, which caps
                                  magazine_size and its growth; never below one member a
                                  magazine (see THREADS) (=0: 256 KiB; SIZE_MAX: no bound) */
} sp_desc;

/* Numbers for a debug overlay. */
typedef struct sp_stats {
    size_t size;           /* built members: leased + free */
    size_t leased;         /* members handed out */
    size_t free;           /* members ready to hand out */
    size_t max;            /* current cap (0: unbounded) */
    size_t peak_leased;    /* most members leased at once */
    size_t bytes;          /* memory the pool holds, bookkeeping included: what it allocated,
                              and of its blocks of address space the committed part */
    uint64_t created;      /* create ran (members built) */
    uint64_t disposed;     /* members destroyed */
    uint64_t acquired;     /* acquisitions, reclaims included */
    uint64_t released;     /* lives ended by a release path, reclaims included (not by
                              sp_clear or sp_pool_destroy: those lives end in dispose) */
    uint64_t reclaimed;    /* leased members taken back by RECLAIM / sp_acquire_force */
    uint64_t dropped;      /* acquisitions refused by a saturated DROP pool */
    uint64_t grown_past_max; /* members built past max under GROW */
    size_t bytes_reserved; /* address space of the blocks the pool's spans hold from a memory
                              source (members and their bookkeeping), committed or not; 0 for
                              spans from the allocator and in fixed-buffer mode. Costs no
                              memory. */
} sp_stats;

/* ---------------------------------------------------------------------------------------------
   Pool lifecycle
   ------------------------------------------------------------------------------------------ */

/* Creates a pool and builds desc->initial members.
   @param desc  the description; copied, so it may live on the stack
   @return the pool, or NULL (with a logged reason, nothing leaked) when desc is NULL or invalid
           (item_size 0, alignment not a power of two, sizes that overflow, `initial` above
           2^24 or above max, a buffer too small for one member or for `initial`, GROW with a
           buffer; the line names the field at fault), when a thread-safe pool finds no pool
           tag free (see HANDLES) or the allocator fails. O(initial). */
SP_API sp_pool *sp_pool_create(const sp_desc *desc);

/* Destroys every member (dispose runs once on each; leased ones are counted and logged as
   leaked) and returns all memory. NULL is a no-op. While it runs, acquisitions from the pool
   are refused (NULL and a line); members a dispose hook releases meanwhile are released, then
   disposed. Refused with a line inside a hook of this pool (see HOOKS), or while it is already
   being destroyed. To run on_release first (scene teardown): sp_release_all, then destroy.
   O(slots). */
SP_API void sp_pool_destroy(sp_pool *pool);

/* Builds up to n more free members, stopping at max. Not an acquisition: on_acquire does not
   run. They are handed out next, lowest address first (before members that were free already).
   @return members built (fewer than n at max or on allocator failure; 0, with a line,
   inside this pool's priority callback or during its sp_clear/sp_pool_destroy). O(n). */
SP_API size_t sp_prewarm(sp_pool *pool, size_t n);

/* Disposes free members until at most keep_free remain (the highest slots first, so that whole
   spans empty out), gives back every span with no built member (to the memory source, or to
   the allocator) and decommits the pages of members above a span's highest built one (in a
   span committed as it fills).
   @return members disposed (0, with a line, inside a hook of this pool). O(slots). */
SP_API size_t sp_trim(sp_pool *pool, size_t keep_free);

/* Destroys every member, leased or free: dispose runs on each (not on_release) and every life
   ends. The leased members' lives do not count as `released`. While it runs, acquisitions from
   the pool are refused (NULL and a line), so it always ends; members a dispose hook releases
   meanwhile are released, then disposed. Its spans go back (to the memory source, or to the
   allocator); the pool stays usable. @return members disposed (0, with a line, inside a hook of
   this pool). O(slots). */
SP_API size_t sp_clear(sp_pool *pool);

/* Changes the cap (0: unbounded; clamped to a fixed buffer's capacity, and to 2^24, the most
   slots a pool has). Lowering it below the current size disturbs no member: it only blocks
   growth. @return SP_ERR_INVALID for NULL. */
SP_API sp_result sp_set_max(sp_pool *pool, size_t max);

/* Bytes a fixed buffer needs to hold `members` members of desc (alignment slack included), or
   0 when desc is invalid, members is 0 or above 2^24, or the size does not fit in a size_t.
   Besides the members' size and alignment it depends on desc's order (an acquisition-order
   pool keeps 12 more bytes a member, its lease list: mind RECLAIM's default order) and on the
   library's SP_DEBUG (32 more a member for the debug records): ask the library you link. */
SP_API size_t sp_buffer_size(const sp_desc *desc, size_t members);

/* The pool's name ("" when it has none, never NULL for a pool; NULL for NULL). */
SP_API const char *sp_pool_name(const sp_pool *pool);

/* Changes what a saturated pool does from now on. @return SP_ERR_INVALID for a NULL pool, an
   unknown policy, or GROW on a fixed buffer (nothing changes then; a line says why). */
SP_API sp_result sp_set_overflow(sp_pool *pool, sp_overflow overflow);

/* ---------------------------------------------------------------------------------------------
   Acquire / Release
   ------------------------------------------------------------------------------------------ */

/* Hands out a free member, building one if none is free and max allows; on a saturated pool
   the overflow policy decides. on_acquire runs with arg NULL.
   @return the member, or NULL when dropped, on allocator failure, or for a NULL pool. O(1)
           (RECLAIM with a priority hook scans the leased members). */
SP_API void *sp_acquire(sp_pool *pool);

/* sp_acquire, passing arg to on_acquire. */
SP_API void *sp_acquire_with(sp_pool *pool, const void *arg);

/* Like sp_acquire_with, but reclaims where sp_acquire would drop (counting no drop).
   @return NULL only on allocator failure or when every leased member is busy in a hook
           (logged; no drop counted), and where every acquisition is refused: a NULL pool,
           inside the pool's priority, during its sp_clear/sp_pool_destroy. */
SP_API void *sp_acquire_force(sp_pool *pool, const void *arg);

/* sp_acquire with the member's item_size bytes zeroed, as calloc gives. The memset is skipped
   when the acquisition builds the member (no free member was left), whose memory the pool
   zeroed as it built it; a free member, a reclaimed one, and every member of a thread-safe pool
   are zeroed here. Refused (NULL and one line) in a pool with `create` or `on_acquire`: their
   hooks set a member's contents, which zeroing would undo or the hook would overwrite.
   @return the member, or NULL as sp_acquire. O(1) plus the memset. */
SP_API void *sp_acquire_zeroed(sp_pool *pool);

/* sp_acquire_with that also writes the handle of the new life to *out (unless out is NULL):
   the same handle sp_handle_of would give, without mapping the pointer back to its slot.
   @return the member, or NULL (and the null handle in *out) as sp_acquire_with, or when the
           pool has no tag yet and none is free (logged; nothing acquired). O(1). */
SP_API void *sp_acquire_handle(sp_pool *pool, const void *arg, sp_handle *out);

/* Returns a member to its pool: on_release runs (the member still counts as leased while it
   does), then the member's life ends (its handles stop resolving) and it becomes free. NULL is a
   no-op returning SP_OK.
   @return SP_ERR_NOT_LEASED for a member that is not leased (double release) or whose own hook
           is running (re-entry, from on_acquire/on_release/dispose or create: the line says
           which), SP_ERR_FOREIGN for a pointer that is not the start of one of this pool's
           members, SP_ERR_INVALID inside the pool's priority callback or for a NULL pool; all
           change nothing and log a line (SP_ERR_INVALID too, in a debug build, when another
           thread is inside a call on a pool without SP_THREADS_SAFE: see THREADS). O(1); never
           reads outside the pool. */
SP_API sp_result sp_release(sp_pool *pool, void *item);

/* Releases exactly the members that are leased when it starts, in the pool's order (skipping
   members whose own hook is running). Members that on_release hooks acquire meanwhile stay
   leased, so it always ends. @return the members this call released; members that hooks
   release meanwhile are released too but not counted. 0, with a line, inside the pool's
   priority callback. O(leased) (SP_ORDER_MEMORY: O(slots)). */
SP_API size_t sp_release_all(sp_pool *pool);

/* The same calls, recording where they were made (for leak reports and write-after-release
   reports). With SP_DEBUG (yours) the plain names are macros over these. Whether sites are
   recorded is the library's choice, not the caller's: a library built with SP_DEBUG=0 records
   none, and its _at functions jump straight to the plain ones, whatever your SP_DEBUG or NDEBUG
   (a program built without NDEBUG against the release library pays its two arguments and a
   jump a call, nothing else; its leak lines say the sites were not recorded). */
SP_API void *sp_acquire_at(sp_pool *pool, const char *file, int line);
SP_API void *sp_acquire_with_at(sp_pool *pool, const void *arg, const char *file, int line);
SP_API void *sp_acquire_force_at(sp_pool *pool, const void *arg, const char *file, int line);
SP_API void *sp_acquire_handle_at(sp_pool *pool, const void *arg, sp_handle *out, const char *file,
                                  int line);
SP_API void *sp_acquire_zeroed_at(sp_pool *pool, const char *file, int line);
SP_API sp_result sp_release_at(sp_pool *pool, void *item, const char *file, int line);

/* ---------------------------------------------------------------------------------------------
   Handles
   ------------------------------------------------------------------------------------------ */

/* A handle to the current life of a leased member; the null handle for anything else, and
   when this is the pool's first handle and no pool tag is free (logged, see HANDLES). O(1). */
SP_API sp_handle sp_handle_of(const sp_pool *pool, const void *item);

/* The member while the handle's life lasts, NULL after (and for the null handle, a handle of
   another pool, alive or destroyed, or a forged id; those two log a rate-limited warning, see
   HANDLES). O(1). */
SP_API void *sp_resolve(const sp_pool *pool, sp_handle handle);

/* True when item is a member of pool that is currently leased. O(1). */
SP_API bool sp_is_leased(const sp_pool *pool, const void *item);

static inline bool sp_handle_is_null(sp_handle handle) { return handle.id == 0; }
static inline sp_handle sp_handle_null(void) { sp_handle h = {0}; return h; }
static inline bool sp_handle_eq(sp_handle a, sp_handle b) { return a.id == b.id; }

/* ---------------------------------------------------------------------------------------------
   Iteration
   ------------------------------------------------------------------------------------------ */

/* The first leased member in the pool's order (SP_ORDER_ACQUISITION: the one acquired longest
   ago), or NULL. O(1) (SP_ORDER_MEMORY: O(slots before it)). */
SP_API void *sp_first(const sp_pool *pool);

/* The leased member after item in the pool's order, or NULL at the end (or when item is not
   leased: a loop that releases must take the next first, as below, or use sp_iter).
   Releasing item after taking its next is safe:
       for (void *it = sp_first(p), *nx; it; it = nx) { nx = sp_next(p, it); ... }
   Expected O(1) (SP_ORDER_MEMORY: O(slots up to the next leased member)): it recognises item
   as sp_release does. sp_each walks without lookups. */
SP_API void *sp_next(const sp_pool *pool, const void *item);

/* Calls fn(item, user) for every leased member in the pool's order, until fn returns false.
   fn may release and acquire any members, the one it is given included; the walk keeps its
   place (by slot, life and acquisition stamp, not by a link that a release could stale) and
   goes on at the first leased member after it. It visits only members leased when it began
   (as sp_release_all releases them), so it always ends, whatever fn acquires: a callback that
   releases its member and acquires a replacement visits each member once.
   SP_ORDER_ACQUISITION: members acquired meanwhile come after every other and are not visited;
     a member released before the walk reaches it is skipped. Every life is visited at most
     once, however long a member has been leased (the 32-bit acquisition stamps are ranked
     afresh once per 2^31 acquisitions, O(leased)). Only a walk whose own callbacks make 2^31
     acquisitions, and then release the member, its neighbours and all, loses its place: it
     ends there with an info line.
   SP_ORDER_MEMORY: keeps no acquisition stamps, so it tells new members by place: the walk ends
     after the last slot leased when it began. Members built meanwhile (growth) are not visited;
     a member acquired meanwhile into a free slot before that end is visited when it lies after
     the current one (a replacement takes the slot just freed, behind the walk); a member
     released meanwhile is skipped.
   fn counts as a hook of the pool: sp_pool_destroy, sp_clear and sp_trim of it are refused.
   @return members visited. O(leased) (SP_ORDER_MEMORY: O(slots), in address order), no
   lookups: the fastest way to update them all. */
typedef bool (*sp_each_fn)(void *item, void *user);
SP_API size_t sp_each(sp_pool *pool, sp_each_fn fn, void *user);

/* A cursor over the leased members, in the pool's order, with sp_each's rules for a pool that
   changes under it (see above), for loop bodies that would rather not be callbacks:
       for (sp_iter it = sp_iter_first(pool); it.item; sp_iter_next(pool, &it)) {
           bullet *b = (bullet *)it.item;
           ...                                  // may release b, or others; may acquire
       }
   `item` is the current member, NULL at the end; the other fields are the cursor's own. No
   lookups: each step reads the bookkeeping of the member and its two neighbours. A cursor needs
   no cleanup (leave the loop at any time) and belongs to one pool. Unlike an sp_each callback,
   the loop body is not a hook: the pool's hooks' refusals do not apply to it. Like sp_each, it
   visits only members leased when sp_iter_first made it. */
typedef struct sp_iter {
    void *item;
    uint32_t _slot, _stamp, _next, _next_stamp, _prev, _prev_stamp, _last, _unused;
    uint64_t _origin;
} sp_iter;

/* A cursor at the first leased member (item NULL when none, or for a NULL pool). O(1)
   (SP_ORDER_MEMORY: O(slots before it and after the last leased one)); once per 2^31
   acquisitions O(leased) (see sp_each). */
SP_API sp_iter sp_iter_first(sp_pool *pool);

/* Moves it to the next leased member (item NULL at the end; a cursor at the end stays there).
   O(1) (SP_ORDER_MEMORY: O(slots up to the next); SP_ORDER_ACQUISITION, when the member, its
   next and its previous one were all released since the last step: O(members acquired after
   it)). */
SP_API void sp_iter_next(sp_pool *pool, sp_iter *it);

/* ---------------------------------------------------------------------------------------------
   Stats
   ------------------------------------------------------------------------------------------ */

/* Fills *out (zeroes it for a NULL pool). O(1). */
SP_API void sp_stats_get(const sp_pool *pool, sp_stats *out);

/* Calls fn for every leased member in the pool's order, with the site that acquired it
   (file NULL, line 0 when unknown: a library built with SP_DEBUG=0, or a call without the site
   macros). Walks as sp_each does (fn may release members; it counts as a hook).
   @return the number of members visited. O(leased). */
typedef void (*sp_leased_fn)(void *item, const char *file, int line, void *user);
SP_API size_t sp_leased_each(const sp_pool *pool, sp_leased_fn fn, void *user);

/* Logs the leased members grouped by acquisition site, one line per site ("3 leased, acquired
   at game.c:120"), at level `level` through the pool's logger: a mid-game leak check.
   @return the number of leased members. O(leased * sites). */
SP_API size_t sp_leak_report(const sp_pool *pool, sp_log_level level);

/* A short description of a result code ("unknown result" for values outside the enum). */
SP_API const char *sp_result_str(sp_result result);

/* The version of the library the program runs with ("MAJOR.MINOR.PATCH"; SP_VERSION is the
   header's), and as a number like SP_VERSION_NUMBER. A shared library of another minor version
   has another soname (libspawnpool.so.0.MINOR), so for 0.x the two agree in major and minor. */
SP_API const char *sp_version(void);
SP_API int sp_version_number(void);

/* ---------------------------------------------------------------------------------------------
   Snapshot and restore (see SNAPSHOT AND RESTORE above)
   ------------------------------------------------------------------------------------------ */

/* How members go into a snapshot and come back. Zero (or a NULL io) means their item_size
   bytes, copied. save and load: both or neither; each member takes `bytes` bytes in the
   snapshot (=0: item_size), which save writes whole and load reads. load returns false to
   refuse a member (the restore then fails). Both run for every built member, free or leased,
   in slot order, and count as hooks of their pool. */
typedef void (*sp_save_fn)(const void *item, void *out, size_t bytes, void *user);
typedef bool (*sp_load_fn)(void *item, const void *in, size_t bytes, void *user);
typedef struct sp_snapshot_io {
    size_t bytes;    /* bytes a member takes in the snapshot (=0: item_size) */
    sp_save_fn save; /* (=NULL: memcpy of the member) */
    sp_load_fn load; /* (=NULL: memcpy back) */
    void *user;      /* passed to save and load */
} sp_snapshot_io;

/* The bytes sp_snapshot needs for the pool now, or 0 (with a line) when it cannot be saved
   (NULL, thread-safe, invalid io). O(1). */
SP_API size_t sp_snapshot_size(const sp_pool *pool, const sp_snapshot_io *io);

/* Writes the pool's state into buf (size bytes, at least sp_snapshot_size). The pool does not
   change. @return SP_OK; SP_ERR_INVALID with a line for a NULL pool or buf, a buffer too
   small, a thread-safe pool, a call from one of its hooks, invalid io. O(slots + size). */
SP_API sp_result sp_snapshot(const sp_pool *pool, void *buf, size_t size, const sp_snapshot_io *io);

/* A new pool made from desc with the state saved in buf (desc->initial is ignored: the
   snapshot says what is built). @return the pool, or NULL with a line and nothing allocated
   when the buffer is truncated, corrupt or of another format version, desc does not match it,
   io does not match the io it was saved with, the saved pool tag is held by a live pool, load
   refuses a member, or the allocator fails. O(slots + size). */
SP_API sp_pool *sp_restore(const sp_desc *desc, const void *buf, size_t size, const sp_snapshot_io *io);

/* ---------------------------------------------------------------------------------------------
   Registry: named pools that a scene owns
   ------------------------------------------------------------------------------------------ */

/* A registry holds named pools, finds the pool of any member from its pointer (so that
   "destroy" of a pooled entity is one call), resolves handles without being told the pool, and
   tears a scene down. Holding the sp_pool * (from sp_registry_add or sp_registry_get) is the
   fast way to acquire: sp_spawn hashes the name on every call.

   Misuse (a NULL registry or name, an empty or duplicate name, an unknown name, a pointer no pool
   owns) returns NULL / an error code, changes nothing and logs one line. sp_registry_destroy(NULL)
   is a no-op.

   From hooks (see docs/safety.md, "Registry calls from callbacks"): every registry call may be
   made from any hook or sp_each callback, with two exceptions, each refused with one line and no
   change:
   - sp_registry_destroy while a hook of any of its pools runs (or while a pool is being added,
     or during sp_registry_release_all, or during its own destroy);
   - while sp_registry_destroy disposes the pools, every registry call from a dispose hook
     (sp_spawn, _get, _add, _remove, _release, _release_all, _owner, _resolve, _destroy): the
     registry is half gone. sp_registry_count and sp_registry_pool_at still answer: they list the
     pools not yet destroyed (and the one being destroyed).
   sp_registry_remove of a pool whose own hook is running is refused as sp_pool_destroy is
   (SP_ERR_INVALID, the pool stays registered).

   SCENE TEARDOWN: sp_registry_release_all(reg), then sp_registry_destroy(reg). The first runs
   every leased member's on_release (a parent returns its children to their pool), the second
   disposes; only members still leased after the first are reported as leaks. Add parents' pools
   before their children's. */

/* How a registry gets its memory and reports: zero means default (the C library; warnings and
   errors to stderr). The pools it creates use these too unless their desc names their own. */
typedef struct sp_registry_desc {
    sp_allocator allocator; /* for the registry's tables and, by default, its pools */
    sp_logger logger;       /* for the registry's lines and, by default, its pools' */
} sp_registry_desc;

/* An empty registry with the C library allocator and the stderr logger, or NULL when out of
   memory. */
SP_API sp_registry *sp_registry_create(void);

/* An empty registry from desc (NULL: as sp_registry_create), or NULL when out of memory or when
   the allocator has only one of alloc and free, or some but not all of reserve, commit,
   decommit and release (logged). */
SP_API sp_registry *sp_registry_create_with(const sp_registry_desc *desc);

/* Destroys every pool in the registry, in order of addition (dispose runs on every member; leaks
   are logged per pool), then the registry. Refused as a whole (one line, nothing changes) when
   called from a hook of one of its pools or during its own destroy; see above. NULL is a no-op.
   O(pools^2 + members). */
SP_API void sp_registry_destroy(sp_registry *reg);

/* Creates a pool from desc and adds it under name (copied); the desc's name defaults to name.
   @return the pool, or NULL (one line, nothing kept) for a NULL or empty name, a name already
           registered, a NULL or invalid desc, or no memory. O(1) expected, plus the pool's
           creation. */
SP_API sp_pool *sp_registry_add(sp_registry *reg, const char *name, const sp_desc *desc);

/* Destroys the pool registered under name, which leaves the registry.
   @return SP_ERR_INVALID for an unknown name, or when the pool refused to be destroyed (called
           from one of its own hooks: it stays registered). O(pools + the pool's members). */
SP_API sp_result sp_registry_remove(sp_registry *reg, const char *name);

/* The pool registered under name, or NULL (silently for an unknown name). O(1) expected. */
SP_API sp_pool *sp_registry_get(const sp_registry *reg, const char *name);

/* Number of pools, and the i-th (in order of addition; NULL past the end), for overlays. */
SP_API size_t sp_registry_count(const sp_registry *reg);
SP_API sp_pool *sp_registry_pool_at(const sp_registry *reg, size_t index);

/* sp_acquire_with on the pool registered under name; NULL for an unknown name (logged). O(1)
   expected, plus the acquisition; keep the sp_pool * where it matters. */
SP_API void *sp_spawn(sp_registry *reg, const char *name, const void *arg);

SP_API void *sp_spawn_at(sp_registry *reg, const char *name, const void *arg, const char *file,
                         int line);
SP_API sp_result sp_registry_release_at(sp_registry *reg, void *item, const char *file, int line);

/* The pool that item is a built member of, or NULL for anything else. O(log spans), over the
   spans of all its pools. */
SP_API sp_pool *sp_registry_owner(const sp_registry *reg, const void *item);

/* Sends item back to its own pool, whichever it is (what destroy() on a pooled entity does).
   NULL is a no-op returning SP_OK.
   @return sp_release's result, or SP_ERR_FOREIGN (logged) for a pointer no pool of the registry
           owns. O(log spans). */
SP_API sp_result sp_registry_release(sp_registry *reg, void *item);

/* The member a handle names, in whichever pool of the registry issued it, as sp_resolve on that
   pool (found through the handle's pool tag): NULL for the null handle, a stale handle, and,
   silently, a handle of a pool that is not (or no longer) in this registry. O(1) expected. */
SP_API void *sp_registry_resolve(const sp_registry *reg, sp_handle handle);

/* Scene teardown, before sp_registry_destroy: releases every leased member of every pool
   through on_release (as sp_release_all does, pool by pool in order of addition), in passes
   until nothing is leased or a pass releases nothing. A parent's on_release may return its
   children to a later pool, which the same pass then finds empty of them; children's pools
   added first take one more pass per level. Hooks may acquire meanwhile: the passes are
   bounded (one per pool, plus one), so it always ends, and what hooks left leased stays leased
   (and is reported as leaked by sp_registry_destroy). Refused (one line, returns 0) when
   called from a hook during another sp_registry_release_all of the same registry.
   @return members released by the passes (not those hooks released themselves).
   O(passes * leased) (SP_ORDER_MEMORY pools: slots). */
SP_API size_t sp_registry_release_all(sp_registry *reg);

/* Saving and restoring every pool of a registry at once (the rules of SNAPSHOT AND RESTORE):
   the pools in order of addition, under their names, each with its own snapshot. The pools'
   tags come back, so handles stored in members (of their own pool or another) resolve through
   sp_registry_resolve after the restore. io_of gives the io of a pool by name (=NULL: every
   pool's members raw); desc_of, which a restore needs, the descriptor of each saved pool
   (its name is the saved one). */
typedef struct sp_registry_snapshot_io {
    const sp_snapshot_io *(*io_of)(const char *name, void *user);
    const sp_desc *(*desc_of)(const char *name, void *user);
    void *user;
} sp_registry_snapshot_io;

/* The bytes sp_registry_snapshot needs now, or 0 with a line (a pool that cannot be saved). */
SP_API size_t sp_registry_snapshot_size(const sp_registry *reg, const sp_registry_snapshot_io *io);
/* Writes every pool's snapshot into buf. SP_ERR_INVALID with a line: NULL arguments, a buffer
   smaller than sp_registry_snapshot_size, a pool that cannot be saved (thread-safe, in a hook),
   a call while the registry is being destroyed or releases all. O(pools + their snapshots). */
SP_API sp_result sp_registry_snapshot(const sp_registry *reg, void *buf, size_t size, const sp_registry_snapshot_io *io);
/* Restores every saved pool into reg, which must be empty (a new registry), under its name and
   in its order. On any refusal (as sp_restore's, for the registry's buffer or any pool, or no
   descriptor from desc_of) the pools restored so far go again: SP_ERR_INVALID with a line, the
   registry empty, nothing allocated. desc_of, io_of and the pools' load run while the restore
   adds the pools: sp_registry_destroy, _add, _remove, _release_all, _snapshot and _restore of
   reg are refused inside them (one line each; the restore goes on); a pool restored already
   (sp_registry_get) is an ordinary pool there, and sp_pool_destroy of it works as anywhere
   (the registry forgets it). O(pools + their snapshots). */
SP_API sp_result sp_registry_restore(sp_registry *reg, const void *buf, size_t size, const sp_registry_snapshot_io *io);

#ifdef __cplusplus
} /* extern "C" */
#endif

/* Site-recording macros (SP_DEBUG); define SP_NO_SITE_MACROS to keep plain functions. They are
   variadic so that an argument containing commas, such as a compound literal
   `sp_acquire_with(pool, &(vec2){x, y})`, passes through whole. */
#if SP_DEBUG && !defined(SP_NO_SITE_MACROS)
#  define sp_acquire(...) sp_acquire_at(__VA_ARGS__, __FILE__, __LINE__)
#  define sp_acquire_with(...) sp_acquire_with_at(__VA_ARGS__, __FILE__, __LINE__)
#  define sp_acquire_force(...) sp_acquire_force_at(__VA_ARGS__, __FILE__, __LINE__)
#  define sp_acquire_handle(...) sp_acquire_handle_at(__VA_ARGS__, __FILE__, __LINE__)
#  define sp_acquire_zeroed(...) sp_acquire_zeroed_at(__VA_ARGS__, __FILE__, __LINE__)
#  define sp_release(...) sp_release_at(__VA_ARGS__, __FILE__, __LINE__)
#  define sp_spawn(...) sp_spawn_at(__VA_ARGS__, __FILE__, __LINE__)
#  define sp_registry_release(...) sp_registry_release_at(__VA_ARGS__, __FILE__, __LINE__)
#endif

#endif /* SPAWNPOOL_H */
