/* SPDX-License-Identifier: Zlib */
/*
    spawnpool_sizes.h -- size classes: one object owning a pool for each size of a table, so
    that buffers of any size up to the largest class come from pools and go back to them with
    the pointer alone, as malloc and free do.

    QUICK START
    ===========
        sp_sizes *bodies = sp_sizes_create(&(sp_sizes_desc){ .name = "bodies" });
        char *msg = (char *)sp_sizes_acquire(bodies, 300);      // from the 384-byte class
        msg = (char *)sp_sizes_resize(bodies, msg, 2000);       // moved to the 2048-byte class
        sp_sizes_release(bodies, msg);                          // no size: found from the pointer
        sp_sizes_destroy(bodies);

    CLASSES
    =======
    `classes` is the user's table of sizes in bytes, strictly ascending, each above 0 and at
    most SP_SIZES_CLASS_LIMIT, at most SP_SIZES_MAX_CLASSES of them. Without one the set takes
    the default table, two classes a doubling from 16 B to 8 KiB (18 classes: 16, 32, 48, 64,
    96, 128, 192, ... 4096, 6144, 8192), so a request above 32 bytes wastes less than a third
    of its member (17 to 32 bytes: less than half).
    Each class is an ordinary sp_pool (memory order, no hooks, DROP unless `max` is set with
    another `overflow`), named "<name>:<size>"; `max`, `overflow`, `chunk_items`,
    `item_align`, `allocator`, `logger`, `threads`, `magazine_size` and `thread_cache_bytes`
    apply to every class. The set offers no hooks: its members are buffers of a size the
    caller chooses at each call, which a per-class create or on_acquire could not know (zero
    them with sp_sizes_acquire_zeroed; use an sp_pool of your type for objects with hooks).
    A member's alignment is the class pool's: natural for its size, at most 16 (=item_align).

    Acquisition picks the smallest class that fits, in O(1): a table indexed by the size's
    step (sizes rounded up to a power of two no finer than 1/4096 of the largest class) names
    the first candidate, and at most the classes inside one step are compared. A request of 0
    bytes, or above the largest class, is refused: NULL and one line. There is no fallback to
    the allocator for larger requests: a set with one is two allocators whose releases must
    tell which one a pointer came from; add a class large enough, or call malloc yourself.

    Release takes the pointer alone. Where the class pools' memory comes from the process's
    shared source (the default: platform virtual memory, no custom allocator), the source's map
    of owners names the member's span in two loads, and the span its pool, which is one of the
    set's when the set is its owner: O(1). Elsewhere (a custom allocator, SP_NO_VIRTUAL_MEMORY, WebAssembly, a source
    that ran out of address space) the set keeps the address ranges of its classes' spans in
    order and finds the pointer by binary search: O(log spans). Either way the class pool's
    sp_release then checks the member (double release, a pointer inside a member) as for any
    pool, with its usual line naming the class ("bodies:384").

    ZEROED ACQUISITION, RESIZE
    ==========================
    sp_sizes_acquire_zeroed is sp_sizes_acquire with the member's whole class size zeroed
    (calloc), skipping the memset when the class pool builds the member from zeroed memory for
    this acquisition (see sp_acquire_zeroed in spawnpool.h). sp_sizes_resize is realloc within
    the set: a size in the member's own class returns the same pointer; another class gets a
    new member, the first min(old class size, new size) bytes are copied and the old member is
    released. On failure (no memory, a saturated class, bad input) it returns NULL and the old
    member is untouched and still leased. NULL is sp_sizes_acquire; size 0 is refused (release
    with sp_sizes_release).

    HANDLES, STATS, THREADS, DEBUG CHECKS
    =====================================
    Handles are the class pools' (sp_handle_of on the class): sp_sizes_handle_of and
    sp_sizes_resolve, the latter finding the class from the handle's pool tag in O(classes).
    sp_sizes_stats_get gives one class's sp_stats, sp_sizes_stats_total their sums plus the
    set's own bookkeeping (in bytes). `threads = SP_THREADS_SAFE` makes every class pool
    thread-safe: acquire, acquire_zeroed, release, resize, usable_size, handle_of, resolve and
    the stats may then be called from any thread at any time (the class pools' rules, THREADS in
    spawnpool.h); sp_sizes_destroy needs quiescence. Otherwise the set takes one thread at a
    time, as a pool does, and a debug library checks it through its pools. Debug builds record
    acquisition sites through the _at twins and the macros below, so leak reports of each class
    ("bodies:384: 2 leaked, acquired at net.c:88") name them; poisoning and write-after-release
    checks are the class pools'. sp_sizes_pool gives a class's pool for sp_leak_report,
    sp_leased_each, sp_trim or sp_stats_get: never destroy it, nor release its members through
    it with another set's call.

    ERRORS
    ======
    One line through the logger (the desc's, default stderr) and nothing changes for: a NULL
    set (the default logger), size 0, a size above the largest class, a pointer that is no
    member of the set (release, resize, usable_size, handle_of), an invalid descriptor (classes
    not strictly ascending, a zero class, above SP_SIZES_CLASS_LIMIT, more than
    SP_SIZES_MAX_CLASSES, class_count without classes, or anything a class pool's descriptor
    refuses), and allocator failure. A double release is the class pool's SP_ERR_NOT_LEASED
    with its line. sp_sizes_release(set, NULL) and sp_sizes_destroy(NULL) do nothing.
*/
#ifndef SPAWNPOOL_SIZES_H
#define SPAWNPOOL_SIZES_H

#include <spawnpool.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sp_sizes sp_sizes; /* opaque; create with sp_sizes_create */

#define SP_SIZES_MAX_CLASSES 64
#define SP_SIZES_CLASS_LIMIT ((size_t)1 << 30) /* the largest class a table may have */

/* Everything a set is made from. Zero means default: fill it with designated initializers. */
typedef struct sp_sizes_desc {
    const char *name;       /* for log lines, at most 47 bytes; each class pool is named
                               "<name>:<size>", name cut to 26 bytes there (="sizes") */
    const size_t *classes;  /* ascending class sizes in bytes (=NULL: the default table) */
    size_t class_count;     /* entries of classes (=0 with classes NULL) */
    size_t max;             /* most members of each class (=0: unbounded) */
    sp_overflow overflow;   /* what a saturated class does (=SP_OVERFLOW_DROP; RECLAIM is
                               refused: a reclaimed buffer would change owner under its user) */
    size_t item_align;      /* members' alignment, a power of two (=0: natural, at most 16) */
    size_t chunk_items;     /* each class's first span (=0: the pool's default) */
    sp_allocator allocator; /* for every class pool and the set's tables (=C library) */
    sp_logger logger;       /* (=warnings and errors to stderr) */
    sp_threads threads;     /* SP_THREADS_SAFE: every class pool is thread-safe (=NONE) */
    size_t magazine_size;   /* thread-safe classes' magazines (=0: the pool's default) */
    size_t thread_cache_bytes; /* thread-safe classes: the most bytes of free members one thread
                                  keeps of each class, as sp_desc's (=0: 256 KiB, so an 8 KiB
                                  class's magazines hold 16; SIZE_MAX: no bound) */
} sp_sizes_desc;

/* ---------------------------------------------------------------------------------------------
   Lifecycle
   ------------------------------------------------------------------------------------------ */

/* Creates the set and its class pools (no member is built yet).
   @return the set, or NULL (one line naming the field, nothing leaked) for a NULL or invalid
           desc or allocator failure. O(classes). */
SP_API sp_sizes *sp_sizes_create(const sp_sizes_desc *desc);

/* Destroys every class pool (leaked members are reported per class, as sp_pool_destroy does)
   and the set. NULL is a no-op. Refused as a whole (one line, nothing changes) while a callback
   of a class pool runs (its logger or allocator). O(classes + members). */
SP_API void sp_sizes_destroy(sp_sizes *sizes);

/* ---------------------------------------------------------------------------------------------
   Acquire / Release / Resize
   ------------------------------------------------------------------------------------------ */

/* A member of the smallest class of at least `size` bytes.
   @return the member, or NULL for size 0 or above the largest class (one line), when the class
           is saturated (DROP: counted, silent) or on allocator failure. O(1). */
SP_API void *sp_sizes_acquire(sp_sizes *sizes, size_t size);

/* sp_sizes_acquire with the member's class size zeroed. */
SP_API void *sp_sizes_acquire_zeroed(sp_sizes *sizes, size_t size);

/* Returns a member to its class. NULL is a no-op returning SP_OK.
   @return SP_ERR_FOREIGN for a pointer that is no member's start in the set, SP_ERR_NOT_LEASED
           for a double release, SP_ERR_INVALID for a NULL set; each with one line, nothing
           changed. O(1) (O(log spans) away from the shared source: see the top). */
SP_API sp_result sp_sizes_release(sp_sizes *sizes, void *item);

/* realloc within the set (see ZEROED ACQUISITION, RESIZE).
   @return the member of the new size (item itself when the class is the same), or NULL with
           item untouched and still leased. O(1) plus the copy. */
SP_API void *sp_sizes_resize(sp_sizes *sizes, void *item, size_t size);

/* The bytes item may use (its class's size), or 0 for NULL (silent) and for a pointer that is
   no member of the set (one line). O(1). */
SP_API size_t sp_sizes_usable_size(const sp_sizes *sizes, const void *item);

/* The same calls, recording where they were made (see DEBUG CHECKS in spawnpool.h). */
SP_API void *sp_sizes_acquire_at(sp_sizes *sizes, size_t size, const char *file, int line);
SP_API void *sp_sizes_acquire_zeroed_at(sp_sizes *sizes, size_t size, const char *file, int line);
SP_API sp_result sp_sizes_release_at(sp_sizes *sizes, void *item, const char *file, int line);
SP_API void *sp_sizes_resize_at(sp_sizes *sizes, void *item, size_t size, const char *file, int line);

/* ---------------------------------------------------------------------------------------------
   Handles
   ------------------------------------------------------------------------------------------ */

/* The handle of a leased member's current life (its class pool's), or the null handle (with a
   line for a pointer that is no member of the set). O(1). */
SP_API sp_handle sp_sizes_handle_of(const sp_sizes *sizes, const void *item);

/* The member while the handle's life lasts, NULL after, for the null handle and for a handle
   of no class of this set (silently). O(classes). */
SP_API void *sp_sizes_resolve(const sp_sizes *sizes, sp_handle handle);

/* ---------------------------------------------------------------------------------------------
   Classes and stats
   ------------------------------------------------------------------------------------------ */

/* Number of classes, and the size of class i (0 past the end). */
SP_API size_t sp_sizes_class_count(const sp_sizes *sizes);
SP_API size_t sp_sizes_class_size(const sp_sizes *sizes, size_t class_index);

/* The pool of class i (NULL past the end), for leak reports and stats. Never destroy it. */
SP_API sp_pool *sp_sizes_pool(const sp_sizes *sizes, size_t class_index);

/* Fills *out with class i's stats (zeroes it past the end or for a NULL set). */
SP_API void sp_sizes_stats_get(const sp_sizes *sizes, size_t class_index, sp_stats *out);

/* Fills *out with the sums over every class (max: 0 when any class is unbounded; peak_leased:
   the sum of the classes' peaks, which may not have been at once) and, in bytes, the set's own
   bookkeeping too. O(classes). */
SP_API void sp_sizes_stats_total(const sp_sizes *sizes, sp_stats *out);

#ifdef __cplusplus
} /* extern "C" */
#endif

#if SP_DEBUG && !defined(SP_NO_SITE_MACROS)
#  define sp_sizes_acquire(...) sp_sizes_acquire_at(__VA_ARGS__, __FILE__, __LINE__)
#  define sp_sizes_acquire_zeroed(...) sp_sizes_acquire_zeroed_at(__VA_ARGS__, __FILE__, __LINE__)
#  define sp_sizes_release(...) sp_sizes_release_at(__VA_ARGS__, __FILE__, __LINE__)
#  define sp_sizes_resize(...) sp_sizes_resize_at(__VA_ARGS__, __FILE__, __LINE__)
#endif

#endif /* SPAWNPOOL_SIZES_H */
