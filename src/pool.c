/* SPDX-License-Identifier: Zlib */
/* pool.c -- Pool lifecycle: what a descriptor means (layout_of), creation (from the allocator
   or in a fixed buffer), teardown (sp_clear, sp_pool_destroy: acquisitions refused until they
   end), sp_prewarm, sp_trim, the settings that can change (overflow, max), and the pool's log
   lines.

   The pool's files, one per section of the header: pool.c (lifecycle), members.c (where
   members live), lease.c (acquire / release), handles.c, iterate.c, stats.c; what they share is
   in pool_internal.h. Thread-safe pools add a layer (threads.h). */
#include "pool_internal.h"
#include "threads.h"

#include <stdarg.h>

/* ---- log lines ------------------------------------------------------------------------------
   The logger is a callback of the pool like its hooks, and it runs in the middle of operations
   (a GROW warning between building a member and handing it out, the leak line at the start of
   sp_pool_destroy): for as long as it runs it counts as a hook, so that destroying, clearing or
   trimming the pool from it is refused instead of freeing the pool under the operation. */
static void pool_vlog(const sp_pool *pool, int level, sp__msg msg, va_list ap) {
    sp_pool *p = (sp_pool *)(uintptr_t)pool; /* pools are never const objects, only views */
    sp__hook_frame f;
    bool threaded = p->ts && !sp__ts_windowed(p);
    if (threaded)
        sp__ts_hook_enter(&f, p, NULL);
    else
        p->act.hook_depth++;
    sp__vlog_to(&p->cfg.logger, p->name, level, msg, ap);
    if (threaded)
        sp__ts_hook_leave(&f);
    else
        p->act.hook_depth--;
}

void sp__log(const sp_pool *pool, sp__msg msg, ...) {
    va_list ap;
    va_start(ap, msg);
    pool_vlog(pool, -1, msg, ap);
    va_end(ap);
}

void sp__log_level(const sp_pool *pool, sp_log_level level, sp__msg msg, ...) {
    va_list ap;
    va_start(ap, msg);
    pool_vlog(pool, (int)level, msg, ap);
    va_end(ap);
}

/* ---- what a descriptor means ----------------------------------------------------------------- */

/* At most 16, as the header says and sp_dense does: not max_align_t, which is 8 on wasm32. */
static size_t natural_align(size_t size) {
    size_t a = size & (~size + 1u); /* lowest set bit */
    return a > 16u ? 16u : a;
}

static bool is_pow2(size_t x) { return x && !(x & (x - 1u)); }

typedef struct sp__layout {
    size_t align, stride, chunk_items;
    bool ordered; /* keeps the lease list (SP_ORDER_ACQUISITION, or the default under RECLAIM) */
    const char *why;
} sp__layout;

static sp__layout layout_of(const sp_desc *d) {
    sp__layout l = {0, 0, 0, false, NULL};
    if (d->item_size == 0) {
        l.why = "item_size is 0 (set it to sizeof the member type)";
        return l;
    }
    l.align = d->item_align ? d->item_align : natural_align(d->item_size);
    if (!is_pow2(l.align)) {
        l.why = "item_align is not a power of two";
        return l;
    }
    if (l.align > SP__MAX_ALIGN) {
        l.why = "item_align is larger than 65536";
        return l;
    }
    if (d->item_size > (SIZE_MAX >> 8) - l.align) {
        l.why = "item_size is too large";
        return l;
    }
    l.stride = (d->item_size + l.align - 1u) & ~(l.align - 1u);
    if ((uint64_t)d->overflow > (uint64_t)SP_OVERFLOW_GROW) {
        l.why = "unknown overflow policy";
        return l;
    }
    if ((uint64_t)d->order > (uint64_t)SP_ORDER_MEMORY) {
        l.why = "unknown order";
        return l;
    }
    if ((uint64_t)d->threads > (uint64_t)SP_THREADS_SAFE) {
        l.why = "unknown threads mode";
        return l;
    }
    if (d->max > SP__SLOT_LIMIT) {
        l.why = "max is larger than 16777216 (the slot limit)";
        return l;
    }
    if (d->initial > SP__SLOT_LIMIT) {
        l.why = "initial is larger than 16777216 (a pool holds at most 2^24 slots)";
        return l;
    }
    if (d->max && d->initial > d->max) {
        l.why = "initial is larger than max";
        return l;
    }
    if (d->chunk_items > SP__SLOT_LIMIT) {
        l.why = "chunk_items is larger than 16777216";
        return l;
    }
    if (!d->allocator.alloc != !d->allocator.free) {
        l.why = "allocator needs both alloc and free";
        return l;
    }
    sp__vm vm;
    const char *vm_why = sp__allocator_vm(&d->allocator, &vm);
    if (vm_why) {
        l.why = vm_why;
        return l;
    }
    l.ordered = d->order == SP_ORDER_ACQUISITION ||
                (d->order == SP_ORDER_DEFAULT && d->overflow == SP_OVERFLOW_RECLAIM);
    l.chunk_items = d->chunk_items;
    if (l.chunk_items == 0) {
        /* The members a segment of the source holds (at most 256: small members fill their
           block anyway), or `initial` when it says more: a pool told its working size up front
           gets it in one span. A small pool of large members takes a segment, not a megabyte. */
        size_t fit = SP__SEGMENT / l.stride;
        l.chunk_items = fit < 1u ? 1u : fit > SP__DEFAULT_CHUNK_ITEMS ? SP__DEFAULT_CHUNK_ITEMS : fit;
        if (d->initial > l.chunk_items) l.chunk_items = d->initial;
        if (d->max && d->max < l.chunk_items) l.chunk_items = d->max;
    }
    size_t at[SP__AREAS];
    size_t span_bytes = sp__span_layout(l.stride, l.align, l.ordered, (uint32_t)l.chunk_items, 1u, at);
    if (!span_bytes || span_bytes > (SIZE_MAX >> 2)) { /* a quarter of the address space at most */
        /* Name the field that set the span's size: chunk_items, or its default. */
        l.why = d->chunk_items                       ? "chunk_items * item_size overflows"
                : l.chunk_items == d->initial        ? "initial * item_size overflows"
                : d->max && l.chunk_items == d->max  ? "max * item_size overflows"
                                                     : "item_size is too large";
        return l;
    }
    if (d->max && l.stride > (SIZE_MAX >> 2) / d->max) { /* the pool could never hold max */
        l.why = "max * item_size overflows";
        return l;
    }
    return l;
}

/* ---- the fixed buffer ---------------------------------------------------------------------------
   [pool][stack: n entries][plain map][span: header, words, links, debug records, members],
   each at its own alignment, the members at the item's. */
static uintptr_t align_up(uintptr_t x, size_t a) { return (x + (a - 1u)) & ~(uintptr_t)(a - 1u); }

typedef struct fixed_layout {
    uintptr_t pool, stack, plain, span, end;
} fixed_layout;

/* Where a pool of n members lies from start; false when its size does not fit in the address
   space. */
static bool fixed_at(uintptr_t start, const sp__layout *l, size_t n, fixed_layout *f) {
    if (n == 0 || n > SP__SLOT_LIMIT) return false;
    f->pool = align_up(start, _Alignof(sp_pool));
    f->stack = f->pool + sizeof(sp_pool);
    f->plain = align_up(f->stack + stack_bytes(n), 8u);
    f->span = align_up(f->plain + plain_map_bytes(round_up(n, 64u)), _Alignof(sp__span));
    size_t at[SP__AREAS];
    size_t bytes = sp__span_layout(l->stride, l->align, l->ordered, (uint32_t)n, 1u, at);
    if (!bytes || f->pool < start || f->span < f->pool || bytes > UINTPTR_MAX - f->span) return false;
    f->end = f->span + bytes;
    return true;
}

static bool fixed_fits(uintptr_t start, uintptr_t end, const sp__layout *l, size_t n) {
    fixed_layout f;
    return fixed_at(start, l, n, &f) && f.end <= end;
}

/* The most any start address needs: the layout depends on the start only through its
   alignment, so every residue below the largest alignment is tried. */
size_t sp_buffer_size(const sp_desc *desc, size_t members) {
    if (!desc) return 0;
    sp__layout l = layout_of(desc);
    if (l.why || members == 0 || members > SP__SLOT_LIMIT) return 0;
    size_t a = l.align > _Alignof(sp_pool) ? l.align : _Alignof(sp_pool);
    size_t most = 0;
    for (uintptr_t r = 0; r < a; r++) {
        fixed_layout f;
        if (!fixed_at(a + r, &l, members, &f)) return 0;
        if (f.end - (a + r) > most) most = f.end - (a + r);
    }
    return most;
}

/* The most members a buffer holds (0: not one). */
static size_t fixed_capacity(uintptr_t start, uintptr_t end, const sp__layout *l) {
    if (!fixed_fits(start, end, l, 1)) return 0;
    size_t lo = 1, hi = SP__SLOT_LIMIT;
    while (lo < hi) {
        size_t mid = lo + (hi - lo + 1u) / 2u;
        if (fixed_fits(start, end, l, mid))
            lo = mid;
        else
            hi = mid - 1u;
    }
    return lo;
}

/* ---- creation ------------------------------------------------------------------------------------ */

static void pool_setup(sp_pool *p, const sp_desc *d, const sp__layout *l, const char *name) {
    memset(p, 0, sizeof *p);
    p->hot.stride = l->stride;
    size_t odd = l->stride;
    while (!(odd & 1u)) {
        odd >>= 1;
        p->hot.stride_rot++;
    }
    uint64_t inv = odd; /* Newton's iteration doubles the correct low bits each step */
    for (int i = 0; i < 5; i++) inv *= 2u - (uint64_t)odd * inv;
    p->hot.stride_inv = inv;
    p->cfg.item_size = d->item_size;
    p->cfg.item_align = l->align;
    p->cfg.max = d->max;
    p->cfg.chunk_items = l->chunk_items;
    p->cfg.overflow = d->overflow;
    p->cfg.ordered = l->ordered;
    p->cfg.fixed = d->buffer != NULL;
    p->cfg.create = d->create;
    p->cfg.on_acquire = d->on_acquire;
    p->cfg.on_release = d->on_release;
    p->cfg.dispose = d->dispose;
    p->cfg.priority = d->priority;
    p->cfg.user = d->user;
    p->cfg.allocator = sp__allocator_or_default(&d->allocator);
    p->cfg.logger = d->logger;
    atomic_init(&p->mem.rec_count, 0u);
    atomic_init(&p->mem.top, NULL);
    p->act.lease_head = p->act.lease_tail = SP__NIL;
    p->mem.hole_cursor = SP__NIL;
    p->counters.grow_warn_at = 1;
#if SP_DEBUG
    sp__one_thread_init(&p->act.one);
#endif
    const char *n = name ? name : "";
    size_t len = strlen(n), full = len;
    if (len >= SP__NAME_CAP) { /* cut, but not inside a UTF-8 sequence */
        len = SP__NAME_CAP - 1u;
        while (len > 0 && ((unsigned char)n[len] & 0xC0u) == 0x80u) len--;
    }
    memcpy(p->name, n, len);
    p->name[len] = '\0';
    sp__routes_update(p);
    if (full > len) sp__log(p, SP__MSG_NAME_CUT, len, full, (size_t)SP__NAME_CAP - 1u);
}

/* The pool struct and its stack and plain map in the caller's buffer. */
static sp_pool *fixed_create(const sp_desc *desc, const sp__layout *l, const char *name) {
    uintptr_t start = (uintptr_t)desc->buffer, end = start + desc->buffer_size;
    if (end < start) end = UINTPTR_MAX;
    size_t cap = fixed_capacity(start, end, l);
    const char *why = cap == 0               ? "buffer is too small for one member (sp_buffer_size says how much)"
                      : desc->initial > cap  ? "initial is larger than the buffer holds"
                                             : NULL;
    if (why) {
        sp__log_to(&desc->logger, name, SP__MSG_BAD_DESC, "sp_pool_create", why);
        return NULL;
    }
    fixed_layout f = {0, 0, 0, 0, 0};
    (void)fixed_at(start, l, cap, &f); /* it fits: fixed_capacity said so */
    sp_pool *p = (sp_pool *)f.pool;
    pool_setup(p, desc, l, name);
    p->mem.capacity = cap;
    if (p->cfg.max == 0 || p->cfg.max > cap) p->cfg.max = cap;
    p->cfg.chunk_items = cap;
    p->hot.stack = (unsigned char *)f.stack;
    p->mem.stack_cap = (uint32_t)cap;
    plain_map_set(p, (unsigned char *)f.plain, (uint32_t)round_up(cap, 64u));
    memset(p->hot.plain, 0, plain_map_bytes(p->mem.plain_cap));
    p->mem.fixed_area = (unsigned char *)f.span;
    p->mem.fixed_area_size = end - f.span;
    p->mem.bytes = desc->buffer_size;
    return p;
}

static sp_pool *heap_create(const sp_desc *desc, const sp__layout *l, const char *name) {
    sp_allocator a = sp__allocator_or_default(&desc->allocator);
    sp_pool *p = (sp_pool *)sp__alloc(&a, sizeof *p, _Alignof(sp_pool));
    if (!p) {
        sp__log_to(&desc->logger, name, SP__MSG_NOMEM, "pool");
        return NULL;
    }
    pool_setup(p, desc, l, name);
    p->mem.bytes = sizeof *p;
    return p;
}

/* Builds the pool, known to its owner (NULL: none; the registry) from before its first member is
   built, so that create hooks find their members' owner through it. */
static sp_pool *pool_create(const sp_desc *desc, const char *name, const sp__pool_owner *fns, void *owner) {
    sp__layout l = layout_of(desc);
    if (!l.why && desc->buffer && desc->overflow == SP_OVERFLOW_GROW) l.why = "GROW cannot grow a fixed buffer";
    if (!l.why && !desc->buffer && desc->buffer_size) l.why = "buffer_size without a buffer";
    if (l.why) {
        sp__log_to(&desc->logger, name, SP__MSG_BAD_DESC, "sp_pool_create", l.why);
        return NULL;
    }
    sp_pool *p = desc->buffer ? fixed_create(desc, &l, name) : heap_create(desc, &l, name);
    if (!p) return NULL;
    /* Thread-safe before anything is built or registered, so that all growth is its kind. */
    bool ok = sp__pool_memory_init(p, desc) && (desc->threads == SP_THREADS_NONE || sp__ts_attach(p, desc));
    if (ok && owner) ok = sp__spans_register(p, fns, owner);
    if (ok) ok = sp_prewarm(p, desc->initial) == desc->initial;
    if (!ok) {
        sp_pool_destroy(p);
        return NULL;
    }
    return p;
}

sp_pool *sp__pool_create_in(const sp_desc *desc, const sp__pool_owner *fns, void *owner, const char *default_name) {
    if (!desc) {
        sp__log_to(NULL, "", SP__MSG_NULL_DESC, "sp_pool_create");
        return NULL;
    }
    return pool_create(desc, desc->name ? desc->name : (default_name ? default_name : ""), fns, owner);
}

sp_pool *sp_pool_create(const sp_desc *desc) { return sp__pool_create_in(desc, NULL, NULL, NULL); }

/* ---- teardown ---------------------------------------------------------------------------------
   From teardown_begin on every acquisition from the pool is refused (the routes send them to the
   general path, which checks the flag), so members only decrease and the teardown always ends:
   a member that a dispose hook releases joins the stack, which the teardown empties too. */
static void teardown_begin(sp_pool *p) {
    p->act.tearing_down = true;
    sp__routes_update(p);
}

static void teardown_end(sp_pool *p) {
    p->act.tearing_down = false;
    sp__routes_update(p);
}

/* Disposes every member, leased or free; leased members' lives end. Between teardown_begin and
   teardown_end: dispose hooks may release members but not acquire any, and cannot destroy,
   clear or trim the pool. */
static size_t dispose_all(sp_pool *p) {
    size_t n = 0;
    uint32_t from = 0; /* memory order: the leased slots below this are done */
    for (;;) {
        uint32_t idx = SP__NIL;
        bool was_leased = false;
        if (p->cfg.ordered) {
            idx = p->act.lease_head;
        } else if (pool_leased(p)) {
            idx = sp__leased_from(p, from);
            if (idx != SP__NIL) from = idx + 1u;
        }
        peak_sync(p);
        if (idx != SP__NIL) {
            _Atomic uint32_t *w = word_at(p, idx);
            if (plain_test(p, idx)) { /* to its word: dispose may resolve or look at it */
                plain_clear(p, idx);
                wstore(w, (wload(w) & ~(uint32_t)SP__STATE_MASK) | SP__LEASED);
            }
            if (p->cfg.ordered) lease_unlink(p, idx);
            p->counters.leased_disposed++;
            was_leased = true;
        } else if (p->hot.free_top > 0) {
            idx = stack_pop(p);
        } else {
            if (!p->cfg.ordered && pool_leased(p) && from) { /* released and acquired behind us */
                from = 0;
                continue;
            }
            break;
        }
        p->mem.limbo++;
        peak_set(p);
        sp__member_dispose(p, idx, was_leased);
        n++;
    }
    return n;
}

/* A thread-safe pool outside a window counts its hooks per thread (the shared hook depth is the
   lock's: its growth's allocator and create hooks); inside one, the lock is held and both count. */
static bool in_callback(const sp_pool *p) {
    if (p->ts && !sp__ts_windowed(p)) return sp__ts_in_hook(p);
    return p->act.hook_depth > 0 || p->act.destroying || (p->ts && sp__ts_in_hook(p));
}

static bool refused_in_hook(sp_pool *p, const char *call) {
    if (in_callback(p)) {
        sp__log(p, SP__MSG_IN_HOOK, call);
        return true;
    }
    return false;
}

void sp_pool_destroy(sp_pool *pool) {
    if (!pool) return;
    sp_pool *p = pool;
#if SP_DEBUG
    /* a check, not an entry: the pool is gone when the call ends */
    int in = sp__dbg_enter(p, "sp_pool_destroy");
    if (in < 0) return;
    if (in > 0) sp__dbg_leave(p);
#endif
    if (p->ts && !sp__ts_destroy_begin(p)) return; /* opens its window, for good */
    if (refused_in_hook(p, "sp_pool_destroy")) return;
    size_t leased = pool_leased(p);
    if (leased) {
        sp__log(p, SP__MSG_LEAKED, leased);
        sp__report_sites(p, "leaked", SP_LOG_WARN);
    }
    p->act.destroying = true;
    teardown_begin(p);
    if (p->cfg.dispose || p->cfg.fixed || SP_DEBUG > 0) {
        dispose_all(p);
    } else {
        /* No hook to run and no memory to hand back clean: the members go with their spans.
           (The spans' words keep the lives they handed out, for the tag: see word_issued.) */
        p->counters.leased_disposed += pool_leased(p);
        p->counters.disposed += p->mem.size;
    }
    if (p->owner) {
        p->owner_fns->pool_gone(p->owner, p);
        p->owner = NULL;
    }
    sp__pool_memory_fini(p); /* the records keep the lives the spans reached */
    if (p->handles.tagged) sp__tag_release(p->handles.tag, sp__highest_life(p) + p->handles.life_base);
    if (p->ts) sp__ts_free(p);
    if (p->cfg.fixed) return;
    sp_allocator a = p->cfg.allocator;
    a.free(p, sizeof *p, a.user);
}

/* ---- growing and shrinking ------------------------------------------------------------------- */

/* Builds n members (within max), then puts them on the stack, the lowest on top: they are
   handed out lowest address first, as a pool built on demand does. Until then they are in limbo
   with a mark (a create hook that acquires from this pool builds another member instead). */
static size_t build_onto_stack(sp_pool *p, size_t n) {
    size_t built = 0;
    uint32_t lo = SP__NIL, hi = 0;
    while (built < n && (p->cfg.max == 0 || p->mem.size < p->cfg.max)) {
        uint32_t idx = sp__member_build(p, false);
        if (idx == SP__NIL) break;
        _Atomic uint32_t *w = word_at(p, idx);
        wstore(w, wload(w) | SP__MARKED);
        if (idx < lo) lo = idx;
        if (idx > hi) hi = idx;
        built++;
    }
    if (!built) return 0;
    peak_sync(p);
    for (uint32_t i = hi + 1u; i-- > lo;) {
        sp__span *s = span_of(p, i);
        if (!s) continue;
        _Atomic uint32_t *w = word_in(s, i);
        if (!(wload(w) & SP__MARKED)) continue;
        wstore(w, wload(w) & ~(uint32_t)SP__MARKED);
        DBG_FREED(p, i, item_in(p, s, i));
        stack_push(p, i);
        p->mem.limbo--;
    }
    peak_set(p);
    return built;
}

size_t sp_prewarm(sp_pool *pool, size_t n) {
    if (!pool) {
        sp__null_pool("sp_prewarm");
        return 0;
    }
    SP__ONE_THREAD(pool, "sp_prewarm", size_t, 0, sp_prewarm(pool, n));
    if (pool->ts && !sp__ts_windowed(pool)) return sp__ts_prewarm(pool, n); /* under its lock */
    /* Inside priority or a teardown no member may become free: acquisitions are refused. */
    if (pool->act.frozen > 0) {
        sp__log(pool, SP__MSG_FROZEN, "sp_prewarm", sp__frozen_by(pool->act.frozen));
        return 0;
    }
    if (pool->act.tearing_down) {
        sp__log(pool, SP__MSG_IN_HOOK, "sp_prewarm");
        return 0;
    }
    if (pool->act.allocating > 0) { /* the growth that called the allocator is not done */
        sp__log(pool, SP__MSG_IN_ALLOCATOR, "sp_prewarm");
        return 0;
    }
    return build_onto_stack(pool, n);
}

size_t sp_trim(sp_pool *pool, size_t keep_free) {
    if (!pool) {
        sp__null_pool("sp_trim");
        return 0;
    }
    SP__ONE_THREAD(pool, "sp_trim", size_t, 0, sp_trim(pool, keep_free));
    sp_pool *p = pool;
    if (p->ts && !sp__ts_windowed(p) && !sp__ts_in_hook(p))
        SP__TS_WINDOW(p, "sp_trim", size_t, sp_trim(p, keep_free));
    if (refused_in_hook(p, "sp_trim")) return 0;
    size_t free_n = free_count(p);
    size_t to_dispose = free_n > keep_free ? free_n - keep_free : 0;
    /* Victims from the highest slots down, so that whole spans and pages empty out. The mark
       says which; then the stack keeps the others in their order, before any hook runs. */
    size_t marked = 0;
    for (uint32_t k = rec_count(p); k-- > 0 && marked < to_dispose;) {
        sp__span *s = rec_span(&p->mem.recs[k]);
        for (uint32_t i = s ? span_count(s) : 0u; i-- > 0 && marked < to_dispose;) {
            uint32_t w = wload(&s->words[i]);
            if ((w & (SP__STATE_MASK | SP__BUSY)) == SP__FREE && !plain_test(p, s->first + i)) {
                wstore(&s->words[i], w | SP__MARKED);
                marked++;
            }
        }
    }
    peak_sync(p);
    uint32_t keep = 0;
    for (uint32_t i = 0, n = free_count(p); i < n; i++) {
        uint32_t idx = stack_at(p, i);
        if (!(wload(word_at(p, idx)) & SP__MARKED)) stack_set(p, keep++, idx);
    }
    p->hot.free_top = keep * SP__ENTRY;
    p->mem.limbo += marked;
    peak_set(p);
    /* Dispose hooks may acquire and grow the pool meanwhile: spans never move, and the marked
       members are in no stack, so none of them is handed out. */
    size_t disposed = 0;
    for (uint32_t k = rec_count(p); k-- > 0;) {
        sp__span *s = rec_span(&p->mem.recs[k]);
        for (uint32_t i = s ? span_count(s) : 0u; i-- > 0;) {
            uint32_t w = wload(&s->words[i]);
            if (!(w & SP__MARKED)) continue;
            wstore(&s->words[i], w & ~(uint32_t)SP__MARKED);
            sp__member_dispose(p, s->first + i, false);
            disposed++;
        }
    }
    sp__spans_release_empty(p);
    return disposed;
}

size_t sp_clear(sp_pool *pool) {
    if (!pool) {
        sp__null_pool("sp_clear");
        return 0;
    }
    SP__ONE_THREAD(pool, "sp_clear", size_t, 0, sp_clear(pool));
    if (pool->ts && !sp__ts_windowed(pool) && !sp__ts_in_hook(pool))
        SP__TS_WINDOW(pool, "sp_clear", size_t, sp_clear(pool));
    if (refused_in_hook(pool, "sp_clear")) return 0;
    teardown_begin(pool);
    size_t n = dispose_all(pool);
    teardown_end(pool);
    sp__spans_release_empty(pool);
    return n;
}

/* ---- settings ----------------------------------------------------------------------------- */

sp_result sp_set_overflow(sp_pool *pool, sp_overflow overflow) {
    if (!pool) {
        sp__null_pool("sp_set_overflow");
        return SP_ERR_INVALID;
    }
    if ((uint64_t)overflow > (uint64_t)SP_OVERFLOW_GROW || (pool->cfg.fixed && overflow == SP_OVERFLOW_GROW)) {
        sp__log(pool, SP__MSG_BAD_OVERFLOW,
                overflow == SP_OVERFLOW_GROW ? "GROW cannot grow a fixed buffer" : "unknown overflow policy");
        return SP_ERR_INVALID;
    }
    SP__ONE_THREAD(pool, "sp_set_overflow", sp_result, SP_ERR_INVALID, sp_set_overflow(pool, overflow));
    if (pool->ts && !sp__ts_windowed(pool)) return sp__ts_set(pool, &overflow, NULL);
    pool->cfg.overflow = overflow;
    return SP_OK;
}

sp_result sp_set_max(sp_pool *pool, size_t max) {
    if (!pool) {
        sp__null_pool("sp_set_max");
        return SP_ERR_INVALID;
    }
    if (max > SP__SLOT_LIMIT) max = SP__SLOT_LIMIT;
    if (pool->cfg.fixed && (max == 0 || max > pool->mem.capacity)) max = pool->mem.capacity;
    SP__ONE_THREAD(pool, "sp_set_max", sp_result, SP_ERR_INVALID, sp_set_max(pool, max));
    if (pool->ts && !sp__ts_windowed(pool)) return sp__ts_set(pool, NULL, &max);
    pool->cfg.max = max;
    return SP_OK;
}

const char *sp_pool_name(const sp_pool *pool) {
    if (!pool) sp__null_pool("sp_pool_name");
    return pool ? pool->name : NULL;
}

/* ---- what the registry asks ---------------------------------------------------------------- */

size_t sp__pool_leased(const sp_pool *pool) {
    return pool->ts && !sp__ts_windowed(pool) ? sp__ts_leased(pool) : pool_leased(pool);
}

bool sp__pool_in_callback(const sp_pool *pool) { return in_callback(pool); }

bool sp__pool_destroying(const sp_pool *pool) { return pool->act.destroying; }

bool sp__pool_tag(const sp_pool *pool, uint32_t *tag) {
    *tag = pool->handles.tag;
    return pool->handles.tagged;
}

const sp_logger *sp__pool_logger(const sp_pool *pool) { return &pool->cfg.logger; }
