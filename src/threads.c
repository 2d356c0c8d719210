/* SPDX-License-Identifier: Zlib */
/* threads.c -- thread-safe pools (SP_THREADS_SAFE), everything but the per-call paths
   (magazine.c): what a descriptor may ask, the pool lock, each thread's table of its caches and
   what happens when the thread exits, fork() and unloading, the published ranges the lock-free
   lookups read, the quiescent windows in which the plain code runs unchanged (iteration, trim,
   clear, destroy), and the stats. docs/threads.md has the design, and the lifetimes: caches
   belong to their pool, a thread's table only points at them, and both sides check a
   process-wide list of live pools under one global lock, so neither order of thread exit and
   pool destruction leaks or touches freed memory.

   Locks, in the one order they nest, so that no two threads can each hold one the other waits
   for:
   1. Pool locks (sp__ts.lock). A pool's lock is held while its callbacks run in a growth batch
      (create), a retirement (dispose), a window (the callbacks of sp_each and the other calls
      that need quiescence) and around its allocator: a callback that uses another thread-safe
      pool takes that pool's lock inside. Which pools nest in which is the program's order, as
      with any two mutexes: two pools whose callbacks use each other, from two threads at once,
      can deadlock.
   2. Leaf locks: g_lock (the live pools, the threads' tables, ids), a registry's index lock
      (sp__ts_leaf) and the tag table's (support.c). Each is held for a few instructions, in
      which no other lock is taken and no callback runs, so taking one with pool locks held is
      always safe.
   Thread exit therefore does not return its caches (that would take pool locks under g_lock):
   it marks them orphaned, and the pool takes their members back under its own lock when it
   needs them (a refill that would grow or drop, a window, a thread that adopts the cache).
   fork() takes every lock (pthread_atfork), each with a trylock, all or none, so that the
   prepare never waits while it holds one. */
#if !defined(_POSIX_C_SOURCE) && !defined(_WIN32)
#  define _POSIX_C_SOURCE 200809L /* pthread_atfork, sched_yield */ /* NOLINT(bugprone-reserved-identifier,cert-dcl37-c,cert-dcl51-cpp) */
#endif
#include "sp_threads.h"

#include <stdlib.h>

/* The hook frames: which pools' hooks (and log lines) run on this thread now, on which member. */
static _Thread_local sp__hook_frame *tl_hooks;

void sp__ts_hook_enter(sp__hook_frame *f, const sp_pool *p, const void *item) {
    f->pool = p;
    f->item = item;
    f->up = tl_hooks;
    tl_hooks = f;
}

void sp__ts_hook_leave(const sp__hook_frame *f) { tl_hooks = f->up; }

bool sp__ts_in_hook(const sp_pool *p) {
    for (const sp__hook_frame *f = tl_hooks; f; f = f->up)
        if (f->pool == p) return true;
    return false;
}

bool sp__ts_in_member_hook(const sp_pool *p, const void *item) {
    for (const sp__hook_frame *f = tl_hooks; f; f = f->up)
        if (f->pool == p && f->item == item) return true;
    return false;
}

#if SP__HAVE_THREADS
#  include <sched.h>

/* ---- the process's live pools and each thread's table -------------------------------- */

typedef struct tl_entry {
    sp_pool *pool;
    uint64_t id;
    sp__tcache *cache;
} tl_entry;

/* A thread's table of its caches. The table is thread-local and joins the process's list at
   the thread's first cache, so that fork's child can free the entries of the threads it does
   not have, and unloading the library those of every thread. */
typedef struct tl_table {
    struct tl_table *next, *prev; /* g_tables */
    bool listed;
    size_t count, cap;
    tl_entry *e;
} tl_table;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER; /* the lists below, g_next_id, g_key_made */
static sp__ts *g_live;
static tl_table *g_tables;
static sp__ts_leaf *g_leaves;
static uint64_t g_next_id = 1;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static pthread_key_t g_key;
static bool g_key_made;
static _Thread_local tl_table tl_tab;
SP__TLS sp__tl_last sp__tl; /* the last lookup's answer, tried first */

static bool is_live(uint64_t id) { /* under g_lock */
    for (const sp__ts *l = g_live; l; l = l->live_next)
        if (l->id == id) return true;
    return false;
}

static void table_unlist(tl_table *t) { /* under g_lock */
    if (!t->listed) return;
    if (t->prev)
        t->prev->next = t->next;
    else
        g_tables = t->next;
    if (t->next) t->next->prev = t->prev;
    t->next = t->prev = NULL;
    t->listed = false;
}

static void table_free(tl_table *t) { /* under g_lock, or by its own thread once unlisted */
    table_unlist(t);
    free(t->e);
    t->e = NULL;
    t->count = t->cap = 0;
}

/* Thread exit (the key's destructor): the caches of the pools still alive are orphaned, which
   needs no pool lock (see "Locks" above); their pools take them back. */
static void thread_exit(void *arg) {
    tl_table *t = (tl_table *)arg;
    pthread_mutex_lock(&g_lock);
    /* A pool may be gone (destroyed) and its memory reused: only its id, checked against the
       live list before anything is read through the pointer, says it is the same. */
    for (size_t i = 0; i < t->count; i++)
        if (is_live(t->e[i].id)) SP__STORE(&t->e[i].cache->orphan, true);
    table_free(t);
    pthread_mutex_unlock(&g_lock);
    sp__tl.pool = NULL;
    sp__tl.id = 0; /* the fast paths match on the id alone */
}

/* ---- the pool lock ----------------------------------------------------------------------- */

/* Recursive by a count beside a plain mutex: the holder's token is the address of its
   thread-local sp__tl, which a fork's child keeps (a recursive pthread mutex records the
   holder's thread id instead, which the child does not have, and refuses its unlock). */
#  define SELF ((uintptr_t)&sp__tl)

static void ts_lock(sp__ts *ts) {
    if (SP__LOAD_RELAXED(&ts->holder) == SELF) { /* only this thread can have stored it */
        ts->depth++;
        return;
    }
    pthread_mutex_lock(&ts->lock);
    SP__STORE_RELAXED(&ts->holder, SELF);
    ts->depth = 1;
}

static bool ts_trylock(sp__ts *ts) {
    if (SP__LOAD_RELAXED(&ts->holder) == SELF) {
        ts->depth++;
        return true;
    }
    if (pthread_mutex_trylock(&ts->lock) != 0) return false;
    SP__STORE_RELAXED(&ts->holder, SELF);
    ts->depth = 1;
    return true;
}

static void ts_unlock(sp__ts *ts) {
    if (--ts->depth > 0) return;
    SP__STORE_RELAXED(&ts->holder, (uintptr_t)0);
    pthread_mutex_unlock(&ts->lock);
}

void sp__ts_lock(sp_pool *p) { ts_lock(p->ts); }

void sp__ts_unlock(sp_pool *p) { ts_unlock(p->ts); }

bool sp__ts_leaf_init(sp__ts_leaf *l) {
    if (pthread_mutex_init(&l->m, NULL) != 0) return false;
    pthread_mutex_lock(&g_lock);
    l->prev = NULL;
    l->next = g_leaves;
    if (g_leaves) g_leaves->prev = l;
    g_leaves = l;
    pthread_mutex_unlock(&g_lock);
    return true;
}

void sp__ts_leaf_fini(sp__ts_leaf *l) {
    pthread_mutex_lock(&g_lock);
    if (l->prev)
        l->prev->next = l->next;
    else
        g_leaves = l->next;
    if (l->next) l->next->prev = l->prev;
    pthread_mutex_unlock(&g_lock);
    pthread_mutex_destroy(&l->m);
}

/* A magazine's bytes: whole cache lines, so that no two threads' magazines share one. */
static size_t mag_bytes(uint32_t cap) {
    return (sizeof(sp__mag) + (size_t)cap * sizeof(sp__mentry) + 63u) & ~(size_t)63u;
}

/* An empty magazine: from the depot, else a new one of the current size (under the lock).
   NULL: no memory. */
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
    p->bytes += bytes;
    m->n = 0;
    m->cap = ts->mag_size;
    m->guard = SP__MENTRY_FAR;
    m->next = NULL;
    m->all = ts->all_mags;
    ts->all_mags = m;
    return m;
}

/* An empty magazine goes back to the depot (under the lock); one smaller than the current size
   is freed instead, so that the depot hands out only the grown size from then on. */
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
    p->bytes -= bytes;
}

/* Every depot visit (under the lock): Bonwick and Adams' adaptive magazine size. A visit that
   follows another thread's (the depot's lines and the lock move between cores: hundreds of
   nanoseconds here) and comes soon after the thread's previous one says the magazines are too
   small for the traffic; SP__TS_GROW_STRIKES such visits double the size of the magazines made
   from then on, up to the limit, and a visit that comes late says they are large enough (the
   count starts over). Local churn with two magazines per thread seldom visits, and a thread
   counts only once it has settled (SP__TS_SETTLED_MAGS): so sustained traffic across the depot
   (producer/consumer) grows the magazines, short-lived threads do not. */
void sp__ts_depot_visit(sp_pool *p, sp__tcache *c) {
    sp__ts *ts = p->ts;
    uint64_t ops = c->acquired + c->released;
    bool settled = ops - c->ops_at_take >= (uint64_t)SP__TS_SETTLED_MAGS * ts->mag_first;
    bool frequent = ops - c->ops_at_visit < (uint64_t)SP__TS_FREQUENT_MAGS * ts->mag_size;
    c->ops_at_visit = ops;
    bool handoff = ts->last_visitor != NULL && ts->last_visitor != c;
    ts->last_visitor = c;
    if (!settled) return;
    if (!frequent) {
        ts->strikes = 0;
        return;
    }
    if (!handoff || ++ts->strikes < SP__TS_GROW_STRIKES) return;
    ts->strikes = 0;
    uint64_t limit = (uint64_t)ts->mag_first * SP__TS_GROW_FACTOR;
    if (p->max && limit > p->max / SP__TS_GROW_MAX_SHARE) limit = p->max / SP__TS_GROW_MAX_SHARE;
    if (limit > SP__TS_MAX_MAGAZINE) limit = SP__TS_MAX_MAGAZINE;
    if ((uint64_t)ts->mag_size * 2u <= limit) ts->mag_size *= 2u;
}

/* Empties magazine m onto the front of the free list at *head. */
static void mag_empty_onto(sp_pool *p, sp__mag *m, uint32_t *head) {
    while (m->n > 0) {
        uint32_t idx = sp__mentry_idx(&m->e[--m->n]);
        slot_at(p, idx)->next = *head;
        *head = idx;
    }
}

/* A magazine goes back to the depot (under the lock): whole if full, else its members to the
   loose list. */
static void mag_return(sp_pool *p, sp__mag *m) {
    sp__ts *ts = p->ts;
    if (!m) return;
    if (m->n == m->cap) {
        m->next = ts->full;
        ts->full = m;
        return;
    }
    mag_empty_onto(p, m, &ts->free_head);
    sp__ts_mag_put_empty(p, m);
}

static void flush_cache(sp_pool *p, sp__tcache *c) {
    mag_return(p, c->loaded);
    mag_return(p, c->prev);
    c->loaded = c->prev = NULL;
}

/* Under the lock: the magazines of the caches whose threads exited go back to the depot. True
   when that brought free members back. */
bool sp__ts_orphans_collect(sp_pool *p) {
    bool any = false;
    for (sp__tcache *c = p->ts->caches; c; c = c->next) {
        if (!SP__LOAD(&c->orphan) || !c->loaded) continue; /* (the flag first: its thread's writes) */
        any = any || c->loaded->n > 0 || c->prev->n > 0;
        flush_cache(p, c);
    }
    return any;
}

/* The thread's first call on this pool: a cache (an orphan's, with what its thread left in it,
   or a new one) with two magazines, and an entry in the thread's table. NULL, with a line,
   when memory fails. */
static SP__NOINLINE sp__tcache *cache_register(sp_pool *p) {
    sp__ts *ts = p->ts;
    tl_table *t = &tl_tab;
    if (t->count && t->count == t->cap) { /* full: forget the entries of pools that are gone */
        size_t keep = 0;
        pthread_mutex_lock(&g_lock);
        for (size_t i = 0; i < t->count; i++)
            if (is_live(t->e[i].id)) t->e[keep++] = t->e[i];
        pthread_mutex_unlock(&g_lock);
        t->count = keep;
    }
    size_t slot = t->count;
    for (size_t i = 0; i < t->count; i++)
        if (t->e[i].pool == p) slot = i; /* an earlier pool at this address: its entry is stale */
    if (slot == t->count && t->count == t->cap) {
        size_t cap = t->cap ? t->cap * 2u : 4u;
        tl_entry *grown = (tl_entry *)realloc(t->e, cap * sizeof *grown);
        if (!grown) {
            sp__log(p, SP__MSG_NOMEM, "thread cache table");
            return NULL;
        }
        t->e = grown;
        t->cap = cap;
    }
    if (!t->listed) { /* the thread's first cache: its exit must orphan them */
        pthread_mutex_lock(&g_lock);
        t->next = g_tables;
        t->prev = NULL;
        if (g_tables) g_tables->prev = t;
        g_tables = t;
        t->listed = true;
        if (g_key_made) (void)pthread_setspecific(g_key, t);
        pthread_mutex_unlock(&g_lock);
    }
    sp__ts_lock(p);
    sp__tcache *c = NULL;
    for (sp__tcache *o = ts->caches; o && !c; o = o->next)
        if (SP__LOAD(&o->orphan)) c = o;
    bool fresh = !c;
    if (fresh) {
        c = (sp__tcache *)pool_alloc(p, sizeof *c, 64u);
        if (c) {
            memset(c, 0, sizeof *c);
            p->bytes += sizeof *c;
        }
    }
    if (c && !c->loaded) {
        c->loaded = sp__ts_mag_get(p);
        c->prev = c->loaded ? sp__ts_mag_get(p) : NULL;
        if (!c->prev) {
            if (c->loaded) mag_return(p, c->loaded);
            c->loaded = NULL;
            if (fresh) {
                pool_free(p, c, sizeof *c);
                p->bytes -= sizeof *c;
            }
            c = NULL; /* an orphan stays one */
        }
    }
    if (c && fresh) {
        c->next = ts->caches;
        ts->caches = c;
    }
    if (c) {
        c->ops_at_take = c->ops_at_visit = c->acquired + c->released; /* see sp__ts_depot_visit */
        SP__STORE(&c->orphan, false);
    }
    sp__ts_unlock(p);
    if (!c) return NULL;
    if (slot == t->count) t->count++;
    t->e[slot].pool = p;
    t->e[slot].id = ts->id;
    t->e[slot].cache = c;
    return c;
}

/* The calling thread's cache of p, when it was not the last one looked up: the table, else a
   new one. */
SP__NOINLINE sp__tcache *sp__ts_cache_slow(sp_pool *p) {
    uint64_t id = p->ts->id;
    sp__tcache *c = NULL;
    const tl_table *t = &tl_tab;
    for (size_t i = 0; i < t->count && !c; i++)
        if (t->e[i].pool == p && t->e[i].id == id) c = t->e[i].cache;
    if (!c) c = cache_register(p);
    if (c) {
        sp__tl.pool = p;
        sp__tl.id = id;
        sp__tl.cache = c;
    }
    return c;
}

/* ---- fork() and unloading ---------------------------------------------------------------- */

/* fork()'s child: the threads that owned the other caches are gone, and any of them may have
   been in the middle of a call (between a magazine's count and its entry, a slot word and a
   counter). So every magazine's contents are dropped, the free members are found again from
   the slot words (onto the loose list), and the counters follow the words: what those threads
   held stays leased (the child may release it), a hook one of them was running on a member
   ends there (the member stays leased). O(slots) for a pool that another thread used; nothing
   for one that only the forking thread did. The allocator is not called (the child may not
   have what it needs): magazines go to the depot's empty list whatever their size. */
static void child_repair(sp_pool *p) {
    sp__ts *ts = p->ts;
    const sp__tcache *own = NULL;
    for (size_t i = 0; i < tl_tab.count; i++)
        if (tl_tab.e[i].id == ts->id) own = tl_tab.e[i].cache;
    bool others = false;
    for (const sp__tcache *c = ts->caches; c; c = c->next) others = others || (c != own && !SP__LOAD(&c->orphan));
    if (!others) return;
    for (sp__tcache *c = ts->caches; c; c = c->next) {
        if (c != own) {
            SP__STORE(&c->orphan, true);
            SP__STORE_RELAXED(&c->inside, 0);
        }
        if (ts->window > 0 || !c->loaded) continue; /* a window drained them (by its contract,
                                                       no other thread was inside the pool) */
        c->loaded->n = c->prev->n = 0;
        if (c == own) continue;
        c->loaded->next = c->prev;
        c->prev->next = ts->empty;
        ts->empty = c->loaded;
        c->loaded = c->prev = NULL;
    }
    if (ts->window > 0) return;
    while (ts->full) {
        sp__mag *m = ts->full;
        ts->full = m->next;
        m->n = 0;
        m->next = ts->empty;
        ts->empty = m;
    }
    ts->free_head = SP__NIL;
    uint64_t leased = 0;
    for (uint32_t r = 0; r < p->range_count; r++) {
        const sp__range *range = &p->ranges[r];
        if (!range->items) continue;
        for (uint32_t i = range->first; i < range->first + range->count; i++) {
            sp__slot *s = slot_at(p, i);
            const void *item = range->items + (size_t)(i - range->first) * p->stride;
            if ((s->word & SP__BUSY) && !sp__ts_in_member_hook(p, item))
                s->word &= ~(uint32_t)(SP__BUSY | SP__RELEASING);
            if ((s->word & (SP__STATE_MASK | SP__BUSY)) == SP__FREE) {
                s->next = ts->free_head;
                ts->free_head = i;
            }
            leased += (s->word & SP__STATE_MASK) == SP__LEASED;
        }
    }
    uint64_t acquired = ts->acquired;
    for (sp__tcache *c = ts->caches; c; c = c->next) {
        acquired += c->acquired;
        c->acquired = c->released = 0;
    }
    if (acquired < leased + p->leased_disposed) acquired = leased + p->leased_disposed;
    ts->acquired = acquired;
    ts->released = acquired - leased - p->leased_disposed;
    if (leased > ts->peak) ts->peak = (size_t)leased;
}

/* Every lock, or none (then it tries again): trylocks under g_lock, so that it never waits
   while it holds one. The pools' locks first, then (once all are held) the leaves'. */
static bool fork_lock_all(void) {
    sp__ts *ts = g_live;
    while (ts && ts_trylock(ts)) ts = ts->live_next;
    sp__ts_leaf *leaf = ts ? NULL : g_leaves;
    while (leaf && pthread_mutex_trylock(&leaf->m) == 0) leaf = leaf->next;
    if (!ts && !leaf) return true;
    for (sp__ts_leaf *l = ts ? NULL : g_leaves; l != leaf; l = l->next) pthread_mutex_unlock(&l->m);
    for (sp__ts *t = g_live; t != ts; t = t->live_next) ts_unlock(t);
    return false;
}

static void fork_prepare(void) {
    for (;;) {
        pthread_mutex_lock(&g_lock);
        if (fork_lock_all()) break;
        pthread_mutex_unlock(&g_lock);
        sched_yield();
    }
    sp__tags_lock(); /* its holders never wait: a spin of a few instructions */
}

static void fork_parent(void) {
    sp__tags_unlock();
    for (sp__ts_leaf *l = g_leaves; l; l = l->next) pthread_mutex_unlock(&l->m);
    for (sp__ts *ts = g_live; ts; ts = ts->live_next) ts_unlock(ts);
    pthread_mutex_unlock(&g_lock);
}

static void fork_child(void) {
    sp__tags_unlock();
    for (sp__ts_leaf *l = g_leaves; l; l = l->next) pthread_mutex_unlock(&l->m);
    for (tl_table *t = g_tables, *next; t; t = next) { /* the other threads' tables */
        next = t->next;
        if (t != &tl_tab) table_free(t);
    }
    for (sp__ts *ts = g_live; ts; ts = ts->live_next) {
        child_repair(ts->pool);
        ts_unlock(ts);
    }
    pthread_mutex_unlock(&g_lock);
}

/* At the first thread-safe pool: the key whose destructor is thread exit, and fork's handlers
   (which a dlclose of a shared library that embeds spawnpool removes with it). */
static void once_init(void) {
    g_key_made = pthread_key_create(&g_key, thread_exit) == 0;
    (void)pthread_atfork(fork_prepare, fork_parent, fork_child);
}

/* When the program ends (exit) or the shared library that holds this copy of spawnpool is
   unloaded (dlclose): no thread exit may call thread_exit afterwards (its code may be gone), so
   the key goes; and once no thread-safe pool is alive (dlclose requires it), no table is needed
   and every thread's goes too. At exit with pools alive (never destroyed, or other threads
   still inside them) nothing else changes: those threads keep running until the process ends. */
__attribute__((destructor)) static void unload(void) {
    pthread_mutex_lock(&g_lock);
    if (g_key_made) (void)pthread_key_delete(g_key);
    g_key_made = false;
    if (!g_live)
        while (g_tables) table_free(g_tables);
    pthread_mutex_unlock(&g_lock);
}

/* ---- creation and destruction ---------------------------------------------------------- */

/* Called by pool_create with the pool set up and its range reserved, before any member is
   built. False, with the line naming the field, when the descriptor asks what a thread-safe
   pool does not do. */
bool sp__ts_attach(sp_pool *p, const sp_desc *d) {
    const char *why = d->magazine_size > SP__TS_MAX_MAGAZINE ? "magazine_size is larger than 65536"
                      : d->buffer                           ? "buffer: a fixed buffer cannot hold the per-thread caches"
                      : d->overflow == SP_OVERFLOW_RECLAIM  ? "overflow = SP_OVERFLOW_RECLAIM is not supported"
                      : d->priority                         ? "priority is not supported (no reclaim)"
                      : p->ordered                          ? "order = SP_ORDER_ACQUISITION is not supported"
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
    (void)pthread_once(&g_once, once_init);
    if (pthread_mutex_init(&ts->lock, NULL) != 0) {
        pool_free(p, ts, sizeof *ts);
        sp__log(p, SP__MSG_NOMEM, "pool lock");
        return false;
    }
    p->bytes += sizeof *ts;
    ts->mag_size = d->magazine_size ? (uint32_t)d->magazine_size : SP__TS_DEFAULT_MAGAZINE;
    ts->mag_first = ts->mag_size;
    ts->free_head = SP__NIL;
    ts->pool = p;
    ts->tag = p->tag;
    p->ts_tag_bits = p->tag_bits;
    ts->acquired = p->acquired;
    ts->released = p->acquired - sp__leased(p) - p->leased_disposed;
    pthread_mutex_lock(&g_lock);
    ts->id = g_next_id++;
    ts->live_next = g_live;
    g_live = ts;
    pthread_mutex_unlock(&g_lock);
    p->ts = ts;
    p->ts_fast_id = p->on_acquire || p->on_release ? UINT64_MAX : ts->id; /* ids stay below */
    p->ts_view = false;
    /* The constant view (see struct sp_pool): set once, never written outside a window. */
    p->tag = SP__TS_NO_TAG;
    p->free_head = SP__NIL;
    p->plain_acquire = p->plain_release = p->plain_reclaim = false;
    p->release_slow = true;
    p->plain_below = 0;
    p->resolve_below = 0;
    p->top_plain = 0;
    p->top_items = pool_reserved(p) ? (uintptr_t)p->reserved_items : 0u; /* see fast_items */
    p->top_count = 0;
    p->top_first = 0;
    p->live_ranges = 0;
    ts->fast_items = p->top_items;
    sp__ts_publish(p);
    return true;
}

/* sp_pool_destroy's start: refused inside one of the pool's hooks; else the pool leaves the
   live list (thread exits stop touching it) and a window opens that sp__ts_free closes. */
bool sp__ts_destroy_begin(sp_pool *p) {
    sp__ts_lock(p);
    bool refused = p->hook_depth > 0 || p->destroying || sp__ts_in_hook(p);
    sp__ts_unlock(p);
    if (refused) {
        sp__log(p, SP__MSG_IN_HOOK, "sp_pool_destroy");
        return false;
    }
    pthread_mutex_lock(&g_lock);
    for (sp__ts **l = &g_live; *l; l = &(*l)->live_next) {
        if (*l == p->ts) {
            *l = p->ts->live_next;
            break;
        }
    }
    pthread_mutex_unlock(&g_lock);
    sp__ts_window_begin(p, "sp_pool_destroy");
    return true;
}

/* The end of sp_pool_destroy: the caches, magazines, fallback slots and the lock go. */
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
    if (!pool_reserved(p) && p->slots) {
        pool_free(p, p->slots, (size_t)ts->slots_alloc * p->slot_size);
#  if SP_DEBUG
        pool_free(p, p->dbg, (size_t)ts->slots_alloc * sizeof *p->dbg);
        p->dbg = NULL;
#  endif
        p->slots = NULL;
    }
    while (ts->window-- > 0) sp__ts_unlock(p);
    pthread_mutex_destroy(&ts->lock);
    p->ts = NULL;
    /* the thread tables' last answers must not match a pool at this address again */
    if (sp__tl.pool == p) {
        sp__tl.pool = NULL;
        sp__tl.id = 0;
    }
    pool_free(p, ts, sizeof *ts);
}

/* ---- what the lock-free paths read ----------------------------------------------------- */

/* After every change of the ranges or slots (under the lock): the ranges and the slots that
   exist, with atomic stores, the count last. */
void sp__ts_publish(sp_pool *p) {
    sp__ts *ts = p->ts;
    uint32_t n = 0;
    for (uint32_t c = 0; c < p->range_count && c < SP__RANGE_MAX; c++, n++) {
        const sp__range *r = &p->ranges[c];
        SP__STORE_RELAXED(&ts->pub[n].first, r->first);
        SP__STORE_RELAXED(&ts->pub[n].count, r->items ? r->count : 0u);
        SP__STORE_RELAXED(&ts->pub[n].items, (uintptr_t)r->items);
    }
    SP__STORE(&ts->pub_count, n);
    SP__STORE(&ts->pub_slot_cap, p->slot_cap);
    /* the fast range: the reserved range, outside windows (see sp__ts) */
    const sp__range *r0 = &p->ranges[0];
    bool fast = ts->fast_items && !p->ts_view && p->range_count > 0 && r0->first == 0 &&
                (uintptr_t)r0->items == ts->fast_items && r0->count <= p->slot_cap;
    SP__STORE_RELAXED(&p->ts_fast_count, fast ? r0->count : 0u);
}

/* routes_update for a thread-safe pool: the ranges and slots are published; outside a window
   nothing else changes (the constant view), inside one a plain pool's routes with the inline
   fast paths closed (plain_below, resolve_below and top_plain 0). */
void sp__ts_routes(sp_pool *p) {
    sp__ts_publish(p);
    if (!p->ts_view) return;
    p->plain_release = !p->on_release && !(p->scoring > 0 || p->tearing_down);
    p->plain_acquire = !p->on_acquire && p->live_ranges <= 1u;
    p->release_slow = p->on_release != NULL || p->scoring > 0 || p->tearing_down;
    p->plain_below = 0;
    p->resolve_below = 0;
    p->top_plain = 0;
    p->plain_reclaim = false;
}

/* The fallback's slots, for a thread-safe pool: allocated once (they must never move while
   other threads read them), for max(max, SP__TS_FALLBACK_SLOTS) members; made to exist up to
   `need` here. */
bool sp__ts_slots_reserve(sp_pool *p, uint32_t need) {
    sp__ts *ts = p->ts;
    if (need > ts->slots_alloc) {
        if (ts->slots_alloc) {
            sp__log(p, SP__MSG_TS_SLOTS_FULL, ts->slots_alloc);
            return false;
        }
        uint64_t cap = p->max > SP__TS_FALLBACK_SLOTS ? p->max : SP__TS_FALLBACK_SLOTS;
        if (cap < need) cap = need;
        if (cap > SP__SLOT_LIMIT) cap = SP__SLOT_LIMIT;
        unsigned char *slots = (unsigned char *)pool_alloc(p, (size_t)cap * p->slot_size, _Alignof(sp__oslot));
#  if SP_DEBUG
        sp__dbg *dbg = slots ? (sp__dbg *)pool_alloc(p, (size_t)cap * sizeof *dbg, _Alignof(sp__dbg)) : NULL;
        if (slots && !dbg) {
            pool_free(p, slots, (size_t)cap * p->slot_size);
            slots = NULL;
        }
#  endif
        if (!slots) {
            sp__log(p, SP__MSG_NOMEM, "slots");
            return false;
        }
        p->slots = slots;
#  if SP_DEBUG
        p->dbg = dbg;
        p->bytes += (size_t)cap * sizeof *dbg;
#  endif
        p->bytes += (size_t)cap * p->slot_size;
        ts->slots_alloc = (uint32_t)cap;
    }
    if (need <= p->slot_cap) return true;
    sp__slots_init(p, p->slot_cap, need);
#  if SP_DEBUG
    memset(p->dbg + p->slot_cap, 0, (size_t)(need - p->slot_cap) * sizeof *p->dbg);
#  endif
    p->slot_cap = need;
    sp__ts_publish(p);
    return true;
}

/* ---- windows: the calls that need quiescence ------------------------------------------- */

static uint64_t caches_sum(const sp__ts *ts, bool released) {
    uint64_t n = 0;
    /* Acquire loads of the acquisition counters: the release sums, read after them, are not
       read earlier (see leased_at_most). (A fence would do; TSan does not support fences.) */
    for (const sp__tcache *c = ts->caches; c; c = c->next)
        n += released ? SP__LOAD_RELAXED(&c->released) : SP__LOAD(&c->acquired);
    return n;
}

/* The members leased, from sums of the caches' counters taken while other threads run: every
   acquisition counter is read before every release counter, so the sums are at most a(T) and at
   least r(T) for the moment T between them, and the difference is at most the members leased
   at T (a lower bound of the peak, never above it). It can be negative when releases (from
   other threads too) happened between the reads: then 0, not a wrapped count. */
static uint64_t leased_at_most(uint64_t acquired, uint64_t released, uint64_t disposed) {
    return acquired >= released + disposed ? acquired - released - disposed : 0u;
}

/* Under the lock: the peak of leased members, as far as anyone can tell (a refill or a stats
   call sees the sum of the caches' counters). */
void sp__ts_note_peak(sp_pool *p) {
    sp__ts *ts = p->ts;
    uint64_t acquired = ts->acquired + caches_sum(ts, false);
    uint64_t released = ts->released + caches_sum(ts, true);
    uint64_t leased = leased_at_most(acquired, released, p->leased_disposed);
    if (leased > ts->peak) ts->peak = (size_t)leased;
}

/* The members of a magazine join the plain free list. */
static void mag_drain(sp_pool *p, sp__mag *m) {
    if (m) mag_empty_onto(p, m, &p->free_head);
}

/* Moves every member of the list at *from onto the front of the list at *to (order does not
   matter: both are free lists). */
static void list_move_all(sp_pool *p, uint32_t *from, uint32_t *to) {
    while (*from != SP__NIL) {
        uint32_t idx = *from;
        *from = slot_at(p, idx)->next;
        slot_at(p, idx)->next = *to;
        *to = idx;
    }
}

/* Opens a window: the lock is held until the window closes, every free member (the caches of
   every thread, the depot, the loose list) joins the plain free list, the counters are summed
   into the plain ones, and the plain view is installed, so that the plain code runs as it does
   for a pool of one thread. Other threads must not be inside a call on the pool, and their
   last calls must happen before this one (a join or a barrier): debug builds check the first. */
void sp__ts_window_begin(sp_pool *p, const char *call) {
    sp__ts *ts = p->ts;
    sp__ts_lock(p);
    if (ts->window++ > 0) return;
#  if SP_DEBUG
    sp__tcache *own = sp__tl.pool == p && sp__tl.id == ts->id ? sp__tl.cache : NULL;
    for (const sp__tcache *c = ts->caches; c; c = c->next)
        if (c != own && SP__LOAD_RELAXED(&c->inside)) sp__log(p, SP__MSG_TS_NOT_QUIESCENT, call);
#  else
    (void)call;
#  endif
    sp__ts_note_peak(p);
    ts->win_acquired = ts->acquired + caches_sum(ts, false);
    ts->win_released = ts->released + caches_sum(ts, true);
    p->acquired = ts->win_acquired;
    size_t leased = (size_t)(ts->win_acquired - ts->win_released - p->leased_disposed);
    p->peak_leased = ts->peak > leased ? ts->peak : leased; /* note_peak made it at least this */
    p->headroom = (ptrdiff_t)(p->peak_leased - leased);
    for (sp__tcache *c = ts->caches; c; c = c->next) {
        mag_drain(p, c->loaded);
        mag_drain(p, c->prev);
    }
    for (sp__mag *m = ts->full; m; m = m->next) mag_drain(p, m);
    while (ts->full) {
        sp__mag *m = ts->full;
        ts->full = m->next;
        sp__ts_mag_put_empty(p, m);
    }
    list_move_all(p, &ts->free_head, &p->free_head);
    p->ts_view = true;
    p->tag = ts->tag;
    sp__ranges_index(p); /* the top range, live_ranges, the routes */
}

/* Closes it: the free list goes back to the loose list, the counts into the pool's own, and
   the constant view returns. */
void sp__ts_window_end(sp_pool *p) {
    sp__ts *ts = p->ts;
    if (--ts->window > 0) {
        sp__ts_unlock(p);
        return;
    }
    ts->acquired += p->acquired - ts->win_acquired;
    ts->released += (p->acquired - sp__leased(p) - p->leased_disposed) - ts->win_released;
    if (p->peak_leased > ts->peak) ts->peak = p->peak_leased;
    list_move_all(p, &p->free_head, &ts->free_head);
    p->ts_view = false;
    p->tag = SP__TS_NO_TAG;
    p->top_items = ts->fast_items;
    p->top_count = 0;
    p->top_first = 0;
    p->live_ranges = 0;
    p->plain_acquire = p->plain_release = false;
    p->release_slow = true;
    sp__ts_publish(p);
    sp__ts_unlock(p);
}

/* ---- the calls any thread may make that are not per-member ------------------------------ */

void sp__ts_stats(const sp_pool *pool, sp_stats *out) {
    sp_pool *p = (sp_pool *)(uintptr_t)pool; /* the lock and the peak: bookkeeping */
    sp__ts *ts = p->ts;
    sp__ts_lock(p);
    sp__ts_note_peak(p);
    uint64_t acquired = ts->acquired + caches_sum(ts, false);
    uint64_t released = ts->released + caches_sum(ts, true);
    uint64_t leased = leased_at_most(acquired, released, p->leased_disposed);
    out->size = p->size;
    out->leased = (size_t)leased;
    out->free = p->size >= leased ? p->size - (size_t)leased : 0;
    out->max = p->max;
    out->peak_leased = ts->peak;
    out->bytes = p->bytes;
    out->created = p->created;
    out->disposed = p->disposed;
    out->acquired = acquired;
    out->released = released;
    out->reclaimed = p->reclaimed;
    out->dropped = p->dropped;
    out->grown_past_max = p->grown_past_max;
    out->bytes_reserved = p->reserved_items_size + p->reserved_books_size;
    sp__ts_unlock(p);
}

/* Builds up to n members into the loose list, under the lock. */
size_t sp__ts_prewarm(sp_pool *p, size_t n) {
    sp__ts_lock(p);
    size_t built = 0;
    if (p->allocating > 0)
        sp__log(p, SP__MSG_IN_ALLOCATOR, "sp_prewarm");
    else
        built = sp__build_onto(p, n, &p->ts->free_head);
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
    if (overflow) p->overflow = *overflow;
    if (max) p->max = *max;
    sp__ts_unlock(p);
    return SP_OK;
}

#else /* no threads (single-threaded WebAssembly, MSVC): refused at creation */

bool sp__ts_attach(sp_pool *p, const sp_desc *d) {
    (void)d;
    sp__log(p, SP__MSG_TS_BAD_DESC, "this build has no threads (pthreads and GCC/Clang atomics)");
    return false;
}
bool sp__ts_destroy_begin(sp_pool *p) {
    (void)p;
    return true;
}
void sp__ts_free(sp_pool *p) { (void)p; }
void sp__ts_window_begin(sp_pool *p, const char *call) { (void)p, (void)call; }
void sp__ts_window_end(sp_pool *p) { (void)p; }
void sp__ts_routes(sp_pool *p) { (void)p; }
void sp__ts_publish(sp_pool *p) { (void)p; }
bool sp__ts_slots_reserve(sp_pool *p, uint32_t need) {
    (void)p, (void)need;
    return false;
}
void sp__ts_stats(const sp_pool *p, sp_stats *out) { (void)p, (void)out; }
size_t sp__ts_prewarm(sp_pool *p, size_t n) {
    (void)p, (void)n;
    return 0;
}
sp_result sp__ts_set(sp_pool *p, const sp_overflow *overflow, const size_t *max) {
    (void)p, (void)overflow, (void)max;
    return SP_ERR_INVALID;
}

#endif
