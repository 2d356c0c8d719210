/* SPDX-License-Identifier: Zlib */
/* pool_internal.h -- what the pool's files share: the slot and range helpers, the member test,
   the lists, the hook runner and the functions one file offers the others (sp__). The hot paths'
   helpers are static inline here, so that every file inlines them as pool.c did when it was one
   file. Private: nothing here is part of the API. */
#ifndef SP_POOL_INTERNAL_H
#define SP_POOL_INTERNAL_H

#include "sp_internal.h"
#include "sp_os.h"

#include <string.h>

/* memory.c */
void sp__ranges_index(sp_pool *p);
void sp__range_gained(sp_pool *p, uint32_t c, uint32_t from, uint32_t to);
size_t sp__slot_bytes(bool ordered);
size_t sp__slots_front(bool ordered);
void sp__slots_free(sp_pool *p);
void sp__slots_init(sp_pool *p, uint64_t from, uint64_t to);
void sp__ranges_release_empty(sp_pool *p);
uint32_t sp__member_build(sp_pool *p, bool past_max);
size_t sp__build_onto(sp_pool *p, size_t n, uint32_t *head);
void sp__member_dispose(sp_pool *p, uint32_t idx, bool ends_life);
void sp__member_retire(sp_pool *p, uint32_t idx);
bool sp__ranges_register(sp_pool *p, const sp__pool_owner *fns, void *owner);
bool sp__pool_reserve(sp_pool *p, const sp_desc *d);
/* lease.c */
void sp__routes_update(sp_pool *p);
void *sp__acquire_other(sp_pool *p, const void *arg, bool force);
/* (for the thread-safe fast paths' fallbacks: the plain paths they were dispatched from) */
void *sp__acquire_slow(sp_pool *p, const void *arg, bool force);
sp_result sp__release_number(sp_pool *p, uint64_t q);
/* handles.c */
void *sp__resolve_other(const sp_pool *pool, sp_handle handle);
/* iterate.c */
uint32_t sp__leased_from(const sp_pool *p, uint32_t from);
uint32_t sp__leased_first(const sp_pool *p);
uint32_t sp__leased_next(const sp_pool *p, uint32_t idx);
void sp__stamps_fresh(sp_pool *p);
void sp__leased_site(const sp_pool *p, uint32_t idx, const char **file, int *line);
/* stats.c */
size_t sp__report_sites(const sp_pool *p, const char *what, sp_log_level level);
sp_result sp__release_foreign(const sp_pool *p, const void *item);
/* pool.c */
void sp__doom_released(sp_pool *p);
void sp__null_pool(const char *function);

#define SP__DEFAULT_CHUNK_ITEMS 256u
#define SP__MAX_ALIGN ((size_t)65536)


static inline sp__slot *slot_at(const sp_pool *p, uint32_t idx) {
    return (sp__slot *)(void *)(p->slots + (size_t)idx * p->slot_size);
}


/* The slot of a memory-order pool, whose slot size is known at compile time: the plain paths. */
static inline sp__slot *plain_slot_at(const sp_pool *p, uint32_t idx) {
    return (sp__slot *)(void *)p->slots + idx;
}


/* A lease-list link (both ways: next while the member is leased, and prev8): the slot index
   times 8, and the slot at slots + 2 x link, its byte offset from slot 0 being index x 16. x86
   addresses scale an index by 8 at most: the link is what one lea makes of the index (the index
   itself kept for the member's address), and every access scales it by the 2 left. SP__NIL's
   link is -8 as a signed 32-bit number, which addresses the slot before slot 0 (the lease
   list's ends: see lease_ends); every slot index's is positive (indices are below 2^24). */
SP__STATIC_ASSERT(sizeof(sp__oslot) == 16, "an ordered slot is 16 bytes: 2 x a link of index x 8");
static inline uint32_t lease_link(uint32_t idx) { return idx * 8u; }


static inline uint32_t lease_index(uint32_t link) {
    return link == lease_link(SP__NIL) ? SP__NIL : link / 8u;
}


/* The slot a lease-list link names in the slot array `slots`, the ends' slot for SP__NIL's. */
static inline sp__oslot *lease_slot(unsigned char *slots, uint32_t link) {
    int32_t signed_link;
    memcpy(&signed_link, &link, sizeof signed_link); /* the same bits: SP__NIL's is -8 */
    return (sp__oslot *)(void *)(slots + (ptrdiff_t)signed_link * 2);
}


static inline sp__oslot *lease_at(const sp_pool *p, uint32_t link) { return lease_slot(p->slots, link); }


/* The lease list's links of leased member idx (ordered pools only), as indices: the previous
   member (SP__NIL for the head) and the next (SP__NIL for the tail); and the acquisition's
   sequence number. */
static inline uint32_t prev_of(const sp_pool *p, uint32_t idx) {
    return lease_index(((const sp__oslot *)(void *)slot_at(p, idx))->prev8);
}


static inline uint32_t lease_next(const sp_pool *p, uint32_t idx) {
    return lease_index(slot_at(p, idx)->next);
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
    uint32_t in_top = idx - (uint32_t)p->top_first;
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
static inline uint32_t index_searched(const sp_pool *p, uintptr_t a) {
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
    if (SP__LIKELY(q < p->top_count)) return (uint32_t)(p->top_first + q);
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


/* The allocator's calls (alloc, free, and the vm's commit, decommit, release) are callbacks of
   the pool made in the middle of growth, trim and teardown: they count as hooks (destroy, clear
   and trim of the pool refused) and as allocating (acquisitions that would grow it, and
   sp_prewarm, refused: see acquire_slow). Cold: memory is allocated on growth paths only. */
#define SP__IN_ALLOCATOR(p, call)                                                                 \
    do {                                                                                          \
        (p)->hook_depth++;                                                                        \
        (p)->allocating++;                                                                        \
        call;                                                                                     \
        (p)->allocating--;                                                                        \
        (p)->hook_depth--;                                                                        \
    } while (0)


static inline void *pool_alloc(sp_pool *p, size_t size, size_t align) {
    void *mem;
    SP__IN_ALLOCATOR(p, mem = sp__alloc(&p->allocator, size, align));
    return mem;
}


static inline void pool_free(sp_pool *p, void *ptr, size_t size) {
    if (ptr) SP__IN_ALLOCATOR(p, p->allocator.free(ptr, size, p->allocator.user));
}


static inline bool pool_commit(sp_pool *p, void *addr, size_t size) {
    bool ok;
    SP__IN_ALLOCATOR(p, ok = p->vm.commit(addr, size, p->vm.user));
    return ok;
}


static inline void pool_decommit(sp_pool *p, void *addr, size_t size) {
    SP__IN_ALLOCATOR(p, p->vm.decommit(addr, size, p->vm.user));
}


static inline void pool_vm_release(sp_pool *p, void *addr, size_t size) {
    SP__IN_ALLOCATOR(p, p->vm.release(addr, size, p->vm.user));
}

/* The lease list (acquisition order) is circular through one more slot, the ends' slot, just
   before slot 0 in every layout (memory.c, pool.c): its next is the list's head, its prev the
   tail, SP__NIL's link when the list is empty. The links are slot indices times 8 (see
   lease_link), so SP__NIL's, -8 as a signed number, addresses that slot: a member's links
   address their neighbours or the ends alike, appending and unlinking test for no end, and the
   hot paths address a link's slot without a shift. (A free member's next is a free-list link,
   a slot index, as in every pool.) Slot indices are below 2^24: no link is negative. */
static inline sp__oslot *lease_ends(const sp_pool *p) { return (sp__oslot *)(void *)p->slots - 1; }


/* The oldest and the newest leased member of an acquisition-order pool, SP__NIL when none (or
   when the pool is in memory order, or has no slots yet: then there is no ends' slot). */
static inline uint32_t lease_head(const sp_pool *p) {
    return p->ordered && p->slot_cap ? lease_index(lease_ends(p)->s.next) : SP__NIL;
}


static inline uint32_t lease_tail(const sp_pool *p) {
    return p->ordered && p->slot_cap ? lease_index(lease_ends(p)->prev8) : SP__NIL;
}


/* An empty lease list: the ends' slot links to itself. Where an ordered pool's slots first
   exist (sp__slots_init). */
static inline void lease_ends_init(sp_pool *p) {
    sp__oslot *e = lease_ends(p);
    e->s.next = e->prev8 = lease_link(SP__NIL);
    e->stamp = SP__NIL;
    e->s.word = 0;
}


/* Appends the member whose link is `link` (lease_link of its index) and whose slot is s. */
static inline void lease_append(sp_pool *p, uint32_t link, sp__slot *s) {
    sp__oslot *ends = lease_ends(p), *o = (sp__oslot *)(void *)s;
    uint32_t tail8 = ends->prev8;
    o->prev8 = tail8;
    o->stamp = (uint32_t)p->acquired;
    s->next = lease_link(SP__NIL);
    lease_at(p, tail8)->s.next = link;
    ends->prev8 = link;
}


static inline void lease_unlink(sp_pool *p, const sp__slot *s) {
    uint32_t prev8 = ((const sp__oslot *)(const void *)s)->prev8, next8 = s->next;
    lease_at(p, prev8)->s.next = next8;
    lease_at(p, next8)->prev8 = prev8;
}


/* Clears the mark of a plain lease (next == idx, see sp__slot) before a flag is set or a life
   ends: from then on the member resolves through the library. In a memory-order pool next means
   nothing else while it equals the slot's own index, so this never breaks a list. An
   acquisition-order pool marks nothing, and its leased members' links are indices times 8,
   which may equal any index: never touched here. True when there was a mark. */
static inline bool slot_unmark(sp_pool *p, uint32_t idx) {
    sp__slot *s = slot_at(p, idx);
    if (p->ordered || s->next != idx) return false;
    s->next = SP__NIL;
    return true;
}


/* After a hook on a member that was marked: the mark again if the member is still leased with
   no flag set and nothing else took its link meanwhile (a member leased in a memory-order pool
   keeps SP__NIL there, or sp_release_all's mark, which must stay). A priority callback scores
   every leased member: without this they would all resolve through the library afterwards. */
static inline void slot_remark(sp_pool *p, uint32_t idx) {
    sp__slot *s = slot_at(p, idx);
    if (s->next == SP__NIL && (s->word & ((1u << SP__FLAG_BITS) - 1u)) == SP__LEASED) s->next = idx;
}


/* Marks a memory-order member leased with no flag (see sp__slot), so that the inline resolve
   finds it. Acquisition-order slots keep their lease-list link; a thread-safe pool's never
   resolve in line. */
static inline void slot_mark(sp_pool *p, uint32_t idx) {
    if (!p->ordered && !p->ts) slot_at(p, idx)->next = idx;
}


static inline void free_push(sp_pool *p, uint32_t idx, sp__slot *s) {
    s->next = p->free_head;
    p->free_head = idx;
}


static inline void unbuilt_push(sp_pool *p, uint32_t idx, sp__slot *s) {
    s->next = p->unbuilt_head;
    p->unbuilt_head = idx;
}


/* What iteration visits: leased, and not in its on_release hook (an ordered pool has already
   unlinked such a member). */
static inline bool visible_leased(uint32_t word) {
    return (word & (SP__STATE_MASK | SP__RELEASING)) == SP__LEASED;
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


/* The slot array can move while a hook runs (a hook that acquires may grow the pool), so a
   hook runner takes the slot index and looks the slot up again afterwards; callers must not keep
   a slot pointer across a hook either. */
/* A thread-safe pool's hooks also leave a frame on their thread (sp__ts_in_member_hook: a busy
   member's release is a re-entry only on the thread whose hook runs on it). */
#define SP__RUN_HOOK(p, idx, call)                                                                \
    do {                                                                                          \
        bool marked_ = slot_unmark((p), (idx)); /* busy: no mark (see sp__slot) */               \
        sp__hook_frame frame_;                                                                    \
        if ((p)->ts) sp__ts_hook_enter(&frame_, (p), item_at((p), (idx)));                       \
        slot_at((p), (idx))->word |= SP__BUSY;                                                    \
        (p)->hook_depth++;                                                                        \
        call;                                                                                     \
        (p)->hook_depth--;                                                                        \
        slot_at((p), (idx))->word &= ~(uint32_t)SP__BUSY;                                         \
        if ((p)->ts) sp__ts_hook_leave(&frame_);                                                  \
        if (marked_) slot_remark((p), (idx));                                                     \
    } while (0)


#define SP__RANGE_ALIGN ((size_t)64) /* a range's first member starts a cache line */
/* Where a reserved pool's slot array starts in its first page. Not at the page's start: the
   slots (8 bytes a member in memory order) advance in step with a caller's array of pointers
   or handles, and large arrays start at a page (mmap, aligned_alloc, the pool's own members) or
   16 bytes into one (glibc's mmap'd chunks). Two such arrays a few entries apart in their pages
   make every load of one wait on the store just made to the other (the CPU matches a load
   against earlier stores on the address's low 12 bits first: "4K aliasing"). Half a page is as
   far as possible from both. Measured (CHANGELOG.md, 0.4.0): LIFO 1M, 16-byte members, 5.8 ns
   a pair -> 4.1. */
#define SP__SLOTS_COLOUR ((size_t)2048)
/* At most this much address space is reserved for one pool's members; beyond, ranges. */
#define SP__RESERVE_LIMIT ((uint64_t)1 << 36)


static inline size_t round_up(size_t x, size_t a) { return (x + (a - 1u)) & ~(a - 1u); }


static inline bool pool_reserved(const sp_pool *p) { return p->reserved_items != NULL; }


/* One more member leased. headroom is peak_leased - leased: while it is above zero the peak
   stays and headroom goes down; at zero leased is at its peak, so the peak goes up and headroom
   stays 0. Either way peak_leased - headroom is the new leased, and peak_leased is exactly the
   most members ever leased at once: the hot path pays one decrement and one branch, never
   taken in steady state, for what was a load, an increment, a store and a compare. */
static inline void leased_inc(sp_pool *p) {
    if (SP__UNLIKELY(--p->headroom < 0)) {
        p->headroom = 0;
        p->peak_leased++;
    }
}


/* One member fewer leased. */
static inline void leased_dec(sp_pool *p) { p->headroom++; }


/* A plain pool's acquisition of free member idx, the head of its free list. */
static inline void *acquire_plain(sp_pool *p, uint32_t idx) {
    /* The slot addressed in each of its three accesses (SP__OPAQUE: no address register, no
       separate zero extension), so that the mark costs its store and nothing more. */
    uintptr_t ix = idx;
    SP__OPAQUE(ix);
    sp__slot *slots = (sp__slot *)(void *)p->slots;
    p->free_head = slots[ix].next;
    SP__OPAQUE(ix);
    slots[ix].word += SP__TO_LEASED; /* free members carry no flags */
    SP__OPAQUE(ix);
    slots[ix].next = (uint32_t)ix; /* the mark of a plain lease (see sp__slot) */
    leased_inc(p);
    p->acquired++;
    /* plain: one live range, which holds every built member */
    void *item = (void *)(p->items0 + ix * p->stride);
    DBG_LEASING(p, idx, item);
#if SP_DEBUG
    dbg_at(p, idx)->acq_file = NULL; /* the _at callers fill it in */
#endif
    return item;
}


static inline void *acquire_fast(sp_pool *p, const void *arg, bool force) {
    uint32_t idx = p->free_head;
    if (SP__UNLIKELY(idx >= p->plain_below)) return sp__acquire_other(p, arg, force);
    return acquire_plain(p, idx);
}

#endif
