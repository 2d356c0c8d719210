/* SPDX-License-Identifier: Zlib */
/* magazine.c -- the calls any thread may make on a thread-safe pool (SP_THREADS_SAFE): acquire
   and release through the calling thread's two magazines (Bonwick and Adams, 2001), the depot
   that exchanges whole magazines under the pool lock, growth in batches, and the lock-free
   lookups (release's pointer test, resolve, handle_of) on the published ranges and the atomic
   slot words. docs/threads.md has the design: which transition of the slot word each call
   makes, and why a racing double release has exactly one winner. */
#include "sp_threads.h"

#if SP__HAVE_THREADS

#  if SP_DEBUG
#    define INSIDE(c, v) SP__STORE_RELAXED(&(c)->inside, (v))
#  else
#    define INSIDE(c, v) ((void)0)
#  endif

static const uint32_t LIFE_STEP = SP__TO_NEXT_FREE; /* LEASED L -> FREE L+1 */

/* The slot index of the member starting at item, from the published ranges, or SP__NIL. A
   thread holding a member saw its range published (it got the member through the lock or
   through its own synchronisation), so the answer is exact for it; for any other pointer the
   published fields may be mid-update, and the worst a torn read gives is SP__NIL. */
uint32_t sp__ts_index_of(const sp_pool *p, const void *item) {
    const sp__ts *ts = p->ts;
    uint32_t n = SP__LOAD(&ts->pub_count);
    for (uint32_t i = 0; i < n; i++) {
        uintptr_t items = SP__LOAD_RELAXED(&ts->pub[i].items);
        uint32_t count = SP__LOAD_RELAXED(&ts->pub[i].count);
        if (!items) continue;
        uint64_t q = member_number(p, items, (uintptr_t)item);
        if (q < count) return SP__LOAD_RELAXED(&ts->pub[i].first) + (uint32_t)q;
    }
    return SP__NIL;
}


/* A member's address from the published ranges (idx is a published member's slot). */
static void *ts_item_at(const sp_pool *p, uint32_t idx) {
    const sp__ts *ts = p->ts;
    uint32_t n = SP__LOAD(&ts->pub_count);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t first = SP__LOAD_RELAXED(&ts->pub[i].first);
        uint32_t count = SP__LOAD_RELAXED(&ts->pub[i].count);
        uintptr_t items = SP__LOAD_RELAXED(&ts->pub[i].items);
        if (items && idx - first < count) return (void *)(items + (uintptr_t)(idx - first) * p->stride);
    }
    return NULL;
}


/* A magazine member's address outside the lock: the fast range's by arithmetic, any other's
   from the published ranges. */
static void *ts_member(const sp_pool *p, uint32_t idx) {
    if (idx < SP__TS_FAST_COUNT(p)) return (void *)(p->top_items + (uintptr_t)idx * p->stride);
    return ts_item_at(p, idx);
}


static uint32_t ts_word(const sp_pool *p, uint32_t idx) { return SP__LOAD(&slot_at(p, idx)->word); }


/* ---- acquire --------------------------------------------------------------------------- */

/* Grows the pool by up to a magazine's worth of members into the caller's loaded magazine (the
   rest, if a create hook filled it meanwhile, to the loose list), under the lock. DROP and max
   hold exactly for built members: growth stops at max unless the policy is GROW. */
static void grow_batch(sp_pool *p, sp__tcache *c) {
    sp__ts *ts = p->ts;
    for (uint32_t built = 0; built < (ts->mag_first + 1u) / 2u; built++) {
        bool past_max = p->max && p->size >= p->max;
        if (past_max && (p->overflow != SP_OVERFLOW_GROW || built > 0)) return;
        uint32_t idx = sp__member_build(p, past_max);
        if (idx == SP__NIL) return;
        if (past_max) {
            p->grown_past_max++;
            if (p->grown_past_max >= p->grow_warn_at) {
                sp__log(p, SP__MSG_GROWN, p->max, p->size);
                p->grow_warn_at *= 2u;
            }
        }
        DBG_FREED(p, idx, item_at(p, idx));
        sp__mag *m = c->loaded; /* read again: a create hook may have swapped it */
        if (m->n < m->cap) {
            sp__mentry_set(p, &m->e[m->n], idx);
            m->n++;
        } else {
            slot_at(p, idx)->next = ts->free_head;
            ts->free_head = idx;
        }
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
    for (sp__mag *m = c->loaded; m->n < m->cap && ts->free_head != SP__NIL; m->n++) {
        uint32_t idx = ts->free_head;
        ts->free_head = slot_at(p, idx)->next;
        sp__mentry_set(p, &m->e[m->n], idx);
    }
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
        /* The peak of leased members is noted here, where the pool is about to grow or drop
           (it reads every thread's counters: lines that their threads write on every call,
           so not on every refill). */
        sp__ts_note_peak(p);
        if (p->allocating > 0) { /* this thread is inside the allocator, growing the pool */
            sp__log(p, SP__MSG_IN_ALLOCATOR, "acquire");
        } else {
            grow_batch(p, c);
            /* saturated (not an allocator failure): a drop */
            if (c->loaded->n == 0 && p->max && p->size >= p->max && p->overflow != SP_OVERFLOW_GROW)
                p->dropped++;
        }
    }
    bool ok = c->loaded->n > 0;
    sp__ts_unlock(p);
    return ok;
}


static SP__NOINLINE void run_on_acquire(sp_pool *p, uint32_t *word, uint32_t leased, void *item,
                                        const void *arg) {
    SP__STORE(word, leased | SP__BUSY); /* not releasable while the hook runs */
    sp__hook_frame f;
    sp__ts_hook_enter(&f, p, item);
    p->on_acquire(item, arg, p->user);
    sp__ts_hook_leave(&f);
    SP__STORE(word, leased);
}


void *sp__ts_acquire(sp_pool *p, const void *arg, bool force, const char *file, int line) {
    (void)force; /* no reclaim in a thread-safe pool: a saturated pool drops */
    sp__tcache *c = sp__ts_cache(p);
    if (SP__UNLIKELY(!c)) return NULL;
    INSIDE(c, 1);
    if (SP__UNLIKELY(c->loaded->n == 0)) {
        if (c->prev->n > 0) {
            sp__mag *t = c->loaded;
            c->loaded = c->prev;
            c->prev = t;
        } else {
            if (!refill(p, c)) {
                INSIDE(c, 0);
                return NULL;
            }
        }
    }
    sp__mag *m = c->loaded;
    uint32_t idx = sp__mentry_idx(&m->e[--m->n]);
    uint32_t *word = &slot_at(p, idx)->word;
    void *item = ts_member(p, idx);
    /* Free in this thread's magazine: no other thread changes the word (a release's CAS wants
       LEASED), so a store publishes the lease; resolve's acquire load pairs with it. */
    uint32_t leased = SP__LOAD_RELAXED(word) + SP__TO_LEASED;
    DBG_LEASING(p, idx, item);
#  if SP_DEBUG
    /* before the lease is published: once it is, another thread may release this life through
       a stale pointer and acquire the member again, writing its own site */
    dbg_at(p, idx)->acq_file = file;
    dbg_at(p, idx)->acq_line = line > 0 ? (uint32_t)line : 0u;
#  else
    (void)file, (void)line;
#  endif
    if (p->on_acquire)
        run_on_acquire(p, word, leased, item, arg);
    else
        SP__STORE(word, leased);
    SP__COUNT(&c->acquired);
    INSIDE(c, 0);
    return item;
}


/* The fast acquire (acquire_empty's dispatch): the thread's last cache, a member in its
   loaded magazine, no on_acquire or on_release (p->ts_fast_id), a release build. The member is FREE in this thread's
   magazine, so no other thread changes its word: one release store publishes the lease.
   Anything else takes the general path; a window (its plain view: the caches are drained, so
   the loaded magazine is empty) the plain one. */
void *sp__ts_acquire_fast(sp_pool *p, const void *arg) {
#  if !SP_DEBUG
    if (SP__LIKELY(sp__tl.id == p->ts_fast_id)) { /* (never with on_acquire) */
        sp__tcache *c = sp__tl.cache;
        sp__mag *m = c->loaded;
        uintptr_t n = m->n;
        /* The top entry, e[n - 1]; in an empty magazine the guard, SP__MENTRY_FAR. */
        int32_t e = (int32_t)*(const sp__mentry *)((uintptr_t)&m->guard + n * sizeof(sp__mentry));
        if (SP__LIKELY(e >= 0)) { /* not SP__MENTRY_FAR: the fast range's slot e */
            uintptr_t idx = (uint32_t)e;
            SP__OPAQUE(n); /* (keeps n in its register: no copy for the store below) */
            m->n = (uint32_t)n - 1u;
            SP__OWN_ADD_RELEASE(&((sp__slot *)(void *)p->slots + idx)->word, SP__TO_LEASED);
            SP__COUNT(&c->acquired);
            return (void *)(p->top_items + idx * p->stride); /* fast_items */
        }
    }
#  endif
    /* (sp_acquire_force acts as sp_acquire in a thread-safe pool, windows included) */
    if (SP__UNLIKELY(p->ts_view)) return sp__acquire_slow(p, arg, false);
    return sp__ts_acquire(p, arg, false, NULL, 0);
}


/* ---- release --------------------------------------------------------------------------- */

static SP__NOINLINE sp_result release_refused(sp_pool *p, void *item, uint32_t word) {
    uint32_t st = word & SP__STATE_MASK;
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


/* Its last life ended: disposed and retired, under the lock (the slot word last). */
static SP__NOINLINE void retire(sp_pool *p, uint32_t idx, void *item) {
    sp__ts_lock(p);
    if (p->dispose) {
        sp__hook_frame f;
        sp__ts_hook_enter(&f, p, item);
        p->hook_depth++;
        p->dispose(item, p->user);
        p->hook_depth--;
        sp__ts_hook_leave(&f);
    }
    DBG_POISON(item, p->item_size);
    p->ranges[range_of_index(p, idx)].built--;
    p->size--;
    p->disposed++;
    SP__STORE(&slot_at(p, idx)->word, (uint32_t)SP__LIFE_MAX << SP__FLAG_BITS | SP__RETIRED);
    sp__ts_unlock(p);
    sp__log(p, SP__MSG_RETIRED, idx);
}


sp_result sp__ts_release(sp_pool *p, void *item, const char *file, int line) {
    if (!item) return SP_OK;
    uint32_t idx = sp__ts_index_of(p, item);
    if (idx == SP__NIL) return sp__release_foreign(p, item);
    sp__slot *s = slot_at(p, idx);
    uint32_t word = SP__LOAD(&s->word), next;
    /* The one transition that decides a race: LEASED of life L, not busy, to FREE of life L+1
       (or, with on_release or at the last life, to BUSY|RELEASING until the hook is done).
       Of two threads releasing the same member, exactly one CAS succeeds. */
    do {
        if ((word & (SP__STATE_MASK | SP__BUSY)) != SP__LEASED) return release_refused(p, item, word);
        bool last = (word >> SP__FLAG_BITS) == SP__LIFE_MAX;
        next = p->on_release || last ? word | SP__BUSY | SP__RELEASING : word + LIFE_STEP;
    } while (!SP__CAS(&s->word, &word, next));
    sp__tcache *c = sp__ts_cache(p);
    if (c) INSIDE(c, 1);
#  if SP_DEBUG
    if (file) { /* the winner only: a refused release leaves the record alone */
        dbg_at(p, idx)->rel_file = file;
        dbg_at(p, idx)->rel_line = line > 0 ? (uint32_t)line : 0u;
    }
#  else
    (void)file, (void)line;
#  endif
    if (next & SP__BUSY) {
        if (p->on_release) {
            sp__hook_frame f;
            sp__ts_hook_enter(&f, p, item);
            p->on_release(item, p->user);
            sp__ts_hook_leave(&f);
        }
        if ((word >> SP__FLAG_BITS) == SP__LIFE_MAX) {
            retire(p, idx, item);
            if (c) {
                SP__COUNT(&c->released);
                INSIDE(c, 0);
            } else {
                sp__ts_lock(p);
                p->ts->released++;
                sp__ts_unlock(p);
            }
            return SP_OK;
        }
        SP__STORE(&s->word, word + LIFE_STEP);
    }
    DBG_FREED(p, idx, item);
    if (c && (c->loaded->n < c->loaded->cap || room_made(p, c))) {
        sp__mag *m = c->loaded;
        sp__mentry_set(p, &m->e[m->n], idx);
        m->n++;
        SP__COUNT(&c->released);
        INSIDE(c, 0);
        return SP_OK;
    }
    /* No cache or no magazine (out of memory): the loose list. */
    sp__ts_lock(p);
    s->next = p->ts->free_head;
    p->ts->free_head = idx;
    if (c)
        SP__COUNT(&c->released);
    else
        p->ts->released++;
    sp__ts_unlock(p);
    if (c) INSIDE(c, 0);
    return SP_OK;
}


/* The fast release (release_unmatched's dispatch), given sp_release's member number q against
   top_items, the fast range's start, below the fast range's member count (the dispatch's test):
   slot q, a built member of the fast range. Leased, not busy, not at its last life, no
   on_release (p->ts_fast_id), room in the thread's loaded magazine, a release build: the CAS
   from the word loaded is the one that decides a race (see sp__ts_release); when it fails,
   or anything else does not hold, the general path starts over from the pointer. */
sp_result sp__ts_release_fast(sp_pool *p, uint64_t q) {
#  if !SP_DEBUG
    if (SP__LIKELY(sp__tl.id == p->ts_fast_id)) {
        uint32_t *w = &((sp__slot *)(void *)p->slots + q)->word;
        SP__OPAQUE(w); /* one register for the load and the CAS (one lea, not two) */
        uint32_t word = SP__LOAD_RELAXED(w), next;
        sp__tcache *c = sp__tl.cache;
        sp__mag *m = c->loaded;
        uintptr_t n = m->n;
        if (SP__LIKELY((word & (SP__STATE_MASK | SP__BUSY)) == SP__LEASED &&
                       !__builtin_add_overflow(word, LIFE_STEP, &next) && n < m->cap &&
                       SP__CAS(w, &word, next))) {
            m->n = (uint32_t)n + 1u;
            m->e[n] = (sp__mentry)q; /* the fast range's member q is slot q: not far */
            SP__COUNT(&c->released);
            return SP_OK;
        }
    }
#  endif
    return sp__release_number(p, q);
}


/* ---- handles ------------------------------------------------------------------------------ */

static void resolve_warn(const sp_pool *p, sp__msg msg, sp_handle h) {
    uint64_t *count = msg == SP__MSG_FOREIGN_HANDLE ? &p->ts->foreign_handles : &p->ts->forged_handles;
    uint64_t n = __atomic_add_fetch(count, 1u, __ATOMIC_RELAXED);
    if ((n & (n - 1u)) == 0) sp__log(p, msg, (unsigned long long)h.id, (unsigned long long)n);
}


/* Lock-free: one acquire load of the slot word. The member returned was leased in the handle's
   life at that load; another thread may release it right after (docs/threads.md). */
void *sp__ts_resolve(const sp_pool *p, sp_handle h) {
    if (h.id == 0) return NULL;
    uint32_t idx = (uint32_t)(h.id & (SP__SLOT_LIMIT - 1u));
    uint32_t tag = (uint32_t)(h.id >> SP__SLOT_BITS) & SP__TAG_MAX;
    uint32_t life = (uint32_t)(h.id >> (SP__SLOT_BITS + SP__TAG_BITS));
    if (tag != p->ts->tag || (life != 0 && life < p->life_first)) {
        resolve_warn(p, SP__MSG_FOREIGN_HANDLE, h);
        return NULL;
    }
    if (idx >= SP__LOAD(&p->ts->pub_slot_cap)) {
        resolve_warn(p, SP__MSG_FORGED_HANDLE, h);
        return NULL;
    }
    uint32_t word = ts_word(p, idx);
    if ((word & ~(uint32_t)(SP__BUSY | SP__RELEASING)) == life << SP__FLAG_BITS) /* LEASED is 0 */
        return ts_item_at(p, idx);
    if (life >= p->life_first && life < word >> SP__FLAG_BITS) return NULL; /* stale: silent */
    uint32_t st = word & SP__STATE_MASK;
    uint32_t reached = st == SP__LEASED || st == SP__RETIRED ? word >> SP__FLAG_BITS : (word >> SP__FLAG_BITS) - 1u;
    if (life == 0 || life > reached) resolve_warn(p, SP__MSG_FORGED_HANDLE, h);
    return NULL;
}


/* sp_resolve's dispatch: the inline resolve's test on the fast range (top_items, the real tag
   in place), the word with one acquire load; anything else (a refusal, a stale handle, another
   range, a window) the general path. */
void *sp__ts_resolve_fast(const sp_pool *p, sp_handle h) {
    uint64_t d = h.id - p->ts_tag_bits;
    uint64_t idx = d & (((uint64_t)1 << (SP__SLOT_BITS + SP__TAG_BITS)) - 1u); /* see the header */
    if (SP__LIKELY(idx < SP__TS_FAST_COUNT(p))) {
        uint32_t word = SP__LOAD(&((const sp__slot *)(const void *)p->slots + idx)->word);
        uint64_t diff = (uint64_t)word - (d >> 32); /* (d >> 32: the life's leased word) */
        if ((diff & ~(uint64_t)(SP__BUSY | SP__RELEASING)) == 0)
            return (void *)(p->top_items + (uintptr_t)idx * p->stride);
    }
    if (SP__UNLIKELY(p->ts_view)) return sp__resolve_other(p, h);
    return sp__ts_resolve(p, h);
}


sp_handle sp__ts_handle_of(const sp_pool *p, const void *item) {
    sp_handle h = {0};
    uint32_t idx = item ? sp__ts_index_of(p, item) : SP__NIL;
    if (idx == SP__NIL) return h;
    uint32_t word = ts_word(p, idx);
    if ((word & SP__STATE_MASK) != SP__LEASED) return h;
    h.id = (uint64_t)(word >> SP__FLAG_BITS) << (SP__SLOT_BITS + SP__TAG_BITS) |
           (uint64_t)p->ts->tag << SP__SLOT_BITS | idx;
    return h;
}


bool sp__ts_is_leased(const sp_pool *p, const void *item, bool or_free) {
    uint32_t idx = item ? sp__ts_index_of(p, item) : SP__NIL;
    if (idx == SP__NIL) return false;
    uint32_t st = ts_word(p, idx) & SP__STATE_MASK;
    return st == SP__LEASED || (or_free && st == SP__FREE);
}

#else /* no threads: thread-safe pools are refused at creation, so none of this is reached */

void *sp__ts_acquire_fast(sp_pool *p, const void *arg) {
    (void)p, (void)arg;
    return NULL;
}
sp_result sp__ts_release_fast(sp_pool *p, uint64_t q) {
    (void)p, (void)q;
    return SP_ERR_INVALID;
}

void *sp__ts_acquire(sp_pool *p, const void *arg, bool force, const char *file, int line) {
    (void)p, (void)arg, (void)force, (void)file, (void)line;
    return NULL;
}
sp_result sp__ts_release(sp_pool *p, void *item, const char *file, int line) {
    (void)p, (void)item, (void)file, (void)line;
    return SP_ERR_INVALID;
}
void *sp__ts_resolve(const sp_pool *p, sp_handle h) {
    (void)p, (void)h;
    return NULL;
}
sp_handle sp__ts_handle_of(const sp_pool *p, const void *item) {
    sp_handle h = {0};
    (void)p, (void)item;
    return h;
}
uint32_t sp__ts_index_of(const sp_pool *p, const void *item) {
    (void)p, (void)item;
    return SP__NIL;
}
void *sp__ts_resolve_fast(const sp_pool *p, sp_handle h) {
    (void)p, (void)h;
    return NULL;
}
bool sp__ts_is_leased(const sp_pool *p, const void *item, bool or_free) {
    (void)p, (void)item, (void)or_free;
    return false;
}

#endif
