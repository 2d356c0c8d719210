/* SPDX-License-Identifier: Zlib */
/* handles.c -- Handles: a member's handle (life, tag, slot index), the pool's tag taken with its
   first handle, resolving a handle, the refusals and their rate-limited warnings, and
   membership tests. */
#include "pool_internal.h"
#include "threads.h"

/* The pool's tag, taken now if it has none: true when it has one. Every word's life is below
   the tag's first then (lives move on only for lives with a handle), so the tag's first life
   becomes the words' life 1. The owner (a registry) learns the tag, to resolve through it. */
bool sp__tag_take(sp_pool *p) {
    if (p->handles.tagged) return true;
    uint32_t tag, first;
    if (!sp__tag_acquire(&tag, &first)) {
        /* the first time, then at every power of two: a program that asks on every lease */
        if (sp__worth_a_line(++p->handles.refused)) sp__log(p, SP__MSG_NO_TAG, "sp_handle_of", sp__tags_retired());
        return false;
    }
    if (p->owner && p->owner_fns->tag_taken(p->owner, p, tag) != SP_OK) {
        sp__tag_release(tag, 0);
        sp__log(p, SP__MSG_NOMEM, "its owner's index of tags");
        return false;
    }
    p->handles.tag = tag;
    p->handles.life_base = first - 1u;
    p->handles.tagged = true;
    sp__tag_holder_set(tag, p, false);
    return true;
}

/* The handle of leased member idx (its lease in its word now), which from now on carries the
   HANDLED mark: its release moves the life on. */
static sp_handle handle_issue(sp_pool *p, uint32_t idx, _Atomic uint32_t *w) {
    if (plain_test(p, idx)) { /* the lease moves from its byte to its word */
        plain_clear(p, idx);
        wstore(w, (wload(w) & ~(uint32_t)SP__STATE_MASK) | SP__LEASED);
    }
    uint32_t word = wload(w);
    wstore(w, word | SP__HANDLED);
    return sp__handle_make(word_life(word) + p->handles.life_base, p->handles.tag, idx);
}

sp_handle sp_handle_of(const sp_pool *pool, const void *item) {
    sp_handle h = {0};
    if (!pool) sp__null_pool("sp_handle_of");
    if (!pool || !item) return h;
    sp_pool *p = (sp_pool *)(uintptr_t)pool; /* a handle marks the lease: pools are never const */
    if (p->ts && !sp__ts_windowed(p)) return sp__ts_handle_of(p, item);
    uint32_t idx = index_of(p, item);
    if (idx == SP__NIL) return h;
    _Atomic uint32_t *w = word_at(p, idx);
    if (!slot_leased(p, idx, wload(w)) || !sp__tag_take(p)) return h;
    return handle_issue(p, idx, w);
}

#if SP_DEBUG
static void *handle_refused(sp_handle *out) {
    if (out) out->id = 0;
    return NULL;
}
#endif

void *sp_acquire_handle(sp_pool *pool, const void *arg, sp_handle *out) {
    sp_handle none = {0};
    if (out) *out = none;
    if (!pool) {
        sp__null_pool("sp_acquire_handle");
        return NULL;
    }
    SP__ONE_THREAD(pool, "sp_acquire_handle", void *, handle_refused(out), sp_acquire_handle(pool, arg, out));
    if (!pool->ts && !sp__tag_take(pool)) return NULL; /* before anything is leased */
    void *item = sp_acquire_with(pool, arg);
    if (item && out) *out = sp_handle_of(pool, item);
    return item;
}

/* As sp_acquire_with_at (lease.c): the plain call in a library built with SP_DEBUG=0. */
void *sp_acquire_handle_at(sp_pool *pool, const void *arg, sp_handle *out, const char *file, int line) {
#if SP_DEBUG
    sp_handle none = {0};
    if (out) *out = none;
    if (!pool) {
        sp__null_pool("sp_acquire_handle");
        return NULL;
    }
    SP__ONE_THREAD(pool, "sp_acquire_handle", void *, handle_refused(out),
                   sp_acquire_handle_at(pool, arg, out, file, line));
    if (!pool->ts && !sp__tag_take(pool)) return NULL;
    void *item = sp_acquire_with_at(pool, arg, file, line);
    if (item && out) *out = sp_handle_of(pool, item);
    return item;
#else
    (void)file, (void)line;
    return sp_acquire_handle(pool, arg, out);
#endif
}

/* Counts a refused resolve of one kind and logs the first, then every count that reaches a power
   of two, with the count: a loop of bad lookups cannot flood the log. */
static void resolve_warn(const sp_pool *pool, sp__msg msg, sp_handle handle) {
    sp_pool *p = (sp_pool *)(uintptr_t)pool; /* the counters are bookkeeping */
    uint64_t *count = msg == SP__MSG_FOREIGN_HANDLE ? &p->counters.foreign_handles : &p->counters.forged_handles;
    uint64_t n = ++*count;
    if (sp__worth_a_line(n)) sp__log(pool, msg, (unsigned long long)handle.id, (unsigned long long)n);
}

/* The highest life slot idx's earlier spans reached (its record's floor): lives up to there
   were this pool's, lives above it in a slot without bookkeeping never were. */
static uint32_t slot_floor(const sp_pool *p, uint32_t idx) {
    for (uint32_t k = 0; k < rec_count(p); k++) {
        const sp__span_rec *r = &p->mem.recs[k];
        if (idx - r->first < r->cap) return r->life_floor;
    }
    return 0;
}

/* Why a handle did not resolve. A stale handle is the expected case (the turret's target died)
   and stays silent; a handle of another pool (another tag, or a life below this pool's first:
   an earlier pool of the same tag), or one naming a slot or a life that never existed, is a
   bug in the caller and gets a rate-limited warning. */
static SP__NOINLINE void *resolve_other(const sp_pool *pool, sp_handle handle) {
    if (!pool) {
        sp__null_pool("sp_resolve");
        return NULL;
    }
    if (handle.id == 0) return NULL;
    if (pool->ts && !sp__ts_windowed(pool)) return sp__ts_resolve(pool, handle);
    uint32_t idx = sp__handle_slot(handle.id), life = sp__handle_life(handle.id);
    /* (life 0 is no life at all: forged, below) */
    if (!pool->handles.tagged || sp__handle_tag(handle.id) != pool->handles.tag ||
        (life != 0 && life <= pool->handles.life_base)) {
        resolve_warn(pool, SP__MSG_FOREIGN_HANDLE, handle);
        return NULL;
    }
    if (life == 0) {
        resolve_warn(pool, SP__MSG_FORGED_HANDLE, handle);
        return NULL;
    }
    uint32_t rel = life - pool->handles.life_base; /* the life as the words count it */
    const sp__span *s = span_of(pool, idx);
    if (!s) { /* no bookkeeping now: stale if its earlier spans reached the life */
        if (rel > slot_floor(pool, idx)) resolve_warn(pool, SP__MSG_FORGED_HANDLE, handle);
        return NULL;
    }
    uint32_t word = wload(word_in(s, idx));
    /* Leased in that life with its handle out: a hook running on it does not hide it. */
    if (word_state(word) == SP__LEASED && (word & SP__HANDLED) && word_life(word) == rel) return item_in(pool, s, idx);
    /* A life the slot handed out a handle of (see word_issued): stale, silent. */
    if (rel <= word_issued(word)) return NULL;
    resolve_warn(pool, SP__MSG_FORGED_HANDLE, handle);
    return NULL;
}

void *sp_resolve(const sp_pool *pool, sp_handle handle) {
    if (SP__LIKELY(pool && pool->handles.tagged && sp__handle_tag(handle.id) == pool->handles.tag && !pool->ts)) {
        /* The member, leased in the handle's life with the handle out: its word says exactly
           that (and no flag of a hook or a mark). */
        uint32_t idx = sp__handle_slot(handle.id);
        const sp__span *s = span_of(pool, idx);
        if (SP__LIKELY(s != NULL)) {
            uint32_t want = word_make(sp__handle_life(handle.id) - pool->handles.life_base, SP__LEASED | SP__HANDLED);
            uint32_t rel = idx - s->first;
            if (SP__LIKELY(wload(&s->words[rel]) == want)) return s->items + (size_t)rel * pool->hot.stride;
        }
    }
    return resolve_other(pool, handle);
}

bool sp_is_leased(const sp_pool *pool, const void *item) {
    if (!pool) sp__null_pool("sp_is_leased");
    if (!pool || !item) return false;
    if (pool->ts && !sp__ts_windowed(pool)) return sp__ts_is_leased(pool, item, false);
    uint32_t idx = index_of(pool, item);
    return idx != SP__NIL && slot_leased(pool, idx, wload(word_at(pool, idx)));
}

bool sp__pool_has_member(const sp_pool *pool, const void *item) {
    if (pool->ts && !sp__ts_windowed(pool)) return sp__ts_is_leased(pool, item, true);
    uint32_t idx = index_of(pool, item);
    if (idx == SP__NIL) return false;
    uint32_t st = word_state(wload(word_at(pool, idx)));
    return st == SP__FREE || st == SP__LEASED;
}
