/* SPDX-License-Identifier: Zlib */
/* pool.c -- Pool lifecycle: what a descriptor means (layout_of), creation (heap, reserved, or
   in a fixed buffer), teardown (sp_clear, sp_pool_destroy: acquisitions refused until they
   end), sp_prewarm, sp_trim, and the settings that can change (overflow, max).

   The pool's files, one per section of the header: pool.c (lifecycle), memory.c (where members
   live), lease.c (acquire / release), handles.c, iterate.c, stats.c; what they share is in
   pool_internal.h. */
#include "sp_threads.h"

/* At most 16, as the header says and sp_dense does: not max_align_t, which is 8 on wasm32. */
static size_t natural_align(size_t size) {
    size_t a = size & (~size + 1u); /* lowest set bit */
    return a > 16u ? 16u : a;
}


static bool is_pow2(size_t x) { return x && !(x & (x - 1u)); }


/* What a descriptor means once defaults are applied; `why` says what is wrong with it. */
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
    l.ordered = d->order == SP_ORDER_ACQUISITION ||
                (d->order == SP_ORDER_DEFAULT && d->overflow == SP_OVERFLOW_RECLAIM);
    l.chunk_items = d->chunk_items;
    if (l.chunk_items == 0) {
        /* A pool told its working size up front gets it in one chunk: every release then hits
           the chunk hint, and nothing is reserved beyond what `initial` asked for. */
        l.chunk_items = d->initial > SP__DEFAULT_CHUNK_ITEMS ? d->initial : SP__DEFAULT_CHUNK_ITEMS;
        if (d->max && d->max < l.chunk_items) l.chunk_items = d->max;
    }
    if (l.chunk_items > (SIZE_MAX >> 2) / (l.stride + sizeof(sp__slot))) {
        /* Name the field that set the chunk's size: chunk_items, or its default from initial,
           max or 256 members. */
        l.why = d->chunk_items                       ? "chunk_items * item_size overflows"
                : l.chunk_items == d->initial        ? "initial * item_size overflows"
                : d->max && l.chunk_items == d->max  ? "max * item_size overflows"
                                                     : "item_size is too large for a chunk of 256 members";
        return l;
    }
    return l;
}


/* Fixed-buffer layout, from an address: [pool][the lease list's ends' slot][slots x n][pad]
   [debug records x n, in debug builds][pad][members x n]. The slots are reserved at the ordered
   size whatever the order (a memory-order pool leaves the room of the back links and stamps
   unused), so that sp_buffer_size depends on the item's size and alignment only, not on fields a
   caller may still change after sizing. */
static uintptr_t align_up(uintptr_t x, size_t a) { return (x + (a - 1u)) & ~(uintptr_t)(a - 1u); }


static bool fixed_fits(uintptr_t start, uintptr_t end, const sp__layout *l, size_t n,
                       uintptr_t *items_out) {
    uintptr_t pool = align_up(start, _Alignof(sp_pool));
    uintptr_t slots = pool + sizeof(sp_pool) + sizeof(sp__oslot); /* the lease list's ends first */
    if (slots < start || slots > end) return false;
    if (n > (end - slots) / sp__slot_bytes(true)) return false;
    /* slots, then (debug builds) their 8-aligned records, then the aligned members */
    uintptr_t records = align_up(slots + n * sizeof(sp__oslot), SP__DBG_BYTES ? 8u : 1u);
    if (records > end || n > (end - records) / (SP__DBG_BYTES ? SP__DBG_BYTES : 1u)) return false;
    uintptr_t items = align_up(records + n * SP__DBG_BYTES, l->align);
    if (items < slots || items > end) return false;
    if (n > (end - items) / l->stride) return false;
    if (items_out) *items_out = items;
    return true;
}


size_t sp_buffer_size(const sp_desc *desc, size_t members) {
    if (!desc) return 0;
    sp__layout l = layout_of(desc);
    if (l.why || members == 0 || members > SP__SLOT_LIMIT) return 0;
    size_t slack = (_Alignof(sp_pool) - 1u) + (l.align - 1u) + (SP__DBG_BYTES ? 7u : 0u);
    size_t fixed = sizeof(sp_pool) + sizeof(sp__oslot) + slack;
    size_t per_member = sp__slot_bytes(true) + l.stride; /* stride < SIZE_MAX / 256: no overflow */
    if (members > (SIZE_MAX - fixed) / per_member) return 0;
    return fixed + members * per_member;
}


static void pool_setup(sp_pool *p, const sp_desc *d, const sp__layout *l, const char *name) {
    memset(p, 0, sizeof *p);
    p->free_head = p->unbuilt_head = SP__NIL;
    p->item_size = d->item_size;
    p->item_align = l->align;
    p->stride = l->stride;
    p->stride_rot = 0;
    size_t odd = l->stride;
    while (!(odd & 1u)) {
        odd >>= 1;
        p->stride_rot++;
    }
    uint64_t inv = odd; /* Newton's iteration doubles the correct low bits each step */
    for (int i = 0; i < 5; i++) inv *= 2u - (uint64_t)odd * inv;
    p->stride_inv = inv;
    p->max = d->max;
    p->overflow = d->overflow;
    p->ordered = l->ordered;
    p->slot_size = (uint32_t)(l->ordered ? sizeof(sp__oslot) : sizeof(sp__slot));
    p->create = d->create;
    p->on_acquire = d->on_acquire;
    p->on_release = d->on_release;
    p->dispose = d->dispose;
    p->priority = d->priority;
    p->user = d->user;
    p->logger = d->logger;
    p->grow_warn_at = 1;
    p->doomed = SP__NIL;
    sp__routes_update(p);
    if (d->allocator.alloc) {
        p->allocator = d->allocator;
    } else {
        p->allocator.alloc = sp__default_alloc;
        p->allocator.free = sp__default_free;
        p->allocator.user = NULL;
    }
    const char *n = name ? name : "";
    size_t len = strlen(n);
    size_t full = len;
    if (len >= SP__NAME_CAP) { /* cut, but not inside a UTF-8 sequence */
        len = SP__NAME_CAP - 1u;
        while (len > 0 && ((unsigned char)n[len] & 0xC0u) == 0x80u) len--;
    }
    memcpy(p->name, n, len);
    p->name[len] = '\0';
    if (full > len) sp__log(p, SP__MSG_NAME_CUT, len, full);
}


/* Builds the pool, known to its owner (NULL: none; the registry) from before its first member is
   built, so that create hooks find their members' owner through it. */
static sp_pool *pool_create(const sp_desc *desc, const char *name, const sp__pool_owner *fns,
                            void *owner) {
    sp__layout l = layout_of(desc);
    if (!l.why && desc->buffer && desc->overflow == SP_OVERFLOW_GROW)
        l.why = "GROW cannot grow a fixed buffer";
    if (!l.why && !desc->buffer && desc->buffer_size)
        l.why = "buffer_size without a buffer";
    if (l.why) {
        sp__log_to(&desc->logger, name, SP__MSG_BAD_DESC, l.why);
        return NULL;
    }

    sp_pool *p;
    if (desc->buffer) {
        uintptr_t start = (uintptr_t)desc->buffer, end = start + desc->buffer_size;
        if (end < start) end = UINTPTR_MAX;
        size_t cap = 0;
        if (fixed_fits(start, end, &l, 1, NULL)) {
            /* Binary search for the most members that fit, from a lower bound that surely does. */
            size_t overhead = sizeof(sp_pool) + 2u * SP__MAX_ALIGN;
            size_t lo = desc->buffer_size > overhead
                            ? (desc->buffer_size - overhead) / (sizeof(sp__slot) + l.stride)
                            : 1u;
            if (lo == 0 || lo > SP__SLOT_LIMIT || !fixed_fits(start, end, &l, lo, NULL)) lo = 1;
            size_t hi = SP__SLOT_LIMIT;
            while (lo < hi) {
                size_t mid = lo + (hi - lo + 1u) / 2u;
                if (fixed_fits(start, end, &l, mid, NULL))
                    lo = mid;
                else
                    hi = mid - 1u;
            }
            cap = lo;
        }
        const char *why = cap == 0                 ? "buffer is too small for one member"
                          : desc->initial > cap    ? "initial is larger than the buffer holds"
                                                   : NULL;
        if (why) {
            sp__log_to(&desc->logger, name, SP__MSG_BAD_DESC, why);
            return NULL;
        }
        uintptr_t items = 0;
        fixed_fits(start, end, &l, cap, &items);
        p = (sp_pool *)align_up(start, _Alignof(sp_pool));
        pool_setup(p, desc, &l, name);
        p->tag = sp__tag_acquire(&p->life_first);
        p->tag_bits = (uint64_t)p->tag << SP__SLOT_BITS;
        if (p->tag == 0) {
            sp__log(p, SP__MSG_NO_TAG, sp__tags_retired());
            return NULL;
        }
        p->fixed = true;
        p->capacity = cap;
        if (p->max == 0 || p->max > cap) p->max = cap;
        p->chunk_items = cap;
        p->slots = (unsigned char *)(p + 1) + sizeof(sp__oslot);
        p->slot_cap = (uint32_t)cap;
        sp__slots_init(p, 0, cap);
#if SP_DEBUG
        p->dbg = (sp__dbg *)align_up((uintptr_t)(p->slots + cap * sizeof(sp__oslot)), 8u);
        memset(p->dbg, 0, cap * sizeof *p->dbg);
#endif
        p->ranges[0].items = (unsigned char *)items;
        p->ranges[0].cap = p->ranges[0].count = (uint32_t)cap;
        p->range_count = 1;
        sp__range_gained(p, 0, 0, (uint32_t)cap);
        sp__ranges_index(p);
        p->bytes = desc->buffer_size;
    } else {
        sp_allocator a = desc->allocator;
        if (!a.alloc) {
            a.alloc = sp__default_alloc;
            a.free = sp__default_free;
        }
        p = (sp_pool *)sp__alloc(&a, sizeof *p, _Alignof(sp_pool));
        if (!p) {
            sp__log_to(&desc->logger, name, SP__MSG_NOMEM, "pool");
            return NULL;
        }
        pool_setup(p, desc, &l, name);
        p->tag = sp__tag_acquire(&p->life_first);
        p->tag_bits = (uint64_t)p->tag << SP__SLOT_BITS;
        if (p->tag == 0) {
            sp__log(p, SP__MSG_NO_TAG, sp__tags_retired());
            a.free(p, sizeof *p, a.user);
            return NULL;
        }
        p->chunk_items = l.chunk_items;
        p->bytes = sizeof *p;
        (void)sp__pool_reserve(p, desc); /* else the fallback: ranges from alloc/free */
    }
    /* Thread-safe before anything is built or registered, so that all growth is its kind. */
    if (desc->threads != SP_THREADS_NONE && !sp__ts_attach(p, desc)) {
        sp_pool_destroy(p);
        return NULL;
    }
    if ((owner && !sp__ranges_register(p, fns, owner)) || sp_prewarm(p, desc->initial) < desc->initial) {
        sp_pool_destroy(p);
        return NULL;
    }
    return p;
}


sp_pool *sp__pool_create_in(const sp_desc *desc, const sp__pool_owner *fns, void *owner,
                            const char *default_name) {
    if (!desc) {
        sp__log(NULL, SP__MSG_NULL_DESC);
        return NULL;
    }
    return pool_create(desc, desc->name ? desc->name : (default_name ? default_name : ""), fns, owner);
}


sp_pool *sp_pool_create(const sp_desc *desc) { return sp__pool_create_in(desc, NULL, NULL, NULL); }


/* The start of sp_clear and sp_pool_destroy: from here on every acquisition from the pool is
   refused (its free list moves to `doomed`, so the fast path finds nothing and the slow path
   checks the flag), and a member that a hook releases meanwhile joins `doomed` too. So the
   members only decrease and the teardown always ends. */
static void teardown_begin(sp_pool *p) {
    p->tearing_down = true;
    p->doomed = p->free_head;
    p->free_head = SP__NIL;
    sp__routes_update(p);
}


static void teardown_end(sp_pool *p) {
    p->tearing_down = false;
    sp__routes_update(p);
}


/* During a teardown, the member that a release just put on the free list is doomed instead. */
void sp__doom_released(sp_pool *p) {
    uint32_t idx = p->free_head;
    if (idx == SP__NIL) return; /* it retired */
    sp__slot *s = slot_at(p, idx);
    p->free_head = s->next;
    s->next = p->doomed;
    p->doomed = idx;
}


/* Takes every member out of its list and disposes it; leased members' lives end. Runs between
   teardown_begin and teardown_end: dispose hooks may release members (which join the doomed)
   but not acquire any, and cannot destroy, clear or trim the pool. */
static size_t dispose_all(sp_pool *p) {
    size_t n = 0;
    uint32_t from = 0; /* unordered pools: the leased slots below this are done */
    for (;;) {
        uint32_t idx = lease_head(p);
        sp__slot *s;
        bool was_leased;
        if (!p->ordered && sp__leased(p)) {
            idx = sp__leased_from(p, from);
            if (idx != SP__NIL) from = idx + 1u;
        }
        if (idx != SP__NIL) {
            s = slot_at(p, idx);
            if (p->ordered) lease_unlink(p, s);
            leased_dec(p);
            p->leased_disposed++;
            was_leased = true;
        } else if (p->doomed != SP__NIL) {
            idx = p->doomed;
            s = slot_at(p, idx);
            p->doomed = s->next;
            was_leased = false;
        } else {
            break;
        }
        sp__member_dispose(p, idx, was_leased);
        n++;
    }
    return n;
}


/* The highest life any slot of the pool handed out (0: none): a leased slot's current life, a
   retired slot's last, and below the next life to hand out for the others (a slot's life only
   moves past one it handed out). The tag's next pool starts above it. O(slots). */
static uint32_t highest_life(const sp_pool *p) {
    uint32_t high = 0;
    for (uint32_t idx = 0; idx < p->slot_cap; idx++) {
        const sp__slot *s = slot_at(p, idx);
        uint32_t st = sp__state(s);
        uint32_t issued = st == SP__LEASED || st == SP__RETIRED ? sp__life(s) : sp__life(s) - 1u;
        if (issued > high) high = issued;
    }
    return high;
}


void sp_pool_destroy(sp_pool *pool) {
    if (!pool) return;
#if SP_DEBUG
    /* a check, not an entry: the pool is gone when the call ends */
    int in = sp__dbg_enter(pool, "sp_pool_destroy");
    if (in < 0) return;
    if (in > 0) sp__dbg_leave(pool);
#endif
    if (SP__TS(pool) && !sp__ts_destroy_begin(pool)) return; /* opens the window, for good */
    if (pool->hook_depth > 0 || pool->destroying) {
        sp__log(pool, SP__MSG_IN_HOOK, "sp_pool_destroy");
        return;
    }
    sp_pool *p = pool;
    if (sp__leased(p)) {
        sp__log(p, SP__MSG_LEAKED, sp__leased(p));
        sp__report_sites(p, "leaked", SP_LOG_WARN);
    }
    p->destroying = true;
    teardown_begin(p);
    dispose_all(p);
    if (p->owner) {
        p->owner_fns->pool_gone(p->owner, p);
        p->owner = NULL;
    }
    sp__tag_release(p->tag, highest_life(p));
    /* The memory goes back clean (a reservation's whole committed part: the platform's release
       leaves the sanitizer's shadow alone, and a later mapping may get the same addresses). */
    for (uint32_t c = 0; c < p->range_count; c++)
        if (p->ranges[c].items && p->ranges[c].count)
            DBG_UNPOISON(p->ranges[c].items, (size_t)p->ranges[c].count * p->stride);
    if (pool_reserved(p) && p->committed_items) DBG_UNPOISON(p->reserved_items, p->committed_items);
    if (p->fixed) return;
    if (p->ts) sp__ts_free(p); /* its caches, magazines, slots (fallback) and lock */
    for (uint32_t c = pool_reserved(p) ? 1u : 0u; c < p->range_count; c++)
        if (p->ranges[c].items) pool_free(p, p->ranges[c].items, (size_t)p->ranges[c].count * p->stride);
    if (pool_reserved(p)) {
        pool_vm_release(p, p->reserved_items, p->reserved_items_size + p->reserved_books_size);
    } else {
        sp__slots_free(p);
#if SP_DEBUG
        pool_free(p, p->dbg, (size_t)p->slot_cap * sizeof *p->dbg);
#endif
    }
    sp_allocator a = p->allocator;
    a.free(p, sizeof *p, a.user);
}


/* The one line for a NULL pool where one is needed (decision: the default logger, since there
   is no pool to name). Out of line: the callers' fast paths only branch to it. */
SP__NOINLINE void sp__null_pool(const char *function) { sp__log(NULL, SP__MSG_NULL_POOL, function); }


/* Members are built lowest address first (the unbuilt list's order) and chained in that order,
   then the chain goes to the head of the free list whole: the pool hands them out lowest address
   first, as a pool built on demand does, so that a memory-order RECLAIM's round robin (which
   starts at the lowest slot) takes the oldest acquisition of a pool filled in order. (Pushing
   each one would hand them out highest first.) Until the splice the members are FREE in no list:
   a create hook that acquires from this pool builds another member instead. */
size_t sp_prewarm(sp_pool *pool, size_t n) {
    if (!pool) {
        sp__null_pool("sp_prewarm");
        return 0;
    }
    SP__ONE_THREAD(pool, "sp_prewarm", size_t, 0, sp_prewarm(pool, n));
    if (SP__TS(pool)) return sp__ts_prewarm(pool, n); /* its checks under its lock */
    /* Inside priority or a teardown the free list must stay empty: acquisitions are refused
       because they find nothing free. */
    if (pool->scoring > 0) {
        sp__log(pool, SP__MSG_IN_PRIORITY, "sp_prewarm");
        return 0;
    }
    if (pool->tearing_down) {
        sp__log(pool, SP__MSG_IN_HOOK, "sp_prewarm");
        return 0;
    }
    if (pool->allocating > 0) { /* the growth that called the allocator is not done */
        sp__log(pool, SP__MSG_IN_ALLOCATOR, "sp_prewarm");
        return 0;
    }
    return sp__build_onto(pool, n, &pool->free_head);
}


/* Builds up to n members (within max) and puts them in front of the list at *head, lowest
   address first, as `initial` hands them out. */
size_t sp__build_onto(sp_pool *p, size_t n, uint32_t *head) {
    size_t built = 0;
    uint32_t first = SP__NIL, last = SP__NIL;
    while (built < n && (p->max == 0 || p->size < p->max)) {
        uint32_t idx = sp__member_build(p, false);
        if (idx == SP__NIL) break;
        if (last == SP__NIL)
            first = idx;
        else
            slot_at(p, last)->next = idx; /* looked up again: a hook may have moved the slots */
        last = idx;
        DBG_FREED(p, idx, item_at(p, idx));
        built++;
    }
    if (last != SP__NIL) {
        slot_at(p, last)->next = *head;
        *head = first;
    }
    return built;
}


size_t sp_trim(sp_pool *pool, size_t keep_free) {
    if (!pool) {
        sp__null_pool("sp_trim");
        return 0;
    }
    SP__ONE_THREAD(pool, "sp_trim", size_t, 0, sp_trim(pool, keep_free));
    sp_pool *p = pool;
    if (SP__TS(p) && !sp__ts_in_hook(p)) /* the rest is checked in the window, under the lock */
        SP__TS_WINDOWED(p, "sp_trim", size_t, sp_trim(w_, keep_free));
    if (SP__TS(p) || p->hook_depth > 0 || p->destroying) { /* SP__TS: in one of its hooks */
        sp__log(p, SP__MSG_IN_HOOK, "sp_trim");
        return 0;
    }
    size_t free_count = 0;
    for (uint32_t i = p->free_head; i != SP__NIL; i = slot_at(p, i)->next) free_count++;
    size_t to_dispose = free_count > keep_free ? free_count - keep_free : 0;

    /* Mark victims from the highest slots down, so that whole ranges and pages empty out. BUSY
       on a free member is the mark: no hook can be running on a free member. */
    size_t marked = 0;
    for (uint32_t c = p->range_count; c-- > 0 && marked < to_dispose;) {
        const sp__range *r = &p->ranges[c];
        for (uint32_t i = r->first + r->count; i-- > r->first && marked < to_dispose;) {
            sp__slot *slot = slot_at(p, i);
            if ((slot->word & (SP__STATE_MASK | SP__BUSY)) == SP__FREE) {
                slot->word |= SP__BUSY;
                marked++;
            }
        }
    }
    /* Split the free list into keepers and victims (each chained through next) before any hook. */
    uint32_t victims = SP__NIL, keep_head = SP__NIL, keep_tail = SP__NIL;
    for (uint32_t i = p->free_head; i != SP__NIL;) {
        sp__slot *s = slot_at(p, i);
        uint32_t next = s->next;
        if (s->word & SP__BUSY) {
            s->next = victims;
            victims = i;
        } else {
            s->next = SP__NIL;
            if (keep_tail == SP__NIL)
                keep_head = i;
            else
                slot_at(p, keep_tail)->next = i;
            keep_tail = i;
        }
        i = next;
    }
    p->free_head = keep_head;
    size_t disposed = 0;
    for (uint32_t i = victims; i != SP__NIL;) {
        sp__slot *s = slot_at(p, i);
        uint32_t next = s->next;
        s->word &= ~(uint32_t)SP__BUSY;
        s->next = SP__NIL;
        sp__member_dispose(p, i, false);
        disposed++;
        i = next;
    }
    sp__ranges_release_empty(p);
    return disposed;
}


size_t sp_clear(sp_pool *pool) {
    if (!pool) {
        sp__null_pool("sp_clear");
        return 0;
    }
    SP__ONE_THREAD(pool, "sp_clear", size_t, 0, sp_clear(pool));
    if (SP__TS(pool) && !sp__ts_in_hook(pool))
        SP__TS_WINDOWED(pool, "sp_clear", size_t, sp_clear(w_));
    if (SP__TS(pool) || pool->hook_depth > 0 || pool->destroying) {
        sp__log(pool, SP__MSG_IN_HOOK, "sp_clear");
        return 0;
    }
    teardown_begin(pool);
    size_t n = dispose_all(pool);
    teardown_end(pool);
    sp__ranges_release_empty(pool);
    return n;
}


sp_result sp_set_overflow(sp_pool *pool, sp_overflow overflow) {
    if (!pool) {
        sp__null_pool("sp_set_overflow");
        return SP_ERR_INVALID;
    }
    if ((uint64_t)overflow > (uint64_t)SP_OVERFLOW_GROW || (pool->fixed && overflow == SP_OVERFLOW_GROW)) {
        sp__log(pool, SP__MSG_BAD_OVERFLOW,
                overflow == SP_OVERFLOW_GROW ? "GROW cannot grow a fixed buffer" : "unknown overflow policy");
        return SP_ERR_INVALID;
    }
    SP__ONE_THREAD(pool, "sp_set_overflow", sp_result, SP_ERR_INVALID, sp_set_overflow(pool, overflow));
    if (SP__TS(pool)) return sp__ts_set(pool, &overflow, NULL);
    pool->overflow = overflow;
    return SP_OK;
}


sp_result sp_set_max(sp_pool *pool, size_t max) {
    if (!pool) {
        sp__null_pool("sp_set_max");
        return SP_ERR_INVALID;
    }
    if (max > SP__SLOT_LIMIT) max = SP__SLOT_LIMIT;
    if (pool->fixed && (max == 0 || max > pool->capacity)) max = pool->capacity;
    SP__ONE_THREAD(pool, "sp_set_max", sp_result, SP_ERR_INVALID, sp_set_max(pool, max));
    if (SP__TS(pool)) return sp__ts_set(pool, NULL, &max);
    pool->max = max;
    return SP_OK;
}


const char *sp_pool_name(const sp_pool *pool) {
    if (!pool) sp__null_pool("sp_pool_name");
    return pool ? pool->name : NULL;
}
