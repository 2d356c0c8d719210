/* SPDX-License-Identifier: Zlib */
/* dense_add_remove.c -- elements come and go: an add appends (or, on a full pool, drops,
   reclaims the oldest under RECLAIM, or grows under GROW), a remove swaps the last element into
   the hole and tells on_move. These are the particle loop's hot paths, so the slot table's
   steps they take are inline (dense_internal.h); growing the arrays is dense.c's. */
#include "dense_internal.h"

#include <string.h>

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
        if (!sp__dense_grow_slots(d, want)) return DENSE_NO_MEMORY;
    }
    uint32_t slot = (uint32_t)d->slot_used++;
    d->slots[slot].life = d->life_first;
    d->slots[slot].index = dense_free_index(SP_DENSE_NONE); /* the caller makes it live */
    *out = slot;
    return DENSE_TAKEN;
}

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
        if (d->fixed || !sp__dense_grow(d, sp__dense_next_cap(d, ceiling))) return NULL;
        bool placed = dense_place(d, init, slot_out) != NULL;
        sp__dense_grow_warn(d); /* the add is complete: the logger sees a whole pool */
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
    SP__DENSE_ONE_THREAD(d, "sp_dense_add", void *, NULL, sp_dense_add(d, init));
    if (sp__dense_frozen(d, "sp_dense_add")) return NULL;
    uint32_t slot;
    return dense_add(d, init, &slot);
}

sp_handle sp_dense_add_handle(sp_dense *d, const void *init) {
    if (!d) {
        sp__null_pool("sp_dense_add_handle");
        return sp_handle_null();
    }
    SP__DENSE_ONE_THREAD(d, "sp_dense_add_handle", sp_handle, sp_handle_null(),
                         sp_dense_add_handle(d, init));
    if (sp__dense_frozen(d, "sp_dense_add_handle")) return sp_handle_null();
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
    SP__DENSE_ONE_THREAD(d, "sp_dense_remove_at", sp_result, SP_ERR_INVALID,
                         sp_dense_remove_at(d, index));
    if (sp__dense_frozen(d, "sp_dense_remove_at")) return SP_ERR_INVALID;
    if (index >= d->count) {
        sp__dense_log(d, SP__MSG_DENSE_BAD_INDEX, index, d->count);
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
    SP__DENSE_ONE_THREAD(d, "sp_dense_remove", sp_result, SP_ERR_INVALID, sp_dense_remove(d, item));
    if (sp__dense_frozen(d, "sp_dense_remove")) return SP_ERR_INVALID;
    if (!item) return SP_OK;
    uintptr_t p = (uintptr_t)item, base = (uintptr_t)d->items;
    if (!d->items || p < base || p - base >= d->cap * d->stride || (p - base) % d->stride != 0) {
        sp__dense_log(d, SP__MSG_DENSE_NOT_ELEMENT, item);
        return SP_ERR_FOREIGN;
    }
    size_t index = (size_t)(p - base) / d->stride;
    if (index >= d->count) {
        sp__dense_log(d, SP__MSG_DENSE_PAST_LIVE, item);
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
    SP__DENSE_ONE_THREAD(d, "sp_dense_remove_handle", sp_result, SP_ERR_INVALID,
                         sp_dense_remove_handle(d, handle));
    if (sp__dense_frozen(d, "sp_dense_remove_handle")) return SP_ERR_INVALID;
    uint32_t slot = 0;
    switch (dense_lookup_handle(d, handle, &slot)) {
    case DENSE_NULL: return SP_OK;
    case DENSE_STALE:
        sp__dense_log(d, SP__MSG_DENSE_EXPIRED, (unsigned long long)handle.id);
        return SP_ERR_NOT_LEASED;
    case DENSE_FOREIGN:
        sp__dense_log(d, SP__MSG_DENSE_FOREIGN, (unsigned long long)handle.id);
        return SP_ERR_FOREIGN;
    case DENSE_FORGED:
        sp__dense_log(d, SP__MSG_DENSE_FORGED, (unsigned long long)handle.id);
        return SP_ERR_FOREIGN;
    case DENSE_LIVE: break;
    }
    dense_erase(d, d->slots[slot].index);
    return SP_OK;
}
