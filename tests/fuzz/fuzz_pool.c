/* SPDX-License-Identifier: Zlib */
/* fuzz_pool.c -- model-based fuzzing of spawnpool (libFuzzer).

   The input is decoded into a registry of a few pools (every overflow policy, any subset of the
   hooks, with or without a priority hook, heap or fixed-buffer mode, tiny max and chunk sizes so
   that growth, saturation and trim happen within a few operations) and then into a sequence of
   operations. Each operation is applied to spawnpool and to a reference model kept here, written
   with plain arrays and linear scans so that it is obviously right. After every operation the two
   are compared: stats and counters, the leased set and its order (sp_first/sp_next, sp_each,
   sp_release_all, sp_leased_each, the reclaim victim: acquisition order or slot order, per pool),
   handle validity (current, stale, foreign and forged handles, and the one sp_acquire_handle
   gives), hook calls and their order, member contents across lives, allocator traffic and every
   log line (each pool's, the registry's: exactly the lines the model predicts). Any
   disagreement prints what differed and traps, so libFuzzer saves the input.

   Hooks do more than record (op "hook program"): on_acquire spawns a child in a later pool and
   on_release sends it back, each nested call checked against that pool's model inside the hook;
   on_release releases a partner in its own pool; and every hook may try a forbidden call on its
   own pool (clear, trim, destroy, registry remove, releasing its own member), which must be
   refused with one line and no change. The registry's lookups and refusals have their own op,
   and an sp_dense has its own model (fuzz_dense.c). Behaviour still being built elsewhere is
   behind the FZ_MODEL_* switches of fuzz.h. At exit the fuzzer prints how many operations were
   model-checked, and how fast.

   The model does not guess what the contract leaves open (which free member is handed out, which
   free members trim disposes): it accepts any answer the contract allows and learns from it.
   Members prewarmed by a pool without a `create` hook have no pointer the model could know yet;
   they are counted as anonymous until an acquisition names them.

   Semantics come from include/spawnpool.h and issue 2 ("Semantics"). Build: tests/fuzz/
   CMakeLists.txt (clang only); run: `make fuzz` (or briefly in `make test`). */
#define _POSIX_C_SOURCE 200112L /* posix_memalign, clock_gettime under -std=c11 */
#include <spawnpool.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fuzz.h"

/* White-box: the library's own check of its internal invariants (src/sp_internal.h). */
bool sp__pool_check(const sp_pool *pool);
/* White-box: sets the life counter of a member's slot, to reach exhaustion without 2^28 lives. */
void sp__debug_set_life(sp_pool *pool, const void *item, uint32_t life);
/* White-box: forgets the lives that the faked exhaustions of earlier inputs used up, which would
   otherwise retire one pool tag each, for good, and run the process out of tags. */
void sp__tags_reset(void);
#define FZ_LIFE_MAX ((1u << 23) - 1u) /* the last life a slot may have (see HANDLES) */
#define FZ_LIFE_SHIFT 41u /* where a handle's life starts (see HANDLES) */

#define FZ_POOLS 4          /* pool slots in the registry */
#define FZ_MEMBERS 192      /* model capacity per pool; operations that could pass it are skipped */
#define FZ_STALE 48         /* remembered handles of ended lives, per pool */
#define FZ_DEAD 16          /* remembered pointers of disposed members, per pool */
#define FZ_EVENTS 512       /* hook calls recorded during one operation */
#define FZ_OPS 4096         /* operations per input (an input of -max_len bytes runs out first) */
#define FZ_BLOCKS 1024      /* live allocator blocks per pool */

/* ---------------------------------------------------------------------------------------------
   Failure reporting and the operation count
   ------------------------------------------------------------------------------------------ */

int fz_op_index;
const char *fz_op_name = "setup";
uint64_t fz_ops_checked, fz_dense_ops;
static uint64_t fz_inputs;
static uint64_t fz_nested_checked; /* calls hooks made on other pools, checked in the hook */
static uint64_t fz_refusals_checked; /* forbidden calls from hooks/callbacks, refused as modelled */
static struct timespec fz_started;

static double fz_elapsed(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - fz_started.tv_sec) + (double)(now.tv_nsec - fz_started.tv_nsec) * 1e-9;
}

/* The line `make fuzz` ends with (libFuzzer exits through exit(), so atexit handlers run). */
static void fz_summary(int divergences) {
    double s = fz_elapsed();
    fprintf(stderr, "fuzz: %llu model-checked operations, %d divergence%s (%llu inputs, %.1f ops/input, "
            "%.0f s, %.0f ops/s)\n", (unsigned long long)fz_ops_checked, divergences,
            divergences == 1 ? "" : "s", (unsigned long long)fz_inputs,
            fz_inputs ? (double)fz_ops_checked / (double)fz_inputs : 0.0, s,
            s > 0 ? (double)fz_ops_checked / s : 0.0);
    fprintf(stderr, "fuzz: of which %llu on sp_dense; besides, %llu calls from hooks into other pools and "
            "%llu refused calls from hooks and callbacks were checked\n", (unsigned long long)fz_dense_ops,
            (unsigned long long)fz_nested_checked, (unsigned long long)fz_refusals_checked);
}

static void fz_summary_at_exit(void) {
    static int printed; /* libFuzzer may run the exit handlers twice */
    if (!printed++) fz_summary(0);
}

void fz_fail(const char *what, int line, const char *file) {
    const char *base = strrchr(file, '/');
    fprintf(stderr, "fuzz_pool: MISMATCH (%s:%d) during op #%d %s: %s\n", base ? base + 1 : file, line,
            fz_op_index, fz_op_name, what);
    fz_summary(1);
    fflush(stderr);
    __builtin_trap();
}

/* ---------------------------------------------------------------------------------------------
   Allocator: checks the allocator contract (sizes given back, alignment) and can fail on demand
   ------------------------------------------------------------------------------------------ */

typedef struct fz_block {
    void *ptr;
    size_t size;
} fz_block;

typedef struct fz_alloc {
    uint64_t calls;
    size_t live_bytes;
    size_t nblocks;
    int fail_armed; /* the next call fails */
    int fail_hits;  /* calls failed on purpose */
    fz_block blocks[FZ_BLOCKS];
} fz_alloc;

static void *fz_alloc_fn(size_t size, size_t align, void *user) {
    fz_alloc *a = (fz_alloc *)user;
    a->calls++;
    FZ_CHECK(align != 0 && (align & (align - 1)) == 0, "allocator asked for a non-power-of-two alignment");
    if (a->fail_armed) {
        a->fail_armed = 0;
        a->fail_hits++;
        return NULL;
    }
    if (a->nblocks == FZ_BLOCKS) return NULL; /* the library must survive this like any failure */
    FZ_CHECK(align >= sizeof(void *) && size > 0, "allocator asked for less than the contract's alignment, or 0 bytes");
    void *p = NULL;
    if (posix_memalign(&p, align, size ? size : 1) != 0) return NULL;
    a->blocks[a->nblocks].ptr = p;
    a->blocks[a->nblocks].size = size;
    a->nblocks++;
    a->live_bytes += size;
    return p;
}

static void fz_free_fn(void *ptr, size_t size, void *user) {
    fz_alloc *a = (fz_alloc *)user;
    if (!ptr) return;
    for (size_t i = a->nblocks; i-- > 0;) {
        if (a->blocks[i].ptr == ptr) {
            FZ_CHECK(a->blocks[i].size == size, "free got a size other than the one allocated");
            a->live_bytes -= size;
            a->blocks[i] = a->blocks[--a->nblocks];
            free(ptr);
            return;
        }
    }
    fz_fail("free of a block this allocator did not hand out (or a double free)", __LINE__, __FILE__);
}

/* ---------------------------------------------------------------------------------------------
   The model
   ------------------------------------------------------------------------------------------ */

typedef struct fz_member {
    unsigned char *ptr;
    int leased;
    uint64_t seq;     /* acquisition order: larger is newer */
    uint32_t slot;    /* slot index of the current life (the handle's low bits): memory order */
    sp_handle handle; /* of the current life when leased */
    uint64_t serial;  /* what the test wrote into the member in its last life (0: nothing) */
    unsigned prio;    /* what the priority hook reports */
    sp_handle partner; /* re-entrant pools: on_release releases this member of the same pool */
    int last_life;     /* its slot is in its last life: the next release retires it */
    int retired;       /* retired during the current operation; dropped from the model after */
    int child_slot;    /* -1, or the pool whose member `child` on_acquire spawned for it */
    sp_handle child;   /* released by on_release when its life still lasts */
} fz_member;

enum { EV_CREATE = 1, EV_ACQUIRE, EV_RELEASE, EV_DISPOSE, EV_NESTED_RELEASE };

typedef struct fz_event {
    int kind;
    void *ptr;
    const void *arg;
    sp_result result; /* EV_NESTED_RELEASE: what the hook's sp_release returned */
    int child_slot;   /* EV_ACQUIRE: the child on_acquire spawned (-1: none) */
    sp_handle child;
} fz_event;

enum { HK_CREATE = 1, HK_ACQUIRE = 2, HK_RELEASE = 4, HK_DISPOSE = 8 };

typedef struct fz_pool {
    sp_pool *pool; /* NULL: slot empty */
    char name[16];
    sp_overflow policy;
    unsigned hooks; /* HK_ bits */
    int has_priority;
    int memory;     /* SP_ORDER_MEMORY (asked for, or the default without RECLAIM at creation) */
    uint64_t cursor; /* memory order, no priority hook: a round-robin reclaim looks from here */
    int reenter;    /* on_release releases the member's partner (a parent taking its child) */
    int default_alloc; /* heap memory from the C library: allocator checks off */
    int fixed;
    size_t item_size;
    size_t limit;     /* effective cap for growth (0: unbounded) */
    size_t max_set;   /* what stats.max reports */
    size_t capacity;  /* fixed mode: members the buffer holds */
    size_t retired_slots; /* fixed mode: slots retired for good (exhausted life counters) */
    unsigned char *buffer_block;
    size_t buffer_size;
    uint64_t tag; /* pool tag bits of its handles, learnt from the first one (0: unknown) */
    /* What the hooks do besides recording (op "hook program"): on_acquire spawns a child in
       pool child_slot (a later slot, so that nesting ends), through sp_spawn or sp_acquire_with;
       on_release sends it back, through sp_registry_release or sp_release. The hooks in
       misuse_hooks (HK_ bits) try the forbidden call `misuse` (FZ_MISUSE_) on their own pool. */
    int child_slot;
    int child_spawn, child_registry;
    int misuse;
    unsigned misuse_hooks;
    unsigned callback_misuse; /* FZ_MODEL_GUARDS: what priority tries (FZ_MISUSE_) */

    fz_member m[FZ_MEMBERS];
    size_t n;    /* known members */
    size_t anon; /* free members the model cannot name */
    uint64_t next_seq;
    sp_stats expect;

    sp_handle stale[FZ_STALE];
    size_t stale_n, stale_pos;
    void *dead[FZ_DEAD];
    size_t dead_n, dead_pos;

    fz_event ev[FZ_EVENTS];
    size_t ev_n;
    int in_hook;
    int warn_lines; /* WARN and ERROR lines logged (a hook's refused call, once checked, is
                       taken off again) */
    int lines_expected; /* what the model says warn_lines is after each operation */
    int resolve_lines;  /* "resolve of handle" warnings: counted apart (fz_resolve_foreign) */
    int resolve_expected;
    uint64_t foreign_resolves; /* handles of other pools it was asked to resolve */
    char last_log_pool[32];

    fz_alloc alloc;
    sp_desc desc; /* what it was made from: a restore of its snapshot uses the same */
} fz_pool;

static fz_pool fz_pools[FZ_POOLS];
static sp_registry *fz_reg;
static int fz_order[FZ_POOLS]; /* registry order of addition: slot indices */
static size_t fz_order_n;
static uint64_t fz_serial;
static int fz_stack_object; /* an address no pool owns */
static int fz_incarnation;     /* names pools uniquely within one input */
static int fz_reg_lines, fz_reg_expected; /* lines through the registry's own logger */
static fz_pool *fz_tearing_down;  /* the pool sp_clear / sp_pool_destroy is running on */
static int fz_registry_destroying;
static int fz_registry_bulk; /* sp_registry_release_all runs: hooks leave children alone */
#if FZ_MODEL_TAG_LIVES
#  define FZ_GONE 64
static sp_handle fz_gone[FZ_GONE]; /* handles of destroyed pools: never resolve again */
static size_t fz_gone_n, fz_gone_pos;
#endif

/* Forbidden calls a hook (or a callback) makes on its own pool; each must be refused with one
   line naming the pool, and change nothing. */
enum {
    FZ_MISUSE_NONE,
    FZ_MISUSE_CLEAR,
    FZ_MISUSE_TRIM,
    FZ_MISUSE_DESTROY,
    FZ_MISUSE_REMOVE,        /* sp_registry_remove of its own pool */
    FZ_MISUSE_RELEASE_SELF,  /* the member the hook is processing */
    FZ_MISUSE_ACQUIRE,       /* dispose during clear/destroy; priority (FZ_MODEL_GUARDS) */
    FZ_MISUSE_REG_DESTROY,   /* sp_registry_destroy (FZ_MODEL_GUARDS) */
    FZ_MISUSE_COUNT
};

static size_t fz_leased_count(const fz_pool *p) {
    size_t k = 0;
    for (size_t i = 0; i < p->n; i++) k += p->m[i].leased ? 1u : 0u;
    return k;
}

static fz_member *fz_find(fz_pool *p, const void *ptr) {
    for (size_t i = 0; i < p->n; i++)
        if (p->m[i].ptr == ptr) return &p->m[i];
    return NULL;
}

static void fz_forget(fz_pool *p, fz_member *mb) {
    if (p->dead_n < FZ_DEAD) p->dead_n++;
    p->dead[p->dead_pos] = mb->ptr;
    p->dead_pos = (p->dead_pos + 1) % FZ_DEAD;
    *mb = p->m[--p->n];
}

static void fz_stale_push(fz_pool *p, sp_handle h) {
    if (p->stale_n < FZ_STALE) p->stale_n++;
    p->stale[p->stale_pos] = h;
    p->stale_pos = (p->stale_pos + 1) % FZ_STALE;
}

static void fz_life_ends(fz_pool *p, fz_member *mb) {
    FZ_CHECK(mb->leased, "model: life ends on a member that is not leased");
    fz_stale_push(p, mb->handle);
    mb->leased = 0;
    mb->handle = sp_handle_null();
}

/* A leased member's place in its pool's order: acquisition (seq) or slot index. */
static uint64_t fz_key(const fz_pool *p, const fz_member *mb) { return p->memory ? mb->slot : mb->seq; }

/* The first leased member in the pool's order whose key is at least `from` (0: the first). */
static fz_member *fz_first_at(fz_pool *p, uint64_t from) {
    fz_member *best = NULL;
    for (size_t i = 0; i < p->n; i++) {
        fz_member *mb = &p->m[i];
        if (mb->leased && fz_key(p, mb) >= from && (!best || fz_key(p, mb) < fz_key(p, best))) best = mb;
    }
    return best;
}

/* The member the RECLAIM rule picks: lowest priority (with the hook), else the first in the
   pool's order (the oldest; or the lowest slot). Memory order without the hook goes round robin:
   the first leased slot at or after the cursor, else wrapping to slot 0; the cursor then moves
   past the victim. (No member is busy when the fuzzer acquires: acquisitions never run in hooks.) */
static fz_member *fz_victim(fz_pool *p) {
    if (p->memory && !p->has_priority) {
        fz_member *v = fz_first_at(p, p->cursor);
        if (!v) v = fz_first_at(p, 0);
        if (v) p->cursor = (uint64_t)v->slot + 1u;
        return v;
    }
    fz_member *best = NULL;
    for (size_t i = 0; i < p->n; i++) {
        fz_member *mb = &p->m[i];
        if (!mb->leased) continue;
        if (!best) { best = mb; continue; }
        if (p->has_priority && mb->prio != best->prio) {
            if (mb->prio < best->prio) best = mb;
        } else if (fz_key(p, mb) < fz_key(p, best)) {
            best = mb;
        }
    }
    return best;
}

/* ---------------------------------------------------------------------------------------------
   Hooks: record what they are called with, and check the member's memory
   ------------------------------------------------------------------------------------------ */

static void fz_record(fz_pool *p, int kind, void *item, const void *arg) {
    FZ_CHECK(p->ev_n < FZ_EVENTS, "too many hook calls in one operation");
    p->ev[p->ev_n].kind = kind;
    p->ev[p->ev_n].ptr = item;
    p->ev[p->ev_n].arg = arg;
    p->ev[p->ev_n].result = SP_OK;
    p->ev[p->ev_n].child_slot = 0;
    p->ev[p->ev_n].child = sp_handle_null();
    p->ev_n++;
}

static void *fz_op_acquire(fz_pool *p, int kind, unsigned b);
static void fz_release_ok(fz_pool *p, fz_member *mb, sp_result r);
static fz_member *fz_find_life(fz_pool *p, sp_handle h);

/* A forbidden call on p's own pool from inside one of its hooks or callbacks: refused with
   exactly one line naming the pool, nothing changed (stats, registry). The line is checked here
   and then taken off, so that the operation's own line count stays the model's. */
static void fz_try_misuse(fz_pool *p, int kind, void *item) {
    if (!p->pool || kind == FZ_MISUSE_NONE) return;
    sp_stats before, after;
    sp_stats_get(p->pool, &before);
    int lines = p->warn_lines, reg_lines = fz_reg_lines;
    size_t count = sp_registry_count(fz_reg);
    switch (kind) {
    case FZ_MISUSE_CLEAR:
        FZ_CHECK(sp_clear(p->pool) == 0, "sp_clear from a hook of its pool disposed members");
        break;
    case FZ_MISUSE_TRIM:
        FZ_CHECK(sp_trim(p->pool, 0) == 0, "sp_trim from a hook of its pool disposed members");
        break;
    case FZ_MISUSE_DESTROY:
        sp_pool_destroy(p->pool);
        break;
    case FZ_MISUSE_REMOVE: {
        sp_result r = sp_registry_remove(fz_reg, p->name);
#if FZ_MODEL_REGISTRY_API
        FZ_CHECK(r != SP_OK, "sp_registry_remove from a hook of its pool returned SP_OK (issue 9 item 10)");
#else
        (void)r; /* SP_OK on this library though the destroy was refused (issue 9 item 10) */
#endif
        if (!fz_registry_destroying) /* (then sp_registry_get is refused too) */
            FZ_CHECK(sp_registry_get(fz_reg, p->name) == p->pool, "a refused sp_registry_remove unregistered the pool");
        break;
    }
    case FZ_MISUSE_RELEASE_SELF:
        FZ_CHECK(sp_release(p->pool, item) != SP_OK, "a hook released the member it is processing");
        break;
    case FZ_MISUSE_ACQUIRE:
        FZ_CHECK(sp_acquire(p->pool) == NULL, "an acquisition the pool must refuse got a member");
        break;
    default: /* FZ_MISUSE_REG_DESTROY */
        sp_registry_destroy(fz_reg);
        break;
    }
    sp_stats_get(p->pool, &after);
    FZ_CHECK(memcmp(&before, &after, sizeof before) == 0, "a refused call changed the pool's stats");
    FZ_CHECK(sp_registry_count(fz_reg) == count, "a refused call changed the registry");
    if (kind == FZ_MISUSE_REG_DESTROY || kind == FZ_MISUSE_REMOVE) { /* either logger may say it */
        FZ_CHECK(p->warn_lines + fz_reg_lines == lines + reg_lines + 1, "a refused registry call must log one line");
        if (p->warn_lines == lines) {
            fz_reg_lines--;
            fz_refusals_checked++;
            return;
        }
    } else {
        FZ_CHECK(p->warn_lines == lines + 1 && fz_reg_lines == reg_lines, "a refused call must log exactly one line");
    }
    FZ_CHECK(strcmp(p->last_log_pool, p->name) == 0, "the refusal does not name the pool");
    p->warn_lines--;
    fz_refusals_checked++;
}

/* What a hook tries: everything above but an acquisition (which is allowed, except from
   dispose while the pool is cleared or destroyed) and a registry destroy (FZ_MODEL_GUARDS). */
static void fz_hook_misuse(fz_pool *p, unsigned hook, void *item) {
    if (!(p->misuse_hooks & hook)) return;
    int kind = p->misuse;
#if FZ_MODEL_GUARDS
    if (kind == FZ_MISUSE_ACQUIRE && (hook != HK_DISPOSE || (fz_tearing_down != p && !fz_registry_destroying)))
        return;
#else
    if (kind == FZ_MISUSE_ACQUIRE) return;
#endif
#if !FZ_MODEL_REGISTRY_API
    if (kind == FZ_MISUSE_REG_DESTROY) return;
    /* registry calls from dispose while the registry destroys its pools read freed entries
       without the registry's refusals (issue 9 item 2) */
    if (kind == FZ_MISUSE_REMOVE && fz_registry_destroying) return;
#endif
    fz_try_misuse(p, kind, item);
}

static void fz_hook_create(void *item, void *user) {
    fz_pool *p = (fz_pool *)user;
    const unsigned char *b = (const unsigned char *)item;
    for (size_t i = 0; i < p->item_size; i++) FZ_CHECK(b[i] == 0, "create got a member that is not zeroed");
    memset(item, 0xC5, p->item_size); /* the constructed state, which must survive every life */
    fz_record(p, EV_CREATE, item, NULL);
    fz_hook_misuse(p, HK_CREATE, item);
}

/* on_acquire may spawn a child in a later pool (a ship its exhaust): the nested acquisition is
   checked against that pool's model right here, and the child is remembered with the event. */
static void fz_hook_acquire(void *item, const void *arg, void *user) {
    fz_pool *p = (fz_pool *)user;
    fz_record(p, EV_ACQUIRE, item, arg);
    size_t at = p->ev_n - 1u;
    fz_hook_misuse(p, HK_ACQUIRE, item);
    if (p->child_slot <= 0 || !p->pool) return;
    fz_pool *c = &fz_pools[p->child_slot];
    if (!c->pool) return;
    void *r = fz_op_acquire(c, p->child_spawn ? 3 : 1, 0);
    fz_nested_checked++;
    if (!r) return;
    fz_member *cm = fz_find(c, r);
    FZ_CHECK(cm != NULL && cm->leased, "a spawned child is not leased in its pool's model");
    p->ev[at].child_slot = p->child_slot;
    p->ev[at].child = cm->handle;
}

/* In a re-entrant pool a member may hold the handle of a partner in the same pool, as a parent
   holds its child's: releasing the parent releases the partner too, from inside on_release,
   if that handle still resolves (the contract allows releasing any member but the one the hook
   is processing). */
static void fz_hook_release(void *item, void *user) {
    fz_pool *p = (fz_pool *)user;
    fz_record(p, EV_RELEASE, item, NULL);
    fz_hook_misuse(p, HK_RELEASE, item);
    /* A parent sends its child back to the child's pool, if the child still lives. */
    fz_member *parent = fz_find(p, item);
    if (parent && parent->child_slot > 0 && !fz_registry_bulk) {
        fz_pool *c = &fz_pools[parent->child_slot];
        sp_handle ch = parent->child;
        parent->child_slot = 0;
        fz_member *cm = c->pool ? fz_find_life(c, ch) : NULL;
        void *cp = c->pool ? sp_resolve(c->pool, ch) : NULL;
        FZ_CHECK(cp == (cm ? (void *)cm->ptr : NULL), "a child's handle resolves otherwise than the model says");
        if (cm) {
            sp_result r = p->child_registry ? sp_registry_release(fz_reg, cp) : sp_release(c->pool, cp);
            fz_release_ok(c, cm, r);
            fz_nested_checked++;
        }
    }
    /* In either order, iteration does not visit a member whose on_release is running. */
    size_t k = 0;
    for (const void *it = sp_first(p->pool); it; it = sp_next(p->pool, it)) {
        FZ_CHECK(it != item, "iteration visited a member whose on_release is running");
        FZ_CHECK(++k <= FZ_MEMBERS, "iteration inside on_release does not end");
    }
    if (!p->reenter) return;
    const fz_member *mb = fz_find(p, item);
    if (!mb || sp_handle_is_null(mb->partner)) return;
    void *partner = sp_resolve(p->pool, mb->partner);
    if (!partner) return;
    sp_result r = sp_release(p->pool, partner);
    fz_record(p, EV_NESTED_RELEASE, partner, NULL);
    p->ev[p->ev_n - 1].result = r;
}

/* With a create hook a member's bytes are known at all times: the fill, with the last serial
   written over the first bytes. */
static void fz_check_contents(const fz_pool *p, const fz_member *mb, const char *what) {
    unsigned char want[64];
    size_t n = p->item_size < sizeof want ? p->item_size : sizeof want;
    memset(want, 0xC5, n);
    if (mb->serial) {
        for (size_t i = 0; i < n && i < 8; i++) want[i] = (unsigned char)(mb->serial >> (8 * i));
    }
    FZ_CHECK(memcmp(mb->ptr, want, n) == 0, what);
}

static void fz_hook_dispose(void *item, void *user) {
    fz_pool *p = (fz_pool *)user;
    if (p->hooks & HK_CREATE) {
        fz_member *mb = fz_find(p, item);
        FZ_CHECK(mb != NULL, "dispose got a pointer that is not a member");
        fz_check_contents(p, mb, "dispose: member contents changed (constructed state lost)");
    }
    fz_record(p, EV_DISPOSE, item, NULL);
    fz_hook_misuse(p, HK_DISPOSE, item);
}

static double fz_hook_priority(const void *item, void *user) {
    fz_pool *p = (fz_pool *)user;
    fz_member *mb = fz_find(p, item);
    FZ_CHECK(mb != NULL && mb->leased, "priority asked about a member that is not leased");
#if FZ_MODEL_GUARDS
    /* a pure scoring function: every pool call on its own pool is refused (decision 1) */
    fz_try_misuse(p, (int)p->callback_misuse, (void *)(uintptr_t)item);
#endif
    return (double)mb->prio;
}

static void fz_logger(sp_log_level level, const char *pool_name, const char *message, void *user) {
    fz_pool *p = (fz_pool *)user;
    FZ_CHECK(message != NULL && pool_name != NULL, "log line with a NULL name or message");
    if (level == SP_LOG_INFO) return;
    if (strncmp(message, "resolve of handle", 17) == 0) {
        p->resolve_lines++;
        return;
    }
    p->warn_lines++;
    snprintf(p->last_log_pool, sizeof p->last_log_pool, "%s", pool_name);
}

static void fz_reg_logger(sp_log_level level, const char *name, const char *message, void *user) {
    (void)user;
    FZ_CHECK(message != NULL && name != NULL, "registry log line with a NULL name or message");
    if (level != SP_LOG_INFO) fz_reg_lines++;
}

/* Takes the next recorded hook call, which must be `kind` on `ptr` (NULL: any pointer), when
   that hook is installed. Returns the pointer it was called with. */
static void *fz_take(fz_pool *p, size_t *pos, int kind, const void *ptr, const char *what) {
    static const unsigned bit[] = {0, HK_CREATE, HK_ACQUIRE, HK_RELEASE, HK_DISPOSE, HK_RELEASE};
    if (!(p->hooks & bit[kind])) return NULL;
    FZ_CHECK(*pos < p->ev_n, what);
    FZ_CHECK(p->ev[*pos].kind == kind, what);
    FZ_CHECK(ptr == NULL || p->ev[*pos].ptr == ptr, what);
    return p->ev[(*pos)++].ptr;
}

/* Members retired during an operation leave the model once nothing refers to them any more. */
static void fz_sweep_retired(fz_pool *p) {
    for (size_t i = 0; i < p->n;) {
        if (p->m[i].retired) {
            fz_forget(p, &p->m[i]);
            continue;
        }
        i++;
    }
}

static void fz_events_done(fz_pool *p, size_t pos) {
    FZ_CHECK(pos == p->ev_n, "unexpected extra hook calls");
    p->ev_n = 0;
    fz_sweep_retired(p);
}

static fz_member *fz_find_life(fz_pool *p, sp_handle h) {
    if (sp_handle_is_null(h)) return NULL;
    for (size_t i = 0; i < p->n; i++)
        if (p->m[i].leased && sp_handle_eq(p->m[i].handle, h)) return &p->m[i];
    return NULL;
}

/* The release of mb as the hooks show it: on_release on mb, inside it the release of its partner
   (recursively, the links form no cycle) when the partner's life is still the linked one; then
   mb's life ends. Returns the number of lives ended. */
static size_t fz_release_chain(fz_pool *p, size_t *pos, fz_member *mb, const char *what) {
    size_t ended = 1;
    fz_take(p, pos, EV_RELEASE, mb->ptr, what);
    if (p->reenter && (p->hooks & HK_RELEASE)) {
        fz_member *x = fz_find_life(p, mb->partner);
        if (x) {
            ended += fz_release_chain(p, pos, x, "nested release: on_release of the partner");
            FZ_CHECK(*pos < p->ev_n && p->ev[*pos].kind == EV_NESTED_RELEASE && p->ev[*pos].ptr == x->ptr,
                     "a hook's release of its partner did not happen as the model expects");
            FZ_CHECK(p->ev[*pos].result == SP_OK, "a release from inside on_release was refused");
            (*pos)++;
        }
    }
    fz_life_ends(p, mb);
    p->expect.released++;
    if (mb->last_life) { /* the slot's last life ended: the member is destroyed, the slot retired */
        fz_take(p, pos, EV_DISPOSE, mb->ptr, "retire: dispose must run when a slot's last life ends");
        mb->retired = 1;
        p->expect.disposed++;
        if (p->fixed) p->retired_slots++;
    }
    return ended;
}

/* ---------------------------------------------------------------------------------------------
   Comparing the library with the model
   ------------------------------------------------------------------------------------------ */

#define FZ_SLOT_BITS 24
#define FZ_TAG_MASK (((uint64_t)0x1FFFF) << FZ_SLOT_BITS)

static void fz_check_stats(fz_pool *p) {
    sp_stats s;
    sp_stats_get(p->pool, &s);
    size_t leased = fz_leased_count(p);
    size_t size = p->n + p->anon;
    FZ_CHECK(s.size == size, "stats.size differs from the model");
    FZ_CHECK(s.leased == leased, "stats.leased differs from the model");
    FZ_CHECK(s.free == size - leased, "stats.free differs from the model");
    FZ_CHECK(s.size == s.leased + s.free, "size != leased + free");
    FZ_CHECK(s.created - s.disposed == s.size, "created - disposed != size");
    if (p->fixed && p->max_set == 0) {
        FZ_CHECK(s.max == 0 || s.max == p->capacity, "stats.max of a fixed pool after set_max(0)");
    } else {
        FZ_CHECK(s.max == p->max_set, "stats.max differs from the model");
    }
    FZ_CHECK(s.peak_leased == p->expect.peak_leased, "stats.peak_leased differs from the model");
    FZ_CHECK(s.created == p->expect.created, "stats.created differs from the model");
    FZ_CHECK(s.disposed == p->expect.disposed, "stats.disposed differs from the model");
    FZ_CHECK(s.acquired == p->expect.acquired, "stats.acquired differs from the model");
    FZ_CHECK(s.released == p->expect.released, "stats.released differs from the model");
    FZ_CHECK(s.reclaimed == p->expect.reclaimed, "stats.reclaimed differs from the model");
    FZ_CHECK(s.dropped == p->expect.dropped, "stats.dropped differs from the model");
    FZ_CHECK(s.grown_past_max == p->expect.grown_past_max, "stats.grown_past_max differs from the model");
    if (p->fixed) {
        FZ_CHECK(p->alloc.calls == 0, "a fixed-buffer pool called the allocator");
        FZ_CHECK(s.bytes <= p->buffer_size, "a fixed-buffer pool reports more bytes than its buffer");
    } else if (!p->default_alloc) {
        FZ_CHECK(s.bytes == p->alloc.live_bytes, "stats.bytes differs from what the allocator holds");
    }
}

/* Resolving another pool's handle: NULL, and a warning. This library warns every time; with
   FZ_MODEL_RATE_LIMITS (issue 11 item 9) the first time, then when the count reaches a power of
   two. A stale handle of the pool's own is silent. */
static void *fz_resolve_foreign(fz_pool *p, sp_handle h) {
    void *r = sp_resolve(p->pool, h);
    uint64_t n = ++p->foreign_resolves;
#if FZ_MODEL_RATE_LIMITS
    if ((n & (n - 1u)) == 0) p->resolve_expected++;
#else
    (void)n;
    p->resolve_expected++;
#endif
    return r;
}

/* Every handle of an ended life, and every live handle of another pool, resolves to NULL. */
static void fz_check_foreign_handles(fz_pool *p) {
    for (size_t i = 0; i < p->stale_n; i++)
        FZ_CHECK(sp_resolve(p->pool, p->stale[i]) == NULL, "a stale handle still resolves");
#if FZ_MODEL_TAG_LIVES
    /* (Until the pool issued a handle its tag is unknown, and nothing of it can resolve.) */
    for (size_t i = 0; i < fz_gone_n && p->tag; i++) {
        if (((fz_gone[i].id & FZ_TAG_MASK) | 1u) != p->tag) {
            FZ_CHECK(fz_resolve_foreign(p, fz_gone[i]) == NULL, "a destroyed pool's handle resolves in a later pool");
            continue;
        }
        /* its tag came back: the handle must not resolve (its warning, stale or forged, is not
           modelled) */
        FZ_CHECK(sp_resolve(p->pool, fz_gone[i]) == NULL, "a destroyed pool's handle resolves in a later pool");
        p->resolve_expected = p->resolve_lines;
    }
#endif
    /* Another pool's handles: a few each time, in turn (each logs a formatted warning, which
       would otherwise cost more than the rest of the check). */
    static size_t turn;
    for (int q = 0; q < FZ_POOLS; q++) {
        fz_pool *o = &fz_pools[q];
        if (o == p || !o->pool) continue;
        for (int k = 0; k < 4; k++, turn++) {
            if (o->stale_n)
                FZ_CHECK(fz_resolve_foreign(p, o->stale[turn % o->stale_n]) == NULL, "another pool's stale handle resolves");
            const fz_member *mb = o->n ? &o->m[turn % o->n] : NULL;
            if (mb && mb->leased)
                FZ_CHECK(fz_resolve_foreign(p, mb->handle) == NULL, "another pool's handle resolves");
        }
    }
}

/* The leased members in the pool's order (insertion sort: a few dozen members). */
static size_t fz_sorted(fz_pool *p, const fz_member **out) {
    size_t k = 0;
    for (size_t i = 0; i < p->n; i++) {
        const fz_member *mb = &p->m[i];
        if (!mb->leased) continue;
        size_t j = k++;
        for (; j > 0 && fz_key(p, out[j - 1]) > fz_key(p, mb); j--) out[j] = out[j - 1];
        out[j] = mb;
    }
    return k;
}

/* What sp_leased_each visited, in its order. */
typedef struct fz_walk {
    const void *seen[FZ_MEMBERS];
    size_t n;
} fz_walk;

static void fz_walk_fn(void *item, const char *file, int line, void *user) {
    fz_walk *w = (fz_walk *)user;
    (void)file, (void)line;
    FZ_CHECK(w->n < FZ_MEMBERS, "sp_leased_each visits more members than the model holds");
    w->seen[w->n++] = item;
}

static void fz_check_pool(fz_pool *p) {
    if (!p->pool) return;
    FZ_CHECK(p->ev_n == 0, "hook calls outside of an operation");
    FZ_CHECK(sp__pool_check(p->pool), "sp__pool_check: the library's internal invariants broke");
    fz_check_stats(p);

    /* The leased set in the pool's order: oldest acquisition first, or ascending slot index. */
    static const fz_member *order[FZ_MEMBERS];
    size_t leased = fz_sorted(p, order);
    const void *it = sp_first(p->pool);
    for (size_t k = 0; k < leased; k++) {
        FZ_CHECK(it == order[k]->ptr, p->memory ? "sp_first/sp_next order differs from slot order"
                                                : "sp_first/sp_next order differs from acquisition order");
        it = sp_next(p->pool, it);
    }
    FZ_CHECK(it == NULL, "sp_next visits more members than are leased");
#if FZ_MODEL_ITER
    size_t steps = 0;
    for (sp_iter cur = sp_iter_first(p->pool); cur.item; sp_iter_next(p->pool, &cur), steps++)
        FZ_CHECK(steps < leased && cur.item == order[steps]->ptr, "the cursor's order differs from the pool's order");
    FZ_CHECK(steps == leased, "the cursor visits fewer members than are leased");
#endif
    static fz_walk w;
    w.n = 0;
    FZ_CHECK(sp_leased_each(p->pool, fz_walk_fn, &w) == leased && w.n == leased,
             "sp_leased_each miscounts the leased members");
    for (size_t k = 0; k < w.n; k++)
        FZ_CHECK(w.seen[k] == order[k]->ptr, "sp_leased_each order differs from the pool's order");

    for (size_t i = 0; i < p->n; i++) {
        const fz_member *mb = &p->m[i];
        FZ_CHECK(sp_is_leased(p->pool, mb->ptr) == (mb->leased != 0), "sp_is_leased differs from the model");
        FZ_CHECK(sp_registry_owner(fz_reg, mb->ptr) == p->pool, "sp_registry_owner misses a member");
        sp_handle h = sp_handle_of(p->pool, mb->ptr);
        if (mb->leased) {
            FZ_CHECK(sp_handle_eq(h, mb->handle), "sp_handle_of changed within one life");
            FZ_CHECK(sp_resolve(p->pool, mb->handle) == mb->ptr, "a live handle does not resolve");
        } else {
            FZ_CHECK(sp_handle_is_null(h), "sp_handle_of gave a handle for a free member");
        }
    }
    fz_check_foreign_handles(p);
}

/* After every operation: every pool's stats, and every log line the model predicted and no
   other (resolve warnings aside: fz_op_handles). */
static void fz_check_all_cheap(void) {
    for (int i = 0; i < FZ_POOLS; i++) {
        fz_pool *p = &fz_pools[i];
        if (!p->pool) continue;
        fz_check_stats(p);
        FZ_CHECK(p->warn_lines == p->lines_expected, "the pool logged other lines than the model predicts");
        FZ_CHECK(p->resolve_lines == p->resolve_expected, "the pool's resolve warnings differ from the model");
    }
    FZ_CHECK(fz_reg_lines == fz_reg_expected, "the registry logged other lines than the model predicts");
}

/* ---------------------------------------------------------------------------------------------
   Pool slots: create and destroy
   ------------------------------------------------------------------------------------------ */

static const size_t fz_item_sizes[8] = {1, 2, 3, 8, 12, 16, 24, 40};

static void fz_desc_hooks(fz_pool *p, sp_desc *d) {
    d->create = (p->hooks & HK_CREATE) ? fz_hook_create : NULL;
    d->on_acquire = (p->hooks & HK_ACQUIRE) ? fz_hook_acquire : NULL;
    d->on_release = (p->hooks & HK_RELEASE) ? fz_hook_release : NULL;
    d->dispose = (p->hooks & HK_DISPOSE) ? fz_hook_dispose : NULL;
    d->priority = p->has_priority ? fz_hook_priority : NULL;
    d->user = p;
    d->allocator.alloc = fz_alloc_fn;
    d->allocator.free = fz_free_fn;
    d->allocator.user = &p->alloc;
    d->logger.log = fz_logger;
    d->logger.user = p;
}

/* Destroy (or registry destroy) ran: dispose once on every member, named or anonymous, in any
   order. Each named member is crossed out as it is seen, so a second dispose shows. */
static void fz_expect_disposal_of_all(fz_pool *p) {
    size_t pos = 0, anon_left = p->anon;
    for (size_t k = 0; k < p->n + p->anon; k++) {
        void *d = fz_take(p, &pos, EV_DISPOSE, NULL, "destroy: dispose must run once per member");
        if (!d) continue;
        fz_member *mb = fz_find(p, d);
        if (mb) {
            mb->ptr = NULL;
        } else {
            FZ_CHECK(anon_left > 0, "destroy disposed a pointer that is no member (or one twice)");
            anon_left--;
        }
    }
    fz_events_done(p, pos);
}

/* A pool is going: the children other pools' members hold in it are forgotten (a later pool in
   the slot is another pool), and its handles join those that must never resolve again. */
static void fz_forget_pool(int slot) {
    for (int q = 0; q < FZ_POOLS; q++)
        for (size_t i = 0; i < fz_pools[q].n; i++)
            if (fz_pools[q].m[i].child_slot == slot) fz_pools[q].m[i].child_slot = 0;
#if FZ_MODEL_TAG_LIVES
    const fz_pool *p = &fz_pools[slot];
    for (size_t i = 0; i < p->n + p->stale_n; i++) {
        sp_handle h = i < p->n ? p->m[i].handle : p->stale[i - p->n];
        if (sp_handle_is_null(h)) continue;
        fz_gone[fz_gone_pos] = h;
        fz_gone_pos = (fz_gone_pos + 1u) % FZ_GONE;
        if (fz_gone_n < FZ_GONE) fz_gone_n++;
    }
#endif
}

static void fz_slot_destroy(int slot, int via_remove) {
    fz_pool *p = &fz_pools[slot];
    if (!p->pool) return;
    size_t leased = fz_leased_count(p);
    int warn_before = p->warn_lines;
    fz_forget_pool(slot);
    if (via_remove) {
        fz_tearing_down = p;
        FZ_CHECK(sp_registry_remove(fz_reg, p->name) == SP_OK, "sp_registry_remove of a registered pool failed");
        fz_tearing_down = NULL;
    }
    fz_expect_disposal_of_all(p);
    if (leased > 0) FZ_CHECK(p->warn_lines > warn_before, "destroy with leased members logged no leak");
    FZ_CHECK(p->alloc.live_bytes == 0 && p->alloc.nblocks == 0, "destroy leaked allocator memory");
    free(p->buffer_block);
    p->buffer_block = NULL;
    p->pool = NULL;
    size_t w = 0;
    for (size_t i = 0; i < fz_order_n; i++)
        if (fz_order[i] != slot) fz_order[w++] = fz_order[i];
    fz_order_n = w;
}

/* Decodes a pool configuration and adds it to the registry. Some configurations are invalid on
   purpose first: those must be refused without a leak. `order` is a 2-bit field taken from the
   byte before the configuration (see LLVMFuzzerTestOneInput): 0 DEFAULT, 1 ACQUISITION,
   2 MEMORY; 3 an unknown order, refused first, then DEFAULT. */
static void fz_slot_create(int slot, unsigned order, fz_input *in) {
    fz_pool *p = &fz_pools[slot];
    unsigned b0 = fz_byte(in), b1 = fz_byte(in), b2 = fz_byte(in);

    memset(p, 0, sizeof *p);
    p->policy = (sp_overflow)((b0 & 3u) == 3u ? SP_OVERFLOW_RECLAIM : (b0 & 3u)); /* bits 0-1 */
    p->hooks = (b0 >> 2) & 15u;
    p->has_priority = (int)((b0 >> 6) & 1u);
    p->fixed = (int)((b0 >> 7) & 1u);
    p->item_size = fz_item_sizes[b1 & 7];
    static const size_t aligns[4] = {0, 1, 8, 16};
    size_t align = aligns[(b1 >> 3) & 3];
    size_t chunk = (b1 >> 5) & 3; /* 0: the library's default */
    p->reenter = (int)((b1 >> 7) & 1u);
    size_t max = (b2 & 15) % 11;  /* 0: unbounded */
    size_t initial = (b2 >> 4) & 3;
    snprintf(p->name, sizeof p->name, "p%d_%d", slot, ++fz_incarnation % 1000);

    sp_desc d = {0};
    d.name = NULL; /* defaults to the registry name */
    d.item_size = p->item_size;
    d.item_align = align;
    d.chunk_items = chunk;
    d.overflow = p->policy;
    d.order = (sp_order)(order == 3 ? SP_ORDER_DEFAULT : order); /* before sizing a buffer */
    fz_desc_hooks(p, &d);

    if (p->fixed) {
        size_t want = 1 + (max % 8);
        if (initial > want) initial = want;
        d.initial = initial;
        d.max = want;
        if (p->policy == SP_OVERFLOW_GROW) {
            /* GROW with a buffer is an invalid descriptor. */
            p->buffer_size = sp_buffer_size(&d, want);
            p->buffer_block = (unsigned char *)malloc(p->buffer_size + 16);
            d.buffer = p->buffer_block;
            d.buffer_size = p->buffer_size;
            FZ_CHECK(sp_registry_add(fz_reg, p->name, &d) == NULL, "GROW with a fixed buffer was accepted");
            free(p->buffer_block);
            p->buffer_block = NULL;
            p->policy = SP_OVERFLOW_DROP;
            d.overflow = p->policy;
        }
        p->buffer_size = sp_buffer_size(&d, want);
        FZ_CHECK(p->buffer_size > 0, "sp_buffer_size refused a valid desc");
        /* sp_buffer_size includes the alignment slack, so a misaligned start must still fit. */
        size_t offset = (b2 >> 7) ? 1u + (b1 & 7u) : 0u;
        p->buffer_block = (unsigned char *)malloc(p->buffer_size + 16);
        FZ_CHECK(p->buffer_block != NULL, "out of memory in the fuzzer");
        d.buffer = p->buffer_block + offset;
        d.buffer_size = p->buffer_size;
        max = want;
    } else {
        if (max && initial > max) initial = max;
        d.initial = initial;
        d.max = max;
        p->default_alloc = (int)((b2 >> 6) & 1u);
        if (p->default_alloc) memset(&d.allocator, 0, sizeof d.allocator);
        if (b2 & 0x80) {
            /* An invalid variant first: zero size or a non-power-of-two alignment. */
            sp_desc bad = d;
            if (b0 & 1) bad.item_size = 0;
            else bad.item_align = 3;
            FZ_CHECK(sp_registry_add(fz_reg, p->name, &bad) == NULL, "an invalid desc was accepted");
            FZ_CHECK(p->alloc.live_bytes == 0, "a refused desc leaked memory");
            p->warn_lines = 0;
        }
    }

    d.order = (sp_order)(order == 3 ? SP_ORDER_DEFAULT : order);
    if (order == 3) {
        sp_desc bad = d;
        bad.order = (sp_order)3;
        FZ_CHECK(sp_registry_add(fz_reg, p->name, &bad) == NULL, "an unknown order was accepted");
        FZ_CHECK(p->alloc.live_bytes == 0, "a refused desc leaked memory");
    }
    /* DEFAULT follows the policy the pool is created with (fixed GROW became DROP above). */
    p->memory = d.order == SP_ORDER_MEMORY ||
                (d.order == SP_ORDER_DEFAULT && d.overflow != SP_OVERFLOW_RECLAIM);

    fz_op_name = "create";
    p->desc = d;
    p->pool = sp_registry_add(fz_reg, p->name, &d);
    FZ_CHECK(p->pool != NULL, "sp_registry_add refused a valid desc");
    FZ_CHECK(sp_registry_add(fz_reg, p->name, &d) == NULL, "a duplicate registry name was accepted");
    FZ_CHECK(strcmp(sp_pool_name(p->pool), p->name) == 0, "the pool name did not default to the registry name");
    FZ_CHECK(sp_registry_get(fz_reg, p->name) == p->pool, "sp_registry_get misses a pool");
    fz_order[fz_order_n++] = slot;
    p->warn_lines = 0;

    if (p->fixed) {
        /* Learn the buffer's capacity: a cap above it is clamped to it. */
        FZ_CHECK(sp_set_max(p->pool, SIZE_MAX) == SP_OK, "sp_set_max failed");
        sp_stats s;
        sp_stats_get(p->pool, &s);
        p->capacity = s.max;
        FZ_CHECK(p->capacity >= max, "a buffer of sp_buffer_size(n) bytes holds fewer than n members");
        FZ_CHECK(p->capacity < max + 64, "implausible fixed-buffer capacity");
        FZ_CHECK(sp_set_max(p->pool, max) == SP_OK, "sp_set_max failed");
    }
    p->limit = max;
    p->max_set = max;

    /* The initial members: named by the create hook, anonymous without it. */
    size_t pos = 0;
    for (size_t k = 0; k < initial; k++) {
        void *c = fz_take(p, &pos, EV_CREATE, NULL, "create must run once per initial member");
        if (c) {
            FZ_CHECK(fz_find(p, c) == NULL, "create ran twice on one member");
            fz_member *mb = &p->m[p->n++];
            memset(mb, 0, sizeof *mb);
            mb->ptr = (unsigned char *)c;
        }
    }
    fz_events_done(p, pos);
    if (!(p->hooks & HK_CREATE)) p->anon = initial;
    p->expect.created = initial;
    fz_check_pool(p);
}

/* ---------------------------------------------------------------------------------------------
   Operations
   ------------------------------------------------------------------------------------------ */

static fz_pool *fz_pick_pool(fz_input *in) {
    unsigned b = fz_byte(in);
    for (int k = 0; k < FZ_POOLS; k++) {
        fz_pool *p = &fz_pools[(b + (unsigned)k) % FZ_POOLS];
        if (p->pool) return p;
    }
    return NULL;
}

static fz_member *fz_pick_member(fz_pool *p, unsigned b, int leased) {
    size_t count = 0;
    for (size_t i = 0; i < p->n; i++) count += ((p->m[i].leased != 0) == (leased != 0)) ? 1u : 0u;
    if (count == 0) return NULL;
    size_t want = b % count;
    for (size_t i = 0; i < p->n; i++) {
        if ((p->m[i].leased != 0) != (leased != 0)) continue;
        if (want-- == 0) return &p->m[i];
    }
    return NULL;
}

/* A new life starts for mb (fresh, recycled or reclaimed): its handle and contents. */
static void fz_new_life(fz_pool *p, fz_member *mb, unsigned prio, int built) {
    if (built) {
        const unsigned char *b = mb->ptr;
        if (p->hooks & HK_CREATE) {
            fz_check_contents(p, mb, "a new member does not hold what create made of it");
        } else {
            for (size_t i = 0; i < p->item_size; i++) FZ_CHECK(b[i] == 0, "a new member is not zeroed");
        }
    } else if (p->hooks & HK_CREATE) {
        fz_check_contents(p, mb, "a recycled member lost its contents");
    }
    mb->leased = 1;
    mb->last_life = 0;
    mb->partner = sp_handle_null();
    mb->child_slot = 0;
    mb->seq = ++p->next_seq;
    mb->prio = prio;
    mb->handle = sp_handle_of(p->pool, mb->ptr);
    uint64_t id = mb->handle.id;
    mb->slot = (uint32_t)(id & ((1u << FZ_SLOT_BITS) - 1u));
    FZ_CHECK(id != 0, "no handle for a leased member");
    FZ_CHECK((id >> FZ_LIFE_SHIFT) != 0, "a handle with life 0");
    if (p->tag == 0) p->tag = (id & FZ_TAG_MASK) | 1u;
    FZ_CHECK(((id & FZ_TAG_MASK) | 1u) == p->tag, "handles of one pool carry different pool tags");
    for (int q = 0; q < FZ_POOLS; q++) {
        const fz_pool *o = &fz_pools[q];
        if (o != p && o->pool && o->tag)
            FZ_CHECK(o->tag != p->tag, "two live pools share a pool tag");
    }
    for (size_t i = 0; i < p->stale_n; i++)
        FZ_CHECK(!sp_handle_eq(p->stale[i], mb->handle), "a new life reuses the handle of an ended one");
    for (size_t i = 0; i < p->n; i++)
        if (&p->m[i] != mb && p->m[i].leased)
            FZ_CHECK(!sp_handle_eq(p->m[i].handle, mb->handle), "two leased members share a handle");
    mb->serial = ++fz_serial;
    for (size_t i = 0; i < p->item_size && i < 8; i++) mb->ptr[i] = (unsigned char)(mb->serial >> (8 * i));
    size_t leased = fz_leased_count(p);
    if (leased > p->expect.peak_leased) p->expect.peak_leased = leased;
}

/* The most members the pool may build now: its cap, and in fixed mode the buffer's slots that
   are not retired. 0 with a heap pool: unbounded. */
static size_t fz_limit(const fz_pool *p) {
    if (!p->fixed) return p->limit;
    size_t left = p->capacity - p->retired_slots;
    return p->limit < left ? p->limit : left;
}

static int fz_saturated(const fz_pool *p) {
    size_t lim = fz_limit(p);
    return p->anon == 0 && fz_leased_count(p) == p->n && (lim != 0 || p->fixed) && p->n >= lim;
}

typedef struct fz_acq {
    int kind; /* 0 sp_acquire, 1 sp_acquire_with, 2 sp_acquire_force, 3 sp_spawn,
                 4 sp_acquire_handle (which counts as sp_acquire_with: it drops, never forces) */
    const void *arg;
    unsigned prio;
    uint64_t calls_before;
    int fail_before, warn_before;
} fz_acq;

/* The child on_acquire spawned for mb's new life (its event is the last one taken, at pos-1). */
static void fz_adopt_child(fz_pool *p, fz_member *mb, size_t pos) {
    if (!(p->hooks & HK_ACQUIRE) || pos == 0) return;
    const fz_event *e = &p->ev[pos - 1u];
    FZ_CHECK(e->kind == EV_ACQUIRE && e->ptr == mb->ptr, "model: the child's event is not the acquisition");
    mb->child_slot = e->child_slot;
    mb->child = e->child;
}

/* Checks the result r of an acquisition, and the hook calls from *pos, against what the model
   says the pool must do in its current state. Called again when a reclaim retired its victim
   (an exhausted slot): the library then starts the acquisition over. */
static void fz_acquire_expect(fz_pool *p, const fz_acq *a, void *r, size_t *pos) {
    size_t free_now = p->anon + (p->n - fz_leased_count(p));
    int saturated = fz_saturated(p);
    int drop = saturated && p->policy == SP_OVERFLOW_DROP && a->kind != 2;
    int reclaim = saturated && !drop && p->policy != SP_OVERFLOW_GROW;

    if (free_now > 0) {
        FZ_CHECK(r != NULL, "acquire returned NULL with free members");
        fz_member *mb = fz_find(p, r);
        if (mb) {
            FZ_CHECK(!mb->leased, "acquire handed out a member that is already leased");
        } else {
            FZ_CHECK(p->anon > 0, "acquire returned a pointer that is no free member");
            p->anon--;
            mb = &p->m[p->n++];
            memset(mb, 0, sizeof *mb);
            mb->ptr = (unsigned char *)r;
        }
        fz_take(p, pos, EV_ACQUIRE, r, "acquire: on_acquire must run on the member handed out");
        if ((p->hooks & HK_ACQUIRE)) FZ_CHECK(p->ev[*pos - 1].arg == a->arg, "on_acquire got the wrong arg");
        p->expect.acquired++;
        fz_new_life(p, mb, a->prio, 0);
        fz_adopt_child(p, mb, *pos);
        fz_events_done(p, *pos);
        FZ_CHECK(p->warn_lines == a->warn_before, "an ordinary acquire logged a warning");
        return;
    }
    if (saturated && fz_leased_count(p) == 0) {
        /* a fixed buffer whose every slot retired: nothing to hand out, nothing to reclaim */
        FZ_CHECK(r == NULL, "a pool with no slot left handed out a member");
        fz_events_done(p, *pos);
        return;
    }
    if (drop) {
        FZ_CHECK(r == NULL, "a saturated DROP pool handed out a member");
        fz_events_done(p, *pos);
        p->expect.dropped++;
        FZ_CHECK(p->warn_lines == a->warn_before, "a drop is an expected condition and must be silent");
        return;
    }
    if (reclaim) {
        fz_member *victim = fz_victim(p);
        int aged = victim->last_life;
        if (!aged) {
            FZ_CHECK(r == victim->ptr, "reclaim took the wrong member");
            FZ_CHECK(p->alloc.calls == a->calls_before, "reclaim called the allocator");
        }
        fz_release_chain(p, pos, victim, "reclaim: on_release must run on the victim first");
        p->expect.reclaimed++;
        if (aged) {
            fz_sweep_retired(p);
            fz_acquire_expect(p, a, r, pos);
            return;
        }
        fz_take(p, pos, EV_ACQUIRE, r, "reclaim: then on_acquire on the same member");
        if ((p->hooks & HK_ACQUIRE)) FZ_CHECK(p->ev[*pos - 1].arg == a->arg, "on_acquire got the wrong arg");
        p->expect.acquired++;
        /* still leased all along: the contents are the caller's */
        if (p->hooks & HK_CREATE) fz_check_contents(p, victim, "reclaim changed the member's contents");
        fz_new_life(p, victim, a->prio, 0);
        fz_adopt_child(p, victim, *pos);
        fz_events_done(p, *pos);
        FZ_CHECK(p->warn_lines == a->warn_before, "a reclaim is an expected condition and must be silent");
        return;
    }
    /* Building a new member (below the cap, or past it under GROW). */
    if (r == NULL) {
        FZ_CHECK(p->alloc.fail_hits > a->fail_before, "acquire returned NULL though it could build");
        fz_events_done(p, *pos); /* a failed build must leave no trace in the hooks */
        return;
    }
    FZ_CHECK(fz_find(p, r) == NULL, "a newly built member has the address of a live member");
    fz_take(p, pos, EV_CREATE, r, "acquire: create must run on the new member first");
    fz_take(p, pos, EV_ACQUIRE, r, "acquire: then on_acquire");
    if ((p->hooks & HK_ACQUIRE)) FZ_CHECK(p->ev[*pos - 1].arg == a->arg, "on_acquire got the wrong arg");
    fz_member *mb = &p->m[p->n++];
    memset(mb, 0, sizeof *mb);
    mb->ptr = (unsigned char *)r;
    p->expect.created++;
    p->expect.acquired++;
    if (saturated) {
        /* GROW warns when the count past max reaches 1, 2, 4, 8...: no spam */
        p->expect.grown_past_max++;
        if ((p->expect.grown_past_max & (p->expect.grown_past_max - 1u)) == 0) p->lines_expected++;
    } else {
        FZ_CHECK(p->warn_lines == a->warn_before, "an ordinary build logged a warning");
    }
    fz_new_life(p, mb, a->prio, 1);
    fz_adopt_child(p, mb, *pos);
    fz_events_done(p, *pos);
}

/* sp_acquire_handle in place of sp_acquire_with: what bit 2 of an acquisition's byte asks for
   (bits the decoder ignored before; the two calls must count alike, so either fits an input
   written for the other). Bits 3-4 then pick the form: out NULL or not (the call must not
   write through NULL), and the site-recording macro or the plain function (a library with
   SP_DEBUG off has only the latter behind the macro). */
static int fz_acquire_kind(int kind, unsigned b) { return kind == 1 && (b & 4u) ? 4 : kind; }

static const char *fz_acquire_name(int kind) {
    static const char *names[5] = {"sp_acquire", "sp_acquire_with", "sp_acquire_force", "sp_spawn",
                                   "sp_acquire_handle"};
    return names[kind];
}

/* An acquisition of `kind` (see fz_acquire_kind) with priority b % 4. Returns the member (NULL
   also when the model's arrays could not hold what it would build: then nothing is called). */
static void *fz_op_acquire(fz_pool *p, int kind, unsigned b) {
    static const char arg_object = 0;
    kind = fz_acquire_kind(kind, b);
    fz_acq a;
    a.kind = kind;
    a.arg = kind == 0 ? NULL : &arg_object;
    a.prio = b % 4;
    size_t free_before = p->anon + (p->n - fz_leased_count(p));
    int builds = free_before == 0 && (!fz_saturated(p) || p->policy == SP_OVERFLOW_GROW);
    if (builds && p->n + 1 >= FZ_MEMBERS) return NULL; /* keep within the model's arrays */
    a.fail_before = p->alloc.fail_hits;
    a.calls_before = p->alloc.calls;
    a.warn_before = p->warn_lines;

    void *r;
    /* Not an id the call could give (slot 2^24 - 1 is past any model pool): it must be
       overwritten, with the null handle when the call returns NULL. */
    sp_handle out = {~(uint64_t)0};
    sp_handle *outp = ((b >> 3) & 1u) ? NULL : &out;
    switch (kind) {
    case 0: r = sp_acquire(p->pool); break;
    case 1: r = sp_acquire_with(p->pool, a.arg); break;
    case 2: r = sp_acquire_force(p->pool, a.arg); break;
    case 3: r = sp_spawn(fz_reg, p->name, a.arg); break;
    default:
        if ((b >> 4) & 1u) r = (sp_acquire_handle)(p->pool, a.arg, outp); /* the function */
        else r = sp_acquire_handle(p->pool, a.arg, outp);
        break;
    }
    if (kind == 4 && outp) {
        if (!r) {
            FZ_CHECK(sp_handle_is_null(out), "sp_acquire_handle returned NULL but wrote a handle");
        } else {
            /* The handle of the new life: what sp_handle_of says right after, resolving to the
               member (fz_new_life below then checks it against every other life). */
            FZ_CHECK(sp_handle_eq(out, sp_handle_of(p->pool, r)),
                     "sp_acquire_handle wrote another handle than sp_handle_of gives");
            FZ_CHECK(sp_resolve(p->pool, out) == r, "the handle from sp_acquire_handle does not resolve");
        }
    }
    if (free_before > 0) FZ_CHECK(p->alloc.calls == a.calls_before, "acquire of a free member called the allocator");
    /* each failed allocation logs one line ("out of memory: ...") */
    p->lines_expected += p->alloc.fail_hits - a.fail_before;
    size_t pos = 0;
    fz_acquire_expect(p, &a, r, &pos);
    return r;
}

/* The member's slot jumps to its last life (white-box): its handle changes, and its next
   release retires it. */
static void fz_op_age(fz_pool *p, unsigned b) {
    fz_member *mb = fz_pick_member(p, b, 1);
    if (!mb || mb->last_life) return;
    sp__debug_set_life(p->pool, mb->ptr, FZ_LIFE_MAX);
    fz_stale_push(p, mb->handle);
    mb->handle = sp_handle_of(p->pool, mb->ptr);
    FZ_CHECK((mb->handle.id >> FZ_LIFE_SHIFT) == FZ_LIFE_MAX, "a handle does not carry the slot's life");
    FZ_CHECK((uint32_t)(mb->handle.id & ((1u << FZ_SLOT_BITS) - 1u)) == mb->slot,
             "a member changed slot within a life");
    FZ_CHECK(sp_resolve(p->pool, mb->handle) == mb->ptr, "the handle of a last life does not resolve");
    mb->last_life = 1;
}

static void fz_release_ok(fz_pool *p, fz_member *mb, sp_result r) {
    FZ_CHECK(r == SP_OK, "release of a leased member failed");
    size_t pos = 0;
    fz_release_chain(p, &pos, mb, "release: on_release must run once");
    fz_events_done(p, pos);
}

/* A misuse: the expected result, nothing changed, one log line naming the pool. */
static void fz_expect_misuse(fz_pool *p, sp_result got, sp_result want, sp_result or_want, int warn_before) {
    FZ_CHECK(got == want || got == or_want, "misuse returned the wrong result");
    fz_events_done(p, 0);
    FZ_CHECK(p->warn_lines == warn_before + 1, "a misuse must log exactly one warning");
    FZ_CHECK(strcmp(p->last_log_pool, p->name) == 0, "the misuse warning does not name the pool");
    p->lines_expected++;
}

static void fz_op_release(fz_pool *p, fz_input *in) {
    unsigned kind = fz_byte(in) % 10, b = fz_byte(in);
    int warn_before = p->warn_lines;
    fz_member *mb;
    switch (kind) {
    case 0:
    case 1: /* a leased member, directly or through the registry */
        mb = fz_pick_member(p, b, 1);
        if (!mb) return;
        fz_release_ok(p, mb, kind == 0 ? sp_release(p->pool, mb->ptr) : sp_registry_release(fz_reg, mb->ptr));
        FZ_CHECK(p->warn_lines == warn_before, "a release logged a warning");
        return;
    case 2: /* double release */
        mb = fz_pick_member(p, b, 0);
        if (!mb) return;
        fz_expect_misuse(p, sp_release(p->pool, mb->ptr), SP_ERR_NOT_LEASED, SP_ERR_NOT_LEASED, warn_before);
        return;
    case 3: { /* another pool's member, leased or free */
        fz_pool *o = &fz_pools[b % FZ_POOLS];
        if (o == p || !o->pool || o->n == 0) return;
        mb = &o->m[(b >> 2) % o->n];
        int o_warn = o->warn_lines;
        fz_expect_misuse(p, sp_release(p->pool, mb->ptr), SP_ERR_FOREIGN, SP_ERR_FOREIGN, warn_before);
        FZ_CHECK(o->warn_lines == o_warn, "misuse logged against the wrong pool");
        return;
    }
    case 4: { /* an interior pointer */
        if (p->n == 0 || p->item_size < 2) return;
        mb = &p->m[b % p->n];
        size_t off = 1 + (size_t)(b >> 3) % (p->item_size - 1);
        fz_expect_misuse(p, sp_release(p->pool, mb->ptr + off), SP_ERR_FOREIGN, SP_ERR_FOREIGN, warn_before);
        return;
    }
    case 5: /* an address no pool owns */
        fz_expect_misuse(p, sp_release(p->pool, &fz_stack_object), SP_ERR_FOREIGN, SP_ERR_FOREIGN, warn_before);
        FZ_CHECK(sp_registry_owner(fz_reg, &fz_stack_object) == NULL, "sp_registry_owner claims a foreign pointer");
        FZ_CHECK(sp_registry_release(fz_reg, &fz_stack_object) == SP_ERR_FOREIGN,
                 "sp_registry_release accepted a foreign pointer");
        fz_reg_expected++; /* through the registry's logger: no pool owns it */
        return;
    case 6: /* NULL is a no-op */
        FZ_CHECK(sp_release(p->pool, NULL) == SP_OK, "sp_release(NULL) is not a no-op");
        FZ_CHECK(p->warn_lines == warn_before, "sp_release(NULL) logged");
        fz_events_done(p, 0);
        return;
    case 7: { /* a disposed member: no longer a member, or not leased if the slot was rebuilt */
        if (p->dead_n == 0) return;
        void *d = p->dead[b % p->dead_n];
        if (fz_find(p, d)) return; /* rebuilt and named again: an ordinary member now */
        fz_expect_misuse(p, sp_release(p->pool, d), SP_ERR_FOREIGN, SP_ERR_NOT_LEASED, warn_before);
        return;
    }
    case 8: /* a free member through the registry */
        mb = fz_pick_member(p, b, 0);
        if (!mb) return;
        FZ_CHECK(sp_registry_release(fz_reg, mb->ptr) == SP_ERR_NOT_LEASED, "registry double release");
        FZ_CHECK(p->warn_lines == warn_before + 1, "a misuse must log exactly one warning");
        p->lines_expected++;
        fz_events_done(p, 0);
        return;
    default: /* an interior pointer through the registry */
        if (p->n == 0 || p->item_size < 2) return;
        mb = &p->m[b % p->n];
        FZ_CHECK(sp_registry_release(fz_reg, mb->ptr + 1) == SP_ERR_FOREIGN,
                 "registry release of an interior pointer");
        FZ_CHECK(p->warn_lines == warn_before + 1, "a misuse must log exactly one warning");
        p->lines_expected++;
        fz_events_done(p, 0);
        return;
    }
}

/* In the pool's order: each time the first member still leased (what hooks release meanwhile,
   partners, is skipped; hooks here never acquire, and no member is busy). */
static void fz_op_release_all(fz_pool *p) {
    size_t leased = fz_leased_count(p);
    size_t got = sp_release_all(p->pool);
    size_t pos = 0, top = 0;
    for (fz_member *mb; (mb = fz_first_at(p, 0)) != NULL; top++)
        fz_release_chain(p, &pos, mb, p->memory ? "release_all: on_release in slot order"
                                                : "release_all: on_release oldest first");
    fz_events_done(p, pos);
    if (p->memory) {
        FZ_CHECK(got == top, "sp_release_all (memory order) counted members that hooks released");
    } else {
        /* Partners released by a hook meanwhile may or may not count as released by the call. */
        FZ_CHECK(got == leased || got == top, "sp_release_all returned the wrong count");
    }
}

static void fz_op_prewarm(fz_pool *p, size_t n) {
    size_t size = p->n + p->anon;
    if (size + n + 1 >= FZ_MEMBERS) return;
    size_t lim = fz_limit(p);
    size_t room = (lim == 0 && !p->fixed) ? n : (size < lim ? lim - size : 0);
    size_t want = n < room ? n : room;
    int fail_before = p->alloc.fail_hits;
    size_t got = sp_prewarm(p->pool, n);
    if (got != want) FZ_CHECK(got < want && p->alloc.fail_hits > fail_before, "sp_prewarm built the wrong number");
    p->lines_expected += p->alloc.fail_hits - fail_before; /* one "out of memory" line each */
    size_t pos = 0;
    for (size_t k = 0; k < got; k++) {
        void *c = fz_take(p, &pos, EV_CREATE, NULL, "prewarm: create once per built member");
        if (c) {
            FZ_CHECK(fz_find(p, c) == NULL, "prewarm built a member at a live member's address");
            fz_member *mb = &p->m[p->n++];
            memset(mb, 0, sizeof *mb);
            mb->ptr = (unsigned char *)c;
        }
    }
    fz_events_done(p, pos);
    if (!(p->hooks & HK_CREATE)) p->anon += got;
    p->expect.created += got;
}

/* Without a dispose hook the model cannot see which free members went: it asks the registry
   which of the named ones are still built. */
static void fz_relearn_free(fz_pool *p) {
    for (size_t i = 0; i < p->n;) {
        fz_member *mb = &p->m[i];
        if (!mb->leased && sp_registry_owner(fz_reg, mb->ptr) != p->pool) {
            fz_forget(p, mb);
            continue;
        }
        i++;
    }
}

static void fz_op_trim(fz_pool *p, size_t keep) {
    size_t size = p->n + p->anon;
    size_t free_n = size - fz_leased_count(p);
    size_t want = free_n > keep ? free_n - keep : 0;
    /* (trim may allocate: shrinking the address map takes a smaller one) */
    size_t got = sp_trim(p->pool, keep);
    FZ_CHECK(got == want, "sp_trim disposed the wrong number of members");
    size_t pos = 0;
    for (size_t k = 0; k < got; k++) {
        void *d = fz_take(p, &pos, EV_DISPOSE, NULL, "trim: dispose once per disposed member");
        if (!d) continue;
        fz_member *mb = fz_find(p, d);
        if (mb) {
            FZ_CHECK(!mb->leased, "trim disposed a leased member");
            fz_forget(p, mb);
        } else {
            FZ_CHECK(p->anon > 0, "trim disposed a pointer that is no free member");
            p->anon--;
        }
    }
    fz_events_done(p, pos);
    if (!(p->hooks & HK_DISPOSE)) {
        fz_relearn_free(p);
        size_t known_free = p->n - fz_leased_count(p);
        size_t free_after = free_n - got;
        FZ_CHECK(known_free <= free_after, "after trim: more named free members than free members");
        p->anon = free_after - known_free;
    }
    p->expect.disposed += got;
}

static void fz_op_clear(fz_pool *p) {
    size_t size = p->n + p->anon;
    fz_tearing_down = p;
    size_t got = sp_clear(p->pool);
    fz_tearing_down = NULL;
    FZ_CHECK(got == size, "sp_clear returned the wrong count");
    /* Every life ends (a life that cannot advance retires its slot, here too). */
    for (size_t i = 0; i < p->n; i++) {
        if (p->m[i].leased) fz_life_ends(p, &p->m[i]);
        if (p->m[i].last_life && p->fixed) p->retired_slots++;
    }
    size_t pos = 0;
    for (size_t k = 0; k < got; k++) {
        void *d = fz_take(p, &pos, EV_DISPOSE, NULL, "clear: dispose once per member (not on_release)");
        if (d) {
            fz_member *mb = fz_find(p, d);
            if (mb) fz_forget(p, mb); /* a second dispose of it would then fail below */
            else {
                FZ_CHECK(p->anon > 0, "clear disposed a pointer that is no member");
                p->anon--;
            }
        }
    }
    fz_events_done(p, pos);
    while (p->n > 0) fz_forget(p, &p->m[p->n - 1]);
    p->anon = 0;
    p->expect.disposed += got;
}

static void fz_op_set_max(fz_pool *p, unsigned b) {
    size_t m = b % 13;
    if (m == 12) m = SIZE_MAX / 2;
    FZ_CHECK(sp_set_max(p->pool, m) == SP_OK, "sp_set_max failed");
    if (p->fixed) {
        p->limit = (m == 0 || m > p->capacity) ? p->capacity : m;
        p->max_set = m == 0 ? 0 : p->limit;
    } else {
        /* A pool holds at most 2^24 slots (see HANDLES), so a larger cap means that. */
        p->limit = m > ((size_t)1 << 24) ? (size_t)1 << 24 : m;
        p->max_set = p->limit;
    }
}

/* Handles the model can predict: forged ids resolve only when they equal a live handle. */
static void fz_op_handles(fz_pool *p, fz_input *in) {
    unsigned b = fz_byte(in);
    FZ_CHECK(sp_resolve(p->pool, sp_handle_null()) == NULL, "the null handle resolves");
    FZ_CHECK(sp_handle_is_null(sp_handle_of(p->pool, NULL)), "sp_handle_of(NULL) is not null");
    FZ_CHECK(sp_handle_is_null(sp_handle_of(p->pool, &fz_stack_object)), "a handle for a foreign pointer");
    FZ_CHECK(!sp_is_leased(p->pool, &fz_stack_object), "sp_is_leased of a foreign pointer");
    FZ_CHECK(!sp_is_leased(p->pool, NULL), "sp_is_leased(NULL)");
    FZ_CHECK(sp_next(p->pool, &fz_stack_object) == NULL, "sp_next of a foreign pointer");
    if (p->n > 0 && p->item_size >= 2) {
        const fz_member *mb = &p->m[b % p->n];
        FZ_CHECK(sp_handle_is_null(sp_handle_of(p->pool, mb->ptr + 1)), "a handle for an interior pointer");
        FZ_CHECK(!sp_is_leased(p->pool, mb->ptr + 1), "sp_is_leased of an interior pointer");
    }
    uint64_t forged;
    const fz_member *base = p->n ? &p->m[b % p->n] : NULL;
    uint64_t id = base && base->leased ? base->handle.id : (p->stale_n ? p->stale[b % p->stale_n].id : 0);
    switch ((b >> 4) % 5) {
    case 0: forged = id + ((uint64_t)1 << FZ_LIFE_SHIFT); break;        /* the next life */
    case 1: forged = id - ((uint64_t)1 << FZ_LIFE_SHIFT); break;        /* the previous life */
    case 2: forged = id + 1 + (fz_byte(in) & 7); break;      /* a neighbouring slot */
    case 3: forged = id ^ ((uint64_t)(fz_byte(in) | 1) << 24); break; /* another pool tag */
    default: {
        forged = 0;
        for (int i = 0; i < 8; i++) forged = (forged << 8) | fz_byte(in);
        break;
    }
    }
    sp_handle h = {forged};
    void *want = NULL;
    for (size_t i = 0; i < p->n; i++)
        if (p->m[i].leased && p->m[i].handle.id == forged) want = p->m[i].ptr;
    if (!p->tag && forged) return; /* no handle yet: whether it is foreign cannot be told */
    if (forged && ((forged & FZ_TAG_MASK) | 1u) != p->tag) {
        FZ_CHECK(fz_resolve_foreign(p, h) == NULL, "a handle with another pool's tag resolved");
        return;
    }
    FZ_CHECK(sp_resolve(p->pool, h) == want, "a forged handle resolved");
    /* Own tag: stale (silent) or a slot or life that never was (a warning); the model does not
       track the highest life of every slot, so it takes the count as it is. */
    p->resolve_expected = p->resolve_lines;
}

/* Walks the leased members releasing some of them, as a game's update loop does. */
static void fz_op_iterate_release(fz_pool *p, unsigned bits) {
    unsigned k = 0;
    for (void *it = sp_first(p->pool), *nx; it; it = nx, k++) {
        nx = sp_next(p->pool, it);
        if (!((bits >> (k % 8)) & 1)) continue;
        fz_member *mb = fz_find(p, it);
        FZ_CHECK(mb != NULL && mb->leased, "iteration visited a member that is not leased");
        fz_release_ok(p, mb, sp_release(p->pool, it));
        /* a hook may have released nx meanwhile (and retired it: then the model forgot it):
           the walk stops here */
        const fz_member *next = nx ? fz_find(p, nx) : NULL;
        if (nx && (!next || !next->leased)) break;
    }
}

static void fz_op_set_overflow(fz_pool *p, unsigned b) {
    sp_overflow want = (sp_overflow)(b % 4); /* 3: not a policy */
    int valid = b % 4 != 3 && !(p->fixed && want == SP_OVERFLOW_GROW);
    sp_result r = sp_set_overflow(p->pool, want);
    if (valid) {
        FZ_CHECK(r == SP_OK, "sp_set_overflow refused a valid policy");
        p->policy = want;
    } else {
        /* misuse: one line naming the pool (ERROR REPORTING AND LOGGING in the header) */
        FZ_CHECK(r == SP_ERR_INVALID, "sp_set_overflow accepted an invalid policy");
        p->lines_expected++;
    }
}

/* sp_each with a callback that releases the member it is given, releases others, acquires (any
   kind, so reclaims too, before or after those releases) and may stop early. The model names the
   next visit after every call of the callback. A walk visits only the members leased when it
   began (`end`), so that it always ends:
   Memory order: the first leased slot after the current one, below the slot after the last one
   leased at the start; so what was released meanwhile is skipped, what was acquired after it
   into a slot below that end is visited, and what growth built is not.
   Acquisition order (include/spawnpool.h): whatever fn releases, the next visit is the first
   leased member acquired after the visited life, and before the walk began: what fn acquires
   comes after every member and is not visited. Lives are told apart by handle, not pointer: a
   member released and handed out again is a new acquisition, at the end. */
typedef struct fz_each_ctx {
    fz_pool *p;
    unsigned bits, stop_at;
    size_t visits;
    uint64_t from;          /* memory order: the next visit is the first leased slot from here */
    const void *expect;     /* acquisition order: the next visit (NULL: the walk must stop) */
    uint64_t end;           /* the walk visits keys (seq or slot) below this */
    unsigned acquires;      /* acquisitions the callback may still make */
    int acquire_kind;       /* as in fz_op_acquire */
    int release_others;     /* the callback releases other members too */
    int misuse;             /* FZ_MODEL_GUARDS: a forbidden call fn tries on every visit */
} fz_each_ctx;

/* Acquisition order: the visit after the life `self` (acquired as number `seq`). Whatever fn
   and the hooks released, the walk goes on at the first member acquired after self. */
static fz_member *fz_walk_at(const fz_each_ctx *c, uint64_t from) {
    fz_member *e = fz_first_at(c->p, from);
    return e && fz_key(c->p, e) < c->end ? e : NULL;
}

static void fz_each_expect(fz_each_ctx *c, sp_handle self, uint64_t seq, sp_handle next) {
    (void)self, (void)next;
    c->expect = NULL;
    const fz_member *e = fz_walk_at(c, seq + 1u);
    if (e) c->expect = e->ptr;
}

/* Where a walk that begins now ends: after the newest acquisition, or the last leased slot. */
static void fz_walk_begins(fz_each_ctx *c) {
    fz_pool *p = c->p;
    c->end = 0;
    if (!p->memory) {
        c->end = p->next_seq + 1u;
        const fz_member *first = fz_walk_at(c, 0);
        c->expect = first ? first->ptr : NULL;
        return;
    }
    for (size_t i = 0; i < p->n; i++)
        if (p->m[i].leased && (uint64_t)p->m[i].slot + 1u > c->end) c->end = (uint64_t)p->m[i].slot + 1u;
}

static bool fz_each_fn(void *item, void *user) {
    fz_each_ctx *c = (fz_each_ctx *)user;
    fz_pool *p = c->p;
    fz_member *mb;
    if (p->memory) {
        mb = fz_walk_at(c, c->from);
        FZ_CHECK(mb != NULL && item == mb->ptr, "sp_each visited the wrong member (memory order)");
        c->from = (uint64_t)mb->slot + 1u;
    } else {
        FZ_CHECK(c->expect != NULL, "sp_each went on where it had to stop (acquisition order)");
        FZ_CHECK(item == c->expect, "sp_each visited the wrong member (acquisition order)");
        mb = fz_find(p, item);
        FZ_CHECK(mb != NULL && mb->leased, "sp_each visited a member that is not leased");
    }
    c->visits++;
    fz_try_misuse(p, c->misuse, item);
    /* What the walk may know before fn runs: the visited life and its neighbours' (mb may be
       retired and forgotten by a release below: the array moves, so it is not used after). */
    uint64_t seq = mb->seq;
    sp_handle self = mb->handle, next = sp_handle_null();
    if (!p->memory) {
        const fz_member *nx = fz_first_at(p, seq + 1u);
        if (nx) next = nx->handle;
    }
    int acquire = c->acquires > 0 && ((c->bits >> ((c->visits + 3) % 8)) & 1u);
    int acquire_first = acquire && ((c->bits >> ((c->visits + 6) % 8)) & 1u);
    /* priority visits % 4; bits 2-4 (sp_acquire_handle and its form) from the callback's bits */
    unsigned acquire_byte = (unsigned)(c->visits % 4) | ((c->bits >> ((c->visits + 1) % 8)) & 7u) << 2;
    if (acquire) c->acquires--;
    if (acquire_first) fz_op_acquire(p, c->acquire_kind, acquire_byte);
    /* The visited member may have been reclaimed by that acquisition: then it is no longer the
       life fn was given, and fn does not release it. */
    fz_member *self_now = fz_find_life(p, self);
    if (self_now && ((c->bits >> (c->visits % 8)) & 1u))
        fz_release_ok(p, self_now, sp_release(p->pool, item));
    if (c->release_others && ((c->bits >> ((c->visits + 5) % 8)) & 1u)) {
        fz_member *o = fz_pick_member(p, c->bits + (unsigned)c->visits, 1);
        if (o && o->ptr != item) fz_release_ok(p, o, sp_release(p->pool, o->ptr));
    }
    if (acquire && !acquire_first) fz_op_acquire(p, c->acquire_kind, acquire_byte);
    if (!p->memory) fz_each_expect(c, self, seq, next);
    return c->stop_at == 0 || c->visits < c->stop_at;
}

/* `extra` (5 bits) drives the callback: up to extra & 3 acquisitions of kind (extra >> 2) & 3,
   and releases of other members when extra & 16. (Before acquisition-order pools took them, an
   input's extra bits in such a pool went unused.) */
/* Sets up a walk's context from the input's bits and notes where the walk begins. */
static void fz_walk_setup(fz_each_ctx *c, fz_pool *p, unsigned bits, unsigned stop_at, unsigned extra,
                          int misuse) {
    memset(c, 0, sizeof *c);
    c->misuse = misuse;
    c->p = p;
    c->bits = bits;
    c->stop_at = stop_at;
    c->acquires = extra & 3u;
    c->acquire_kind = (int)((extra >> 2) & 3u);
    c->release_others = (int)((extra >> 4) & 1u);
    fz_walk_begins(c);
}

static void fz_op_each(fz_pool *p, unsigned bits, unsigned stop_at, unsigned extra, int misuse) {
    static fz_each_ctx c;
    fz_walk_setup(&c, p, bits, stop_at, extra, misuse);
    size_t visited = sp_each(p->pool, fz_each_fn, &c);
    FZ_CHECK(visited == c.visits, "sp_each returned a count other than its visits");
    int stopped = c.stop_at != 0 && c.visits >= c.stop_at;
    if (!stopped && p->memory) {
        FZ_CHECK(fz_walk_at(&c, c.from) == NULL, "sp_each ended before the last leased slot");
    } else if (!stopped) {
        FZ_CHECK(c.expect == NULL, "sp_each ended before the last leased member");
    }
}

#if FZ_MODEL_ITER
/* The same walk with the cursor (decision 8): sp_each's rules for a pool that changes under it,
   the loop body doing what fz_each_fn does. */
static void fz_op_iter(fz_pool *p, unsigned bits, unsigned stop_at, unsigned extra) {
    static fz_each_ctx c;
    fz_walk_setup(&c, p, bits, stop_at, extra, 0);
    int stopped = 0;
    for (sp_iter it = sp_iter_first(p->pool); it.item; sp_iter_next(p->pool, &it)) {
        if (!fz_each_fn(it.item, &c)) {
            stopped = 1;
            break;
        }
    }
    if (!stopped && p->memory) {
        FZ_CHECK(fz_walk_at(&c, c.from) == NULL, "the cursor ended before the last leased slot");
    } else if (!stopped) {
        FZ_CHECK(c.expect == NULL, "the cursor ended before the last leased member");
    }
}
#endif

/* a takes b as its partner (b's current life), unless that would close a cycle. */
static void fz_op_link(fz_pool *p, unsigned ba, unsigned bb) {
    fz_member *a = fz_pick_member(p, ba, 1), *b = fz_pick_member(p, bb, 1);
    if (!a || !b || a == b) return;
    const fz_member *y = b;
    for (int k = 0; k <= FZ_MEMBERS && y; k++) {
        if (y == a) return;
        y = fz_find_life(p, y->partner);
    }
    a->partner = b->handle;
}

static void fz_op_registry(fz_input *in) {
    FZ_CHECK(sp_registry_count(fz_reg) == fz_order_n, "sp_registry_count differs from the model");
    for (size_t i = 0; i < fz_order_n; i++)
        FZ_CHECK(sp_registry_pool_at(fz_reg, i) == fz_pools[fz_order[i]].pool,
                 "sp_registry_pool_at is not in order of addition");
    FZ_CHECK(sp_registry_pool_at(fz_reg, fz_order_n) == NULL, "sp_registry_pool_at past the end");
    FZ_CHECK(sp_registry_get(fz_reg, "nobody") == NULL, "sp_registry_get of an unknown name");
    FZ_CHECK(sp_spawn(fz_reg, "nobody", NULL) == NULL, "sp_spawn of an unknown name");
    FZ_CHECK(sp_registry_remove(fz_reg, "nobody") == SP_ERR_INVALID, "sp_registry_remove of an unknown name");
#if FZ_MODEL_REGISTRY_API
    fz_reg_expected += 2; /* spawn and remove of an unknown name are misuse: one line each (a
                             lookup, sp_registry_get, stays silent) */
#endif
    (void)in;
}

/* What p's hooks do from now on (see fz_pool): a child pool (a later slot), how children are
   spawned and sent back, and which forbidden call which hooks try. */
static void fz_op_program(fz_pool *p, unsigned a, unsigned b) {
    int slot = (int)(p - fz_pools);
    int child = (int)(a % FZ_POOLS);
    p->child_slot = child > slot ? child : 0;
    p->child_spawn = (int)((a >> 2) & 1u);
    p->child_registry = (int)((a >> 3) & 1u);
    p->callback_misuse = (a >> 4) % FZ_MISUSE_COUNT;
    p->misuse = (int)(b % FZ_MISUSE_COUNT);
    p->misuse_hooks = (b >> 3) & 15u;
}

/* The registry's lookups and refusals across the pools it holds. */
static void fz_op_registry_more(fz_pool *p, fz_input *in) {
    unsigned sub = fz_byte(in) % 8, b = fz_byte(in);
    switch (sub) {
    case 0: /* names: every live pool, and none of the names it had before */
        for (int q = 0; q < FZ_POOLS; q++) {
            const fz_pool *o = &fz_pools[q];
            if (o->pool) FZ_CHECK(sp_registry_get(fz_reg, o->name) == o->pool, "sp_registry_get misses a pool");
        }
        {
            char old[16];
            snprintf(old, sizeof old, "p%d_%d", (int)(b % FZ_POOLS), (int)(b >> 2) % 1000);
            sp_pool *got = sp_registry_get(fz_reg, old);
            int live = 0;
            for (int q = 0; q < FZ_POOLS; q++)
                if (fz_pools[q].pool && strcmp(fz_pools[q].name, old) == 0) live = 1;
            FZ_CHECK(live || got == NULL, "sp_registry_get found a pool that is gone");
        }
        break;
    case 1: /* ownership of every member of every pool, and of what no pool owns */
        for (int q = 0; q < FZ_POOLS; q++) {
            const fz_pool *o = &fz_pools[q];
            if (!o->pool) continue;
            for (size_t i = 0; i < o->n; i++)
                FZ_CHECK(sp_registry_owner(fz_reg, o->m[i].ptr) == o->pool, "sp_registry_owner names the wrong pool");
        }
        FZ_CHECK(sp_registry_owner(fz_reg, NULL) == NULL, "sp_registry_owner(NULL)");
        FZ_CHECK(sp_registry_release(fz_reg, NULL) == SP_OK, "sp_registry_release(NULL) is not a no-op");
        break;
    case 2: { /* a leased member of any pool, sent home through the registry */
        fz_pool *o = &fz_pools[b % FZ_POOLS];
        if (!o->pool) break;
        fz_member *mb = fz_pick_member(o, b >> 2, 1);
        if (!mb) break;
        fz_release_ok(o, mb, sp_registry_release(fz_reg, mb->ptr));
        fz_check_pool(o);
        break;
    }
    case 3: { /* a duplicate name: refused, one line through the desc's logger */
        sp_desc d = {0};
        d.item_size = 8;
        d.logger.log = fz_logger;
        d.logger.user = p;
        FZ_CHECK(sp_registry_add(fz_reg, p->name, &d) == NULL, "a duplicate registry name was accepted");
        p->lines_expected++;
        break;
    }
    case 4: { /* an empty name or no desc: refused, one line through the registry's logger */
        sp_desc d = {0};
        d.item_size = 8;
        FZ_CHECK(sp_registry_add(fz_reg, (b & 1) ? "" : "nameless", (b & 1) ? &d : NULL) == NULL,
                 "sp_registry_add without a name or desc was accepted");
        fz_reg_expected++;
        break;
    }
#if FZ_MODEL_REGISTRY_API
    case 5: /* sp_registry_resolve: every live handle of every pool, and none that ended */
        for (int q = 0; q < FZ_POOLS; q++) {
            fz_pool *o = &fz_pools[q];
            if (!o->pool) continue;
            for (size_t i = 0; i < o->n; i++)
                if (o->m[i].leased)
                    FZ_CHECK(sp_registry_resolve(fz_reg, o->m[i].handle) == o->m[i].ptr,
                             "sp_registry_resolve misses a live handle");
            for (size_t i = 0; i < o->stale_n; i++)
                FZ_CHECK(sp_registry_resolve(fz_reg, o->stale[i]) == NULL, "sp_registry_resolve of a stale handle");
        }
        break;
    case 6: { /* scene teardown: every leased member of every pool through on_release */
        size_t leased = 0;
        for (int q = 0; q < FZ_POOLS; q++)
            if (fz_pools[q].pool) leased += fz_leased_count(&fz_pools[q]);
        fz_registry_bulk = 1; /* the hooks leave the children to the call itself */
        size_t got = sp_registry_release_all(fz_reg);
        fz_registry_bulk = 0;
        size_t top = 0;
        for (size_t k = 0; k < fz_order_n; k++) {
            fz_pool *o = &fz_pools[fz_order[k]];
            size_t pos = 0;
            for (fz_member *mb; (mb = fz_first_at(o, 0)) != NULL; top++)
                fz_release_chain(o, &pos, mb, "sp_registry_release_all: on_release in each pool's order");
            fz_events_done(o, pos);
        }
        FZ_CHECK(got >= top && got <= leased, "sp_registry_release_all returned the wrong count");
        break;
    }
#endif
    default:
        fz_op_registry(in);
        break;
    }
}

/* ---------------------------------------------------------------------------------------------
   The entry point
   ------------------------------------------------------------------------------------------ */

/* ---- snapshot and restore --------------------------------------------------------------
   Every 16th operation (no input bytes: the corpus decodes as before), each pool is saved and
   the snapshot restored into a pool of its own (no hooks, the C library's memory, a logger of
   its own): the same stats, the same leased members in the same order with the same bytes, and
   the registry's pool unchanged (the next operation's checks). A pool that issued a handle
   holds its tag, so its restore must be refused with the line that says so. Then the same
   snapshot with one byte flipped, and cut short: each refused with exactly one line. */
static int fz_snap_lines;
static char fz_snap_last[256];
static void fz_snap_log(sp_log_level level, const char *pool, const char *message, void *user) {
    (void)pool, (void)user;
    if (level == SP_LOG_INFO) return;
    fz_snap_lines++;
    snprintf(fz_snap_last, sizeof fz_snap_last, "%s", message);
}

static void fz_snapshot_check(fz_pool *p) {
    if (!p->pool) return;
    const char *was = fz_op_name;
    fz_op_name = "snapshot and restore";
    size_t size = sp_snapshot_size(p->pool, NULL);
    FZ_CHECK(size > 0, "sp_snapshot_size refused a quiescent pool");
    unsigned char *buf = (unsigned char *)malloc(size), *bad = (unsigned char *)malloc(size);
    FZ_CHECK(buf && bad, "out of memory in the fuzzer");
    FZ_CHECK(sp_snapshot(p->pool, buf, size, NULL) == SP_OK, "sp_snapshot refused a quiescent pool");
    sp_desc d = p->desc;
    d.name = "snapshot";
    d.create = NULL, d.on_acquire = NULL, d.on_release = NULL, d.dispose = NULL, d.priority = NULL, d.user = NULL;
    d.initial = 0;
    memset(&d.allocator, 0, sizeof d.allocator);
    d.logger.log = fz_snap_log;
    d.logger.user = NULL;
    unsigned char *block = NULL;
    if (p->fixed) { /* room for any capacity the original's buffer had */
        block = (unsigned char *)malloc(2u * p->buffer_size + 64u);
        FZ_CHECK(block != NULL, "out of memory in the fuzzer");
        d.buffer = block;
        d.buffer_size = 2u * p->buffer_size + 64u;
    }
    fz_snap_lines = 0;
    sp_pool *q = sp_restore(&d, buf, size, NULL);
    if (!q) {
        if (fz_snap_lines != 1 || !strstr(fz_snap_last, "tag")) fprintf(stderr, "fuzz_pool: sp_restore said: %s\n", fz_snap_last);
        FZ_CHECK(fz_snap_lines == 1 && strstr(fz_snap_last, "tag") != NULL,
                 "sp_restore refused a good snapshot (other than for a tag held)");
    } else {
        sp_stats a, b;
        sp_stats_get(p->pool, &a);
        sp_stats_get(q, &b);
        FZ_CHECK(a.size == b.size && a.leased == b.leased && a.free == b.free && a.max == b.max &&
                     a.peak_leased == b.peak_leased && a.created == b.created && a.disposed == b.disposed &&
                     a.acquired == b.acquired && a.released == b.released && a.reclaimed == b.reclaimed &&
                     a.dropped == b.dropped && a.grown_past_max == b.grown_past_max,
                 "the restored pool's stats differ from the saved pool's");
        FZ_CHECK(sp__pool_check(q), "the restored pool is not consistent");
        void *x = sp_first(p->pool), *y = sp_first(q);
        for (; x && y; x = sp_next(p->pool, x), y = sp_next(q, y))
            FZ_CHECK(memcmp(x, y, p->item_size) == 0, "a restored member's bytes differ");
        FZ_CHECK(!x && !y, "the restored pool's leased members differ from the saved pool's");
        fz_snap_lines = 0;
        sp_pool_destroy(q); /* (its leak line goes to the snapshot's logger) */
    }
    /* one byte flipped anywhere, and the snapshot cut short: refused, one line each */
    uint64_t at = ((uint64_t)fz_op_index * 2654435761u + (uint64_t)p->item_size) % size;
    memcpy(bad, buf, size);
    bad[at] ^= (unsigned char)(1u + (unsigned)fz_op_index % 255u);
    fz_snap_lines = 0;
    FZ_CHECK(sp_restore(&d, bad, size, NULL) == NULL && fz_snap_lines == 1, "a corrupt snapshot was not refused with one line");
    fz_snap_lines = 0;
    FZ_CHECK(sp_restore(&d, buf, at, NULL) == NULL && fz_snap_lines == 1, "a truncated snapshot was not refused with one line");
    free(block);
    free(buf);
    free(bad);
    fz_op_name = was;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_input in = {data, size, 0};
    if (fz_inputs++ == 0) {
        clock_gettime(CLOCK_MONOTONIC, &fz_started);
        atexit(fz_summary_at_exit);
    }
    fz_op_index = 0;
    fz_op_name = "setup";
    fz_serial = 0;
    fz_order_n = 0;
    fz_incarnation = 0;
    sp__tags_reset(); /* every input starts from a fresh process's tag table */
    fz_reg_lines = fz_reg_expected = 0;
#if FZ_MODEL_TAG_LIVES
    fz_gone_n = fz_gone_pos = 0;
#endif
    sp_registry_desc rd = {.logger = {.log = fz_reg_logger}};
    fz_reg = sp_registry_create_with(&rd);
    FZ_CHECK(fz_reg != NULL, "sp_registry_create failed");
    /* The first byte: the pool count in its low 2 bits, then the orders of pools 0, 1 and 2 in
       2-bit fields (pool 3 shares pool 0's). A recreate takes its order from the bits above the
       slot number likewise. Those bits were ignored before pools had an order, and the seeds
       written then have zeros there: DEFAULT, so they still decode to the same pools and
       programs, now with the library's default order (and the recreates in their random bytes
       pick any order). */
    unsigned head = fz_byte(&in);
    unsigned npools = 1 + head % FZ_POOLS;
    for (int i = 0; i < FZ_POOLS; i++) {
        if ((unsigned)i < npools) fz_slot_create(i, (head >> (2 + 2 * (i % 3))) & 3u, &in);
        else memset(&fz_pools[i], 0, sizeof fz_pools[i]);
    }

    for (fz_op_index = 1; fz_op_index <= FZ_OPS && !fz_done(&in); fz_op_index++) {
        unsigned op = fz_byte(&in) % 24;
        fz_pool *p = fz_pick_pool(&in);
        if (!p && op != 17) continue;
        switch (op) {
        case 0: case 1: case 2: case 3: case 4: case 5: case 6: case 7: {
            unsigned b = fz_byte(&in);
            fz_op_name = fz_acquire_name(fz_acquire_kind((int)(op % 4), b));
            fz_op_acquire(p, (int)(op % 4), b);
            break;
        }
        case 8: case 9: case 10:
            fz_op_name = "release";
            fz_op_release(p, &in);
            break;
        case 11:
            fz_op_name = "sp_release_all";
            fz_op_release_all(p);
            break;
        case 12:
            fz_op_name = "sp_prewarm";
            fz_op_prewarm(p, fz_byte(&in) % 6);
            break;
        case 13:
            fz_op_name = "sp_trim";
            fz_op_trim(p, fz_byte(&in) % 4);
            break;
        case 14: {
            unsigned sub = fz_byte(&in) % 8;
            if (sub == 0) {
                fz_op_name = "sp_clear";
                fz_op_clear(p);
            } else if (sub == 1) {
                fz_op_name = "sp_set_overflow";
                fz_op_set_overflow(p, fz_byte(&in));
            } else if (sub < 5) {
                fz_op_name = "sp_each";
                unsigned bits = fz_byte(&in), b = fz_byte(&in);
                fz_op_each(p, bits, b % 8, b >> 3, FZ_MISUSE_NONE); /* (extra: bits once ignored) */
#if FZ_MODEL_ITER
            } else if (sub == 7) {
                fz_op_name = "sp_iter";
                unsigned bits = fz_byte(&in), b = fz_byte(&in);
                fz_op_iter(p, bits, b % 8, b >> 3);
#endif
            } else {
                fz_op_name = "iterate+release";
                fz_op_iterate_release(p, fz_byte(&in));
            }
            break;
        }
        case 15:
            fz_op_name = "sp_set_max";
            fz_op_set_max(p, fz_byte(&in));
            break;
        case 16:
            fz_op_name = "handles";
            fz_op_handles(p, &in);
            break;
        case 17: {
            fz_op_name = "recreate";
            unsigned b = fz_byte(&in);
            int slot = (int)(b % FZ_POOLS);
            fz_slot_destroy(slot, 1);
            fz_slot_create(slot, (b >> 2) & 3u, &in);
            p = &fz_pools[slot];
            break;
        }
        case 18: {
            unsigned sub = fz_byte(&in) % 4;
            if (sub == 3) {
                fz_op_name = "age (last life)";
                fz_op_age(p, fz_byte(&in));
            } else if (sub == 2) {
                fz_op_name = "link partners";
                unsigned ba = fz_byte(&in);
                fz_op_link(p, ba, fz_byte(&in));
            } else if (sub == 1) {
                fz_op_name = "arm allocator failure";
                if (!p->fixed) p->alloc.fail_armed = 1;
            } else {
                /* Priorities change during a life (a bullet's remaining time): RECLAIM must ask
                   the hook when it picks, not remember an old answer. */
                fz_op_name = "reprioritize";
                fz_member *mb = fz_pick_member(p, fz_byte(&in), 1);
                if (mb) mb->prio = fz_byte(&in) % 4;
            }
            break;
        }
        case 19:
            fz_op_name = "registry";
            fz_op_registry(&in);
            break;
        case 20:
            fz_op_name = "dense";
            fz_dense_op(&in);
            break;
        case 21: {
            fz_op_name = "hook program";
            unsigned a = fz_byte(&in);
            fz_op_program(p, a, fz_byte(&in));
            break;
        }
        case 22:
            fz_op_name = "registry lookups";
            fz_op_registry_more(p, &in);
            break;
        default: {
            /* callbacks that try what they must not: refused, one line, nothing changed */
            unsigned misuse = fz_byte(&in) % FZ_MISUSE_COUNT;
#if FZ_MODEL_GUARDS
            fz_op_name = "sp_each trying a forbidden call";
            unsigned bits = fz_byte(&in), b = fz_byte(&in);
            if (misuse == FZ_MISUSE_RELEASE_SELF || misuse == FZ_MISUSE_ACQUIRE) misuse = FZ_MISUSE_CLEAR;
            fz_op_each(p, bits, b % 8, b >> 3, (int)misuse);
#else
            /* sp_each callbacks are not guarded in this library (issue 9 item 3): what may be
               tried here is a hook's forbidden call, from on_release via a release */
            fz_op_name = "release whose hook tries a forbidden call";
            if (misuse == FZ_MISUSE_ACQUIRE || misuse == FZ_MISUSE_REG_DESTROY) misuse = FZ_MISUSE_TRIM;
            fz_member *mb = fz_pick_member(p, fz_byte(&in), 1);
            if (!mb) break;
            int saved = p->misuse;
            unsigned saved_hooks = p->misuse_hooks;
            p->misuse = (int)misuse;
            p->misuse_hooks = HK_RELEASE;
            fz_release_ok(p, mb, sp_release(p->pool, mb->ptr));
            p->misuse = saved;
            p->misuse_hooks = saved_hooks;
#endif
            break;
        }
        }
        if (p) fz_check_pool(p);
        fz_check_all_cheap();
        if (fz_op_index % 16 == 0)
            for (int i = 0; i < FZ_POOLS; i++) fz_snapshot_check(&fz_pools[i]);
        fz_ops_checked++;
    }

    fz_op_name = "teardown";
    /* Half the time the pools go one by one, otherwise sp_registry_destroy takes them all. */
    if (size & 1) {
        for (int i = 0; i < FZ_POOLS; i++) fz_slot_destroy(i, 1);
        FZ_CHECK(sp_registry_count(fz_reg) == 0, "registry not empty after removing every pool");
    }
    for (int i = 0; i < FZ_POOLS; i++) fz_pools[i].alloc.fail_armed = 0;
    fz_dense_teardown();
    fz_registry_destroying = 1;
    sp_registry_destroy(fz_reg);
    fz_registry_destroying = 0;
    for (int i = 0; i < FZ_POOLS; i++) {
        fz_pool *p = &fz_pools[i];
        if (!p->pool) continue;
        fz_expect_disposal_of_all(p);
        FZ_CHECK(p->alloc.live_bytes == 0 && p->alloc.nblocks == 0, "sp_registry_destroy leaked pool memory");
        free(p->buffer_block);
        p->buffer_block = NULL;
        p->pool = NULL;
    }
    fz_reg = NULL;
    return 0;
}
