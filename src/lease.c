/* SPDX-License-Identifier: Zlib */
/* lease.c -- Acquire / Release: the plain paths (a pop and a byte; a range test, a byte and a
   push), the general paths behind them (hooks, the lease list, handles, refusals, teardown,
   thread-safe pools), reclaim, sp_release_all, and the _at variants that record call sites. */
#include "pool_internal.h"
#include "threads.h"

/* Which paths acquisitions and releases take: the plain ones exactly when nothing else must
   happen (memory order, no hook on the way, one thread, no teardown or priority callback
   running); then, for a pool of one span, that span's place for the plain release's
   arithmetic. A pool of several spans releases through the map of owners every time (by_map:
   its members lie in every span at random, and a branch between two ways would be guessed
   wrong half the time). Cold: runs when those states begin and end and when the spans change. */
void sp__routes_update(sp_pool *p) {
    if (p->ts) { /* its plain paths stay off (sp__ts_attach); its layer has a view of its own */
        sp__ts_routes_update(p);
        return;
    }
    const sp__span *t = top_span(p);
    bool divert = p->act.frozen > 0 || p->act.tearing_down || p->ts != NULL || p->cfg.ordered;
    p->hot.plain_floor = !divert && !p->cfg.on_acquire ? 0u : UINT32_MAX;
    p->hot.plain_release = t && !divert && !p->cfg.on_release;
    p->hot.top_first = t ? t->first : 0u;
    bool one = p->mem.live == 1u, bits = p->hot.plain_bits;
    p->hot.one_base = t && one && !bits ? p->hot.span_base[t->rec] : 0u;
    p->hot.wide_base = t && one && bits ? p->hot.span_base[t->rec] : 0u;
    p->hot.top_items = t ? (uintptr_t)t->items : 0u;
    p->hot.top_plain = p->hot.plain_release && one && !bits ? span_count(t) : 0u;
    p->hot.top_wide = p->hot.plain_release && one && bits ? span_count(t) : 0u;
    p->hot.by_map = p->hot.plain_release && p->mem.live > 1u && !p->mem.source_failed
                        ? atomic_load_explicit(&p->mem.owners, memory_order_relaxed)
                        : NULL;
    p->hot.near = p->hot.by_map ? sp__owner_near_of(p->hot.by_map, t->items) : 0u;
}

/* A callback that reads the pool as it is (priority, a snapshot's save or load) runs frozen:
   acquire, release, release_all and prewarm on it are refused with a line naming it. The plain
   paths are diverted meanwhile, so that the general paths see the state. */
uint8_t sp__freeze(sp_pool *p, uint8_t by) {
    uint8_t was = p->act.frozen;
    p->act.frozen = by;
    sp__routes_update(p);
    return was;
}

void sp__thaw(sp_pool *p, uint8_t was) {
    p->act.frozen = was;
    sp__routes_update(p);
}

/* ---- leasing a free member ---------------------------------------------------------------- */

static SP__NOINLINE void run_on_acquire(sp_pool *p, _Atomic uint32_t *w, void *item, const void *arg) {
    SP__RUN_HOOK(p, w, item, p->cfg.on_acquire(item, arg, p->cfg.user));
}

/* Leases free member idx (out of the stack and out of limbo already) in its word: the lease
   list gets it (acquisition order), then on_acquire runs (run_hook). */
void sp__lease_word(sp_pool *p, uint32_t idx, const void *arg, bool run_hook) {
    sp__span *s = span_of(p, idx);
    _Atomic uint32_t *w = word_in(s, idx);
    void *item = item_in(p, s, idx);
    wstore(w, word_make(word_life(wload(w)), SP__LEASED));
    DBG_LEASING(p, idx, item);
    DBG_SITE_CLEAR(p, idx);
    if (p->cfg.ordered) lease_append(p, idx); /* before the hook: it may iterate */
    if (run_hook && p->cfg.on_acquire) run_on_acquire(p, w, item, arg);
}

/* Leases free member idx, taken from the stack: plainly when the routes allow, else in its
   word with the hooks. */
static void *lease_from_stack(sp_pool *p, uint32_t idx, const void *arg) {
    leased_from_stack(p);
    sp__span *s = span_of(p, idx);
    if (p->hot.plain_floor == 0) {
        plain_set(p, idx);
        void *item = item_in(p, s, idx);
        DBG_LEASING(p, idx, item);
        DBG_SITE_CLEAR(p, idx);
        return item;
    }
    sp__lease_word(p, idx, arg, true);
    return item_in(p, s, idx);
}

/* Leases member idx that was just built (in limbo). */
static void *lease_built(sp_pool *p, uint32_t idx, const void *arg) {
    peak_sync(p);
    p->mem.limbo--;
    p->hot.acquired++;
    peak_set(p);
    if (p->hot.plain_floor == 0) { /* (not poisoned: just built, or reclaimed) */
        plain_set(p, idx);
        DBG_SITE_CLEAR(p, idx);
        return item_at(p, idx);
    }
    sp__lease_word(p, idx, arg, true);
    return item_at(p, idx);
}

/* ---- plain leases move to their word ------------------------------------------------------
   A plain lease lives in its byte only. Whatever needs more (a handle, a hook on the member, a
   teardown, a reclaim, sp_release_all's mark) moves it to its word first: the member stays
   leased, the same life, and from then on its release takes the general path. */
static void lease_to_word(sp_pool *p, uint32_t idx, _Atomic uint32_t *w) {
    if (!plain_test(p, idx)) return;
    plain_clear(p, idx);
    wstore(w, (wload(w) & ~(uint32_t)SP__STATE_MASK) | SP__LEASED);
}

/* ---- releasing ------------------------------------------------------------------------------ */

static SP__NOINLINE void run_on_release(sp_pool *p, _Atomic uint32_t *w, void *item) {
    wstore(w, wload(w) | SP__RELEASING);
    SP__RUN_HOOK(p, w, item, p->cfg.on_release(item, p->cfg.user));
    wstore(w, wload(w) & ~(uint32_t)SP__RELEASING);
}

/* priority is a hook too (destroy, clear and trim are refused inside it), and more: a pure
   scoring function, inside which this pool's acquisitions and releases are refused (scoring). */
static double run_priority(sp_pool *p, uint32_t idx) {
    _Atomic uint32_t *w = word_at(p, idx);
    double pr = 0.0;
    lease_to_word(p, idx, w);
    SP__RUN_HOOK(p, w, item_at(p, idx), pr = p->cfg.priority(item_at(p, idx), p->cfg.user));
    return pr;
}

/* Ends the life of leased member idx, already out of the lease list with its on_release run:
   the life moves on if a handle of it went out (or the slot retires, its counter exhausted),
   and the member joins the stack. */
static void life_end(sp_pool *p, uint32_t idx, _Atomic uint32_t *w, void *item) {
    uint32_t word = wload(w), life = word_life(word);
    if (word & SP__HANDLED) {
        if ((uint64_t)life + p->handles.life_base >= SP__LIFE_MAX) {
            peak_sync(p);
            p->mem.limbo++;
            peak_set(p);
            sp__member_retire(p, idx);
            return;
        }
        life++;
    }
    wstore(w, word_make(life, SP__FREE));
    stack_push(p, idx);
    DBG_FREED(p, idx, item);
    (void)item;
}

/* Why a release of idx (its word, after any plain lease moved to it) is refused. */
static SP__NOINLINE sp_result release_refused(sp_pool *p, void *item, uint32_t word) {
    uint32_t st = word_state(word);
    if ((word & SP__BUSY) && (st == SP__FREE || st == SP__LEASED)) {
        /* Busy: its own hook runs. Free: create, or dispose of a free member; leased: a
           teardown's dispose, unless on_release (releasing) or on_acquire. */
        bool lifecycle = st == SP__FREE || (p->act.tearing_down && !(word & SP__RELEASING));
        sp__log(p, lifecycle ? SP__MSG_REENTER_LIFECYCLE : SP__MSG_REENTER, item);
        return SP_ERR_NOT_LEASED;
    }
    if (st == SP__UNBUILT || st == SP__RETIRED) return sp__release_foreign(p, item);
    sp__log(p, SP__MSG_DOUBLE_RELEASE, item);
    return SP_ERR_NOT_LEASED;
}

sp_result sp__release_index(sp_pool *p, uint32_t idx, void *item) {
    _Atomic uint32_t *w = word_at(p, idx);
    lease_to_word(p, idx, w);
    uint32_t word = wload(w);
    if (word_state(word) != SP__LEASED || (word & SP__BUSY)) return release_refused(p, item, word);
    if (p->cfg.ordered) lease_unlink(p, idx);
    /* Until on_release returns the member is still leased (is_leased, resolve and the stats
       agree); its life ends after the hook. */
    if (p->cfg.on_release) run_on_release(p, w, item);
    life_end(p, idx, w, item);
    return SP_OK;
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

sp_result sp__release_general(sp_pool *p, void *item) {
    if (SP__UNLIKELY(!p)) {
        if (!item) return SP_OK;
        sp__null_pool("sp_release");
        return SP_ERR_INVALID;
    }
    if (!item) return SP_OK; /* NULL is never a member, so it always lands here */
    if (p->ts && !sp__ts_windowed(p)) return sp__ts_release(p, item, NULL, 0);
    if (p->act.frozen > 0) { /* the callback reads the pool as it is (a reclaim's candidates, a save) */
        sp__log(p, SP__MSG_FROZEN, "sp_release", sp__frozen_by(p->act.frozen));
        return SP_ERR_INVALID;
    }
    uint32_t idx = index_of(p, item);
    if (SP__UNLIKELY(idx == SP__NIL)) return sp__release_foreign(p, item);
    if (p->hot.plain_release && plain_test(p, idx)) { /* plain, from a pool of several spans */
        plain_clear(p, idx);
        stack_push(p, idx);
        DBG_FREED(p, idx, item);
        return SP_OK;
    }
    return sp__release_index(p, idx, item);
}

/* ---- reclaim -------------------------------------------------------------------------------- */

/* Memory order without a priority hook: round robin, from the slot after the last victim, so
   that every leased member takes its turn. */
static uint32_t reclaim_next_in_turn(sp_pool *p) {
    for (int pass = 0; pass < 2; pass++) { /* from the cursor to the end, then from the start */
        uint32_t from = pass ? 0u : p->act.reclaim_cursor;
        for (uint32_t i = sp__leased_from(p, from); i != SP__NIL; i = sp__leased_from(p, i + 1u)) {
            if (wload(word_at(p, i)) & SP__BUSY) continue;
            p->act.reclaim_cursor = i + 1u;
            return i;
        }
    }
    return SP__NIL;
}

/* The leased member a reclaim takes: the lowest priority (the first in the pool's order on
   ties), or the first in the pool's order (the oldest, or the next in turn); never one that a
   hook is processing. */
static uint32_t reclaim_victim(sp_pool *p) {
    if (!p->cfg.ordered && !p->cfg.priority) return reclaim_next_in_turn(p);
    uint32_t best = SP__NIL;
    double best_priority = 0.0;
    /* While priority runs the pool cannot change (scoring: acquire, release and prewarm are
       refused; hooks: destroy, clear and trim), so the walk's links stay current and the
       victim is still leased and ours when the scan ends. */
    uint8_t was = p->cfg.priority ? sp__freeze(p, SP__FROZEN_PRIORITY) : 0u;
    for (uint32_t i = sp__leased_first(p); i != SP__NIL; i = sp__leased_next(p, i)) {
        if (wload(word_at(p, i)) & SP__BUSY) continue;
        if (!p->cfg.priority) return i;
        double pr = run_priority(p, i);
        if (best == SP__NIL || pr < best_priority) { /* strict: the first wins a tie */
            best = i;
            best_priority = pr;
        }
    }
    if (p->cfg.priority) sp__thaw(p, was);
    return best;
}

static SP__NOINLINE void *reclaim(sp_pool *p, const void *arg, bool force) {
    uint32_t idx = reclaim_victim(p);
    if (idx == SP__NIL) {
        /* Not a drop: every candidate is busy in a hook (sp_acquire_force documents NULL for
           this case). A RECLAIM pool's sp_acquire counts it as a drop, as its callers see one. */
        sp__log(p, SP__MSG_NOT_RECLAIMABLE);
        if (!force) p->counters.dropped++;
        return NULL;
    }
    sp__span *s = span_of(p, idx);
    _Atomic uint32_t *w = word_in(s, idx);
    void *item = item_in(p, s, idx);
    uint32_t was = wload(w);
    if (p->cfg.ordered && !p->cfg.on_release && !p->cfg.on_acquire &&
        (!(was & SP__HANDLED) || (uint64_t)word_life(was) + p->handles.life_base < SP__LIFE_MAX)) {
        /* The common reclaim (acquisition order, no hooks): the oldest lease ends and the
           member is leased again at once as the newest, so leased, limbo and the peak stay. */
        lease_unlink(p, idx);
        p->counters.reclaimed++;
        p->hot.acquired++;
        wstore(w, word_make((was & SP__HANDLED) ? word_life(was) + 1u : word_life(was), SP__LEASED));
        DBG_LEASING(p, idx, item);
        DBG_SITE_CLEAR(p, idx);
        lease_append(p, idx);
        return item;
    }
    lease_to_word(p, idx, w);
    if (p->cfg.ordered) lease_unlink(p, idx);
    if (p->cfg.on_release) run_on_release(p, w, item); /* still leased while it runs */
    p->counters.reclaimed++;
    /* Its life ends and the next begins: as a release and an acquisition, without the stack. */
    peak_sync(p);
    p->mem.limbo++;
    peak_set(p);
    uint32_t word = wload(w), life = word_life(word);
    if (word & SP__HANDLED) {
        if ((uint64_t)life + p->handles.life_base >= SP__LIFE_MAX) { /* retired: build another */
            sp__member_retire(p, idx);
            return sp__acquire_general(p, arg, force);
        }
        life++;
    }
    wstore(w, word_make(life, SP__FREE));
    return lease_built(p, idx, arg);
}

/* ---- the general acquisition ---------------------------------------------------------------- */

void *sp__acquire_general(sp_pool *p, const void *arg, bool force) {
    if (p->ts && !sp__ts_windowed(p)) return sp__ts_acquire(p, arg, force, NULL, 0);
    /* Refused whatever is free. Not drops. */
    if (p->act.frozen > 0) {
        sp__log(p, SP__MSG_FROZEN, "acquire", sp__frozen_by(p->act.frozen));
        return NULL;
    }
    if (p->act.tearing_down) {
        sp__log(p, p->act.destroying ? SP__MSG_DESTROYING : SP__MSG_CLEARING);
        return NULL;
    }
    if (p->hot.free_top > 0) return lease_from_stack(p, stack_pop(p), arg);
    if (SP__UNLIKELY(p->act.allocating > 0)) { /* growth is under way: it would begin again */
        sp__log(p, SP__MSG_IN_ALLOCATOR, "acquire");
        return NULL;
    }
    bool past_max = p->cfg.max && p->mem.size >= p->cfg.max;
    if (past_max && p->cfg.overflow != SP_OVERFLOW_GROW) {
        if (p->cfg.overflow == SP_OVERFLOW_RECLAIM || force) return reclaim(p, arg, force);
        p->counters.dropped++;
        return NULL;
    }
    uint32_t idx = sp__member_build(p, past_max);
    if (idx == SP__NIL) {
        /* A fixed buffer with retired slots has no room left below max: saturated after all. */
        if (p->cfg.fixed && pool_leased(p) > 0) {
            if (p->cfg.overflow == SP_OVERFLOW_RECLAIM || force) return reclaim(p, arg, force);
            p->counters.dropped++;
        }
        return NULL;
    }
    if (past_max && sp__counters_grew(&p->counters, 1u)) sp__log(p, SP__MSG_GROWN, p->cfg.max, p->mem.size);
    /* create may have acquired members of this pool meanwhile; this one is still ours. */
    return lease_built(p, idx, arg);
}

/* ---- the public entry points ------------------------------------------------------------------ */

static SP__NOINLINE void *acquire_null(const char *function) {
    sp__null_pool(function);
    return NULL;
}

/* The free member on top of the stack, leased plainly when the routes allow, else the general
   path. */
static inline void *acquire_fast(sp_pool *p, const void *arg, bool force) {
    uint32_t top = p->hot.free_top;
    if (SP__UNLIKELY(top <= p->hot.plain_floor))
        return p->ts ? sp__ts_acquire(p, arg, force, NULL, 0) : sp__acquire_general(p, arg, force);
    return sp__acquire_plain(p, entry_read(p->hot.stack + top - SP__ENTRY));
}

void *sp_acquire(sp_pool *pool) {
    if (SP__UNLIKELY(!pool)) return acquire_null("sp_acquire");
    SP__ONE_THREAD(pool, "sp_acquire", void *, NULL, sp_acquire(pool));
    return acquire_fast(pool, NULL, false);
}

void *sp_acquire_with(sp_pool *pool, const void *arg) {
    if (SP__UNLIKELY(!pool)) return acquire_null("sp_acquire_with");
    SP__ONE_THREAD(pool, "sp_acquire_with", void *, NULL, sp_acquire_with(pool, arg));
    return acquire_fast(pool, arg, false);
}

void *sp_acquire_force(sp_pool *pool, const void *arg) {
    if (SP__UNLIKELY(!pool)) return acquire_null("sp_acquire_force");
    SP__ONE_THREAD(pool, "sp_acquire_force", void *, NULL, sp_acquire_force(pool, arg));
    return acquire_fast(pool, arg, true);
}

/* A release the plain tests did not take: released plainly if the member is leased plainly and
   releases may be plain (memory order, no on_release, one thread, nothing running that diverts
   them) in a pool of several spans some of which came from the allocator (a source that ran
   out, or none), its span found by address; else the general path. */
static SP__NOINLINE sp_result release_searched(sp_pool *p, void *item) {
    if (p->hot.plain_release && p->mem.live > 1u && item) {
        uint32_t idx = sp__index_searched(p, (uintptr_t)item);
        if (idx != SP__NIL && plain_take(p, idx)) {
            stack_push(p, idx);
            DBG_FREED(p, idx, item);
            return SP_OK;
        }
    }
    return sp__release_general(p, item);
}

/* A plain release: a member leased plainly, of the one span (top_plain) or, in a pool of several
   spans from the source, of the span the map names (by_map: inline, as members of a pool grown
   by acquisition lie in every span). Anything else (a word lease, a refusal, spans from the
   allocator, a pool whose releases are not plain) takes the paths behind. */
sp_result sp_release(sp_pool *pool, void *item) {
    if (SP__UNLIKELY(!pool)) return sp__release_general(pool, item);
    SP__ONE_THREAD(pool, "sp_release", sp_result, SP_ERR_INVALID, sp_release(pool, item));
    uint64_t q = member_number(pool, pool->hot.top_items, (uintptr_t)item);
    uint32_t idx;
    if (q < pool->hot.top_plain) {
        idx = pool->hot.top_first + (uint32_t)q;
        if (SP__UNLIKELY(!plain_byte_take(pool, idx))) return sp__release_general(pool, item);
    } else if (q < pool->hot.top_wide) {
        idx = pool->hot.top_first + (uint32_t)q;
        if (SP__UNLIKELY(!plain_bit_take(pool, idx))) return sp__release_general(pool, item);
    } else {
        if (!pool->hot.by_map) return pool->ts ? sp__ts_release(pool, item, NULL, 0) : release_searched(pool, item);
        idx = index_in_span(pool, span_by_near(pool->hot.near, pool->hot.by_map, item), (uintptr_t)item);
        if (SP__UNLIKELY(idx == SP__NIL || !plain_take(pool, idx))) return sp__release_general(pool, item);
    }
    stack_push(pool, idx);
    DBG_FREED(pool, idx, item);
    return SP_OK;
}

/* ---- sp_release_all --------------------------------------------------------------------------- */

/* The mark sp_release_all puts on the members of a memory-order pool leased when it starts
   (they move to their words for it): a release rewrites the word, so a member acquired during
   the call never carries it. */
#define SP__LEASED_AT_START SP__MARKED

static size_t release_all_in_memory_order(sp_pool *p) {
    size_t n = 0;
    for (uint32_t i = sp__leased_from(p, 0); i != SP__NIL; i = sp__leased_from(p, i + 1u)) {
        _Atomic uint32_t *w = word_at(p, i);
        lease_to_word(p, i, w);
        if (!(wload(w) & SP__BUSY)) wstore(w, wload(w) | SP__LEASED_AT_START);
    }
    for (uint32_t i = sp__leased_from(p, 0); i != SP__NIL; i = sp__leased_from(p, i + 1u)) {
        _Atomic uint32_t *w = word_at(p, i);
        uint32_t word = wload(w);
        if (!(word & SP__LEASED_AT_START) || (word & SP__BUSY)) continue;
        wstore(w, word & ~(uint32_t)SP__LEASED_AT_START);
        if (sp__release_index(p, i, item_at(p, i)) == SP_OK) n++;
    }
    /* Marks left on members a hook kept busy meanwhile. */
    for (uint32_t i = sp__leased_from(p, 0); i != SP__NIL; i = sp__leased_from(p, i + 1u)) {
        _Atomic uint32_t *w = word_at(p, i);
        wstore(w, wload(w) & ~(uint32_t)SP__LEASED_AT_START);
    }
    return n;
}

size_t sp_release_all(sp_pool *pool) {
    if (!pool) {
        sp__null_pool("sp_release_all");
        return 0;
    }
    SP__ONE_THREAD(pool, "sp_release_all", size_t, 0, sp_release_all(pool));
    SP__TS_WINDOW(pool, "sp_release_all", size_t, sp_release_all(w_));
    if (pool->act.frozen > 0) {
        sp__log(pool, SP__MSG_FROZEN, "sp_release_all", sp__frozen_by(pool->act.frozen));
        return 0;
    }
    /* Exactly the members leased now are released (skipping those whose own hooks run: a
       release_all called from a hook); members that on_release hooks acquire meanwhile stay
       leased, so the call always ends. */
    if (!pool->cfg.ordered) return release_all_in_memory_order(pool);
    /* Acquisition order: the members leased now are the list's members up to the newest stamp;
       acquisitions append behind them. Hooks may release any of them meanwhile: start from the
       head again after each release. */
    size_t n = 0;
    sp__stamps_fresh(pool);
    uint32_t newest = (uint32_t)(pool->hot.acquired - pool->act.stamp_origin);
    uint32_t idx = pool->act.lease_head;
    while (idx != SP__NIL && stamp_rank(pool, idx) <= newest) {
        if (wload(word_at(pool, idx)) & SP__BUSY) {
            idx = olink_at(pool, idx)->next;
            continue;
        }
        if (sp__release_index(pool, idx, item_at(pool, idx)) == SP_OK) {
            n++;
            idx = pool->act.lease_head;
        } else {
            idx = olink_at(pool, idx)->next;
        }
    }
    return n;
}

/* ---- the same calls, recording call sites (debug records; plain calls with SP_DEBUG=0) ----- */

#if SP_DEBUG
static sp__dbg *dbg_of(const sp_pool *p, const void *item) {
    uint32_t idx = item ? index_of(p, item) : SP__NIL;
    return idx == SP__NIL ? NULL : dbg_at(p, idx);
}

static void note_acquire(sp_pool *p, void *item, const char *file, int line) {
    sp__dbg *rec = item ? dbg_of(p, item) : NULL;
    if (!rec) return;
    rec->acq_file = file;
    rec->acq_line = line > 0 ? (uint32_t)line : 0u;
}
#endif

void *sp_acquire_at(sp_pool *pool, const char *file, int line) {
#if SP_DEBUG
    return sp_acquire_with_at(pool, NULL, file, line);
#else
    (void)file, (void)line;
    return sp_acquire(pool);
#endif
}

/* A debug library notes the site in the member's record: a thread-safe pool's before the member
   is handed out (another thread may release it through a stale pointer and acquire it again at
   once: a note made afterwards would race with that thread's), any other pool's right after
   (one thread at a time). A library built with SP_DEBUG=0 keeps no records: its _at functions
   are the plain ones, whatever the caller's SP_DEBUG. */
#if SP_DEBUG
static void *acquire_noted(sp_pool *pool, const void *arg, bool force, const char *file, int line) {
    if (pool->ts && !sp__ts_windowed(pool)) return sp__ts_acquire(pool, arg, force, file, line);
    void *item = acquire_fast(pool, arg, force);
    note_acquire(pool, item, file, line);
    return item;
}
#endif

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

sp_result sp_release_at(sp_pool *pool, void *item, const char *file, int line) {
#if SP_DEBUG
    /* The site is noted first: a checksum mismatch found at the next acquisition names it. The
       record is bookkeeping, so a refused release leaves the member's state untouched. A
       thread-safe pool notes it after winning the release (other threads may race for it). */
    SP__ONE_THREAD(pool, "sp_release", sp_result, SP_ERR_INVALID, sp_release_at(pool, item, file, line));
    if (pool && pool->ts && !sp__ts_windowed(pool)) return sp__ts_release(pool, item, file, line);
    if (pool && item && sp_is_leased(pool, item)) {
        sp__dbg *rec = dbg_of(pool, item);
        rec->rel_file = file;
        rec->rel_line = line > 0 ? (uint32_t)line : 0u;
    }
#else
    (void)file, (void)line;
#endif
    return sp_release(pool, item);
}

/* ---- zeroed acquisition ------------------------------------------------------------------------
   The pool knows a member is zero only when it has just built it (sp__member_build zeroes it and,
   without a create hook, nothing writes it before it is handed out): an acquisition that finds
   no free member and builds one, without a reclaim. Anything else gets the memset. The check
   reads what the general path changes anyway (the stack's top, two counters), so no hot path
   keeps new state for it. A thread-safe pool's members come from magazines whose history is the
   other threads': always zeroed here. */
static void *acquire_zeroed(sp_pool *pool, const char *file, int line) {
    if (pool->cfg.create || pool->cfg.on_acquire) {
        sp__log(pool, SP__MSG_ZEROED_HOOKS);
        return NULL;
    }
    bool may_build = !pool->ts && pool->hot.free_top == 0;
    uint64_t created = may_build ? pool->counters.created : 0;
    uint64_t reclaimed = may_build ? pool->counters.reclaimed : 0;
#if SP_DEBUG
    void *item = sp_acquire_with_at(pool, NULL, file, line);
#else
    (void)file, (void)line;
    void *item = sp_acquire(pool);
#endif
    if (!item) return NULL;
    bool fresh = may_build && pool->counters.created == created + 1u && pool->counters.reclaimed == reclaimed;
    if (!fresh) memset(item, 0, pool->cfg.item_size);
    return item;
}

void *sp_acquire_zeroed(sp_pool *pool) { return sp_acquire_zeroed_at(pool, NULL, 0); }

void *sp_acquire_zeroed_at(sp_pool *pool, const char *file, int line) {
    if (SP__UNLIKELY(!pool)) return acquire_null("sp_acquire_zeroed");
    SP__ONE_THREAD(pool, "sp_acquire_zeroed", void *, NULL, sp_acquire_zeroed_at(pool, file, line));
    return acquire_zeroed(pool, file, line);
}
