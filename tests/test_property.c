/* SPDX-License-Identifier: Zlib */
/* A long deterministic random workload over several pools (every overflow policy, heap and
   fixed-buffer memory, a priority hook, caps that move), checking after every operation the
   invariants the whole library rests on:
     - size = leased + free, and created - disposed = size;
     - size <= max, unless the policy is GROW or max was lowered below the size (then the pool
       must not grow while it is over);
     - no member is ever handed to two owners at once;
     - no handle resolves outside its life, and every live one does.
   Owners are tracked by the test: each acquisition gets an owner record, and the owner's id is
   stamped into the member, so a member handed out twice shows as a stamp that changed under its
   first owner. Operations: 5 million in an optimised build, 1 million under sanitizers;
   SP_PROPERTY_OPS overrides both (the valgrind run in `make test` uses it). The seed is fixed:
   a failure reproduces exactly, and SP_PROPERTY_SEED picks another. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SANITIZE_ADDRESS__)
#  define PT_SANITIZED 1
#elif defined(__has_feature)
#  if __has_feature(address_sanitizer)
#    define PT_SANITIZED 1
#  endif
#endif
#ifndef PT_SANITIZED
#  define PT_SANITIZED 0
#endif

#define PT_POOLS 5
#define PT_OWNERS 4096 /* live owners at most; acquisitions beyond are skipped */
#define PT_STALE 256   /* ended lives remembered per pool */

typedef struct pt_member {
    uint64_t owner; /* stamp: id of the owner record, 0 when none */
    uint64_t life;  /* stamp: which acquisition of that owner */
    double priority;
} pt_member;

typedef struct pt_owner {
    pt_member *item; /* NULL: record unused */
    sp_handle handle;
    uint64_t life;
    int pool;
    size_t live_index; /* position in pt_live */
} pt_owner;

typedef struct pt_pool {
    sp_pool *pool;
    sp_overflow overflow;
    size_t max;        /* what the test set */
    size_t last_size;  /* size after the previous operation */
    size_t owners;     /* live owners of this pool */
    sp_handle stale[PT_STALE];
    size_t stale_n, stale_pos;
    void *buffer;
    test_alloc alloc;
    test_log log;
} pt_pool;

static pt_pool pt_pools[PT_POOLS];
static pt_owner pt_owner_tab[PT_OWNERS + 1]; /* id 0 unused */
static uint64_t pt_free_ids[PT_OWNERS];
static size_t pt_free_n;
static uint64_t pt_live[PT_OWNERS]; /* ids of live owners, in no order */
static size_t pt_live_n;
static uint64_t pt_lives;

static double pt_priority(const void *item, void *user) {
    (void)user;
    return ((const pt_member *)item)->priority;
}

static void pt_create(void *item, void *user) { /* keeps members' contents across lives */
    (void)item;
    (void)user;
}

static void pt_stale_push(pt_pool *pp, sp_handle h) {
    pp->stale[pp->stale_pos] = h;
    pp->stale_pos = (pp->stale_pos + 1) % PT_STALE;
    if (pp->stale_n < PT_STALE) pp->stale_n++;
}

/* The owner's life ends (release, reclaim or clear): its handle joins the stale ones. */
static void pt_owner_end(uint64_t id) {
    pt_owner *o = &pt_owner_tab[id];
    pt_pool *pp = &pt_pools[o->pool];
    pt_stale_push(pp, o->handle);
    pp->owners--;
    size_t at = o->live_index;
    pt_live[at] = pt_live[--pt_live_n];
    pt_owner_tab[pt_live[at]].live_index = at;
    o->item = NULL;
    pt_free_ids[pt_free_n++] = id;
}

static void pt_owner_begin(int pool, pt_member *item, double priority) {
    pt_pool *pp = &pt_pools[pool];
    uint64_t id = pt_free_ids[--pt_free_n];
    pt_owner *o = &pt_owner_tab[id];
    o->item = item;
    o->pool = pool;
    o->life = ++pt_lives;
    o->handle = sp_handle_of(pp->pool, item);
    assert_false(sp_handle_is_null(o->handle));
    assert_ptr_equal(sp_resolve(pp->pool, o->handle), item);
    o->live_index = pt_live_n;
    pt_live[pt_live_n++] = id;
    pp->owners++;
    item->owner = id;
    item->life = o->life;
    item->priority = priority;
}

/* The member still carries its owner's stamp: nobody else was handed it meanwhile. */
static void pt_expect_stamp(uint64_t id) {
    const pt_owner *o = &pt_owner_tab[id];
    if (o->item->owner != id || o->item->life != o->life) {
        fail_msg("member %p of owner %llu was handed to another owner (stamp %llu/%llu)",
                 (void *)o->item, (unsigned long long)id, (unsigned long long)o->item->owner,
                 (unsigned long long)o->item->life);
    }
}

static void pt_check_invariants(pt_pool *pp) {
    sp_stats s;
    sp_stats_get(pp->pool, &s);
    assert_int_equal(s.size, s.leased + s.free);
    assert_true(s.created - s.disposed == s.size);
    assert_int_equal(s.leased, pp->owners);
    if (pp->overflow != SP_OVERFLOW_GROW && s.max != 0 && s.size > s.max) {
        /* only after max was lowered below the size: then the pool must not grow */
        assert_true(s.size <= pp->last_size);
    }
    pp->last_size = s.size;
}

static void pt_setup(void) {
    static const sp_overflow policies[PT_POOLS] = {SP_OVERFLOW_DROP, SP_OVERFLOW_RECLAIM, SP_OVERFLOW_GROW,
                                                   SP_OVERFLOW_RECLAIM, SP_OVERFLOW_DROP};
    memset(pt_pools, 0, sizeof pt_pools);
    memset(pt_owner_tab, 0, sizeof pt_owner_tab);
    pt_free_n = 0;
    for (uint64_t id = PT_OWNERS; id >= 1; id--) pt_free_ids[pt_free_n++] = id;
    pt_live_n = 0;
    pt_lives = 0;
    for (int i = 0; i < PT_POOLS; i++) {
        pt_pool *pp = &pt_pools[i];
        char name[16];
        snprintf(name, sizeof name, "prop%d", i);
        sp_desc d = {0};
        d.name = name;
        d.item_size = sizeof(pt_member);
        d.overflow = policies[i];
        d.max = (size_t)(16 << i); /* 16 .. 256 */
        d.chunk_items = (size_t)(7 + 13 * i);
        d.initial = (size_t)(3 * i);
        d.create = pt_create;
        d.priority = i == 3 ? pt_priority : NULL;
        d.allocator = test_alloc_make(&pp->alloc);
        d.logger = test_log_make(&pp->log);
        if (i == 4) { /* fixed-buffer mode */
            size_t bytes = sp_buffer_size(&d, d.max);
            assert_true(bytes > 0);
            pp->buffer = malloc(bytes);
            assert_non_null(pp->buffer);
            d.buffer = pp->buffer;
            d.buffer_size = bytes;
        }
        pp->pool = sp_pool_create(&d);
        assert_non_null(pp->pool);
        pp->overflow = policies[i];
        pp->max = d.max;
    }
}

static void pt_teardown(void) {
    for (int i = 0; i < PT_POOLS; i++) {
        pt_pool *pp = &pt_pools[i];
        sp_release_all(pp->pool);
        sp_pool_destroy(pp->pool);
        free(pp->buffer);
        EXPECT_NO_LEAK(&pp->alloc);
    }
}

static uint64_t pt_ops_to_run(void) {
    const char *env = getenv("SP_PROPERTY_OPS");
    if (env && *env) return strtoull(env, NULL, 10);
    return PT_SANITIZED ? 1000000u : 5000000u;
}

static void pt_acquire(int pi, uint32_t r) {
    pt_pool *pp = &pt_pools[pi];
    if (pt_free_n == 0) return;
    sp_stats before, after;
    sp_stats_get(pp->pool, &before);
    double priority = (double)(r % 7u);
    pt_member *m;
    switch ((r >> 8) % 3u) {
    case 0: m = (pt_member *)sp_acquire(pp->pool); break;
    case 1: m = (pt_member *)sp_acquire_with(pp->pool, &priority); break;
    default: m = (pt_member *)sp_acquire_force(pp->pool, &priority); break;
    }
    sp_stats_get(pp->pool, &after);
    if (!m) {
        /* Only a saturated DROP pool refuses (the test allocator never fails here). */
        assert_int_equal(after.dropped, before.dropped + 1);
        assert_int_equal(pp->overflow, SP_OVERFLOW_DROP);
        return;
    }
    if (after.reclaimed != before.reclaimed) {
        /* A reclaim: the member was leased, and its owner loses it now. */
        assert_int_equal(after.reclaimed, before.reclaimed + 1);
        uint64_t victim = m->owner;
        assert_true(victim >= 1 && victim <= PT_OWNERS);
        assert_ptr_equal(pt_owner_tab[victim].item, m);
        pt_expect_stamp(victim);
        assert_null(sp_resolve(pp->pool, pt_owner_tab[victim].handle));
        pt_owner_end(victim);
    } else if (m->owner >= 1 && m->owner <= PT_OWNERS) {
        /* A member that still carries a stamp must not belong to a live owner. */
        const pt_owner *o = &pt_owner_tab[m->owner];
        if (o->item == m) fail_msg("member %p handed out while owner %llu holds it", (void *)m,
                                   (unsigned long long)m->owner);
    }
    pt_owner_begin(pi, m, priority);
}

static void pt_release(uint32_t r) {
    if (pt_live_n == 0) return;
    uint64_t id = pt_live[r % pt_live_n];
    pt_owner *o = &pt_owner_tab[id];
    pt_pool *pp = &pt_pools[o->pool];
    pt_expect_stamp(id);
    assert_ptr_equal(sp_resolve(pp->pool, o->handle), o->item);
    pt_member *item = o->item;
    sp_handle h = o->handle;
    assert_int_equal(sp_release(pp->pool, item), SP_OK);
    pt_owner_end(id);
    assert_null(sp_resolve(pp->pool, h));
    if ((r >> 20) % 64u == 0) { /* now and then, a double release: refused, nothing changes */
        assert_int_equal(sp_release(pp->pool, item), SP_ERR_NOT_LEASED);
    }
}

static void pt_clear(int pi) {
    pt_pool *pp = &pt_pools[pi];
    for (size_t i = pt_live_n; i-- > 0;) {
        uint64_t id = pt_live[i];
        if (pt_owner_tab[id].pool == pi) {
            pt_expect_stamp(id);
            pt_owner_end(id);
        }
    }
    sp_clear(pp->pool);
}

static void random_workload_keeps_every_invariant(void **state) {
    (void)state;
    pt_setup();
    uint32_t rng = 0x5EED2026u;
    const char *seed = getenv("SP_PROPERTY_SEED");
    if (seed && *seed) rng = (uint32_t)strtoul(seed, NULL, 10) | 1u;
    uint64_t ops = pt_ops_to_run();
    for (uint64_t op = 0; op < ops; op++) {
        uint32_t r = test_rand(&rng);
        int pi = (int)(r % PT_POOLS);
        pt_pool *pp = &pt_pools[pi];
        uint32_t what = (r >> 4) % 1000u;
        uint32_t r2 = test_rand(&rng);
        if (what < 500) {
            pt_acquire(pi, r2);
        } else if (what < 930) {
            pt_release(r2);
        } else if (what < 960) {
            /* a stale handle never resolves; a live one always does */
            if (pp->stale_n) assert_null(sp_resolve(pp->pool, pp->stale[r2 % pp->stale_n]));
            if (pt_live_n) {
                const pt_owner *o = &pt_owner_tab[pt_live[r2 % pt_live_n]];
                assert_ptr_equal(sp_resolve(pt_pools[o->pool].pool, o->handle), o->item);
                for (int q = 0; q < PT_POOLS; q++)
                    if (q != o->pool) assert_null(sp_resolve(pt_pools[q].pool, o->handle));
            }
        } else if (what < 970) {
            /* lower or raise the cap; mostly small ones, so that pools saturate often */
            size_t m = r2 % 50u == 0 ? 0 : 1 + r2 % 64u;
            assert_int_equal(sp_set_max(pp->pool, m), SP_OK);
            pp->max = m;
        } else if (what < 980) {
            sp_prewarm(pp->pool, r2 % 16u);
        } else if (what < 990) {
            sp_trim(pp->pool, r2 % 32u);
        } else if (what < 998) {
            /* release some while iterating, as an update loop does */
            for (void *it = sp_first(pp->pool), *nx; it; it = nx) {
                nx = sp_next(pp->pool, it);
                if (test_rand(&rng) % 4u) continue;
                uint64_t id = ((pt_member *)it)->owner;
                assert_ptr_equal(pt_owner_tab[id].item, it);
                pt_expect_stamp(id);
                assert_int_equal(sp_release(pp->pool, it), SP_OK);
                pt_owner_end(id);
            }
        } else if (r2 % 8u == 0) {
            pt_clear(pi);
        } else {
            /* release_all: every owner of the pool loses its member */
            for (size_t i = pt_live_n; i-- > 0;) {
                uint64_t id = pt_live[i];
                if (pt_owner_tab[id].pool == pi) pt_owner_end(id);
            }
            sp_release_all(pp->pool);
        }
        pt_check_invariants(pp);
    }
    for (int i = 0; i < PT_POOLS; i++) {
        pt_pool *pp = &pt_pools[i];
        for (size_t k = 0; k < pp->stale_n; k++) assert_null(sp_resolve(pp->pool, pp->stale[k]));
        pt_check_invariants(pp);
    }
    for (size_t i = 0; i < pt_live_n; i++) pt_expect_stamp(pt_live[i]);
    /* What the run went through, so a reader can see that every path was taken. */
    printf("property: %llu operations\n", (unsigned long long)ops);
    for (int i = 0; i < PT_POOLS; i++) {
        sp_stats s;
        sp_stats_get(pt_pools[i].pool, &s);
        printf("  %s: acquired %llu released %llu reclaimed %llu dropped %llu grown_past_max %llu "
               "created %llu disposed %llu peak %zu\n",
               sp_pool_name(pt_pools[i].pool), (unsigned long long)s.acquired,
               (unsigned long long)s.released, (unsigned long long)s.reclaimed,
               (unsigned long long)s.dropped, (unsigned long long)s.grown_past_max,
               (unsigned long long)s.created, (unsigned long long)s.disposed, s.peak_leased);
    }
    pt_teardown();
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(random_workload_keeps_every_invariant),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
