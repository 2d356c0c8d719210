/* SPDX-License-Identifier: Zlib */
/* sp_dense: a packed array of small structs whose handles survive swap-removes.

   Arrays sized to the capacity (growing mode: two allocations, the items with their
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

   This file is independent of src/pool.c: sp_dense shares spawnpool.h's types and conventions,
   and src/support.c's tag table (so no handle resolves in another live pool, dense or not), the
   C library allocator and the default logger. */
#include "spawnpool_dense.h"
#include "sp_internal.h" /* pool tags, default allocator and logger, shared with sp_pool */

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef SP_ASSERT
#  define SP_ASSERT(c) assert(c)
#endif

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

typedef struct sp_dense_slot {
    uint32_t index; /* live: position in items; free: DENSE_FREE | next free (retired: none) */
    uint32_t life;  /* live: current life; free: next life; retired: SP_DENSE_LIFE_RETIRED */
} sp_dense_slot;

typedef struct sp_dense_link {
    uint32_t prev, next; /* order of addition, SP_DENSE_NONE at the ends */
} sp_dense_link;

static bool dense_slot_live(const sp_dense_slot *s) { return (s->index & DENSE_FREE) == 0; }

/* A free slot's index field, pointing at the next free slot (SP_DENSE_NONE: none). */
static uint32_t dense_free_index(uint32_t next) { return DENSE_FREE | (next & DENSE_NEXT_MASK); }

static uint32_t dense_free_next(const sp_dense_slot *s) {
    uint32_t next = s->index & DENSE_NEXT_MASK;
    return next == DENSE_NEXT_MASK ? SP_DENSE_NONE : next;
}

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
    char name[];         /* copied from the desc, NUL-terminated */
};

/* ---------------------------------------------------------------------------------------------
   Logging and the default allocator
   ------------------------------------------------------------------------------------------ */

/* A pool's own line, from the library's table. Its logger is a callback of the pool, like
   on_move: while it runs the pool is busy, so that destroying or clearing it from there is
   refused. Pools are never const objects, only const views of them. */
static void dense_log(const sp_dense *d, sp__msg msg, ...) {
    sp_dense *w = (sp_dense *)(uintptr_t)d;
    va_list ap;
    va_start(ap, msg);
    w->busy++;
    sp__vlog_to(&d->logger, d->name, -1, msg, ap);
    w->busy--;
    va_end(ap);
}

/* One line for destroy or clear called from one of the pool's callbacks; true when refused. */
static bool dense_refused_busy(sp_dense *d, const char *call) {
    if (d->busy == 0) return false;
    dense_log(d, SP__MSG_DENSE_BUSY, call);
    return true;
}

/* ---------------------------------------------------------------------------------------------
   Sizes and layout
   ------------------------------------------------------------------------------------------ */

static size_t dense_align_up(size_t n, size_t align) { return (n + align - 1) & ~(align - 1); }

static bool dense_is_pow2(size_t n) { return n != 0 && (n & (n - 1)) == 0; }

static size_t dense_name_len(const char *name) {
    if (!name) return 0;
    size_t n = strlen(name);
    return n > SP_DENSE_NAME_MAX ? SP_DENSE_NAME_MAX : n;
}

/* What a validated descriptor boils down to. */
typedef struct dense_shape {
    size_t item_size, align, stride, name_len, max;
    size_t slot_bytes; /* per slot: the entry, plus the order links under RECLAIM */
    size_t head;       /* a fixed layout's bytes besides the elements' own, worst case */
    size_t per_item;   /* bytes per element: the stride, its back-pointer and its slot */
    size_t items_max;  /* the most elements: 2^24, or fewer when they would not fit in bytes_max */
} dense_shape;

/* The largest block the pool lays out or asks for: PTRDIFF_MAX, the largest object C can index
   (malloc refuses more), 2 GiB - 1 with a 32-bit size_t. Every size is computed within it. */
#define SP_DENSE_BYTES_MAX ((size_t)PTRDIFF_MAX)

/* A fixed layout's worst-case bytes besides the elements and the item alignment's slack: the
   header, the name, and the slack to align the header, the back-pointers and the slots. */
static size_t dense_fixed_head(size_t name_len) {
    return (_Alignof(sp_dense) - 1) + sizeof(sp_dense) + name_len + 1 + (_Alignof(uint32_t) - 1) +
           (_Alignof(sp_dense_slot) - 1);
}

/* The slot table holds at most 2^24 entries whatever the item size: it never comes near the
   largest block, even with a 32-bit size_t. */
_Static_assert(SP_DENSE_MAX_ITEMS * (sizeof(sp_dense_slot) + sizeof(sp_dense_link)) <= 0x7FFFFFFFu,
               "the slot table fits in 2 GiB");

/* The most elements of this shape a dense pool holds: 2^24 (the handles' slot bits), or fewer
   when n * per_item + head would pass bytes_max. Every byte count of the pool (the fixed
   layout, the items block, the slot table) is at most that sum for n elements, so no size
   computed for n <= items_max wraps. */
static size_t dense_items_max(size_t head, size_t per_item, size_t bytes_max) {
    size_t n = (bytes_max - head) / per_item;
    return n > SP_DENSE_MAX_ITEMS ? SP_DENSE_MAX_ITEMS : n;
}

/* Checks the parts of a descriptor that do not depend on a buffer, with bytes_max the largest
   block (SP_DENSE_BYTES_MAX; a parameter so that the tests can ask what a 32-bit size_t
   allows). On failure why says what is wrong, for the log line. */
static bool dense_shape_of(const sp_dense_desc *desc, size_t bytes_max, dense_shape *out,
                           char *why, size_t why_size) {
    if (desc->item_size == 0) { snprintf(why, why_size, "item_size is 0"); return false; }
    size_t align = desc->item_align;
    if (align == 0) {
        align = desc->item_size & (~desc->item_size + 1); /* lowest set bit: natural alignment */
        if (align > 16) align = 16;
    }
    if (!dense_is_pow2(align)) { snprintf(why, why_size, "item_align is not a power of two"); return false; }
    size_t name_len = dense_name_len(desc->name);
    size_t fixed = dense_fixed_head(name_len);
    if (fixed >= bytes_max || align - 1 > bytes_max - fixed - 1) {
        snprintf(why, why_size, "item_align is too large (%zu: no layout fits in %zu bytes, the largest block)",
                 align, bytes_max);
        return false;
    }
    size_t head = fixed + (align - 1); /* < bytes_max */
    size_t room = bytes_max - head;    /* for the elements */
    size_t slot_bytes = sizeof(sp_dense_slot) +
                        (desc->overflow == SP_OVERFLOW_RECLAIM ? sizeof(sp_dense_link) : 0);
    size_t beside = sizeof(uint32_t) + slot_bytes; /* per element, besides the item */
    /* item_size <= room first, so that rounding it up to the alignment cannot wrap */
    size_t stride = desc->item_size <= room ? dense_align_up(desc->item_size, align) : SIZE_MAX;
    if (stride > room || room - stride < beside) {
        snprintf(why, why_size, "item_size is too large (%zu: not one element fits in %zu bytes, the largest block)",
                 desc->item_size, bytes_max);
        return false;
    }
    size_t items_max = dense_items_max(head, stride + beside, bytes_max);
    if (desc->max > items_max) {
        snprintf(why, why_size, "max is %zu, above %zu, the most elements a dense pool of stride %zu holds",
                 desc->max, items_max, stride);
        return false;
    }
    out->item_size = desc->item_size;
    out->align = align;
    out->stride = stride;
    out->name_len = name_len;
    out->max = desc->max;
    out->slot_bytes = slot_bytes;
    out->head = head;
    out->per_item = stride + beside;
    out->items_max = items_max;
    return true;
}

/* Where each part sits in a fixed buffer that starts at address base, for n <= items_max
   elements. Offsets are relative to base but aligned as absolute addresses, since the caller's
   buffer may be aligned to anything; they are computed from base's low bits, never as base +
   offset, so nothing wraps whatever the address. */
typedef struct dense_layout {
    size_t self, items, back, slots, end;
} dense_layout;

/* The padding that aligns base + off to align. */
static size_t dense_pad(uintptr_t base, size_t off, size_t align) {
    size_t mask = align - 1;
    size_t misaligned = ((size_t)(base & (uintptr_t)mask) + (off & mask)) & mask;
    return (align - misaligned) & mask;
}

static dense_layout dense_layout_at(uintptr_t base, const dense_shape *sh, size_t n) {
    SP_ASSERT(n <= sh->items_max);
    dense_layout l;
    l.self = dense_pad(base, 0, _Alignof(sp_dense));
    size_t self_end = l.self + sizeof(sp_dense) + sh->name_len + 1;
    l.items = self_end + dense_pad(base, self_end, sh->align);
    size_t items_end = l.items + n * sh->stride;
    l.back = items_end + dense_pad(base, items_end, _Alignof(uint32_t));
    size_t back_end = l.back + n * sizeof(uint32_t);
    l.slots = back_end + dense_pad(base, back_end, _Alignof(sp_dense_slot));
    l.end = l.slots + n * sh->slot_bytes;
    return l;
}

/* An upper bound on dense_layout_at(base, sh, n).end over every base; at most bytes_max for
   n <= items_max. */
static size_t dense_layout_worst(const dense_shape *sh, size_t n) {
    SP_ASSERT(n <= sh->items_max);
    return sh->head + n * sh->per_item;
}

size_t sp_dense_buffer_size(const sp_dense_desc *desc, size_t n) {
    dense_shape sh;
    char why[160];
    if (!desc || n == 0 || !dense_shape_of(desc, SP_DENSE_BYTES_MAX, &sh, why, sizeof why) ||
        n > sh.items_max)
        return 0;
    return dense_layout_worst(&sh, n);
}

/* Bytes of the growing-mode block that holds n items and their back-pointers. */
static size_t dense_items_block(const sp_dense *d, size_t n) {
    return dense_align_up(n * d->stride, _Alignof(uint32_t)) + n * sizeof(uint32_t);
}

static size_t dense_items_block_align(const sp_dense *d) {
    return d->align > _Alignof(uint32_t) ? d->align : _Alignof(uint32_t);
}

/* ---------------------------------------------------------------------------------------------
   Slots: lives, the free list and the order list
   ------------------------------------------------------------------------------------------ */

static sp_handle dense_handle(const sp_dense *d, uint32_t slot) {
    sp_handle h;
    h.id = ((uint64_t)d->slots[slot].life << (SP_DENSE_SLOT_BITS + SP_DENSE_TAG_BITS)) |
           ((uint64_t)d->tag << SP_DENSE_SLOT_BITS) | (uint64_t)slot;
    return h;
}

typedef enum dense_lookup {
    DENSE_LIVE,
    DENSE_NULL,
    DENSE_STALE,   /* a life of this pool that ended */
    DENSE_FOREIGN, /* another pool's: another tag, or a life below this pool's first */
    DENSE_FORGED   /* this pool's tag, but a slot or a life it never handed out */
} dense_lookup;

/* Why a handle that is not the null handle did not resolve. */
static dense_lookup dense_lookup_refused(const sp_dense *d, uint32_t slot, uint32_t tag, uint32_t life) {
    if (tag != d->tag || (life != 0 && life < d->life_first)) return DENSE_FOREIGN;
    if (slot >= d->slot_used || life == 0) return DENSE_FORGED;
    /* live or free: lives below s->life were issued; retired: every life up to the max was */
    return life < d->slots[slot].life ? DENSE_STALE : DENSE_FORGED;
}

/* Classifies a handle; *slot_out is set for DENSE_LIVE. The live case first, in as few steps as
   before lives started above 1: a slot's life is never below the pool's first, so a match
   needs no other check. */
static dense_lookup dense_lookup_handle(const sp_dense *d, sp_handle h, uint32_t *slot_out) {
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
    return dense_lookup_refused(d, slot, tag, life);
}

/* A lookup's warning for another pool's handle or a forged one (a stale handle is the normal
   case and silent): the first of each kind, then each count that reaches a power of two, with
   the count. The counters are bookkeeping: bumping them from a const lookup is harmless (a pool
   is used by one thread at a time, and pools are never const objects). */
static void dense_lookup_warn(const sp_dense *d, dense_lookup kind, sp_handle h) {
    sp_dense *w = (sp_dense *)(uintptr_t)d;
    uint64_t n = kind == DENSE_FOREIGN ? ++w->counters.foreign_handles : ++w->counters.forged_handles;
    if ((n & (n - 1u)) != 0) return;
    if (kind == DENSE_FOREIGN)
        dense_log(d, SP__MSG_FOREIGN_HANDLE,
                  (unsigned long long)h.id, (unsigned long long)n);
    else
        dense_log(d, SP__MSG_FORGED_HANDLE,
                  (unsigned long long)h.id, (unsigned long long)n);
}

static void dense_order_unlink(sp_dense *d, uint32_t slot) {
    if (!d->links) return;
    sp_dense_link *l = &d->links[slot];
    if (l->prev != SP_DENSE_NONE) d->links[l->prev].next = l->next;
    else d->oldest = l->next;
    if (l->next != SP_DENSE_NONE) d->links[l->next].prev = l->prev;
    else d->newest = l->prev;
}

static void dense_order_append(sp_dense *d, uint32_t slot) {
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
static void dense_slot_end_life(sp_dense *d, uint32_t slot) {
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

/* Grows the slot table to at least want entries (growing mode only). Cold: only the first
   reservation and slot retirements get here. */
static bool dense_grow_slots(sp_dense *d, size_t want) {
    if (want <= d->slot_cap) return true;
    if (d->fixed || want > SP_DENSE_MAX_ITEMS) return false;
    bool reclaim = d->overflow == SP_OVERFLOW_RECLAIM;
    size_t bytes = want * (sizeof(sp_dense_slot) + (reclaim ? sizeof(sp_dense_link) : 0));
    sp_dense_slot *slots =
        (sp_dense_slot *)sp__alloc(&d->allocator, bytes, _Alignof(sp_dense_slot));
    if (!slots) {
        dense_log(d, SP__MSG_DENSE_NOMEM_SLOTS, want);
        return false;
    }
    sp_dense_link *links = reclaim ? (sp_dense_link *)(void *)(slots + want) : NULL;
    if (d->slot_used) {
        memcpy(slots, d->slots, d->slot_used * sizeof(sp_dense_slot));
        if (links) memcpy(links, d->links, d->slot_used * sizeof(sp_dense_link));
    }
    if (d->slots) d->allocator.free(d->slots, d->slots_bytes, d->allocator.user);
    d->slots = slots;
    d->links = links;
    d->slots_bytes = bytes;
    d->slot_cap = want;
    return true;
}

typedef enum dense_take { DENSE_TAKEN, DENSE_NO_SLOT, DENSE_NO_MEMORY } dense_take;

/* A free slot for a new element, its life already set to the one to issue. */
static dense_take dense_slot_take(sp_dense *d, uint32_t *out) {
    if (d->free_slot != SP_DENSE_NONE) {
        *out = d->free_slot;
        d->free_slot = dense_free_next(&d->slots[*out]);
        return DENSE_TAKEN;
    }
    if (d->slot_used == d->slot_cap) {
        /* Every slot is live or retired: only retirements get here once the table matches the
           capacity, so growing by the capacity again is plenty. */
        if (d->fixed || d->slot_cap >= SP_DENSE_MAX_ITEMS) return DENSE_NO_SLOT;
        size_t want = d->slot_cap * 2 < SP_DENSE_MIN_GROWTH ? SP_DENSE_MIN_GROWTH : d->slot_cap * 2;
        if (want > SP_DENSE_MAX_ITEMS) want = SP_DENSE_MAX_ITEMS;
        if (!dense_grow_slots(d, want)) return DENSE_NO_MEMORY;
    }
    uint32_t slot = (uint32_t)d->slot_used++;
    d->slots[slot].life = d->life_first;
    d->slots[slot].index = dense_free_index(SP_DENSE_NONE); /* the caller makes it live */
    *out = slot;
    return DENSE_TAKEN;
}

/* ---------------------------------------------------------------------------------------------
   Growth
   ------------------------------------------------------------------------------------------ */

/* Moves the elements into a block of new_cap places (and the slot table to at least as many
   entries), or changes nothing and logs when the allocator fails. Cold. */
static bool dense_grow(sp_dense *d, size_t new_cap) {
    SP_ASSERT(!d->fixed && new_cap > d->cap && new_cap <= d->items_max);
    size_t bytes = dense_items_block(d, new_cap);
    unsigned char *block =
        (unsigned char *)sp__alloc(&d->allocator, bytes, dense_items_block_align(d));
    if (!block) {
        dense_log(d, SP__MSG_DENSE_NOMEM_GROW, new_cap, bytes);
        return false;
    }
    /* Then the slot table; if that fails the new block goes back and nothing changed. */
    if (!dense_grow_slots(d, new_cap)) {
        d->allocator.free(block, bytes, d->allocator.user);
        return false;
    }
    uint32_t *back = (uint32_t *)(void *)(block + dense_align_up(new_cap * d->stride,
                                                                 _Alignof(uint32_t)));
    if (d->count) {
        memcpy(block, d->items, d->count * d->stride);
        memcpy(back, d->back, d->count * sizeof(uint32_t));
    }
    if (d->items) d->allocator.free(d->items, d->items_bytes, d->allocator.user);
    d->counters.created += new_cap - d->cap;
    if (new_cap > d->limit) d->counters.grown_past_max += new_cap - (d->cap > d->limit ? d->cap : d->limit);
    d->items = block;
    d->back = back;
    d->items_bytes = bytes;
    d->cap = new_cap;
    return true;
}

/* GROW's warning, when the count of places past max reaches 1, 2, 4, 8... (growing by a small
   chunk_items would otherwise log on nearly every add). Logged once the operation that grew is
   complete, so that the logger sees a whole pool. */
static void dense_grow_warn(sp_dense *d) {
    if (!sp__counters_grew(&d->counters, 0)) return;
    dense_log(d, SP__MSG_DENSE_GROWN, d->limit, d->cap, (unsigned long long)d->counters.grown_past_max);
}

/* The next capacity when an add finds the array full, within the ceiling the policy allows. */
static size_t dense_next_cap(const sp_dense *d, size_t ceiling) {
    size_t want = d->chunk_items ? d->cap + d->chunk_items
                                 : (d->cap < SP_DENSE_MIN_GROWTH / 2 ? SP_DENSE_MIN_GROWTH
                                                                     : d->cap * 2);
    return want > ceiling ? ceiling : want;
}

/* ---------------------------------------------------------------------------------------------
   Lifecycle
   ------------------------------------------------------------------------------------------ */

sp_dense *sp_dense_create(const sp_dense_desc *desc) {
    if (!desc) {
        sp__log_to(NULL, "", SP__MSG_NULL_DESC, "sp_dense_create");
        return NULL;
    }
    const char *name = desc->name ? desc->name : "";
    dense_shape sh;
    char why[160] = "";
    bool ok = dense_shape_of(desc, SP_DENSE_BYTES_MAX, &sh, why, sizeof why);
    if (ok && (unsigned)desc->overflow > (unsigned)SP_OVERFLOW_GROW)
        snprintf(why, sizeof why, "unknown overflow policy");
    else if (ok && (!desc->allocator.alloc) != (!desc->allocator.free))
        snprintf(why, sizeof why, "allocator needs both alloc and free");
    else if (ok && desc->initial > sh.items_max)
        snprintf(why, sizeof why, "initial is %zu, above %zu, the most elements a dense pool of stride %zu holds",
                 desc->initial, sh.items_max, sh.stride);
    else if (ok && desc->max && desc->initial > desc->max)
        snprintf(why, sizeof why, "initial is above max");
    else if (ok && desc->buffer && desc->overflow == SP_OVERFLOW_GROW)
        snprintf(why, sizeof why, "SP_OVERFLOW_GROW cannot grow a fixed buffer");
    else if (ok && !desc->buffer && desc->buffer_size)
        snprintf(why, sizeof why, "buffer_size without a buffer");
    if (!ok || why[0]) {
        sp__log_to(&desc->logger, name, SP__MSG_BAD_DESC, "sp_dense_create", why);
        return NULL;
    }

    /* Fixed mode: find how many elements fit at this very address. */
    size_t fit = 0;
    dense_layout lay = {0, 0, 0, 0, 0};
    if (desc->buffer) {
        fit = desc->buffer_size > sh.head ? (desc->buffer_size - sh.head) / sh.per_item + 1 : 0;
        if (fit > sh.items_max) fit = sh.items_max;
        while (fit > 0) {
            lay = dense_layout_at((uintptr_t)desc->buffer, &sh, fit);
            if (lay.end <= desc->buffer_size) break;
            fit--;
        }
        if (fit == 0)
            snprintf(why, sizeof why, "buffer_size %zu is too small for one element", desc->buffer_size);
        else if (desc->initial > fit)
            snprintf(why, sizeof why, "initial is %zu, the buffer holds %zu elements", desc->initial, fit);
        if (fit == 0 || desc->initial > fit) {
            sp__log_to(&desc->logger, name, SP__MSG_BAD_DESC, "sp_dense_create", why);
            return NULL;
        }
    }

    uint32_t life_first = 0, tag = 0;
    if (!sp__tag_acquire(&tag, &life_first)) {
        sp__log_to(&desc->logger, name, SP__MSG_NO_TAG, "sp_dense_create", sp__tags_retired());
        return NULL;
    }

    sp_allocator allocator = desc->allocator;
    if (!allocator.alloc) {
        allocator.alloc = sp__default_alloc;
        allocator.free = sp__default_free;
        allocator.user = NULL;
    }
    size_t self_bytes = sizeof(sp_dense) + sh.name_len + 1;
    sp_dense *d;
    if (desc->buffer) {
        d = (sp_dense *)(void *)((unsigned char *)desc->buffer + lay.self);
    } else {
        d = (sp_dense *)sp__alloc(&allocator, self_bytes, _Alignof(sp_dense));
        if (!d) {
            sp__log_to(&desc->logger, name, SP__MSG_NOMEM, "the pool");
            sp__tag_release(tag, 0);
            return NULL;
        }
    }
    memset(d, 0, sizeof *d);
    d->counters.grow_warn_at = 1;
    memcpy(d->name, name, sh.name_len);
    d->name[sh.name_len] = '\0';
    if (strlen(name) > sh.name_len)
        sp__log_to(&desc->logger, d->name, SP__MSG_NAME_CUT, sh.name_len, strlen(name), (size_t)SP_DENSE_NAME_MAX);
    d->item_size = sh.item_size;
    d->align = sh.align;
    d->stride = sh.stride;
    d->max = desc->max;
    d->items_max = sh.items_max;
    d->chunk_items = desc->chunk_items > sh.items_max ? sh.items_max : desc->chunk_items;
    d->overflow = desc->overflow;
    d->on_move = desc->on_move;
    d->user = desc->user;
    d->allocator = allocator;
    d->logger = desc->logger;
    d->tag = tag;
    d->life_first = life_first;
    d->free_slot = d->oldest = d->newest = SP_DENSE_NONE;
    d->self_bytes = self_bytes;
    d->limit = desc->max ? desc->max : sh.items_max;

    if (desc->buffer) {
        unsigned char *base = (unsigned char *)desc->buffer;
        d->fixed = true;
        d->items = base + lay.items;
        d->back = (uint32_t *)(void *)(base + lay.back);
        d->slots = (sp_dense_slot *)(void *)(base + lay.slots);
        if (d->overflow == SP_OVERFLOW_RECLAIM) d->links = (sp_dense_link *)(void *)(d->slots + fit);
        d->cap = d->slot_cap = fit;
        if (d->limit > fit) d->limit = fit;
        d->counters.created = fit;
        d->self_bytes = lay.end;
    } else if (desc->initial && !dense_grow(d, desc->initial)) {
        /* dense_grow logged and freed its own blocks; only the header is left */
        sp__tag_release(tag, 0);
        if (d->slots) allocator.free(d->slots, d->slots_bytes, allocator.user);
        allocator.free(d, self_bytes, allocator.user);
        return NULL;
    }
    return d;
}

/* The highest life any slot handed out (0: none): a live slot's current life, every life up to
   the last for a retired slot, and the lives below the next one for a free slot. The tag's next
   pool starts above it. O(slots used). */
static uint32_t dense_highest_life(const sp_dense *d) {
    uint32_t high = 0;
    for (size_t s = 0; s < d->slot_used; s++) {
        const sp_dense_slot *e = &d->slots[s];
        uint32_t issued = e->life == SP_DENSE_LIFE_RETIRED ? SP_DENSE_LIFE_MAX
                          : dense_slot_live(e)             ? e->life
                                                           : e->life - 1u;
        if (issued > high) high = issued;
    }
    return high;
}

void sp_dense_destroy(sp_dense *d) {
    if (!d || dense_refused_busy(d, "sp_dense_destroy")) return;
    sp__tag_release(d->tag, dense_highest_life(d));
    if (d->fixed) return;
    sp_allocator a = d->allocator;
    if (d->items) a.free(d->items, d->items_bytes, a.user);
    if (d->slots) a.free(d->slots, d->slots_bytes, a.user);
    a.free(d, d->self_bytes, a.user);
}

size_t sp_dense_clear(sp_dense *d) {
    if (!d) {
        sp__null_pool("sp_dense_clear");
        return 0;
    }
    if (dense_refused_busy(d, "sp_dense_clear")) return 0;
    size_t n = d->count;
    for (size_t i = 0; i < n; i++) dense_slot_end_life(d, d->back[i]);
    d->oldest = d->newest = SP_DENSE_NONE;
    d->count = 0;
    /* (their lives end as removals do: released is acquired - count) */
    return n;
}

size_t sp_dense_reserve(sp_dense *d, size_t n) {
    if (!d) {
        sp__null_pool("sp_dense_reserve");
        return 0;
    }
    size_t ceiling = d->overflow == SP_OVERFLOW_GROW ? d->items_max : d->limit;
    if (n > ceiling) n = ceiling;
    if (n > d->cap && !d->fixed && dense_grow(d, n)) dense_grow_warn(d);
    return d->cap;
}

const char *sp_dense_name(const sp_dense *d) { return d ? d->name : NULL; }

/* ---------------------------------------------------------------------------------------------
   Add / Remove
   ------------------------------------------------------------------------------------------ */

static void dense_fill(sp_dense *d, size_t index, const void *init) {
    void *dst = d->items + index * d->stride;
    if (init) memcpy(dst, init, d->item_size);
    else memset(dst, 0, d->item_size);
}

static void dense_erase(sp_dense *d, size_t index);
static void *dense_place(sp_dense *d, const void *init, uint32_t *slot_out);

/* True when no slot can be had for a new element: every slot of a table that cannot grow (fixed
   mode, or 2^24 slots) is live or retired. */
static bool dense_slots_exhausted(const sp_dense *d) {
    return d->free_slot == SP_DENSE_NONE && d->slot_used == d->slot_cap &&
           (d->fixed || d->slot_cap >= SP_DENSE_MAX_ITEMS);
}

/* RECLAIM on a full pool: the oldest element's life ends and the new one takes its place, so
   nothing moves. When the oldest is in its last life its slot retires and another slot is
   needed; when none can be had (a fixed buffer: its capacity shrinks by one for good), the
   retired element is removed like any other (the last element moves into its place, on_move
   runs) and the next oldest is reclaimed instead. Fails (nothing changed) only on allocator
   failure, and drops only when every slot has retired. */
static void *dense_reclaim(sp_dense *d, const void *init, uint32_t *slot_out) {
    for (;;) {
        uint32_t old = d->oldest;
        if (old == SP_DENSE_NONE) { /* every element was retired away */
            d->counters.dropped++;
            return NULL;
        }
        size_t index = d->slots[old].index;
        uint32_t slot = old;
        if (d->slots[old].life >= SP_DENSE_LIFE_MAX) {
            dense_take r = dense_slot_take(d, &slot);
            if (r == DENSE_NO_MEMORY) return NULL;
            if (r == DENSE_NO_SLOT) {
                dense_erase(d, index); /* retires the slot */
                d->counters.reclaimed++;
                continue;
            }
        }
        dense_order_unlink(d, old);
        if (slot == old) {
            d->slots[old].life++;
        } else {
            dense_slot_end_life(d, old); /* retires it */
            d->slots[slot].index = (uint32_t)index;
            d->back[index] = slot;
        }
        dense_order_append(d, slot);
        dense_fill(d, index, init);
        d->counters.reclaimed++;
        d->counters.acquired++;
        *slot_out = slot;
        return d->items + index * d->stride;
    }
}

/* The add path shared by sp_dense_add and sp_dense_add_handle. */
static void *dense_add(sp_dense *d, const void *init, uint32_t *slot_out) {
    if (d->count >= d->limit || dense_slots_exhausted(d)) {
        /* Full: at the limit, or (retired slots) without a slot for another element. */
        if (d->overflow == SP_OVERFLOW_RECLAIM && d->count > 0) return dense_reclaim(d, init, slot_out);
        if (d->count < d->limit || d->overflow != SP_OVERFLOW_GROW || d->count >= d->items_max) {
            d->counters.dropped++;
            return NULL;
        }
    }
    if (d->count == d->cap) {
        /* fixed mode: cap == limit, so only GROW (rejected with a buffer) could get here */
        size_t ceiling = d->count >= d->limit ? d->items_max : d->limit;
        if (d->fixed || !dense_grow(d, dense_next_cap(d, ceiling))) return NULL;
        bool placed = dense_place(d, init, slot_out) != NULL;
        dense_grow_warn(d); /* the add is complete: the logger sees a whole pool */
        if (!placed) return NULL;
        const sp_dense_slot *s = &d->slots[*slot_out]; /* (the logger may have moved it) */
        return dense_slot_live(s) ? d->items + (size_t)s->index * d->stride : NULL;
    }
    return dense_place(d, init, slot_out);
}

/* Places a new element at the end of an array with room for it. */
static void *dense_place(sp_dense *d, const void *init, uint32_t *slot_out) {
    uint32_t slot;
    dense_take r = dense_slot_take(d, &slot);
    if (r != DENSE_TAKEN) {
        if (r == DENSE_NO_SLOT) d->counters.dropped++;
        return NULL;
    }
    size_t index = d->count++;
    d->slots[slot].index = (uint32_t)index;
    d->back[index] = slot;
    dense_order_append(d, slot);
    dense_fill(d, index, init);
    d->counters.acquired++;
    if (d->count > d->peak) d->peak = d->count;
    *slot_out = slot;
    return d->items + index * d->stride;
}

void *sp_dense_add(sp_dense *d, const void *init) {
    if (!d) {
        sp__null_pool("sp_dense_add");
        return NULL;
    }
    uint32_t slot;
    return dense_add(d, init, &slot);
}

sp_handle sp_dense_add_handle(sp_dense *d, const void *init) {
    if (!d) {
        sp__null_pool("sp_dense_add_handle");
        return sp_handle_null();
    }
    uint32_t slot;
    if (!dense_add(d, init, &slot)) return sp_handle_null();
    return dense_handle(d, slot);
}

/* Swap-remove of a live index: the hot path of a particle update. */
static void dense_erase(sp_dense *d, size_t index) {
    uint32_t slot = d->back[index];
    dense_order_unlink(d, slot);
    dense_slot_end_life(d, slot);
    size_t last = --d->count;
    /* (a life ended: released is acquired - count) */
    if (index == last) return;
    unsigned char *dst = d->items + index * d->stride;
    memcpy(dst, d->items + last * d->stride, d->item_size);
    uint32_t moved = d->back[last];
    d->back[index] = moved;
    d->slots[moved].index = (uint32_t)index;
    if (d->on_move) {
        d->busy++; /* destroy and clear from on_move are refused */
        d->on_move(dst, last, index, d->user);
        d->busy--;
    }
}

sp_result sp_dense_remove_at(sp_dense *d, size_t index) {
    if (!d) {
        sp__null_pool("sp_dense_remove_at");
        return SP_ERR_INVALID;
    }
    if (index >= d->count) {
        dense_log(d, SP__MSG_DENSE_BAD_INDEX, index, d->count);
        return SP_ERR_INVALID;
    }
    dense_erase(d, index);
    return SP_OK;
}

sp_result sp_dense_remove(sp_dense *d, void *item) {
    if (!d) {
        sp__null_pool("sp_dense_remove");
        return SP_ERR_INVALID;
    }
    if (!item) return SP_OK;
    uintptr_t p = (uintptr_t)item, base = (uintptr_t)d->items;
    if (!d->items || p < base || p - base >= d->cap * d->stride || (p - base) % d->stride != 0) {
        dense_log(d, SP__MSG_DENSE_NOT_ELEMENT, item);
        return SP_ERR_FOREIGN;
    }
    size_t index = (size_t)(p - base) / d->stride;
    if (index >= d->count) {
        dense_log(d, SP__MSG_DENSE_PAST_LIVE, item);
        return SP_ERR_NOT_LEASED;
    }
    dense_erase(d, index);
    return SP_OK;
}

sp_result sp_dense_remove_handle(sp_dense *d, sp_handle handle) {
    if (!d) {
        sp__null_pool("sp_dense_remove_handle");
        return SP_ERR_INVALID;
    }
    uint32_t slot = 0;
    switch (dense_lookup_handle(d, handle, &slot)) {
    case DENSE_NULL: return SP_OK;
    case DENSE_STALE:
        dense_log(d, SP__MSG_DENSE_EXPIRED,
                  (unsigned long long)handle.id);
        return SP_ERR_NOT_LEASED;
    case DENSE_FOREIGN:
        dense_log(d, SP__MSG_DENSE_FOREIGN,
                  (unsigned long long)handle.id);
        return SP_ERR_FOREIGN;
    case DENSE_FORGED:
        dense_log(d, SP__MSG_DENSE_FORGED,
                  (unsigned long long)handle.id);
        return SP_ERR_FOREIGN;
    case DENSE_LIVE: break;
    }
    dense_erase(d, d->slots[slot].index);
    return SP_OK;
}

/* ---------------------------------------------------------------------------------------------
   Iteration and lookup
   ------------------------------------------------------------------------------------------ */

void *sp_dense_data(const sp_dense *d) { return d ? d->items : NULL; }
size_t sp_dense_count(const sp_dense *d) { return d ? d->count : 0; }
size_t sp_dense_capacity(const sp_dense *d) { return d ? d->cap : 0; }
size_t sp_dense_stride(const sp_dense *d) { return d ? d->stride : 0; }

void *sp_dense_at(const sp_dense *d, size_t index) {
    if (!d || index >= d->count) return NULL;
    return d->items + index * d->stride;
}

size_t sp_dense_index_of(const sp_dense *d, const void *item) {
    if (!d || !item || !d->items) return SIZE_MAX;
    uintptr_t p = (uintptr_t)item, base = (uintptr_t)d->items;
    if (p < base || p - base >= d->count * d->stride || (p - base) % d->stride != 0) return SIZE_MAX;
    return (size_t)(p - base) / d->stride;
}

sp_handle sp_dense_handle_at(const sp_dense *d, size_t index) {
    if (!d || index >= d->count) return sp_handle_null();
    return dense_handle(d, d->back[index]);
}

size_t sp_dense_resolve_index(const sp_dense *d, sp_handle handle) {
    uint32_t slot = 0;
    if (!d) return SIZE_MAX;
    dense_lookup kind = dense_lookup_handle(d, handle, &slot);
    if (SP__LIKELY(kind == DENSE_LIVE)) return d->slots[slot].index;
    if (kind == DENSE_FOREIGN || kind == DENSE_FORGED) dense_lookup_warn(d, kind, handle);
    return SIZE_MAX;
}

void *sp_dense_resolve(const sp_dense *d, sp_handle handle) {
    size_t index = sp_dense_resolve_index(d, handle);
    return index == SIZE_MAX ? NULL : d->items + index * d->stride;
}

/* ---------------------------------------------------------------------------------------------
   Stats
   ------------------------------------------------------------------------------------------ */

void sp_dense_stats_get(const sp_dense *d, sp_stats *out) {
    if (!out) return;
    memset(out, 0, sizeof *out);
    if (!d) return;
    out->size = d->cap;
    out->leased = d->count;
    out->free = d->cap - d->count;
    out->max = d->fixed ? d->limit : d->max; /* fixed mode: the cap the buffer sets, as sp_pool */
    out->peak_leased = d->peak;
    out->bytes = d->self_bytes + d->items_bytes + d->slots_bytes;
    sp__counters_to_stats(&d->counters, d->count, out);
}

/* ---------------------------------------------------------------------------------------------
   White-box hooks for tests/test_dense.c (not in the public header)
   ------------------------------------------------------------------------------------------ */

/* Checks every invariant of the three arrays. @return 0 when consistent, otherwise a number
   naming the first broken invariant. O(capacity). */
int sp__dense_check(const sp_dense *d) {
    if (d->count > d->cap || d->slot_used > d->slot_cap) return 1;
    if (d->cap > d->items_max || d->limit > d->items_max) return 14;
    for (size_t i = 0; i < d->count; i++) {
        uint32_t s = d->back[i];
        if (s >= d->slot_used || d->slots[s].index != i) return 2;
        if (d->slots[s].life < d->life_first || d->slots[s].life > SP_DENSE_LIFE_MAX) return 3;
    }
    size_t live = 0, freed = 0, retired = 0;
    for (size_t s = 0; s < d->slot_used; s++) {
        const sp_dense_slot *e = &d->slots[s];
        if (dense_slot_live(e)) {
            if (e->index >= d->count || d->back[e->index] != s) return 4;
            live++;
        } else if (e->life == SP_DENSE_LIFE_RETIRED) {
            retired++;
        }
    }
    if (live != d->count || retired != d->retired) return 5;
    if ((d->links != NULL) != (d->overflow == SP_OVERFLOW_RECLAIM && d->slot_cap > 0)) return 13;
    if (d->links) {
        uint32_t prev = SP_DENSE_NONE;
        size_t order = 0;
        for (uint32_t s = d->oldest; s != SP_DENSE_NONE; s = d->links[s].next) {
            if (s >= d->slot_used || !dense_slot_live(&d->slots[s])) return 6;
            if (d->links[s].prev != prev || ++order > d->count) return 7;
            prev = s;
        }
        if (order != d->count || d->newest != prev) return 8;
    } else if (d->oldest != SP_DENSE_NONE || d->newest != SP_DENSE_NONE) {
        return 12; /* DROP and GROW keep no order list */
    }
    for (uint32_t s = d->free_slot; s != SP_DENSE_NONE; s = dense_free_next(&d->slots[s])) {
        if (s >= d->slot_used || dense_slot_live(&d->slots[s])) return 9;
        if (d->slots[s].life > SP_DENSE_LIFE_MAX || ++freed > d->slot_used) return 10;
    }
    if (live + freed + retired != d->slot_used) return 11;
    return 0;
}

/* Sets the life counter of the live element at index, so tests can reach retirement without
   2^28 removes. */
void sp__dense_set_life(sp_dense *d, size_t index, uint32_t life) {
    SP_ASSERT(index < d->count && life >= 1 && life <= SP_DENSE_LIFE_MAX);
    d->slots[d->back[index]].life = life;
}

/* The most elements a dense pool of desc holds when the largest block is bytes_max bytes (0:
   desc is refused), so that tests can check the limits a 32-bit size_t gives (bytes_max
   2^31 - 1) from a 64-bit build. */
size_t sp__dense_items_max(const sp_dense_desc *desc, size_t bytes_max) {
    dense_shape sh;
    char why[160];
    return dense_shape_of(desc, bytes_max, &sh, why, sizeof why) ? sh.items_max : 0;
}
