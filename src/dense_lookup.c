/* SPDX-License-Identifier: Zlib */
/* dense_lookup.c -- reading an sp_dense: the packed array and its count, handle lookups (a
   handle's classification when it does not resolve, and the rate-limited warning for another
   pool's or a forged one), stats, and the white-box checks of the three arrays' invariants that
   tests/test_dense.c and the fuzzer run after every step. */
#include "dense_internal.h"

#include <string.h>

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

/* Why a handle that is not the null handle did not resolve. */
dense_lookup sp__dense_lookup_refused(const sp_dense *d, uint32_t slot, uint32_t tag, uint32_t life) {
    if (tag != d->tag || (life != 0 && life < d->life_first)) return DENSE_FOREIGN;
    if (slot >= d->slot_used || life == 0) return DENSE_FORGED;
    /* live or free: lives below s->life were issued; retired: every life up to the max was */
    return life < d->slots[slot].life ? DENSE_STALE : DENSE_FORGED;
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
        sp__dense_log(d, SP__MSG_FOREIGN_HANDLE, (unsigned long long)h.id, (unsigned long long)n);
    else
        sp__dense_log(d, SP__MSG_FORGED_HANDLE, (unsigned long long)h.id, (unsigned long long)n);
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
   2^23 removes (SP_DENSE_LIFE_MAX lives). */
void sp__dense_set_life(sp_dense *d, size_t index, uint32_t life) {
    SP_ASSERT(index < d->count && life >= 1 && life <= SP_DENSE_LIFE_MAX);
    d->slots[d->back[index]].life = life;
}
