/* SPDX-License-Identifier: Zlib */
/* source.c -- the shared memory source (see source.h): regions of reserved address space, cut
   into blocks by a buddy system, free small blocks kept committed in a cache, and the table
   from every segment to its block's owner. */
#include "source.h"

#include <stdatomic.h>
#include <string.h>

#define ORDERS 21u       /* a region holds at most 2^20 segments: 64 GiB */
#define MAP_CHUNKS_MAX (SP__REGIONS_MAX * 17u) /* a region of 64 GiB lies in 17 chunks of 4 GiB */
#define LEAF_BYTES (((size_t)1 << SP__MAP_BITS) * sizeof(sp__owner_slot))
#define NIL UINT32_MAX
/* head[seg] of a block's first segment: its order + 1, and what it is now. Other segments 0. */
#define HEAD_ORDER 0x3Fu
#define HEAD_FREE 0x40u   /* in a free list: uncommitted, merges with its buddy */
#define HEAD_CACHED 0x80u /* in a cache list: committed, kept whole for the next small take */

typedef struct region {
    unsigned char *raw;  /* as reserved: what release gets back */
    size_t raw_size;
    unsigned char *base; /* the first segment (raw aligned up to a segment) */
    uint32_t order;      /* the region is SP__SEGMENT << order bytes */
    uint8_t *head;       /* per segment */
    uint32_t *next, *prev;          /* free and cache lists, by segment number */
    uint32_t free_head[ORDERS], cache_head[ORDERS];
} region;

struct sp__source {
    sp__vm vm;
    sp_allocator meta; /* for the tables */
    atomic_flag lock;
    _Atomic uint32_t region_count; /* published after the region is whole */
    region regions[SP__REGIONS_MAX];
    _Atomic(sp__owner_map *) map;  /* made with the first region */
    uint32_t chunks[MAP_CHUNKS_MAX], chunk_count; /* the map's leaves: their directory entries */
    size_t reserved, cached;
    size_t next_region; /* the next region's size (the shared source doubles them) */
    bool grows;         /* the shared source: regions double; a private one reserves to need */
    bool platform;      /* the shared source: its memory is the platform's (huge pages) */
};

static void lock_take(sp__source *s) {
    while (atomic_flag_test_and_set_explicit(&s->lock, memory_order_acquire)) {
    }
}

static void lock_drop(sp__source *s) { atomic_flag_clear_explicit(&s->lock, memory_order_release); }

static uint32_t order_for(size_t size) {
    size_t segs = (size + SP__SEGMENT - 1u) >> SP__SEGMENT_SHIFT;
    uint32_t order = 0;
    while (((size_t)1 << order) < segs) order++;
    return order;
}

static size_t block_bytes(uint32_t order) { return SP__SEGMENT << order; }

/* ---- free and cache lists (doubly linked through the region's side arrays) ------------- */

static void list_push(region *r, uint32_t *head, uint32_t seg) {
    r->prev[seg] = NIL;
    r->next[seg] = *head;
    if (*head != NIL) r->prev[*head] = seg;
    *head = seg;
}

static void list_remove(region *r, uint32_t *head, uint32_t seg) {
    if (r->prev[seg] != NIL)
        r->next[r->prev[seg]] = r->next[seg];
    else
        *head = r->next[seg];
    if (r->next[seg] != NIL) r->prev[r->next[seg]] = r->prev[seg];
}

/* A free block of region r at seg, of `order`, merged with its buddies as far as they are free. */
static void block_free(region *r, uint32_t seg, uint32_t order) {
    while (order < r->order) {
        uint32_t buddy = seg ^ (1u << order);
        if (r->head[buddy] != (HEAD_FREE | (order + 1u))) break;
        list_remove(r, &r->free_head[order], buddy);
        r->head[buddy] = 0;
        r->head[seg] = 0;
        if (buddy < seg) seg = buddy;
        order++;
    }
    r->head[seg] = (uint8_t)(HEAD_FREE | (order + 1u));
    list_push(r, &r->free_head[order], seg);
}

/* Takes a free block of `order` from region r, splitting a larger one; NIL when none. */
static uint32_t block_split_take(region *r, uint32_t order) {
    uint32_t k = order;
    while (k <= r->order && r->free_head[k] == NIL) k++;
    if (k > r->order) return NIL;
    uint32_t seg = r->free_head[k];
    list_remove(r, &r->free_head[k], seg);
    while (k > order) { /* the upper half of each split stays free */
        k--;
        uint32_t upper = seg + (1u << k);
        r->head[upper] = (uint8_t)(HEAD_FREE | (k + 1u));
        list_push(r, &r->free_head[k], upper);
    }
    r->head[seg] = (uint8_t)(order + 1u);
    return seg;
}

/* ---- regions -------------------------------------------------------------------------- */

static void *meta_alloc(sp__source *s, size_t size) { return sp__alloc(&s->meta, size, 8u); }

static void meta_free(sp__source *s, void *p, size_t size) {
    if (p) s->meta.free(p, size, s->meta.user);
}

static size_t region_meta_bytes(uint32_t segs) { return (size_t)segs * (sizeof(uint8_t) + 2u * sizeof(uint32_t)); }

/* Zeroed memory of the source's virtual memory (the map's directory and leaves). */
static void *vm_zeroed(sp__source *s, size_t size) {
    void *m = s->vm.reserve(size, s->vm.user);
    if (m && !s->vm.commit(m, size, s->vm.user)) {
        s->vm.release(m, size, s->vm.user);
        m = NULL;
    }
    return m;
}

/* The map's leaves for every chunk [lo, hi) lies in (under the lock). False: no memory (the
   leaves made stay: they are empty). */
static bool map_cover(sp__source *s, uintptr_t lo, uintptr_t hi) {
    sp__owner_map *m = atomic_load_explicit(&s->map, memory_order_relaxed);
    if (!m) {
        m = (sp__owner_map *)vm_zeroed(s, sizeof *m);
        if (!m) return false;
        s->reserved += sizeof *m;
        atomic_store_explicit(&s->map, m, memory_order_release);
    }
    for (uint64_t c = (uint64_t)lo >> 32; c <= ((uint64_t)hi - 1u) >> 32; c++) {
        if (atomic_load_explicit(&m->leaf[c], memory_order_relaxed)) continue;
        if (s->chunk_count == MAP_CHUNKS_MAX) return false;
        sp__owner_slot *leaf = (sp__owner_slot *)vm_zeroed(s, LEAF_BYTES);
        if (!leaf) return false;
        s->reserved += LEAF_BYTES;
        s->chunks[s->chunk_count++] = (uint32_t)c;
        atomic_store_explicit(&m->leaf[c], leaf, memory_order_release);
    }
    return true;
}

/* The map and its leaves go (the source is going, or empty at unload). */
static void map_release(sp__source *s) {
    sp__owner_map *m = atomic_load_explicit(&s->map, memory_order_relaxed);
    if (!m) return;
    for (uint32_t i = 0; i < s->chunk_count; i++) {
        sp__owner_slot *leaf = atomic_load_explicit(&m->leaf[s->chunks[i]], memory_order_relaxed);
        atomic_store_explicit(&m->leaf[s->chunks[i]], NULL, memory_order_relaxed);
        s->vm.release(leaf, LEAF_BYTES, s->vm.user);
        s->reserved -= LEAF_BYTES;
    }
    s->chunk_count = 0;
    atomic_store_explicit(&s->map, NULL, memory_order_release);
    s->vm.release(m, sizeof *m, s->vm.user);
    s->reserved -= sizeof *m;
}

/* A new region that can hold a block of `order` (under the lock). False: the system refuses. */
static bool region_add(sp__source *s, uint32_t order) {
    uint32_t count = atomic_load_explicit(&s->region_count, memory_order_relaxed);
    if (count == SP__REGIONS_MAX) return false;
    size_t size = s->grows ? s->next_region : block_bytes(order);
    if (size < block_bytes(order)) size = block_bytes(order);
    uint32_t rorder = order_for(size);
    if (rorder >= ORDERS) return false;
    size = block_bytes(rorder);
    /* A segment more, so that the first block starts at a segment boundary; the platform's
       source, a huge page more and its boundary (see sp__source_advise_huge). */
    size_t align = s->platform ? SP__HUGE_PAGE : SP__SEGMENT;
    size_t raw_size = size + align;
    unsigned char *raw = (unsigned char *)s->vm.reserve(raw_size, s->vm.user);
    if (!raw) return false;
    uint32_t segs = 1u << rorder;
    unsigned char *meta = NULL;
    /* (the map covers addresses below 2^48: where every platform's user space lies) */
    bool mapped = (uint64_t)((uintptr_t)raw + raw_size) >> (32u + SP__MAP_BITS) == 0 &&
                  map_cover(s, (uintptr_t)raw, (uintptr_t)raw + raw_size);
    if (mapped) meta = (unsigned char *)meta_alloc(s, region_meta_bytes(segs));
    if (!meta) {
        s->vm.release(raw, raw_size, s->vm.user);
        return false;
    }
    region *r = &s->regions[count];
    memset(r, 0, sizeof *r);
    r->raw = raw;
    r->raw_size = raw_size;
    r->base = (unsigned char *)(((uintptr_t)raw + align - 1u) & ~(uintptr_t)(align - 1u));
    r->order = rorder;
    r->next = (uint32_t *)(void *)meta;
    r->prev = r->next + segs;
    r->head = (uint8_t *)(r->prev + segs);
    memset(r->head, 0, segs);
    for (uint32_t k = 0; k < ORDERS; k++) r->free_head[k] = r->cache_head[k] = NIL;
    r->head[0] = (uint8_t)(HEAD_FREE | (rorder + 1u));
    list_push(r, &r->free_head[rorder], 0);
    s->reserved += raw_size;
    /* the next region twice this one, up to 64 GiB (or half the address space) */
    uint64_t next = (uint64_t)size * 2u;
    if (s->grows && next <= ((uint64_t)1 << 36) && next <= (uint64_t)(SIZE_MAX / 2u)) s->next_region = (size_t)next;
    atomic_store_explicit(&s->region_count, count + 1u, memory_order_release);
    return true;
}

/* Decommits every cached block and frees it to the buddy lists (under the lock): when address
   space runs out, or a source goes. */
static void cache_drain(sp__source *s) {
    uint32_t n = atomic_load_explicit(&s->region_count, memory_order_relaxed);
    for (uint32_t i = 0; i < n; i++) {
        region *r = &s->regions[i];
        for (uint32_t k = 0; k < ORDERS; k++) {
            while (r->cache_head[k] != NIL) {
                uint32_t seg = r->cache_head[k];
                list_remove(r, &r->cache_head[k], seg);
                s->vm.decommit(r->base + ((size_t)seg << SP__SEGMENT_SHIFT), block_bytes(k), s->vm.user);
                s->cached -= block_bytes(k);
                block_free(r, seg, k);
            }
        }
    }
}

/* ---- the sources ---------------------------------------------------------------------- */

static sp__source shared_source;
static atomic_int shared_state; /* 0 unset, 1 being set, 2 ready, 3 none (no virtual memory) */

sp__source *sp__source_shared(void) {
    int st = atomic_load_explicit(&shared_state, memory_order_acquire);
    if (st == 2) return &shared_source;
    if (st == 3) return NULL;
    int expected = 0;
    if (atomic_compare_exchange_strong(&shared_state, &expected, 1)) {
        sp__vm vm;
        sp_allocator none;
        memset(&none, 0, sizeof none);
        (void)sp__allocator_vm(&none, &vm);
        if (!vm.reserve) {
            atomic_store_explicit(&shared_state, 3, memory_order_release);
            return NULL;
        }
        shared_source.vm = vm;
        shared_source.meta = sp__allocator_or_default(&none);
        atomic_flag_clear(&shared_source.lock);
        shared_source.next_region = SP__REGION_MIN;
        shared_source.grows = true;
        shared_source.platform = true;
        atomic_store_explicit(&shared_state, 2, memory_order_release);
        return &shared_source;
    }
    while ((st = atomic_load_explicit(&shared_state, memory_order_acquire)) == 1) {
    }
    return st == 2 ? &shared_source : NULL;
}

/* fork(): the child gets the shared source's tables as the forking thread saw them, never
   half-changed by another thread, so the prepare takes the lock and both sides drop it. Nothing
   to do before the shared source exists. */
void sp__source_fork_lock(void) {
    if (atomic_load_explicit(&shared_state, memory_order_acquire) == 2) lock_take(&shared_source);
}

void sp__source_fork_unlock(void) {
    if (atomic_load_explicit(&shared_state, memory_order_acquire) == 2) lock_drop(&shared_source);
}

sp__source *sp__source_create(const sp__vm *vm, const sp_allocator *meta) {
    sp_allocator a = sp__allocator_or_default(meta);
    sp__source *s = (sp__source *)sp__alloc(&a, sizeof *s, _Alignof(sp__source));
    if (!s) return NULL;
    memset(s, 0, sizeof *s);
    s->vm = *vm;
    s->meta = a;
    atomic_flag_clear(&s->lock);
    atomic_init(&s->region_count, 0u);
    return s;
}

void sp__source_advise_huge(sp__source *s, void *addr, size_t size) {
    if (s->platform) sp__os_advise_huge(addr, size);
}

void sp__source_destroy(sp__source *s) {
    if (!s) return;
    lock_take(s);
    cache_drain(s);
    lock_drop(s);
    uint32_t n = atomic_load_explicit(&s->region_count, memory_order_relaxed);
    for (uint32_t i = 0; i < n; i++) {
        region *r = &s->regions[i];
        s->vm.release(r->raw, r->raw_size, s->vm.user);
        meta_free(s, r->next, region_meta_bytes(1u << r->order));
    }
    map_release(s);
    sp_allocator a = s->meta;
    a.free(s, sizeof *s, a.user);
}

/* ---- blocks --------------------------------------------------------------------------- */

/* The region and segment of a block's base (a block of this source). */
static region *region_of(sp__source *s, const unsigned char *p, uint32_t *seg) {
    uint32_t n = atomic_load_explicit(&s->region_count, memory_order_acquire);
    for (uint32_t i = 0; i < n; i++) {
        region *r = &s->regions[i];
        if (p >= r->base && (size_t)(p - r->base) < block_bytes(r->order)) {
            *seg = (uint32_t)((size_t)(p - r->base) >> SP__SEGMENT_SHIFT);
            return r;
        }
    }
    return NULL;
}

/* A cached block of exactly `order`, or a block split from the free lists (under the lock). */
static bool block_find(sp__source *s, uint32_t order, bool small, sp__block *out) {
    uint32_t n = atomic_load_explicit(&s->region_count, memory_order_relaxed);
    for (uint32_t i = 0; small && i < n; i++) {
        region *r = &s->regions[i];
        if (order > r->order || r->cache_head[order] == NIL) continue;
        uint32_t seg = r->cache_head[order];
        list_remove(r, &r->cache_head[order], seg);
        r->head[seg] = (uint8_t)(order + 1u);
        s->cached -= block_bytes(order);
        out->base = r->base + ((size_t)seg << SP__SEGMENT_SHIFT);
        out->size = block_bytes(order);
        out->committed = true;
        return true;
    }
    for (uint32_t i = 0; i < n; i++) {
        region *r = &s->regions[i];
        if (order > r->order) continue;
        uint32_t seg = block_split_take(r, order);
        if (seg == NIL) continue;
        out->base = r->base + ((size_t)seg << SP__SEGMENT_SHIFT);
        out->size = block_bytes(order);
        out->committed = false;
        return true;
    }
    return false;
}

bool sp__source_take(sp__source *s, size_t size, sp__block *out) {
    uint32_t order = order_for(size ? size : 1u);
    if (order >= ORDERS) return false;
    bool small = block_bytes(order) <= SP__SMALL_BLOCK;
    lock_take(s);
    bool found = block_find(s, order, small, out);
    if (!found && region_add(s, order)) found = block_find(s, order, small, out);
    if (!found && s->cached) { /* out of address space: the cache's blocks merge back */
        cache_drain(s);
        found = block_find(s, order, small, out);
    }
    lock_drop(s);
    if (!found) return false;
    if (small && !out->committed) {
        if (!s->vm.commit(out->base, out->size, s->vm.user)) {
            sp__source_give(s, out);
            return false;
        }
        out->committed = true;
    }
    return true;
}

void sp__source_give(sp__source *s, const sp__block *b) {
    uint32_t order = order_for(b->size);
    bool keep = b->committed && b->size <= SP__SMALL_BLOCK;
    sp__source_set_owner(s, b, NULL);
    lock_take(s);
    keep = keep && s->cached + b->size <= SP__CACHE_BYTES;
    if (keep) s->cached += b->size; /* counted now, so that no other give overfills the cache */
    lock_drop(s);
    if (b->committed && !keep) s->vm.decommit(b->base, b->size, s->vm.user);
    uint32_t seg = 0;
    lock_take(s);
    region *r = region_of(s, b->base, &seg);
    SP_ASSERT(r && r->head[seg] == order + 1u);
    if (keep) {
        r->head[seg] = (uint8_t)(HEAD_CACHED | (order + 1u));
        list_push(r, &r->cache_head[order], seg);
    } else {
        block_free(r, seg, order);
    }
    lock_drop(s);
}

bool sp__source_commit(sp__source *s, void *addr, size_t size) {
    return size == 0 || s->vm.commit(addr, size, s->vm.user);
}

void sp__source_decommit(sp__source *s, void *addr, size_t size) {
    if (size) s->vm.decommit(addr, size, s->vm.user);
}

void sp__source_set_owner(sp__source *s, const sp__block *b, void *owner) {
    sp__owner_map *m = atomic_load_explicit(&s->map, memory_order_relaxed);
    SP_ASSERT(m != NULL);
    for (size_t off = 0; off < b->size; off += SP__SEGMENT) {
        uint64_t a = (uint64_t)(uintptr_t)(b->base + off);
        sp__owner_slot *leaf = atomic_load_explicit(&m->leaf[a >> 32], memory_order_relaxed);
        atomic_store_explicit(&leaf[sp__leaf_index(a)], owner, memory_order_release);
    }
}

const sp__owner_map *sp__source_map(const sp__source *s) { return atomic_load_explicit(&s->map, memory_order_acquire); }

void *sp__source_owner(const sp__source *s, const void *p) { return sp__owner_at(sp__source_map(s), p); }

size_t sp__source_reserved(const sp__source *s) {
    sp__source *m = (sp__source *)(uintptr_t)s; /* the lock is bookkeeping */
    lock_take(m);
    size_t n = s->reserved;
    lock_drop(m);
    return n;
}

size_t sp__source_cached(const sp__source *s) {
    sp__source *m = (sp__source *)(uintptr_t)s;
    lock_take(m);
    size_t n = s->cached;
    lock_drop(m);
    return n;
}

/* Pools on the shared source: when none is left as the library is unloaded (dlclose) or the
   process ends, its regions and tables go back, so that an unloaded copy of spawnpool leaves
   nothing behind. The source itself stays usable: a pool made afterwards starts it again. */
static atomic_uint shared_users;

sp__source *sp__source_shared_attach(void) {
    sp__source *s = sp__source_shared();
    if (s) atomic_fetch_add_explicit(&shared_users, 1u, memory_order_relaxed);
    return s;
}

void sp__source_shared_detach(void) { atomic_fetch_sub_explicit(&shared_users, 1u, memory_order_relaxed); }

#if defined(__GNUC__) || defined(__clang__)
__attribute__((destructor)) static void shared_unload(void) {
    if (atomic_load_explicit(&shared_state, memory_order_acquire) != 2) return;
    sp__source *s = &shared_source;
    lock_take(s);
    if (atomic_load_explicit(&shared_users, memory_order_relaxed) == 0) {
        cache_drain(s);
        uint32_t n = atomic_load_explicit(&s->region_count, memory_order_relaxed);
        atomic_store_explicit(&s->region_count, 0u, memory_order_release);
        for (uint32_t i = 0; i < n; i++) {
            region *r = &s->regions[i];
            s->vm.release(r->raw, r->raw_size, s->vm.user);
            meta_free(s, r->next, region_meta_bytes(1u << r->order));
        }
        map_release(s);
        s->reserved = 0;
        s->next_region = SP__REGION_MIN;
    }
    lock_drop(s);
}
#endif

size_t sp__source_process_reserved(void) {
    sp__source *s = sp__source_shared();
    return s ? sp__source_reserved(s) : 0u;
}
