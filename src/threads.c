/* SPDX-License-Identifier: Zlib */
/* threads.c -- thread-safe pools (SP_THREADS_SAFE), everything but the per-call paths
   (magazine.c): what a descriptor may ask, the pool lock, each thread's table of its caches and
   what happens when the thread exits, the depot's magazines, the quiescent windows in which the
   pool's own code runs, and the stats.

   The lock order, everywhere: a pool's lock, then (maybe) the global lock g_lock. g_lock guards
   only the table of live pools' slots and their pins; nothing is called and no other lock is
   taken while it is held, so no order of calls (hooks that create, destroy or first touch
   thread-safe pools, on any thread, while others exit) can deadlock. A thread that exits pins
   each live pool it has a cache of (under g_lock), then hands the cache back under that pool's
   lock alone; a pool's destruction marks its slot dead (under g_lock) and waits, holding no
   lock, for the pins to drop before it tears down. */
#if !defined(_POSIX_C_SOURCE) && !defined(_WIN32)
#  define _POSIX_C_SOURCE 200809L /* recursive mutexes */ /* NOLINT(bugprone-reserved-identifier,cert-dcl37-c,cert-dcl51-cpp) */
#endif
#include "threads_internal.h"

#include <stdlib.h>

/* The hook frames: which pools' hooks (and log lines) run on this thread now. */
static _Thread_local sp__hook_frame *tl_hooks;

void sp__ts_hook_enter(sp__hook_frame *f, const sp_pool *p) {
    f->pool = p;
    f->up = tl_hooks;
    tl_hooks = f;
}

void sp__ts_hook_leave(const sp__hook_frame *f) { tl_hooks = f->up; }

bool sp__ts_in_hook(const sp_pool *p) {
    for (const sp__hook_frame *f = tl_hooks; f; f = f->up)
        if (f->pool == p) return true;
    return false;
}

#if SP__HAVE_THREADS
#  include <sched.h>

/* ---- the live pools' slots -------------------------------------------------------------- */

typedef struct live_slot {
    uint64_t id;   /* the live pool's id; 0: free, or its pool is being destroyed */
    uint32_t pins; /* exiting threads handing a cache back to the pool now */
    uint32_t next_free;
    sp_pool *pool;
} live_slot;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static live_slot *g_slots;
static uint32_t g_slot_count, g_slot_cap, g_free_slot = UINT32_MAX;
static uint64_t g_next_id = 1;
static pthread_once_t g_key_once = PTHREAD_ONCE_INIT;
static pthread_key_t g_key;
_Thread_local sp__tl_table *sp__tl;

/* A slot for a new pool (under g_lock). False: no memory. */
static bool slot_take(sp_pool *p) {
    uint32_t s = g_free_slot;
    if (s != UINT32_MAX) {
        g_free_slot = g_slots[s].next_free;
    } else {
        if (g_slot_count == g_slot_cap) {
            uint32_t cap = g_slot_cap ? g_slot_cap * 2u : 16u;
            live_slot *grown = (live_slot *)realloc(g_slots, cap * sizeof *grown);
            if (!grown) return false;
            g_slots = grown;
            g_slot_cap = cap;
        }
        s = g_slot_count++;
    }
    g_slots[s].id = g_next_id++;
    g_slots[s].pins = 0;
    g_slots[s].pool = p;
    p->ts->id = g_slots[s].id;
    p->ts->slot = s;
    return true;
}

/* The pool in slot s if it is still the one with `id`, pinned (thread exit), else NULL. */
static sp_pool *slot_pin(uint32_t s, uint64_t id) {
    sp_pool *p = NULL;
    pthread_mutex_lock(&g_lock);
    if (s < g_slot_count && g_slots[s].id == id) {
        g_slots[s].pins++;
        p = g_slots[s].pool;
    }
    pthread_mutex_unlock(&g_lock);
    return p;
}

static void slot_unpin(uint32_t s) {
    pthread_mutex_lock(&g_lock);
    g_slots[s].pins--;
    pthread_mutex_unlock(&g_lock);
}

/* ---- the pool lock and the depot ---------------------------------------------------------- */

void sp__ts_lock(sp_pool *p) { pthread_mutex_lock(&p->ts->lock); }

void sp__ts_unlock(sp_pool *p) { pthread_mutex_unlock(&p->ts->lock); }

/* A magazine's bytes: whole cache lines, so that no two threads' magazines share one. */
static size_t mag_bytes(uint32_t cap) {
    return (sizeof(sp__mag) + (size_t)cap * sizeof(uint32_t) + 63u) & ~(size_t)63u;
}

sp__mag *sp__ts_mag_get(sp_pool *p) {
    sp__ts *ts = p->ts;
    sp__mag *m = ts->empty;
    if (m) {
        ts->empty = m->next;
        return m;
    }
    size_t bytes = mag_bytes(ts->mag_size);
    m = (sp__mag *)pool_alloc(p, bytes, 64u);
    if (!m) {
        sp__log(p, SP__MSG_NOMEM, "magazine");
        return NULL;
    }
    p->mem.bytes += bytes;
    m->n = 0;
    m->cap = ts->mag_size;
    m->next = NULL;
    m->all = ts->all_mags;
    ts->all_mags = m;
    return m;
}

/* An empty magazine goes back to the depot; one smaller than the current size is freed, so that
   the depot hands out only the grown size from then on. */
void sp__ts_mag_put_empty(sp_pool *p, sp__mag *m) {
    sp__ts *ts = p->ts;
    if (m->cap >= ts->mag_size) {
        m->next = ts->empty;
        ts->empty = m;
        return;
    }
    for (sp__mag **l = &ts->all_mags; *l; l = &(*l)->all) {
        if (*l == m) {
            *l = m->all;
            break;
        }
    }
    size_t bytes = mag_bytes(m->cap);
    pool_free(p, m, bytes);
    p->mem.bytes -= bytes;
}

/* Every depot visit: Bonwick and Adams' adaptive magazine size. A visit that follows another
   thread's and comes soon after the thread's previous one says the magazines are too small for
   the traffic; SP__TS_GROW_STRIKES such visits double the size of the magazines made from then
   on. Local churn with two magazines a thread seldom visits, so only traffic that crosses the
   depot (producer/consumer) grows them. */
void sp__ts_depot_visit(sp_pool *p, sp__tcache *c) {
    sp__ts *ts = p->ts;
    uint64_t ops = atomic_load_explicit(&c->acquired, memory_order_relaxed) +
                   atomic_load_explicit(&c->released, memory_order_relaxed);
    bool frequent = ops - c->ops_at_visit < (uint64_t)SP__TS_FREQUENT_MAGS * ts->mag_size;
    c->ops_at_visit = ops;
    bool handoff = ts->last_visitor != NULL && ts->last_visitor != c;
    ts->last_visitor = c;
    if (!frequent || !handoff || ++ts->strikes < SP__TS_GROW_STRIKES) return;
    ts->strikes = 0;
    uint64_t limit = (uint64_t)ts->mag_first * SP__TS_GROW_FACTOR;
    if (p->cfg.max && limit > p->cfg.max / SP__TS_GROW_MAX_SHARE) limit = p->cfg.max / SP__TS_GROW_MAX_SHARE;
    if (limit > SP__TS_MAX_MAGAZINE) limit = SP__TS_MAX_MAGAZINE;
    if ((uint64_t)ts->mag_size * 2u <= limit) ts->mag_size *= 2u;
}

void sp__ts_loose_push(sp_pool *p, uint32_t idx) { p->hot.stack[p->ts->loose_n++] = idx; }

/* A magazine goes back (under the lock): whole if full, else its members to the loose ones. */
static void mag_return(sp_pool *p, sp__mag *m) {
    if (!m) return;
    if (m->n == m->cap) {
        m->next = p->ts->full;
        p->ts->full = m;
        return;
    }
    while (m->n > 0) sp__ts_loose_push(p, m->e[--m->n]);
    sp__ts_mag_put_empty(p, m);
}

static void cache_flush(sp_pool *p, sp__tcache *c) {
    mag_return(p, c->loaded);
    mag_return(p, c->prev);
    c->loaded = c->prev = NULL;
}

/* ---- each thread's table, and thread exit ------------------------------------------------- */

/* Thread exit: every cache of a pool still alive goes back (its members to the depot or the
   loose ones) and stays with the pool, an orphan, for its counters and for the next thread. */
static void thread_exit(void *arg) {
    sp__tl_table *t = (sp__tl_table *)arg;
    for (uint32_t s = 0; s < t->cap; s++) {
        if (!t->e[s].id) continue;
        sp_pool *p = slot_pin(s, t->e[s].id);
        if (!p) continue; /* gone, or going: its destruction gathers the cache */
        sp__ts_lock(p);
        cache_flush(p, t->e[s].cache);
        t->e[s].cache->orphan = true;
        sp__ts_unlock(p);
        slot_unpin(s);
    }
    free(t);
    sp__tl = NULL;
}

static void key_create(void) { (void)pthread_key_create(&g_key, thread_exit); }

/* The thread's first call on this pool: a cache (an orphan's, or a new one) with two empty
   magazines, in the thread's table at the pool's slot. NULL, with a line, when memory fails. */
SP__NOINLINE sp__tcache *sp__ts_cache_slow(sp_pool *p) {
    sp__ts *ts = p->ts;
    (void)pthread_once(&g_key_once, key_create);
    sp__tl_table *t = sp__tl;
    if (!t || ts->slot >= t->cap) {
        uint32_t cap = t ? t->cap : 0u;
        uint32_t want = cap ? cap : 8u;
        while (want <= ts->slot) want *= 2u;
        sp__tl_table *grown = (sp__tl_table *)realloc(t, sizeof *t + (size_t)want * sizeof(sp__tl_entry));
        if (!grown) {
            sp__log(p, SP__MSG_NOMEM, "the thread's table of caches");
            return NULL;
        }
        memset(grown->e + cap, 0, (size_t)(want - cap) * sizeof(sp__tl_entry));
        grown->cap = want;
        t = sp__tl = grown;
        (void)pthread_setspecific(g_key, t);
    }
    sp__ts_lock(p);
    sp__tcache *c = NULL;
    for (sp__tcache *o = ts->caches; o && !c; o = o->next)
        if (o->orphan) c = o;
    bool fresh = !c;
    if (fresh) {
        c = (sp__tcache *)pool_alloc(p, sizeof *c, 64u);
        if (c) {
            memset(c, 0, sizeof *c);
            atomic_init(&c->acquired, 0u);
            atomic_init(&c->released, 0u);
            atomic_init(&c->inside, 0);
            p->mem.bytes += sizeof *c;
        }
    }
    if (c) {
        c->loaded = sp__ts_mag_get(p);
        c->prev = c->loaded ? sp__ts_mag_get(p) : NULL;
        if (!c->prev) {
            if (c->loaded) sp__ts_mag_put_empty(p, c->loaded);
            c->loaded = NULL;
            if (fresh) {
                pool_free(p, c, sizeof *c);
                p->mem.bytes -= sizeof *c;
            }
            c = NULL;
        }
    }
    if (c && fresh) {
        c->next = ts->caches;
        ts->caches = c;
    }
    if (c) c->orphan = false;
    sp__ts_unlock(p);
    if (!c) return NULL;
    t->e[ts->slot].id = ts->id;
    t->e[ts->slot].cache = c;
    return c;
}

/* ---- creation and destruction ------------------------------------------------------------- */

bool sp__ts_attach(sp_pool *p, const sp_desc *d) {
    const char *why = d->magazine_size > SP__TS_MAX_MAGAZINE ? "magazine_size is larger than 65536"
                      : d->buffer ? "buffer: a fixed buffer cannot hold the per-thread caches"
                      : d->overflow == SP_OVERFLOW_RECLAIM ? "overflow = SP_OVERFLOW_RECLAIM is not supported"
                      : d->priority ? "priority is not supported (no reclaim)"
                      : p->cfg.ordered ? "order = SP_ORDER_ACQUISITION is not supported"
                                       : NULL;
    if (why) {
        sp__log(p, SP__MSG_TS_BAD_DESC, why);
        return false;
    }
    sp__ts *ts = (sp__ts *)pool_alloc(p, sizeof *ts, _Alignof(sp__ts));
    if (!ts) {
        sp__log(p, SP__MSG_NOMEM, "thread-safe state");
        return false;
    }
    memset(ts, 0, sizeof *ts);
    atomic_init(&ts->foreign_handles, 0u);
    atomic_init(&ts->forged_handles, 0u);
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
    int failed = pthread_mutex_init(&ts->lock, &attr);
    pthread_mutexattr_destroy(&attr);
    if (failed) {
        pool_free(p, ts, sizeof *ts);
        sp__log(p, SP__MSG_NOMEM, "pool lock");
        return false;
    }
    ts->mag_size = d->magazine_size ? (uint32_t)d->magazine_size : SP__TS_DEFAULT_MAGAZINE;
    ts->mag_first = ts->mag_size;
    p->ts = ts;
    /* A thread-safe pool takes its tag now: other threads read it without the lock. */
    pthread_mutex_lock(&g_lock);
    bool slotted = slot_take(p);
    pthread_mutex_unlock(&g_lock);
    if (!slotted || !sp__tag_take(p)) {
        if (slotted) {
            pthread_mutex_lock(&g_lock);
            g_slots[ts->slot].id = 0;
            g_slots[ts->slot].next_free = g_free_slot;
            g_free_slot = ts->slot;
            pthread_mutex_unlock(&g_lock);
        }
        pthread_mutex_destroy(&ts->lock);
        p->ts = NULL;
        pool_free(p, ts, sizeof *ts);
        if (!slotted) sp__log(p, SP__MSG_NOMEM, "the table of thread-safe pools");
        return false;
    }
    p->mem.bytes += sizeof *ts;
    /* The plain paths' fields never change from here on: other threads read them in sp_acquire
       and sp_release, which send every call to this layer (routes_update leaves them alone). */
    p->hot.plain_floor = UINT32_MAX;
    p->hot.top_plain = 0;
    p->hot.top_items = 0;
    p->hot.top_first = 0;
    return true;
}

/* The start of sp_pool_destroy: refused inside one of the pool's hooks; else the pool's slot
   dies (exiting threads stop touching it), the exits already under way finish, and a window
   opens for good (sp__ts_free closes it). */
bool sp__ts_destroy_begin(sp_pool *p) {
    sp__ts_lock(p);
    bool refused = p->act.hook_depth > 0 || p->act.destroying || sp__ts_in_hook(p);
    sp__ts_unlock(p);
    if (refused) {
        sp__log(p, SP__MSG_IN_HOOK, "sp_pool_destroy");
        return false;
    }
    uint32_t s = p->ts->slot;
    pthread_mutex_lock(&g_lock);
    g_slots[s].id = 0;
    uint32_t pins = g_slots[s].pins;
    pthread_mutex_unlock(&g_lock);
    while (pins > 0) { /* an exiting thread hands its cache back under the pool's lock: short */
        sched_yield();
        pthread_mutex_lock(&g_lock);
        pins = g_slots[s].pins;
        pthread_mutex_unlock(&g_lock);
    }
    sp__ts_window_begin(p, "sp_pool_destroy");
    return true;
}

void sp__ts_free(sp_pool *p) {
    sp__ts *ts = p->ts;
    for (sp__tcache *c = ts->caches, *next; c; c = next) {
        next = c->next;
        pool_free(p, c, sizeof *c);
    }
    for (sp__mag *m = ts->all_mags, *next; m; m = next) {
        next = m->all;
        pool_free(p, m, mag_bytes(m->cap));
    }
    pthread_mutex_lock(&g_lock);
    g_slots[ts->slot].next_free = g_free_slot;
    g_free_slot = ts->slot;
    pthread_mutex_unlock(&g_lock);
    while (ts->window-- > 0) sp__ts_unlock(p);
    pthread_mutex_destroy(&ts->lock);
    p->ts = NULL;
    pool_free(p, ts, sizeof *ts);
}

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
    const sp__tl_table *t = sp__tl;
    const sp__tcache *own = t && ts->slot < t->cap && t->e[ts->slot].id == ts->id ? t->e[ts->slot].cache : NULL;
    for (const sp__tcache *c = ts->caches; c; c = c->next)
        if (c != own && atomic_load_explicit(&c->inside, memory_order_relaxed)) sp__log(p, SP__MSG_TS_NOT_QUIESCENT, call);
#  else
    (void)call;
#  endif
    sp__ts_note_peak(p);
    ts->win_acquired = ts->acquired + caches_sum(ts, false);
    ts->win_released = ts->released + caches_sum(ts, true);
    p->hot.free_count = ts->loose_n;
    ts->loose_n = 0;
    for (sp__tcache *c = ts->caches; c; c = c->next) {
        for (sp__mag *m = c->loaded; m && m->n;) stack_push(p, m->e[--m->n]);
        for (sp__mag *m = c->prev; m && m->n;) stack_push(p, m->e[--m->n]);
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
    ts->loose_n = p->hot.free_count;
    p->hot.free_count = 0;
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

#else /* no threads (single-threaded WebAssembly, MSVC): refused at creation */

bool sp__ts_attach(sp_pool *p, const sp_desc *d) {
    (void)d;
    sp__log(p, SP__MSG_TS_BAD_DESC, "this build has no threads (pthreads)");
    return false;
}
bool sp__ts_destroy_begin(sp_pool *p) {
    (void)p;
    return true;
}
void sp__ts_free(sp_pool *p) { (void)p; }
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

#endif
