/* SPDX-License-Identifier: Zlib */
/* memory.c -- where members live (the header's MEMORY): a pool's address ranges. The reserved
   range (address space for the pool's largest size, committed as it grows, decommitted by
   sp_trim above the highest built member), the fallback's geometric ranges where nothing can be
   reserved, the slots beside them, recognising a pointer outside the top range, and building,
   retiring and disposing members. See docs/design.md, "Memory layout" and "Where memory comes
   from". */
#include "sp_threads.h"

/* Where a range's members start: a cache line at least, so that members whose size is a
   multiple of 64 never straddle two lines. */
static size_t range_align(size_t item_align) { return item_align > SP__RANGE_ALIGN ? item_align : SP__RANGE_ALIGN; }

static void run_create(sp_pool *p, uint32_t idx, void *item) {
    SP__RUN_HOOK(p, idx, p->create(item, p->user));
}

static void run_dispose(sp_pool *p, uint32_t idx, void *item) {
    if (p->dispose) SP__RUN_HOOK(p, idx, p->dispose(item, p->user));
}

/* Copies the live range with the most members (the latest on ties: the fallback's largest, or
   the reserved range) into top_*, and sorts the live ranges by address for index_searched. */
void sp__ranges_index(sp_pool *p) {
    uint32_t n = 0, top = SP__NIL;
    for (uint32_t c = 0; c < p->range_count; c++) {
        const sp__range *r = &p->ranges[c];
        if (!r->items || r->count == 0) continue;
        if (top == SP__NIL || r->count >= p->ranges[top].count) top = c;
        uint32_t k = n++;
        while (k > 0 && (uintptr_t)p->ranges[p->by_address[k - 1u]].items > (uintptr_t)r->items) {
            p->by_address[k] = p->by_address[k - 1u];
            k--;
        }
        p->by_address[k] = (uint8_t)c;
    }
    p->top = top == SP__NIL ? 0u : top;
    if (SP__TS(p)) { /* the constant view stays (sp_pool): publish the ranges instead */
        sp__ts_publish(p);
        return;
    }
    p->live_ranges = n;
    p->top_items = top == SP__NIL ? 0u : (uintptr_t)p->ranges[top].items;
    p->top_count = top == SP__NIL ? 0u : p->ranges[top].count;
    p->top_first = top == SP__NIL ? 0u : p->ranges[top].first;
    sp__routes_update(p); /* the plain routes depend on the top range */
}

/* Rebuilds the unbuilt list from the slot states, lowest slots first. */
static void unbuilt_rebuild(sp_pool *p) {
    p->unbuilt_head = SP__NIL;
    for (uint32_t c = p->range_count; c-- > 0;) {
        const sp__range *r = &p->ranges[c];
        for (uint32_t i = r->first + r->count; i-- > r->first;) {
            if ((slot_at(p, i)->word & ((1u << SP__FLAG_BITS) - 1u)) == SP__UNBUILT)
                unbuilt_push(p, i, slot_at(p, i));
        }
    }
}

/* Range c gained members [from, to) (indices relative to it): every slot among them that is not
   retired joins the unbuilt list, lowest first. Slots keep the life they had when the indices
   were last used, so no generation restarts. */
void sp__range_gained(sp_pool *p, uint32_t c, uint32_t from, uint32_t to) {
    sp__range *r = &p->ranges[c];
    for (uint32_t i = r->first + to; i-- > r->first + from;)
        if (sp__state(slot_at(p, i)) != SP__RETIRED) unbuilt_push(p, i, slot_at(p, i));
    p->reserved += to - from;
    DBG_POISON(r->items + (size_t)from * p->stride, (size_t)(to - from) * p->stride);
}

/* Bytes of bookkeeping per slot index: the slot (with its back link and stamp in acquisition
   order), and its debug record in debug builds. */
size_t sp__slot_bytes(bool ordered) {
    return (ordered ? sizeof(sp__oslot) : sizeof(sp__slot)) + SP__DBG_BYTES;
}

/* Bytes before slot 0 of a fallback pool's slot array: the lease list's ends' slot when ordered
   (lease_ends in pool_internal.h). A reserved pool has it in the colour, a fixed buffer after the
   pool. */
size_t sp__slots_front(bool ordered) { return ordered ? sizeof(sp__oslot) : 0u; }


/* Frees a fallback pool's slot array (not the debug records), if any. */
void sp__slots_free(sp_pool *p) {
    if (p->slots) pool_free(p, p->slots - sp__slots_front(p->ordered),
                            sp__slots_front(p->ordered) + (size_t)p->slot_cap * p->slot_size);
}


/* Makes slots [from, to) unbuilt at the pool's first life, in no list; an ordered pool's first
   slots also get the lease list's ends' slot, the list empty (every layout has it before slot
   0). */
void sp__slots_init(sp_pool *p, uint64_t from, uint64_t to) {
    if (from == 0 && p->ordered) lease_ends_init(p);
    for (uint64_t i = from; i < to; i++) {
        sp__slot *s = slot_at(p, (uint32_t)i);
        s->word = p->life_first << SP__FLAG_BITS | SP__UNBUILT;
        s->next = SP__NIL;
        if (p->ordered) {
            ((sp__oslot *)(void *)s)->prev8 = lease_link(SP__NIL);
            *stamp_at(p, (uint32_t)i) = SP__NIL;
        }
    }
}

/* A reserved pool's bookkeeping: the slots of all SP__SLOT_LIMIT indices, starting
   SP__SLOTS_COLOUR bytes into the bookkeeping's first page, then (a page further on) their debug
   records, committed as far as slot_cap needs (page by page). */
static size_t books_slots_bytes(const sp_pool *p, uint32_t n) {
    return n ? round_up((size_t)(p->slots - p->reserved_books) + (size_t)n * p->slot_size, p->page) : 0u;
}
#if SP_DEBUG
static size_t books_dbg_bytes(const sp_pool *p, uint32_t n) { return round_up((size_t)n * sizeof(sp__dbg), p->page); }
#endif

static bool books_commit(sp_pool *p, uint32_t cap) {
    size_t from = books_slots_bytes(p, p->slot_cap), to = books_slots_bytes(p, cap);
    if (to > from && !pool_commit(p, p->reserved_books + from, to - from)) return false;
#if SP_DEBUG
    unsigned char *dbg = (unsigned char *)(void *)p->dbg;
    size_t dfrom = books_dbg_bytes(p, p->slot_cap), dto = books_dbg_bytes(p, cap);
    if (dto > dfrom && !pool_commit(p, dbg + dfrom, dto - dfrom)) {
        if (to > from) pool_decommit(p, p->reserved_books + from, to - from);
        return false;
    }
    p->bytes += dto - dfrom;
#endif
    p->bytes += to - from;
    return true;
}

/* Makes slots below `need` exist. A reserved pool commits them where they are, page by page (its
   slots never move, and nothing is committed ahead of the members); the fallback grows its flat
   array by a sixteenth at a time, so that the slack stays
   under a byte a member (copies are amortised: about 16 per slot over a pool's whole growth, on
   the growth path only). New slots start at life_first. Nothing changes when memory fails. */
static bool slots_reserve(sp_pool *p, uint32_t need) {
    if (p->ts && !pool_reserved(p)) return sp__ts_slots_reserve(p, need); /* never move */
    if (need <= p->slot_cap) return true;
    uint64_t cap = pool_reserved(p) ? need : (uint64_t)p->slot_cap + p->slot_cap / 16u;
    if (cap < need) cap = need;
    if (cap > SP__SLOT_LIMIT) cap = SP__SLOT_LIMIT;
    if (pool_reserved(p)) {
        if (!books_commit(p, (uint32_t)cap)) {
            sp__log(p, SP__MSG_NOMEM, "committing slots");
            return false;
        }
        sp__slots_init(p, p->slot_cap, cap);
        p->slot_cap = (uint32_t)cap;
        sp__routes_update(p);
        return true;
    }
    /* An ordered pool's array starts with the lease list's ends' slot (see lease_ends). */
    size_t front = sp__slots_front(p->ordered);
    unsigned char *slots = (unsigned char *)pool_alloc(p, front + (size_t)cap * p->slot_size, _Alignof(sp__oslot));
#if SP_DEBUG
    sp__dbg *dbg = slots ? (sp__dbg *)pool_alloc(p, (size_t)cap * sizeof *dbg, _Alignof(sp__dbg)) : NULL;
    if (slots && !dbg) {
        pool_free(p, slots, front + (size_t)cap * p->slot_size);
        slots = NULL;
    }
#endif
    if (!slots) {
        sp__log(p, SP__MSG_NOMEM, "slots");
        return false;
    }
    if (p->slot_cap) memcpy(slots, p->slots - front, front + (size_t)p->slot_cap * p->slot_size);
    sp__slots_free(p);
    p->slots = slots + front;
    sp__slots_init(p, p->slot_cap, cap);
#if SP_DEBUG
    if (p->slot_cap) memcpy(dbg, p->dbg, (size_t)p->slot_cap * sizeof *dbg);
    memset(dbg + p->slot_cap, 0, (size_t)(cap - p->slot_cap) * sizeof *dbg);
    pool_free(p, p->dbg, (size_t)p->slot_cap * sizeof *dbg);
    p->dbg = dbg;
#endif
    p->bytes += (size_t)(cap - p->slot_cap) * sp__slot_bytes(p->ordered) + (p->slot_cap ? 0u : front);
    p->slot_cap = (uint32_t)cap;
    sp__routes_update(p);
    return true;
}

/* Slots of range c that can still hold a member (not retired), among its first n. */
static uint32_t usable_slots(const sp_pool *p, uint32_t c, uint32_t n) {
    uint32_t usable = 0;
    for (uint32_t i = p->ranges[c].first; i < p->ranges[c].first + n; i++)
        usable += i >= p->slot_cap || sp__state(slot_at(p, i)) != SP__RETIRED;
    return usable;
}

/* The reserved range grows: the next members' pages are committed (the first step,
   `chunk_items`, or a 4096th of what it has when that is more; at most its reservation): the
   committed slack stays under 16 KiB of 64-byte members up to a million members, and under
   0.03% past that, for one commit per 256 members built (a growth path only). False, with the
   pool unchanged, when the system refuses: an allocator failure. */
static bool range_commit_more(sp_pool *p) {
    sp__range *r = &p->ranges[0];
    uint64_t want = (uint64_t)r->count + (r->count / 4096u > p->chunk_items ? r->count / 4096u : p->chunk_items);
    if (want > r->cap) want = r->cap;
    size_t to = round_up((size_t)want * p->stride, p->page);
    if (to > p->reserved_items_size) to = p->reserved_items_size;
    uint32_t count = (uint32_t)(to / p->stride < r->cap ? to / p->stride : r->cap);
    if (!slots_reserve(p, count)) return false;
    if (!pool_commit(p, p->reserved_items + p->committed_items, to - p->committed_items)) {
        sp__log(p, SP__MSG_NOMEM, "committing members");
        return false;
    }
    p->bytes += to - p->committed_items;
    p->committed_items = to;
    uint32_t from = r->count;
    r->count = count;
    sp__range_gained(p, 0, from, count);
    sp__ranges_index(p);
    return true;
}

/* A range beyond what is reserved: the fallback's next geometric range (or a given-back one
   used again). Returns false, with the pool unchanged, on failure. */
static uint32_t range_members(const sp_pool *p, uint32_t cap, bool past_max) {
    size_t want = cap;
    if (!past_max && p->max && p->max > p->reserved && p->max - p->reserved < want)
        want = p->max - p->reserved;
    return (uint32_t)want;
}

static bool range_allocate(sp_pool *p, bool past_max) {
    /* A given-back number is used again (its slots keep their lives), unless all retired. */
    uint32_t c = p->range_count;
    for (uint32_t i = 0; i < p->range_count; i++) {
        if (!p->ranges[i].items && usable_slots(p, i, range_members(p, p->ranges[i].cap, past_max)) > 0) {
            c = i;
            break;
        }
    }
    uint32_t first, cap;
    if (c < p->range_count) {
        first = p->ranges[c].first;
        cap = p->ranges[c].cap;
    } else {
        const sp__range *prev = c ? &p->ranges[c - 1u] : NULL;
        first = prev ? prev->first + prev->cap : 0u;
        uint64_t want = !prev || (c == 1u && pool_reserved(p)) ? p->chunk_items : (uint64_t)prev->cap * 2u;
        if (want > SP__SLOT_LIMIT - first) want = SP__SLOT_LIMIT - first;
        cap = (uint32_t)want;
        if (cap == 0 || c >= SP__RANGE_MAX) {
            sp__log(p, SP__MSG_SLOTS_FULL);
            return false;
        }
    }
    uint32_t count = range_members(p, cap, past_max);
    if (!slots_reserve(p, first + count)) return false;
    size_t mem_size = (size_t)count * p->stride;
    unsigned char *mem = (unsigned char *)pool_alloc(p, mem_size, range_align(p->item_align));
    if (!mem) {
        sp__log(p, SP__MSG_NOMEM, "range of members");
        return false;
    }
    if (p->owner && p->owner_fns->range_added(p->owner, p, (uintptr_t)mem, (uintptr_t)mem + mem_size) != SP_OK) {
        pool_free(p, mem, mem_size);
        sp__log(p, SP__MSG_NOMEM, "its owner's index");
        return false;
    }
    sp__range *r = &p->ranges[c];
    r->items = mem;
    r->first = first;
    r->cap = cap;
    r->count = count;
    r->built = 0;
    if (c == p->range_count) p->range_count++;
    p->bytes += mem_size;
    sp__range_gained(p, c, 0, count);
    sp__ranges_index(p);
    return true;
}

/* Room for one more member: the reserved range commits more, or a range is allocated. */
static bool range_add(sp_pool *p, bool past_max) {
    if (pool_reserved(p) && p->ranges[0].count < p->ranges[0].cap) return range_commit_more(p);
    return range_allocate(p, past_max);
}

/* The highest slot index of range c that holds a built member, plus one (0: none). */
static uint32_t built_end(const sp_pool *p, const sp__range *r) {
    for (uint32_t i = r->first + r->count; i-- > r->first;) {
        uint32_t st = sp__state(slot_at(p, i));
        if (st == SP__FREE || st == SP__LEASED) return i + 1u - r->first;
    }
    return 0;
}

/* Gives back the memory no built member needs: every allocated range without a built member
   goes to the allocator, and the reserved range's whole pages above its highest built member
   are decommitted (physical memory returned, address space kept). Slots stay with their lives,
   so indices used again never restart a generation. */
void sp__ranges_release_empty(sp_pool *p) {
    if (p->fixed) return;
    bool any = false;
    uint32_t c = 0;
    if (pool_reserved(p)) {
        sp__range *r = &p->ranges[0];
        size_t keep = round_up((size_t)built_end(p, r) * p->stride, p->page);
        if (keep < p->committed_items) {
            DBG_UNPOISON(p->reserved_items + keep, p->committed_items - keep);
            pool_decommit(p, p->reserved_items + keep, p->committed_items - keep);
            p->bytes -= p->committed_items - keep;
            p->committed_items = keep;
            uint32_t count = (uint32_t)(keep / p->stride < r->cap ? keep / p->stride : r->cap);
            /* a member that straddled `keep` is no member now: its kept bytes go clean too */
            DBG_UNPOISON(p->reserved_items + (size_t)count * p->stride, keep - (size_t)count * p->stride);
            p->reserved -= r->count - count;
            r->count = count;
            any = true;
        }
        c = 1;
    }
    for (; c < p->range_count; c++) {
        sp__range *r = &p->ranges[c];
        if (!r->items || r->built != 0) continue;
        if (p->owner) p->owner_fns->range_removed(p->owner, (uintptr_t)r->items);
        p->reserved -= r->count;
        p->bytes -= (size_t)r->count * p->stride;
        DBG_UNPOISON(r->items, (size_t)r->count * p->stride);
        pool_free(p, r->items, (size_t)r->count * p->stride);
        r->items = NULL;
        r->count = 0;
        any = true;
    }
    if (!any) return;
    unbuilt_rebuild(p);
    sp__ranges_index(p);
}

/* Builds one member in a slot with memory (adding room if none is left) and returns its
   index, neither free nor leased yet; SP__NIL when there is no room or no memory. */
uint32_t sp__member_build(sp_pool *p, bool past_max) {
    /* Room added over retired slots (a trimmed range growing back) gains none: add more. Ends:
       each step commits more of the reserved range or adds a range with a usable slot. */
    while (p->unbuilt_head == SP__NIL)
        if (p->fixed || !range_add(p, past_max)) return SP__NIL;
    uint32_t idx = p->unbuilt_head;
    sp__slot *s = slot_at(p, idx);
    p->unbuilt_head = s->next;
    void *item = item_at(p, idx);
    DBG_UNPOISON(item, p->item_size);
    memset(item, 0, p->item_size);
#if SP_DEBUG
    dbg_at(p, idx)->has_sum = 0; /* a checksum from the slot's previous member means nothing now */
#endif
    s->word = (s->word & ~(uint32_t)SP__STATE_MASK) | SP__FREE;
    s->next = SP__NIL;
    p->ranges[range_of_index(p, idx)].built++;
    p->size++;
    p->created++;
    if (p->create) run_create(p, idx, item);
    return idx;
}

/* Destroys a member that is in no list: dispose runs, and the slot becomes unbuilt (or retired
   when its life counter cannot count another life). */
void sp__member_dispose(sp_pool *p, uint32_t idx, bool ends_life) {
    void *item = item_at(p, idx);
    DBG_UNPOISON(item, p->item_size);
    run_dispose(p, idx, item);
    DBG_POISON(item, p->item_size);
    sp__slot *s = slot_at(p, idx);
    uint32_t life = sp__life(s);
    s->next = SP__NIL; /* in no list; and no mark once it is not leased (see sp__slot) */
    if (ends_life) {
        if (life == SP__LIFE_MAX) {
            s->word = life << SP__FLAG_BITS | SP__RETIRED;
        } else {
            s->word = (life + 1u) << SP__FLAG_BITS | SP__UNBUILT;
        }
    } else {
        s->word = life << SP__FLAG_BITS | SP__UNBUILT;
    }
    if (sp__state(s) == SP__UNBUILT && !p->destroying) unbuilt_push(p, idx, s);
    p->ranges[range_of_index(p, idx)].built--;
    p->size--;
    p->disposed++;
}

/* A member whose last life has ended: disposed, never used again. */
SP__NOINLINE void sp__member_retire(sp_pool *p, uint32_t idx) {
    void *item = item_at(p, idx);
    run_dispose(p, idx, item); /* it was leased until now: not poisoned */
    DBG_POISON(item, p->item_size);
    slot_at(p, idx)->next = SP__NIL; /* in no list, ever again; and no mark (see sp__slot) */
    slot_at(p, idx)->word = SP__LIFE_MAX << SP__FLAG_BITS | SP__RETIRED;
    p->ranges[range_of_index(p, idx)].built--;
    p->size--;
    p->disposed++;
    sp__log(p, SP__MSG_RETIRED, idx);
}

/* Registers the ranges the pool has so far with reg (later ones it registers as they come): the
   whole reservation of a reserved range, which its committed part grows into. */
bool sp__ranges_register(sp_pool *p, const sp__pool_owner *fns, void *owner) {
    for (uint32_t c = 0; c < p->range_count; c++) {
        const sp__range *r = &p->ranges[c];
        if (!r->items) continue;
        uintptr_t lo = (uintptr_t)r->items;
        size_t size = c == 0 && pool_reserved(p) ? p->reserved_items_size : (size_t)r->count * p->stride;
        if (fns->range_added(owner, p, lo, lo + size) != SP_OK) {
            while (c-- > 0)
                if (p->ranges[c].items) fns->range_removed(owner, (uintptr_t)p->ranges[c].items);
            sp__log(p, SP__MSG_NOMEM, "its owner's index");
            return false;
        }
    }
    p->owner_fns = fns;
    p->owner = owner;
    return true;
}

/* Reserves the pool's range: address space for its largest possible size (max members, or the
   slot limit when max is 0, at most SP__RESERVE_LIMIT bytes), and right after it for the
   bookkeeping of every slot index, in one reservation (one mapping per pool: the memory tools
   and the kernel track fewer). Nothing is committed yet. False when the allocator has no virtual memory (the
   fallback, silently) or the system refuses (the fallback, with an info line). */
bool sp__pool_reserve(sp_pool *p, const sp_desc *d) {
    sp__vm vm;
    if (sp__allocator_vm(&d->allocator, &vm) || !vm.reserve) return false;
    p->page = sp__os_page_size();
    uint64_t members = d->max ? d->max : SP__SLOT_LIMIT;
    if (members * p->stride > SP__RESERVE_LIMIT) members = SP__RESERVE_LIMIT / p->stride;
    if (members == 0 || p->item_align > p->page) return false;
    size_t items_size = round_up((size_t)members * p->stride, p->page);
    /* The slots start at a colour, not at the page's start; the page more holds it. */
    size_t colour = p->page / 2u < SP__SLOTS_COLOUR ? p->page / 2u : SP__SLOTS_COLOUR;
    size_t books_size = p->page + (size_t)SP__SLOT_LIMIT * (p->slot_size + SP__DBG_BYTES);
    unsigned char *items = (unsigned char *)vm.reserve(items_size + books_size, vm.user);
    if (!items) {
        sp__log(p, SP__MSG_NO_RESERVE, items_size + books_size);
        return false;
    }
    unsigned char *books = items + items_size;
    p->vm.reserve = vm.reserve;
    p->vm.commit = vm.commit;
    p->vm.decommit = vm.decommit;
    p->vm.release = vm.release;
    p->vm.user = vm.user;
    p->reserved_items = items;
    p->reserved_items_size = items_size;
    p->reserved_books = books;
    p->reserved_books_size = books_size;
    p->slots = books + colour;
#if SP_DEBUG
    p->dbg = (sp__dbg *)(void *)(books + p->page + (size_t)SP__SLOT_LIMIT * p->slot_size);
#endif
    p->ranges[0].items = items;
    p->ranges[0].cap = (uint32_t)members;
    p->range_count = 1;
    return true;
}
