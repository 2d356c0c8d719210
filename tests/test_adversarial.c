/* SPDX-License-Identifier: Zlib */
/* Adversarial review of the 0.3 guards (issues 9 and 11): callbacks the earlier review did not
   try (the logger, sp_dense's on_move), at the moments they run. Each test is a regression test
   for a bug that review found; see docs/safety.md "What a callback may do". */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "sp_internal.h"
#include "testutil.h"

#include <spawnpool_dense.h>

#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------------
   A logger that attacks the pool it logs for
   ------------------------------------------------------------------------------------------ */

typedef enum attack { ATTACK_DESTROY, ATTACK_CLEAR, ATTACK_TRIM } attack;

typedef struct hostile_log {
    sp_pool *pool;
    attack what;
    int armed;
    int lines, refusals;
} hostile_log;

static void hostile_log_fn(sp_log_level level, const char *pool_name, const char *message, void *user) {
    (void)level;
    (void)pool_name;
    hostile_log *h = (hostile_log *)user;
    h->lines++;
    if (strstr(message, "refused")) h->refusals++;
    if (!h->armed || !h->pool) return;
    h->armed = 0; /* one attack; its own refusal line comes back here unarmed */
    if (h->what == ATTACK_DESTROY) sp_pool_destroy(h->pool);
    else if (h->what == ATTACK_CLEAR) (void)sp_clear(h->pool);
    else (void)sp_trim(h->pool, 0);
}

static sp_pool *hostile_pool(hostile_log *h, test_alloc *ta, sp_overflow overflow, size_t max) {
    memset(h, 0, sizeof *h);
    memset(ta, 0, sizeof *ta);
    sp_pool *p = sp_pool_create(&(sp_desc){
        .name = "hostile",
        .item_size = 32,
        .max = max,
        .overflow = overflow,
        .allocator = test_alloc_make(ta),
        .logger = {hostile_log_fn, h},
    });
    assert_non_null(p);
    h->pool = p;
    return p;
}

/* The GROW warning is logged in the middle of an acquisition (the member is built, not yet
   handed out): a logger that destroys the pool there would free it under the acquisition. */
static void logger_destroying_its_pool_during_a_grow_warning_is_refused(void **state) {
    (void)state;
    hostile_log h;
    test_alloc ta;
    sp_pool *p = hostile_pool(&h, &ta, SP_OVERFLOW_GROW, 1);
    void *a = sp_acquire(p);
    assert_non_null(a);
    h.armed = 1;
    void *b = sp_acquire(p); /* past max: the warning, and the attack inside it */
    assert_non_null(b);
    assert_int_equal(h.refusals, 1);
    assert_true(sp__pool_check(p));
    assert_true(sp_is_leased(p, a) && sp_is_leased(p, b));
    assert_int_equal(sp_release(p, a), SP_OK);
    assert_int_equal(sp_release(p, b), SP_OK);
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&ta);
}

/* The leak line is logged by sp_pool_destroy before it tears the pool down: a logger that
   destroys the pool again there would run the whole destroy twice. */
static void logger_destroying_its_pool_during_the_leak_line_is_refused(void **state) {
    (void)state;
    hostile_log h;
    test_alloc ta;
    sp_pool *p = hostile_pool(&h, &ta, SP_OVERFLOW_DROP, 0);
    assert_non_null(sp_acquire(p));
    h.armed = 1;
    sp_pool_destroy(p); /* "destroyed with 1 member(s) still leased" */
    assert_int_equal(h.refusals, 1);
    EXPECT_NO_LEAK(&ta);
}

/* The retirement line is logged while a release ends a member's last life: clearing the pool
   there disposes members under the release. */
static void logger_clearing_its_pool_during_a_retirement_is_refused(void **state) {
    (void)state;
    hostile_log h;
    test_alloc ta;
    sp_pool *p = hostile_pool(&h, &ta, SP_OVERFLOW_DROP, 0);
    void *a = sp_acquire(p);
    void *b = sp_acquire(p);
    assert_non_null(a);
    assert_non_null(b);
    sp__debug_set_life(p, a, SP__LIFE_MAX);
    h.what = ATTACK_CLEAR;
    h.armed = 1;
    assert_int_equal(sp_release(p, a), SP_OK); /* retires: info line, and the attack */
    assert_int_equal(h.refusals, 1);
    assert_true(sp__pool_check(p));
    assert_true(sp_is_leased(p, b));
    assert_int_equal(sp_release(p, b), SP_OK);
    sp_pool_destroy(p);
    EXPECT_NO_LEAK(&ta);
}


/* ---------------------------------------------------------------------------------------------
   sp_dense: its logger and on_move
   ------------------------------------------------------------------------------------------ */

int sp__dense_check(const sp_dense *d);
void sp__dense_set_life(sp_dense *d, size_t index, uint32_t life);

typedef struct dense_attacker {
    sp_dense *d;
    int destroy; /* destroy the pool at the next callback */
    int lines, refusals;
    unsigned sum; /* what the logger read of the elements */
} dense_attacker;

static void dense_attack_log(sp_log_level level, const char *name, const char *message, void *user) {
    (void)level;
    (void)name;
    dense_attacker *a = (dense_attacker *)user;
    a->lines++;
    if (strstr(message, "refused")) a->refusals++;
    if (!a->d) return;
    /* A logger may look at the pool it logs for: every element must be readable. */
    const unsigned char *data = (const unsigned char *)sp_dense_data(a->d);
    for (size_t i = 0; i < sp_dense_count(a->d) * sp_dense_stride(a->d); i++) a->sum += data[i];
    if (a->destroy) {
        a->destroy = 0;
        sp_dense_destroy(a->d);
    }
}

static void dense_attack_move(void *item, size_t from, size_t to, void *user) {
    (void)item;
    (void)from;
    (void)to;
    dense_attacker *a = (dense_attacker *)user;
    if (a->destroy) {
        a->destroy = 0;
        sp_dense_destroy(a->d);
    }
}

/* A GROW dense pool of 2 whose log lines go to the attacking logger. */
static sp_dense *dense_attacked(dense_attacker *a, test_alloc *ta) {
    return sp_dense_create(&(sp_dense_desc){.name = "sparks", .item_size = 16, .max = 2,
                                            .overflow = SP_OVERFLOW_GROW,
                                            .allocator = test_alloc_make(ta),
                                            .logger = {dense_attack_log, a}});
}

/* The GROW warning was logged after the old element block was freed and before the new one was
   in place: a logger that read the pool read freed memory. */
static void dense_logger_reads_live_elements_during_the_grow_warning(void **state) {
    (void)state;
    dense_attacker a = {0};
    test_alloc ta = {0};
    a.d = dense_attacked(&a, &ta);
    assert_non_null(a.d);
    for (int i = 0; i < 3; i++) assert_non_null(sp_dense_add(a.d, NULL));
    assert_int_equal(a.lines, 1); /* the warning */
    assert_int_equal(sp_dense_count(a.d), 3);
    assert_int_equal(sp__dense_check(a.d), 0);
    sp_dense_destroy(a.d);
    EXPECT_NO_LEAK(&ta);
}

/* A logger destroying the pool in the middle of the add that grew it is refused. */
static void dense_logger_destroying_its_pool_during_an_add_is_refused(void **state) {
    (void)state;
    dense_attacker a = {0};
    test_alloc ta = {0};
    a.d = dense_attacked(&a, &ta);
    assert_non_null(a.d);
    assert_non_null(sp_dense_add(a.d, NULL));
    assert_non_null(sp_dense_add(a.d, NULL));
    a.destroy = 1;
    assert_non_null(sp_dense_add(a.d, NULL)); /* grows past max: the warning, the attack */
    assert_int_equal(a.refusals, 1);
    assert_int_equal(sp_dense_count(a.d), 3);
    assert_int_equal(sp__dense_check(a.d), 0);
    sp_dense_destroy(a.d);
    EXPECT_NO_LEAK(&ta);
}

/* A fixed-buffer RECLAIM pool whose oldest element is in its last life removes it like any other
   (on_move runs) and goes on reclaiming: on_move destroying the pool there is refused. */
static void dense_on_move_destroying_its_pool_during_a_reclaim_is_refused(void **state) {
    (void)state;
    dense_attacker a = {0};
    sp_dense_desc desc = {.name = "ring", .item_size = 8, .max = 2, .overflow = SP_OVERFLOW_RECLAIM,
                          .on_move = dense_attack_move, .user = &a,
                          .logger = {dense_attack_log, NULL}};
    desc.logger.user = &a;
    size_t size = sp_dense_buffer_size(&desc, 2);
    assert_true(size > 0);
    _Alignas(16) static unsigned char buffer[4096];
    assert_true(size <= sizeof buffer);
    desc.buffer = buffer;
    desc.buffer_size = size;
    sp_dense *d = sp_dense_create(&desc);
    assert_non_null(d);
    uint64_t x = 1, y = 2, z = 3;
    assert_non_null(sp_dense_add(d, &x));
    assert_non_null(sp_dense_add(d, &y));
    sp__dense_set_life(d, 0, TEST_LIFE_MAX); /* the oldest is in its last life */
    a.destroy = 1;
    a.d = d;
    void *fresh = sp_dense_add(d, &z); /* erase x (y moves: on_move, the attack), reclaim y */
    a.d = NULL;
    assert_non_null(fresh);
    assert_int_equal(a.refusals, 1);
    assert_int_equal(sp__dense_check(d), 0);
    sp_dense_destroy(d);
}

int main(void) {
    /* SP_TEST_FILTER=name runs one test (to watch one fail before its fix). */
    if (getenv("SP_TEST_FILTER")) cmocka_set_test_filter(getenv("SP_TEST_FILTER"));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(logger_destroying_its_pool_during_a_grow_warning_is_refused),
        cmocka_unit_test(logger_destroying_its_pool_during_the_leak_line_is_refused),
        cmocka_unit_test(logger_clearing_its_pool_during_a_retirement_is_refused),
        cmocka_unit_test(dense_logger_reads_live_elements_during_the_grow_warning),
        cmocka_unit_test(dense_logger_destroying_its_pool_during_an_add_is_refused),
        cmocka_unit_test(dense_on_move_destroying_its_pool_during_a_reclaim_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
