/* SPDX-License-Identifier: Zlib */
/* handles.c -- Handles: a member's handle (life, tag, slot index), resolving one (in line for a
   pool of one range), the refusals and their rate-limited warnings, and membership tests. */
#include "sp_threads.h"

static sp_handle handle_at(const sp_pool *p, uint32_t idx) {
    sp_handle h;
    h.id = (uint64_t)sp__life(slot_at(p, idx)) << (SP__SLOT_BITS + SP__TAG_BITS) |
           (uint64_t)p->tag << SP__SLOT_BITS | idx;
    return h;
}


/* A thread-safe pool's member has no slot that index_of finds: its own lookup, by a tail call
   (a call kept here would cost the plain path a saved register). */
static SP__NOINLINE void *ts_handle_out(const sp_pool *pool, void *item, sp_handle *out) {
    if (out) *out = sp__ts_handle_of(pool, item);
    return item;
}


#if SP_DEBUG
static void *handle_refused(sp_handle *out) {
    if (out) out->id = 0;
    return NULL;
}
#endif


void *sp_acquire_handle(sp_pool *pool, const void *arg, sp_handle *out) {
    SP__ONE_THREAD(pool, "sp_acquire_handle", void *, handle_refused(out), sp_acquire_handle(pool, arg, out));
    sp_handle h = {0};
    void *item = NULL;
    if (SP__UNLIKELY(!pool)) sp__null_pool("sp_acquire_handle");
    if (pool) {
        /* With a free member, acquire_fast leases exactly the head of the free list, so its slot
           is known; only the slow paths (build, reclaim) need the pointer mapped back. */
        uint32_t idx = pool->free_head;
        item = acquire_fast(pool, arg, false);
        if (item && idx == SP__NIL) {
            idx = index_of(pool, item);
            if (SP__UNLIKELY(idx == SP__NIL)) return ts_handle_out(pool, item, out);
        }
        if (item) h = handle_at(pool, idx);
    }
    if (out) *out = h;
    return item;
}


/* As sp_acquire_with_at (lease.c): the plain call in a library built with SP_DEBUG=0, the site
   noted before a thread-safe pool hands the member out. */
void *sp_acquire_handle_at(sp_pool *pool, const void *arg, sp_handle *out, const char *file, int line) {
#if SP_DEBUG
    SP__ONE_THREAD(pool, "sp_acquire_handle", void *, handle_refused(out),
                   sp_acquire_handle_at(pool, arg, out, file, line));
    if (pool && SP__TS(pool)) return ts_handle_out(pool, sp__ts_acquire(pool, arg, false, file, line), out);
    void *item = sp_acquire_handle(pool, arg, out);
    if (item) sp__dbg_note_acquire(pool, item, file, line);
    return item;
#else
    (void)file, (void)line;
    return sp_acquire_handle(pool, arg, out);
#endif
}


sp_handle sp_handle_of(const sp_pool *pool, const void *item) {
    sp_handle h = {0};
    if (!pool) sp__null_pool("sp_handle_of");
    if (!pool || !item) return h;
    uint32_t idx = index_of(pool, item);
    if (idx == SP__NIL) return SP__TS(pool) ? sp__ts_handle_of(pool, item) : h;
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
    /* A thread-safe pool's tag never matches outside a window: every resolve lands here. */
    if (SP__TS(pool)) return sp__ts_resolve(pool, handle);
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
        sp__null_pool("sp_resolve");
        return NULL;
    }
    uint32_t idx = (uint32_t)(handle.id & (SP__SLOT_LIMIT - 1u));
    uint32_t tag = (uint32_t)(handle.id >> SP__SLOT_BITS) & SP__TAG_MAX;
    uint32_t life = (uint32_t)(handle.id >> (SP__SLOT_BITS + SP__TAG_BITS));
    if (tag != pool->tag || idx >= pool->slot_cap) return resolve_refused(pool, handle);
    /* A leased slot always lies in a live range, so the word alone decides. */
    uint32_t word = slot_at(pool, idx)->word;
    if (((word ^ (life << SP__FLAG_BITS)) & ~(uint32_t)(SP__BUSY | SP__RELEASING)) != SP__LEASED) {
        /* A life this pool handed out and the slot has moved past: stale, the expected case,
           and silent. */
        if (life >= pool->life_first && life < word >> SP__FLAG_BITS) return NULL;
        return resolve_refused(pool, handle);
    }
    return item_at(pool, idx);
}


/* What the header's inline sp_resolve does not finish (its route, or a handle that does not
   name a leased member not busy in a hook): the same as resolve_other, exported under the name
   of the hot prefix's layout (see include/spawnpool.h). d is the id less the pool's tag_bits
   (the id itself for a NULL pool), so that the inline code keeps no copy of the id. */
void *sp__resolve_slow_l3(const sp_pool *pool, uint64_t d) {
    /* An acquisition-order pool of one live range (16-byte slots, which the inline code does
       not read): the inline test here, gated by its route (ordered_acquire: never set for a
       pool the fast paths must leave alone). The low 36 bits of d are the slot index exactly
       when the tag is the pool's; the word compared whole is "leased in that life, no hook". */
    if (pool && pool->ordered_acquire && (d & ((UINT64_C(1) << 36) - 1u)) < pool->slot_cap) {
        uint32_t idx = (uint32_t)d, leased_word = (uint32_t)(d >> 32);
        uint32_t word = ((const sp__oslot *)(const void *)pool->slots)[idx].s.word;
        if (word == leased_word) return (void *)(pool->items0 + (uintptr_t)idx * pool->stride);
        /* stale: a life of this pool the slot has moved past, silent */
        if (word > (leased_word | 15u) && leased_word >> 4 >= pool->life_first) return NULL;
    }
    sp_handle handle;
    handle.id = pool ? d + pool->tag_bits : d;
    /* A thread-safe pool (resolve_below 0, ordered_acquire false): every resolve lands here. */
    if (pool && pool->ts) return sp__ts_resolve_fast(pool, handle);
    return resolve_other(pool, handle);
}


/* The thread-safe resolve's fallback in a window (the plain view). */
void *sp__resolve_other(const sp_pool *pool, sp_handle handle) { return resolve_other(pool, handle); }


/* The exported function, for SP_NO_INLINE callers and binaries built that way: the header's
   inline resolve, the same code. */
void *sp_resolve(const sp_pool *pool, sp_handle handle) { return sp__resolve_inline(pool, handle); }


bool sp_is_leased(const sp_pool *pool, const void *item) {
    if (!pool) sp__null_pool("sp_is_leased");
    if (!pool || !item) return false;
    uint32_t idx = index_of(pool, item);
    if (idx == SP__NIL) return SP__TS(pool) && sp__ts_is_leased(pool, item, false);
    return sp__state(slot_at(pool, idx)) == SP__LEASED;
}


bool sp__pool_has_member(const sp_pool *pool, const void *item) {
    uint32_t idx = index_of(pool, item);
    if (idx == SP__NIL) return SP__TS(pool) && sp__ts_is_leased(pool, item, true);
    uint32_t st = sp__state(slot_at(pool, idx));
    return st == SP__FREE || st == SP__LEASED;
}
