/* SPDX-License-Identifier: Zlib */
/*
    spawnpool_dense.h -- a packed array of small structs, for particle systems and the like.

    An sp_pool never moves its members, so a loop over them follows the pool's order, not memory.
    When a frame touches every element (100k particles integrated, tested and drawn), memory
    order is what counts: an sp_dense keeps its live elements packed at the front of one array,
    so iteration is a plain `for` loop over contiguous memory. Add appends, remove swaps the last
    element into the hole, both O(1). Because elements move, references that must outlive a frame
    are handles, which an index table keeps valid across moves.

    QUICK START
    ===========
        #include <spawnpool_dense.h>

        typedef struct spark { float x, y, vx, vy, life; } spark;

        sp_dense *sparks = sp_dense_create(&(sp_dense_desc){
            .name = "sparks",
            .item_size = sizeof(spark),
            .initial = 4096,                         // capacity reserved at load
            .max = 100000,                           // hard cap on live sparks
            .overflow = SP_OVERFLOW_RECLAIM,         // full? the oldest spark makes room
        });
        sp_dense_add(sparks, &(spark){.x = 10, .y = 20, .life = 2.0f});

        spark *s = (spark *)sp_dense_data(sparks);   // every frame:
        for (size_t i = 0; i < sp_dense_count(sparks); ) {
            s[i].life -= dt;
            if (s[i].life <= 0) sp_dense_remove_at(sparks, i);   // the last one moved to i:
            else i++;                                             // look at i again
        }
        sp_dense_destroy(sparks);

    POINTERS, INDICES AND HANDLES
    =============================
    pointer  `sp_dense_data(d) + i`, valid until the next add, remove, clear or growth. Adding
             may grow the array, which moves every element: element pointers are NOT stable.
    index    position in the packed array, 0..count-1. Removing element i moves the last
             element to i (on_move tells you); growth keeps indices.
    handle   an sp_handle naming one element for as long as it lives, wherever it moves:
             sp_dense_resolve() returns its current address, NULL once it was removed. Same
             conventions as sp_pool's handles (see HANDLES in spawnpool.h): id 0 is null, 64 bits
             = life (23) | tag (17) | slot (24), and a slot whose life counter is exhausted is
             retired, never reused, so a stale handle never matches by wrap-around (in fixed
             mode a retired slot is not replaced: after 2^23 - 1 lives of one slot at most, and
             2^20 + 1 at least, the capacity drops by one). A dense pool takes its tag at
             creation, from the same table as sp_pool's, unique among all pools alive at the
             same time that hold one, dense or not, and with the same rule across lifetimes: a
             pool that takes a tag starts its lives above every life the tag handed out. A
             handle never resolves in any other pool of either kind, alive or destroyed (see
             HANDLES in spawnpool.h for the bound).

    The index table behind handles: every element owns a slot. slot -> (dense index, life);
    dense index -> slot (a back-pointer, so a swap-remove can fix the moved element's slot in
    O(1)); under RECLAIM also slot -> (prev, next) in order of addition, to find the oldest.
    Memory per element: the stride + 12 bytes (+ 8 under RECLAIM).

    HOW MANY ELEMENTS
    =================
    A dense pool holds at most 2^24 elements (a handle's slot bits), and fewer when their memory
    would not fit in PTRDIFF_MAX bytes, the largest object C can index (2 GiB - 1 with a 32-bit
    size_t: WebAssembly, 32-bit ARM): at most (PTRDIFF_MAX - head) / (stride + 12, + 8 under
    RECLAIM), head being the header, the name and item_align - 1 bytes of slack, a few hundred
    bytes for the usual alignments. Each pool has its own ceiling, from its item size: every size
    it computes stays below PTRDIFF_MAX, so none wraps. sp_dense_buffer_size(desc, n) is 0 exactly
    when n is above it. With a 64-bit size_t the ceiling is 2^24 for any stride up to 2^38; with
    a 32-bit one, 2^24 for strides up to about 110 bytes, then about 2^31 / (stride + 12): some
    520,000 elements of 4 KiB, 32,000 of 64 KiB. The allocator (or the memory a WebAssembly
    module may grow to) usually stops a pool long before. A desc is refused when not even one
    element fits, and when max or initial is above the ceiling.

    ON_MOVE
    =======
    on_move(item, from, to, user) runs after a remove moved the element at index `from` into the
    hole at index `to` (< from); `item` is its new address. Use it to update indices you keep
    elsewhere (a spatial grid, a GPU buffer). It is not called when growth relocates the array:
    indices do not change then. The hook must not add or remove elements of the same pool.
    sp_dense_destroy and sp_dense_clear of the same pool, from on_move or from the pool's
    logger, are refused with one line ("... called from this pool's on_move or logger:
    refused"). The logger may read the pool: GROW's warning is logged once the add is done.

    CAPACITY AND OVERFLOW
    =====================
    Growing mode (no buffer): the array starts with `initial` places and grows by `chunk_items`
    (=0: doubles, at least 64) until `max` (=0: the pool's ceiling, see HOW MANY ELEMENTS). Fixed mode (`buffer` set): the pool and
    everything it keeps live in the caller's buffer, its capacity is what fits (see
    sp_dense_buffer_size) and the allocator is never called. When an add finds the pool full:
    SP_OVERFLOW_DROP     sp_dense_add returns NULL and counts `dropped` (the default).
    SP_OVERFLOW_RECLAIM  the oldest element (earliest added) is removed, its handles die, and the
                         new element takes its place: same index, no on_move. Counts `reclaimed`.
                         A pool whose retired slots leave no slot for another element is full
                         too. When the oldest is in its slot's last life and no slot is to be
                         had (fixed mode), it is removed like any other (on_move runs for the
                         element that fills its place) and the next oldest makes room.
    SP_OVERFLOW_GROW     `max` is a soft budget: the array grows past it, counts `grown_past_max`
                         and logs a warning when the places past max reach 1, 2, 4, 8... (not
                         with a buffer).
    An allocator failure is not "full": the add returns NULL, logs an error and changes nothing.

    ERRORS AND LOGGING
    ==================
    As for sp_pool: misuse the library survives (a NULL pool, an invalid descriptor, a stale
    handle passed to remove, a pointer that is not an element) returns NULL or an sp_result,
    changes nothing and logs one line naming the pool through the desc's `logger` (default:
    warnings and errors to stderr). A full pool under DROP is not an error: NULL and a counter.
    A NULL pool passed to a call that needs one (create's desc, add, remove, clear, reserve)
    logs one error line naming the call ("sp_dense_add: pool is NULL") through the default
    logger; destroy accepts NULL silently, like free(), and so do the queries documented with
    an answer for NULL (count, capacity, data, stride, at, index_of, handle_at, resolve, name,
    stats). Handle lookups (resolve, resolve_index) follow sp_resolve's rule: a stale handle
    (its element was removed) is the normal case and silent; a handle of another pool or a
    forged id answers NULL / SIZE_MAX and logs a warning, rate-limited per pool and kind (the
    first, then each time the count reaches a power of two, with the count: 200,000 forged
    lookups log 18 lines).

    STATS
    =====
    sp_dense_stats_get fills the sp_stats of spawnpool.h: size = capacity (element places
    reserved), leased = count, free = capacity - count, max = the cap on live elements (the
    desc's max, 0 for unbounded; in fixed mode what the buffer holds when that is lower, as an
    sp_pool reports), peak_leased, bytes (bookkeeping included), created = places reserved over
    the pool's life (it stops moving once the array stops growing), disposed = 0 (places are
    never given back before destroy), acquired = adds (reclaims included), released = elements
    removed (remove, clear, reclaim), reclaimed, dropped, grown_past_max = element places
    reserved beyond max under SP_OVERFLOW_GROW (so capacity - max once the array grew past it;
    the dense counterpart of sp_pool's members built past max).

    THREADS
    =======
    A dense pool is used by one thread at a time; different pools by different threads.

    See docs/dense.md for when to use sp_dense instead of sp_pool.
*/
#ifndef SPAWNPOOL_DENSE_H
#define SPAWNPOOL_DENSE_H

#include "spawnpool.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------------
   Types
   ------------------------------------------------------------------------------------------ */

typedef struct sp_dense sp_dense; /* opaque; create with sp_dense_create */

/* Called after a remove moved the element at index `from` to index `to`; item is its new
   address. See ON_MOVE above. */
typedef void (*sp_dense_move_fn)(void *item, size_t from, size_t to, void *user);

/* Everything a dense pool is made from. Zero means default: fill it with designated
   initializers. */
typedef struct sp_dense_desc {
    const char *name;         /* for log lines; copied, at most 255 bytes (a longer name is
                                 cut and an info line says so) (="") */
    size_t item_size;         /* bytes per element; required. Any size of which one element
                                 fits in PTRDIFF_MAX bytes: large items lower the most elements
                                 (see HOW MANY ELEMENTS) */
    size_t item_align;        /* power of two (=0: natural for item_size, at most 16) */
    size_t initial;           /* places reserved at creation, growing mode (=0) */
    size_t max;               /* most live elements (=0: the pool's ceiling, 2^24 for items of
                                 up to 2^38 bytes, or what the buffer holds) */
    size_t chunk_items;       /* places added per growth (=0: capacity doubles, at least 64) */
    sp_overflow overflow;     /* what a full pool does on add (=SP_OVERFLOW_DROP) */
    sp_dense_move_fn on_move; /* after a remove moved an element (=NULL) */
    void *user;               /* passed to on_move */
    sp_allocator allocator;   /* (=C library) */
    sp_logger logger;         /* (=warnings and errors to stderr) */
    void *buffer;             /* fixed-memory mode: everything lives here (=NULL) */
    size_t buffer_size;       /* bytes at `buffer` */
} sp_dense_desc;

/* ---------------------------------------------------------------------------------------------
   Lifecycle
   ------------------------------------------------------------------------------------------ */

/* Creates an empty dense pool and reserves desc->initial places (growing mode) or lays itself
   out in desc->buffer (fixed mode).
   @param desc  the description; copied, so it may live on the stack
   @return the pool, or NULL (one logged line, nothing leaked) when desc is NULL or invalid
           (item_size 0, alignment not a power of two, an item_size or item_align of which not
           one element fits in PTRDIFF_MAX bytes, max or initial above the pool's element
           ceiling (see HOW MANY ELEMENTS), initial above max, only one of allocator
           alloc/free, a buffer too small for one element or for `initial`, GROW with a buffer,
           no pool tag free: 131,072 live dense pools and pools with handles) or the allocator
           fails. O(initial) for the reservation, no per-element work. */
SP_API sp_dense *sp_dense_create(const sp_dense_desc *desc);

/* Returns all memory (nothing in fixed mode). Elements are plain bytes: nothing runs on them.
   NULL is a no-op. O(slots): it reads every slot's life once, so that the next pool to take
   its tag starts above them (see POINTERS, INDICES AND HANDLES). */
SP_API void sp_dense_destroy(sp_dense *d);

/* Removes every element: each life ends (handles stop resolving), on_move does not run, the
   capacity stays. @return elements removed (0 for NULL). O(count). */
SP_API size_t sp_dense_clear(sp_dense *d);

/* Grows the capacity to at least n places now (clamped to max, or under GROW to the pool's
   element ceiling), so later adds do not allocate: the dense counterpart of sp_prewarm.
   @return the capacity afterwards (less than n when max, the ceiling, a fixed buffer or the
   allocator stopped it; 0 for NULL). O(capacity) when it grows. */
SP_API size_t sp_dense_reserve(sp_dense *d, size_t n);

/* Bytes a fixed buffer needs to hold n elements of desc (alignment slack and the name copy
   included), or 0 when desc is invalid, n is 0 or above the pool's element ceiling (see HOW
   MANY ELEMENTS: the size would pass PTRDIFF_MAX). O(1). */
SP_API size_t sp_dense_buffer_size(const sp_dense_desc *desc, size_t n);

/* The pool's name ("" when it has none; NULL for NULL). */
SP_API const char *sp_dense_name(const sp_dense *d);

/* ---------------------------------------------------------------------------------------------
   Add / Remove
   ------------------------------------------------------------------------------------------ */

/* Appends an element: a copy of item_size bytes at init, or zeroes when init is NULL. A full
   pool follows its overflow policy (see CAPACITY AND OVERFLOW).
   @return the element's address (valid until the next add, remove, clear or growth), or NULL
           when dropped, on allocator failure (logged) or for a NULL pool (logged). O(1),
           amortized O(1) when it grows by doubling. */
SP_API void *sp_dense_add(sp_dense *d, const void *init);

/* sp_dense_add returning a handle to the new element (the null handle where sp_dense_add
   returns NULL). O(1). */
SP_API sp_handle sp_dense_add_handle(sp_dense *d, const void *init);

/* Removes the element at index: its life ends, and the last element moves into the hole
   (on_move runs) unless index was the last.
   @return SP_ERR_INVALID (logged, nothing changed) for a NULL pool or index >= count. O(1). */
SP_API sp_result sp_dense_remove_at(sp_dense *d, size_t index);

/* Removes the element that starts at item (an address inside sp_dense_data). A pointer names a
   position, not an element: after a remove the same address holds the moved element, so
   removing through a kept pointer twice removes two elements. Use handles for identity.
   NULL is a no-op returning SP_OK.
   @return SP_ERR_FOREIGN for an address that is not the start of a place of this pool,
           SP_ERR_NOT_LEASED for a place past count; both logged, nothing changed. O(1). */
SP_API sp_result sp_dense_remove(sp_dense *d, void *item);

/* Removes the element the handle names, wherever it moved. The null handle is a no-op
   returning SP_OK.
   @return SP_ERR_NOT_LEASED for a handle whose life ended (double remove), SP_ERR_FOREIGN for
           a handle of another pool or a forged id; both logged, nothing changed. O(1). */
SP_API sp_result sp_dense_remove_handle(sp_dense *d, sp_handle handle);

/* ---------------------------------------------------------------------------------------------
   Iteration and lookup
   ------------------------------------------------------------------------------------------ */

/* The packed array: count elements of item_size bytes (stride = item_size rounded up to the
   alignment) at the returned address. NULL while nothing was ever reserved, or for NULL. The
   address changes when the array grows. O(1). */
SP_API void *sp_dense_data(const sp_dense *d);

/* Live elements (0 for NULL). O(1). */
SP_API size_t sp_dense_count(const sp_dense *d);

/* Element places reserved (0 for NULL). O(1). */
SP_API size_t sp_dense_capacity(const sp_dense *d);

/* Bytes from one element to the next in sp_dense_data (0 for NULL). O(1). */
SP_API size_t sp_dense_stride(const sp_dense *d);

/* The address of the element at index, or NULL when index >= count. O(1). */
SP_API void *sp_dense_at(const sp_dense *d, size_t index);

/* The index of the element that starts at item, or SIZE_MAX when item is not the start of a
   live element of this pool. O(1). */
SP_API size_t sp_dense_index_of(const sp_dense *d, const void *item);

/* A handle to the element at index, the null handle when index >= count. O(1). */
SP_API sp_handle sp_dense_handle_at(const sp_dense *d, size_t index);

/* The element's current address while the handle's life lasts; NULL after it was removed,
   reclaimed or cleared, and for the null handle, another pool's handle or a forged id. O(1). */
SP_API void *sp_dense_resolve(const sp_dense *d, sp_handle handle);

/* The element's current index while the handle's life lasts, SIZE_MAX otherwise. O(1). */
SP_API size_t sp_dense_resolve_index(const sp_dense *d, sp_handle handle);

/* ---------------------------------------------------------------------------------------------
   Stats
   ------------------------------------------------------------------------------------------ */

/* Fills *out as described under STATS above (zeroes it for a NULL pool). O(1). */
SP_API void sp_dense_stats_get(const sp_dense *d, sp_stats *out);

/* ---------------------------------------------------------------------------------------------
   Snapshot and restore (the rules of spawnpool.h's SNAPSHOT AND RESTORE, for a dense pool)
   ------------------------------------------------------------------------------------------ */

/* The bytes sp_dense_snapshot needs now, or 0 with a line (NULL, invalid io). O(1). */
SP_API size_t sp_dense_snapshot_size(const sp_dense *d, const sp_snapshot_io *io);
/* Writes the pool's state into buf: the live elements in their places (raw, or through io's
   save), the slot table (lives, the free list in its order, retired slots), the order of
   addition (RECLAIM), the counters. The pool does not change. SP_ERR_INVALID with a line for a
   NULL pool or buf, a buffer smaller than sp_dense_snapshot_size, invalid io, or a call from
   on_move or the logger. O(slots + count). */
SP_API sp_result sp_dense_snapshot(const sp_dense *d, void *buf, size_t size, const sp_snapshot_io *io);
/* A new dense pool made from desc with the saved state (desc->initial is ignored). It takes the
   saved pool tag back: the saved handles resolve, and the adds that follow take the same slots
   and places, with the same handles, as the saved pool's would have. NULL with a line and
   nothing allocated for a truncated, corrupt or foreign-version buffer, a desc that differs
   (item size, alignment, overflow, max, chunk_items, fixed buffer or not), io that differs, a
   fixed buffer holding fewer elements than the saved one's capacity, the saved tag held by a
   live pool, a refusing load, or allocator failure. on_move does not run. A dense pool has no
   dispose hook: when load refuses an element, what it made of the elements before it is not
   undone by the library (load's own bookkeeping must, as sp_dense_clear would leave it to
   you). O(slots + count). */
SP_API sp_dense *sp_dense_restore(const sp_dense_desc *desc, const void *buf, size_t size, const sp_snapshot_io *io);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* SPAWNPOOL_DENSE_H */
