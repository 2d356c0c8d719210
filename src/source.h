/* SPDX-License-Identifier: Zlib */
/* source.h -- where the spans of pools come from when there is virtual memory: address space
   reserved a region at a time and shared by every pool that uses it, cut into blocks of
   2^k segments (a buddy system: a block splits into two halves and merges back with its buddy).

   One source serves the whole process (the platform's virtual memory); a pool whose allocator
   brings its own reserve/commit/decommit/release gets a source of its own, released with it.
   What a source gives:
   - no system call for a pool created and destroyed in steady state: small blocks (up to
     SP__SMALL_BLOCK) are committed whole, and when given back they stay committed in a cache
     (up to SP__CACHE_BYTES) for the next pool;
   - address space that grows with use: a region at a time, each twice the last;
   - O(1) from any address to the owner of the block it lies in (sp__owner_at: two loads; one
     through a pool's shortcut to its chunk, sp__owner_near_at), reading only the source's own
     tables: the way a pointer finds its pool without a search.

   The source's tables are guarded by a spinlock: taking and giving blocks is cold and short.
   Commits and decommits run outside it, on blocks their caller holds. */
#ifndef SP_SOURCE_H
#define SP_SOURCE_H

#include "sp_os.h"

#include <stdatomic.h>
#include <stdint.h>

#define SP__SEGMENT_SHIFT 16u
#define SP__SEGMENT ((size_t)1 << SP__SEGMENT_SHIFT) /* 64 KiB: the smallest block */
#define SP__SMALL_BLOCK ((size_t)4 << SP__SEGMENT_SHIFT) /* committed whole, cached when free */
#define SP__CACHE_BYTES ((size_t)64 << 20) /* most committed bytes kept in free small blocks */
#define SP__REGION_MIN ((size_t)64 << 20)  /* the first region of the process's source */
#define SP__REGIONS_MAX 48u
/* The process's source starts its regions at a huge page's boundary, so that a large span's
   members can lie in huge pages (sp__source_advise_huge): 2 MiB, x86-64's and arm64's (with
   4 KiB pages). */
#define SP__HUGE_PAGE ((size_t)2 << 20)

typedef struct sp__source sp__source;

/* A block of address space: `size` bytes (SP__SEGMENT << order) at `base`. committed: all of it
   is committed (a small block); otherwise none of it is, and its holder commits as it needs. */
typedef struct sp__block {
    unsigned char *base;
    size_t size;
    bool committed;
} sp__block;

/* The owners of a source's segments, by address: a directory of 4 GiB chunks (address bits 32
   to 47), each chunk a leaf with its 65,536 segments' owners (bits 16 to 31), made when a
   region first lies in it. Both live in the source's own virtual memory, zero until written,
   so a leaf costs a page per 32 segments in use. Regions lie below 2^48 (region_add). */
#define SP__MAP_BITS 16u
typedef _Atomic(void *) sp__owner_slot; /* a segment's owner */
typedef struct sp__owner_map {
    _Atomic(sp__owner_slot *) leaf[(size_t)1 << SP__MAP_BITS];
} sp__owner_map;

/* Address a's segment within its chunk's leaf (address bits 16 to 31). */
static inline size_t sp__leaf_index(uint64_t a) {
    return (size_t)((a >> SP__SEGMENT_SHIFT) & (((uint64_t)1 << SP__MAP_BITS) - 1u));
}

/* The owner of the block that address p lies in, or NULL (no block, a free one, no owner, or
   not an address of the source): lock-free. */
static inline void *sp__owner_at(const sp__owner_map *m, const void *p) {
    uint64_t a = (uint64_t)(uintptr_t)p;
    if (!m || (a >> (32u + SP__MAP_BITS)) != 0) return NULL;
    sp__owner_slot *leaf = atomic_load_explicit(&m->leaf[a >> 32], memory_order_acquire);
    if (!leaf) return NULL;
    return atomic_load_explicit(&leaf[sp__leaf_index(a)], memory_order_acquire);
}

/* A shortcut into a map for the addresses of one 4 GiB chunk (where a pool's spans lie): that
   chunk's leaf, its number in the top 16 bits, so that an address there finds its owner with
   one load where the map takes two, and a reader without a lock never pairs a leaf with another
   chunk's number. 0: none (no map, no leaf, or a leaf above 2^48). */
typedef uint64_t sp__owner_near;
#define SP__NEAR_LEAF_MASK (((uint64_t)1 << 48) - 1u)

/* The shortcut for the chunk address p lies in, or 0. */
static inline sp__owner_near sp__owner_near_of(const sp__owner_map *m, const void *p) {
    uint64_t c = (uint64_t)(uintptr_t)p >> 32;
    if (!m || (c >> SP__MAP_BITS) != 0) return 0;
    uint64_t leaf = (uint64_t)(uintptr_t)atomic_load_explicit(&m->leaf[c], memory_order_acquire);
    return leaf && (leaf & ~SP__NEAR_LEAF_MASK) == 0 ? (c << 48) | leaf : 0;
}

/* sp__owner_at(m, p), through near when p lies in its chunk. */
static inline void *sp__owner_near_at(sp__owner_near near, const sp__owner_map *m, const void *p) {
    uint64_t a = (uint64_t)(uintptr_t)p;
    if (near && (a >> 32) == (near >> 48)) {
        sp__owner_slot *leaf = (sp__owner_slot *)(uintptr_t)(near & SP__NEAR_LEAF_MASK);
        return atomic_load_explicit(&leaf[sp__leaf_index(a)], memory_order_acquire);
    }
    return sp__owner_at(m, p);
}

/* The process's source (the platform's virtual memory), or NULL where there is none. */
sp__source *sp__source_shared(void);
/* A source of its own over vm (a custom allocator's four functions), or NULL (no memory). */
sp__source *sp__source_create(const sp__vm *vm, const sp_allocator *meta);
/* Releases every region of a source made by sp__source_create. */
void sp__source_destroy(sp__source *s);

/* A block of at least `size` bytes, committed whole when it is small (SP__SMALL_BLOCK at most).
   False when no address space or no memory is left (nothing changed). */
bool sp__source_take(sp__source *s, size_t size, sp__block *out);
/* Gives a block back: a committed small block to the cache while it has room, any other block
   decommitted (the holder already decommitted what it committed of a large one). */
void sp__source_give(sp__source *s, const sp__block *b);
/* Commits / decommits part of a block the caller holds (page-aligned). */
bool sp__source_commit(sp__source *s, void *addr, size_t size);
void sp__source_decommit(sp__source *s, void *addr, size_t size);
/* Marks the block's owner (a span), which sp__source_owner returns for any address in it. */
void sp__source_set_owner(sp__source *s, const sp__block *b, void *owner);
/* The source's map of owners (sp__owner_at), NULL before its first region. */
const sp__owner_map *sp__source_map(const sp__source *s);
/* sp__owner_at of the source's map. */
void *sp__source_owner(const sp__source *s, const void *p);
/* Address space this source has reserved, in bytes (white-box and stats). */
size_t sp__source_reserved(const sp__source *s);
/* The process's source's reserved address space (white-box, the benchmark's). */
size_t sp__source_process_reserved(void);
/* The shared source for a pool that will use it, and the pool's goodbye (sp__pool_memory_fini):
   while no pool uses it, unloading the library gives its regions back. */
sp__source *sp__source_shared_attach(void);
void sp__source_shared_detach(void);
/* Around fork() (threads.c): holds / drops the shared source's lock, if it exists. */
void sp__source_fork_lock(void);
void sp__source_fork_unlock(void);
/* Asks for huge pages under [addr, addr+size) of a block the caller holds, when the source is
   the process's own (the platform's virtual memory); a custom allocator's is left alone. */
void sp__source_advise_huge(sp__source *s, void *addr, size_t size);
/* Bytes committed in free small blocks (the cache). */
size_t sp__source_cached(const sp__source *s);

#endif
