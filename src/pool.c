/* SPDX-License-Identifier: Zlib */
/* pool.c -- the object pool: members in one reserved address range (or, where nothing can be
   reserved, a few geometric ranges), 8 bytes of bookkeeping each (16 with the lease list), a
   free list, a lease list in acquisition order (SP_ORDER_ACQUISITION pools only), and life
   counters for handles. A member is recognised (and everything else rejected) by one multiply
   and one compare against the top range.

   See docs/design.md for the layout. In short: range c owns slot indices [first, first + cap);
   a member's address = range.items + (idx - first) * stride; its slot = slots[idx]. */
#include "sp_internal.h"
#include "sp_os.h"

#include <string.h>

/* ---------------------------------------------------------------------------------------------
   Small helpers
   ------------------------------------------------------------------------------------------ */

#define SP__DEFAULT_CHUNK_ITEMS 256u
#define SP__MAX_ALIGN ((size_t)65536)

static inline sp__slot *slot_at(const sp_pool *p, uint32_t idx) {
    return (sp__slot *)(void *)(p->slots + (size_t)idx * p->slot_size);
}

/* The slot of a memory-order pool, whose slot size is known at compile time: the plain paths. */
static inline sp__slot *plain_slot_at(const sp_pool *p, uint32_t idx) {
    return (sp__slot *)(void *)p->slots + idx;
}

/* The lease list's back link and the acquisition's sequence number (ordered pools only). */
static inline uint32_t *prev_at(const sp_pool *p, uint32_t idx) {
    return &((sp__oslot *)(void *)slot_at(p, idx))->prev;
}

static inline uint32_t *stamp_at(const sp_pool *p, uint32_t idx) {
    return &((sp__oslot *)(void *)slot_at(p, idx))->stamp;
}

/* The range holding slot index idx (a slot of some range: idx < the last range's end).
   Binary search over the few range records, by first index. Cold: the hot paths find their
   member in the top range. */
static inline uint32_t range_of_index(const sp_pool *p, uint32_t idx) {
    uint32_t lo = 0, hi = p->range_count; /* the range is in [lo, hi) */
    while (hi - lo > 1u) {
        uint32_t mid = (lo + hi) / 2u;
        if (p->ranges[mid].first <= idx)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/* A member's address: through the pool's copy of the top range when idx is in it (always, for a
   pool in its reserved range), else through the range records. */
static inline void *item_at(const sp_pool *p, uint32_t idx) {
    uint32_t in_top = idx - p->top_first;
    if (SP__LIKELY(in_top < p->top_count))
        return (void *)(p->top_items + (uintptr_t)in_top * p->stride);
    const sp__range *r = &p->ranges[range_of_index(p, idx)];
    return r->items + (size_t)(idx - r->first) * p->stride;
}

static inline uint64_t rotr64(uint64_t x, uint32_t r) {
    return (x >> r) | (x << ((64u - r) & 63u));
}

/* Which member of the range whose members start at `base` address a starts: a member number
   below the range's count exactly when a is the start of that member. One comparison checks
   range and stride alignment at once: for odd d with inverse inv, x * inv (mod 2^64) is x / d
   when d divides x and at least 2^64 / d otherwise; rotating first sends misaligned offsets
   (and addresses below the range, which wrap) far above any range's count. So a pointer into
   the reserved but uncommitted part of a range, or anywhere else, is rejected by arithmetic:
   nothing outside the pool's bookkeeping is read. */
static inline uint64_t member_number(const sp_pool *p, uintptr_t base, uintptr_t a) {
    return rotr64((uint64_t)(a - base), p->stride_rot) * p->stride_inv;
}

/* The slot index of a member of range r at address a, or SP__NIL. */
static inline uint32_t index_in_range(const sp_pool *p, const sp__range *r, uintptr_t a) {
    uint64_t q = member_number(p, (uintptr_t)r->items, a);
    return q < r->count ? r->first + (uint32_t)q : SP__NIL;
}

/* The answer of the ranges other than the top one for a, or SP__NIL: a binary search over the
   live ranges sorted by address (at most SP__RANGE_MAX, 17 for a default fallback pool). */
static uint32_t index_searched(const sp_pool *p, uintptr_t a) {
    uint32_t lo = 0, hi = p->live_ranges; /* candidates: by_address[lo, hi) */
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2u;
        const sp__range *r = &p->ranges[p->by_address[mid]];
        if (a < (uintptr_t)r->items)
            hi = mid;
        else if (a - (uintptr_t)r->items >= (uintptr_t)r->count * p->stride)
            lo = mid + 1u;
        else
            return index_in_range(p, r, a);
    }
    return SP__NIL;
}

/* The slot index of the member starting at item, or SP__NIL for anything that is not the start
   of one of this pool's members with memory. Reads only the pool's own bookkeeping. The top
   range first (the largest: every member of a pool in its reservation), then the others. */
static inline uint32_t index_of(const sp_pool *p, const void *item) {
    uint64_t q = member_number(p, p->top_items, (uintptr_t)item);
    if (SP__LIKELY(q < p->top_count)) return p->top_first + (uint32_t)q;
    return p->live_ranges > 1u ? index_searched(p, (uintptr_t)item) : SP__NIL;
}

/* Debug-build bookkeeping around state changes; nothing at all with SP_DEBUG=0. */
#if SP_DEBUG
static inline sp__dbg *dbg_at(const sp_pool *p, uint32_t idx) { return &p->dbg[idx]; }
#  define DBG_FREED(p, idx, item) sp__dbg_freed((p), dbg_at((p), (idx)), (item))
#  define DBG_LEASING(p, idx, item) sp__dbg_leasing((p), dbg_at((p), (idx)), (item), (idx))
#  define DBG_POISON(mem, size) sp__dbg_poison((mem), (size))
#  define DBG_UNPOISON(mem, size) sp__dbg_unpoison((mem), (size))
#else
#  define DBG_FREED(p, idx, item) ((void)0)
#  define DBG_LEASING(p, idx, item) ((void)0)
#  define DBG_POISON(mem, size) ((void)0)
#  define DBG_UNPOISON(mem, size) ((void)0)
#endif

static void *pool_alloc(sp_pool *p, size_t size, size_t align) {
    return p->allocator.alloc(size, align, p->allocator.user);
}

static void pool_free(sp_pool *p, void *ptr, size_t size) {
    if (ptr) p->allocator.free(ptr, size, p->allocator.user);
}

/* ---------------------------------------------------------------------------------------------
   Lists
   ------------------------------------------------------------------------------------------ */

static inline void lease_append(sp_pool *p, uint32_t idx, sp__slot *s) {
    *prev_at(p, idx) = p->lease_tail;
    *stamp_at(p, idx) = (uint32_t)p->acquired;
    s->next = SP__NIL;
    if (p->lease_tail != SP__NIL)
        slot_at(p, p->lease_tail)->next = idx;
    else
        p->lease_head = idx;
    p->lease_tail = idx;
}

static inline void lease_unlink(sp_pool *p, uint32_t idx, const sp__slot *s) {
    uint32_t prev = *prev_at(p, idx);
    if (prev != SP__NIL)
        slot_at(p, prev)->next = s->next;
    else
        p->lease_head = s->next;
    if (s->next != SP__NIL)
        *prev_at(p, s->next) = prev;
    else
        p->lease_tail = prev;
}

static inline void free_push(sp_pool *p, uint32_t idx, sp__slot *s) {
    s->next = p->free_head;
    p->free_head = idx;
}

static void unbuilt_push(sp_pool *p, uint32_t idx, sp__slot *s) {
    s->next = p->unbuilt_head;
    p->unbuilt_head = idx;
}

/* What iteration visits: leased, and not in its on_release hook (an ordered pool has already
   unlinked such a member). */
static inline bool visible_leased(uint32_t word) {
    return (word & (SP__STATE_MASK | SP__RELEASING)) == SP__LEASED;
}

/* Memory order (unordered pools, which keep no lease list): the first slot at or after `from`,
   range by range, whose member iteration visits; SP__NIL when there is none. O(slots scanned). */
static uint32_t leased_from(const sp_pool *p, uint32_t from) {
    for (uint32_t c = from < p->slot_cap ? range_of_index(p, from) : p->range_count; c < p->range_count; c++) {
        const sp__range *r = &p->ranges[c];
        uint32_t end = r->first + r->count;
        for (uint32_t i = from > r->first ? from : r->first; i < end; i++)
            if (visible_leased(slot_at(p, i)->word)) return i;
    }
    return SP__NIL;
}

/* The pool's order, whichever it is: the first leased member, and the one after idx. */
static uint32_t leased_first(const sp_pool *p) {
    return p->ordered ? p->lease_head : leased_from(p, 0);
}

static uint32_t leased_next(const sp_pool *p, uint32_t idx) {
    return p->ordered ? slot_at(p, idx)->next : leased_from(p, idx + 1u);
}

/* Acquisition stamps (acquisition-order pools) are the low 32 bits of `acquired` when a member
   was leased, so the hot path stores one word. They are compared by rank, stamp - origin: in
   acquisition order as long as every stamp in the lease list was taken less than 2^32
   acquisitions after the origin. A walk makes sure of that when it begins (stamps_fresh): once
   2^31 acquisitions have passed since the origin, the lease list is stamped again, in its own
   order, just below the next acquisition's stamp (O(leased), at most once per 2^31
   acquisitions). From then the ranks stay exact for 2^31 more acquisitions, whatever the walk's
   callbacks do, however old the oldest member is. */
static inline uint32_t stamp_rank(const sp_pool *p, uint32_t idx) {
    return *stamp_at(p, idx) - (uint32_t)p->stamp_origin;
}

static void stamps_fresh(sp_pool *p) {
    if (!p->ordered || p->acquired - p->stamp_origin < (UINT64_C(1) << 31)) return;
    uint64_t n = 0;
    for (uint32_t i = p->lease_head; i != SP__NIL; i = slot_at(p, i)->next) n++;
    p->stamp_origin = p->acquired - n;
    uint32_t stamp = (uint32_t)p->stamp_origin;
    for (uint32_t i = p->lease_head; i != SP__NIL; i = slot_at(p, i)->next) *stamp_at(p, i) = stamp++;
}

/* ---------------------------------------------------------------------------------------------
   Hooks: every hook runs with the member marked busy, so that it cannot be released or
   reclaimed from inside its own hook, and with hook_depth raised, so that calls that would
   pull the pool from under the hook (destroy, clear, trim) are refused.
   ------------------------------------------------------------------------------------------ */

/* The slot array can move while a hook runs (a hook that acquires may grow the pool), so a
   hook runner takes the slot index and looks the slot up again afterwards; callers must not keep
   a slot pointer across a hook either. */
#define SP__RUN_HOOK(p, idx, call)                                                                \
    do {                                                                                          \
        slot_at((p), (idx))->word |= SP__BUSY;                                                    \
        (p)->hook_depth++;                                                                        \
        call;                                                                                     \
        (p)->hook_depth--;                                                                        \
        slot_at((p), (idx))->word &= ~(uint32_t)SP__BUSY;                                         \
    } while (0)

static void run_create(sp_pool *p, uint32_t idx, void *item) {
    SP__RUN_HOOK(p, idx, p->create(item, p->user));
}

static SP__NOINLINE void run_on_acquire(sp_pool *p, uint32_t idx, void *item, const void *arg) {
    SP__RUN_HOOK(p, idx, p->on_acquire(item, arg, p->user));
}

static SP__NOINLINE void run_on_release(sp_pool *p, uint32_t idx, void *item) {
    slot_at(p, idx)->word |= SP__RELEASING;
    SP__RUN_HOOK(p, idx, p->on_release(item, p->user));
    slot_at(p, idx)->word &= ~(uint32_t)SP__RELEASING;
}

static void run_dispose(sp_pool *p, uint32_t idx, void *item) {
    if (p->dispose) SP__RUN_HOOK(p, idx, p->dispose(item, p->user));
}

/* priority is a hook too (destroy, clear and trim are refused inside it), and more: a pure
   scoring function, inside which this pool's acquisitions and releases are refused (scoring). */
static double run_priority(sp_pool *p, uint32_t idx) {
    double pr = 0.0;
    SP__RUN_HOOK(p, idx, pr = p->priority(item_at(p, idx), p->user));
    return pr;
}

/* Which paths acquisitions and releases take. The fast paths test nothing for the rare states:
   while a priority callback or a teardown runs, every release is routed to release_general
   (plain_release off, release_slow on), where it is refused or diverted, and the plain reclaim
   is off; a teardown also detaches the free list, so that every acquisition reaches
   acquire_slow, which refuses it. Cold: runs when those states begin and end. */
static void routes_update(sp_pool *p) {
    bool divert = p->scoring > 0 || p->tearing_down;
    p->plain_release = !p->ordered && !p->on_release && !divert;
    p->plain_acquire = !p->ordered && !p->on_acquire && p->live_ranges <= 1u;
    p->plain_below = p->plain_acquire ? SP__NIL : 0u;
    p->resolve_below = p->live_ranges <= 1u ? p->slot_cap : 0u;
    p->top_plain = p->plain_release ? p->top_count : 0u;
    p->release_slow = p->on_release != NULL || divert;
    p->plain_reclaim = p->ordered && !p->on_acquire && !p->on_release && !p->priority && !divert;
}

/* ---------------------------------------------------------------------------------------------
   Ranges: where members live (cold: only growth and trimming change them)
   ------------------------------------------------------------------------------------------ */

#define SP__RANGE_ALIGN ((size_t)64) /* a range's first member starts a cache line */
/* At most this much address space is reserved for one pool's members; beyond, ranges. */
#define SP__RESERVE_LIMIT ((uint64_t)1 << 36)

static size_t round_up(size_t x, size_t a) { return (x + (a - 1u)) & ~(a - 1u); }
static size_t range_align(size_t item_align);

static bool pool_reserved(const sp_pool *p) { return p->reserved_items != NULL; }

/* Copies the live range with the most members (the latest on ties: the fallback's largest, or
   the reserved range) into top_*, and sorts the live ranges by address for index_searched. */
static void ranges_index(sp_pool *p) {
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
    p->live_ranges = n;
    p->top = top == SP__NIL ? 0u : top;
    p->top_items = top == SP__NIL ? 0u : (uintptr_t)p->ranges[top].items;
    p->top_count = top == SP__NIL ? 0u : p->ranges[top].count;
    p->top_first = top == SP__NIL ? 0u : p->ranges[top].first;
    routes_update(p); /* the plain routes depend on the top range */
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
static void range_gained(sp_pool *p, uint32_t c, uint32_t from, uint32_t to) {
    sp__range *r = &p->ranges[c];
    for (uint32_t i = r->first + to; i-- > r->first + from;)
        if (sp__state(slot_at(p, i)) != SP__RETIRED) unbuilt_push(p, i, slot_at(p, i));
    p->reserved += to - from;
    DBG_POISON(r->items + (size_t)from * p->stride, (size_t)(to - from) * p->stride);
}

/* Bytes of bookkeeping per slot index: the slot (with its back link and stamp in acquisition
   order), and its debug record in debug builds. */
static size_t slot_bytes(bool ordered) {
    return (ordered ? sizeof(sp__oslot) : sizeof(sp__slot)) + SP__DBG_BYTES;
}

/* Makes slots [from, to) unbuilt at the pool's first life, in no list. */
static void slots_init(sp_pool *p, uint64_t from, uint64_t to) {
    for (uint64_t i = from; i < to; i++) {
        sp__slot *s = slot_at(p, (uint32_t)i);
        s->word = p->life_first << SP__FLAG_BITS | SP__UNBUILT;
        s->next = SP__NIL;
        if (p->ordered) *prev_at(p, (uint32_t)i) = *stamp_at(p, (uint32_t)i) = SP__NIL;
    }
}

/* A reserved pool's bookkeeping: the slots of all SP__SLOT_LIMIT indices, then their debug
   records, committed as far as slot_cap needs (page by page). */
static size_t books_slots_bytes(const sp_pool *p, uint32_t n) { return round_up((size_t)n * p->slot_size, p->page); }
#if SP_DEBUG
static size_t books_dbg_bytes(const sp_pool *p, uint32_t n) { return round_up((size_t)n * sizeof(sp__dbg), p->page); }
#endif

static bool books_commit(sp_pool *p, uint32_t cap) {
    size_t from = books_slots_bytes(p, p->slot_cap), to = books_slots_bytes(p, cap);
    if (to > from && !p->vm.commit(p->reserved_books + from, to - from, p->vm.user)) return false;
#if SP_DEBUG
    unsigned char *dbg = p->reserved_books + (size_t)SP__SLOT_LIMIT * p->slot_size;
    size_t dfrom = books_dbg_bytes(p, p->slot_cap), dto = books_dbg_bytes(p, cap);
    if (dto > dfrom && !p->vm.commit(dbg + dfrom, dto - dfrom, p->vm.user)) {
        if (to > from) p->vm.decommit(p->reserved_books + from, to - from, p->vm.user);
        return false;
    }
    p->bytes += dto - dfrom;
#endif
    p->bytes += to - from;
    return true;
}

/* Makes slots below `need` exist. A reserved pool commits them where they are (its slots never
   move); the fallback grows its flat array by a sixteenth at a time, so that the slack stays
   under a byte a member (copies are amortised: about 16 per slot over a pool's whole growth, on
   the growth path only). New slots start at life_first. Nothing changes when memory fails. */
static bool slots_reserve(sp_pool *p, uint32_t need) {
    if (need <= p->slot_cap) return true;
    uint64_t cap = (uint64_t)p->slot_cap + p->slot_cap / 16u;
    if (cap < need) cap = need;
    if (cap > SP__SLOT_LIMIT) cap = SP__SLOT_LIMIT;
    if (pool_reserved(p)) {
        if (!books_commit(p, (uint32_t)cap)) {
            sp__log(p, SP__MSG_NOMEM, "committing slots");
            return false;
        }
        slots_init(p, p->slot_cap, cap);
        p->slot_cap = (uint32_t)cap;
        routes_update(p);
        return true;
    }
    unsigned char *slots = (unsigned char *)pool_alloc(p, (size_t)cap * p->slot_size, _Alignof(sp__oslot));
#if SP_DEBUG
    sp__dbg *dbg = slots ? (sp__dbg *)pool_alloc(p, (size_t)cap * sizeof *dbg, _Alignof(sp__dbg)) : NULL;
    if (slots && !dbg) {
        pool_free(p, slots, (size_t)cap * p->slot_size);
        slots = NULL;
    }
#endif
    if (!slots) {
        sp__log(p, SP__MSG_NOMEM, "slots");
        return false;
    }
    if (p->slot_cap) memcpy(slots, p->slots, (size_t)p->slot_cap * p->slot_size);
    pool_free(p, p->slots, (size_t)p->slot_cap * p->slot_size);
    p->slots = slots;
    slots_init(p, p->slot_cap, cap);
#if SP_DEBUG
    if (p->slot_cap) memcpy(dbg, p->dbg, (size_t)p->slot_cap * sizeof *dbg);
    memset(dbg + p->slot_cap, 0, (size_t)(cap - p->slot_cap) * sizeof *dbg);
    pool_free(p, p->dbg, (size_t)p->slot_cap * sizeof *dbg);
    p->dbg = dbg;
#endif
    p->bytes += (size_t)(cap - p->slot_cap) * slot_bytes(p->ordered);
    p->slot_cap = (uint32_t)cap;
    routes_update(p);
    return true;
}

/* Slots of range c that can still hold a member (not retired), among its first n. */
static uint32_t usable_slots(const sp_pool *p, uint32_t c, uint32_t n) {
    uint32_t usable = 0;
    for (uint32_t i = p->ranges[c].first; i < p->ranges[c].first + n; i++)
        usable += i >= p->slot_cap || sp__state(slot_at(p, i)) != SP__RETIRED;
    return usable;
}

/* The reserved range grows: the next members' pages are committed (a 64th of what it has,
   at least the first step, at most its reservation: the committed slack stays under a 64th,
   and commits are few). False, with the pool unchanged, when the system refuses: an allocator
   failure. */
static bool range_commit_more(sp_pool *p) {
    sp__range *r = &p->ranges[0];
    uint64_t want = (uint64_t)r->count + (r->count / 64u > p->chunk_items ? r->count / 64u : p->chunk_items);
    if (want > r->cap) want = r->cap;
    size_t to = round_up((size_t)want * p->stride, p->page);
    if (to > p->reserved_items_size) to = p->reserved_items_size;
    uint32_t count = (uint32_t)(to / p->stride < r->cap ? to / p->stride : r->cap);
    if (!slots_reserve(p, count)) return false;
    if (!p->vm.commit(p->reserved_items + p->committed_items, to - p->committed_items, p->vm.user)) {
        sp__log(p, SP__MSG_NOMEM, "committing members");
        return false;
    }
    p->bytes += to - p->committed_items;
    p->committed_items = to;
    uint32_t from = r->count;
    r->count = count;
    range_gained(p, 0, from, count);
    ranges_index(p);
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
    range_gained(p, c, 0, count);
    ranges_index(p);
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
static void ranges_release_empty(sp_pool *p) {
    if (p->fixed) return;
    bool any = false;
    uint32_t c = 0;
    if (pool_reserved(p)) {
        sp__range *r = &p->ranges[0];
        size_t keep = round_up((size_t)built_end(p, r) * p->stride, p->page);
        if (keep < p->committed_items) {
            DBG_UNPOISON(p->reserved_items + keep, p->committed_items - keep);
            p->vm.decommit(p->reserved_items + keep, p->committed_items - keep, p->vm.user);
            p->bytes -= p->committed_items - keep;
            p->committed_items = keep;
            uint32_t count = (uint32_t)(keep / p->stride < r->cap ? keep / p->stride : r->cap);
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
    ranges_index(p);
}

/* ---------------------------------------------------------------------------------------------
   Building, retiring and disposing members
   ------------------------------------------------------------------------------------------ */

/* Builds one member in a slot with memory (adding room if none is left) and returns its
   index, neither free nor leased yet; SP__NIL when there is no room or no memory. */
static uint32_t member_build(sp_pool *p, bool past_max) {
    if (p->unbuilt_head == SP__NIL && (p->fixed || !range_add(p, past_max))) return SP__NIL;
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
static void member_dispose(sp_pool *p, uint32_t idx, bool ends_life) {
    void *item = item_at(p, idx);
    DBG_UNPOISON(item, p->item_size);
    run_dispose(p, idx, item);
    DBG_POISON(item, p->item_size);
    sp__slot *s = slot_at(p, idx);
    uint32_t life = sp__life(s);
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
static SP__NOINLINE void member_retire(sp_pool *p, uint32_t idx) {
    void *item = item_at(p, idx);
    run_dispose(p, idx, item); /* it was leased until now: not poisoned */
    DBG_POISON(item, p->item_size);
    slot_at(p, idx)->word = SP__LIFE_MAX << SP__FLAG_BITS | SP__RETIRED;
    p->ranges[range_of_index(p, idx)].built--;
    p->size--;
    p->disposed++;
    sp__log(p, SP__MSG_RETIRED, idx);
}

/* ---------------------------------------------------------------------------------------------
   Pool lifecycle
   ------------------------------------------------------------------------------------------ */

static size_t natural_align(size_t size) {
    size_t a = size & (~size + 1u); /* lowest set bit */
    return a > _Alignof(max_align_t) ? _Alignof(max_align_t) : a;
}

static bool is_pow2(size_t x) { return x && !(x & (x - 1u)); }


/* What a descriptor means once defaults are applied; `why` says what is wrong with it. */
typedef struct sp__layout {
    size_t align, stride, chunk_items;
    bool ordered; /* keeps the lease list (SP_ORDER_ACQUISITION, or the default under RECLAIM) */
    const char *why;
} sp__layout;

static sp__layout layout_of(const sp_desc *d) {
    sp__layout l = {0, 0, 0, false, NULL};
    if (d->item_size == 0) {
        l.why = "item_size is 0";
        return l;
    }
    l.align = d->item_align ? d->item_align : natural_align(d->item_size);
    if (!is_pow2(l.align)) {
        l.why = "item_align is not a power of two";
        return l;
    }
    if (l.align > SP__MAX_ALIGN) {
        l.why = "item_align is larger than 65536";
        return l;
    }
    if (d->item_size > (SIZE_MAX >> 8) - l.align) {
        l.why = "item_size is too large";
        return l;
    }
    l.stride = (d->item_size + l.align - 1u) & ~(l.align - 1u);
    if ((uint64_t)d->overflow > (uint64_t)SP_OVERFLOW_GROW) {
        l.why = "unknown overflow policy";
        return l;
    }
    if ((uint64_t)d->order > (uint64_t)SP_ORDER_MEMORY) {
        l.why = "unknown order";
        return l;
    }
    if (d->max > SP__SLOT_LIMIT) {
        l.why = "max is larger than 16777216 (the slot limit)";
        return l;
    }
    if (d->initial > SP__SLOT_LIMIT) {
        l.why = "initial is larger than 16777216 (a pool holds at most 2^24 slots)";
        return l;
    }
    if (d->max && d->initial > d->max) {
        l.why = "initial is larger than max";
        return l;
    }
    if (d->chunk_items > SP__SLOT_LIMIT) {
        l.why = "chunk_items is larger than 16777216";
        return l;
    }
    if (!d->allocator.alloc != !d->allocator.free) {
        l.why = "allocator needs both alloc and free";
        return l;
    }
    l.ordered = d->order == SP_ORDER_ACQUISITION ||
                (d->order == SP_ORDER_DEFAULT && d->overflow == SP_OVERFLOW_RECLAIM);
    l.chunk_items = d->chunk_items;
    if (l.chunk_items == 0) {
        /* A pool told its working size up front gets it in one chunk: every release then hits
           the chunk hint, and nothing is reserved beyond what `initial` asked for. */
        l.chunk_items = d->initial > SP__DEFAULT_CHUNK_ITEMS ? d->initial : SP__DEFAULT_CHUNK_ITEMS;
        if (d->max && d->max < l.chunk_items) l.chunk_items = d->max;
    }
    if (l.chunk_items > (SIZE_MAX >> 2) / (l.stride + sizeof(sp__slot))) {
        /* Name the field that set the chunk's size: chunk_items, or its default from initial,
           max or 256 members. */
        l.why = d->chunk_items                       ? "chunk_items * item_size overflows"
                : l.chunk_items == d->initial        ? "initial * item_size overflows"
                : d->max && l.chunk_items == d->max  ? "max * item_size overflows"
                                                     : "item_size is too large for a chunk of 256 members";
        return l;
    }
    return l;
}

/* Fixed-buffer layout, from an address: [pool][slots x n][pad][debug records x n,
   in debug builds][pad][members x n]. The slots are reserved at the ordered size whatever the
   order (a memory-order pool leaves the room of the back links and stamps unused), so that sp_buffer_size depends
   on the item's size and alignment only, not on fields a caller may still change after sizing. */
static uintptr_t align_up(uintptr_t x, size_t a) { return (x + (a - 1u)) & ~(uintptr_t)(a - 1u); }

/* Where a range's members start: a cache line at least, so that members whose size is a
   multiple of 64 never straddle two lines. */
static size_t range_align(size_t item_align) { return item_align > SP__RANGE_ALIGN ? item_align : SP__RANGE_ALIGN; }

static bool fixed_fits(uintptr_t start, uintptr_t end, const sp__layout *l, size_t n,
                       uintptr_t *items_out) {
    uintptr_t pool = align_up(start, _Alignof(sp_pool));
    uintptr_t slots = pool + sizeof(sp_pool);
    if (slots < start || slots > end) return false;
    if (n > (end - slots) / slot_bytes(true)) return false;
    /* slots, then (debug builds) their 8-aligned records, then the aligned members */
    uintptr_t records = align_up(slots + n * sizeof(sp__oslot), SP__DBG_BYTES ? 8u : 1u);
    if (records > end || n > (end - records) / (SP__DBG_BYTES ? SP__DBG_BYTES : 1u)) return false;
    uintptr_t items = align_up(records + n * SP__DBG_BYTES, l->align);
    if (items < slots || items > end) return false;
    if (n > (end - items) / l->stride) return false;
    if (items_out) *items_out = items;
    return true;
}

size_t sp_buffer_size(const sp_desc *desc, size_t members) {
    if (!desc) return 0;
    sp__layout l = layout_of(desc);
    if (l.why || members == 0 || members > SP__SLOT_LIMIT) return 0;
    size_t slack = (_Alignof(sp_pool) - 1u) + (l.align - 1u) + (SP__DBG_BYTES ? 7u : 0u);
    size_t fixed = sizeof(sp_pool) + slack;
    size_t per_member = slot_bytes(true) + l.stride; /* stride < SIZE_MAX / 256: no overflow */
    if (members > (SIZE_MAX - fixed) / per_member) return 0;
    return fixed + members * per_member;
}

static void pool_setup(sp_pool *p, const sp_desc *d, const sp__layout *l, const char *name) {
    memset(p, 0, sizeof *p);
    p->free_head = p->lease_head = p->lease_tail = p->unbuilt_head = SP__NIL;
    p->item_size = d->item_size;
    p->item_align = l->align;
    p->stride = l->stride;
    p->stride_rot = 0;
    size_t odd = l->stride;
    while (!(odd & 1u)) {
        odd >>= 1;
        p->stride_rot++;
    }
    uint64_t inv = odd; /* Newton's iteration doubles the correct low bits each step */
    for (int i = 0; i < 5; i++) inv *= 2u - (uint64_t)odd * inv;
    p->stride_inv = inv;
    p->max = d->max;
    p->overflow = d->overflow;
    p->ordered = l->ordered;
    p->slot_size = (uint32_t)(l->ordered ? sizeof(sp__oslot) : sizeof(sp__slot));
    p->create = d->create;
    p->on_acquire = d->on_acquire;
    p->on_release = d->on_release;
    p->dispose = d->dispose;
    p->priority = d->priority;
    p->user = d->user;
    p->logger = d->logger;
    p->grow_warn_at = 1;
    p->doomed = SP__NIL;
    routes_update(p);
    if (d->allocator.alloc) {
        p->allocator = d->allocator;
    } else {
        p->allocator.alloc = sp__default_alloc;
        p->allocator.free = sp__default_free;
        p->allocator.user = NULL;
    }
    const char *n = name ? name : "";
    size_t len = strlen(n);
    size_t full = len;
    if (len >= SP__NAME_CAP) { /* cut, but not inside a UTF-8 sequence */
        len = SP__NAME_CAP - 1u;
        while (len > 0 && ((unsigned char)n[len] & 0xC0u) == 0x80u) len--;
    }
    memcpy(p->name, n, len);
    p->name[len] = '\0';
    if (full > len) sp__log(p, SP__MSG_NAME_CUT, len, full);
}

/* Registers the ranges the pool has so far with reg (later ones it registers as they come): the
   whole reservation of a reserved range, which its committed part grows into. */
static bool ranges_register(sp_pool *p, const sp__pool_owner *fns, void *owner) {
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
   slot limit when max is 0, at most SP__RESERVE_LIMIT bytes), and for the bookkeeping of every
   slot index. Nothing is committed yet. False when the allocator has no virtual memory (the
   fallback, silently) or the system refuses (the fallback, with an info line). */
static bool pool_reserve(sp_pool *p, const sp_desc *d) {
    sp__vm vm;
    if (sp__allocator_vm(&d->allocator, &vm) || !vm.reserve) return false;
    p->page = sp__os_page_size();
    uint64_t members = d->max ? d->max : SP__SLOT_LIMIT;
    if (members * p->stride > SP__RESERVE_LIMIT) members = SP__RESERVE_LIMIT / p->stride;
    if (members == 0 || p->item_align > p->page) return false;
    size_t items_size = round_up((size_t)members * p->stride, p->page);
    size_t books_size = (size_t)SP__SLOT_LIMIT * (p->slot_size + SP__DBG_BYTES);
    unsigned char *items = (unsigned char *)vm.reserve(items_size, vm.user);
    unsigned char *books = items ? (unsigned char *)vm.reserve(books_size, vm.user) : NULL;
    if (!books) {
        if (items) vm.release(items, items_size, vm.user);
        sp__log(p, SP__MSG_NO_RESERVE, items_size + books_size);
        return false;
    }
    p->vm.reserve = vm.reserve;
    p->vm.commit = vm.commit;
    p->vm.decommit = vm.decommit;
    p->vm.release = vm.release;
    p->vm.user = vm.user;
    p->reserved_items = items;
    p->reserved_items_size = items_size;
    p->reserved_books = books;
    p->reserved_books_size = books_size;
    p->slots = books;
#if SP_DEBUG
    p->dbg = (sp__dbg *)(void *)(books + (size_t)SP__SLOT_LIMIT * p->slot_size);
#endif
    p->ranges[0].items = items;
    p->ranges[0].cap = (uint32_t)members;
    p->range_count = 1;
    return true;
}

/* Builds the pool, known to its owner (NULL: none; the registry) from before its first member is
   built, so that create hooks find their members' owner through it. */
static sp_pool *pool_create(const sp_desc *desc, const char *name, const sp__pool_owner *fns,
                            void *owner) {
    sp__layout l = layout_of(desc);
    if (!l.why && desc->buffer && desc->overflow == SP_OVERFLOW_GROW)
        l.why = "GROW cannot grow a fixed buffer";
    if (!l.why && !desc->buffer && desc->buffer_size)
        l.why = "buffer_size without a buffer";
    if (l.why) {
        sp__log_to(&desc->logger, name, SP__MSG_BAD_DESC, l.why);
        return NULL;
    }

    sp_pool *p;
    if (desc->buffer) {
        uintptr_t start = (uintptr_t)desc->buffer, end = start + desc->buffer_size;
        if (end < start) end = UINTPTR_MAX;
        size_t cap = 0;
        if (fixed_fits(start, end, &l, 1, NULL)) {
            /* Binary search for the most members that fit, from a lower bound that surely does. */
            size_t overhead = sizeof(sp_pool) + 2u * SP__MAX_ALIGN;
            size_t lo = desc->buffer_size > overhead
                            ? (desc->buffer_size - overhead) / (sizeof(sp__slot) + l.stride)
                            : 1u;
            if (lo == 0 || lo > SP__SLOT_LIMIT || !fixed_fits(start, end, &l, lo, NULL)) lo = 1;
            size_t hi = SP__SLOT_LIMIT;
            while (lo < hi) {
                size_t mid = lo + (hi - lo + 1u) / 2u;
                if (fixed_fits(start, end, &l, mid, NULL))
                    lo = mid;
                else
                    hi = mid - 1u;
            }
            cap = lo;
        }
        const char *why = cap == 0                 ? "buffer is too small for one member"
                          : desc->initial > cap    ? "initial is larger than the buffer holds"
                                                   : NULL;
        if (why) {
            sp__log_to(&desc->logger, name, SP__MSG_BAD_DESC, why);
            return NULL;
        }
        uintptr_t items = 0;
        fixed_fits(start, end, &l, cap, &items);
        p = (sp_pool *)align_up(start, _Alignof(sp_pool));
        pool_setup(p, desc, &l, name);
        p->tag = sp__tag_acquire(&p->life_first);
        p->tag_bits = (uint64_t)p->tag << SP__SLOT_BITS;
        if (p->tag == 0) {
            sp__log(p, SP__MSG_NO_TAG, sp__tags_retired());
            return NULL;
        }
        p->fixed = true;
        p->capacity = cap;
        if (p->max == 0 || p->max > cap) p->max = cap;
        p->chunk_items = cap;
        p->slots = (unsigned char *)(p + 1);
        p->slot_cap = (uint32_t)cap;
        slots_init(p, 0, cap);
#if SP_DEBUG
        p->dbg = (sp__dbg *)align_up((uintptr_t)(p->slots + cap * sizeof(sp__oslot)), 8u);
        memset(p->dbg, 0, cap * sizeof *p->dbg);
#endif
        p->ranges[0].items = (unsigned char *)items;
        p->ranges[0].cap = p->ranges[0].count = (uint32_t)cap;
        p->range_count = 1;
        range_gained(p, 0, 0, (uint32_t)cap);
        ranges_index(p);
        p->bytes = desc->buffer_size;
    } else {
        sp_allocator a = desc->allocator;
        if (!a.alloc) {
            a.alloc = sp__default_alloc;
            a.free = sp__default_free;
        }
        p = (sp_pool *)a.alloc(sizeof *p, _Alignof(sp_pool), a.user);
        if (!p) {
            sp__log_to(&desc->logger, name, SP__MSG_NOMEM, "pool");
            return NULL;
        }
        pool_setup(p, desc, &l, name);
        p->tag = sp__tag_acquire(&p->life_first);
        p->tag_bits = (uint64_t)p->tag << SP__SLOT_BITS;
        if (p->tag == 0) {
            sp__log(p, SP__MSG_NO_TAG, sp__tags_retired());
            a.free(p, sizeof *p, a.user);
            return NULL;
        }
        p->chunk_items = l.chunk_items;
        p->bytes = sizeof *p;
        (void)pool_reserve(p, desc); /* else the fallback: ranges from alloc/free */
    }
    if ((owner && !ranges_register(p, fns, owner)) || sp_prewarm(p, desc->initial) < desc->initial) {
        sp_pool_destroy(p);
        return NULL;
    }
    return p;
}

sp_pool *sp__pool_create_in(const sp_desc *desc, const sp__pool_owner *fns, void *owner,
                            const char *default_name) {
    if (!desc) {
        sp__log(NULL, SP__MSG_NULL_DESC);
        return NULL;
    }
    return pool_create(desc, desc->name ? desc->name : (default_name ? default_name : ""), fns, owner);
}

sp_pool *sp_pool_create(const sp_desc *desc) { return sp__pool_create_in(desc, NULL, NULL, NULL); }

static size_t report_sites(const sp_pool *p, const char *what, sp_log_level level);

/* The start of sp_clear and sp_pool_destroy: from here on every acquisition from the pool is
   refused (its free list moves to `doomed`, so the fast path finds nothing and the slow path
   checks the flag), and a member that a hook releases meanwhile joins `doomed` too. So the
   members only decrease and the teardown always ends. */
static void teardown_begin(sp_pool *p) {
    p->tearing_down = true;
    p->doomed = p->free_head;
    p->free_head = SP__NIL;
    routes_update(p);
}

static void teardown_end(sp_pool *p) {
    p->tearing_down = false;
    routes_update(p);
}

/* During a teardown, the member that a release just put on the free list is doomed instead. */
static void doom_released(sp_pool *p) {
    uint32_t idx = p->free_head;
    if (idx == SP__NIL) return; /* it retired */
    sp__slot *s = slot_at(p, idx);
    p->free_head = s->next;
    s->next = p->doomed;
    p->doomed = idx;
}

/* Takes every member out of its list and disposes it; leased members' lives end. Runs between
   teardown_begin and teardown_end: dispose hooks may release members (which join the doomed)
   but not acquire any, and cannot destroy, clear or trim the pool. */
static size_t dispose_all(sp_pool *p) {
    size_t n = 0;
    uint32_t from = 0; /* unordered pools: the leased slots below this are done */
    for (;;) {
        uint32_t idx = p->lease_head;
        sp__slot *s;
        bool was_leased;
        if (!p->ordered && p->leased) {
            idx = leased_from(p, from);
            if (idx != SP__NIL) from = idx + 1u;
        }
        if (idx != SP__NIL) {
            s = slot_at(p, idx);
            if (p->ordered) lease_unlink(p, idx, s);
            p->leased--;
            p->leased_disposed++;
            was_leased = true;
        } else if (p->doomed != SP__NIL) {
            idx = p->doomed;
            s = slot_at(p, idx);
            p->doomed = s->next;
            was_leased = false;
        } else {
            break;
        }
        member_dispose(p, idx, was_leased);
        n++;
    }
    return n;
}

/* The highest life any slot of the pool handed out (0: none): a leased slot's current life, a
   retired slot's last, and below the next life to hand out for the others (a slot's life only
   moves past one it handed out). The tag's next pool starts above it. O(slots). */
static uint32_t highest_life(const sp_pool *p) {
    uint32_t high = 0;
    for (uint32_t idx = 0; idx < p->slot_cap; idx++) {
        const sp__slot *s = slot_at(p, idx);
        uint32_t st = sp__state(s);
        uint32_t issued = st == SP__LEASED || st == SP__RETIRED ? sp__life(s) : sp__life(s) - 1u;
        if (issued > high) high = issued;
    }
    return high;
}

void sp_pool_destroy(sp_pool *pool) {
    if (!pool) return;
    if (pool->hook_depth > 0 || pool->destroying) {
        sp__log(pool, SP__MSG_IN_HOOK, "sp_pool_destroy");
        return;
    }
    sp_pool *p = pool;
    if (p->leased) {
        sp__log(p, SP__MSG_LEAKED, p->leased);
        report_sites(p, "leaked", SP_LOG_WARN);
    }
    p->destroying = true;
    teardown_begin(p);
    dispose_all(p);
    if (p->owner) {
        p->owner_fns->pool_gone(p->owner, p);
        p->owner = NULL;
    }
    sp__tag_release(p->tag, highest_life(p));
    for (uint32_t c = 0; c < p->range_count; c++) /* the memory goes back clean */
        if (p->ranges[c].items && p->ranges[c].count)
            DBG_UNPOISON(p->ranges[c].items, (size_t)p->ranges[c].count * p->stride);
    if (p->fixed) return;
    for (uint32_t c = pool_reserved(p) ? 1u : 0u; c < p->range_count; c++)
        if (p->ranges[c].items) pool_free(p, p->ranges[c].items, (size_t)p->ranges[c].count * p->stride);
    if (pool_reserved(p)) {
        p->vm.release(p->reserved_items, p->reserved_items_size, p->vm.user);
        p->vm.release(p->reserved_books, p->reserved_books_size, p->vm.user);
    } else {
        pool_free(p, p->slots, (size_t)p->slot_cap * p->slot_size);
#if SP_DEBUG
        pool_free(p, p->dbg, (size_t)p->slot_cap * sizeof *p->dbg);
#endif
    }
    sp_allocator a = p->allocator;
    a.free(p, sizeof *p, a.user);
}

/* The one line for a NULL pool where one is needed (decision: the default logger, since there
   is no pool to name). Out of line: the callers' fast paths only branch to it. */
static SP__NOINLINE void null_pool(const char *function) { sp__log(NULL, SP__MSG_NULL_POOL, function); }

/* Members are built lowest address first (the unbuilt list's order) and chained in that order,
   then the chain goes to the head of the free list whole: the pool hands them out lowest address
   first, as a pool built on demand does, so that a memory-order RECLAIM's round robin (which
   starts at the lowest slot) takes the oldest acquisition of a pool filled in order. (Pushing
   each one would hand them out highest first.) Until the splice the members are FREE in no list:
   a create hook that acquires from this pool builds another member instead. */
size_t sp_prewarm(sp_pool *pool, size_t n) {
    if (!pool) {
        null_pool("sp_prewarm");
        return 0;
    }
    /* Inside priority or a teardown the free list must stay empty: acquisitions are refused
       because they find nothing free. */
    if (pool->scoring > 0) {
        sp__log(pool, SP__MSG_IN_PRIORITY, "sp_prewarm");
        return 0;
    }
    if (pool->tearing_down) {
        sp__log(pool, SP__MSG_IN_HOOK, "sp_prewarm");
        return 0;
    }
    size_t built = 0;
    uint32_t first = SP__NIL, last = SP__NIL;
    while (built < n && (pool->max == 0 || pool->size < pool->max)) {
        uint32_t idx = member_build(pool, false);
        if (idx == SP__NIL) break;
        if (last == SP__NIL)
            first = idx;
        else
            slot_at(pool, last)->next = idx; /* looked up again: a hook may have moved the slots */
        last = idx;
        DBG_FREED(pool, idx, item_at(pool, idx));
        built++;
    }
    if (last != SP__NIL) {
        slot_at(pool, last)->next = pool->free_head;
        pool->free_head = first;
    }
    return built;
}

size_t sp_trim(sp_pool *pool, size_t keep_free) {
    if (!pool) {
        null_pool("sp_trim");
        return 0;
    }
    sp_pool *p = pool;
    if (p->hook_depth > 0 || p->destroying) {
        sp__log(p, SP__MSG_IN_HOOK, "sp_trim");
        return 0;
    }
    size_t free_count = 0;
    for (uint32_t i = p->free_head; i != SP__NIL; i = slot_at(p, i)->next) free_count++;
    size_t to_dispose = free_count > keep_free ? free_count - keep_free : 0;

    /* Mark victims from the highest slots down, so that whole ranges and pages empty out. BUSY
       on a free member is the mark: no hook can be running on a free member. */
    size_t marked = 0;
    for (uint32_t c = p->range_count; c-- > 0 && marked < to_dispose;) {
        const sp__range *r = &p->ranges[c];
        for (uint32_t i = r->first + r->count; i-- > r->first && marked < to_dispose;) {
            sp__slot *slot = slot_at(p, i);
            if ((slot->word & (SP__STATE_MASK | SP__BUSY)) == SP__FREE) {
                slot->word |= SP__BUSY;
                marked++;
            }
        }
    }
    /* Split the free list into keepers and victims (each chained through next) before any hook. */
    uint32_t victims = SP__NIL, keep_head = SP__NIL, keep_tail = SP__NIL;
    for (uint32_t i = p->free_head; i != SP__NIL;) {
        sp__slot *s = slot_at(p, i);
        uint32_t next = s->next;
        if (s->word & SP__BUSY) {
            s->next = victims;
            victims = i;
        } else {
            s->next = SP__NIL;
            if (keep_tail == SP__NIL)
                keep_head = i;
            else
                slot_at(p, keep_tail)->next = i;
            keep_tail = i;
        }
        i = next;
    }
    p->free_head = keep_head;
    size_t disposed = 0;
    for (uint32_t i = victims; i != SP__NIL;) {
        sp__slot *s = slot_at(p, i);
        uint32_t next = s->next;
        s->word &= ~(uint32_t)SP__BUSY;
        s->next = SP__NIL;
        member_dispose(p, i, false);
        disposed++;
        i = next;
    }
    ranges_release_empty(p);
    return disposed;
}

size_t sp_clear(sp_pool *pool) {
    if (!pool) {
        null_pool("sp_clear");
        return 0;
    }
    if (pool->hook_depth > 0 || pool->destroying) {
        sp__log(pool, SP__MSG_IN_HOOK, "sp_clear");
        return 0;
    }
    teardown_begin(pool);
    size_t n = dispose_all(pool);
    teardown_end(pool);
    ranges_release_empty(pool);
    return n;
}

sp_result sp_set_overflow(sp_pool *pool, sp_overflow overflow) {
    if (!pool) {
        null_pool("sp_set_overflow");
        return SP_ERR_INVALID;
    }
    if ((uint64_t)overflow > (uint64_t)SP_OVERFLOW_GROW || (pool->fixed && overflow == SP_OVERFLOW_GROW)) {
        sp__log(pool, SP__MSG_BAD_OVERFLOW,
                overflow == SP_OVERFLOW_GROW ? "GROW cannot grow a fixed buffer" : "unknown overflow policy");
        return SP_ERR_INVALID;
    }
    pool->overflow = overflow;
    return SP_OK;
}

sp_result sp_set_max(sp_pool *pool, size_t max) {
    if (!pool) {
        null_pool("sp_set_max");
        return SP_ERR_INVALID;
    }
    if (max > SP__SLOT_LIMIT) max = SP__SLOT_LIMIT;
    if (pool->fixed && (max == 0 || max > pool->capacity)) max = pool->capacity;
    pool->max = max;
    return SP_OK;
}

const char *sp_pool_name(const sp_pool *pool) {
    if (!pool) null_pool("sp_pool_name");
    return pool ? pool->name : NULL;
}

/* ---------------------------------------------------------------------------------------------
   Acquire / Release
   ------------------------------------------------------------------------------------------ */

/* Ends a leased member's life (it is already out of the lease list and on_release has run):
   it joins the free list, or retires when its counter is exhausted. */
static inline void life_end_to_free(sp_pool *p, uint32_t idx) {
    /* Next life, now free. The addition carries out of the word exactly when the life counter
       was at its last value: then the slot retires instead. */
    sp__slot *s = slot_at(p, idx);
    uint32_t step = (1u << SP__FLAG_BITS) - (SP__LEASED - SP__FREE);
    uint32_t word = s->word + step;
    if (SP__UNLIKELY(word < step)) {
        member_retire(p, idx);
        return;
    }
    s->word = word;
    free_push(p, idx, s);
    DBG_FREED(p, idx, item_at(p, idx));
}

/* on_acquire, apart so that the hook-free paths make no call (and save no registers). */
static SP__NOINLINE void *lease_hooked(sp_pool *p, uint32_t idx, void *item, const void *arg) {
    run_on_acquire(p, idx, item, arg);
    return item;
}

static inline void *lease(sp_pool *p, uint32_t idx, sp__slot *s, const void *arg) {
    s->word += SP__LEASED - SP__FREE; /* free members carry no flags */
    if (++p->leased > p->peak_leased) p->peak_leased = p->leased;
    p->acquired++;
    void *item = item_at(p, idx);
    DBG_LEASING(p, idx, item);
#if SP_DEBUG
    dbg_at(p, idx)->acq_file = NULL; /* the _at callers fill it in */
#endif
    if (SP__UNLIKELY(!p->plain_acquire)) {
        if (p->ordered) lease_append(p, idx, s); /* before the hook: it may iterate */
        if (p->on_acquire) return lease_hooked(p, idx, item, arg);
    }
    return item;
}

/* Unordered pools without a priority hook: round robin in memory order, from the slot after
   the last victim, so that every leased member takes its turn. */
static uint32_t reclaim_next_in_turn(sp_pool *p) {
    for (int pass = 0; pass < 2; pass++) { /* from the cursor to the end, then from the start */
        uint32_t from = pass ? 0u : p->reclaim_cursor;
        for (uint32_t i = leased_from(p, from); i != SP__NIL; i = leased_from(p, i + 1u)) {
            if (slot_at(p, i)->word & SP__BUSY) continue;
            p->reclaim_cursor = i + 1u;
            return i;
        }
    }
    return SP__NIL;
}

/* The leased member a reclaim takes: the lowest priority (the first in the pool's order on
   ties), or the first in the pool's order (the oldest, or the next in turn); never one that a
   hook is processing. */
static uint32_t reclaim_victim(sp_pool *p) {
    if (!p->ordered && !p->priority) return reclaim_next_in_turn(p);
    uint32_t best = SP__NIL;
    double best_priority = 0.0;
    /* While priority runs the pool cannot change (scoring: acquire, release and prewarm are
       refused; hooks: destroy, clear and trim), so the walk's links stay current and the
       victim is still leased and ours when the scan ends. */
    if (p->priority) {
        p->scoring++;
        routes_update(p);
    }
    for (uint32_t i = leased_first(p); i != SP__NIL; i = leased_next(p, i)) {
        if (slot_at(p, i)->word & SP__BUSY) continue;
        if (!p->priority) return i;
        double pr = run_priority(p, i);
        if (best == SP__NIL || pr < best_priority) { /* strict: the first wins a tie */
            best = i;
            best_priority = pr;
        }
    }
    if (p->priority) {
        p->scoring--;
        routes_update(p);
    }
    return best;
}

static void *acquire_slow(sp_pool *p, const void *arg, bool force);

/* The common reclaim, spelled out: an acquisition-order pool without hooks or priority whose
   oldest member is not busy and not at its last life. Its life ends and the next begins in one
   step (the word stays LEASED, the life goes up), and the member moves from the head of the
   lease list to the tail, as the general path would leave it. NULL when it does not apply. */
static inline void *reclaim_oldest_plain(sp_pool *p) {
    uint32_t idx = p->lease_head;
    if (idx == SP__NIL) return NULL;
    sp__slot *s = slot_at(p, idx);
    if ((s->word & SP__BUSY) || sp__life(s) == SP__LIFE_MAX) return NULL;
    s->word += 1u << SP__FLAG_BITS;
    p->acquired++;
    p->reclaimed++;
    if (s->next != SP__NIL) { /* not alone: to the tail */
        lease_unlink(p, idx, s);
        lease_append(p, idx, s);
    } else {
        *stamp_at(p, idx) = (uint32_t)p->acquired;
    }
    void *item = item_at(p, idx);
#if SP_DEBUG
    dbg_at(p, idx)->acq_file = NULL; /* the _at callers fill it in */
#endif
    return item;
}

static SP__NOINLINE void *reclaim(sp_pool *p, const void *arg, bool force) {
    uint32_t idx = reclaim_victim(p);
    if (idx == SP__NIL) {
        /* Not a drop: the pool did not refuse for want of room but because every candidate is
           busy in a hook (sp_acquire_force documents NULL for this case). A RECLAIM pool's
           sp_acquire counts it as a drop, as its callers see one. */
        sp__log(p, SP__MSG_NOT_RECLAIMABLE);
        if (!force) p->dropped++;
        return NULL;
    }
    sp__slot *s = slot_at(p, idx);
    void *item = item_at(p, idx);
    if (p->ordered)
        lease_unlink(p, idx, s);
    else
        s->next = SP__NIL; /* not marked as leased when a memory-order sp_release_all began */
    if (p->on_release) run_on_release(p, idx, item); /* still leased while it runs */
    p->leased--;
    p->reclaimed++;
    s = slot_at(p, idx);
    if (sp__life(s) == SP__LIFE_MAX) { /* its last life ended: retire it, build another */
        member_retire(p, idx);
        return acquire_slow(p, arg, force);
    }
    s->word += (1u << SP__FLAG_BITS) - (SP__LEASED - SP__FREE); /* next life, free for a moment */
    return lease(p, idx, s, arg);
}

static SP__NOINLINE void *acquire_slow(sp_pool *p, const void *arg, bool force) {
    /* Refused whatever is free (nothing is, by construction: see routes_update). Not drops. */
    if (p->scoring > 0) {
        sp__log(p, SP__MSG_IN_PRIORITY, "acquire");
        return NULL;
    }
    if (p->tearing_down) {
        sp__log(p, p->destroying ? SP__MSG_DESTROYING : SP__MSG_CLEARING);
        return NULL;
    }
    if (p->free_head != SP__NIL) { /* a hook may have freed one meanwhile */
        uint32_t idx = p->free_head;
        sp__slot *s = slot_at(p, idx);
        p->free_head = s->next;
        return lease(p, idx, s, arg);
    }
    bool past_max = p->max && p->size >= p->max;
    if (past_max && p->overflow != SP_OVERFLOW_GROW) {
        if (p->overflow == SP_OVERFLOW_RECLAIM || force) return reclaim(p, arg, force);
        p->dropped++;
        return NULL;
    }
    uint32_t idx = member_build(p, past_max);
    if (idx == SP__NIL) {
        /* A fixed buffer with retired slots has no room left below max: saturated after all. */
        if (p->fixed && p->leased > 0) {
            if (p->overflow == SP_OVERFLOW_RECLAIM || force) return reclaim(p, arg, force);
            p->dropped++;
        }
        return NULL;
    }
    if (past_max) {
        p->grown_past_max++;
        if (p->grown_past_max >= p->grow_warn_at) { /* 1, 2, 4, 8... members past: no spam */
            sp__log(p, SP__MSG_GROWN, p->max, p->size);
            p->grow_warn_at *= 2u;
        }
    }
    /* create may have acquired members of this pool meanwhile; this one is still ours. */
    return lease(p, idx, slot_at(p, idx), arg);
}

/* A free member of a pool that is not plain (a lease list to append to, or on_acquire): the
   same pop, out of line, so that the plain path keeps its registers. */
static SP__NOINLINE void *acquire_listed(sp_pool *p, uint32_t idx, const void *arg) {
    sp__slot *s = slot_at(p, idx);
    p->free_head = s->next;
    return lease(p, idx, s, arg);
}

/* No free member. A saturated acquisition-order pool without hooks or priority (the bullets of a
   RECLAIM pool) reclaims its oldest member right here, in a small function; everything else
   goes to acquire_slow. */
static SP__NOINLINE void *acquire_empty(sp_pool *p, const void *arg, bool force) {
    if (p->plain_reclaim && p->max && p->size >= p->max && p->overflow != SP_OVERFLOW_GROW &&
        (p->overflow == SP_OVERFLOW_RECLAIM || force)) {
        void *item = reclaim_oldest_plain(p);
        if (item) return item;
    }
    return acquire_slow(p, arg, force);
}

/* A free member of a pool that is not plain, or no free member: out of line. */
static SP__NOINLINE void *acquire_other(sp_pool *p, const void *arg, bool force) {
    uint32_t idx = p->free_head;
    if (idx == SP__NIL) return acquire_empty(p, arg, force);
    return acquire_listed(p, idx, arg);
}

static inline void *acquire_fast(sp_pool *p, const void *arg, bool force) {
    uint32_t idx = p->free_head;
    if (SP__UNLIKELY(idx >= p->plain_below)) return acquire_other(p, arg, force);
    sp__slot *s = plain_slot_at(p, idx);
    p->free_head = s->next;
    s->word += SP__LEASED - SP__FREE; /* free members carry no flags */
    if (++p->leased > p->peak_leased) p->peak_leased = p->leased;
    p->acquired++;
    /* plain: one live range, which holds every built member */
    void *item = (void *)(p->top_items + (uintptr_t)(idx - p->top_first) * p->stride);
    DBG_LEASING(p, idx, item);
#if SP_DEBUG
    dbg_at(p, idx)->acq_file = NULL; /* the _at callers fill it in */
#endif
    (void)arg;
    return item;
}

/* NULL for a NULL pool, with its line. */
static SP__NOINLINE void *acquire_null(const char *function) {
    null_pool(function);
    return NULL;
}

void *sp_acquire(sp_pool *pool) {
    return SP__LIKELY(pool != NULL) ? acquire_fast(pool, NULL, false) : acquire_null("sp_acquire");
}

void *sp_acquire_with(sp_pool *pool, const void *arg) {
    return SP__LIKELY(pool != NULL) ? acquire_fast(pool, arg, false) : acquire_null("sp_acquire_with");
}

void *sp_acquire_force(sp_pool *pool, const void *arg) {
    return SP__LIKELY(pool != NULL) ? acquire_fast(pool, arg, true) : acquire_null("sp_acquire_force");
}

static sp_handle handle_at(const sp_pool *p, uint32_t idx) {
    sp_handle h;
    h.id = (uint64_t)sp__life(slot_at(p, idx)) << (SP__SLOT_BITS + SP__TAG_BITS) |
           (uint64_t)p->tag << SP__SLOT_BITS | idx;
    return h;
}

void *sp_acquire_handle(sp_pool *pool, const void *arg, sp_handle *out) {
    sp_handle h = {0};
    void *item = NULL;
    if (SP__UNLIKELY(!pool)) null_pool("sp_acquire_handle");
    if (pool) {
        /* With a free member, acquire_fast leases exactly the head of the free list, so its slot
           is known; only the slow paths (build, reclaim) need the pointer mapped back. */
        uint32_t idx = pool->free_head;
        item = acquire_fast(pool, arg, false);
        if (item && idx == SP__NIL) idx = index_of(pool, item);
        if (item) h = handle_at(pool, idx);
    }
    if (out) *out = h;
    return item;
}

/* ---- the same, recording call sites (debug records; no-ops with SP_DEBUG=0) ---------- */

#if SP_DEBUG
/* The debug record of the member starting at item, or NULL for anything else. */
static sp__dbg *dbg_of(const sp_pool *p, const void *item) {
    uint32_t idx = item ? index_of(p, item) : SP__NIL;
    return idx == SP__NIL ? NULL : dbg_at(p, idx);
}
#endif

void sp__dbg_note_acquire(sp_pool *p, void *item, const char *file, int line) {
#if SP_DEBUG
    sp__dbg *rec = dbg_of(p, item);
    if (!rec) return;
    rec->acq_file = file;
    rec->acq_line = line > 0 ? (uint32_t)line : 0u;
#else
    (void)p, (void)item, (void)file, (void)line;
#endif
}

void sp__dbg_note_release(sp_pool *p, void *item, const char *file, int line) {
#if SP_DEBUG
    sp__dbg *rec = dbg_of(p, item);
    if (!rec) return;
    rec->rel_file = file;
    rec->rel_line = line > 0 ? (uint32_t)line : 0u;
#else
    (void)p, (void)item, (void)file, (void)line;
#endif
}

void *sp_acquire_at(sp_pool *pool, const char *file, int line) {
    return sp_acquire_with_at(pool, NULL, file, line);
}

void *sp_acquire_with_at(sp_pool *pool, const void *arg, const char *file, int line) {
    if (!pool) return acquire_null("sp_acquire");
    void *item = acquire_fast(pool, arg, false);
    if (SP_DEBUG && item) sp__dbg_note_acquire(pool, item, file, line);
    return item;
}

void *sp_acquire_handle_at(sp_pool *pool, const void *arg, sp_handle *out, const char *file, int line) {
    void *item = sp_acquire_handle(pool, arg, out);
    if (SP_DEBUG && item) sp__dbg_note_acquire(pool, item, file, line);
    return item;
}

void *sp_acquire_force_at(sp_pool *pool, const void *arg, const char *file, int line) {
    if (!pool) return acquire_null("sp_acquire_force");
    void *item = acquire_fast(pool, arg, true);
    if (SP_DEBUG && item) sp__dbg_note_acquire(pool, item, file, line);
    return item;
}

static SP__NOINLINE sp_result release_refused(sp_pool *p, uint32_t idx, void *item) {
    if (idx == SP__NIL) {
        sp__log(p, SP__MSG_FOREIGN, item);
        return SP_ERR_FOREIGN;
    }
    const sp__slot *s = slot_at(p, idx);
    /* Busy: its own hook is running. Free: create, or dispose of a free member; leased: a
       teardown's dispose, unless on_release (releasing) or on_acquire. */
    if ((s->word & SP__BUSY) && (sp__state(s) == SP__FREE || sp__state(s) == SP__LEASED)) {
        bool lifecycle = sp__state(s) == SP__FREE || (p->tearing_down && !(s->word & SP__RELEASING));
        sp__log(p, lifecycle ? SP__MSG_REENTER_LIFECYCLE : SP__MSG_REENTER, item);
        return SP_ERR_NOT_LEASED;
    }
    if (sp__state(s) == SP__UNBUILT || sp__state(s) == SP__RETIRED) {
        sp__log(p, SP__MSG_FOREIGN, item);
        return SP_ERR_FOREIGN;
    }
    sp__log(p, SP__MSG_DOUBLE_RELEASE, item);
    return SP_ERR_NOT_LEASED;
}

/* Every release of a found member that is not the plain case: refusals, on_release, and a
   retirement. */
static SP__NOINLINE sp_result release_general(sp_pool *pool, uint32_t idx, void *item) {
    if (pool->scoring > 0) { /* priority only scores: the reclaim's candidates must stay put */
        sp__log(pool, SP__MSG_IN_PRIORITY, "sp_release");
        return SP_ERR_INVALID;
    }
    if ((slot_at(pool, idx)->word & (SP__STATE_MASK | SP__BUSY)) != SP__LEASED)
        return release_refused(pool, idx, item);
    if (pool->ordered) lease_unlink(pool, idx, slot_at(pool, idx));
    /* Until on_release returns the member is still leased (is_leased, resolve, and the stats
       agree); its life ends after the hook. */
    if (pool->on_release) run_on_release(pool, idx, item);
    pool->leased--;
    life_end_to_free(pool, idx);
    if (pool->tearing_down) doom_released(pool);
    return SP_OK;
}

/* The release of member idx without a hook: leased, not busy, not at its last life (where the
   word would carry out); anything else goes to release_general. `plain` (a constant where this
   is inlined) says a plain pool: memory order, 8-byte slots, no on_release. Otherwise the pool
   has a lease list to unlink from, or an on_release hook. */
/* "Leased, not busy, not at its last life" in one compare: rotating word ^ LEASED right by 3
   puts the state and BUSY bits (zero exactly when leased and not busy) on top and the life below
   them, so the result is below 2^29 - 2 exactly when both hold and the life is not all ones
   (SP__LIFE_MAX). RELEASING, now bit 0, is only ever set with BUSY. */
static inline bool releasable(uint32_t word) {
    uint32_t t = word ^ SP__LEASED;
    t = (t >> 3) | (t << 29);
    return t < (1u << 29) - 2u;
}

static inline sp_result release_hookless(sp_pool *pool, uint32_t idx, void *item, bool plain) {
    const uint32_t step = (1u << SP__FLAG_BITS) - (SP__LEASED - SP__FREE);
    sp__slot *s = plain ? plain_slot_at(pool, idx) : slot_at(pool, idx);
    uint32_t word = s->word;
    if (SP__UNLIKELY(!releasable(word) || (!plain && pool->release_slow)))
        return release_general(pool, idx, item);
    if (!plain) lease_unlink(pool, idx, s); /* not plain, not release_slow: ordered */
    pool->leased--;
    s->word = word + step; /* next life, now free */
    free_push(pool, idx, s);
    DBG_FREED(pool, idx, item);
    return SP_OK;
}

/* A NULL pool given a member. (Any call here costs the acquisition-order release path two
   register moves: GCC then keeps the member in another register. The plain path is unchanged.) */
static SP__NOINLINE sp_result release_null(const void *item) {
    if (!item) return SP_OK;
    null_pool("sp_release");
    return SP_ERR_INVALID;
}

/* Every release that is not a plain pool's member of the top range: a pool with a lease list or
   on_release (top_plain is 0 for those), a fallback pool's smaller ranges, refusals. Out of line
   and reached by a tail call, so that sp_release itself stays call-free. */
static SP__NOINLINE sp_result release_other(sp_pool *pool, void *item) {
    if (SP__UNLIKELY(!pool)) return release_null(item);
    if (!item) return SP_OK; /* NULL is never a member, so it always lands here */
    uint32_t idx = index_of(pool, item);
    if (SP__UNLIKELY(idx == SP__NIL)) return release_refused(pool, idx, item);
    /* The free list hands this member out next: start fetching its line for the caller's
       writes now, in parallel with the slot's. */
    SP__PREFETCH_W(item);
    if (!pool->plain_release) return release_hookless(pool, idx, item, false);
    return release_hookless(pool, idx, item, true);
}

sp_result sp_release(sp_pool *pool, void *item) {
    if (SP__UNLIKELY(!pool)) return release_other(pool, item); /* same arguments: no moves */
    /* index_of without its SP__NIL answer, against top_plain: a hit is a plain pool's member of
       the top range and goes straight to the plain path. The check is exact (item is the start
       of member q), so NULL never passes it. */
    uint64_t q = member_number(pool, pool->top_items, (uintptr_t)item);
    if (SP__UNLIKELY(q >= pool->top_plain)) return release_other(pool, item);
    SP__PREFETCH_W(item); /* see release_other */
    return release_hookless(pool, pool->top_first + (uint32_t)q, item, true);
}

sp_result sp_release_at(sp_pool *pool, void *item, const char *file, int line) {
    /* The site is noted first: a checksum mismatch found at the next acquisition names it. The
       record is bookkeeping, so a refused release leaves the member's state untouched. */
    if (SP_DEBUG && pool && item && sp_is_leased(pool, item)) sp__dbg_note_release(pool, item, file, line);
    return sp_release(pool, item);
}

/* The mark sp_release_all puts on the members of a memory-order pool that are leased when it
   starts: such a member is in no list, so its link is free to carry it. Never a slot index. A
   release overwrites the link (free list), a build and a reclaim reset it, so a member acquired
   during the call never carries the mark. */
#define SP__LEASED_AT_START (SP__NIL - 1u)

size_t sp_release_all(sp_pool *pool) {
    if (!pool) {
        null_pool("sp_release_all");
        return 0;
    }
    if (pool->scoring > 0) {
        sp__log(pool, SP__MSG_IN_PRIORITY, "sp_release_all");
        return 0;
    }
    size_t n = 0;
    /* Exactly the members leased now are released (skipping those whose own hooks are running:
       a release_all called from a hook); members that on_release hooks acquire meanwhile stay
       leased, so the call always ends. */
    if (!pool->ordered) {
        for (uint32_t i = leased_from(pool, 0); i != SP__NIL; i = leased_from(pool, i + 1u))
            slot_at(pool, i)->next = SP__LEASED_AT_START;
        for (uint32_t i = leased_from(pool, 0); i != SP__NIL; i = leased_from(pool, i + 1u)) {
            const sp__slot *s = slot_at(pool, i);
            if (s->next != SP__LEASED_AT_START || (s->word & SP__BUSY)) continue;
            if (sp_release(pool, item_at(pool, i)) == SP_OK) n++;
        }
        return n;
    }
    /* Acquisition order: the members leased now are the list's members up to the newest stamp;
       acquisitions append behind them. Hooks may release any of them meanwhile: start from the
       head again after each release. */
    stamps_fresh(pool);
    uint32_t newest = (uint32_t)(pool->acquired - pool->stamp_origin);
    uint32_t idx = pool->lease_head;
    while (idx != SP__NIL && stamp_rank(pool, idx) <= newest) {
        if (slot_at(pool, idx)->word & SP__BUSY) {
            idx = slot_at(pool, idx)->next;
            continue;
        }
        if (sp_release(pool, item_at(pool, idx)) == SP_OK) {
            n++;
            idx = pool->lease_head;
        } else {
            idx = slot_at(pool, idx)->next;
        }
    }
    return n;
}

/* ---------------------------------------------------------------------------------------------
   Handles
   ------------------------------------------------------------------------------------------ */

sp_handle sp_handle_of(const sp_pool *pool, const void *item) {
    sp_handle h = {0};
    if (!pool) null_pool("sp_handle_of");
    if (!pool || !item) return h;
    uint32_t idx = index_of(pool, item);
    if (idx == SP__NIL) return h;
    if (sp__state(slot_at(pool, idx)) != SP__LEASED) return h;
    return handle_at(pool, idx);
}

/* Counts a refused resolve of one kind and logs the first, then every count that reaches a power
   of two, with the count: a loop of bad lookups cannot flood the log. The counters are
   bookkeeping, not state: bumping them from a const lookup is harmless (a pool is used by one
   thread at a time, and pools are never const objects). */
static void resolve_warn(const sp_pool *pool, sp__msg msg, sp_handle handle) {
    sp_pool *p = (sp_pool *)(uintptr_t)pool;
    uint64_t *count = msg == SP__MSG_FOREIGN_HANDLE ? &p->foreign_handles : &p->forged_handles;
    uint64_t n = ++*count;
    if ((n & (n - 1u)) == 0) sp__log(pool, msg, (unsigned long long)handle.id, (unsigned long long)n);
}

/* Why a handle did not resolve. A stale handle is the expected case (the turret's target died)
   and stays silent; a handle of another pool (another tag, or a life below this pool's first:
   an earlier pool under the same tag), or one naming a slot or a life that never existed, is a
   bug in the caller and gets a rate-limited warning. */
static SP__NOINLINE void *resolve_refused(const sp_pool *pool, sp_handle handle) {
    if (handle.id == 0) return NULL;
    uint32_t idx = (uint32_t)(handle.id & (SP__SLOT_LIMIT - 1u));
    uint32_t tag = (uint32_t)(handle.id >> SP__SLOT_BITS) & SP__TAG_MAX;
    uint32_t life = (uint32_t)(handle.id >> (SP__SLOT_BITS + SP__TAG_BITS));
    if (tag != pool->tag || (life != 0 && life < pool->life_first)) {
        resolve_warn(pool, SP__MSG_FOREIGN_HANDLE, handle);
        return NULL;
    }
    uint32_t reached = 0; /* the highest life this slot can have handed out */
    if (idx < pool->slot_cap) {
        const sp__slot *s = slot_at(pool, idx);
        reached = sp__state(s) == SP__LEASED || sp__state(s) == SP__RETIRED ? sp__life(s) : sp__life(s) - 1u;
    }
    if (life == 0 || life > reached) resolve_warn(pool, SP__MSG_FORGED_HANDLE, handle);
    return NULL;
}

/* Every resolve that sp_resolve does not finish in line: a NULL pool, a pool of several live
   ranges (the fallback), a handle that does not name a leased member. */
static SP__NOINLINE void *resolve_other(const sp_pool *pool, sp_handle handle) {
    if (!pool) {
        null_pool("sp_resolve");
        return NULL;
    }
    uint32_t idx = (uint32_t)(handle.id & (SP__SLOT_LIMIT - 1u));
    uint32_t tag = (uint32_t)(handle.id >> SP__SLOT_BITS) & SP__TAG_MAX;
    uint32_t life = (uint32_t)(handle.id >> (SP__SLOT_BITS + SP__TAG_BITS));
    if (tag != pool->tag || idx >= pool->slot_cap) return resolve_refused(pool, handle);
    /* A leased slot always lies in a live range, so the word alone decides. */
    uint32_t word = slot_at(pool, idx)->word;
    if ((word & ~(uint32_t)(SP__BUSY | SP__RELEASING)) != (life << SP__FLAG_BITS | SP__LEASED)) {
        /* A life this pool handed out and the slot has moved past: stale, the expected case,
           and silent. */
        if (life >= pool->life_first && life < word >> SP__FLAG_BITS) return NULL;
        return resolve_refused(pool, handle);
    }
    return item_at(pool, idx);
}

void *sp_resolve(const sp_pool *pool, sp_handle handle) {
    /* The tag and the slot index in one test: subtracting the pool's tag in place leaves the
       low 36 bits equal to the slot index exactly when the tag is the pool's (any other tag
       leaves 2^24 or more there). */
    uint64_t low = (handle.id - (pool ? pool->tag_bits : 0u)) & ((UINT64_C(1) << (SP__SLOT_BITS + SP__TAG_BITS)) - 1u);
    if (SP__UNLIKELY(!pool || low >= pool->resolve_below)) return resolve_other(pool, handle);
    uint32_t idx = (uint32_t)low;
    uint32_t want = (uint32_t)(handle.id >> (SP__SLOT_BITS + SP__TAG_BITS)) << SP__FLAG_BITS | SP__LEASED;
    if (SP__UNLIKELY((slot_at(pool, idx)->word & ~(uint32_t)(SP__BUSY | SP__RELEASING)) != want))
        return resolve_other(pool, handle);
    /* one live range: it holds every leased member */
    return (void *)(pool->top_items + (uintptr_t)(idx - pool->top_first) * pool->stride);
}

bool sp_is_leased(const sp_pool *pool, const void *item) {
    if (!pool) null_pool("sp_is_leased");
    if (!pool || !item) return false;
    uint32_t idx = index_of(pool, item);
    return idx != SP__NIL && sp__state(slot_at(pool, idx)) == SP__LEASED;
}

bool sp__pool_has_member(const sp_pool *pool, const void *item) {
    uint32_t idx = index_of(pool, item);
    if (idx == SP__NIL) return false;
    uint32_t st = sp__state(slot_at(pool, idx));
    return st == SP__FREE || st == SP__LEASED;
}

/* ---------------------------------------------------------------------------------------------
   Iteration
   ------------------------------------------------------------------------------------------ */

void *sp_first(const sp_pool *pool) {
    if (!pool) {
        null_pool("sp_first");
        return NULL;
    }
    uint32_t idx = leased_first(pool);
    return idx == SP__NIL ? NULL : item_at(pool, idx);
}

void *sp_next(const sp_pool *pool, const void *item) {
    if (!pool) {
        null_pool("sp_next");
        return NULL;
    }
    if (!item) return NULL;
    uint32_t idx = index_of(pool, item);
    if (idx == SP__NIL) return NULL;
    /* A member in its on_release hook is already out of the list: its links are stale. */
    if (!visible_leased(slot_at(pool, idx)->word)) return NULL;
    uint32_t next = leased_next(pool, idx);
    return next == SP__NIL ? NULL : item_at(pool, next);
}

/* ---- the cursor: sp_iter, and sp_each, sp_leased_each on top of it -----------------------
   Memory order keeps its place by slot index: the next member is the next leased slot, whatever
   happened to this one. Acquisition order keeps it by slot and life (the word) of the member,
   of its neighbours in the lease list and by the member's stamp, never by a link alone:
     - the member is still in the same life: its link is current;
     - else its next is: new members are appended behind it, so it is still the next;
     - else its prev is (or it was the head): the member after the prev (the head) is;
     - else the first member whose stamp ranks after the member's (searched from the tail).
   Each is the first leased member after the place, so a walk never visits a life twice and
   skips none. */

/* The word of a member that the cursor saw leased, as it must still be for the same life in the
   list (BUSY comes and goes with hooks; RELEASING means out of the list). */
static inline uint32_t cursor_word(uint32_t word) { return word & ~(uint32_t)SP__BUSY; }

static inline bool still_leased(const sp_pool *p, uint32_t idx, uint32_t word) {
    return idx != SP__NIL && cursor_word(slot_at(p, idx)->word) == word;
}

/* An acquisition-order pool's slot, whose size is known: the cursor's reads. */
static inline const sp__oslot *oslot_at(const sp_pool *p, uint32_t idx) {
    return (const sp__oslot *)(const void *)p->slots + idx;
}

/* The cursor at leased member idx of an acquisition-order pool, whose prev in the lease list
   is `prev` with word `prev_word`. */
static inline void cursor_fill(const sp_pool *p, sp_iter *it, uint32_t idx, uint32_t prev,
                               uint32_t prev_word) {
    const sp__oslot *o = oslot_at(p, idx);
    uint32_t next = o->s.next;
    it->item = item_at(p, idx);
    it->_slot = idx;
    it->_word = cursor_word(o->s.word);
    it->_next = next;
    it->_next_word = next != SP__NIL ? cursor_word(oslot_at(p, next)->s.word) : 0u;
    it->_prev = prev;
    it->_prev_word = prev_word;
    it->_stamp = o->stamp;
    it->_origin = p->stamp_origin;
}

static inline void cursor_at(const sp_pool *p, sp_iter *it, uint32_t idx) {
    if (idx == SP__NIL) {
        memset(it, 0, sizeof *it);
        return;
    }
    if (!p->ordered) {
        it->item = item_at(p, idx);
        it->_slot = idx;
        return;
    }
    uint32_t prev = oslot_at(p, idx)->prev;
    cursor_fill(p, it, idx, prev, prev != SP__NIL ? cursor_word(oslot_at(p, prev)->s.word) : 0u);
}

/* The member after the cursor's place, SP__NIL at the end; *lost when the place cannot be found
   again (see stamps_fresh: only after 2^31 acquisitions during one walk). */
static uint32_t cursor_successor(const sp_pool *p, const sp_iter *it, bool *lost) {
    *lost = false;
    if (!p->ordered) return leased_from(p, it->_slot + 1u);
    if (still_leased(p, it->_slot, it->_word)) return slot_at(p, it->_slot)->next;
    if (still_leased(p, it->_next, it->_next_word)) return it->_next;
    if (it->_prev == SP__NIL) return p->lease_head;
    if (still_leased(p, it->_prev, it->_prev_word)) return slot_at(p, it->_prev)->next;
    if (it->_origin != p->stamp_origin || p->acquired - p->stamp_origin >= (UINT64_C(1) << 32)) {
        *lost = true;
        return SP__NIL;
    }
    uint32_t rank = it->_stamp - (uint32_t)p->stamp_origin, found = SP__NIL;
    for (uint32_t i = p->lease_tail; i != SP__NIL && stamp_rank(p, i) > rank; i = *prev_at(p, i)) found = i;
    return found;
}

sp_iter sp_iter_first(sp_pool *pool) {
    sp_iter it;
    memset(&it, 0, sizeof it);
    if (!pool) {
        null_pool("sp_iter_first");
        return it;
    }
    stamps_fresh(pool);
    cursor_at(pool, &it, leased_first(pool));
    return it;
}

/* cursor_successor out of line, with its line when the walk lost its place: the loops that
   call it keep their registers for the common step. */
static SP__NOINLINE uint32_t walk_successor(const sp_pool *pool, const sp_iter *it) {
    bool lost;
    uint32_t next = cursor_successor(pool, it, &lost);
    if (lost) sp__log(pool, SP__MSG_WALK_LOST);
    return next;
}

/* The steps sp_iter_next leaves out of line: a NULL pool, a cursor at the end, the end of a
   range in memory order, and a member that left its life in acquisition order. */
static SP__NOINLINE void iter_next_slow(sp_pool *pool, sp_iter *it) {
    if (!pool) {
        null_pool("sp_iter_next");
        if (it) memset(it, 0, sizeof *it);
        return;
    }
    if (!it || !it->item) return;
    cursor_at(pool, it, walk_successor(pool, it));
}

void sp_iter_next(sp_pool *pool, sp_iter *it) {
    if (SP__UNLIKELY(!pool || !it || !it->item)) {
        iter_next_slow(pool, it);
        return;
    }
    if (pool->ordered) { /* still the same life: its link is current */
        const sp__oslot *o = oslot_at(pool, it->_slot);
        if (SP__LIKELY(cursor_word(o->s.word) == it->_word)) {
            uint32_t next = o->s.next;
            if (next == SP__NIL)
                memset(it, 0, sizeof *it);
            else /* its prev is the member the cursor leaves */
                cursor_fill(pool, it, next, it->_slot, it->_word);
            return;
        }
    } else { /* the rest of the top range */
        uint32_t in_top = it->_slot + 1u - pool->top_first;
        for (uint32_t i = in_top; i < pool->top_count; i++) {
            if (visible_leased(plain_slot_at(pool, pool->top_first + i)->word)) {
                it->_slot = pool->top_first + i;
                it->item = (void *)(pool->top_items + (uintptr_t)i * pool->stride);
                return;
            }
        }
    }
    iter_next_slow(pool, it);
}

/* sp_each in memory order: every built slot in turn (the cursor's rule, without its calls). fn
   may acquire, release, grow the slot array or add ranges, so the loop bounds and arrays are
   read again after every call. */
static size_t each_in_memory_order(sp_pool *pool, sp_each_fn fn, void *user) {
    size_t n = 0;
    for (uint32_t c = 0; c < pool->range_count; c++) {
        for (uint32_t i = 0; i < pool->ranges[c].count; i++) {
            if (!visible_leased(slot_at(pool, pool->ranges[c].first + i)->word)) continue;
            n++;
            pool->hook_depth++;
            bool go_on = fn(pool->ranges[c].items + (size_t)i * pool->stride, user);
            pool->hook_depth--;
            if (!go_on) return n;
        }
    }
    return n;
}

size_t sp_each(sp_pool *pool, sp_each_fn fn, void *user) {
    if (!pool) {
        null_pool("sp_each");
        return 0;
    }
    if (!fn) return 0;
    if (!pool->ordered) return each_in_memory_order(pool, fn, user);
    /* The cursor's rules, with its state in locals and its common step spelled out (fn left
       the member in the same life: follow its link); anything else goes through
       cursor_successor. fn counts as a hook of the pool (hook_depth): destroy, clear and trim
       are refused in it. */
    size_t n = 0;
    stamps_fresh(pool);
    const uint64_t origin = pool->stamp_origin; /* moves only after 2^31 acquisitions in fn */
    for (uint32_t idx = pool->lease_head; idx != SP__NIL;) {
        const sp__oslot *o = oslot_at(pool, idx);
        uint32_t word = cursor_word(o->s.word), next = o->s.next, prev = o->prev, stamp = o->stamp;
        uint32_t next_word = next != SP__NIL ? cursor_word(oslot_at(pool, next)->s.word) : 0u;
        uint32_t prev_word = prev != SP__NIL ? cursor_word(oslot_at(pool, prev)->s.word) : 0u;
        void *item = item_at(pool, idx);
        n++;
        pool->hook_depth++;
        bool go_on = fn(item, user);
        pool->hook_depth--;
        if (!go_on) break;
        o = oslot_at(pool, idx); /* fn may have moved the slots (growth) */
        if (SP__LIKELY(cursor_word(o->s.word) == word)) {
            idx = o->s.next;
            continue;
        }
        sp_iter it = {item, idx, word, next, next_word, prev, prev_word, stamp, origin};
        idx = walk_successor(pool, &it);
    }
    return n;
}

/* ---------------------------------------------------------------------------------------------
   Leak reports
   ------------------------------------------------------------------------------------------ */

static void leased_site(const sp_pool *p, uint32_t idx, const char **file, int *line) {
#if SP_DEBUG
    const sp__dbg *rec = dbg_at(p, idx);
    *file = rec->acq_file;
    *line = rec->acq_file ? (int)rec->acq_line : 0;
#else
    (void)p, (void)idx;
    *file = NULL;
    *line = 0;
#endif
}

size_t sp_leased_each(const sp_pool *pool, sp_leased_fn fn, void *user) {
    if (!pool) {
        null_pool("sp_leased_each");
        return 0;
    }
    /* The cursor, so that fn releasing members cannot lead the walk astray; fn counts as a hook
       (pools are never const objects). */
    sp_pool *p = (sp_pool *)(uintptr_t)pool;
    size_t n = 0;
    for (sp_iter it = sp_iter_first(p); it.item; sp_iter_next(p, &it)) {
        const char *file;
        int line;
        leased_site(p, it._slot, &file, &line);
        if (fn) {
            p->hook_depth++;
            fn(it.item, file, line, user);
            p->hook_depth--;
        }
        n++;
    }
    return n;
}

#define SP__REPORT_SITES 8

/* One log line per acquisition site of the leased members (the first SP__REPORT_SITES sites in
   the pool's order, then one line for the rest). */
static size_t report_sites(const sp_pool *p, const char *what, sp_log_level level) {
    struct {
        const char *file;
        int line;
        size_t count;
    } sites[SP__REPORT_SITES];
    size_t nsites = 0, other = 0, total = 0;
    for (uint32_t i = leased_first(p); i != SP__NIL; i = leased_next(p, i)) {
        const char *file;
        int line;
        leased_site(p, i, &file, &line);
        total++;
        size_t k = 0;
        while (k < nsites && !(sites[k].line == line && (sites[k].file == file ||
                                                        (file && sites[k].file && strcmp(file, sites[k].file) == 0))))
            k++;
        if (k < nsites) {
            sites[k].count++;
        } else if (nsites < SP__REPORT_SITES) {
            sites[nsites].file = file;
            sites[nsites].line = line;
            sites[nsites].count = 1;
            nsites++;
        } else {
            other++;
        }
    }
    if (!SP_DEBUG) { /* no debug records: one line, saying how to get the sites */
        if (total) sp__log_level(p, level, SP__MSG_NO_SITES, total, what);
        return total;
    }
    for (size_t k = 0; k < nsites; k++) {
        if (sites[k].file)
            sp__log_level(p, level, SP__MSG_LEAK_SITE, sites[k].count, what, sites[k].file, sites[k].line);
        else
            sp__log_level(p, level, SP__MSG_LEAK_NO_SITE, sites[k].count, what);
    }
    if (other) sp__log_level(p, level, SP__MSG_LEAK_OTHER_SITES, other, what);
    return total;
}

size_t sp_leak_report(const sp_pool *pool, sp_log_level level) {
    if (!pool) {
        null_pool("sp_leak_report");
        return 0;
    }
    return report_sites(pool, "leased", level);
}

/* ---------------------------------------------------------------------------------------------
   Stats
   ------------------------------------------------------------------------------------------ */

void sp_stats_get(const sp_pool *pool, sp_stats *out) {
    if (!out) return;
    memset(out, 0, sizeof *out);
    if (!pool) {
        null_pool("sp_stats_get");
        return;
    }
    out->size = pool->size;
    out->leased = pool->leased;
    out->free = pool->size >= pool->leased ? pool->size - pool->leased : 0;
    out->max = pool->max;
    out->peak_leased = pool->peak_leased;
    out->bytes = pool->bytes;
    out->created = pool->created;
    out->disposed = pool->disposed;
    out->acquired = pool->acquired;
    out->released = pool->acquired - pool->leased - pool->leased_disposed;
    out->reclaimed = pool->reclaimed;
    out->dropped = pool->dropped;
    out->grown_past_max = pool->grown_past_max;
    out->bytes_reserved = pool->reserved_items_size + pool->reserved_books_size;
}

/* ---------------------------------------------------------------------------------------------
   White-box checks
   ------------------------------------------------------------------------------------------ */

void sp__debug_set_life(sp_pool *pool, const void *item, uint32_t life) {
    uint32_t idx = index_of(pool, item);
    SP_ASSERT(idx != SP__NIL && life >= 1u && life <= SP__LIFE_MAX);
    sp__slot *s = slot_at(pool, idx);
    s->word = life << SP__FLAG_BITS | (s->word & ((1u << SP__FLAG_BITS) - 1u));
}

void sp__debug_set_acquired(sp_pool *pool, uint64_t acquired) { pool->acquired = acquired; }

bool sp__pool_check(const sp_pool *p) {
    size_t leased = 0, leased_states = 0, free_n = 0, built = 0, reserved = 0;
    uint32_t prev = SP__NIL;
    for (uint32_t i = p->lease_head; i != SP__NIL; i = slot_at(p, i)->next) {
        const sp__slot *s = slot_at(p, i);
        if (!p->ordered || sp__state(s) != SP__LEASED || *prev_at(p, i) != prev) return false;
        /* acquisition order: stamps rank higher along the list (while the ranks are exact) */
        if (prev != SP__NIL && p->acquired - p->stamp_origin < (UINT64_C(1) << 32) &&
            stamp_rank(p, i) <= stamp_rank(p, prev))
            return false;
        prev = i;
        if (++leased > p->reserved) return false;
    }
    if (prev != p->lease_tail) return false;
    for (uint32_t i = p->free_head; i != SP__NIL; i = slot_at(p, i)->next) {
        if (sp__state(slot_at(p, i)) != SP__FREE) return false;
        if (++free_n > p->reserved) return false;
    }
    for (uint32_t c = 0; c < p->range_count; c++) {
        const sp__range *r = &p->ranges[c];
        uint32_t b = 0;
        if (r->count > r->cap || (!r->items && r->count)) return false;
        if (c && r->first != p->ranges[c - 1u].first + p->ranges[c - 1u].cap) return false;
        for (uint32_t i = 0; i < r->count; i++) {
            uint32_t st = sp__state(slot_at(p, r->first + i));
            if (st == SP__FREE || st == SP__LEASED) b++;
            leased_states += st == SP__LEASED;
            if (index_of(p, r->items + (size_t)i * p->stride) != r->first + i) return false;
        }
        if (b != r->built) return false;
        built += b;
        reserved += r->count;
        if (r->count && r->first + r->count > p->slot_cap) return false;
    }
    /* Outside live ranges, no slot holds a member; no slot's life is below the pool's first
       (those lives belong to earlier pools of its tag). */
    for (uint32_t idx = 0; idx < p->slot_cap; idx++) {
        if (sp__life(slot_at(p, idx)) < p->life_first) return false;
        const sp__range *r = &p->ranges[range_of_index(p, idx)];
        uint32_t st = sp__state(slot_at(p, idx));
        bool live = p->range_count && idx >= r->first && idx - r->first < r->count;
        if (!live && (st == SP__FREE || st == SP__LEASED)) return false;
    }
    if (!p->ordered) leased = leased_states; /* no list: the states are the leased set */
    return leased == p->leased && leased_states == p->leased && built == p->size &&
           leased + free_n == p->size &&
           reserved == p->reserved && p->created - p->disposed == p->size;
}
