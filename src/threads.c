/* SPDX-License-Identifier: Zlib */
/* threads.c -- thread-safe pools (SP_THREADS_SAFE): their lifecycle and what they share with
   the process. What a descriptor may ask, the pool lock, each thread's table of its caches and
   what happens when the thread exits, fork() and unloading, the depot's magazines. The per-call
   paths are in magazine.c; the windows and the stats in threads_windows.c.

   Locks, in the one order they nest, so that no two threads can each hold one the other waits
   for:
   1. Pool locks (sp__ts.lock). A pool's lock is held while its callbacks run in a growth batch
      (create), a retirement (dispose), a window (the callbacks of sp_each and the other calls
      that need quiescence) and around its allocator: a callback that uses another thread-safe
      pool takes that pool's lock inside. Which pools nest in which is the program's order, as
      with any two mutexes: two pools whose callbacks use each other, from two threads at once,
      can deadlock.
   2. Leaf locks: g_lock (the live pools' slots, the threads' tables, ids), a registry's index
      lock (sp__leaf_lock), the tag table's and the shared memory source's. Each is held for a
      few instructions, in which no other lock is taken and no callback runs, so taking one with
      pool locks held is always safe.
   Thread exit therefore does not return its caches (that would take pool locks under g_lock):
   it marks them orphaned, and the pool takes their members back under its own lock when it
   needs them (a refill that would grow or drop, a window, a thread that adopts the cache).
   fork() takes every lock (pthread_atfork), each with a trylock, all or none, so that the
   prepare never waits while it holds one. */
#if !defined(_POSIX_C_SOURCE) && !defined(_WIN32)
#  define _POSIX_C_SOURCE 200809L /* pthread_atfork, sched_yield */ /* NOLINT(bugprone-reserved-identifier,cert-dcl37-c,cert-dcl51-cpp) */
#endif
#include "threads_internal.h"

#include <stdlib.h>

/* The hook frames: which pools' hooks (and log lines) run on this thread now. */
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

/* ---- the live pools' slots, the threads' tables, the leaf locks --------------------------- */

typedef struct live_slot {
    uint64_t id; /* the live pool's id; 0: free, or its pool is being destroyed */
    uint32_t next_free;
    sp_pool *pool;
} live_slot;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER; /* everything below */
static live_slot *g_slots;
static uint32_t g_slot_count, g_slot_cap, g_free_slot = UINT32_MAX;
static uint64_t g_next_id = 1;
static sp__tl_table *g_tables;
static sp__leaf_lock *g_leaves;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static pthread_key_t g_key;
static bool g_key_made;
_Thread_local sp__tl_table *sp__tl SP__TLS_FAST;

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
    g_slots[s].pool = p;
    p->ts->fast.id = g_slots[s].id;
    p->ts->fast.slot = s;
    return true;
}

static void slot_give(uint32_t s) { /* under g_lock */
    g_slots[s].id = 0;
    g_slots[s].next_free = g_free_slot;
    g_free_slot = s;
}

static void table_unlist(sp__tl_table *t) { /* under g_lock */
    if (t->prev)
        t->prev->next = t->next;
    else
        g_tables = t->next;
    if (t->next) t->next->prev = t->prev;
}

/* Thread exit (the key's destructor): the caches of the pools still alive are orphaned, which
   needs no pool lock (see "Locks" above); their pools take them back. Only the id, checked
   against the live slots before anything is read through the cache pointer, says that a pool is
   the one of the entry (a pool may be gone and its memory reused). */
static void thread_exit(void *arg) {
    sp__tl_table *t = (sp__tl_table *)arg;
    pthread_mutex_lock(&g_lock);
    for (uint32_t s = 0; s < t->cap; s++)
        if (s < g_slot_count && t->e[s].id && g_slots[s].id == t->e[s].id)
            atomic_store_explicit(&t->e[s].cache->orphan, true, memory_order_release);
    table_unlist(t);
    pthread_mutex_unlock(&g_lock);
    free(t);
    sp__tl = NULL;
}

bool sp__leaf_init(sp__leaf_lock *l) {
    if (pthread_mutex_init(&l->m, NULL) != 0) return false;
    pthread_mutex_lock(&g_lock);
    l->prev = NULL;
    l->next = g_leaves;
    if (g_leaves) g_leaves->prev = l;
    g_leaves = l;
    pthread_mutex_unlock(&g_lock);
    return true;
}

void sp__leaf_fini(sp__leaf_lock *l) {
    pthread_mutex_lock(&g_lock);
    if (l->prev)
        l->prev->next = l->next;
    else
        g_leaves = l->next;
    if (l->next) l->next->prev = l->prev;
    pthread_mutex_unlock(&g_lock);
    pthread_mutex_destroy(&l->m);
}

/* ---- the pool lock and the depot ---------------------------------------------------------- */

/* Recursive by a count beside a plain mutex: the holder's token is the address of a
   thread-local, which a fork's child keeps (a recursive pthread mutex records the holder's
   thread id instead, which the child does not have, and refuses its unlock). */
static _Thread_local char tl_token;
#  define SELF ((uintptr_t)&tl_token)

static void ts_lock(sp__ts *ts) {
    if (atomic_load_explicit(&ts->holder, memory_order_relaxed) == SELF) { /* only we store it */
        ts->depth++;
        return;
    }
    pthread_mutex_lock(&ts->lock);
    atomic_store_explicit(&ts->holder, SELF, memory_order_relaxed);
    ts->depth = 1;
}

static bool ts_trylock(sp__ts *ts) {
    if (atomic_load_explicit(&ts->holder, memory_order_relaxed) == SELF) {
        ts->depth++;
        return true;
    }
    if (pthread_mutex_trylock(&ts->lock) != 0) return false;
    atomic_store_explicit(&ts->holder, SELF, memory_order_relaxed);
    ts->depth = 1;
    return true;
}

static void ts_unlock(sp__ts *ts) {
    if (--ts->depth > 0) return;
    atomic_store_explicit(&ts->holder, (uintptr_t)0, memory_order_relaxed);
    pthread_mutex_unlock(&ts->lock);
}

void sp__ts_lock(sp_pool *p) { ts_lock(p->ts); }

void sp__ts_unlock(sp_pool *p) { ts_unlock(p->ts); }

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
   on. Local churn with two magazines a thread seldom visits, and a thread counts only once it
   has settled (SP__TS_SETTLED_MAGS): so sustained traffic across the depot (producer/consumer)
   grows the magazines, short-lived threads do not. */
void sp__ts_depot_visit(sp_pool *p, sp__tcache *c) {
    sp__ts *ts = p->ts;
    uint64_t ops = atomic_load_explicit(&c->acquired, memory_order_relaxed) +
                   atomic_load_explicit(&c->released, memory_order_relaxed);
    bool settled = ops - c->ops_at_take >= (uint64_t)SP__TS_SETTLED_MAGS * ts->mag_first;
    bool frequent = ops - c->ops_at_visit < (uint64_t)SP__TS_FREQUENT_MAGS * ts->mag_size;
    c->ops_at_visit = ops;
    bool handoff = ts->last_visitor != NULL && ts->last_visitor != c;
    ts->last_visitor = c;
    if (!settled) return;
    if (!frequent) { /* a late visit: the magazines are large enough, the count starts over */
        ts->strikes = 0;
        return;
    }
    if (!handoff || ++ts->strikes < SP__TS_GROW_STRIKES) return;
    ts->strikes = 0;
    uint64_t limit = ts->mag_most;
    if (p->cfg.max && limit > p->cfg.max / SP__TS_GROW_MAX_SHARE) limit = p->cfg.max / SP__TS_GROW_MAX_SHARE;
    if ((uint64_t)ts->mag_size * 2u <= limit) ts->mag_size *= 2u;
}

void sp__ts_loose_push(sp_pool *p, uint32_t idx) { stack_set(p, p->ts->loose_n++, idx); }

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

/* Under the lock: the magazines of the caches whose threads exited go back to the depot. True
   when that brought free members back. */
bool sp__ts_orphans_collect(sp_pool *p) {
    bool any = false;
    for (sp__tcache *c = p->ts->caches; c; c = c->next) {
        /* (the flag first, with acquire: its thread's last writes to the magazines) */
        if (!atomic_load_explicit(&c->orphan, memory_order_acquire) || !c->loaded) continue;
        any = any || c->loaded->n > 0 || c->prev->n > 0;
        cache_flush(p, c);
    }
    return any;
}

/* ---- each thread's table --------------------------------------------------------------------- */

/* At the first thread-safe pool: the key whose destructor is thread exit, and fork's handlers
   (which a dlclose of a shared library that embeds spawnpool removes with it). */
static void fork_prepare(void);
static void fork_parent(void);
static void fork_child(void);
static void once_init(void) {
    g_key_made = pthread_key_create(&g_key, thread_exit) == 0;
    (void)pthread_atfork(fork_prepare, fork_parent, fork_child);
}

/* The thread's first call on this pool: a cache (an orphan's, with what its thread left in it,
   or a new one) with two magazines, in the thread's table at the pool's slot. NULL, with a line,
   when memory fails. */
SP__NOINLINE sp__tcache *sp__ts_cache_slow(sp_pool *p) {
    sp__ts *ts = p->ts;
    sp__tl_table *t = sp__tl;
    if (!t || ts->fast.slot >= t->cap) {
        uint32_t cap = t ? t->cap : 0u;
        uint32_t want = cap ? cap : 8u;
        while (want <= ts->fast.slot) want *= 2u;
        pthread_mutex_lock(&g_lock); /* the table is in the process's list while it moves */
        sp__tl_table *grown = (sp__tl_table *)malloc(sizeof *grown + (size_t)want * sizeof(sp__tl_entry));
        if (grown) {
            memset(grown, 0, sizeof *grown + (size_t)want * sizeof(sp__tl_entry));
            grown->cap = want;
            if (t) {
                memcpy(grown->e, t->e, (size_t)cap * sizeof(sp__tl_entry));
                table_unlist(t);
            }
            grown->next = g_tables;
            if (g_tables) g_tables->prev = grown;
            g_tables = grown;
            if (g_key_made) (void)pthread_setspecific(g_key, grown);
        }
        pthread_mutex_unlock(&g_lock);
        if (!grown) {
            sp__log(p, SP__MSG_NOMEM, "the thread's table of caches");
            return NULL;
        }
        free(t);
        t = sp__tl = grown;
    }
    sp__ts_lock(p);
    sp__tcache *c = NULL;
    for (sp__tcache *o = ts->caches; o && !c; o = o->next)
        if (atomic_load_explicit(&o->orphan, memory_order_acquire)) c = o;
    bool fresh = !c;
    if (fresh) {
        c = (sp__tcache *)pool_alloc(p, sizeof *c, 64u);
        if (c) {
            memset(c, 0, sizeof *c);
            atomic_init(&c->acquired, 0u);
            atomic_init(&c->released, 0u);
            atomic_init(&c->inside, 0);
            atomic_init(&c->orphan, false);
            p->mem.bytes += sizeof *c;
        }
    }
    if (c && !c->loaded) {
        c->loaded = sp__ts_mag_get(p);
        c->prev = c->loaded ? sp__ts_mag_get(p) : NULL;
        if (!c->prev) {
            if (c->loaded) sp__ts_mag_put_empty(p, c->loaded);
            c->loaded = NULL;
            if (fresh) {
                pool_free(p, c, sizeof *c);
                p->mem.bytes -= sizeof *c;
            }
            c = NULL; /* an orphan stays one */
        }
    }
    if (c && fresh) {
        c->next = ts->caches;
        ts->caches = c;
    }
    if (c) {
        c->ops_at_take = c->ops_at_visit = atomic_load_explicit(&c->acquired, memory_order_relaxed) +
                                           atomic_load_explicit(&c->released, memory_order_relaxed);
        atomic_store_explicit(&c->orphan, false, memory_order_relaxed);
    }
    sp__ts_unlock(p);
    if (!c) return NULL;
    t->e[ts->fast.slot].id = ts->fast.id;
    t->e[ts->fast.slot].cache = c;
    return c;
}

/* ---- fork() and unloading ---------------------------------------------------------------- */

/* fork()'s child: the threads that owned the other caches are gone, and any of them may have
   been in the middle of a call (between a magazine's count and its entry, a word and a counter).
   So every magazine's contents are dropped, the free members are found again from the words (as
   the loose ones), and the counters follow the words: what those threads held stays leased (the
   child may release it), a hook one of them was running on a member ends there (the member
   stays leased). O(slots) for a pool that another thread used; nothing for one that only the
   forking thread did. The allocator is not called (the child may not have what it needs):
   magazines go to the depot's empty list whatever their size. */
static void child_repair(sp_pool *p) {
    sp__ts *ts = p->ts;
    const sp__tcache *own = sp__ts_cache_found(&ts->fast);
    bool others = false;
    for (const sp__tcache *c = ts->caches; c; c = c->next)
        others = others || (c != own && !atomic_load_explicit(&c->orphan, memory_order_relaxed));
    if (!others) return;
    for (sp__tcache *c = ts->caches; c; c = c->next) {
        if (c != own) {
            atomic_store_explicit(&c->orphan, true, memory_order_relaxed);
            atomic_store_explicit(&c->inside, 0, memory_order_relaxed);
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
    ts->loose_n = 0;
    uint64_t leased = 0;
    for (uint32_t k = 0; k < rec_count(p); k++) {
        sp__span *s = rec_span(&p->mem.recs[k]);
        for (uint32_t i = 0; s && i < span_count(s); i++) {
            uint32_t w = wload(&s->words[i]);
            if ((w & SP__BUSY) && !sp__ts_in_member_hook(p, item_in(p, s, s->first + i)))
                wstore(&s->words[i], w &= ~(uint32_t)(SP__BUSY | SP__RELEASING));
            if ((w & (SP__STATE_MASK | SP__BUSY)) == SP__FREE) sp__ts_loose_push(p, s->first + i);
            leased += word_state(w) == SP__LEASED;
        }
    }
    uint64_t acquired = ts->acquired;
    for (sp__tcache *c = ts->caches; c; c = c->next) {
        acquired += atomic_load_explicit(&c->acquired, memory_order_relaxed);
        atomic_store_explicit(&c->acquired, 0u, memory_order_relaxed);
        atomic_store_explicit(&c->released, 0u, memory_order_relaxed);
    }
    if (acquired < leased + p->counters.leased_disposed) acquired = leased + p->counters.leased_disposed;
    ts->acquired = acquired;
    ts->released = acquired - leased - p->counters.leased_disposed;
    if (leased > ts->peak) ts->peak = (size_t)leased;
}

/* Every lock, or none (then it tries again): trylocks under g_lock, so that it never waits
   while it holds one. The pools' locks first, then (once all are held) the leaves'. */
static bool fork_lock_all(void) {
    uint32_t s = 0;
    while (s < g_slot_count && (!g_slots[s].id || ts_trylock(g_slots[s].pool->ts))) s++;
    sp__leaf_lock *leaf = s < g_slot_count ? NULL : g_leaves;
    while (leaf && pthread_mutex_trylock(&leaf->m) == 0) leaf = leaf->next;
    if (s == g_slot_count && !leaf) return true;
    for (sp__leaf_lock *l = s < g_slot_count ? NULL : g_leaves; l != leaf; l = l->next) pthread_mutex_unlock(&l->m);
    for (uint32_t i = 0; i < s; i++)
        if (g_slots[i].id) ts_unlock(g_slots[i].pool->ts);
    return false;
}

static void fork_prepare(void) {
    for (;;) {
        pthread_mutex_lock(&g_lock);
        if (fork_lock_all()) break;
        pthread_mutex_unlock(&g_lock);
        sched_yield();
    }
    sp__tags_lock(); /* spinlocks whose holders never wait: a few instructions */
    sp__source_fork_lock();
}

static void fork_parent(void) {
    sp__source_fork_unlock();
    sp__tags_unlock();
    for (sp__leaf_lock *l = g_leaves; l; l = l->next) pthread_mutex_unlock(&l->m);
    for (uint32_t s = 0; s < g_slot_count; s++)
        if (g_slots[s].id) ts_unlock(g_slots[s].pool->ts);
    pthread_mutex_unlock(&g_lock);
}

static void fork_child(void) {
    sp__source_fork_unlock();
    sp__tags_unlock();
    for (sp__leaf_lock *l = g_leaves; l; l = l->next) pthread_mutex_unlock(&l->m);
    for (sp__tl_table *t = g_tables, *next; t; t = next) { /* the other threads' tables */
        next = t->next;
        if (t == sp__tl) continue;
        table_unlist(t);
        free(t);
    }
    for (uint32_t s = 0; s < g_slot_count; s++) {
        if (!g_slots[s].id) continue;
        child_repair(g_slots[s].pool);
        ts_unlock(g_slots[s].pool->ts);
    }
    pthread_mutex_unlock(&g_lock);
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
    bool live = false;
    for (uint32_t s = 0; s < g_slot_count && !live; s++) live = g_slots[s].id != 0;
    while (!live && g_tables) {
        sp__tl_table *t = g_tables;
        table_unlist(t);
        if (t == sp__tl) sp__tl = NULL;
        free(t);
    }
    if (!live) { /* and the table of live pools: the next pool starts it again */
        free(g_slots);
        g_slots = NULL;
        g_slot_count = g_slot_cap = 0;
        g_free_slot = UINT32_MAX;
    }
    pthread_mutex_unlock(&g_lock);
}

/* ---- creation and destruction ------------------------------------------------------------- */

/* The magazines' sizes, once: magazine_size and its 16-fold growth, each within the byte bound
   (a thread's two magazines of stride-byte members hold at most thread_cache_bytes, or one
   member each when that is more). Only the sizes change: the per-call paths test m->cap. */
static void magazines_size(sp__ts *ts, const sp_desc *d, size_t stride) {
    size_t bytes = d->thread_cache_bytes ? d->thread_cache_bytes : SP__TS_DEFAULT_CACHE_BYTES;
    size_t by_bytes = bytes / 2u / stride;
    uint32_t first = d->magazine_size ? (uint32_t)d->magazine_size : SP__TS_DEFAULT_MAGAZINE;
    uint64_t most = (uint64_t)first * SP__TS_GROW_FACTOR;
    if (most > SP__TS_MAX_MAGAZINE) most = SP__TS_MAX_MAGAZINE;
    if (most > by_bytes) most = by_bytes > 0 ? by_bytes : 1u;
    ts->mag_most = (uint32_t)most;
    ts->mag_first = ts->mag_size = first < ts->mag_most ? first : ts->mag_most;
}

/* ---- the fast paths' view (sp__ts_fast) -------------------------------------------------- */

void sp__ts_routes_update(sp_pool *p) {
    sp__ts *ts = p->ts;
    const sp__span *one = p->mem.live == 1u ? top_span(p) : NULL;
    uintptr_t one_items = 0u, one_words = 0u;
    for (uint32_t k = 0; k < SP__SPAN_RECS; k++) {
        const sp__span *s = k < rec_count(p) ? rec_span(&p->mem.recs[k]) : NULL;
        uintptr_t items = s ? (uintptr_t)s->items - (uintptr_t)s->first * p->hot.stride : 0u;
        uintptr_t words = s ? (uintptr_t)s->words - (uintptr_t)s->first * sizeof *s->words : 0u;
        atomic_store_explicit(&ts->fast.item_base[k], items, memory_order_relaxed);
        atomic_store_explicit(&ts->fast.word_base[k], words, memory_order_relaxed);
        if (s && s == one) {
            one_items = items;
            one_words = words;
        }
    }
    /* With several spans the bases stay those of the last one span: a thread that read that
       span before the growth, and holds one of its slot indices, may read them after it. A new
       one span's bases are stored before the span (release), which an acquisition loads with
       acquire. */
    if (one) {
        atomic_store_explicit(&ts->fast.one_item_base, one_items, memory_order_relaxed);
        atomic_store_explicit(&ts->fast.one_word_base, one_words, memory_order_relaxed);
    }
    atomic_store_explicit(&ts->fast.one_span, one, memory_order_release);
    const sp__span *top = top_span(p);
    sp__owner_near near = top ? sp__owner_near_of(atomic_load_explicit(&p->mem.owners, memory_order_relaxed), top->items) : 0u;
    atomic_store_explicit(&ts->fast.near, near, memory_order_relaxed);
}

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
    atomic_init(&ts->holder, (uintptr_t)0);
    (void)pthread_once(&g_once, once_init);
    if (pthread_mutex_init(&ts->lock, NULL) != 0) {
        pool_free(p, ts, sizeof *ts);
        sp__log(p, SP__MSG_NOMEM, "pool lock");
        return false;
    }
    magazines_size(ts, d, p->hot.stride);
    p->ts = ts;
    /* A thread-safe pool takes its tag now: other threads read it without the lock. */
    pthread_mutex_lock(&g_lock);
    bool slotted = slot_take(p);
    pthread_mutex_unlock(&g_lock);
    if (!slotted || !sp__tag_take(p)) {
        if (slotted) {
            pthread_mutex_lock(&g_lock);
            slot_give(ts->fast.slot);
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
    p->hot.top_wide = 0;
    p->hot.plain_release = false;
    p->hot.top_items = 0;
    p->hot.top_first = 0;
    sp__ts_routes_update(p);
    return true;
}

/* The start of sp_pool_destroy: refused inside one of the pool's hooks; else the pool's slot
   goes (exiting threads stop touching its caches: they check it under g_lock) and a window
   opens for good (sp__ts_free closes it). */
bool sp__ts_destroy_begin(sp_pool *p) {
    sp__ts_lock(p);
    bool refused = p->act.hook_depth > 0 || p->act.destroying || sp__ts_in_hook(p);
    sp__ts_unlock(p);
    if (refused) {
        sp__log(p, SP__MSG_IN_HOOK, "sp_pool_destroy");
        return false;
    }
    pthread_mutex_lock(&g_lock);
    slot_give(p->ts->fast.slot);
    pthread_mutex_unlock(&g_lock);
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
    while (ts->window-- > 0) sp__ts_unlock(p);
    pthread_mutex_destroy(&ts->lock);
    p->ts = NULL;
    pool_free(p, ts, sizeof *ts);
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
void sp__ts_routes_update(sp_pool *p) { (void)p; }

#endif
