/* SPDX-License-Identifier: Zlib */
/* sizes.c -- size classes (include/spawnpool_sizes.h): a set of ordinary pools, one a class,
   and the three lookups that make them one allocator:
   - size -> class: a byte table indexed by the size's step, then at most the classes inside
     one step (none with the default table);
   - pointer -> class, O(1): the shared source's map of owners names the span the member lies
     in, the span its pool; the pool is one of the set's when the set is its owner, and its
     class is the one of its item size (of another pool, only the span's header and the
     pool's owner are read: live memory of the library's, which the map names);
   - pointer -> class elsewhere (spans from an allocator): the classes' span ranges, kept in
     order through the interface a pool tells its owner about its ranges (sp__pool_owner), and
     a binary search, under a leaf lock in a thread-safe set.
   Everything else is the class pools' own: their checks, lines, stats, handles and threads. */
#include "pool_internal.h"
#include "threads.h"

#include <spawnpool_sizes.h>

#include <stdio.h>

#define SIZES_DEFAULT_NAME "sizes"
#define SIZES_STEPS_MAX 4096u /* entries of the size -> class table, at most (plus one) */

typedef struct sizes_range {
    uintptr_t lo, hi; /* [lo, hi): a span's members */
    uint32_t cls;
} sizes_range;

struct sp_sizes {
    /* size -> class */
    size_t largest;
    uint32_t step_shift;
    size_t step_mask;
    unsigned char *step_class; /* entry b: the smallest class above (b - 1) << step_shift */
    size_t steps;
    uint32_t count;
    size_t class_size[SP_SIZES_MAX_CLASSES];
    sp_pool *pools[SP_SIZES_MAX_CLASSES];
    /* pointer -> class through the shared source */
    _Atomic(const sp__owner_map *) map; /* the shared source's, once a class took a span of it */
    _Atomic sp__owner_near near; /* its shortcut to the chunk of the newest such span */
    /* pointer -> class elsewhere */
    sizes_range *ranges;
    size_t range_count, range_cap;
    bool threaded;
#if SP__HAVE_THREADS
    sp__leaf_lock lock;
#endif
    sp_allocator allocator; /* for the set's tables */
    sp_logger logger;
    size_t own_bytes; /* the set's bookkeeping */
    char name[SP__NAME_CAP];
};

/* The default table: two classes a doubling, 16 B to 8 KiB. */
static const size_t default_classes[] = {16,  32,   48,   64,   96,   128,  192,  256,  384,
                                         512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192};

/* ---- small helpers ------------------------------------------------------------------------- */

static void ranges_lock(const sp_sizes *s) {
#if SP__HAVE_THREADS
    if (s->threaded) pthread_mutex_lock(&((sp_sizes *)(uintptr_t)s)->lock.m);
#else
    (void)s;
#endif
}

static void ranges_unlock(const sp_sizes *s) {
#if SP__HAVE_THREADS
    if (s->threaded) pthread_mutex_unlock(&((sp_sizes *)(uintptr_t)s)->lock.m);
#else
    (void)s;
#endif
}

/* True (after one line through the default logger: there is no other) for a NULL set. */
static SP__NOINLINE bool null_logged(const char *call) {
    sp__log_to(NULL, SIZES_DEFAULT_NAME, SP__MSG_REG_NULL_ARG, call, "size-class set");
    return true;
}
#define null_sizes(s, call) (SP__UNLIKELY(!(s)) && null_logged(call))

static SP__NOINLINE void *size_refused(const sp_sizes *s, const char *call, size_t size) {
    if (size == 0)
        sp__log_to(&s->logger, s->name, SP__MSG_SIZES_ZERO, call);
    else
        sp__log_to(&s->logger, s->name, SP__MSG_SIZES_TOO_LARGE, call, size, s->largest);
    return NULL;
}

static SP__NOINLINE void foreign(const sp_sizes *s, const char *call, const void *item) {
    sp__log_to(&s->logger, s->name, SP__MSG_SIZES_FOREIGN, call, item);
}

/* The smallest class of at least size bytes (0 < size <= largest). */
static inline uint32_t class_for(const sp_sizes *s, size_t size) {
    uint32_t k = s->step_class[(size + s->step_mask) >> s->step_shift];
    while (size > s->class_size[k]) k++;
    return k;
}

/* The class of pool p, or SP__NIL when p is not one of the set's: its owner is the set, and its
   item size is its class's size. */
static inline uint32_t class_of_pool_in(const sp_sizes *s, const sp_pool *p) {
    if (p->owner != s) return SP__NIL;
    return class_for(s, p->cfg.item_size);
}

/* The first range with lo above a (ranges sorted by lo). */
static size_t ranges_upper(const sp_sizes *s, uintptr_t a) {
    size_t lo = 0, hi = s->range_count;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2u;
        if (s->ranges[mid].lo <= a)
            lo = mid + 1u;
        else
            hi = mid;
    }
    return lo;
}

static SP__NOINLINE uint32_t class_by_range(const sp_sizes *s, const void *item) {
    uintptr_t a = (uintptr_t)item;
    ranges_lock(s);
    size_t at = ranges_upper(s, a);
    uint32_t cls = at > 0 && a < s->ranges[at - 1u].hi ? s->ranges[at - 1u].cls : SP__NIL;
    ranges_unlock(s);
    return cls;
}

/* The span of the shared source that item lies in, or NULL: through the set's shortcut when
   item lies in its chunk (one load), else through the map. */
static inline const sp__span *span_near(const sp_sizes *s, const void *item) {
    return span_by_near(atomic_load_explicit(&s->near, memory_order_relaxed),
                        atomic_load_explicit(&s->map, memory_order_acquire), item);
}

/* The class whose spans item lies in, or SP__NIL (the class pool then checks the member). */
static inline uint32_t class_of(const sp_sizes *s, const void *item) {
    const sp__span *span = span_near(s, item);
    uint32_t cls = span ? class_of_pool_in(s, span->pool) : SP__NIL;
    return SP__LIKELY(cls != SP__NIL) ? cls : class_by_range(s, item);
}

/* ---- the class pools' plain paths -----------------------------------------------------------
   A release build takes a plain pool's plain acquisition and release here, inline, as
   sp_acquire and sp_release would after their own tests: the release already knows the span
   from the map, so it does not look for it again. Anything else (a debug library's checks, a
   thread-safe pool, a member that is not leased plainly, a pool with no free member) goes
   through the pool's own calls. */
static inline void *class_acquire(sp_pool *p) {
#if !SP_DEBUG
    /* (a thread-safe pool's plain_floor is UINT32_MAX and its plain_release false, for good) */
    uint32_t top = p->hot.free_top;
    if (SP__LIKELY(top > p->hot.plain_floor)) return sp__acquire_plain(p, entry_read(p->hot.stack + top - SP__ENTRY));
#endif
    return sp_acquire(p);
}

static inline sp_result class_release(sp_pool *p, sp__span *span, void *item) {
#if !SP_DEBUG
    if (SP__LIKELY(p->hot.plain_release)) {
        uint64_t q = member_number(p, (uintptr_t)span->items, (uintptr_t)item);
        if (SP__LIKELY(q < span_count(span)) && plain_take(p, span->first + (uint32_t)q)) {
            stack_push(p, span->first + (uint32_t)q);
            return SP_OK;
        }
    }
    if (p->ts) return sp__ts_release_in(p, span, item);
#else
    (void)span;
#endif
    return sp_release(p, item);
}

/* ---- what the class pools tell the set (sp__pool_owner) -------------------------------------- */

/* (a pool that takes a span while it is being created is the class being created) */
static uint32_t class_of_pool(const sp_sizes *s, const sp_pool *pool) {
    for (uint32_t k = 0; k < s->count; k++)
        if (s->pools[k] == pool) return k;
    return s->count;
}

static sp_result range_added(void *owner, sp_pool *pool, uintptr_t lo, uintptr_t hi) {
    sp_sizes *s = (sp_sizes *)owner;
    /* A span from the shared source: its map names the span from now on. */
    if (pool->mem.source && !pool->mem.own_source) {
        const sp__owner_map *m = sp__source_map(pool->mem.source);
        if (!atomic_load_explicit(&s->map, memory_order_relaxed)) atomic_store_explicit(&s->map, m, memory_order_release);
        atomic_store_explicit(&s->near, sp__owner_near_of(m, (const void *)lo), memory_order_relaxed);
    }
    uint32_t cls = class_of_pool(s, pool);
    ranges_lock(s);
    if (s->range_count == s->range_cap) {
        size_t cap = s->range_cap ? s->range_cap * 2u : 32u;
        sizes_range *grown = (sizes_range *)sp__alloc(&s->allocator, cap * sizeof *grown, _Alignof(sizes_range));
        if (!grown) {
            ranges_unlock(s);
            return SP_ERR_NOMEM;
        }
        if (s->range_count) memcpy(grown, s->ranges, s->range_count * sizeof *grown);
        if (s->ranges) s->allocator.free(s->ranges, s->range_cap * sizeof *s->ranges, s->allocator.user);
        s->own_bytes += (cap - s->range_cap) * sizeof *grown;
        s->ranges = grown;
        s->range_cap = cap;
    }
    size_t at = ranges_upper(s, lo);
    memmove(s->ranges + at + 1, s->ranges + at, (s->range_count - at) * sizeof *s->ranges);
    s->ranges[at] = (sizes_range){lo, hi, cls};
    s->range_count++;
    ranges_unlock(s);
    return SP_OK;
}

static void range_removed(void *owner, uintptr_t lo) {
    sp_sizes *s = (sp_sizes *)owner;
    ranges_lock(s);
    size_t at = ranges_upper(s, lo);
    if (at > 0 && s->ranges[at - 1u].lo == lo) {
        at--;
        memmove(s->ranges + at, s->ranges + at + 1, (s->range_count - at - 1u) * sizeof *s->ranges);
        s->range_count--;
    }
    ranges_unlock(s);
}

/* Tags are read from the class pools when a handle is resolved. */
static sp_result tag_taken(void *owner, sp_pool *pool, uint32_t tag) {
    (void)owner, (void)pool, (void)tag;
    return SP_OK;
}

static void pool_gone(void *owner, const sp_pool *pool) { (void)owner, (void)pool; }

/* For a class pool's line about a member of another class. */
static const sp_pool *member_of(void *owner, const void *item) {
    const sp_sizes *s = (const sp_sizes *)owner;
    uint32_t cls = class_of(s, item);
    return cls != SP__NIL && sp__pool_has_member(s->pools[cls], item) ? s->pools[cls] : NULL;
}

static const sp__pool_owner sizes_as_owner = {range_added, range_removed, tag_taken, pool_gone, member_of};

/* ---- creation ------------------------------------------------------------------------------- */

/* Why desc cannot make a set, or NULL. */
static const char *desc_refused(const sp_sizes_desc *d) {
    if (!d->classes && d->class_count) return "class_count without classes";
    if (d->classes && d->class_count == 0) return "classes without class_count";
    if (d->class_count > SP_SIZES_MAX_CLASSES) return "more classes than SP_SIZES_MAX_CLASSES (64)";
    for (size_t i = 0; i < d->class_count; i++) {
        if (d->classes[i] == 0) return "a class of 0 bytes";
        if (d->classes[i] > SP_SIZES_CLASS_LIMIT) return "a class above SP_SIZES_CLASS_LIMIT (1 GiB)";
        if (i > 0 && d->classes[i] <= d->classes[i - 1u]) return "classes not strictly ascending";
    }
    if (d->overflow == SP_OVERFLOW_RECLAIM)
        return "overflow RECLAIM (a reclaimed buffer would change owner under its user)";
    sp__vm unused;
    return sp__allocator_vm(&d->allocator, &unused);
}

/* The size -> class table. */
static bool steps_build(sp_sizes *s) {
    uint32_t shift = 3;
    while ((s->largest >> shift) > SIZES_STEPS_MAX) shift++;
    s->step_shift = shift;
    s->step_mask = ((size_t)1 << shift) - 1u;
    s->steps = ((s->largest + s->step_mask) >> shift) + 1u;
    s->step_class = (unsigned char *)sp__alloc(&s->allocator, s->steps, 16);
    if (!s->step_class) return false;
    s->own_bytes += s->steps;
    uint32_t k = 0;
    for (size_t b = 0; b < s->steps; b++) {
        size_t lowest = b ? ((b - 1u) << shift) + 1u : 1u; /* the smallest size of step b */
        while (k + 1u < s->count && s->class_size[k] < lowest) k++;
        s->step_class[b] = (unsigned char)k;
    }
    return true;
}

static void sizes_free(sp_sizes *s) {
    for (uint32_t k = 0; k < s->count; k++) sp_pool_destroy(s->pools[k]);
    sp_allocator a = s->allocator;
    if (s->step_class) a.free(s->step_class, s->steps, a.user);
    if (s->ranges) a.free(s->ranges, s->range_cap * sizeof *s->ranges, a.user);
#if SP__HAVE_THREADS
    if (s->threaded) sp__leaf_fini(&s->lock);
#endif
    a.free(s, sizeof *s, a.user);
}

/* Creates class k's pool, known to the set from before its first span. */
static bool class_create(sp_sizes *s, const sp_sizes_desc *d, uint32_t k) {
    char name[SP__NAME_CAP];
    snprintf(name, sizeof name, "%.26s:%zu", s->name, s->class_size[k]); /* (fits in any case) */
    sp_desc pd;
    memset(&pd, 0, sizeof pd);
    pd.name = name;
    pd.item_size = s->class_size[k];
    pd.item_align = d->item_align;
    pd.max = d->max;
    pd.overflow = d->overflow;
    pd.order = SP_ORDER_MEMORY;
    pd.chunk_items = d->chunk_items;
    pd.allocator = d->allocator;
    pd.logger = d->logger;
    pd.threads = d->threads;
    pd.magazine_size = d->magazine_size;
    pd.thread_cache_bytes = d->thread_cache_bytes;
    s->pools[k] = sp__pool_create_in(&pd, &sizes_as_owner, s, NULL);
    if (!s->pools[k]) return false;
    return true;
}

sp_sizes *sp_sizes_create(const sp_sizes_desc *desc) {
    if (!desc) {
        sp__log_to(NULL, SIZES_DEFAULT_NAME, SP__MSG_NULL_DESC, "sp_sizes_create");
        return NULL;
    }
    const char *name = desc->name ? desc->name : SIZES_DEFAULT_NAME;
    const char *why = desc_refused(desc);
    if (why) {
        sp__log_to(&desc->logger, name, SP__MSG_BAD_DESC, "sp_sizes_create", why);
        return NULL;
    }
    sp_allocator a = sp__allocator_or_default(&desc->allocator);
    sp_sizes *s = (sp_sizes *)sp__alloc(&a, sizeof *s, _Alignof(sp_sizes));
    if (!s) {
        sp__log_to(&desc->logger, name, SP__MSG_NOMEM, "size-class set");
        return NULL;
    }
    memset(s, 0, sizeof *s);
    s->allocator = a;
    s->logger = desc->logger;
    s->own_bytes = sizeof *s;
    snprintf(s->name, sizeof s->name, "%s", name);
    const size_t *classes = desc->classes ? desc->classes : default_classes;
    s->count = (uint32_t)(desc->classes ? desc->class_count : sizeof default_classes / sizeof *default_classes);
    for (uint32_t k = 0; k < s->count; k++) s->class_size[k] = classes[k];
    s->largest = s->class_size[s->count - 1u];
#if SP__HAVE_THREADS
    if (desc->threads == SP_THREADS_SAFE) {
        if (!sp__leaf_init(&s->lock)) {
            sp__log_to(&s->logger, s->name, SP__MSG_NOMEM, "the set's lock");
            a.free(s, sizeof *s, a.user);
            return NULL;
        }
        s->threaded = true;
    }
#endif
    bool steps = steps_build(s);
    uint32_t wanted = s->count;
    s->count = 0; /* the classes created so far, which sizes_free destroys */
    if (!steps) {
        sp__log_to(&s->logger, s->name, SP__MSG_NOMEM, "the set's tables");
        sizes_free(s);
        return NULL;
    }
    for (; s->count < wanted; s->count++) {
        if (!class_create(s, desc, s->count)) { /* the class pool logged why */
            sizes_free(s);
            return NULL;
        }
    }
    return s;
}

/* Refused as a whole while a callback of a class pool runs (a class pool would refuse its own
   destroy, and the call that logs is still using the set). */
void sp_sizes_destroy(sp_sizes *sizes) {
    if (!sizes) return;
    for (uint32_t k = 0; k < sizes->count; k++)
        if (sp__pool_in_callback(sizes->pools[k])) {
            sp__log_to(&sizes->logger, sizes->name, SP__MSG_SIZES_IN_CALLBACK, sp_pool_name(sizes->pools[k]));
            return;
        }
    sizes_free(sizes);
}

/* ---- acquire / release / resize ---------------------------------------------------------------- */

void *sp_sizes_acquire(sp_sizes *sizes, size_t size) {
    if (SP__UNLIKELY(!sizes)) { null_logged("sp_sizes_acquire"); return NULL; }
    if (SP__UNLIKELY(size - 1u >= sizes->largest)) return size_refused(sizes, "sp_sizes_acquire", size);
    return class_acquire(sizes->pools[class_for(sizes, size)]);
}

/* A library built with SP_DEBUG=0 records no sites: its _at functions are the plain ones. */
void *sp_sizes_acquire_at(sp_sizes *sizes, size_t size, const char *file, int line) {
#if !SP_DEBUG
    (void)file, (void)line;
    return sp_sizes_acquire(sizes, size);
#endif
    if (SP__UNLIKELY(!sizes)) { null_logged("sp_sizes_acquire"); return NULL; }
    if (SP__UNLIKELY(size - 1u >= sizes->largest)) return size_refused(sizes, "sp_sizes_acquire", size);
    return sp_acquire_at(sizes->pools[class_for(sizes, size)], file, line);
}

void *sp_sizes_acquire_zeroed(sp_sizes *sizes, size_t size) { return sp_sizes_acquire_zeroed_at(sizes, size, NULL, 0); }

void *sp_sizes_acquire_zeroed_at(sp_sizes *sizes, size_t size, const char *file, int line) {
    if (SP__UNLIKELY(!sizes)) { null_logged("sp_sizes_acquire_zeroed"); return NULL; }
    if (SP__UNLIKELY(size - 1u >= sizes->largest)) return size_refused(sizes, "sp_sizes_acquire_zeroed", size);
    return sp_acquire_zeroed_at(sizes->pools[class_for(sizes, size)], file, line);
}

/* sp_sizes_release away from its common case: a NULL set or item, spans from an allocator, a
   foreign pointer (out of line, so that the common case keeps no frame). */
static SP__NOINLINE sp_result release_elsewhere(sp_sizes *sizes, void *item) {
    if (!sizes) {
        null_logged("sp_sizes_release");
        return SP_ERR_INVALID;
    }
    if (!item) return SP_OK;
    uint32_t cls = class_by_range(sizes, item);
    if (cls == SP__NIL) {
        foreign(sizes, "sp_sizes_release", item);
        return SP_ERR_FOREIGN;
    }
    return sp_release(sizes->pools[cls], item);
}

sp_result sp_sizes_release(sp_sizes *sizes, void *item) {
    if (SP__UNLIKELY(!sizes || !item)) return release_elsewhere(sizes, item);
    const sp__span *span = span_near(sizes, item);
    sp_pool *p = span ? span->pool : NULL;
    if (SP__UNLIKELY(!p || p->owner != sizes)) return release_elsewhere(sizes, item);
    return class_release(p, (sp__span *)(uintptr_t)span, item);
}

sp_result sp_sizes_release_at(sp_sizes *sizes, void *item, const char *file, int line) {
#if !SP_DEBUG
    (void)file, (void)line;
    return sp_sizes_release(sizes, item);
#endif
    if (SP__UNLIKELY(!sizes)) { null_logged("sp_sizes_release"); return SP_ERR_INVALID; }
    if (SP__UNLIKELY(!item)) return SP_OK;
    uint32_t cls = class_of(sizes, item);
    if (SP__UNLIKELY(cls == SP__NIL)) {
        foreign(sizes, "sp_sizes_release", item);
        return SP_ERR_FOREIGN;
    }
    return sp_release_at(sizes->pools[cls], item, file, line);
}

void *sp_sizes_resize(sp_sizes *sizes, void *item, size_t size) { return sp_sizes_resize_at(sizes, item, size, NULL, 0); }

void *sp_sizes_resize_at(sp_sizes *sizes, void *item, size_t size, const char *file, int line) {
    if (null_sizes(sizes, "sp_sizes_resize")) return NULL;
    if (!item) return sp_sizes_acquire_at(sizes, size, file, line);
    if (size - 1u >= sizes->largest) return size_refused(sizes, "sp_sizes_resize", size);
    uint32_t from = class_of(sizes, item);
    if (from == SP__NIL || !sp__pool_has_member(sizes->pools[from], item)) {
        foreign(sizes, "sp_sizes_resize", item);
        return NULL;
    }
    sp_pool *old = sizes->pools[from];
    if (!sp_is_leased(old, item)) {
        sp__log_to(&sizes->logger, sizes->name, SP__MSG_SIZES_NOT_LEASED, "sp_sizes_resize", item);
        return NULL;
    }
    uint32_t to = class_for(sizes, size);
    if (to == from) return item;
    void *moved = sp_acquire_at(sizes->pools[to], file, line);
    if (!moved) return NULL;
    size_t keep = sizes->class_size[from] < size ? sizes->class_size[from] : size;
    memcpy(moved, item, keep);
    sp_release_at(old, item, file, line);
    return moved;
}

size_t sp_sizes_usable_size(const sp_sizes *sizes, const void *item) {
    if (null_sizes(sizes, "sp_sizes_usable_size") || !item) return 0;
    uint32_t cls = class_of(sizes, item);
    if (cls == SP__NIL || !sp__pool_has_member(sizes->pools[cls], item)) {
        foreign(sizes, "sp_sizes_usable_size", item);
        return 0;
    }
    return sizes->class_size[cls];
}

/* ---- handles ------------------------------------------------------------------------------------ */

sp_handle sp_sizes_handle_of(const sp_sizes *sizes, const void *item) {
    if (null_sizes(sizes, "sp_sizes_handle_of") || !item) return sp_handle_null();
    uint32_t cls = class_of(sizes, item);
    if (cls == SP__NIL || !sp__pool_has_member(sizes->pools[cls], item)) {
        foreign(sizes, "sp_sizes_handle_of", item);
        return sp_handle_null();
    }
    return sp_handle_of(sizes->pools[cls], item);
}

void *sp_sizes_resolve(const sp_sizes *sizes, sp_handle handle) {
    if (null_sizes(sizes, "sp_sizes_resolve") || sp_handle_is_null(handle)) return NULL;
    uint32_t want = sp__handle_tag(handle.id), tag;
    for (uint32_t k = 0; k < sizes->count; k++)
        if (sp__pool_tag(sizes->pools[k], &tag) && tag == want) return sp_resolve(sizes->pools[k], handle);
    return NULL;
}

/* ---- classes and stats --------------------------------------------------------------------------- */

size_t sp_sizes_class_count(const sp_sizes *sizes) { return null_sizes(sizes, "sp_sizes_class_count") ? 0 : sizes->count; }

size_t sp_sizes_class_size(const sp_sizes *sizes, size_t class_index) {
    if (null_sizes(sizes, "sp_sizes_class_size")) return 0;
    return class_index < sizes->count ? sizes->class_size[class_index] : 0;
}

sp_pool *sp_sizes_pool(const sp_sizes *sizes, size_t class_index) {
    if (null_sizes(sizes, "sp_sizes_pool")) return NULL;
    return class_index < sizes->count ? sizes->pools[class_index] : NULL;
}

void sp_sizes_stats_get(const sp_sizes *sizes, size_t class_index, sp_stats *out) {
    if (!out) return;
    memset(out, 0, sizeof *out);
    if (null_sizes(sizes, "sp_sizes_stats_get") || class_index >= sizes->count) return;
    sp_stats_get(sizes->pools[class_index], out);
}

void sp_sizes_stats_total(const sp_sizes *sizes, sp_stats *out) {
    if (!out) return;
    memset(out, 0, sizeof *out);
    if (null_sizes(sizes, "sp_sizes_stats_total")) return;
    bool bounded = true;
    for (uint32_t k = 0; k < sizes->count; k++) {
        sp_stats c;
        sp_stats_get(sizes->pools[k], &c);
        out->size += c.size;
        out->leased += c.leased;
        out->free += c.free;
        out->max += c.max;
        bounded = bounded && c.max != 0;
        out->peak_leased += c.peak_leased;
        out->bytes += c.bytes;
        out->created += c.created;
        out->disposed += c.disposed;
        out->acquired += c.acquired;
        out->released += c.released;
        out->reclaimed += c.reclaimed;
        out->dropped += c.dropped;
        out->grown_past_max += c.grown_past_max;
        out->bytes_reserved += c.bytes_reserved;
    }
    if (!bounded) out->max = 0;
    ranges_lock(sizes);
    out->bytes += sizes->own_bytes;
    ranges_unlock(sizes);
}
