/* SPDX-License-Identifier: Zlib */
/* lease.c -- Acquire / Release: the fast paths (a pop and a count; one range test and one
   compare), the routes that send everything else out of line (hooks, the lease list, refusals,
   teardown), reclaim, sp_release_all, and the _at variants that record call sites. */
#include "sp_threads.h"

/* GCC's basic-block vectorizer merges the release's two adjacent slot stores (the word and the
   free-list link) into one vector store built with two moves and a shuffle: three instructions
   more on the plain release than the two plain stores (measured with make bench-instr). */
#if defined(__GNUC__) && !defined(__clang__)
#  pragma GCC optimize("no-tree-slp-vectorize")
#endif

static SP__NOINLINE void run_on_acquire(sp_pool *p, uint32_t idx, void *item, const void *arg) {
    SP__RUN_HOOK(p, idx, p->on_acquire(item, arg, p->user));
}


static SP__NOINLINE void run_on_release(sp_pool *p, uint32_t idx, void *item) {
    slot_at(p, idx)->word |= SP__RELEASING;
    SP__RUN_HOOK(p, idx, p->on_release(item, p->user));
    slot_at(p, idx)->word &= ~(uint32_t)SP__RELEASING;
}


/* priority is a hook too (destroy, clear and trim are refused inside it), and more: a pure
   scoring function, inside which this pool's acquisitions and releases are refused (scoring). */
static double run_priority(sp_pool *p, uint32_t idx) {
    double pr = 0.0;
    SP__RUN_HOOK(p, idx, pr = p->priority(item_at(p, idx), p->user));
    return pr;
}


static void *acquire_other_plain_args(sp_pool *p);
static void *acquire_ordered_plain_args(sp_pool *p);


/* sp_acquire's way out of its plain path (see routes_update), stored only when it changes: a
   thread-safe pool's is set once, at creation, and its other threads read it in sp_acquire
   while one updates the routes under the lock. */
static void acquire_miss_set(sp_pool *p, void *(*miss)(sp_pool *p)) {
    if (p->acquire_miss == miss) return; /* (not a plain store: see above) */
    p->acquire_miss = miss;
}


/* Which paths acquisitions and releases take. The fast paths test nothing for the rare states:
   while a priority callback or a teardown runs, every release is routed to release_general
   (plain_release off, release_slow on), where it is refused or diverted, and the plain reclaim
   is off; a teardown also detaches the free list, so that every acquisition reaches
   acquire_slow, which refuses it. Cold: runs when those states begin and end. */
void sp__routes_update(sp_pool *p) {
    if (p->ts) {
        acquire_miss_set(p, acquire_other_plain_args); /* thread-safe: never plain (threads.c) */
        sp__ts_routes(p);
        return;
    }
    bool divert = p->scoring > 0 || p->tearing_down;
    p->plain_release = !p->ordered && !p->on_release && !divert;
    p->plain_acquire = !p->ordered && !p->on_acquire && p->live_ranges <= 1u;
    p->plain_below = p->plain_acquire ? SP__NIL : 0u;
    /* The inline resolve reads 8-byte slots: acquisition-order pools resolve out of line. */
    p->resolve_below = !p->ordered && p->live_ranges <= 1u ? (uint64_t)p->slot_cap : 0u;
    p->top_plain = p->plain_release ? p->top_count : 0u;
    p->items0 = p->top_items - (uintptr_t)p->top_first * p->stride;
    p->ordered_acquire = p->ordered && !p->on_acquire && p->live_ranges <= 1u;
    acquire_miss_set(p, p->ordered_acquire ? acquire_ordered_plain_args : acquire_other_plain_args);
    p->release_slow = p->on_release != NULL || divert;
    p->top_ordered = p->ordered && !p->release_slow ? p->top_count : 0u;
    p->plain_reclaim = p->ordered && !p->on_acquire && !p->on_release && !p->priority && !divert;
}


/* Ends a leased member's life (it is already out of the lease list and on_release has run):
   it joins the free list, or retires when its counter is exhausted. */
static inline void life_end_to_free(sp_pool *p, uint32_t idx) {
    /* Next life, now free. The addition carries out of the word exactly when the life counter
       was at its last value: then the slot retires instead. */
    sp__slot *s = slot_at(p, idx);
    uint32_t step = SP__TO_NEXT_FREE;
    uint32_t word = s->word + step;
    if (SP__UNLIKELY(word < step)) {
        sp__member_retire(p, idx);
        return;
    }
    s->word = word;
    free_push(p, idx, s);
    DBG_FREED(p, idx, item_at(p, idx));
}


/* on_acquire, apart so that the hook-free paths make no call (and save no registers). */
static SP__NOINLINE void *lease_hooked(sp_pool *p, uint32_t idx, void *item, const void *arg) {
    run_on_acquire(p, idx, item, arg);
    slot_mark(p, idx); /* the hook cannot release it (busy): still leased, flags clear again */
    return item;
}


static inline void *lease(sp_pool *p, uint32_t idx, sp__slot *s, const void *arg) {
    s->word += SP__TO_LEASED; /* free members carry no flags */
    leased_inc(p);
    p->acquired++;
    void *item = item_at(p, idx);
    DBG_LEASING(p, idx, item);
#if SP_DEBUG
    dbg_at(p, idx)->acq_file = NULL; /* the _at callers fill it in */
#endif
    if (SP__UNLIKELY(!p->plain_acquire)) {
        if (p->ordered) lease_append(p, lease_link(idx), s); /* before the hook: it may iterate */
        if (p->on_acquire) return lease_hooked(p, idx, item, arg);
    }
    slot_mark(p, idx);
    return item;
}


/* Unordered pools without a priority hook: round robin in memory order, from the slot after
   the last victim, so that every leased member takes its turn. */
static uint32_t reclaim_next_in_turn(sp_pool *p) {
    for (int pass = 0; pass < 2; pass++) { /* from the cursor to the end, then from the start */
        uint32_t from = pass ? 0u : p->reclaim_cursor;
        for (uint32_t i = sp__leased_from(p, from); i != SP__NIL; i = sp__leased_from(p, i + 1u)) {
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
        sp__routes_update(p);
    }
    for (uint32_t i = sp__leased_first(p); i != SP__NIL; i = sp__leased_next(p, i)) {
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
        sp__routes_update(p);
    }
    return best;
}


static void *acquire_slow(sp_pool *p, const void *arg, bool force);


/* The common reclaim, spelled out: an acquisition-order pool without hooks or priority whose
   oldest member is not busy and not at its last life. Its life ends and the next begins in one
   step (the word stays LEASED, the life goes up), and the member moves from the head of the
   lease list to the tail, as the general path would leave it. NULL when it does not apply. */
static inline void *reclaim_oldest_plain(sp_pool *p) {
    /* The head's slot from its link (lease_link): its index only for the item. */
    uint32_t link = lease_ends(p)->s.next; /* saturated: members, so slots, exist */
    if (link == lease_link(SP__NIL)) return NULL;
    sp__slot *s = &lease_at(p, link)->s;
    uint32_t idx = link / 8u;
    if ((s->word & SP__BUSY) || sp__life(s) == SP__LIFE_MAX) return NULL;
    s->word += 1u << SP__FLAG_BITS;
    p->acquired++;
    p->reclaimed++;
    lease_unlink(p, s); /* to the tail (alone: out, and back in as the only one) */
    lease_append(p, link, s);
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
        lease_unlink(p, s);
    else
        s->next = SP__NIL; /* not marked as leased when a memory-order sp_release_all began */
    if (p->on_release) run_on_release(p, idx, item); /* still leased while it runs */
    leased_dec(p);
    p->reclaimed++;
    s = slot_at(p, idx);
    if (sp__life(s) == SP__LIFE_MAX) { /* its last life ended: retire it, build another */
        sp__member_retire(p, idx);
        return acquire_slow(p, arg, force);
    }
    s->word += SP__TO_NEXT_FREE; /* next life, free for a moment */
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
    if (SP__UNLIKELY(p->allocating > 0)) { /* growth is under way: it would begin again inside */
        sp__log(p, SP__MSG_IN_ALLOCATOR, "acquire");
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
    uint32_t idx = sp__member_build(p, past_max);
    if (idx == SP__NIL) {
        /* A fixed buffer with retired slots has no room left below max: saturated after all. */
        if (p->fixed && sp__leased(p) > 0) {
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
    /* A thread-safe pool has no free list and no plain reclaim: every acquisition lands here,
       after the reclaim's one test (a test here rather than in sp__acquire_other costs the
       plain acquisitions nothing). */
    if (p->ts) return sp__ts_acquire_fast(p, arg);
    return acquire_slow(p, arg, force);
}


/* The thread-safe fast acquire's fallback in a window (its plain view, never a plain
   reclaim). */
void *sp__acquire_slow(sp_pool *p, const void *arg, bool force) { return acquire_slow(p, arg, force); }


/* The slot of a member of an acquisition-order pool from its lease-list link (lease_link: not
   SP__NIL's), addressed as slots + 2 x link: what the hot paths' accesses scale in place.
   lease_slot does the same for any link, SP__NIL's included, at the price of a sign extension
   (one instruction a hot-path access); a member's own link is never SP__NIL's. */
static inline sp__oslot *oslot_by_link(unsigned char *slots, uintptr_t link) {
    return (sp__oslot *)(void *)(slots + link * 2u);
}


/* A free member of an acquisition-order pool without on_acquire, of one live range: lease()
   spelled out for it, with the 16-byte slot known at compile time and the lease list append in
   place (the same steps in the same order: the stamp is the count after this acquisition). */
static inline void *acquire_ordered(sp_pool *p, uint32_t idx) {
    /* The slot addressed from slots and its link in each access (oslot_by_link; SP__OPAQUE, as
       in acquire_plain): no address register. The link is also the new tail's. */
    unsigned char *slots = p->slots;
    uintptr_t link = lease_link(idx);
    SP__OPAQUE(link);
    p->free_head = oslot_by_link(slots, link)->s.next;
    SP__OPAQUE(link);
    oslot_by_link(slots, link)->s.word += SP__TO_LEASED; /* free members carry no flags */
    leased_inc(p);
    p->acquired++;
    /* The stamp read back from the count rather than kept from the increment (an increment in
       memory and a load: one instruction fewer than a load, an addition and a store). The
       compiler must assume p changed here, so it cannot reuse the count it just wrote; from here
       on the slots are addressed through `slots`, which it keeps. */
    SP__OPAQUE(p);
    uint32_t n = (uint32_t)p->acquired;
    void *item = (void *)(p->items0 + (uintptr_t)idx * p->stride);
    DBG_LEASING(p, idx, item);
#if SP_DEBUG
    dbg_at(p, idx)->acq_file = NULL; /* the _at callers fill it in */
#endif
    sp__oslot *ends = (sp__oslot *)(void *)slots - 1; /* lease_ends */
    uint32_t tail8 = ends->prev8;
    SP__OPAQUE(link);
    oslot_by_link(slots, link)->prev8 = tail8;
    SP__OPAQUE(link);
    oslot_by_link(slots, link)->stamp = n;
    SP__OPAQUE(link);
    oslot_by_link(slots, link)->s.next = lease_link(SP__NIL);
    lease_slot(slots, tail8)->s.next = (uint32_t)link; /* the ends' slot when the list was empty */
    ends->prev8 = (uint32_t)link;
    return item;
}


/* A free member of a pool that is not plain, or no free member: out of line. */
SP__NOINLINE void *sp__acquire_other(sp_pool *p, const void *arg, bool force) {
    uint32_t idx = p->free_head;
    if (idx == SP__NIL) return acquire_empty(p, arg, force);
    if (p->ordered_acquire) return acquire_ordered(p, idx);
    return acquire_listed(p, idx, arg);
}


/* sp_acquire's sp__acquire_other (acquire_miss): no argument and no force, so that sp_acquire
   passes none (two register clears fewer). routes_update picks it where ordered_acquire is
   clear (thread-safe pools included: never ordered), so it has no test for it. */
static SP__NOINLINE void *acquire_other_plain_args(sp_pool *p) {
    uint32_t idx = p->free_head;
    if (idx == SP__NIL) return acquire_empty(p, NULL, false);
    return acquire_listed(p, idx, NULL);
}


/* The same where routes_update knows ordered_acquire is set: straight to the ordered pop. */
static SP__NOINLINE void *acquire_ordered_plain_args(sp_pool *p) {
    uint32_t idx = p->free_head;
    if (idx == SP__NIL) return acquire_empty(p, NULL, false);
    return acquire_ordered(p, idx);
}


/* NULL for a NULL pool, with its line. */
static SP__NOINLINE void *acquire_null(const char *function) {
    sp__null_pool(function);
    return NULL;
}


void *sp_acquire(sp_pool *pool) {
    if (SP__UNLIKELY(pool == NULL)) return acquire_null("sp_acquire");
    SP__ONE_THREAD(pool, "sp_acquire", void *, NULL, sp_acquire(pool));
    uint32_t idx = pool->free_head;
    if (SP__UNLIKELY(idx >= pool->plain_below)) return pool->acquire_miss(pool);
    return acquire_plain(pool, idx);
}


void *sp_acquire_with(sp_pool *pool, const void *arg) {
    SP__ONE_THREAD(pool, "sp_acquire_with", void *, NULL, sp_acquire_with(pool, arg));
    return SP__LIKELY(pool != NULL) ? acquire_fast(pool, arg, false) : acquire_null("sp_acquire_with");
}


void *sp_acquire_force(sp_pool *pool, const void *arg) {
    SP__ONE_THREAD(pool, "sp_acquire_force", void *, NULL, sp_acquire_force(pool, arg));
    return SP__LIKELY(pool != NULL) ? acquire_fast(pool, arg, true) : acquire_null("sp_acquire_force");
}


/* ---- the same, recording call sites --------------------------------------------------------
   A library built with SP_DEBUG=0 keeps no records: its _at functions are the plain ones (a
   jump), whatever the caller's SP_DEBUG, as the header says. A debug library notes the site in
   the member's record: a thread-safe pool's before the member is handed out (another thread may
   release it through a stale pointer and acquire it again at once: a note made afterwards would
   race with that thread's), any other pool's right after (one thread at a time). */


#if SP_DEBUG
/* The debug record of the member starting at item, or NULL for anything else. */
static sp__dbg *dbg_of(const sp_pool *p, const void *item) {
    uint32_t idx = item ? index_of(p, item) : SP__NIL;
    if (idx == SP__NIL && item && SP__TS(p)) idx = sp__ts_index_of(p, item);
    return idx == SP__NIL ? NULL : dbg_at(p, idx);
}


static void *acquire_noted(sp_pool *pool, const void *arg, bool force, const char *file, int line) {
    if (SP__TS(pool)) return sp__ts_acquire(pool, arg, force, file, line);
    void *item = acquire_fast(pool, arg, force);
    if (item) sp__dbg_note_acquire(pool, item, file, line);
    return item;
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
#if SP_DEBUG
    return sp_acquire_with_at(pool, NULL, file, line);
#else
    (void)file, (void)line;
    return sp_acquire(pool);
#endif
}


void *sp_acquire_with_at(sp_pool *pool, const void *arg, const char *file, int line) {
#if SP_DEBUG
    if (!pool) return acquire_null("sp_acquire");
    SP__ONE_THREAD(pool, "sp_acquire", void *, NULL, sp_acquire_with_at(pool, arg, file, line));
    return acquire_noted(pool, arg, false, file, line);
#else
    (void)file, (void)line;
    return sp_acquire_with(pool, arg);
#endif
}


void *sp_acquire_force_at(sp_pool *pool, const void *arg, const char *file, int line) {
#if SP_DEBUG
    if (!pool) return acquire_null("sp_acquire_force");
    SP__ONE_THREAD(pool, "sp_acquire_force", void *, NULL, sp_acquire_force_at(pool, arg, file, line));
    return acquire_noted(pool, arg, true, file, line);
#else
    (void)file, (void)line;
    return sp_acquire_force(pool, arg);
#endif
}


/* A pointer that is not the start of one of p's members: one line, which names the pool it
   belongs to when p's owner (a registry) knows one. */
SP__NOINLINE sp_result sp__release_foreign(const sp_pool *p, const void *item) {
    const sp_pool *home = p->owner ? p->owner_fns->member_of(p->owner, item) : NULL;
    if (home && home != p)
        sp__log(p, SP__MSG_FOREIGN_OWNED, item, home->name);
    else
        sp__log(p, SP__MSG_FOREIGN, item);
    return SP_ERR_FOREIGN;
}


static SP__NOINLINE sp_result release_refused(sp_pool *p, uint32_t idx, void *item) {
    /* A thread-safe pool has no top range outside a window: every release lands here. */
    if (SP__TS(p)) return sp__ts_release(p, item, NULL, 0);
    if (idx == SP__NIL) return sp__release_foreign(p, item);
    const sp__slot *s = slot_at(p, idx);
    /* Busy: its own hook is running. Free: create, or dispose of a free member; leased: a
       teardown's dispose, unless on_release (releasing) or on_acquire. */
    if ((s->word & SP__BUSY) && (sp__state(s) == SP__FREE || sp__state(s) == SP__LEASED)) {
        bool lifecycle = sp__state(s) == SP__FREE || (p->tearing_down && !(s->word & SP__RELEASING));
        sp__log(p, lifecycle ? SP__MSG_REENTER_LIFECYCLE : SP__MSG_REENTER, item);
        return SP_ERR_NOT_LEASED;
    }
    if (sp__state(s) == SP__UNBUILT || sp__state(s) == SP__RETIRED) return sp__release_foreign(p, item);
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
    if (pool->ordered) lease_unlink(pool, slot_at(pool, idx));
    /* Until on_release returns the member is still leased (is_leased, resolve, and the stats
       agree); its life ends after the hook. */
    if (pool->on_release) run_on_release(pool, idx, item);
    leased_dec(pool);
    life_end_to_free(pool, idx);
    if (pool->tearing_down) sp__doom_released(pool);
    return SP_OK;
}


/* "Leased, not busy, not at its last life", and the word of the member's next life, free, in
   one test and one addition with its carry. A leased member's word is life << 4 | LEASED (plus
   BUSY while a hook runs, and RELEASING only ever with BUSY), and LEASED is 0, so the low three
   bits are clear exactly when the member is leased and not busy; then word + SP__TO_NEXT_FREE is
   the next life's free word, and that addition carries out of the word exactly when the life was
   the last one (SP__LIFE_MAX), where the slot must retire instead. False sends the release to
   release_general, which sorts out refusals and retirement. */
static inline bool releasable(uint32_t word, uint32_t *next_free) {
    uint32_t t = word - SP__LEASED; /* (0: kept so that the test reads as what it means) */
    if (SP__UNLIKELY(t & (SP__STATE_MASK | SP__BUSY))) return false;
#if defined(__GNUC__) || defined(__clang__)
    return !SP__UNLIKELY(__builtin_add_overflow(t, SP__TO_NEXT_FREE, next_free));
#else
    *next_free = t + SP__TO_NEXT_FREE;
    return *next_free > t;
#endif
}


/* The release of member idx without a hook: leased, not busy, not at its last life (where the
   word would carry out); anything else goes to release_general. `plain` (a constant where this
   is inlined) says a plain pool: memory order, 8-byte slots, no on_release. Otherwise the pool
   has a lease list to unlink from, or an on_release hook. */
static inline sp_result release_hookless(sp_pool *pool, uint32_t idx, void *item, bool plain) {
    sp__slot *s = plain ? plain_slot_at(pool, idx) : slot_at(pool, idx);
    uint32_t word;
    if (SP__UNLIKELY(!releasable(s->word, &word) || (!plain && pool->release_slow)))
        return release_general(pool, idx, item);
    if (!plain) lease_unlink(pool, s); /* not plain, not release_slow: ordered */
    leased_dec(pool);
    s->word = word; /* next life, now free */
    free_push(pool, idx, s);
    DBG_FREED(pool, idx, item);
    return SP_OK;
}


/* A NULL pool given a member. (Any call here costs the acquisition-order release path two
   register moves: GCC then keeps the member in another register. The plain path is unchanged.) */
static SP__NOINLINE sp_result release_null(const void *item) {
    if (!item) return SP_OK;
    sp__null_pool("sp_release");
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
    if (!pool->plain_release) return release_hookless(pool, idx, item, false);
    return release_hookless(pool, idx, item, true);
}


/* sp_release's miss of the top range's plain members, given the member number it computed: an
   acquisition-order pool's member (top_ordered), or anything else, for which
   the pointer is recovered from the number (the member test's map is a bijection: the inverse of a
   multiplication by stride_inv is one by the odd part of the stride, and of the rotation the
   opposite rotation), so that sp_release can compute the number in the pointer's register. */
static SP__NOINLINE sp_result release_plain_refused(sp_pool *pool, uint64_t idx);

/* The release of an acquisition-order pool's member of the top range, no on_release, no
   diversion (top_ordered): release_hookless for it, with the 16-byte slot known at compile time
   and the lease list unlink in place. */
static inline sp_result release_ordered(sp_pool *pool, uint64_t idx) {
    /* The slot addressed from slots and its link in each access (see acquire_ordered): the link
       is one lea from the index, which stays for the free list. */
    unsigned char *slots = pool->slots;
    uintptr_t link = lease_link((uint32_t)idx); /* idx < 2^24 */
    uint32_t word;
    SP__OPAQUE(link);
    if (SP__UNLIKELY(!releasable(oslot_by_link(slots, link)->s.word, &word)))
        return release_plain_refused(pool, idx);
    SP__OPAQUE(link);
    uint32_t prev8 = oslot_by_link(slots, link)->prev8;
    SP__OPAQUE(link);
    uint32_t next8 = oslot_by_link(slots, link)->s.next;
    lease_at(pool, prev8)->s.next = next8; /* the ends' slot for SP__NIL's: no test */
    lease_at(pool, next8)->prev8 = prev8;
    leased_dec(pool);
    SP__OPAQUE(link);
    oslot_by_link(slots, link)->s.word = word; /* next life, now free */
    SP__OPAQUE(link);
    oslot_by_link(slots, link)->s.next = pool->free_head;
    pool->free_head = (uint32_t)idx;
    DBG_FREED(pool, (uint32_t)idx, item_at(pool, (uint32_t)idx));
    return SP_OK;
}


/* The pointer whose member number against top_items is q (see release_unmatched). */
static inline sp_result release_number(sp_pool *pool, uint64_t q) {
    uint64_t odd = (uint64_t)pool->stride >> pool->stride_rot;
    uint64_t x = q * odd;
    uint32_t r = pool->stride_rot;
    x = (x << r) | (x >> ((64u - r) & 63u));
    return release_other(pool, (void *)(pool->top_items + (uintptr_t)x));
}


static SP__NOINLINE sp_result release_unmatched(sp_pool *pool, uint64_t q) {
    if (q < pool->top_ordered) return release_ordered(pool, pool->top_first + q);
    /* A thread-safe pool (never ordered): its top_items is its fast range's start, so q below
       its fast range's member count (0 for any other pool, and in a window) is the slot index
       of a member of that range. Any other q of a thread-safe pool takes the general path
       from the pointer (release_refused). */
    if (q < SP__TS_FAST_COUNT(pool)) return sp__ts_release_fast(pool, q);
    return release_number(pool, q);
}


/* The thread-safe fast release's fallback: the general path, from the same q. */
sp_result sp__release_number(sp_pool *pool, uint64_t q) { return release_number(pool, q); }


/* A plain pool's member of the top range that is not releasable in the plain way (refusals, a
   retirement): its address from its slot index, exactly item (see release_unmatched). */
static SP__NOINLINE sp_result release_plain_refused(sp_pool *pool, uint64_t idx) {
    return release_general(pool, (uint32_t)idx, item_at(pool, (uint32_t)idx));
}


sp_result sp_release(sp_pool *pool, void *item) {
    if (SP__UNLIKELY(!pool)) return release_other(pool, item); /* same arguments: no moves */
    SP__ONE_THREAD(pool, "sp_release", sp_result, SP_ERR_INVALID, sp_release(pool, item));
    /* index_of without its SP__NIL answer, against top_plain: a hit is a plain pool's member of
       the top range and goes straight to the plain path. The check is exact (item is the start
       of member q), so NULL never passes it. From here on only q is kept, not item: the
       misses recover item from q or from the slot index. */
    uint64_t q = member_number(pool, pool->top_items, (uintptr_t)item);
    if (SP__UNLIKELY(q >= pool->top_plain)) return release_unmatched(pool, q);
    uint64_t idx = pool->top_first + q; /* below SP__SLOT_LIMIT: no truncation below */
    /* The slot addressed in each access (SP__OPAQUE, as in acquire_plain): no address register */
    sp__slot *slots = (sp__slot *)(void *)pool->slots;
    uint32_t word;
    SP__OPAQUE(idx);
    if (SP__UNLIKELY(!releasable(slots[idx].word, &word))) return release_plain_refused(pool, idx);
    leased_dec(pool);
    SP__OPAQUE(idx);
    slots[idx].word = word; /* next life, now free */
    SP__OPAQUE(idx);
    free_push(pool, (uint32_t)idx, &slots[idx]);
    DBG_FREED(pool, (uint32_t)idx, item);
    return SP_OK;
}


sp_result sp_release_at(sp_pool *pool, void *item, const char *file, int line) {
#if SP_DEBUG
    /* The site is noted first: a checksum mismatch found at the next acquisition names it. The
       record is bookkeeping, so a refused release leaves the member's state untouched. A
       thread-safe pool notes it after winning the release (other threads may race for it). */
    SP__ONE_THREAD(pool, "sp_release", sp_result, SP_ERR_INVALID, sp_release_at(pool, item, file, line));
    if (pool && SP__TS(pool)) return sp__ts_release(pool, item, file, line);
    if (pool && item && sp_is_leased(pool, item)) sp__dbg_note_release(pool, item, file, line);
#else
    (void)file, (void)line;
#endif
    return sp_release(pool, item);
}


/* The mark sp_release_all puts on the members of a memory-order pool that are leased when it
   starts: such a member is in no list, so its link is free to carry it. Never a slot index. A
   release overwrites the link (free list), a build and a reclaim reset it, so a member acquired
   during the call never carries the mark. */
#define SP__LEASED_AT_START (SP__NIL - 1u)


size_t sp_release_all(sp_pool *pool) {
    if (!pool) {
        sp__null_pool("sp_release_all");
        return 0;
    }
    SP__ONE_THREAD(pool, "sp_release_all", size_t, 0, sp_release_all(pool));
    SP__TS_WINDOWED(pool, "sp_release_all", size_t, sp_release_all(w_));
    if (pool->scoring > 0) {
        sp__log(pool, SP__MSG_IN_PRIORITY, "sp_release_all");
        return 0;
    }
    size_t n = 0;
    /* Exactly the members leased now are released (skipping those whose own hooks are running:
       a release_all called from a hook); members that on_release hooks acquire meanwhile stay
       leased, so the call always ends. */
    if (!pool->ordered) {
        for (uint32_t i = sp__leased_from(pool, 0); i != SP__NIL; i = sp__leased_from(pool, i + 1u))
            slot_at(pool, i)->next = SP__LEASED_AT_START;
        for (uint32_t i = sp__leased_from(pool, 0); i != SP__NIL; i = sp__leased_from(pool, i + 1u)) {
            const sp__slot *s = slot_at(pool, i);
            if (s->next != SP__LEASED_AT_START || (s->word & SP__BUSY)) continue;
            if (sp_release(pool, item_at(pool, i)) == SP_OK) n++;
        }
        return n;
    }
    /* Acquisition order: the members leased now are the list's members up to the newest stamp;
       acquisitions append behind them. Hooks may release any of them meanwhile: start from the
       head again after each release. */
    sp__stamps_fresh(pool);
    uint32_t newest = (uint32_t)(pool->acquired - pool->stamp_origin);
    uint32_t idx = lease_head(pool);
    while (idx != SP__NIL && stamp_rank(pool, idx) <= newest) {
        if (slot_at(pool, idx)->word & SP__BUSY) {
            idx = lease_next(pool, idx);
            continue;
        }
        if (sp_release(pool, item_at(pool, idx)) == SP_OK) {
            n++;
            idx = lease_head(pool);
        } else {
            idx = lease_next(pool, idx);
        }
    }
    return n;
}
