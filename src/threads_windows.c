/* SPDX-License-Identifier: Zlib */
/* threads_windows.c -- the calls on a thread-safe pool (SP_THREADS_SAFE) that are not per
   member: the quiescent windows in which the pool's own code runs on it (sp_each, sp_trim and
   the other calls that need every free member in one place), the stats summed from each
   thread's counters, prewarm, and the settings growth reads. Each takes the pool lock
   (threads.c); the per-call paths are in magazine.c. */
#include "threads_internal.h"

#if SP__HAVE_THREADS

/* ---- windows: the calls that need quiescence ----------------------------------------------- */

static uint64_t caches_sum(const sp__ts *ts, bool released) {
    uint64_t n = 0;
    /* Acquire loads of the acquisition counters: the release sums, read after them, are not
       read earlier (see leased_at_most). */
    for (const sp__tcache *c = ts->caches; c; c = c->next)
        n += released ? atomic_load_explicit(&c->released, memory_order_relaxed)
                      : atomic_load_explicit(&c->acquired, memory_order_acquire);
    return n;
}

/* The members leased, from sums of the caches' counters taken while other threads run: every
   acquisition counter is read before every release counter, so the sums are at most a(T) and at
   least r(T) for a moment T between them, and the difference is at most the members leased at T
   (never above the peak). Negative when releases happened between the reads: then 0. */
static uint64_t leased_at_most(uint64_t acquired, uint64_t released, uint64_t disposed) {
    return acquired >= released + disposed ? acquired - released - disposed : 0u;
}

void sp__ts_note_peak(sp_pool *p) {
    sp__ts *ts = p->ts;
    uint64_t acquired = ts->acquired + caches_sum(ts, false);
    uint64_t released = ts->released + caches_sum(ts, true);
    uint64_t leased = leased_at_most(acquired, released, p->counters.leased_disposed);
    if (leased > ts->peak) ts->peak = (size_t)leased;
}

bool sp__ts_windowed(const sp_pool *p) { return p->ts && p->ts->window > 0; }

/* Opens a window: the lock is held until it closes, every free member (every thread's caches,
   the depot, the loose ones) goes to the pool's stack and the counters into the pool's own, so
   that the pool's code runs as for a pool of one thread. Other threads must not be inside a call
   on the pool, and their last calls must happen before this one (a join or a barrier): debug
   builds check the first. */
void sp__ts_window_begin(sp_pool *p, const char *call) {
    sp__ts *ts = p->ts;
    sp__ts_lock(p);
    if (ts->window++ > 0) return;
#  if SP_DEBUG
    const sp__tcache *own = sp__ts_cache_found(&ts->fast);
    for (const sp__tcache *c = ts->caches; c; c = c->next)
        if (c != own && atomic_load_explicit(&c->inside, memory_order_relaxed)) sp__log(p, SP__MSG_TS_NOT_QUIESCENT, call);
#  else
    (void)call;
#  endif
    sp__ts_note_peak(p);
    ts->win_acquired = ts->acquired + caches_sum(ts, false);
    ts->win_released = ts->released + caches_sum(ts, true);
    p->hot.free_top = ts->loose_n * SP__ENTRY;
    ts->loose_n = 0;
    for (sp__tcache *c = ts->caches; c; c = c->next) {
        if (!c->loaded) continue; /* an orphan's, flushed to the depot */
        while (c->loaded->n) stack_push(p, c->loaded->e[--c->loaded->n]);
        while (c->prev->n) stack_push(p, c->prev->e[--c->prev->n]);
    }
    while (ts->full) {
        sp__mag *m = ts->full;
        ts->full = m->next;
        while (m->n) stack_push(p, m->e[--m->n]);
        sp__ts_mag_put_empty(p, m);
    }
    p->hot.acquired = ts->win_acquired;
    p->act.peak_leased = ts->peak;
    peak_set(p);
}

/* Closes it: the free members stay on the stack as the loose ones, the counts go back to the
   layer's own. */
void sp__ts_window_end(sp_pool *p) {
    sp__ts *ts = p->ts;
    if (--ts->window > 0) {
        sp__ts_unlock(p);
        return;
    }
    ts->acquired += p->hot.acquired - ts->win_acquired;
    ts->released += (p->hot.acquired - pool_leased(p) - p->counters.leased_disposed) - ts->win_released;
    peak_sync(p);
    if (p->act.peak_leased > ts->peak) ts->peak = p->act.peak_leased;
    ts->loose_n = free_count(p);
    p->hot.free_top = 0;
    sp__ts_unlock(p);
}

/* ---- the calls any thread may make that are not per-member -------------------------------- */

void sp__ts_stats(const sp_pool *pool, sp_stats *out) {
    sp_pool *p = (sp_pool *)(uintptr_t)pool; /* the lock and the peak: bookkeeping */
    sp__ts *ts = p->ts;
    sp__ts_lock(p);
    sp__ts_note_peak(p);
    uint64_t acquired = ts->acquired + caches_sum(ts, false);
    uint64_t released = ts->released + caches_sum(ts, true);
    uint64_t leased = leased_at_most(acquired, released, p->counters.leased_disposed);
    out->size = p->mem.size;
    out->leased = (size_t)leased;
    out->free = p->mem.size >= leased ? p->mem.size - (size_t)leased : 0;
    out->max = p->cfg.max;
    out->peak_leased = ts->peak;
    out->bytes = p->mem.bytes;
    out->bytes_reserved = p->mem.bytes_reserved;
    sp__counters c = p->counters;
    c.acquired = acquired;
    sp__counters_to_stats(&c, (size_t)leased, out);
    out->released = released;
    sp__ts_unlock(p);
}

size_t sp__ts_leased(const sp_pool *pool) {
    sp_stats s;
    sp__ts_stats(pool, &s);
    return s.leased;
}

/* Builds up to n members as loose free members, under the lock. */
size_t sp__ts_prewarm(sp_pool *p, size_t n) {
    sp__ts_lock(p);
    size_t built = 0;
    if (p->act.allocating > 0) {
        sp__log(p, SP__MSG_IN_ALLOCATOR, "sp_prewarm");
    } else {
        while (built < n && (p->cfg.max == 0 || p->mem.size < p->cfg.max)) {
            uint32_t idx = sp__member_build(p, false);
            if (idx == SP__NIL) break;
            DBG_FREED(p, idx, item_at(p, idx));
            p->mem.limbo--;
            sp__ts_loose_push(p, idx);
            built++;
        }
    }
    sp__ts_unlock(p);
    return built;
}

/* sp_set_overflow / sp_set_max under the lock (growth reads them). */
sp_result sp__ts_set(sp_pool *p, const sp_overflow *overflow, const size_t *max) {
    if (overflow && *overflow == SP_OVERFLOW_RECLAIM) {
        sp__log(p, SP__MSG_TS_REFUSED, "sp_set_overflow", "no RECLAIM");
        return SP_ERR_INVALID;
    }
    sp__ts_lock(p);
    if (overflow) p->cfg.overflow = *overflow;
    if (max) p->cfg.max = *max;
    sp__ts_unlock(p);
    return SP_OK;
}

uint32_t sp__ts_magazine_size(const sp_pool *p) {
    sp_pool *m = (sp_pool *)(uintptr_t)p;
    sp__ts_lock(m);
    uint32_t n = p->ts->mag_size;
    sp__ts_unlock(m);
    return n;
}

uint32_t sp__ts_magazine_most(const sp_pool *p) { return p->ts->mag_most; } /* fixed at creation */

void sp__ts_thread_cached(const sp_pool *p, size_t *members, size_t *capacity) {
    const sp__tcache *c = sp__ts_cache_found(&p->ts->fast);
    *members = *capacity = 0;
    if (!c || !c->loaded) return; /* only its thread touches the magazines: no lock */
    *members = (size_t)c->loaded->n + c->prev->n;
    *capacity = (size_t)c->loaded->cap + c->prev->cap;
}

#else /* no threads: refused at creation (threads.c), so these are never reached */

bool sp__ts_windowed(const sp_pool *p) {
    (void)p;
    return true;
}
void sp__ts_window_begin(sp_pool *p, const char *call) { (void)p, (void)call; }
void sp__ts_window_end(sp_pool *p) { (void)p; }
void sp__ts_stats(const sp_pool *p, sp_stats *out) { (void)p, (void)out; }
size_t sp__ts_leased(const sp_pool *p) {
    (void)p;
    return 0;
}
size_t sp__ts_prewarm(sp_pool *p, size_t n) {
    (void)p, (void)n;
    return 0;
}
sp_result sp__ts_set(sp_pool *p, const sp_overflow *overflow, const size_t *max) {
    (void)p, (void)overflow, (void)max;
    return SP_ERR_INVALID;
}
uint32_t sp__ts_magazine_size(const sp_pool *p) {
    (void)p;
    return 0;
}
uint32_t sp__ts_magazine_most(const sp_pool *p) {
    (void)p;
    return 0;
}
void sp__ts_thread_cached(const sp_pool *p, size_t *members, size_t *capacity) {
    (void)p;
    *members = *capacity = 0;
}

#endif
