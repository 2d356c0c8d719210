/* SPDX-License-Identifier: Zlib */
/* magazine.c -- the calls any thread may make on a thread-safe pool (SP_THREADS_SAFE): acquire
   and release through the calling thread's two magazines (Bonwick and Adams, 2001), the depot
   that exchanges whole magazines under the pool's lock, growth in batches, and the lock-free
   lookups (release's pointer test, resolve, handle_of) on the published spans and the atomic
   words. docs/threads.md has the design: which transition of the word each call makes, and why
   a racing double release has exactly one winner. */
#include "threads_internal.h"

#if SP__HAVE_THREADS

#  if SP_DEBUG
#    define INSIDE(c, v) atomic_store_explicit(&(c)->inside, (v), memory_order_relaxed)
#  else
#    define INSIDE(c, v) ((void)0)
#  endif

/* The slot index of the member starting at item, from the published spans, or SP__NIL. A thread
   holding a member saw its span published (it got the member through the lock or its own
   synchronisation), so the answer is exact for it; for any other pointer the worst is SP__NIL. */
static uint32_t ts_index_of(const sp_pool *p, const void *item, sp__span **span) {
    sp__owner_near near = atomic_load_explicit(&p->ts->fast.near, memory_order_relaxed);
    sp__span *own = (sp__span *)(uintptr_t)own_span_by_map(p, near, item); /* (see sp__index_searched) */
    if (own) {
        uint64_t q = member_number(p, (uintptr_t)own->items, (uintptr_t)item);
        *span = own;
        return q < atomic_load_explicit(&own->count, memory_order_acquire) ? own->first + (uint32_t)q : SP__NIL;
    }
    /* spans from the allocator (no virtual memory, or a source that ran out) */
    uint32_t n = atomic_load_explicit(&p->mem.rec_count, memory_order_acquire);
    for (uint32_t k = n; k-- > 0;) { /* the top (newest, largest) first */
        sp__span *s = atomic_load_explicit(&p->mem.recs[k].span, memory_order_acquire);
        if (!s) continue;
        uint64_t q = member_number(p, (uintptr_t)s->items, (uintptr_t)item);
        *span = s;
        if (q < atomic_load_explicit(&s->count, memory_order_acquire)) return s->first + (uint32_t)q;
    }
    return SP__NIL;
}

static inline uint32_t ts_word(const _Atomic uint32_t *w) { return atomic_load_explicit(w, memory_order_acquire); }

/* ---- acquire --------------------------------------------------------------------------------- */

/* Grows the pool by up to half a magazine of members into the caller's loaded magazine (the rest,
   if a create hook filled it meanwhile, to the loose ones), under the lock. DROP and max hold
   exactly for built members: growth stops at max unless the policy is GROW. */
static void grow_batch(sp_pool *p, sp__tcache *c) {
    sp__ts *ts = p->ts;
    for (uint32_t built = 0; built < (ts->mag_first + 1u) / 2u; built++) {
        bool past_max = p->cfg.max && p->mem.size >= p->cfg.max;
        if (past_max && (p->cfg.overflow != SP_OVERFLOW_GROW || built > 0)) return;
        uint32_t idx = sp__member_build(p, past_max);
        if (idx == SP__NIL) return;
        if (past_max && sp__counters_grew(&p->counters, 1u)) sp__log(p, SP__MSG_GROWN, p->cfg.max, p->mem.size);
        DBG_FREED(p, idx, item_at(p, idx));
        p->mem.limbo--; /* free, in a magazine or the loose ones */
        sp__mag *m = c->loaded; /* read again: a create hook may have swapped it */
        if (m->n < m->cap)
            m->e[m->n++] = idx;
        else
            sp__ts_loose_push(p, idx);
    }
}

/* A full magazine from the depot (the empty prev goes back), else loose members. */
static void refill_from_depot(sp_pool *p, sp__tcache *c) {
    sp__ts *ts = p->ts;
    if (c->loaded->n == 0 && c->prev->n > 0) { /* a hook under the lock may have filled it */
        sp__mag *t = c->loaded;
        c->loaded = c->prev;
        c->prev = t;
    }
    if (c->loaded->n == 0 && ts->full) {
        sp__mag *full = ts->full;
        ts->full = full->next;
        sp__ts_mag_put_empty(p, c->prev);
        c->prev = c->loaded;
        c->loaded = full;
    }
    for (sp__mag *m = c->loaded; m->n < m->cap && ts->loose_n > 0;) m->e[m->n++] = stack_at(p, --ts->loose_n);
}

/* Both magazines are empty: a full one from the depot (the empty prev goes back), else loose
   members, else what exited threads left in their caches, else growth. False when the pool has
   nothing to give: a drop when saturated, counted here, else an allocator failure (logged where
   it happened). */
static bool refill(sp_pool *p, sp__tcache *c) {
    sp__ts_lock(p);
    sp__ts_depot_visit(p, c);
    refill_from_depot(p, c);
    if (c->loaded->n == 0 && sp__ts_orphans_collect(p)) refill_from_depot(p, c);
    if (c->loaded->n == 0) {
        /* The peak is noted where the pool is about to grow or drop (it reads every thread's
           counters: lines their threads write on every call, so not on every refill). */
        sp__ts_note_peak(p);
        if (p->act.allocating > 0) { /* this thread is inside the allocator, growing the pool */
            sp__log(p, SP__MSG_IN_ALLOCATOR, "acquire");
        } else {
            grow_batch(p, c);
            if (c->loaded->n == 0 && p->cfg.max && p->mem.size >= p->cfg.max && p->cfg.overflow != SP_OVERFLOW_GROW)
                p->counters.dropped++; /* saturated, not an allocator failure */
        }
    }
    bool ok = c->loaded->n > 0;
    sp__ts_unlock(p);
    return ok;
}

static SP__NOINLINE void run_on_acquire(sp_pool *p, _Atomic uint32_t *w, uint32_t leased, void *item, const void *arg) {
    atomic_store_explicit(w, leased | SP__BUSY, memory_order_release); /* not releasable while it runs */
    sp__hook_frame f;
    sp__ts_hook_enter(&f, p, item);
    p->cfg.on_acquire(item, arg, p->cfg.user);
    sp__ts_hook_leave(&f);
    atomic_store_explicit(w, leased, memory_order_release);
}

/* Every acquisition but the common one (below): a window, a call site to record, on_acquire,
   the debug checks, a refill. */
static SP__NOINLINE void *acquire_full(sp_pool *p, const void *arg, bool force, const char *file, int line) {
    /* In a window (a callback of a quiescent call) the pool's own code runs. */
    if (SP__UNLIKELY(p->ts->window > 0)) return sp__acquire_general(p, arg, force);
    (void)force; /* no reclaim in a thread-safe pool: a saturated pool drops */
    sp__tcache *c = sp__ts_cache(p);
    if (SP__UNLIKELY(!c)) return NULL;
    INSIDE(c, 1);
    if (SP__UNLIKELY(c->loaded->n == 0)) {
        if (c->prev->n > 0) {
            sp__mag *t = c->loaded;
            c->loaded = c->prev;
            c->prev = t;
        } else if (!refill(p, c)) {
            INSIDE(c, 0);
            return NULL;
        }
    }
    uint32_t idx = c->loaded->e[--c->loaded->n];
    sp__span *s = sp__ts_span_of(p, idx);
    _Atomic uint32_t *w = word_in(s, idx);
    void *item = item_in(p, s, idx);
    /* Free in this thread's magazine: no other thread changes the word (a release's CAS wants
       LEASED), so a store publishes the lease; resolve's acquire load pairs with it. The debug
       record is written before: a stale release racing the store never sees it half done. */
    uint32_t leased = (atomic_load_explicit(w, memory_order_relaxed) & ~(uint32_t)SP__FLAGS_MASK) | SP__LEASED;
#  if SP_DEBUG
    sp__dbg *rec = &s->dbg[idx - s->first];
    sp__dbg_leasing(p, rec, item, p->cfg.item_size, idx);
    rec->acq_file = file;
    rec->acq_line = line > 0 ? (uint32_t)line : 0u;
#  else
    (void)file, (void)line;
#  endif
    if (p->cfg.on_acquire)
        run_on_acquire(p, w, leased, item, arg);
    else
        atomic_store_explicit(w, leased, memory_order_release);
    sp__ts_count(&c->acquired);
    INSIDE(c, 0);
    return item;
}

/* The bases of slot index idx's span, from the fast view: the one span's, read before the index
   is known, else those of its span number. */
static inline uintptr_t view_base(const _Atomic uintptr_t *one, const _Atomic uintptr_t *by_rec, bool is_one,
                                  uint32_t k) {
    return atomic_load_explicit(is_one ? one : &by_rec[k], memory_order_relaxed);
}

/* The common acquisition, kept small: a member from the thread's loaded magazine, its word and
   address by arithmetic from its slot index, its lease published by one store. A pool of one
   span takes that span's bases from the fast view, read while the magazine is, so that the
   address waits on no load after the slot index's: a thread alternating between pools has no
   earlier work on the same pool to hide a span number and its base behind. */
void *sp__ts_acquire(sp_pool *p, const void *arg, bool force, const char *file, int line) {
    if (SP__UNLIKELY(p->ts->window > 0 || file || p->cfg.on_acquire || SP_DEBUG)) return acquire_full(p, arg, force, file, line);
    const sp__ts_fast *f = &p->ts->fast;
    sp__tcache *c = sp__ts_cache_found(f);
    if (SP__UNLIKELY(!c || c->loaded->n == 0)) return acquire_full(p, arg, force, file, line);
    bool one = atomic_load_explicit(&f->one_span, memory_order_acquire) != NULL; /* and its bases */
    uint32_t idx = c->loaded->e[--c->loaded->n];
    uint32_t k = SP__LIKELY(one) ? 0u : rec_of(SP__REC_SHIFT(p), idx);
    _Atomic uint32_t *w = (_Atomic uint32_t *)(view_base(&f->one_word_base, f->word_base, one, k) +
                                               (uintptr_t)idx * sizeof(uint32_t));
    void *item = (void *)(view_base(&f->one_item_base, f->item_base, one, k) + (uintptr_t)idx * p->hot.stride);
    uint32_t leased = (atomic_load_explicit(w, memory_order_relaxed) & ~(uint32_t)SP__FLAGS_MASK) | SP__LEASED;
    atomic_store_explicit(w, leased, memory_order_release); /* (see acquire_full) */
    sp__ts_count(&c->acquired);
    return item;
}

/* ---- release ------------------------------------------------------------------------------- */

static SP__NOINLINE sp_result release_refused(sp_pool *p, void *item, uint32_t word) {
    uint32_t st = word_state(word);
    /* Busy: a hook runs on the member. On this thread (its frame says so) the release comes
       from that hook; on another, the member is not the caller's to release: a double release
       (a racing one that lost, or a stale pointer). */
    if ((word & SP__BUSY) && (st == SP__FREE || st == SP__LEASED) && sp__ts_in_member_hook(p, item)) {
        sp__log(p, st == SP__FREE ? SP__MSG_REENTER_LIFECYCLE : SP__MSG_REENTER, item);
        return SP_ERR_NOT_LEASED;
    }
    if (st == SP__UNBUILT || st == SP__RETIRED) return sp__release_foreign(p, item);
    sp__log(p, SP__MSG_DOUBLE_RELEASE, item);
    return SP_ERR_NOT_LEASED;
}

/* The loaded magazine is full: the previous one takes its place when empty, else the full
   previous one goes to the depot for an empty one. */
static bool room_made(sp_pool *p, sp__tcache *c) {
    if (c->prev->n == 0) {
        sp__mag *t = c->loaded;
        c->loaded = c->prev;
        c->prev = t;
        return true;
    }
    sp__ts_lock(p);
    sp__ts_depot_visit(p, c);
    bool ok = c->loaded->n < c->loaded->cap; /* a hook under the lock may have made room */
    if (!ok) {
        sp__mag *empty = sp__ts_mag_get(p);
        if (empty) {
            c->prev->next = p->ts->full;
            p->ts->full = c->prev;
            c->prev = c->loaded;
            c->loaded = empty;
            ok = true;
        }
    }
    sp__ts_unlock(p);
    return ok;
}

/* Its last life ended: disposed and retired, under the lock. */
static SP__NOINLINE void retire(sp_pool *p, uint32_t idx) {
    sp__ts_lock(p);
    p->mem.limbo++;
    sp__member_retire(p, idx);
    sp__ts_unlock(p);
}

/* A freed member: onto the thread's loaded magazine, with room made by the depot when it is
   full; with no cache or no magazine (out of memory), the loose ones. */
static SP__NOINLINE sp_result freed_elsewhere(sp_pool *p, sp__tcache *c, uint32_t idx) {
    if (c && (c->loaded->n < c->loaded->cap || room_made(p, c))) {
        c->loaded->e[c->loaded->n++] = idx;
        sp__ts_count(&c->released);
        return SP_OK;
    }
    sp__ts_lock(p);
    sp__ts_loose_push(p, idx);
    if (c)
        sp__ts_count(&c->released);
    else
        p->ts->released++;
    sp__ts_unlock(p);
    return SP_OK;
}

/* Every release but the common one (below). */
static SP__NOINLINE sp_result release_full(sp_pool *p, void *item, const char *file, int line) {
    if (SP__UNLIKELY(p->ts->window > 0)) return sp__release_general(p, item); /* as acquire */
    if (!item) return SP_OK;
    sp__span *s = NULL;
    uint32_t idx = ts_index_of(p, item, &s);
    if (idx == SP__NIL) return sp__release_foreign(p, item);
    _Atomic uint32_t *w = word_in(s, idx);
    uint32_t word = ts_word(w), next;
    bool last;
    /* The one transition that decides a race: LEASED, not busy, to FREE (the life moved on when
       a handle of it went out), or, with on_release or at the last life, to BUSY|RELEASING until
       the hook is done. Of two threads releasing the same member, exactly one CAS succeeds. */
    do {
        if (word_state(word) != SP__LEASED || (word & SP__BUSY)) return release_refused(p, item, word);
        uint32_t life = word_life(word);
        last = (word & SP__HANDLED) && (uint64_t)life + p->handles.life_base >= SP__LIFE_MAX;
        uint32_t free_word = word_make((word & SP__HANDLED) && !last ? life + 1u : life, SP__FREE);
        next = p->cfg.on_release || last ? word | SP__BUSY | SP__RELEASING : free_word;
    } while (!atomic_compare_exchange_weak_explicit(w, &word, next, memory_order_acq_rel, memory_order_acquire));
    sp__tcache *c = sp__ts_cache(p);
    if (c) INSIDE(c, 1);
#  if SP_DEBUG
    if (file) { /* the winner only: a refused release leaves the record alone */
        s->dbg[idx - s->first].rel_file = file;
        s->dbg[idx - s->first].rel_line = line > 0 ? (uint32_t)line : 0u;
    }
#  else
    (void)file, (void)line;
#  endif
    if (next & SP__BUSY) {
        if (p->cfg.on_release) {
            sp__hook_frame f;
            sp__ts_hook_enter(&f, p, item);
            p->cfg.on_release(item, p->cfg.user);
            sp__ts_hook_leave(&f);
        }
        if (last) {
            retire(p, idx);
            if (c) {
                sp__ts_count(&c->released);
                INSIDE(c, 0);
            } else {
                sp__ts_lock(p);
                p->ts->released++;
                sp__ts_unlock(p);
            }
            return SP_OK;
        }
        uint32_t life = word_life(word);
        atomic_store_explicit(w, word_make((word & SP__HANDLED) ? life + 1u : life, SP__FREE), memory_order_release);
    }
#  if SP_DEBUG
    sp__dbg_freed(p, &s->dbg[idx - s->first], item, p->cfg.item_size, !p->cfg.create);
#  endif
    freed_elsewhere(p, c, idx);
    if (c) INSIDE(c, 0);
    return SP_OK;
}

/* The common release, kept small: the member's span (the pool's one, else from the source's
   map), a CAS of its word from LEASED to FREE (the same decision as release_full's), the member
   onto the thread's loaded magazine. Anything else (one of several spans from the allocator, a
   refusal, on_release, the last life, a call site, the debug checks, a full magazine) takes the
   full paths. */
static inline sp_result release_common(sp_pool *p, void *item, const sp__span *s) {
    uint64_t q = member_number(p, (uintptr_t)s->items, (uintptr_t)item);
    if (SP__UNLIKELY(q >= atomic_load_explicit(&s->count, memory_order_acquire))) return sp__release_foreign(p, item);
    _Atomic uint32_t *w = &s->words[q];
    uint32_t word = ts_word(w), next;
    do {
        if (SP__UNLIKELY(word_state(word) != SP__LEASED || (word & SP__BUSY))) return release_refused(p, item, word);
        uint32_t life = word_life(word);
        if (!(word & SP__HANDLED))
            next = word_make(life, SP__FREE);
        else if (SP__LIKELY((uint64_t)life + p->handles.life_base < SP__LIFE_MAX))
            next = word_make(life + 1u, SP__FREE);
        else
            return release_full(p, item, NULL, 0); /* its last life: retired */
    } while (!atomic_compare_exchange_weak_explicit(w, &word, next, memory_order_acq_rel, memory_order_acquire));
    uint32_t idx = s->first + (uint32_t)q;
    sp__tcache *c = sp__ts_cache_found(&p->ts->fast);
    if (SP__UNLIKELY(!c || c->loaded->n == c->loaded->cap)) return freed_elsewhere(p, sp__ts_cache(p), idx);
    c->loaded->e[c->loaded->n++] = idx;
    sp__ts_count(&c->released);
    return SP_OK;
}

sp_result sp__ts_release(sp_pool *p, void *item, const char *file, int line) {
    if (SP__UNLIKELY(p->ts->window > 0 || file || p->cfg.on_release || SP_DEBUG)) return release_full(p, item, file, line);
    const sp__span *s = atomic_load_explicit(&p->ts->fast.one_span, memory_order_relaxed);
    if (!s) s = own_span_by_map(p, atomic_load_explicit(&p->ts->fast.near, memory_order_relaxed), item);
    if (SP__UNLIKELY(!s)) return release_full(p, item, file, line);
    return release_common(p, item, s);
}

sp_result sp__ts_release_in(sp_pool *p, sp__span *span, void *item) {
    if (SP__UNLIKELY(p->ts->window > 0 || p->cfg.on_release || SP_DEBUG)) return release_full(p, item, NULL, 0);
    return release_common(p, item, span);
}

/* ---- handles ----------------------------------------------------------------------------------- */

static void resolve_warn(const sp_pool *p, sp__msg msg, sp_handle h) {
    _Atomic uint64_t *count = msg == SP__MSG_FOREIGN_HANDLE ? &p->ts->foreign_handles : &p->ts->forged_handles;
    uint64_t n = atomic_fetch_add_explicit(count, 1u, memory_order_relaxed) + 1u;
    if (sp__worth_a_line(n)) sp__log(p, msg, (unsigned long long)h.id, (unsigned long long)n);
}

/* Lock-free: one acquire load of the word. The member returned was leased in the handle's life
   at that load; another thread may release it right after (docs/threads.md). */
void *sp__ts_resolve(const sp_pool *p, sp_handle h) {
    if (h.id == 0) return NULL;
    uint32_t idx = sp__handle_slot(h.id), life = sp__handle_life(h.id);
    if (sp__handle_tag(h.id) != p->handles.tag || (life != 0 && life <= p->handles.life_base)) {
        resolve_warn(p, SP__MSG_FOREIGN_HANDLE, h);
        return NULL;
    }
    if (life == 0) {
        resolve_warn(p, SP__MSG_FORGED_HANDLE, h);
        return NULL;
    }
    uint32_t rel = life - p->handles.life_base;
    const sp__span *s = sp__ts_span_of(p, idx);
    if (!s) {
        resolve_warn(p, SP__MSG_FORGED_HANDLE, h);
        return NULL;
    }
    uint32_t word = ts_word(word_in(s, idx));
    if (word_state(word) == SP__LEASED && (word & SP__HANDLED) && word_life(word) == rel) return item_in(p, s, idx);
    if (rel <= word_issued(word)) return NULL; /* stale: silent */
    resolve_warn(p, SP__MSG_FORGED_HANDLE, h);
    return NULL;
}

/* The handle of a leased member: its word gets HANDLED (one CAS, so that a release racing it
   either ends the life first, and no handle comes out, or ends it after, moving the life on). */
sp_handle sp__ts_handle_of(sp_pool *p, const void *item) {
    sp_handle h = {0};
    sp__span *s = NULL;
    uint32_t idx = item ? ts_index_of(p, item, &s) : SP__NIL;
    if (idx == SP__NIL) return h;
    _Atomic uint32_t *w = word_in(s, idx);
    uint32_t word = ts_word(w);
    do {
        if (word_state(word) != SP__LEASED) return h;
    } while (!(word & SP__HANDLED) &&
             !atomic_compare_exchange_weak_explicit(w, &word, word | SP__HANDLED, memory_order_acq_rel, memory_order_acquire));
    return sp__handle_make(word_life(word) + p->handles.life_base, p->handles.tag, idx);
}

bool sp__ts_is_leased(const sp_pool *p, const void *item, bool or_free) {
    sp__span *s = NULL;
    uint32_t idx = item ? ts_index_of(p, item, &s) : SP__NIL;
    if (idx == SP__NIL) return false;
    uint32_t st = word_state(ts_word(word_in(s, idx)));
    return st == SP__LEASED || (or_free && st == SP__FREE);
}

#else /* no threads: thread-safe pools are refused at creation, so none of this is reached */

void *sp__ts_acquire(sp_pool *p, const void *arg, bool force, const char *file, int line) {
    (void)p, (void)arg, (void)force, (void)file, (void)line;
    return NULL;
}
sp_result sp__ts_release(sp_pool *p, void *item, const char *file, int line) {
    (void)p, (void)item, (void)file, (void)line;
    return SP_ERR_INVALID;
}
sp_result sp__ts_release_in(sp_pool *p, sp__span *span, void *item) {
    (void)p, (void)span, (void)item;
    return SP_ERR_INVALID;
}
void *sp__ts_resolve(const sp_pool *p, sp_handle h) {
    (void)p, (void)h;
    return NULL;
}
sp_handle sp__ts_handle_of(sp_pool *p, const void *item) {
    sp_handle h = {0};
    (void)p, (void)item;
    return h;
}
bool sp__ts_is_leased(const sp_pool *p, const void *item, bool or_free) {
    (void)p, (void)item, (void)or_free;
    return false;
}

#endif
