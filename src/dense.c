/* SPDX-License-Identifier: Zlib */
/* dense.c -- sp_dense's lifecycle and capacity: create (checking the descriptor, carving a
   fixed buffer or reserving the first elements), destroy, clear, reserve, and the growth that
   add and reserve share: the items block, the slot table and GROW's warning. It owns the pool's
   memory: the other files of sp_dense (see dense_internal.h) change what is in the arrays,
   never their size. The pool's log lines go out from here too. */
#include "dense_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------------
   Logging
   ------------------------------------------------------------------------------------------ */

/* Pools are never const objects, only const views of them: a const query's line may count the
   logger as running. */
void sp__dense_log(const sp_dense *d, sp__msg msg, ...) {
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
    sp__dense_log(d, SP__MSG_DENSE_BUSY, call);
    return true;
}

/* ---------------------------------------------------------------------------------------------
   Lifecycle
   ------------------------------------------------------------------------------------------ */

/* Creation; tag NULL: the pool takes a tag of its own, else this one, already taken, with
   life_first (a restore's: sp__dense_create_tagged), released again if creation fails. */
static sp_dense *dense_create(const sp_dense_desc *desc, const uint32_t *given_tag, uint32_t given_life) {
    if (!desc) {
        sp__log_to(NULL, "", SP__MSG_NULL_DESC, "sp_dense_create");
        return NULL;
    }
    const char *name = desc->name ? desc->name : "";
    dense_shape sh;
    char why[160] = "";
    bool ok = sp__dense_shape_of(desc, SP_DENSE_BYTES_MAX, &sh, why, sizeof why);
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
        if (given_tag) sp__tag_release(*given_tag, 0);
        return NULL;
    }

    /* Fixed mode: find how many elements fit at this very address. */
    size_t fit = 0;
    dense_layout lay = {0, 0, 0, 0, 0};
    if (desc->buffer) {
        fit = desc->buffer_size > sh.head ? (desc->buffer_size - sh.head) / sh.per_item + 1 : 0;
        if (fit > sh.items_max) fit = sh.items_max;
        while (fit > 0) {
            lay = sp__dense_layout_at((uintptr_t)desc->buffer, &sh, fit);
            if (lay.end <= desc->buffer_size) break;
            fit--;
        }
        if (fit == 0)
            snprintf(why, sizeof why, "buffer_size %zu is too small for one element", desc->buffer_size);
        else if (desc->initial > fit)
            snprintf(why, sizeof why, "initial is %zu, the buffer holds %zu elements", desc->initial, fit);
        if (fit == 0 || desc->initial > fit) {
            sp__log_to(&desc->logger, name, SP__MSG_BAD_DESC, "sp_dense_create", why);
            if (given_tag) sp__tag_release(*given_tag, 0);
            return NULL;
        }
    }

    uint32_t life_first = given_life, tag = given_tag ? *given_tag : 0u;
    if (!given_tag && !sp__tag_acquire(&tag, &life_first)) {
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
#if SP_DEBUG
    sp__one_thread_init(&d->one);
#endif
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
    sp__tag_holder_set(tag, d, true);
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
    } else if (desc->initial && !sp__dense_grow(d, desc->initial)) {
        /* dense_grow logged and freed its own blocks; only the header is left */
        sp__tag_release(tag, 0);
        if (d->slots) allocator.free(d->slots, d->slots_bytes, allocator.user);
        allocator.free(d, self_bytes, allocator.user);
        return NULL;
    }
    return d;
}

sp_dense *sp_dense_create(const sp_dense_desc *desc) { return dense_create(desc, NULL, 0); }

sp_dense *sp__dense_create_tagged(const sp_dense_desc *desc, uint32_t tag, uint32_t life_first) {
    return dense_create(desc, &tag, life_first);
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
    if (!d) return;
#if SP_DEBUG
    /* a check, not an entry: the pool is gone when the call ends */
    int in = dense_dbg_enter(d, "sp_dense_destroy");
    if (in < 0) return;
    if (in > 0) dense_dbg_leave(d);
#endif
    if (dense_refused_busy(d, "sp_dense_destroy")) return;
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
    SP__DENSE_ONE_THREAD(d, "sp_dense_clear", size_t, 0, sp_dense_clear(d));
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
    SP__DENSE_ONE_THREAD(d, "sp_dense_reserve", size_t, 0, sp_dense_reserve(d, n));
    if (sp__dense_frozen(d, "sp_dense_reserve")) return 0;
    size_t ceiling = d->overflow == SP_OVERFLOW_GROW ? d->items_max : d->limit;
    if (n > ceiling) n = ceiling;
    if (n > d->cap && !d->fixed && sp__dense_grow(d, n)) sp__dense_grow_warn(d);
    return d->cap;
}

const char *sp_dense_name(const sp_dense *d) { return d ? d->name : NULL; }

/* ---------------------------------------------------------------------------------------------
   Capacity: the items block and the slot table
   ------------------------------------------------------------------------------------------ */

/* Bytes of the growing-mode block that holds n items and their back-pointers. */
static size_t dense_items_block(const sp_dense *d, size_t n) {
    return dense_align_up(n * d->stride, _Alignof(uint32_t)) + n * sizeof(uint32_t);
}

static size_t dense_items_block_align(const sp_dense *d) {
    return d->align > _Alignof(uint32_t) ? d->align : _Alignof(uint32_t);
}

/* Grows the slot table to at least want entries (growing mode only). Cold: only the first
   reservation and slot retirements get here. */
bool sp__dense_grow_slots(sp_dense *d, size_t want) {
    if (want <= d->slot_cap) return true;
    if (d->fixed || want > SP_DENSE_MAX_ITEMS) return false;
    bool reclaim = d->overflow == SP_OVERFLOW_RECLAIM;
    size_t bytes = want * (sizeof(sp_dense_slot) + (reclaim ? sizeof(sp_dense_link) : 0));
    sp_dense_slot *slots =
        (sp_dense_slot *)sp__alloc(&d->allocator, bytes, _Alignof(sp_dense_slot));
    if (!slots) {
        sp__dense_log(d, SP__MSG_DENSE_NOMEM_SLOTS, want);
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

/* Moves the elements into a block of new_cap places (and the slot table to at least as many
   entries), or changes nothing and logs when the allocator fails. Cold. */
bool sp__dense_grow(sp_dense *d, size_t new_cap) {
    SP_ASSERT(!d->fixed && new_cap > d->cap && new_cap <= d->items_max);
    size_t bytes = dense_items_block(d, new_cap);
    unsigned char *block =
        (unsigned char *)sp__alloc(&d->allocator, bytes, dense_items_block_align(d));
    if (!block) {
        sp__dense_log(d, SP__MSG_DENSE_NOMEM_GROW, new_cap, bytes);
        return false;
    }
    /* Then the slot table; if that fails the new block goes back and nothing changed. */
    if (!sp__dense_grow_slots(d, new_cap)) {
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
void sp__dense_grow_warn(sp_dense *d) {
    if (!sp__counters_grew(&d->counters, 0)) return;
    sp__dense_log(d, SP__MSG_DENSE_GROWN, d->limit, d->cap, (unsigned long long)d->counters.grown_past_max);
}

/* The next capacity when an add finds the array full, within the ceiling the policy allows. */
size_t sp__dense_next_cap(const sp_dense *d, size_t ceiling) {
    size_t want = d->chunk_items ? d->cap + d->chunk_items
                                 : (d->cap < SP_DENSE_MIN_GROWTH / 2 ? SP_DENSE_MIN_GROWTH
                                                                     : d->cap * 2);
    return want > ceiling ? ceiling : want;
}
