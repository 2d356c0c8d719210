/* SPDX-License-Identifier: Zlib */
/* dense_internal.h -- what the files of sp_dense share: the pool's state, the slot table's small
   operations that the add, remove and lookup paths inline, and the few functions one file calls
   in another. The files, in the order they depend on each other:

     dense_layout.c      what a descriptor boils down to (sizes, the most elements) and where
                         each part sits in a fixed buffer: arithmetic, no pool
     dense.c             lifecycle and capacity: create, destroy, clear, reserve, growth of the
                         arrays and the slot table, the pool's log lines
     dense_add_remove.c  add (DROP, RECLAIM, GROW) and the swap-remove
     dense_lookup.c      iteration, handle lookups, stats and the white-box checks

   The arrays, sized to the capacity (growing mode: two allocations, the items with their
   back-pointers in one block and the slot table with its links in another; fixed mode:
   everything carved out of the caller's buffer, the pool header included):

     items[i]   the elements, packed: 0..count-1 are live
     back[i]    the slot that owns items[i], so a swap-remove can repoint the moved element's
                slot in O(1)
     slots[s]   {index, life}, 8 bytes: where slot s's element is now and the life its handles
                must carry. A free slot has DENSE_FREE set in `index` and the next free slot in
                the low bits (the free list costs no extra memory).
     links[s]   {prev, next}: a doubly linked list over live slots in order of addition, for
                RECLAIM-oldest. Only RECLAIM pools have it: for DROP and GROW it would cost
                8 bytes per element and two random cache misses per add and remove for nothing.

   A slot's `life` is the current life while it is live and the next life to issue while it is
   free, so every life ever issued is <= life: that lets a remove tell a stale handle (an older
   life) from a forged one (a life never issued). A slot whose life counter reaches
   SP_DENSE_LIFE_MAX is retired instead of wrapping: it leaves the free list for good.

   sp_dense is independent of sp_pool (src/pool_internal.h): it shares spawnpool.h's types and
   conventions, and sp_internal.h's handle bits, message table, tag table (so no handle resolves
   in another live pool, dense or not), C library allocator and default logger. */
#ifndef SP_DENSE_INTERNAL_H
#define SP_DENSE_INTERNAL_H

#include "spawnpool_dense.h"
#include "sp_internal.h" /* pool tags, default allocator and logger, shared with sp_pool */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SP_DENSE_SLOT_BITS SP__SLOT_BITS
#define SP_DENSE_TAG_BITS SP__TAG_BITS
#define SP_DENSE_MAX_ITEMS ((size_t)1 << SP_DENSE_SLOT_BITS)
#define SP_DENSE_LIFE_MAX SP__LIFE_MAX
#define SP_DENSE_LIFE_RETIRED (SP_DENSE_LIFE_MAX + 1u) /* above every life a handle can carry */
#define SP_DENSE_TAGS ((uint32_t)1 << SP_DENSE_TAG_BITS)
#define SP_DENSE_NONE UINT32_MAX
#define DENSE_FREE 0x80000000u       /* in slots[s].index: the slot is free or retired */
#define DENSE_NEXT_MASK 0x7FFFFFFFu  /* in a free slot's index: the next free slot */
#define SP_DENSE_NAME_MAX 255u    /* longer names are truncated: bounds sp_dense_buffer_size */
#define SP_DENSE_MIN_GROWTH 64u   /* first reservation when chunk_items is 0 */

/* The largest block the pool lays out or asks for: PTRDIFF_MAX, the largest object C can index
   (malloc refuses more), 2 GiB - 1 with a 32-bit size_t. Every size is computed within it. */
#define SP_DENSE_BYTES_MAX ((size_t)PTRDIFF_MAX)

typedef struct sp_dense_slot {
    uint32_t index; /* live: position in items; free: DENSE_FREE | next free (retired: none) */
    uint32_t life;  /* live: current life; free: next life; retired: SP_DENSE_LIFE_RETIRED */
} sp_dense_slot;

typedef struct sp_dense_link {
    uint32_t prev, next; /* order of addition, SP_DENSE_NONE at the ends */
} sp_dense_link;

struct sp_dense {
    unsigned char *items;
    uint32_t *back;
    sp_dense_slot *slots;
    sp_dense_link *links; /* RECLAIM only; right after slots[slot_cap] in the same block */
    size_t count;
    size_t cap;          /* element places in items/back */
    size_t limit;        /* live elements before the overflow policy applies */
    size_t items_max;    /* the most elements: 2^24, or fewer for large items (dense_items_max) */
    size_t max;          /* as given (0: unbounded), for stats */
    size_t stride;
    size_t item_size;
    size_t align;
    size_t chunk_items;
    size_t slot_cap;     /* entries in slots */
    size_t slot_used;    /* slots ever handed out: slots[slot_used..] were never used */
    size_t retired;
    uint32_t free_slot;  /* head of the free list */
    uint32_t oldest;     /* head of the order list */
    uint32_t newest;     /* tail of the order list */
    uint32_t tag;
    uint32_t life_first; /* every slot's first life: above all lives of earlier pools of its tag */
    sp_overflow overflow;
    sp_dense_move_fn on_move;
    void *user;
    sp_allocator allocator;
    sp_logger logger;
    bool fixed;
    size_t self_bytes;   /* this header and the name (fixed mode: the whole layout) */
    size_t items_bytes;  /* growing mode: the items+back block */
    size_t slots_bytes;  /* growing mode: the slot table and its links */
    size_t peak;
    sp__counters counters; /* (released: acquired - count, as every life ends in a removal or
                              a clear; grow_warn_at: the next grown_past_max that warns) */
    int busy;              /* callbacks of this pool running (on_move, the logger): destroy and
                              clear are refused while it is above 0 */
    uint8_t frozen;        /* a callback that reads the pool as it is runs (a snapshot's save
                              or load: SP__FROZEN_*): adds, removes and reserve are refused */
#if SP_DEBUG
    sp__one_thread one;    /* the thread inside a call now: two at once is misuse */
#endif
    char name[];         /* copied from the desc, NUL-terminated */
};

static inline size_t dense_align_up(size_t n, size_t align) { return (n + align - 1) & ~(align - 1); }

/* ---- logging (dense.c) -------------------------------------------------------------------- */

/* A pool's own line, from the library's table. Its logger is a callback of the pool, like
   on_move: while it runs the pool is busy, so that destroying or clearing it from there is
   refused. */
void sp__dense_log(const sp_dense *d, sp__msg msg, ...);

/* One line for an add, remove or reserve while a frozen callback runs; true when refused. */
static inline bool sp__dense_frozen(sp_dense *d, const char *call) {
    if (!d->frozen) return false;
    sp__dense_log(d, SP__MSG_FROZEN, call, sp__frozen_by(d->frozen));
    return true;
}

/* ---- one thread at a time (debug builds; the mechanism is sp_pool's, in debug.c) ----------
   At the top of the calls that change a pool, after their NULL check: a call while another
   thread is inside one is refused (`refused`: what the call returns for a NULL pool), with a
   line. The queries are not checked, as sp_pool's are not. */
#if SP_DEBUG
static inline int dense_dbg_enter(sp_dense *d, const char *call) {
    return sp__one_thread_enter(&d->one, &d->logger, d->name, SP__MSG_DENSE_TWO_THREADS, call);
}
static inline void dense_dbg_leave(sp_dense *d) { sp__one_thread_leave(&d->one); }
#  define SP__DENSE_ONE_THREAD(d, name, type, refused, again)                                     \
      SP__ONE_THREAD_CALL(dense_dbg_enter((d), (name)), dense_dbg_leave(d), type, refused, again)
#else
#  define SP__DENSE_ONE_THREAD(d, name, type, refused, again) ((void)0)
#endif

/* ---- sizes and layout (dense_layout.c) ---------------------------------------------------- */

/* What a validated descriptor boils down to. */
typedef struct dense_shape {
    size_t item_size, align, stride, name_len, max;
    size_t slot_bytes; /* per slot: the entry, plus the order links under RECLAIM */
    size_t head;       /* a fixed layout's bytes besides the elements' own, worst case */
    size_t per_item;   /* bytes per element: the stride, its back-pointer and its slot */
    size_t items_max;  /* the most elements: 2^24, or fewer when they would not fit in bytes_max */
} dense_shape;

/* Checks the parts of a descriptor that do not depend on a buffer, with bytes_max the largest
   block (SP_DENSE_BYTES_MAX; a parameter so that the tests can ask what a 32-bit size_t
   allows). On failure why says what is wrong, for the log line. */
bool sp__dense_shape_of(const sp_dense_desc *desc, size_t bytes_max, dense_shape *out, char *why,
                        size_t why_size);

/* Where each part sits in a fixed buffer that starts at address base, for n <= items_max
   elements. Offsets are relative to base but aligned as absolute addresses, since the caller's
   buffer may be aligned to anything; they are computed from base's low bits, never as base +
   offset, so nothing wraps whatever the address. */
typedef struct dense_layout {
    size_t self, items, back, slots, end;
} dense_layout;

dense_layout sp__dense_layout_at(uintptr_t base, const dense_shape *sh, size_t n);

/* ---- capacity (dense.c) ------------------------------------------------------------------- */

/* sp_dense_create with a tag the caller took (sp__tag_claim) and its first life: a restore's.
   The tag goes back if creation fails. */
sp_dense *sp__dense_create_tagged(const sp_dense_desc *desc, uint32_t tag, uint32_t life_first);

/* Moves the elements into a block of new_cap places (and the slot table to at least as many
   entries), or changes nothing and logs when the allocator fails. Growing mode only. */
bool sp__dense_grow(sp_dense *d, size_t new_cap);
/* Grows the slot table to at least want entries (growing mode only), or logs and fails. */
bool sp__dense_grow_slots(sp_dense *d, size_t want);
/* GROW's warning once an operation that grew past max is complete (rate-limited). */
void sp__dense_grow_warn(sp_dense *d);
/* The next capacity when an add finds the array full, within the ceiling the policy allows. */
size_t sp__dense_next_cap(const sp_dense *d, size_t ceiling);

/* ---- the slot table: lives, the free list, the order list and handles --------------------
   Inline: they are the add, remove and resolve paths' own steps. */

static inline bool dense_slot_live(const sp_dense_slot *s) { return (s->index & DENSE_FREE) == 0; }

/* A free slot's index field, pointing at the next free slot (SP_DENSE_NONE: none). */
static inline uint32_t dense_free_index(uint32_t next) { return DENSE_FREE | (next & DENSE_NEXT_MASK); }

static inline uint32_t dense_free_next(const sp_dense_slot *s) {
    uint32_t next = s->index & DENSE_NEXT_MASK;
    return next == DENSE_NEXT_MASK ? SP_DENSE_NONE : next;
}

static inline sp_handle dense_handle(const sp_dense *d, uint32_t slot) {
    sp_handle h;
    h.id = ((uint64_t)d->slots[slot].life << (SP_DENSE_SLOT_BITS + SP_DENSE_TAG_BITS)) |
           ((uint64_t)d->tag << SP_DENSE_SLOT_BITS) | (uint64_t)slot;
    return h;
}

static inline void dense_order_unlink(sp_dense *d, uint32_t slot) {
    if (!d->links) return;
    sp_dense_link *l = &d->links[slot];
    if (l->prev != SP_DENSE_NONE) d->links[l->prev].next = l->next;
    else d->oldest = l->next;
    if (l->next != SP_DENSE_NONE) d->links[l->next].prev = l->prev;
    else d->newest = l->prev;
}

static inline void dense_order_append(sp_dense *d, uint32_t slot) {
    if (!d->links) return;
    sp_dense_link *l = &d->links[slot];
    l->prev = d->newest;
    l->next = SP_DENSE_NONE;
    if (d->newest != SP_DENSE_NONE) d->links[d->newest].next = slot;
    else d->oldest = slot;
    d->newest = slot;
}

/* Ends the life of a slot that was just unlinked from the order list: the next life goes to the
   free list, or the slot retires when its counter is exhausted. */
static inline void dense_slot_end_life(sp_dense *d, uint32_t slot) {
    sp_dense_slot *s = &d->slots[slot];
    if (s->life >= SP_DENSE_LIFE_MAX) {
        s->index = dense_free_index(SP_DENSE_NONE);
        s->life = SP_DENSE_LIFE_RETIRED;
        d->retired++;
        return;
    }
    s->life++;
    s->index = dense_free_index(d->free_slot);
    d->free_slot = slot;
}

typedef enum dense_lookup {
    DENSE_LIVE,
    DENSE_NULL,
    DENSE_STALE,   /* a life of this pool that ended */
    DENSE_FOREIGN, /* another pool's: another tag, or a life below this pool's first */
    DENSE_FORGED   /* this pool's tag, but a slot or a life it never handed out */
} dense_lookup;

/* Why a handle that is not the null handle did not resolve (dense_lookup.c). */
dense_lookup sp__dense_lookup_refused(const sp_dense *d, uint32_t slot, uint32_t tag, uint32_t life);

/* Classifies a handle; *slot_out is set for DENSE_LIVE. The live case first, in as few steps as
   before lives started above 1: a slot's life is never below the pool's first, so a match
   needs no other check. */
static inline dense_lookup dense_lookup_handle(const sp_dense *d, sp_handle h, uint32_t *slot_out) {
    if (h.id == 0) return DENSE_NULL;
    uint32_t slot = (uint32_t)(h.id & (SP_DENSE_MAX_ITEMS - 1));
    uint32_t tag = (uint32_t)((h.id >> SP_DENSE_SLOT_BITS) & (SP_DENSE_TAGS - 1));
    uint32_t life = (uint32_t)(h.id >> (SP_DENSE_SLOT_BITS + SP_DENSE_TAG_BITS));
    if (tag == d->tag && slot < d->slot_used) {
        const sp_dense_slot *s = &d->slots[slot];
        if (life == s->life && dense_slot_live(s)) {
            *slot_out = slot;
            return DENSE_LIVE;
        }
    }
    return sp__dense_lookup_refused(d, slot, tag, life);
}

/* ---- white-box hooks for the tests (dense_lookup.c, dense_layout.c) ---------------------- */
int sp__dense_check(const sp_dense *d);
void sp__dense_set_life(sp_dense *d, size_t index, uint32_t life);
size_t sp__dense_items_max(const sp_dense_desc *desc, size_t bytes_max);

#endif
