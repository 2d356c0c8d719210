/* SPDX-License-Identifier: Zlib */
/* members.c -- where members live (the header's MEMORY): a pool's spans, their memory (a block
   of the shared source committed as it fills, a range from the allocator, or the fixed
   buffer), the stack and plain map beside them, finding the span of an address, and building,
   disposing and retiring members. docs/design.md, "Memory", has the picture. */
#include "pool_internal.h"
#include "threads.h"

/* Where a span's members start: a cache line at least, so that members whose size is a
   multiple of 64 never straddle two lines. */
static size_t items_align(const sp_pool *p) { return p->cfg.item_align > 64u ? p->cfg.item_align : 64u; }

static void run_create(sp_pool *p, _Atomic uint32_t *w, void *item) {
    SP__RUN_HOOK(p, w, item, p->cfg.create(item, p->cfg.user));
}

static void run_dispose(sp_pool *p, _Atomic uint32_t *w, void *item) {
    if (p->cfg.dispose) SP__RUN_HOOK(p, w, item, p->cfg.dispose(item, p->cfg.user));
}

/* ---- a span's layout ----------------------------------------------------------------------
   [header][words][links][debug records][members]. Packed (page 1), for a span allocated or
   committed whole; with every area on its own pages, for a span committed as it fills (so that
   no page is committed twice). Returns the bytes it needs, 0 when that does not fit in a
   size_t. */
size_t sp__span_layout(size_t stride, size_t items_align, bool ordered, uint32_t cap, size_t page,
                       size_t at[SP__AREAS]) {
    const size_t elem[SP__AREAS] = {sizeof(uint32_t), ordered ? sizeof(sp__olink) : 0u, SP__DBG_BYTES, stride};
    const size_t align[SP__AREAS] = {_Alignof(uint32_t), _Alignof(sp__olink), 8u, items_align};
    size_t end = sizeof(sp__span);
    for (int a = 0; a < SP__AREAS; a++) {
        size_t al = page > align[a] ? page : align[a];
        end = round_up(end, al);
        at[a] = end;
        if (elem[a] && cap > (SIZE_MAX - end) / elem[a]) return 0;
        end += (size_t)cap * elem[a];
    }
    return end;
}

/* A fixed buffer's members keep the item's alignment (the buffer is the caller's); a span of
   its own starts its members at a cache line at least. */
static size_t span_layout(const sp_pool *p, uint32_t cap, size_t page, size_t at[SP__AREAS]) {
    return sp__span_layout(p->hot.stride, p->cfg.fixed ? p->cfg.item_align : items_align(p), p->cfg.ordered, cap,
                           page, at);
}

/* Of a span committed as it fills: the end of area a's part that `count` members need. */
static size_t area_need(const sp_pool *p, uint32_t count, int a, size_t page) {
    const size_t elem[SP__AREAS] = {sizeof(uint32_t), p->cfg.ordered ? sizeof(sp__olink) : 0u, SP__DBG_BYTES,
                              p->hot.stride};
    return round_up((size_t)count * elem[a], page);
}

/* Large spans of the process's source put their members in huge pages: at random access over
   many megabytes of members, nearly every access would otherwise miss the TLB. From this many
   bytes of members; their commits then end at huge page boundaries, so that at most one huge
   page's worth is committed ahead. (A custom allocator's virtual memory is left as it is.) */
#define SP__HUGE_ITEMS ((size_t)2 * SP__HUGE_PAGE)

static bool span_huge(const sp_pool *p, const sp__span *s) {
    bool platform = s->from_source && !p->mem.own_source;
    return platform && !s->block.committed && (size_t)s->cap * p->hot.stride >= SP__HUGE_ITEMS;
}

/* The bytes of area a that `count` members of span s get committed: whole pages, and the
   members of a huge span up to the next huge page boundary, within the area. */
static size_t commit_target(const sp_pool *p, const sp__span *s, int a, uint32_t count, size_t page) {
    size_t need = area_need(p, count, a, page);
    if (a != SP__AREA_ITEMS || !span_huge(p, s)) return need;
    size_t full = area_need(p, s->cap, a, page);
    uintptr_t start = (uintptr_t)(s->block.base + s->area_at[a]);
    size_t end = (size_t)(round_up(start + need, SP__HUGE_PAGE) - start);
    return end < full ? end : full;
}

/* Whether what `count` members of span s need is committed. */
static bool span_has(const sp_pool *p, const sp__span *s, uint32_t count) {
    if (s->block.committed) return true;
    size_t page = sp__os_page_size();
    for (int a = 0; a < SP__AREAS; a++)
        if (area_need(p, count, a, page) > s->committed[a]) return false;
    return true;
}

/* Commits what `count` members of span s need. False, with nothing more committed in the area
   that failed, when the system refuses. */
static bool span_commit(sp_pool *p, sp__span *s, uint32_t count) {
    if (s->block.committed) return true;
    size_t page = sp__os_page_size();
    for (int a = 0; a < SP__AREAS; a++) {
        size_t need = commit_target(p, s, a, count, page);
        if (need <= s->committed[a]) continue;
        bool ok;
        SP__IN_ALLOCATOR(p, ok = sp__source_commit(p->mem.source, s->block.base + s->area_at[a] + s->committed[a],
                                                   need - s->committed[a]));
        if (!ok) return false;
        if (a == SP__AREA_ITEMS) DBG_POISON(s->items + s->committed[a], need - s->committed[a]);
        p->mem.bytes += need - s->committed[a];
        s->committed[a] = need;
    }
    return true;
}

/* Decommits what a span of `count` members does not need: the members' pages above them.
   (Its bookkeeping stays: it is small.) */
static void span_decommit_above(sp_pool *p, sp__span *s, uint32_t count) {
    if (s->block.committed) return;
    size_t need = area_need(p, count, SP__AREA_ITEMS, sp__os_page_size());
    size_t have = s->committed[SP__AREA_ITEMS];
    if (need >= have) return;
    unsigned char *from = s->block.base + s->area_at[SP__AREA_ITEMS] + need;
    DBG_UNPOISON(from, have - need);
    SP__IN_ALLOCATOR(p, sp__source_decommit(p->mem.source, from, have - need));
    p->mem.bytes -= have - need;
    s->committed[SP__AREA_ITEMS] = need;
}

/* ---- the live spans -------------------------------------------------------------------- */

/* The top span (the live one with the highest slot indices) and the spans by address, derived
   again from the records whenever a span comes or goes; then the routes that depend on them. */
static void spans_index(sp_pool *p) {
    sp__span *top = NULL;
    uint32_t n = 0;
    for (uint32_t k = 0; k < rec_count(p); k++) {
        sp__span *s = rec_span(&p->mem.recs[k]);
        if (!s) continue;
        top = s;
        uint32_t at = n++;
        while (at > 0 && (uintptr_t)p->mem.by_address[at - 1u]->items > (uintptr_t)s->items) {
            p->mem.by_address[at] = p->mem.by_address[at - 1u];
            at--;
        }
        p->mem.by_address[at] = s;
        p->hot.span_base[k] = (uintptr_t)s->items - (uintptr_t)s->first * p->hot.stride;
    }
    p->mem.live = n;
    p->mem.room_rec = 0; /* a span came or went, or shrank: look again from the lowest */
    atomic_store_explicit(&p->mem.top, top, memory_order_release);
    sp__routes_update(p);
}

uint32_t sp__index_searched(const sp_pool *p, uintptr_t a) {
    /* A span of the source is named by the source's map of owners, in O(1) (see span_add); one
       from the allocator (a source that ran out) is found by address. */
    if (atomic_load_explicit(&p->mem.owners, memory_order_relaxed)) {
        uint32_t idx = index_by_map(p, a);
        if (idx != SP__NIL || !p->mem.source_failed) return idx;
    }
    uint32_t lo = 0, hi = p->mem.live; /* candidates: by_address[lo, hi) */
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2u;
        const sp__span *s = p->mem.by_address[mid];
        if (a < (uintptr_t)s->items) {
            hi = mid;
        } else if (a - (uintptr_t)s->items >= (uintptr_t)s->cap * p->hot.stride) {
            lo = mid + 1u;
        } else {
            uint64_t q = member_number(p, (uintptr_t)s->items, a);
            return q < span_count(s) ? s->first + (uint32_t)q : SP__NIL;
        }
    }
    return SP__NIL;
}

/* ---- the stack and the plain map ----------------------------------------------------------
   The stack holds every free member, so it has room for every built one; the plain map has a
   byte for every slot index of the records. Both grow (doubling: amortised O(1), on growth
   paths only; a pool with max stops at max, so a full pool has no slack) and may move: only the
   pool's own thread reads them, or a window of a thread-safe pool. A fixed buffer has both at
   its capacity from the start. */
static size_t grown_count(const sp_pool *p, size_t have, size_t need) {
    size_t n = have * 2u;
    if (n < p->cfg.chunk_items) n = p->cfg.chunk_items; /* a pool growing member by member */
    if (p->cfg.max && need <= p->cfg.max && n > p->cfg.max) n = p->cfg.max;
    if (n > SP__SLOT_LIMIT) n = SP__SLOT_LIMIT;
    return n < need ? need : n;
}

/* The array moves to `bytes` bytes, its first keep_bytes kept and the rest zeroed. */
static bool array_grow(sp_pool *p, void **array, size_t *cap_bytes, size_t bytes, size_t keep_bytes, const char *what) {
    if (p->cfg.fixed) return false;
    void *fresh = pool_alloc(p, bytes, _Alignof(uint64_t));
    if (!fresh) {
        sp__log(p, SP__MSG_NOMEM, what);
        return false;
    }
    if (keep_bytes) memcpy(fresh, *array, keep_bytes);
    memset((unsigned char *)fresh + keep_bytes, 0, bytes - keep_bytes);
    if (*array) pool_free(p, *array, *cap_bytes);
    p->mem.bytes += bytes - *cap_bytes;
    *array = fresh;
    *cap_bytes = bytes;
    return true;
}

bool sp__stack_reserve(sp_pool *p, size_t need) {
    if (need <= p->mem.stack_cap) return true;
    size_t cap = grown_count(p, p->mem.stack_cap, need);
    size_t bytes = p->hot.stack ? stack_bytes(p->mem.stack_cap) : 0u;
    void *a = p->hot.stack;
    if (!array_grow(p, &a, &bytes, stack_bytes(cap), p->hot.free_top, "the stack of free members")) return false;
    p->hot.stack = (unsigned char *)a;
    p->mem.stack_cap = (uint32_t)cap;
    return true;
}

/* The plain map for slot indices below `end` (pools that lease plainly: not thread-safe ones). */
static bool plain_reserve(sp_pool *p, uint32_t end) {
    if (p->ts || end <= p->mem.plain_cap) return true;
    size_t slots = round_up(grown_count(p, p->mem.plain_cap, end), 64u);
    size_t bytes = p->hot.plain ? plain_map_bytes(p->mem.plain_cap) : 0u;
    unsigned char *old = p->hot.plain;
    bool to_bits = plain_in_bits(slots) && !p->hot.plain_bits && old;
    void *a = to_bits ? NULL : old;
    size_t had = to_bits ? 0u : bytes;
    if (!array_grow(p, &a, &had, plain_map_bytes(slots), had, "the map of plain leases")) return false;
    if (to_bits) { /* from a byte a slot: the members leased plainly get their bit */
        unsigned char *bits = (unsigned char *)a;
        for (uint32_t i = 0; i < p->mem.plain_cap; i++)
            if (old[i]) bits[i / 8u] |= plain_bit(i);
        pool_free(p, old, bytes);
        p->mem.bytes -= bytes;
    }
    bool was_bits = p->hot.plain_bits;
    plain_map_set(p, (unsigned char *)a, (uint32_t)slots);
    if (p->hot.plain_bits != was_bits) sp__routes_update(p); /* the byte map's routes take it no more */
    return true;
}

/* ---- spans come and go ------------------------------------------------------------------ */

/* The members new record k holds: the first one chunk_items (a pool with max and a source: max,
   reserved at once and committed as it fills), each later one its range (as many as all the
   records before it), within max (unless growing past it) and the slot limit. */
static uint32_t rec_cap_for(const sp_pool *p, uint32_t k, uint32_t first, bool past_max) {
    if (p->cfg.fixed) return (uint32_t)p->mem.capacity; /* the buffer's one span, whatever max is now */
    uint64_t want;
    if (k == 0)
        want = p->cfg.max && p->mem.source && !past_max ? p->cfg.max : p->cfg.chunk_items;
    else
        want = rec_range(SP__REC_SHIFT(p), k);
    if (want == 0) want = 1;
    if (p->cfg.max && !past_max && first < p->cfg.max && want > p->cfg.max - first) want = p->cfg.max - first;
    if (want > SP__SLOT_LIMIT - first) want = SP__SLOT_LIMIT - first;
    return (uint32_t)want;
}

/* The most members a block of `size` bytes holds in the layout for `page`, at least `cap`. */
static uint32_t cap_filling(const sp_pool *p, uint32_t cap, size_t size, size_t page) {
    size_t at[SP__AREAS];
    size_t per = sizeof(uint32_t) + (p->cfg.ordered ? sizeof(sp__olink) : 0u) + SP__DBG_BYTES + p->hot.stride;
    size_t overhead = span_layout(p, 0, page, at);
    size_t fit = size > overhead ? (size - overhead) / per : 0;
    if (fit > SP__SLOT_LIMIT) fit = SP__SLOT_LIMIT;
    while (fit > cap && span_layout(p, (uint32_t)fit, page, at) > size) fit--;
    return fit > cap ? (uint32_t)fit : cap;
}

/* A block of the source for a span of cap members: small ones packed and committed whole, others
   laid out by pages and committed as they fill (*page). When the source has no block (address
   space or the limit of ulimit -v used up) the pool goes on with ranges from its allocator, as
   where there is no virtual memory: one info line, the first time. */
static bool block_from_source(sp_pool *p, uint32_t cap, sp__block *block, size_t *page) {
    size_t at[SP__AREAS];
    size_t packed = span_layout(p, cap, 1u, at);
    bool small = packed && packed <= SP__SMALL_BLOCK;
    *page = small ? 1u : sp__os_page_size();
    size_t want = small ? packed : span_layout(p, cap, *page, at);
    bool ok = false;
    if (want) SP__IN_ALLOCATOR(p, ok = sp__source_take(p->mem.source, want, block));
    if (ok) return true;
    *page = 1u;
    if (!p->mem.source_failed) sp__log(p, SP__MSG_NO_RESERVE, want);
    p->mem.source_failed = true;
    return false;
}

/* How far into a block committed whole its span starts. Blocks start at 64 KiB boundaries, so
   spans at their starts would put the header, first words and first members of every small
   pool in the same few cache sets, which a thread alternating between 8 pools already
   overflows. Each span takes the next of SP__COLOURS offsets a cache line apart, so that pools
   made one after another differ, within the block's slack beyond `bytes` (none for members
   aligned beyond a line: that would waste more). */
#define SP__COLOURS 16u
static size_t span_colour(const sp_pool *p, const sp__block *block, size_t bytes) {
    static _Atomic uint32_t next; /* a relaxed count: any spread of colours will do */
    if (!block->committed || block->size <= bytes || items_align(p) > 64u) return 0;
    size_t slack = block->size - bytes, line = 64u;
    size_t colour = (size_t)(atomic_fetch_add_explicit(&next, 1u, memory_order_relaxed) % SP__COLOURS) * line;
    return colour <= slack ? colour : (slack / line) * line;
}

/* Memory for a span of record k: a block of the source, the allocator's range, or the fixed
   buffer. A new record of an unbounded pool takes what its block has room for. NULL, with a
   line, when there is none. */
static sp__span *span_memory(sp_pool *p, uint32_t k, bool fresh) {
    sp__span_rec *r = &p->mem.recs[k];
    size_t at[SP__AREAS];
    sp__block block = {0};
    size_t page = 1u; /* the layout's area alignment: pages for a block committed as it fills */
    bool from_source = false;
    size_t colour = 0;
    if (p->cfg.fixed) {
        block.base = p->mem.fixed_area;
        block.size = p->mem.fixed_area_size;
        block.committed = true;
    } else if (p->mem.source && !p->mem.source_failed && block_from_source(p, r->cap, &block, &page)) {
        from_source = true;
        colour = span_colour(p, &block, span_layout(p, r->cap, page, at)); /* (small blocks: page 1) */
        if (fresh && !p->cfg.max) { /* what the block holds after its colour, in the record's range */
            uint32_t fill = cap_filling(p, r->cap, block.size - colour, page);
            uint32_t room = k ? rec_range(SP__REC_SHIFT(p), k) : (uint32_t)1 << 24;
            if (room > SP__SLOT_LIMIT - r->first) room = SP__SLOT_LIMIT - r->first;
            r->cap = fill < room ? fill : room;
        }
    } else {
        size_t bytes = span_layout(p, r->cap, 1u, at);
        void *mem = bytes ? pool_alloc(p, bytes, items_align(p)) : NULL;
        if (!mem) {
            sp__log(p, SP__MSG_NOMEM, "a range of members");
            return NULL;
        }
        block.base = (unsigned char *)mem;
        block.size = bytes;
        block.committed = true;
    }
    if (k == 0 && fresh) atomic_store_explicit(&p->hot.rec_shift, sp__bitlen(r->cap - 1u), memory_order_relaxed); /* 2^shift >= cap: see rec_of */
    (void)span_layout(p, r->cap, page, at);
    for (int a = 0; a < SP__AREAS; a++) at[a] += colour; /* offsets from block.base */
    if (!block.committed) { /* the header's page, now; the areas as the span fills */
        bool ok;
        SP__IN_ALLOCATOR(p, ok = sp__source_commit(p->mem.source, block.base, at[0]));
        if (!ok) {
            SP__IN_ALLOCATOR(p, sp__source_give(p->mem.source, &block));
            sp__log(p, SP__MSG_NOMEM, "committing a span");
            return NULL;
        }
    }
    sp__span *s = (sp__span *)(void *)(block.base + colour);
    memset(s, 0, sizeof *s);
    s->block = block;
    s->from_source = from_source;
    memcpy(s->area_at, at, sizeof at);
    s->items = block.base + at[SP__AREA_ITEMS];
    s->words = (_Atomic uint32_t *)(void *)(block.base + at[SP__AREA_WORDS]);
    s->links = p->cfg.ordered ? (sp__olink *)(void *)(block.base + at[SP__AREA_LINKS]) : NULL;
#if SP_DEBUG
    s->dbg = (sp__dbg *)(void *)(block.base + at[SP__AREA_DBG]);
#endif
    s->first = r->first;
    s->cap = r->cap;
    atomic_init(&s->count, 0u);
    s->life_start = r->life_floor + 1u;
    s->rec = k;
    s->pool = p;
    if (from_source) p->mem.bytes_reserved += block.size;
    if (span_huge(p, s)) sp__source_advise_huge(p->mem.source, s->items, area_need(p, s->cap, SP__AREA_ITEMS, page));
    if (!p->cfg.fixed) p->mem.bytes += block.committed ? block.size : at[0];
    return s;
}

#if SP_DEBUG
/* The bytes of span s's members that are committed: all, or as far as it filled. */
static size_t items_committed(const sp_pool *p, const sp__span *s) {
    return s->block.committed ? (size_t)s->cap * p->hot.stride : s->committed[SP__AREA_ITEMS];
}
#endif

/* Gives span s's memory back (its members are all disposed). */
static void span_memory_free(sp_pool *p, sp__span *s) {
    sp__block block = s->block;
    DBG_UNPOISON(s->items, items_committed(p, s));
    if (p->cfg.fixed) return;
    if (!s->from_source) {
        p->mem.bytes -= block.size;
        pool_free(p, block.base, block.size);
        return;
    }
    p->mem.bytes_reserved -= block.size;
    if (block.committed) {
        p->mem.bytes -= block.size;
    } else { /* the areas as far as they were committed, then the header's page */
        for (int a = SP__AREAS; a-- > 0;) {
            if (!s->committed[a]) continue;
            SP__IN_ALLOCATOR(p, sp__source_decommit(p->mem.source, block.base + s->area_at[a], s->committed[a]));
            p->mem.bytes -= s->committed[a];
        }
        size_t header = s->area_at[0];
        SP__IN_ALLOCATOR(p, sp__source_decommit(p->mem.source, block.base, header));
        p->mem.bytes -= header;
    }
    SP__IN_ALLOCATOR(p, sp__source_give(p->mem.source, &block));
}

/* Makes a span for record k (a new record, or one given back earlier) and publishes it. */
static bool span_add(sp_pool *p, uint32_t k, bool fresh) {
    sp__span_rec *r = &p->mem.recs[k];
    if (!plain_reserve(p, r->first + r->cap)) return false;
    sp__span *s = span_memory(p, k, fresh);
    if (!s) return false;
    if (!plain_reserve(p, r->first + r->cap)) { /* the block gave the record more */
        span_memory_free(p, s);
        return false;
    }
    if (p->owner && p->owner_fns->range_added(p->owner, p, (uintptr_t)s->items,
                                              (uintptr_t)s->items + (size_t)s->cap * p->hot.stride) != SP_OK) {
        span_memory_free(p, s);
        sp__log(p, SP__MSG_NOMEM, "its owner's index");
        return false;
    }
    DBG_POISON(s->items, items_committed(p, s));
    if (s->from_source) {
        sp__source_set_owner(p->mem.source, &s->block, s);
        atomic_store_explicit(&p->mem.owners, sp__source_map(p->mem.source), memory_order_release);
    }
    atomic_store_explicit(&r->span, s, memory_order_release);
    spans_index(p);
    return true;
}

/* A restored pool's span for record k (its slot indices, cap and floor set by the caller): the
   memory, `count` members' bookkeeping committed and zeroed, words left for the caller. */
bool sp__span_restore(sp_pool *p, uint32_t k, uint32_t count, uint32_t life_start) {
    if (!span_add(p, k, false)) return false;
    sp__span *s = rec_span(&p->mem.recs[k]);
    if (count && !span_commit(p, s, count)) {
        sp__log(p, SP__MSG_NOMEM, "committing members");
        return false; /* the span stays: the pool's teardown gives it back */
    }
    s->life_start = life_start;
    for (uint32_t i = 0; i < count; i++) wstore(&s->words[i], word_make(life_start, SP__UNBUILT));
#if SP_DEBUG
    if (count) memset(s->dbg, 0, (size_t)count * sizeof *s->dbg);
#endif
    atomic_store_explicit(&s->count, count, memory_order_release);
    spans_index(p); /* the plain release's bound */
    return true;
}

/* The highest life span s's slots handed out (relative lives). */
static uint32_t span_highest_life(const sp__span *s) {
    uint32_t high = s->life_start - 1u;
    for (uint32_t i = 0; i < span_count(s); i++) {
        uint32_t life = word_issued(wload(&s->words[i]));
        if (life > high) high = life;
    }
    return high;
}

/* Gives span s back: its record keeps its slot indices and the highest life they reached. */
static void span_remove(sp_pool *p, sp__span *s) {
    sp__span_rec *r = &p->mem.recs[s->rec];
    uint32_t high = span_highest_life(s);
    if (high > r->life_floor) r->life_floor = high;
    if (p->owner) p->owner_fns->range_removed(p->owner, (uintptr_t)s->items);
    atomic_store_explicit(&r->span, NULL, memory_order_release);
    spans_index(p);
    span_memory_free(p, s);
}

/* A record's slots can take more lives: its next span would start below the last life a handle
   can carry (with the reserve a tag promises: see tags.c). */
static bool rec_usable(const sp_pool *p, const sp__span_rec *r) {
    uint64_t base = p->handles.tagged ? p->handles.life_base : 0u;
    return (uint64_t)r->life_floor + 1u + base < SP__LIFE_MAX;
}

/* Room for one more member: a span whose count can grow, a record given back made again, or a
   new record. True when some span has a slot that can be built. */
static bool room_add(sp_pool *p, bool past_max) {
    /* A given-back record first: its slots are the lowest (members come lowest first). */
    for (uint32_t k = 0; k < rec_count(p); k++) {
        const sp__span_rec *r = &p->mem.recs[k];
        if (!rec_span(r) && rec_usable(p, r)) return span_add(p, k, false);
    }
    uint32_t k = rec_count(p);
    if (p->cfg.fixed && k > 0) return false; /* the buffer holds one span */
    if (k == SP__SPAN_RECS || (k && SP__REC_SHIFT(p) + k - 1u >= SP__SLOT_BITS)) {
        sp__log(p, SP__MSG_SLOTS_FULL);
        return false;
    }
    uint32_t first = rec_first(SP__REC_SHIFT(p), k);
    sp__span_rec *r = &p->mem.recs[k];
    atomic_init(&r->span, NULL);
    r->first = first;
    r->cap = rec_cap_for(p, k, first, past_max);
    r->life_floor = 0;
    atomic_store_explicit(&p->mem.rec_count, k + 1u, memory_order_release);
    if (span_add(p, k, true)) return true;
    atomic_store_explicit(&p->mem.rec_count, k, memory_order_release); /* nothing kept */
    return false;
}

/* ---- building members ------------------------------------------------------------------- */

/* The lowest hole (an unbuilt slot below its span's count), from the cursor up: each slot is
   passed over once between two trims, so building into holes is O(1) amortised. */
static uint32_t hole_take(sp_pool *p) {
    for (uint32_t k = 0; k < rec_count(p); k++) {
        sp__span *s = rec_span(&p->mem.recs[k]);
        if (!s || s->first + span_count(s) <= p->mem.hole_cursor) continue;
        uint32_t from = p->mem.hole_cursor > s->first ? p->mem.hole_cursor - s->first : 0u;
        for (uint32_t i = from; i < span_count(s); i++) {
            if (word_state(wload(&s->words[i])) != SP__UNBUILT) continue;
            p->mem.holes--;
            p->mem.hole_cursor = s->first + i + 1u;
            return s->first + i;
        }
    }
    p->mem.holes = 0; /* (not reached: the count says there is one) */
    return SP__NIL;
}

/* A slot to build in: the lowest hole, else the next slot of the lowest span with room (its
   count grows: its bookkeeping starts), else SP__NIL. */
static uint32_t slot_for_build(sp_pool *p) {
    if (p->mem.holes) {
        uint32_t idx = hole_take(p);
        if (idx != SP__NIL) return idx;
    }
    /* The lowest span with room (members come lowest first), from the cursor: spans below it
       are full, so each is passed over once between two changes of the spans. */
    for (uint32_t k = p->mem.room_rec; k < rec_count(p); k++) {
        sp__span *s = rec_span(&p->mem.recs[k]);
        uint32_t count = s ? span_count(s) : 0u;
        if (!s || count == s->cap) {
            if (k == p->mem.room_rec) p->mem.room_rec = k + 1u;
            continue;
        }
        /* Commit ahead in steps: a system call every chunk_items members or 1/64 of the span's,
           not every member. */
        uint32_t step = count / 64u > p->cfg.chunk_items ? count / 64u : (uint32_t)p->cfg.chunk_items;
        uint32_t ahead = s->cap - count > step ? count + step : s->cap;
        if (!span_has(p, s, count + 1u) && !span_commit(p, s, ahead) && !span_commit(p, s, count + 1u)) {
            sp__log(p, SP__MSG_NOMEM, "committing members");
            return SP__NIL - 1u;
        }
        wstore(&s->words[count], word_make(s->life_start, SP__UNBUILT));
#if SP_DEBUG
        memset(&s->dbg[count], 0, sizeof s->dbg[count]);
#endif
        atomic_store_explicit(&s->count, count + 1u, memory_order_release);
        if (s == top_span(p)) sp__routes_update(p); /* the plain release's bound */
        return s->first + count;
    }
    return SP__NIL;
}

uint32_t sp__member_build(sp_pool *p, bool past_max) {
    if (!sp__stack_reserve(p, p->mem.size + 1u)) return SP__NIL;
    uint32_t idx = slot_for_build(p);
    while (idx == SP__NIL) { /* each step adds a span with a slot to build, or fails */
        if (!room_add(p, past_max)) return SP__NIL;
        idx = slot_for_build(p);
    }
    if (idx == SP__NIL - 1u) return SP__NIL; /* no memory to commit */
    sp__span *s = span_of(p, idx);
    _Atomic uint32_t *w = word_in(s, idx);
    void *item = item_in(p, s, idx);
    DBG_UNPOISON(item, p->cfg.item_size);
    memset(item, 0, p->cfg.item_size);
    wstore(w, word_make(word_life(wload(w)), SP__FREE));
    s->built++;
    p->mem.size++;
    p->mem.limbo++; /* until the caller leases it or stacks it (leased and the peak stay) */
    p->counters.created++;
    if (p->cfg.create) run_create(p, w, item);
    return idx;
}

/* Destroys a member that is free, in no stack, or leased and out of the lease list: dispose runs
   and the slot becomes unbuilt, its life moved on when a handle of the life went out (or retired
   when its counter cannot count another). The caller has counted it out of leased or free. */
void sp__member_dispose(sp_pool *p, uint32_t idx, bool ends_life) {
    sp__span *s = span_of(p, idx);
    _Atomic uint32_t *w = word_in(s, idx);
    void *item = item_in(p, s, idx);
    DBG_UNPOISON(item, p->cfg.item_size);
    run_dispose(p, w, item);
    DBG_POISON(item, p->cfg.item_size);
    uint32_t word = wload(w), life = word_life(word);
    uint32_t state = SP__UNBUILT;
    if (ends_life && (word & SP__HANDLED)) {
        if ((uint64_t)life + p->handles.life_base >= SP__LIFE_MAX)
            state = SP__RETIRED;
        else
            life++;
    }
    wstore(w, word_make(life, state));
    if (plain_test(p, idx)) plain_clear(p, idx);
    if (state == SP__UNBUILT) {
        p->mem.holes++;
        if (idx < p->mem.hole_cursor) p->mem.hole_cursor = idx;
    }
    s->built--;
    p->mem.size--;
    p->mem.limbo--; /* (leased and the peak stay) */
    p->counters.disposed++;
}

/* A member whose last life has ended (in limbo): disposed, never used again. */
SP__NOINLINE void sp__member_retire(sp_pool *p, uint32_t idx) {
    sp__span *s = span_of(p, idx);
    _Atomic uint32_t *w = word_in(s, idx);
    void *item = item_in(p, s, idx);
    run_dispose(p, w, item); /* it was leased until now: not poisoned */
    DBG_POISON(item, p->cfg.item_size);
    wstore(w, word_make(word_life(wload(w)), SP__RETIRED));
    s->built--;
    p->mem.size--;
    p->mem.limbo--;
    p->counters.disposed++;
    sp__log(p, SP__MSG_RETIRED, idx);
}

/* ---- giving memory back (sp_trim, sp_clear) ----------------------------------------------- */

/* The holes again: how many unbuilt slots lie below their spans' counts, and the lowest. */
void sp__holes_rebuild(sp_pool *p) {
    p->mem.holes = 0;
    p->mem.hole_cursor = SP__NIL;
    for (uint32_t k = 0; k < rec_count(p); k++) {
        const sp__span *s = rec_span(&p->mem.recs[k]);
        for (uint32_t i = 0; s && i < span_count(s); i++) {
            if (word_state(wload(&s->words[i])) != SP__UNBUILT) continue;
            if (!p->mem.holes) p->mem.hole_cursor = s->first + i;
            p->mem.holes++;
        }
    }
}

/* Gives back the memory no built member needs: every span without a built member, and the
   pages of a span's members above its highest built (or retired) one: the slots there lose
   their bookkeeping, their record's floor keeping the lives they handed out, so that they start
   above them when they are built again. Then the holes again. */
void sp__spans_release_empty(sp_pool *p) {
    if (p->cfg.fixed) {
        sp__holes_rebuild(p);
        return;
    }
    for (uint32_t k = 0; k < rec_count(p); k++) {
        sp__span *s = rec_span(&p->mem.recs[k]);
        if (!s) continue;
        if (s->built == 0) {
            span_remove(p, s);
            continue;
        }
        /* (A retired slot keeps its bookkeeping: its last life stays on record.) */
        uint32_t end = span_count(s);
        while (end > 0 && word_state(wload(&s->words[end - 1u])) == SP__UNBUILT) end--;
        if (end < span_count(s)) {
            sp__span_rec *r = &p->mem.recs[k];
            for (uint32_t i = end; i < span_count(s); i++) {
                uint32_t life = word_issued(wload(&s->words[i]));
                if (life > r->life_floor) r->life_floor = life;
            }
            if (r->life_floor + 1u > s->life_start) s->life_start = r->life_floor + 1u;
            atomic_store_explicit(&s->count, end, memory_order_release);
            span_decommit_above(p, s, end);
            spans_index(p);
        }
    }
    sp__holes_rebuild(p);
}

/* ---- a pool's memory, from creation to destruction ---------------------------------------- */

bool sp__pool_memory_init(sp_pool *p, const sp_desc *d) {
    if (p->cfg.fixed) return true; /* pool.c laid the buffer out */
    sp__vm vm;
    (void)sp__allocator_vm(&d->allocator, &vm); /* checked by the descriptor's validation */
    if (!vm.reserve) return true;                /* the fallback: ranges from alloc */
    if (d->allocator.reserve) {                  /* the allocator's own virtual memory */
        p->mem.source = sp__source_create(&vm, &p->cfg.allocator);
        if (!p->mem.source) {
            sp__log(p, SP__MSG_NOMEM, "the pool's memory source");
            return false;
        }
        p->mem.own_source = true;
        return true;
    }
    p->mem.source = sp__source_shared_attach();
    return true;
}

void sp__pool_memory_fini(sp_pool *p) {
    for (uint32_t k = rec_count(p); k-- > 0;) {
        sp__span *s = rec_span(&p->mem.recs[k]);
        if (s) span_remove(p, s);
    }
    if (!p->cfg.fixed) {
        if (p->hot.stack) pool_free(p, p->hot.stack, stack_bytes(p->mem.stack_cap));
        pool_free(p, p->hot.plain, plain_map_bytes(p->mem.plain_cap));
    }
    if (p->mem.own_source)
        sp__source_destroy(p->mem.source);
    else if (p->mem.source)
        sp__source_shared_detach();
}

/* If the source cannot give a block (address space used up, ulimit -v), the pool goes on with
   ranges from its allocator, as where there is no virtual memory at all. */
bool sp__spans_register(sp_pool *p, const sp__pool_owner *fns, void *owner) {
    for (uint32_t k = 0; k < rec_count(p); k++) {
        const sp__span *s = rec_span(&p->mem.recs[k]);
        if (!s) continue;
        if (fns->range_added(owner, p, (uintptr_t)s->items, (uintptr_t)s->items + (size_t)s->cap * p->hot.stride) !=
            SP_OK) {
            while (k-- > 0)
                if (rec_span(&p->mem.recs[k])) fns->range_removed(owner, (uintptr_t)rec_span(&p->mem.recs[k])->items);
            sp__log(p, SP__MSG_NOMEM, "its owner's index");
            return false;
        }
    }
    p->owner_fns = fns;
    p->owner = owner;
    return true;
}

uint32_t sp__highest_life(const sp_pool *p) {
    uint32_t high = 0;
    for (uint32_t k = 0; k < rec_count(p); k++) {
        const sp__span_rec *r = &p->mem.recs[k];
        if (r->life_floor > high) high = r->life_floor;
        const sp__span *s = rec_span(r);
        if (!s) continue;
        uint32_t h = span_highest_life(s);
        if (h > high) high = h;
    }
    return high;
}
