/* SPDX-License-Identifier: Zlib */
/*
    bench_impls.c -- every implementation the benchmark compares, behind bench_impl.

    Peers are called the way that keeps them honest in one process: glibc through
    __libc_malloc/__libc_free (so no preloaded allocator takes it over), mimalloc and tcmalloc
    through dlopen with RTLD_LOCAL and their own entry points (mi_malloc, tc_malloc), so they do
    not replace the process's malloc that the driver and the other peers use. jemalloc cannot be
    dlopened (it needs initial-exec TLS), so it runs in a process of its own with LD_PRELOAD and
    is measured as plain malloc/free; bench_impl_find("jemalloc") refuses to run otherwise.
*/
#define _GNU_SOURCE
#include <dlfcn.h>
#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

/* glibc's own entry points: whatever malloc is interposed, these stay glibc's. */
extern void *__libc_malloc(size_t size);
extern void __libc_free(void *ptr);

/* ---------------------------------------------------------------------------------------------
   The bare intrusive free list: the floor. No handles, no stats, no checks.
   ------------------------------------------------------------------------------------------ */

bool bench_freelist_init(bench_freelist *fl, size_t item_size, size_t capacity) {
    memset(fl, 0, sizeof *fl);
    fl->slot_size = (item_size + 15u) & ~(size_t)15u;
    if (fl->slot_size < sizeof(void *)) fl->slot_size = sizeof(void *);
    /* One chunk for the whole capacity when it is known, as a game would size it. */
    fl->chunk_items = capacity ? capacity : 4096u;
    return true;
}

void *bench_freelist_grow(bench_freelist *fl) {
    if (fl->chunk_count == fl->chunk_cap) {
        size_t cap = fl->chunk_cap ? fl->chunk_cap * 2u : 16u;
        void **chunks = realloc(fl->chunks, cap * sizeof *chunks);
        if (chunks == NULL) return NULL;
        fl->chunks = chunks;
        fl->chunk_cap = cap;
    }
    size_t bytes = (fl->chunk_items * fl->slot_size + 63u) & ~(size_t)63u;
    char *chunk = aligned_alloc(64, bytes);
    if (chunk == NULL) return NULL;
    fl->chunks[fl->chunk_count++] = chunk;
    /* Thread the new slots so the lowest address comes out first. */
    for (size_t i = fl->chunk_items; i-- > 1;) bench_freelist_push(fl, chunk + i * fl->slot_size);
    /* After the first chunk, later ones are smaller so growth stays proportionate. */
    if (fl->chunk_items > 4096u) fl->chunk_items = 4096u;
    return chunk;
}

void bench_freelist_fini(bench_freelist *fl) {
    for (size_t i = 0; i < fl->chunk_count; i++) free(fl->chunks[i]);
    free(fl->chunks);
    memset(fl, 0, sizeof *fl);
}

static bool fl_open(void **state, size_t item_size, size_t capacity) {
    bench_freelist *fl = malloc(sizeof *fl);
    if (fl == NULL || !bench_freelist_init(fl, item_size, capacity)) {
        free(fl);
        return false;
    }
    *state = fl;
    return true;
}
static void fl_close(void *state) {
    bench_freelist_fini(state);
    free(state);
}
static void *fl_acquire(void *state) { return bench_freelist_pop(state); }
static void fl_release(void *state, void *item) { bench_freelist_push(state, item); }

/* ---------------------------------------------------------------------------------------------
   Checked free lists: the floor for a pool that must refuse a double release or a pointer that
   is not one of its members. The free list above, but a release first checks that the pointer
   is the start of a member (the exact range-and-stride test spawnpool uses: subtract, rotate,
   multiply by the stride's inverse, compare) and that the member is leased, from a state word
   kept either in a header just before each member (checked_header: 8 bytes more per member, in
   the member's own cache line) or in an array beside the members (checked_side: spawnpool's
   layout). No handles, no stats, one chunk of `capacity` members (no growth: capacity 0 is
   refused, so the frame workload leaves them out). What the two cost against the bare free
   list is what checking costs, in each layout.
   ------------------------------------------------------------------------------------------ */

typedef struct checked_fl {
    unsigned char *items; /* first member */
    size_t stride, count;
    unsigned rot;         /* stride = odd << rot */
    uint64_t inv;         /* inverse of odd mod 2^64 */
    uint32_t *side;       /* checked_side: state per member; NULL: the header before each */
    void *head;           /* free members, linked through their first word */
    size_t refused;
} checked_fl;

enum { CHECKED_FREE = 0, CHECKED_LEASED = 1 };

/* The member index of item, or count when item is not the start of a member. */
static size_t checked_index(const checked_fl *c, const void *item) {
    uint64_t off = (uint64_t)((uintptr_t)item - (uintptr_t)c->items);
    uint64_t q = ((off >> c->rot) | (off << ((64u - c->rot) & 63u))) * c->inv;
    return q < c->count ? (size_t)q : c->count;
}

static uint32_t *checked_state(checked_fl *c, void *item, size_t i) {
    return c->side ? &c->side[i] : (uint32_t *)item - 2; /* the header's low word */
}

static bool checked_open(void **state, size_t item_size, size_t capacity, bool side) {
    if (capacity == 0) return false;
    checked_fl *c = calloc(1, sizeof *c);
    if (c == NULL) return false;
    size_t header = side ? 0u : 8u;
    c->stride = side ? (item_size + 15u) & ~(size_t)15u : (item_size + header + 7u) & ~(size_t)7u;
    c->count = capacity;
    size_t odd = c->stride;
    while (!(odd & 1u)) odd >>= 1, c->rot++;
    c->inv = odd;
    for (int i = 0; i < 5; i++) c->inv *= 2u - (uint64_t)odd * c->inv;
    size_t bytes = (capacity * c->stride + header + 63u) & ~(size_t)63u;
    unsigned char *mem = aligned_alloc(64, bytes);
    c->side = side ? calloc(capacity, sizeof *c->side) : NULL;
    if (mem == NULL || (side && c->side == NULL)) {
        free(mem);
        free(c->side);
        free(c);
        return false;
    }
    c->items = mem + header;
    for (size_t i = capacity; i-- > 0;) {
        void *item = c->items + i * c->stride;
        *checked_state(c, item, i) = CHECKED_FREE;
        *(void **)item = c->head;
        c->head = item;
    }
    *state = c;
    return true;
}
static bool checked_header_open(void **state, size_t item_size, size_t capacity) {
    return checked_open(state, item_size, capacity, false);
}
static bool checked_side_open(void **state, size_t item_size, size_t capacity) {
    return checked_open(state, item_size, capacity, true);
}
/* checked_side's own pair: the layout known at compile time, no test of which one it is. */
static void *checked_side_acquire(void *state) {
    checked_fl *c = state;
    void *item = c->head;
    if (item == NULL) return NULL;
    c->head = *(void **)item;
    c->side[checked_index(c, item)] = CHECKED_LEASED;
    return item;
}
static void checked_side_release(void *state, void *item) {
    checked_fl *c = state;
    size_t i = checked_index(c, item);
    if (i >= c->count || c->side[i] != CHECKED_LEASED) { /* foreign, interior, or a double release */
        c->refused++;
        return;
    }
    c->side[i] = CHECKED_FREE;
    *(void **)item = c->head;
    c->head = item;
}
static void checked_close(void *state) {
    checked_fl *c = state;
    if (c->refused) fprintf(stderr, "spbench: checked free list refused %zu releases\n", c->refused);
    free(c->items - (c->side ? 0u : 8u));
    free(c->side);
    free(c);
}
static void *checked_acquire(void *state) {
    checked_fl *c = state;
    void *item = c->head;
    if (item == NULL) return NULL;
    c->head = *(void **)item;
    *checked_state(c, item, c->side ? checked_index(c, item) : 0u) = CHECKED_LEASED;
    return item;
}
static void checked_release(void *state, void *item) {
    checked_fl *c = state;
    size_t i = checked_index(c, item);
    uint32_t *st = i < c->count ? checked_state(c, item, i) : NULL;
    if (st == NULL || *st != CHECKED_LEASED) { /* foreign, interior, or a double release */
        c->refused++;
        return;
    }
    *st = CHECKED_FREE;
    *(void **)item = c->head;
    c->head = item;
}

/* checked_bits: another layout of the same checks, to find what the side array costs. The state
   is one bit a member (a bitmap, 32 KB at 256k members, which stays in the cache where a side
   array of words does not), and the free members are an array of their indexes used as a stack:
   a release writes the stack's top, not the member nor a word beside it, so a member's bytes are
   untouched while it is free (as a pool that builds members once must keep them) and the pair
   reaches one cold line, the member's, where the side array adds a second. No handles: a
   generation per member brings the second line back (checked_gen measures it). */
typedef struct checked_bits {
    checked_fl fl;     /* items, stride, count, rot, inv, refused (head and side unused) */
    uint64_t *leased;  /* bit i: member i is leased */
    uint32_t *free_ix; /* indexes of the free members; the top is the next to go */
    size_t free_count;
} checked_bits;

/* The members and an index stack holding them all (the lowest index on top), for the checked
   layouts that keep their state beside (checked_bits, checked_dense). False, nothing kept, when
   memory runs out. */
static bool checked_stack_open(checked_fl *fl, uint32_t **free_ix, size_t item_size,
                               size_t capacity) {
    void *c;
    if (capacity > UINT32_MAX || !checked_open(&c, item_size, capacity, true)) return false;
    uint32_t *ix = malloc(capacity * sizeof *ix);
    if (ix == NULL) {
        checked_close(c);
        return false;
    }
    *fl = *(checked_fl *)c;
    free(fl->side);
    free(c);
    fl->side = NULL;
    for (size_t i = 0; i < capacity; i++) ix[i] = (uint32_t)(capacity - 1u - i);
    *free_ix = ix;
    return true;
}

static bool checked_bits_open(void **state, size_t item_size, size_t capacity) {
    checked_fl fl;
    uint32_t *free_ix;
    if (!checked_stack_open(&fl, &free_ix, item_size, capacity)) return false;
    checked_bits *b = calloc(1, sizeof *b);
    uint64_t *leased = calloc((capacity + 63u) / 64u, sizeof *leased);
    if (b == NULL || leased == NULL) {
        free(b);
        free(leased);
        free(free_ix);
        free(fl.items);
        return false;
    }
    b->fl = fl;
    b->leased = leased;
    b->free_ix = free_ix;
    b->free_count = capacity;
    *state = b;
    return true;
}
static void *checked_bits_acquire(void *state) {
    checked_bits *b = state;
    if (b->free_count == 0) return NULL;
    uint32_t i = b->free_ix[--b->free_count];
    b->leased[i / 64u] |= (uint64_t)1 << (i % 64u);
    return b->fl.items + (size_t)i * b->fl.stride;
}
/* The release's check and unlease: false when refused (foreign, interior, or a double release;
   counted), else true with the member's index in *index. */
static inline bool checked_bits_unlease(checked_bits *b, const void *item, size_t *index) {
    size_t i = checked_index(&b->fl, item);
    uint64_t bit = (uint64_t)1 << (i % 64u);
    if (i >= b->fl.count || !(b->leased[i / 64u] & bit)) {
        b->fl.refused++;
        return false;
    }
    b->leased[i / 64u] &= ~bit;
    *index = i;
    return true;
}
static void checked_bits_release(void *state, void *item) {
    checked_bits *b = state;
    size_t i;
    if (checked_bits_unlease(b, item, &i)) b->free_ix[b->free_count++] = (uint32_t)i;
}
static void checked_bits_fini(checked_bits *b, const char *name) {
    if (b->fl.refused) fprintf(stderr, "spbench: %s refused %zu releases\n", name, b->fl.refused);
    free(b->fl.items);
    free(b->leased);
    free(b->free_ix);
}
static void checked_bits_close(void *state) {
    checked_bits_fini(state, "checked_bits");
    free(state);
}

/* checked_gen: checked_bits plus what generational handles need at the least, a 4-byte life a
   member, moved on at every release (a read-modify-write: a life is exact only if it only ever
   grows, so the next one is computed from the last). It measures what checked_bits' comment
   says: that a per-member word written every lease brings the second cold line back, whatever
   holds the lease state (spawnpool, checked_side and this one all write one). */
typedef struct checked_gen {
    checked_bits bits;
    uint32_t *life; /* life[i]: member i's life, one more at each release */
} checked_gen;

static bool checked_gen_open(void **state, size_t item_size, size_t capacity) {
    void *bits;
    if (!checked_bits_open(&bits, item_size, capacity)) return false;
    checked_gen *g = calloc(1, sizeof *g);
    uint32_t *life = calloc(capacity, sizeof *life);
    if (g == NULL || life == NULL) {
        free(g);
        free(life);
        checked_bits_close(bits);
        return false;
    }
    g->bits = *(checked_bits *)bits;
    free(bits);
    g->life = life;
    *state = g;
    return true;
}
static void *checked_gen_acquire(void *state) {
    return checked_bits_acquire(&((checked_gen *)state)->bits);
}
static void checked_gen_release(void *state, void *item) {
    checked_gen *g = state;
    size_t i;
    if (!checked_bits_unlease(&g->bits, item, &i)) return;
    g->life[i]++;
    g->bits.free_ix[g->bits.free_count++] = (uint32_t)i;
}
static void checked_gen_close(void *state) {
    checked_gen *g = state;
    checked_bits_fini(&g->bits, "checked_gen");
    free(g->life);
    free(g);
}

/* checked_dense: the hot path of a layout spawnpool could take (CHANGELOG.md, 0.4.0): the
   same exact checks with a state byte a member and the free members in an index stack, whose
   top is also the free count, so leased and peak need no counter of their own (peak is the
   stack's low water); `acquired` counted as spawnpool counts it. A life a member would be moved
   only when a lease that was given a handle ends (a state bit, and the release's slow path),
   so a plain pair writes no per-member word at a random place but the state byte. No lives
   here: plain leases never touch them. 4-byte stack entries (3 would do below 2^24 members). */
typedef struct checked_dense {
    checked_fl fl;     /* items, stride, count, rot, inv, refused (head and side unused) */
    uint8_t *state;    /* state[i]: DENSE_LEASED while member i is leased (plainly) */
    uint32_t *free_ix; /* the free members' indexes; the top is the next to go */
    size_t free_count; /* the stack's top */
    size_t free_low;   /* its low water: peak leased = count - free_low */
    uint64_t acquired;
} checked_dense;

enum { DENSE_FREE = 0, DENSE_LEASED = 1 };

static bool checked_dense_open(void **state, size_t item_size, size_t capacity) {
    checked_fl fl;
    uint32_t *free_ix;
    if (!checked_stack_open(&fl, &free_ix, item_size, capacity)) return false;
    checked_dense *z = calloc(1, sizeof *z);
    uint8_t *states = calloc(capacity, 1);
    if (z == NULL || states == NULL) {
        free(z);
        free(states);
        free(free_ix);
        free(fl.items);
        return false;
    }
    z->fl = fl;
    z->state = states;
    z->free_ix = free_ix;
    z->free_count = z->free_low = capacity;
    *state = z;
    return true;
}
static void *checked_dense_acquire(void *state) {
    checked_dense *z = state;
    size_t top = z->free_count;
    if (top == 0) return NULL;
    uint32_t i = z->free_ix[--top];
    z->free_count = top;
    if (top < z->free_low) z->free_low = top;
    z->acquired++;
    z->state[i] = DENSE_LEASED;
    return z->fl.items + (size_t)i * z->fl.stride;
}
static void checked_dense_release(void *state, void *item) {
    checked_dense *z = state;
    size_t i = checked_index(&z->fl, item);
    if (i >= z->fl.count || z->state[i] != DENSE_LEASED) { /* foreign, interior, double release */
        z->fl.refused++;
        return;
    }
    z->state[i] = DENSE_FREE;
    z->free_ix[z->free_count++] = (uint32_t)i;
}
static void checked_dense_close(void *state) {
    checked_dense *z = state;
    if (z->fl.refused)
        fprintf(stderr, "spbench: checked_dense refused %zu releases\n", z->fl.refused);
    free(z->fl.items);
    free(z->state);
    free(z->free_ix);
    free(z);
}

/* checked_plan and checked_plan_byte: the hot path of a layout proposed for spawnpool
   (CHANGELOG.md, 0.4.0), whole, in its two widths of state. Plain leases keep their state in a map beside
   the members (checked_plan: one bit a member; checked_plan_byte: one byte), set while the member
   is leased plainly; a lease given a handle, or on which a hook runs, would have it clear and
   its state in a 4-byte word a member that plain pairs never touch. The free members are a stack
   of indexes whose top is the free count (checked_plan_byte's entries are 3 bytes, as 8 bytes a
   member with the byte and the word need; checked_plan's 4, which favours it); the peak is its
   low water, `acquired` is counted, and the pair makes spawnpool's own tests: a NULL pool, a miss
   of the stack, a release outside the plain range. One code for both widths (`bits`, a constant
   where inlined). */
typedef struct checked_plan {
    checked_fl fl;      /* items, stride, count, rot, inv, refused */
    unsigned char *map; /* member i leased plainly: bit i % 64 of 64-bit word i / 64, or byte i */
    unsigned char *stack; /* the free members' indexes, 4 or 3 bytes each; the top goes next */
    uint32_t free_top;  /* the stack's top as a byte offset (free count x entry size): no scaling */
    uint32_t free_low;  /* its low water: peak leased = capacity - free_low / entry size */
    uint64_t acquired;
    uint64_t top_plain; /* members below this release in the plain way */
    bool bits;          /* which of the two */
} checked_plan;

static bool plan_open(void **state, size_t item_size, size_t capacity, bool bits) {
    checked_fl fl;
    uint32_t *free_ix;
    /* below spawnpool's slot limit, 2^24, as 3-byte entries need (and 32-bit offsets) */
    if (capacity >= (1u << 24) || !checked_stack_open(&fl, &free_ix, item_size, capacity))
        return false;
    if (!bits) { /* 3-byte entries, and one byte more for the 4-byte access to the last */
        unsigned char *packed = malloc(capacity * 3u + 1u);
        for (size_t k = 0; packed && k < capacity; k++) memcpy(packed + k * 3u, &free_ix[k], 3u);
        free(free_ix);
        free_ix = (uint32_t *)(void *)packed;
    }
    checked_plan *z = calloc(1, sizeof *z);
    void *map = bits ? calloc((capacity + 63u) / 64u, sizeof(uint64_t)) : calloc(capacity, 1);
    if (z == NULL || map == NULL || free_ix == NULL) {
        free(z);
        free(map);
        free(free_ix);
        free(fl.items);
        return false;
    }
    z->fl = fl;
    z->map = map;
    z->stack = (unsigned char *)free_ix;
    z->free_top = z->free_low = (uint32_t)capacity * (bits ? 4u : 3u);
    z->top_plain = capacity;
    z->bits = bits;
    *state = z;
    return true;
}
static __attribute__((noinline)) void *plan_null(void) {
    fprintf(stderr, "spbench: checked_plan: NULL pool\n");
    return NULL;
}
static __attribute__((noinline)) void *plan_miss(checked_plan *z) {
    (void)z;
    return NULL;
}
static __attribute__((noinline)) void plan_refused(checked_plan *z) { z->fl.refused++; }
static inline void *plan_acquire(void *state, bool bits) {
    checked_plan *z = state;
    if (z == NULL) return plan_null();
    uint32_t top = z->free_top;
    if (top == 0) return plan_miss(z);
    top -= bits ? 4u : 3u;
    uint32_t i;
    memcpy(&i, z->stack + top, 4u);
    if (!bits) i &= 0xffffffu;
    z->free_top = top;
    if (top < z->free_low) z->free_low = top;
    z->acquired++;
    if (bits)
        ((uint64_t *)(void *)z->map)[i / 64u] |= (uint64_t)1 << (i % 64u);
    else
        z->map[i] = 1u;
    return z->fl.items + (size_t)i * z->fl.stride;
}
static inline void plan_release(void *state, void *item, bool bits) {
    checked_plan *z = state;
    if (z == NULL) {
        plan_null();
        return;
    }
    uint64_t off = (uint64_t)((uintptr_t)item - (uintptr_t)z->fl.items);
    uint64_t q = ((off >> z->fl.rot) | (off << ((64u - z->fl.rot) & 63u))) * z->fl.inv;
    if (q >= z->top_plain) {
        plan_refused(z);
        return;
    }
    if (bits) {
        uint64_t *w = (uint64_t *)(void *)z->map + q / 64u, m = *w, bit = (uint64_t)1 << (q % 64u);
        if (!(m & bit)) { /* not leased plainly: the slow path */
            plan_refused(z);
            return;
        }
        *w = m & ~bit;
    } else {
        if (z->map[q] != 1u) {
            plan_refused(z);
            return;
        }
        z->map[q] = 0u;
    }
    uint32_t top = z->free_top, e = (uint32_t)q;
    memcpy(z->stack + top, &e, 4u); /* (3-byte entries: its fourth byte is above the top) */
    z->free_top = top + (bits ? 4u : 3u);
}
static void checked_plan_close(void *state) {
    checked_plan *z = state;
    if (z->fl.refused)
        fprintf(stderr, "spbench: %s refused %zu releases\n",
                z->bits ? "checked_plan" : "checked_plan_byte", z->fl.refused);
    free(z->fl.items);
    free(z->map);
    free(z->stack);
    free(z);
}
static bool checked_plan_open(void **state, size_t item_size, size_t capacity) {
    return plan_open(state, item_size, capacity, true);
}
static void *checked_plan_acquire(void *state) { return plan_acquire(state, true); }
static void checked_plan_release(void *state, void *item) { plan_release(state, item, true); }
static bool checked_plan_byte_open(void **state, size_t item_size, size_t capacity) {
    return plan_open(state, item_size, capacity, false);
}
static void *checked_plan_byte_acquire(void *state) { return plan_acquire(state, false); }
static void checked_plan_byte_release(void *state, void *item) { plan_release(state, item, false); }

/* ---------------------------------------------------------------------------------------------
   spawnpool: DROP without hooks, RECLAIM, and DROP taking a handle on every acquisition.
   ------------------------------------------------------------------------------------------ */

static bool sp_open_policy(void **state, size_t item_size, size_t capacity, sp_overflow policy) {
    /* The pool as users create it: nothing built up front, grown by acquisition
       (the first, untimed segment grows it); max only bounds it. */
    sp_pool *pool = sp_pool_create(&(sp_desc){
        .name = "bench",
        .item_size = item_size,
        .max = capacity,
        .overflow = policy,
    });
    if (pool == NULL) {
        fprintf(stderr, "spawnpool: sp_pool_create failed (item_size %zu, capacity %zu)\n",
                item_size, capacity);
        return false;
    }
    *state = pool;
    return true;
}
static bool sp_open_drop(void **state, size_t item_size, size_t capacity) {
    return sp_open_policy(state, item_size, capacity, SP_OVERFLOW_DROP);
}
static bool sp_open_reclaim(void **state, size_t item_size, size_t capacity) {
    return sp_open_policy(state, item_size, capacity, SP_OVERFLOW_RECLAIM);
}
/* The pool with nothing set but the size, as most users create one: no max, so it grows by
   acquisition into several spans (each about twice the last), where `spawnpool` holds all its
   members in the one span its max reserves. Not judged: it shows what the spans cost. */
static bool sp_open_grown(void **state, size_t item_size, size_t capacity) {
    (void)capacity;
    return sp_open_policy(state, item_size, 0, SP_OVERFLOW_DROP);
}
static void sp_close(void *state) { sp_pool_destroy(state); }
static void *sp_bench_acquire(void *state) { return sp_acquire(state); }
static void sp_bench_release(void *state, void *item) { (void)sp_release(state, item); }
static sp_pool *sp_bench_pool(void *state) { return state; }

const bench_pool_pair bench_spawnpool_pair = {sp_acquire, sp_release};

const bench_pool_pair *bench_impl_pool_pair(const bench_impl *impl) {
    return impl->acquire == sp_bench_acquire && impl->release == sp_bench_release ? &bench_spawnpool_pair : NULL;
}

/* The handle goes in the member's second word: the first is the workload's. */
static void *sp_handles_acquire(void *state) {
    sp_handle h;
    void *item = sp_acquire_handle(state, NULL, &h);
    if (item != NULL) ((sp_handle *)item)[1] = h;
    return item;
}

/* ---------------------------------------------------------------------------------------------
   boost::pool<> and GSlice.
   ------------------------------------------------------------------------------------------ */

static bool boost_open(void **state, size_t item_size, size_t capacity) {
    (void)capacity;
    *state = bench_boost_create(item_size);
    return *state != NULL;
}
static void boost_close(void *state) { bench_boost_destroy(state); }
static void *boost_acquire(void *state) { return bench_boost_malloc(state); }
static void boost_release(void *state, void *item) { bench_boost_free(state, item); }

/* Heap allocators only need the size; state points at it. */
typedef struct sized_state {
    size_t size;
} sized_state;

static bool sized_open(void **state, size_t item_size, size_t capacity) {
    (void)capacity;
    sized_state *s = malloc(sizeof *s);
    if (s == NULL) return false;
    s->size = item_size;
    *state = s;
    return true;
}
static void sized_close(void *state) { free(state); }

static void *gslice_acquire(void *state) { return g_slice_alloc(((sized_state *)state)->size); }
static void gslice_release(void *state, void *item) {
    g_slice_free1(((sized_state *)state)->size, item);
}

static void *glibc_acquire(void *state) { return __libc_malloc(((sized_state *)state)->size); }
static void glibc_release(void *state, void *item) {
    (void)state;
    __libc_free(item);
}

/* ---------------------------------------------------------------------------------------------
   mimalloc and tcmalloc, dlopened; jemalloc, preloaded.
   ------------------------------------------------------------------------------------------ */


typedef struct dl_peer {
    const char *label;
    const char *const *sonames; /* tried in order */
    const char *malloc_name, *free_name;
    bool tried, loaded;
    bench_malloc_fn malloc_fn;
    bench_free_fn free_fn;
} dl_peer;

static const char *const mimalloc_sonames[] = {"libmimalloc.so.2", "libmimalloc.so", NULL};
static const char *const tcmalloc_sonames[] = {"libtcmalloc_minimal.so.4",
                                               "libtcmalloc_minimal.so", NULL};
static dl_peer mimalloc_peer = {"mimalloc", mimalloc_sonames, "mi_malloc", "mi_free",
                                false, false, NULL, NULL};
static dl_peer tcmalloc_peer = {"tcmalloc", tcmalloc_sonames, "tc_malloc", "tc_free",
                                false, false, NULL, NULL};

/* ISO C has no cast from void * to a function pointer; POSIX guarantees the bytes match. */
static void *dl_symbol(void *lib, const char *name) { return dlsym(lib, name); }

static bool dl_peer_load(dl_peer *peer) {
    if (peer->tried) return peer->loaded;
    peer->tried = true;
    void *lib = NULL;
    for (const char *const *so = peer->sonames; *so != NULL && lib == NULL; so++)
        lib = dlopen(*so, RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        fprintf(stderr, "skipping %s: dlopen failed (%s)\n", peer->label, dlerror());
        return false;
    }
    void *m = dl_symbol(lib, peer->malloc_name);
    void *f = dl_symbol(lib, peer->free_name);
    if (m == NULL || f == NULL) {
        fprintf(stderr, "skipping %s: %s/%s not found\n", peer->label, peer->malloc_name,
                peer->free_name);
        return false;
    }
    memcpy(&peer->malloc_fn, &m, sizeof m);
    memcpy(&peer->free_fn, &f, sizeof f);
    peer->loaded = true;
    return true;
}

typedef struct dl_state {
    size_t size;
    bench_malloc_fn malloc_fn;
    bench_free_fn free_fn;
} dl_state;

static bool dl_open(void **state, size_t item_size, dl_peer *peer) {
    if (!dl_peer_load(peer)) return false;
    dl_state *s = malloc(sizeof *s);
    if (s == NULL) return false;
    *s = (dl_state){item_size, peer->malloc_fn, peer->free_fn};
    *state = s;
    return true;
}
static bool mimalloc_open(void **state, size_t item_size, size_t capacity) {
    (void)capacity;
    return dl_open(state, item_size, &mimalloc_peer);
}
static bool tcmalloc_open(void **state, size_t item_size, size_t capacity) {
    (void)capacity;
    return dl_open(state, item_size, &tcmalloc_peer);
}
static void dl_close(void *state) { free(state); }
static void *dl_acquire(void *state) {
    dl_state *s = state;
    return s->malloc_fn(s->size);
}
static void dl_release(void *state, void *item) { ((dl_state *)state)->free_fn(item); }

/* Only meaningful when libjemalloc is preloaded: then malloc is jemalloc's. */
static bool jemalloc_open(void **state, size_t item_size, size_t capacity) {
    if (dlsym(RTLD_DEFAULT, "mallctl") == NULL) {
        fprintf(stderr, "skipping jemalloc: not preloaded (run with LD_PRELOAD=libjemalloc.so.2)\n");
        return false;
    }
    return sized_open(state, item_size, capacity);
}
static void *jemalloc_acquire(void *state) { return malloc(((sized_state *)state)->size); }
static void jemalloc_release(void *state, void *item) {
    (void)state;
    free(item);
}

static void *libc_malloc_entry(size_t size) { return __libc_malloc(size); }
static void libc_free_entry(void *item) { __libc_free(item); }
static void *plain_malloc(size_t size) { return malloc(size); }
static void plain_free(void *item) { free(item); }

bool bench_peer_malloc(const char *name, bench_malloc_fn *malloc_fn, bench_free_fn *free_fn) {
    if (strcmp(name, "glibc") == 0) {
        *malloc_fn = libc_malloc_entry, *free_fn = libc_free_entry;
        return true;
    }
    if (strcmp(name, "jemalloc") == 0) {
        if (dlsym(RTLD_DEFAULT, "mallctl") == NULL) {
            fprintf(stderr, "skipping jemalloc: not preloaded (run with LD_PRELOAD=libjemalloc.so.2)\n");
            return false;
        }
        *malloc_fn = plain_malloc, *free_fn = plain_free;
        return true;
    }
    dl_peer *peer = strcmp(name, "mimalloc") == 0 ? &mimalloc_peer : strcmp(name, "tcmalloc") == 0 ? &tcmalloc_peer : NULL;
    if (!peer || !dl_peer_load(peer)) return false;
    *malloc_fn = peer->malloc_fn, *free_fn = peer->free_fn;
    return true;
}

/* ---------------------------------------------------------------------------------------------
   The table.
   ------------------------------------------------------------------------------------------ */

static const bench_impl impl_spawnpool = {"spawnpool", sp_open_drop, sp_close,
                                          sp_bench_acquire, sp_bench_release, sp_bench_pool};
static const bench_impl impl_spawnpool_grown = {"spawnpool_grown", sp_open_grown, sp_close,
                                                sp_bench_acquire, sp_bench_release, sp_bench_pool};
static const bench_impl impl_spawnpool_reclaim = {"spawnpool_reclaim", sp_open_reclaim, sp_close,
                                                  sp_bench_acquire, sp_bench_release,
                                                  sp_bench_pool};
static const bench_impl impl_spawnpool_handles = {"spawnpool_handles", sp_open_drop, sp_close,
                                                  sp_handles_acquire, sp_bench_release,
                                                  sp_bench_pool};
/* The same pool as spawnpool; only the iterate workload tells them apart (sp_first/sp_next). */
static const bench_impl impl_spawnpool_next = {"spawnpool_next", sp_open_drop, sp_close,
                                               sp_bench_acquire, sp_bench_release, sp_bench_pool};
/* The same again, iterated with the sp_iter cursor. */
static const bench_impl impl_spawnpool_iter = {"spawnpool_iter", sp_open_drop, sp_close,
                                               sp_bench_acquire, sp_bench_release, sp_bench_pool};
static const bench_impl impl_freelist = {"freelist", fl_open, fl_close, fl_acquire, fl_release,
                                         NULL};
static const bench_impl impl_checked_header = {"checked_header", checked_header_open, checked_close,
                                               checked_acquire, checked_release, NULL};
static const bench_impl impl_checked_side = {"checked_side", checked_side_open, checked_close,
                                             checked_side_acquire, checked_side_release, NULL};
static const bench_impl impl_checked_bits = {"checked_bits", checked_bits_open, checked_bits_close,
                                             checked_bits_acquire, checked_bits_release, NULL};
static const bench_impl impl_checked_gen = {"checked_gen", checked_gen_open, checked_gen_close,
                                            checked_gen_acquire, checked_gen_release, NULL};
static const bench_impl impl_checked_dense = {"checked_dense", checked_dense_open, checked_dense_close,
                                              checked_dense_acquire, checked_dense_release, NULL};
static const bench_impl impl_checked_plan = {"checked_plan", checked_plan_open, checked_plan_close,
                                             checked_plan_acquire, checked_plan_release, NULL};
static const bench_impl impl_checked_plan_byte = {"checked_plan_byte", checked_plan_byte_open,
                                                  checked_plan_close, checked_plan_byte_acquire,
                                                  checked_plan_byte_release, NULL};
static const bench_impl impl_boost = {"boost_pool", boost_open, boost_close, boost_acquire,
                                      boost_release, NULL};
static const bench_impl impl_gslice = {"gslice", sized_open, sized_close, gslice_acquire,
                                       gslice_release, NULL};
static const bench_impl impl_glibc = {"glibc", sized_open, sized_close, glibc_acquire,
                                      glibc_release, NULL};
static const bench_impl impl_mimalloc = {"mimalloc", mimalloc_open, dl_close, dl_acquire,
                                         dl_release, NULL};
static const bench_impl impl_tcmalloc = {"tcmalloc", tcmalloc_open, dl_close, dl_acquire,
                                         dl_release, NULL};
static const bench_impl impl_jemalloc = {"jemalloc", jemalloc_open, sized_close,
                                         jemalloc_acquire, jemalloc_release, NULL};

static const bench_impl *const all_impls[] = {
    &impl_spawnpool,      &impl_spawnpool_grown,   &impl_spawnpool_reclaim, &impl_spawnpool_handles,
    &impl_spawnpool_next,
    &impl_spawnpool_iter, &impl_freelist,          &impl_checked_header,    &impl_checked_side,
    &impl_checked_bits,   &impl_checked_gen,       &impl_checked_dense,     &impl_checked_plan,
    &impl_checked_plan_byte, &impl_boost,          &impl_gslice,            &impl_glibc,
    &impl_mimalloc,       &impl_tcmalloc,
};

const bench_impl *const *bench_impls(size_t *count) {
    *count = sizeof all_impls / sizeof all_impls[0];
    return all_impls;
}

const bench_impl *bench_impl_find(const char *name) {
    if (strcmp(name, impl_jemalloc.name) == 0) return &impl_jemalloc;
    for (size_t i = 0; i < sizeof all_impls / sizeof all_impls[0]; i++)
        if (strcmp(name, all_impls[i]->name) == 0) return all_impls[i];
    return NULL;
}
