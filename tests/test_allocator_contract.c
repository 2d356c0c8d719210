/* SPDX-License-Identifier: Zlib */
/* The allocator contract (spawnpool.h, next to sp_allocator): what `alloc` is asked for. An
   allocator built on posix_memalign, which refuses any alignment that is not a power of two
   multiple of sizeof(void *), must serve every pool the library makes: plain pools in both
   orders, a member alignment past a cache line, a thread-safe pool, a registry and its pools,
   sp_dense. Each call is checked against the contract: a power of two, at least sizeof(void *),
   at most the larger of 64 and the member's alignment, a size above 0, and `free` given back
   the size it was asked for. */
#define _POSIX_C_SOURCE 200809L /* posix_memalign */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "testutil.h"

#include <spawnpool_dense.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BLOCKS 4096

typedef struct strict {
    size_t max_align; /* the largest alignment the contract allows this user */
    int calls, violations, refused;
    char first[160]; /* the first violation, for the failure message */
    struct {
        void *ptr;
        size_t size;
    } live[BLOCKS];
    int live_n;
} strict;

static void violation(strict *s, const char *what, size_t size, size_t align) {
    if (!s->violations)
        snprintf(s->first, sizeof s->first, "%s (size %zu, align %zu)", what, size, align);
    s->violations++;
}

static void *strict_alloc(size_t size, size_t align, void *user) {
    strict *s = (strict *)user;
    s->calls++;
    if (size == 0) violation(s, "size 0", size, align);
    if (align == 0 || (align & (align - 1)) != 0) violation(s, "not a power of two", size, align);
    if (align < sizeof(void *)) violation(s, "below sizeof(void *)", size, align);
    if (align > s->max_align) violation(s, "above the contract's bound", size, align);
    void *p = NULL;
    if (posix_memalign(&p, align, size ? size : 1) != 0) { /* EINVAL for align 4 */
        s->refused++;
        return NULL;
    }
    if (s->live_n == BLOCKS) {
        free(p);
        return NULL;
    }
    s->live[s->live_n].ptr = p;
    s->live[s->live_n].size = size;
    s->live_n++;
    return p;
}

static void strict_free(void *ptr, size_t size, void *user) {
    strict *s = (strict *)user;
    for (int i = 0; i < s->live_n; i++) {
        if (s->live[i].ptr != ptr) continue;
        if (s->live[i].size != size) violation(s, "free with another size", size, 0);
        s->live[i] = s->live[--s->live_n];
        free(ptr);
        return;
    }
    violation(s, "free of a block never allocated", size, 0);
}

static sp_allocator strict_make(strict *s, size_t max_align) {
    memset(s, 0, sizeof *s);
    s->max_align = max_align;
    sp_allocator a = {.alloc = strict_alloc, .free = strict_free, .user = s};
    return a;
}

static void expect_kept(const strict *s) {
    if (s->violations || s->refused || s->live_n)
        fail_msg("%d violations (first: %s), %d refused by posix_memalign, %d blocks not freed",
                 s->violations, s->first, s->refused, s->live_n);
    assert_true(s->calls > 0);
}

/* Grows the pool past a few ranges, trims and clears it, then destroys it. */
static void exercise_pool(sp_pool *p) {
    static void *held[600];
    for (int i = 0; i < 600; i++) assert_non_null(held[i] = sp_acquire(p));
    for (int i = 0; i < 600; i += 2) assert_int_equal(sp_release(p, held[i]), SP_OK);
    (void)sp_trim(p, 0);
    (void)sp_clear(p);
    assert_non_null(sp_acquire(p));
    sp_pool_destroy(p);
}

static void plain_pools_ask_only_for_contract_alignments(void **state) {
    (void)state;
    static const struct {
        size_t size, align;
        sp_order order;
        sp_overflow overflow;
    } kinds[] = {
        {1, 0, SP_ORDER_MEMORY, SP_OVERFLOW_DROP},     /* 1-byte members, 8-byte slots */
        {12, 4, SP_ORDER_ACQUISITION, SP_OVERFLOW_DROP}, /* 16-byte slots, the ends' slot */
        {40, 0, SP_ORDER_DEFAULT, SP_OVERFLOW_RECLAIM},
        {100, 4096, SP_ORDER_MEMORY, SP_OVERFLOW_GROW}, /* ranges aligned past a cache line */
    };
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        strict s;
        sp_desc d = {.name = "strict", .item_size = kinds[k].size, .item_align = kinds[k].align,
                     .order = kinds[k].order, .overflow = kinds[k].overflow, .chunk_items = 16};
        if (kinds[k].overflow == SP_OVERFLOW_RECLAIM) d.max = 4096;
        d.allocator = strict_make(&s, kinds[k].align > 64 ? kinds[k].align : 64);
        sp_pool *p = sp_pool_create(&d);
        assert_non_null(p);
        exercise_pool(p);
        expect_kept(&s);
    }
}

static void thread_safe_pools_ask_only_for_contract_alignments(void **state) {
    (void)state;
#if defined(__EMSCRIPTEN__) && !defined(__EMSCRIPTEN_PTHREADS__)
    skip(); /* no thread-safe pools in this build */
#else
    strict s;
    sp_desc d = {.name = "strict_ts", .item_size = 24, .threads = SP_THREADS_SAFE, .magazine_size = 8};
    d.allocator = strict_make(&s, 64);
    sp_pool *p = sp_pool_create(&d);
    assert_non_null(p);
    exercise_pool(p);
    expect_kept(&s);
#endif
}

static void registries_ask_only_for_contract_alignments(void **state) {
    (void)state;
    strict s;
    sp_registry_desc rd = {.allocator = strict_make(&s, 64)};
    sp_registry *reg = sp_registry_create_with(&rd);
    assert_non_null(reg);
    char name[16];
    for (int i = 0; i < 20; i++) { /* past the first table size */
        snprintf(name, sizeof name, "pool%d", i);
        sp_desc d = {.item_size = (size_t)(i + 1), .chunk_items = 8};
        assert_non_null(sp_registry_add(reg, name, &d));
        for (int j = 0; j < 20; j++) assert_non_null(sp_spawn(reg, name, NULL));
    }
    assert_int_equal(sp_registry_release_all(reg), 400);
    sp_registry_destroy(reg);
    expect_kept(&s);
}

static void dense_pools_ask_only_for_contract_alignments(void **state) {
    (void)state;
    for (size_t size = 1; size <= 3; size++) {
        strict s;
        sp_dense_desc d = {.name = "strict_dense", .item_size = size, .overflow = SP_OVERFLOW_RECLAIM,
                           .max = 1000};
        d.allocator = strict_make(&s, 64);
        sp_dense *dp = sp_dense_create(&d);
        assert_non_null(dp);
        for (int i = 0; i < 1500; i++) assert_non_null(sp_dense_add(dp, NULL));
        sp_dense_destroy(dp);
        expect_kept(&s);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(plain_pools_ask_only_for_contract_alignments),
        cmocka_unit_test(thread_safe_pools_ask_only_for_contract_alignments),
        cmocka_unit_test(registries_ask_only_for_contract_alignments),
        cmocka_unit_test(dense_pools_ask_only_for_contract_alignments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
