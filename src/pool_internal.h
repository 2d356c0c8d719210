/* SPDX-License-Identifier: Zlib */
/* pool_internal.h -- what the pool's files share: the pool's structure (split by concern), the
   spans its members live in, a member's state (a bit for a plain lease, a word for the rest),
   and the small helpers every file inlines. docs/design.md explains the layout. Private. */
#ifndef SP_POOL_INTERNAL_H
#define SP_POOL_INTERNAL_H

#include "sp_internal.h"
#include "source.h"

#include <stdatomic.h>
#include <string.h>

/* ---- a member's word ------------------------------------------------------------------------
   Every member slot has a 32-bit word: life << SP__FLAG_BITS | flags. A plain lease (no hook,
   no handle, memory order, one thread) never touches it: its state is one byte in the pool's
   plain map, and its word still says FREE. Every other lease is in the word (LEASED):
   leases of pools with hooks or acquisition order, of thread-safe pools, and a plain lease
   once a handle is taken of it (sp_handle_of moves it from the byte to the word).
   The life counts only lives that had a handle: HANDLED marks a lease whose handle went out,
   and only the end of such a lease moves the life on, so plain churn never writes a word. A
   word's life is relative to the pool's tag (life_base): a handle carries life + life_base. */
enum {
    SP__UNBUILT = 0u, /* no member built in the slot */
    SP__FREE = 1u,    /* built; leased plainly when its byte in the plain map is set */
    SP__LEASED = 2u,  /* leased, in the word */
    SP__RETIRED = 3u, /* its life counter is exhausted: never used again */
    SP__STATE_MASK = 3u,
    SP__BUSY = 4u,      /* a hook runs on the member: it must not be released or reclaimed */
    SP__RELEASING = 8u, /* (with BUSY) its on_release runs: iteration no longer visits it */
    SP__HANDLED = 16u,  /* a handle of this life went out: its end moves the life on */
    SP__MARKED = 32u,   /* leased when sp_release_all began (memory order) */
    SP__FLAG_BITS = 6u
};
#define SP__FLAGS_MASK ((1u << SP__FLAG_BITS) - 1u)

static inline uint32_t word_life(uint32_t w) { return w >> SP__FLAG_BITS; }
static inline uint32_t word_state(uint32_t w) { return w & SP__STATE_MASK; }
static inline uint32_t word_make(uint32_t life, uint32_t flags) { return life << SP__FLAG_BITS | flags; }
/* The highest life a slot handed out a handle of: lives move on only when a life with a handle
   ends, so every life below the word's was; the word's own only while its lease has a handle out
   (or, retired, it was the last). */
static inline uint32_t word_issued(uint32_t w) {
    bool own = (word_state(w) == SP__LEASED && (w & SP__HANDLED)) || word_state(w) == SP__RETIRED;
    return own ? word_life(w) : word_life(w) - 1u;
}

/* ---- spans ------------------------------------------------------------------------------------
   A span is one block of memory holding `cap` members and their bookkeeping, laid out as
   [span header][words][links (acquisition order)][debug records (SP_DEBUG)][members], from the
   block's start or a few cache lines into it (its colour: see span_colour). Its
   members have the slot indices first .. first + cap - 1. `count` of them have been built at
   least once since the span was made: their bookkeeping exists and release, resolve and
   iteration recognise them; the rest are memory only. A span never moves, and neither does its
   bookkeeping, so other threads may read a thread-safe pool's words while it grows.
   The span's memory comes from the shared source (a block of address space, committed as the
   span fills), the pool's allocator (the fallback: allocated whole) or the fixed buffer. */
typedef struct sp__olink {
    uint32_t next, prev; /* the lease list (SP__NIL at its ends) */
    uint32_t stamp;      /* the acquisition's sequence number (the low 32 bits of acquired) */
} sp__olink;

enum { SP__AREA_WORDS, SP__AREA_LINKS, SP__AREA_DBG, SP__AREA_ITEMS, SP__AREAS };

typedef struct sp__span {
    unsigned char *items; /* member 0 */
    _Atomic uint32_t *words;
    sp__olink *links; /* acquisition order only */
#if SP_DEBUG
    sp__dbg *dbg;
#endif
    uint32_t first;         /* slot index of member 0 */
    uint32_t cap;           /* members it can hold */
    _Atomic uint32_t count; /* members with bookkeeping: the recognised ones */
    uint32_t built;         /* members built now */
    uint32_t life_start;    /* the life of a slot whose bookkeeping starts now */
    uint32_t rec;           /* its record's number */
    sp_pool *pool;
    /* where its memory came from */
    sp__block block;                /* a source's block, or the allocator's (base, size) */
    bool from_source;               /* the block is the source's (else the allocator's or the
                                       fixed buffer) */
    size_t area_at[SP__AREAS];      /* where each area starts, from block.base */
    size_t committed[SP__AREAS];    /* bytes of each area committed (source spans that fill) */
} sp__span;

/* ---- span numbers: slot indices in ranges of powers of two ----------------------------------
   Record 0 holds slot indices [0, 2^shift), record k >= 1 [2^(shift+k-1), 2^(shift+k)), where
   2^shift is the first span's size rounded up to a power of two: a slot index names its record
   by its bit length, in O(1) and with no search. Spans double as a pool grows, so a pool of n
   members has O(log n) records, at most 25 (a first span of one member, up to 2^24 slots). */
static inline uint32_t sp__bitlen(uint32_t x) { /* floor(log2(x)) + 1; 0 for 0; x < 2^31 */
#if defined(__GNUC__) || defined(__clang__)
    return 31u - (uint32_t)__builtin_clz(2u * x + 1u); /* no branch: random indices guess it wrong */
#else
    uint32_t n = 0;
    for (; x; x >>= 1) n++;
    return n;
#endif
}
static inline uint32_t rec_of(uint32_t shift, uint32_t idx) { return sp__bitlen(idx >> shift); }
/* (the pool's shift: see sp__hot; set with record 0, before its span is published) */
#define SP__REC_SHIFT(p) atomic_load_explicit(&(p)->hot.rec_shift, memory_order_relaxed)
static inline uint32_t rec_first(uint32_t shift, uint32_t k) { return k ? (uint32_t)1 << (shift + k - 1u) : 0u; }
static inline uint32_t rec_range(uint32_t shift, uint32_t k) { return (uint32_t)1 << (k ? shift + k - 1u : shift); }

/* The record of a span number: its slot indices, kept when its span is given back, so that a
   later span of the same number uses them again, its lives above every life they handed out. */
typedef struct sp__span_rec {
    _Atomic(sp__span *) span; /* NULL while it has no memory */
    uint32_t first, cap;
    uint32_t life_floor;      /* the highest life its earlier spans' slots reached */
} sp__span_rec;

/* The span numbers: the first from chunk_items (or max), each later one as large as all before
   it, up to the slot limit: 26 in the worst case (a first span of one member). */
#define SP__SPAN_RECS 26u

/* ---- the pool ------------------------------------------------------------------------------ */

/* What sp_acquire and sp_release read and write. The plain path of each is a few instructions
   (sp__acquire_plain, and sp_release's in lease.c): anything else is routed out of it by the
   fields that sp__routes_update derives, plain_floor, top_plain and by_map. */
typedef struct sp__hot {
    unsigned char *stack; /* the free members' slot indices, 3 bytes each (see stack_push) */
    uint32_t free_top;    /* the stack's top in bytes (3 x the free members): the next is below */
    uint32_t plain_floor; /* 0 when a free member may be leased plainly, else UINT32_MAX: every
                             acquisition takes the general path */
    uint32_t peak_top;    /* leased reaches a new peak when free_top goes below this */
    uint32_t top_first;   /* the top span's first slot index */
    uint32_t top_plain;   /* a pool of one span with a byte map: its count when its releases may
                             be plain, else 0 */
    uint32_t top_wide;    /* the same with a map of bits */
    bool plain_release;   /* releases may be plain (see sp__routes_update) */
    bool plain_bits;      /* the plain map has a bit a slot, not a byte: plain_in_bits(plain_cap) */
    uint32_t stride_rot;  /* stride = odd << stride_rot */
    uintptr_t top_items;  /* the top span's member 0 */
    const sp__owner_map *by_map; /* a pool of several spans, all from the source, whose releases
                             may be plain: the source's map, through which they find their span */
    sp__owner_near near;  /* by_map's shortcut to the chunk of the top span (others' spans are
                             almost always in it too) */
    uintptr_t one_base;   /* a pool of one span with a byte map: its span_base (below), read
                             with the pool's other hot fields; else 0 */
    uintptr_t wide_base;  /* the same with a map of bits */
    uint64_t stride_inv;  /* the inverse of the odd part of stride, mod 2^64 */
    size_t stride;
    unsigned char *plain; /* the plain map: slot i is leased plainly (see plain_test) */
    uint64_t acquired;
    _Atomic uint32_t rec_shift; /* record 0 holds slot indices [0, 2^rec_shift): see rec_of
                                   (atomic: a thread-safe pool's lookups read it lock-free) */
    /* Of each live span, member 0's address less its first slot index times the stride: a
       member's address from its slot index alone (the plain acquisition from any span). */
    uintptr_t span_base[SP__SPAN_RECS];
} sp__hot;

/* What the descriptor said (after defaults). */
typedef struct sp__config {
    size_t item_size, item_align;
    size_t max;         /* 0: unbounded; sp_set_max changes it */
    size_t chunk_items; /* the first span's members (and the fallback's first range) */
    sp_overflow overflow;
    bool ordered; /* SP_ORDER_ACQUISITION: the lease list is kept */
    bool fixed;   /* everything lives in the caller's buffer */
    sp_create_fn create;
    sp_acquire_fn on_acquire;
    sp_release_fn on_release;
    sp_dispose_fn dispose;
    sp_priority_fn priority;
    void *user;
    sp_allocator allocator;
    sp_logger logger;
} sp__config;

/* Where the members live. */
typedef struct sp__members {
    sp__span_rec recs[SP__SPAN_RECS];
    _Atomic uint32_t rec_count;
    _Atomic(sp__span *) top;  /* the live span with the highest slot indices, NULL: none */
    sp__span *by_address[SP__SPAN_RECS]; /* the live spans, lowest address first */
    uint32_t live;            /* entries in by_address */
    size_t size;              /* built members */
    size_t limbo;             /* built members neither leased nor in the stack (being built,
                                 disposed, or doomed by a teardown) */
    uint32_t stack_cap, plain_cap; /* entries of hot.stack, slots hot.plain covers */
    uint32_t holes;           /* unbuilt slots below their spans' counts (disposed members) */
    uint32_t hole_cursor;     /* no hole lies below this slot index */
    uint32_t room_rec;        /* no span below this record has room to build in */
    size_t bytes;             /* memory held: committed, allocated, or the fixed buffer */
    size_t bytes_reserved;    /* address space of the spans' blocks */
    sp__source *source;       /* spans' blocks come from here; NULL: from the allocator */
    /* the source's map of owners, once a span came from it (thread-safe pools read it lock-free:
       set once, and the map stays while any pool uses the source) */
    _Atomic(const sp__owner_map *) owners;
    bool own_source;          /* a custom allocator's source, destroyed with the pool */
    bool source_failed;       /* the source had no block: spans come from the allocator now */
    size_t capacity;          /* fixed buffer: the members it holds */
    unsigned char *fixed_area; /* fixed buffer: where its span goes */
    size_t fixed_area_size;
} sp__members;

/* What runs now, and the state of the slow paths. */
typedef struct sp__activity {
    int hook_depth; /* hooks of this pool running now (priority, sp_each callbacks, the logger
                       and the allocator's functions included) */
    int allocating; /* allocator callbacks running: growth and sp_prewarm are refused */
    bool destroying;
    bool tearing_down; /* sp_clear or sp_pool_destroy: acquisitions are refused */
    uint8_t frozen;    /* a callback that reads the pool as it is runs (sp__freeze: priority, a
                          snapshot's save or load): acquire, release, release_all and prewarm
                          are refused */
    size_t peak_leased;
    uint32_t reclaim_cursor; /* memory order: a reclaim looks for its victim from here */
    uint32_t lease_head, lease_tail; /* acquisition order: oldest and newest lease */
    uint64_t stamp_origin;   /* acquisition stamps rank as stamp - origin (see stamps_fresh) */
#if SP_DEBUG
    sp__one_thread one; /* the thread inside a call now: two at once is misuse */
#endif
} sp__activity;

/* Handles: the tag the pool took with its first handle. */
typedef struct sp__handles {
    bool tagged;
    uint32_t tag;
    uint32_t life_base; /* a handle's life is its word's life plus this */
    uint64_t refused;   /* handles refused for want of a tag: the line is rate-limited */
} sp__handles;

#define SP__NAME_CAP 48

struct sp_pool {
    sp__hot hot;
    sp__members mem;
    sp__config cfg;
    sp__counters counters;
    sp__activity act;
    sp__handles handles;
    const struct sp__pool_owner *owner_fns; /* the owner (the registry) and its interface */
    void *owner;
    struct sp__ts *ts; /* thread-safe pools: their layer's state (threads.h), else NULL */
    char name[SP__NAME_CAP];
};

/* ---- what the pool's files offer each other ------------------------------------------------ */
/* lease.c */
void sp__routes_update(sp_pool *p);
/* Around a callback that reads the pool as it is (lease.c): see sp__activity.frozen. freeze
   returns what thaw puts back. */
uint8_t sp__freeze(sp_pool *p, uint8_t by);
void sp__thaw(sp_pool *p, uint8_t was);
void *sp__acquire_general(sp_pool *p, const void *arg, bool force);
sp_result sp__release_general(sp_pool *p, void *item);
void sp__lease_word(sp_pool *p, uint32_t idx, const void *arg, bool run_hook);
sp_result sp__release_index(sp_pool *p, uint32_t idx, void *item);
sp_result sp__release_foreign(const sp_pool *p, const void *item);
void sp__reclaim_or_drop(sp_pool *p);
/* members.c */
size_t sp__span_layout(size_t stride, size_t items_align, bool ordered, uint32_t cap, size_t page,
                       size_t at[SP__AREAS]);
bool sp__pool_memory_init(sp_pool *p, const sp_desc *d);
void sp__pool_memory_fini(sp_pool *p);
uint32_t sp__member_build(sp_pool *p, bool past_max);
void sp__member_dispose(sp_pool *p, uint32_t idx, bool ends_life);
void sp__member_retire(sp_pool *p, uint32_t idx);
void sp__spans_release_empty(sp_pool *p);
void sp__holes_rebuild(sp_pool *p);
bool sp__stack_reserve(sp_pool *p, size_t need);
bool sp__spans_register(sp_pool *p, const sp__pool_owner *fns, void *owner);
uint32_t sp__index_searched(const sp_pool *p, uintptr_t a);
uint32_t sp__highest_life(const sp_pool *p);
bool sp__span_restore(sp_pool *p, uint32_t k, uint32_t count, uint32_t life_start);
/* handles.c */
bool sp__tag_take(sp_pool *p);
/* iterate.c */
uint32_t sp__leased_from(const sp_pool *p, uint32_t from);
uint32_t sp__leased_first(const sp_pool *p);
uint32_t sp__leased_next(const sp_pool *p, uint32_t idx);
uint32_t sp__leased_end(const sp_pool *p);
void sp__stamps_fresh(sp_pool *p);
void sp__leased_site(const sp_pool *p, uint32_t idx, const char **file, int *line);
/* stats.c */
size_t sp__report_sites(const sp_pool *p, const char *what, sp_log_level level);
/* pool.c */
void sp__log(const sp_pool *pool, sp__msg msg, ...);
void sp__log_level(const sp_pool *pool, sp_log_level level, sp__msg msg, ...);

#define SP__DEFAULT_CHUNK_ITEMS 256u
#define SP__MAX_ALIGN ((size_t)65536)

/* ---- words: relaxed atomics, so that a thread-safe pool's other threads may read them ------ */
static inline uint32_t wload(const _Atomic uint32_t *w) { return atomic_load_explicit(w, memory_order_relaxed); }
static inline void wstore(_Atomic uint32_t *w, uint32_t v) { atomic_store_explicit(w, v, memory_order_relaxed); }
static inline uint32_t span_count(const sp__span *s) { return atomic_load_explicit(&s->count, memory_order_relaxed); }
static inline sp__span *rec_span(const sp__span_rec *r) { return atomic_load_explicit(&r->span, memory_order_relaxed); }
static inline uint32_t rec_count(const sp_pool *p) { return atomic_load_explicit(&p->mem.rec_count, memory_order_relaxed); }
static inline sp__span *top_span(const sp_pool *p) { return atomic_load_explicit(&p->mem.top, memory_order_relaxed); }

/* ---- from a slot index to its span, its word, its member ----------------------------------- */

/* The live span holding slot idx's bookkeeping (idx below its count), or NULL: the top span,
   else its record from the index's bit length (rec_of), no search. */
static inline sp__span *span_of(const sp_pool *p, uint32_t idx) {
    sp__span *t = top_span(p); /* (every member of a pool of one span: no span number needed) */
    if (SP__LIKELY(t && idx - t->first < span_count(t))) return t;
    uint32_t k = rec_of(SP__REC_SHIFT(p), idx);
    if (k >= rec_count(p)) return NULL;
    sp__span *s = rec_span(&p->mem.recs[k]);
    return s && idx - s->first < span_count(s) ? s : NULL;
}

static inline _Atomic uint32_t *word_in(const sp__span *s, uint32_t idx) { return &s->words[idx - s->first]; }
static inline void *item_in(const sp_pool *p, const sp__span *s, uint32_t idx) {
    return s->items + (size_t)(idx - s->first) * p->hot.stride;
}
/* The word and member of a slot with bookkeeping (the caller knows it has). */
static inline _Atomic uint32_t *word_at(const sp_pool *p, uint32_t idx) { return word_in(span_of(p, idx), idx); }
static inline void *item_at(const sp_pool *p, uint32_t idx) { return item_in(p, span_of(p, idx), idx); }
static inline sp__olink *olink_at(const sp_pool *p, uint32_t idx) {
    sp__span *s = span_of(p, idx);
    return &s->links[idx - s->first];
}
#if SP_DEBUG
static inline sp__dbg *dbg_at(const sp_pool *p, uint32_t idx) {
    sp__span *s = span_of(p, idx);
    return &s->dbg[idx - s->first];
}
#endif

/* ---- from an address to its slot index -----------------------------------------------------
   Which member of a span whose members start at `base` address a starts: a number below the
   span's count exactly when a is the start of that member. One comparison checks range and
   stride alignment at once: for odd d with inverse inv, x * inv (mod 2^64) is x / d when d
   divides x and at least 2^64 / d otherwise; rotating first sends misaligned offsets (and
   addresses below the span, which wrap) far above any count. So any other pointer is refused
   by arithmetic, reading nothing outside the pool's own bookkeeping. */
static inline uint64_t rotr64(uint64_t x, uint32_t r) { return (x >> r) | (x << ((64u - r) & 63u)); }

static inline uint64_t member_number(const sp_pool *p, uintptr_t base, uintptr_t a) {
    return rotr64((uint64_t)(a - base), p->hot.stride_rot) * p->hot.stride_inv;
}

/* The span of the source's block that address a lies in, or NULL: the map of owners holds live
   spans only, so its header (its first cache line: items, first, count, pool) is the library's
   memory to read, whichever pool it belongs to. */
static inline const sp__span *span_by_map(const sp__owner_map *m, const void *a) {
    return (const sp__span *)sp__owner_at(m, a);
}
/* The same, through a shortcut to one chunk of the map (one load for an address in it). */
static inline const sp__span *span_by_near(sp__owner_near near, const sp__owner_map *m, const void *a) {
    return (const sp__span *)sp__owner_near_at(near, m, a);
}

/* The span of p's from the source that address a lies in, or NULL, through the shortcut near
   (the map is set once: a thread-safe pool's other threads read it lock-free). */
static inline const sp__span *own_span_by_map(const sp_pool *p, sp__owner_near near, const void *a) {
    const sp__span *s = span_by_near(near, atomic_load_explicit(&p->mem.owners, memory_order_acquire), a);
    return s && s->pool == p ? s : NULL;
}

/* The slot index of the member starting at a in span s (the map's for a), or SP__NIL when s is
   not p's or a is not the start of one of its members. */
static inline uint32_t index_in_span(const sp_pool *p, const sp__span *s, uintptr_t a) {
    if (!s || s->pool != p) return SP__NIL;
    uint64_t q = member_number(p, (uintptr_t)s->items, a);
    return q < span_count(s) ? s->first + (uint32_t)q : SP__NIL;
}
static inline uint32_t index_by_map(const sp_pool *p, uintptr_t a) {
    return index_in_span(p, span_by_map(atomic_load_explicit(&p->mem.owners, memory_order_acquire), (const void *)a), a);
}

/* The slot index of the member starting at item, or SP__NIL for anything that is not the start
   of one of this pool's members with bookkeeping. The top span first, then the others. */
static inline uint32_t index_of(const sp_pool *p, const void *item) {
    sp__span *t = top_span(p);
    if (SP__LIKELY(t != NULL)) {
        uint64_t q = member_number(p, (uintptr_t)t->items, (uintptr_t)item);
        if (SP__LIKELY(q < span_count(t))) return t->first + (uint32_t)q;
    }
    return p->mem.live > 1u ? sp__index_searched(p, (uintptr_t)item) : SP__NIL;
}

/* ---- the plain map: set while a member is leased plainly --------------------------------
   A byte a member in a pool of up to SP__PLAIN_BITS_FROM slots, a bit above. The byte's store
   and compare are the cheaper pair while the map stays in cache; a large pool's byte map does
   not (a million members: 1 MiB against 128 KiB of bits), and under random churn its miss costs
   more than the bit's read and write back (measured in `make bench`: checked_plan_byte and
   checked_plan, the two floors). Which one a map is follows from its slots (plain_cap) alone;
   hot.plain_bits says it on the plain paths' line. */
#define SP__PLAIN_BITS_FROM (1u << 17)
static inline bool plain_in_bits(size_t slots) { return slots > SP__PLAIN_BITS_FROM; }
static inline size_t plain_map_bytes(size_t slots) { return plain_in_bits(slots) ? (slots + 7u) / 8u : slots; }
static inline unsigned char plain_bit(uint32_t idx) { return (unsigned char)(1u << (idx % 8u)); }
/* The pool's map becomes `map`, of `slots` slots: its kind follows, set here only. */
static inline void plain_map_set(sp_pool *p, unsigned char *map, uint32_t slots) {
    p->hot.plain = map;
    p->mem.plain_cap = slots;
    p->hot.plain_bits = plain_in_bits(slots);
}
static inline bool plain_test(const sp_pool *p, uint32_t idx) {
    if (idx >= p->mem.plain_cap) return false;
    return p->hot.plain_bits ? (p->hot.plain[idx / 8u] & plain_bit(idx)) != 0 : p->hot.plain[idx] != 0;
}
/* The plain paths' set and test-and-clear for each kind of map: those of a pool the routes say
   has one (one_base and top_plain for bytes, wide_base and top_wide for bits) call them
   directly. */
static inline void plain_byte_set(sp_pool *p, uint32_t idx) { p->hot.plain[idx] = 1u; }
static inline bool plain_byte_take(sp_pool *p, uint32_t idx) {
    if (p->hot.plain[idx] == 0) return false;
    p->hot.plain[idx] = 0u;
    return true;
}
static inline void plain_bit_set(sp_pool *p, uint32_t idx) { p->hot.plain[idx / 8u] |= plain_bit(idx); }
static inline bool plain_bit_take(sp_pool *p, uint32_t idx) {
    unsigned char *b = &p->hot.plain[idx / 8u];
    if (!(*b & plain_bit(idx))) return false;
    *b &= (unsigned char)~plain_bit(idx);
    return true;
}
static inline void plain_set(sp_pool *p, uint32_t idx) {
    if (p->hot.plain_bits)
        plain_bit_set(p, idx);
    else
        plain_byte_set(p, idx);
}
static inline void plain_clear(sp_pool *p, uint32_t idx) {
    if (p->hot.plain_bits)
        p->hot.plain[idx / 8u] &= (unsigned char)~plain_bit(idx);
    else
        p->hot.plain[idx] = 0u;
}
/* The plain release's test and clear: false when idx is not leased plainly. */
static inline bool plain_take(sp_pool *p, uint32_t idx) {
    return p->hot.plain_bits ? plain_bit_take(p, idx) : plain_byte_take(p, idx);
}

/* A member's state whatever holds it: leased (plainly or in its word), and visible to iteration
   (leased and not in its on_release). */
static inline bool slot_leased(const sp_pool *p, uint32_t idx, uint32_t w) {
    return word_state(w) == SP__LEASED || (word_state(w) == SP__FREE && plain_test(p, idx));
}
static inline bool slot_visible(const sp_pool *p, uint32_t idx, uint32_t w) {
    return slot_leased(p, idx, w) && !(w & SP__RELEASING);
}

/* ---- the stack of free members -----------------------------------------------------------
   Slot indices are below 2^24, so an entry is 3 bytes (the bookkeeping of a member in memory
   order: its word, its entry and its plain byte, 8 bytes). The top is kept in bytes, so the
   plain paths never scale it, and the array has one byte more than its entries: on a
   little-endian machine an entry is read as 4 bytes and masked, and one pushed at the top is
   written as 4, the fourth byte landing above the top, where nothing is kept. */
#define SP__ENTRY 3u
#if (defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__) || defined(_M_X64) || \
    defined(_M_IX86) || defined(_M_ARM64)
#  define SP__ENTRY_WORDS 1
#else
#  define SP__ENTRY_WORDS 0
#endif
static inline size_t stack_bytes(size_t entries) { return entries * SP__ENTRY + 1u; }
static inline uint32_t free_count(const sp_pool *p) { return p->hot.free_top / SP__ENTRY; }
static inline uint32_t entry_read(const unsigned char *e) {
#if SP__ENTRY_WORDS
    uint32_t v;
    memcpy(&v, e, sizeof v);
    return v & 0xFFFFFFu;
#else
    return (uint32_t)e[0] | (uint32_t)e[1] << 8 | (uint32_t)e[2] << 16;
#endif
}
static inline void entry_write(unsigned char *e, uint32_t idx) {
    e[0] = (unsigned char)idx;
    e[1] = (unsigned char)(idx >> 8);
    e[2] = (unsigned char)(idx >> 16);
}
/* Writes the entry at the top (nothing above it is kept). */
static inline void entry_write_top(unsigned char *e, uint32_t idx) {
#if SP__ENTRY_WORDS
    memcpy(e, &idx, sizeof idx);
#else
    entry_write(e, idx);
#endif
}
static inline uint32_t stack_at(const sp_pool *p, uint32_t i) { return entry_read(p->hot.stack + (size_t)i * SP__ENTRY); }
static inline void stack_set(sp_pool *p, uint32_t i, uint32_t idx) { entry_write(p->hot.stack + (size_t)i * SP__ENTRY, idx); }
static inline void stack_push(sp_pool *p, uint32_t idx) {
    entry_write_top(p->hot.stack + p->hot.free_top, idx);
    p->hot.free_top += SP__ENTRY;
}
static inline uint32_t stack_pop(sp_pool *p) {
    p->hot.free_top -= SP__ENTRY;
    return entry_read(p->hot.stack + p->hot.free_top);
}

/* ---- counts ------------------------------------------------------------------------------ */

/* Members leased now: the built ones neither free nor in limbo. */
static inline size_t pool_leased(const sp_pool *p) {
    return p->mem.size - free_count(p) - p->mem.limbo;
}

/* The peak, kept by the plain path as the stack's top below which leased is a new peak:
   peak_leased = size - limbo - peak_top / 3 while nothing else moves. The general paths change
   size, limbo and the stack; they call peak_sync before (fold what the plain path recorded into
   peak_leased) and peak_set after (derive peak_top again, raising the peak if leased is above
   it). */
static inline void peak_sync(sp_pool *p) {
    size_t base = p->mem.size - p->mem.limbo;
    size_t low = p->hot.peak_top / SP__ENTRY;
    size_t seen = base > low ? base - low : 0;
    if (seen > p->act.peak_leased) p->act.peak_leased = seen;
}
static inline void peak_set(sp_pool *p) {
    size_t leased = pool_leased(p);
    if (leased > p->act.peak_leased) p->act.peak_leased = leased;
    size_t base = p->mem.size - p->mem.limbo;
    p->hot.peak_top = (uint32_t)(base > p->act.peak_leased ? base - p->act.peak_leased : 0) * SP__ENTRY;
}


/* ---- hooks -------------------------------------------------------------------------------
   Every hook runs with the member's BUSY flag set and the pool's hook depth raised, so that it
   cannot release its own member and destroy, clear and trim of the pool are refused. Spans never
   move, so a word pointer stays good across a hook. A thread-safe pool runs these under its
   lock (create, dispose, windows); its on_acquire and on_release run in magazine.c. */
#define SP__RUN_HOOK(p, w, item, call)                                                            \
    do {                                                                                          \
        sp__hook_frame frame_; /* a thread-safe pool's hooks leave a frame on their thread */     \
        if ((p)->ts) sp__ts_hook_enter(&frame_, (p), (item));                                     \
        wstore((w), wload(w) | SP__BUSY);                                                         \
        (p)->act.hook_depth++;                                                                    \
        call;                                                                                     \
        (p)->act.hook_depth--;                                                                    \
        wstore((w), wload(w) & ~(uint32_t)SP__BUSY);                                              \
        if ((p)->ts) sp__ts_hook_leave(&frame_);                                                  \
    } while (0)

/* The allocator's calls run in the middle of growth, trim and teardown: they count as hooks
   (destroy, clear and trim refused) and as allocating (growth and sp_prewarm refused). */
#define SP__IN_ALLOCATOR(p, call)                                                                 \
    do {                                                                                          \
        (p)->act.hook_depth++;                                                                    \
        (p)->act.allocating++;                                                                    \
        call;                                                                                     \
        (p)->act.allocating--;                                                                    \
        (p)->act.hook_depth--;                                                                    \
    } while (0)

static inline void *pool_alloc(sp_pool *p, size_t size, size_t align) {
    void *mem;
    SP__IN_ALLOCATOR(p, mem = sp__alloc(&p->cfg.allocator, size, align));
    return mem;
}

static inline void pool_free(sp_pool *p, void *ptr, size_t size) {
    if (ptr) SP__IN_ALLOCATOR(p, p->cfg.allocator.free(ptr, size, p->cfg.allocator.user));
}

/* ---- acquisition order: the lease list --------------------------------------------------- */
static inline void lease_append(sp_pool *p, uint32_t idx) {
    sp__olink *l = olink_at(p, idx);
    l->prev = p->act.lease_tail;
    l->next = SP__NIL;
    l->stamp = (uint32_t)p->hot.acquired;
    if (p->act.lease_tail != SP__NIL)
        olink_at(p, p->act.lease_tail)->next = idx;
    else
        p->act.lease_head = idx;
    p->act.lease_tail = idx;
}

static inline void lease_unlink(sp_pool *p, uint32_t idx) {
    const sp__olink *l = olink_at(p, idx);
    uint32_t prev = l->prev, next = l->next;
    if (prev != SP__NIL)
        olink_at(p, prev)->next = next;
    else
        p->act.lease_head = next;
    if (next != SP__NIL)
        olink_at(p, next)->prev = prev;
    else
        p->act.lease_tail = prev;
}

/* Acquisition stamps rank as stamp - origin: in acquisition order while every stamp in the lease
   list was taken less than 2^32 acquisitions after the origin (see sp__stamps_fresh). */
static inline uint32_t stamp_rank(const sp_pool *p, uint32_t idx) {
    return olink_at(p, idx)->stamp - (uint32_t)p->act.stamp_origin;
}

/* ---- debug bookkeeping around state changes; nothing at all with SP_DEBUG=0 -------------- */
#if SP_DEBUG
#  define DBG_FREED(p, idx, item) sp__dbg_freed((p), dbg_at((p), (idx)), (item), (p)->cfg.item_size, !(p)->cfg.create)
#  define DBG_LEASING(p, idx, item) sp__dbg_leasing((p), dbg_at((p), (idx)), (item), (p)->cfg.item_size, (idx))
#  define DBG_POISON(mem, size) sp__dbg_poison((mem), (size))
#  define DBG_UNPOISON(mem, size) sp__dbg_unpoison((mem), (size))
#  define DBG_SITE_CLEAR(p, idx) (dbg_at((p), (idx))->acq_file = NULL)
#else
#  define DBG_FREED(p, idx, item) ((void)0)
#  define DBG_LEASING(p, idx, item) ((void)0)
#  define DBG_POISON(mem, size) ((void)0)
#  define DBG_UNPOISON(mem, size) ((void)0)
#  define DBG_SITE_CLEAR(p, idx) ((void)0)
#endif

static inline size_t round_up(size_t x, size_t a) { return (x + (a - 1u)) & ~(a - 1u); }

/* ---- the plain acquisition (lease.c's sp_acquire, and the size-class set's) -------------- */

/* One member leased from the stack (the plain path's count: see peak_sync). */
static inline void leased_from_stack(sp_pool *p) {
    if (p->hot.free_top < p->hot.peak_top) p->hot.peak_top = p->hot.free_top;
    p->hot.acquired++;
}

/* The plain acquisition of the stack's top entry, idx, of any span: for a pool whose
   free_top is above plain_floor. */
static inline void *sp__acquire_plain(sp_pool *p, uint32_t idx) {
    p->hot.free_top -= SP__ENTRY;
    leased_from_stack(p);
    /* (a pool of one span skips the span number, and with bytes the map's kind: branches its
       pool always takes the same way; the several spans' byte maps test nothing more) */
    uintptr_t base = p->hot.one_base;
    if (base) {
        plain_byte_set(p, idx);
    } else if (!p->hot.plain_bits) {
        plain_byte_set(p, idx);
        base = p->hot.span_base[rec_of(SP__REC_SHIFT(p), idx)];
    } else {
        plain_bit_set(p, idx);
        base = p->hot.wide_base;
        if (!base) base = p->hot.span_base[rec_of(SP__REC_SHIFT(p), idx)];
    }
    void *item = (void *)(base + (uintptr_t)idx * p->hot.stride);
    DBG_LEASING(p, idx, item);
    DBG_SITE_CLEAR(p, idx);
    return item;
}


#endif
