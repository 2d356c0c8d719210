/* SPDX-License-Identifier: Zlib */
/* sp_dense at its limits: RECLAIM in a fixed buffer whose slots reach their last life or retire,
   handle-lookup warnings (rate-limited), NULL arguments, create's messages, and the stats'
   max and grown_past_max. */
#define _POSIX_C_SOURCE 200809L /* dup, dup2, fileno: capturing stderr */
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
#include <unistd.h>

/* 2^wide where size_t has 64 bits, 2^narrow where it has 32 (WebAssembly): the overflow cases
   below need products past SIZE_MAX, which smaller numbers reach with a 32-bit size_t. */
#define POW2(wide, narrow) ((size_t)1 << (SIZE_MAX > 0xFFFFFFFFu ? (wide) : (narrow)))

int sp__dense_check(const sp_dense *d);
void sp__dense_set_life(sp_dense *d, size_t index, uint32_t life);

#define LIFE_MAX (TEST_LIFE_MAX)

typedef struct spark {
    uint32_t key;
    float life;
} spark;

static uint32_t key_at(const sp_dense *d, size_t i) { return ((const spark *)sp_dense_at(d, i))->key; }

/* A full fixed-buffer RECLAIM pool: every slot the buffer holds is live (keys 1..cap, oldest
   first), so there is no slot to spare. */
typedef struct fixed_fixture {
    test_log tl;
    sp_dense_desc desc;
    unsigned char *buffer;
    sp_dense *d;
    uint32_t cap;
} fixed_fixture;

static void fixed_init(fixed_fixture *f, size_t members) {
    memset(f, 0, sizeof *f);
    f->desc = (sp_dense_desc){.name = "sparks", .item_size = sizeof(spark),
                              .overflow = SP_OVERFLOW_RECLAIM, .logger = test_log_make(&f->tl)};
    f->desc.buffer_size = sp_dense_buffer_size(&f->desc, members);
    f->buffer = (unsigned char *)malloc(f->desc.buffer_size);
    f->desc.buffer = f->buffer;
    f->d = sp_dense_create(&f->desc);
    assert_non_null(f->d);
    f->cap = (uint32_t)sp_dense_capacity(f->d);
    assert_true(f->cap >= members && f->cap < members + 4);
    for (uint32_t k = 1; k <= f->cap; k++) assert_non_null(sp_dense_add(f->d, &(spark){k, 1.0f}));
    assert_int_equal(sp_dense_count(f->d), f->cap);
}

static void fixed_destroy(fixed_fixture *f) {
    assert_int_equal(sp__dense_check(f->d), 0);
    sp_dense_destroy(f->d);
    free(f->buffer);
}

/* The oldest element in its slot's last life: its slot retires, and with no slot to spare the
   capacity drops by one for good; the add still succeeds by reclaiming the next oldest too. Every
   later add reclaims as usual. */
static void fixed_reclaim_goes_on_when_the_oldest_reaches_its_last_life(void **state) {
    (void)state;
    fixed_fixture f;
    fixed_init(&f, 4);
    sp_handle h1 = sp_dense_handle_at(f.d, 0), h2 = sp_dense_handle_at(f.d, 1);
    sp__dense_set_life(f.d, 0, LIFE_MAX);
    h1 = sp_dense_handle_at(f.d, 0);
    spark *s = (spark *)sp_dense_add(f.d, &(spark){5, 1.0f});
    assert_non_null(s);
    assert_int_equal(s->key, 5);
    assert_int_equal(sp_dense_count(f.d), f.cap - 1); /* one slot retired: one place less */
    assert_null(sp_dense_resolve(f.d, h1));
    assert_null(sp_dense_resolve(f.d, h2));
    assert_int_equal(sp__dense_check(f.d), 0);
    /* Every later add reclaims the oldest: never a drop. */
    for (uint32_t k = 6; k < 106; k++) {
        spark *t = (spark *)sp_dense_add(f.d, &(spark){k, 1.0f});
        assert_non_null(t);
        assert_int_equal(t->key, k);
        assert_int_equal(sp_dense_count(f.d), f.cap - 1);
    }
    sp_stats st;
    sp_dense_stats_get(f.d, &st);
    assert_int_equal(st.dropped, 0);
    assert_int_equal(st.acquired, f.cap + 1 + 100);
    assert_int_equal(st.released, 2 + 100);
    assert_int_equal(st.reclaimed, 2 + 100);
    /* The survivors are the newest. */
    for (size_t i = 0; i < f.cap - 1; i++) assert_true(key_at(f.d, i) >= 106 - (f.cap - 1));
    fixed_destroy(&f);
}

/* A slot retired by an ordinary remove: the pool is below max but has no slot for another
   element, which is "full" for RECLAIM: an add reclaims the oldest instead of dropping. */
static void fixed_reclaim_goes_on_after_a_slot_retired(void **state) {
    (void)state;
    fixed_fixture f;
    fixed_init(&f, 4);
    sp__dense_set_life(f.d, 2, LIFE_MAX);
    assert_int_equal(sp_dense_remove_at(f.d, 2), SP_OK); /* key 3's slot retires */
    assert_int_equal(sp_dense_count(f.d), f.cap - 1);
    sp_handle oldest = sp_dense_handle_at(f.d, 0); /* key 1 */
    for (uint32_t k = 5; k < 50; k++) {
        spark *t = (spark *)sp_dense_add(f.d, &(spark){k, 1.0f});
        assert_non_null(t);
        assert_int_equal(t->key, k);
        assert_int_equal(sp_dense_count(f.d), f.cap - 1);
    }
    assert_null(sp_dense_resolve(f.d, oldest));
    sp_stats st;
    sp_dense_stats_get(f.d, &st);
    assert_int_equal(st.dropped, 0);
    assert_int_equal(st.reclaimed, 45);
    fixed_destroy(&f);
}

/* When every slot has retired there is nothing to reclaim: the add is dropped and counted. */
static void fixed_reclaim_drops_only_when_every_slot_retired(void **state) {
    (void)state;
    fixed_fixture f;
    fixed_init(&f, 2);
    for (size_t i = 0; i < f.cap; i++) sp__dense_set_life(f.d, i, LIFE_MAX);
    assert_null(sp_dense_add(f.d, &(spark){9, 1.0f})); /* all retire: nothing left */
    assert_int_equal(sp_dense_count(f.d), 0);
    assert_null(sp_dense_add(f.d, NULL));
    sp_stats st;
    sp_dense_stats_get(f.d, &st);
    assert_int_equal(st.dropped, 2);
    assert_int_equal(st.reclaimed, f.cap);
    fixed_destroy(&f);
}

/* Decision 7: 200,000 forged lookups log the first and each power of two, with the count (18
   lines), and another pool's handles are counted apart; a stale handle is silent. */
static void forged_and_foreign_lookups_warn_rate_limited(void **state) {
    (void)state;
    test_log tl = {0};
    sp_dense_desc desc = {.name = "sparks", .item_size = sizeof(spark), .logger = test_log_make(&tl)};
    sp_dense *d = sp_dense_create(&desc);
    sp_dense *other = sp_dense_create(&desc);
    sp_handle h = sp_dense_add_handle(d, NULL);
    sp_handle theirs = sp_dense_add_handle(other, NULL);
    sp_handle forged = {h.id + ((uint64_t)5 << TEST_LIFE_SHIFT)}; /* a life never handed out */
    for (int i = 0; i < 200000; i++) assert_null(sp_dense_resolve(d, forged));
    assert_int_equal(tl.warnings, 18);
    assert_true(test_log_last_has(&tl, "(131072 so far)"));
    assert_true(test_log_last_has(&tl, "forged"));
    for (int i = 0; i < 3; i++) assert_int_equal(sp_dense_resolve_index(d, theirs), SIZE_MAX);
    assert_int_equal(tl.warnings, 18 + 2); /* 1 and 2 */
    assert_true(test_log_last_has(&tl, "another pool (2 so far)"));
    assert_int_equal(sp_dense_remove_handle(d, h), SP_OK);
    for (int i = 0; i < 1000; i++) assert_null(sp_dense_resolve(d, h)); /* stale: silent */
    assert_int_equal(tl.warnings, 20);
    assert_null(sp_dense_resolve(d, sp_handle_null()));
    assert_int_equal(tl.warnings, 20);
    sp_dense_destroy(other);
    sp_dense_destroy(d);
}

/* Runs fn with stderr sent to a temporary file and returns the lines it wrote. */
static int stderr_lines_of(void (*fn)(void)) {
    fflush(stderr);
    int saved = dup(2);
    FILE *tmp = tmpfile();
    assert_non_null(tmp);
    dup2(fileno(tmp), 2);
    fn();
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    rewind(tmp);
    int lines = 0, c;
    while ((c = fgetc(tmp)) != EOF) lines += c == '\n';
    fclose(tmp);
    return lines;
}

static void null_add(void) { assert_null(sp_dense_add(NULL, NULL)); }
static void null_add_handle(void) { assert_true(sp_handle_is_null(sp_dense_add_handle(NULL, NULL))); }
static void null_remove_at(void) { assert_int_equal(sp_dense_remove_at(NULL, 0), SP_ERR_INVALID); }
static void null_remove(void) { assert_int_equal(sp_dense_remove(NULL, &(spark){0, 0}), SP_ERR_INVALID); }
static void null_remove_handle(void) {
    assert_int_equal(sp_dense_remove_handle(NULL, sp_handle_null()), SP_ERR_INVALID);
}
static void null_clear(void) { assert_int_equal(sp_dense_clear(NULL), 0); }
static void null_reserve(void) { assert_int_equal(sp_dense_reserve(NULL, 10), 0); }
static void null_create(void) { assert_null(sp_dense_create(NULL)); }
static void null_destroy(void) { sp_dense_destroy(NULL); }
static void null_queries(void) {
    assert_int_equal(sp_dense_count(NULL), 0);
    assert_null(sp_dense_resolve(NULL, sp_handle_null()));
    assert_null(sp_dense_name(NULL));
    sp_stats st;
    sp_dense_stats_get(NULL, &st);
}

/* Decision 6: a NULL pool where one is needed logs one error line through the default logger;
   destroy and the queries that document an answer for NULL are silent. */
static void null_pool_calls_log_one_line_each(void **state) {
    (void)state;
    void (*logged[])(void) = {null_add, null_add_handle, null_remove_at, null_remove,
                              null_remove_handle, null_clear, null_reserve, null_create};
    for (size_t i = 0; i < sizeof logged / sizeof logged[0]; i++)
        if (stderr_lines_of(logged[i]) != 1) fail_msg("call %zu did not log exactly one line", i);
    assert_int_equal(stderr_lines_of(null_destroy), 0);
    assert_int_equal(stderr_lines_of(null_queries), 0);
}

/* Every invalid descriptor is refused with one line naming the field at fault. */
static void create_names_the_field_at_fault(void **state) {
    (void)state;
    test_log tl = {0};
    static unsigned char small[8];
    static unsigned char big[4096];
    struct {
        sp_dense_desc desc;
        const char *says;
    } cases[] = {
        {{.item_size = 0}, "item_size is 0"},
        {{.item_size = 8, .item_align = 3}, "item_align is not a power of two"},
        {{.item_size = SIZE_MAX / 2}, "item_size is too large"},
        {{.item_size = 8, .item_align = SIZE_MAX / 2 + 1}, "item_align is too large"},
        {{.item_size = 8, .max = ((size_t)1 << 24) + 1}, "max is 16777217, above 16777216, the most elements a dense pool of stride 8 holds"},
        {{.item_size = 8, .initial = (size_t)1 << 25}, "initial is 33554432, above 16777216"},
        {{.item_size = 8, .initial = SIZE_MAX}, "above 16777216, the most elements a dense pool of stride 8 holds"},
        {{.item_size = 8, .initial = 10, .max = 5}, "initial is above max"},
        {{.item_size = 8, .overflow = (sp_overflow)7}, "unknown overflow policy"},
        {{.item_size = 8, .buffer_size = 64}, "buffer_size without a buffer"},
        {{.item_size = 8, .buffer = big, .buffer_size = sizeof big, .overflow = SP_OVERFLOW_GROW},
         "GROW cannot grow a fixed buffer"},
        {{.item_size = 8, .buffer = small, .buffer_size = sizeof small}, "buffer_size 8 is too small for one element"},
        {{.item_size = 8, .buffer = big, .buffer_size = sizeof big, .initial = 4000}, "initial is 4000, the buffer holds"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cases[i].desc.name = "bad";
        cases[i].desc.logger = test_log_make(&tl);
        int before = tl.errors;
        assert_null(sp_dense_create(&cases[i].desc));
        assert_int_equal(tl.errors, before + 1);
        if (!test_log_last_has(&tl, cases[i].says) || !test_log_last_has(&tl, "sp_dense_create: invalid descriptor"))
            fail_msg("case %zu: '%s' does not say '%s'", i, tl.last_message, cases[i].says);
    }
}

/* STATS: a fixed buffer reports the cap the buffer sets as max (as an sp_pool does), and
   grown_past_max counts the places reserved beyond max under GROW. */
static void stats_report_max_in_fixed_mode_and_places_grown_past_max(void **state) {
    (void)state;
    test_log tl = {0};
    sp_dense_desc desc = {.name = "fx", .item_size = 16, .logger = test_log_make(&tl)};
    desc.buffer_size = sp_dense_buffer_size(&desc, 10);
    void *buffer = malloc(desc.buffer_size);
    desc.buffer = buffer;
    sp_dense *d = sp_dense_create(&desc);
    sp_stats st;
    sp_dense_stats_get(d, &st);
    assert_int_equal(st.max, sp_dense_capacity(d));
    assert_true(st.max >= 10);
    sp_dense_destroy(d);
    desc.max = 7; /* below what the buffer holds: max itself */
    d = sp_dense_create(&desc);
    sp_dense_stats_get(d, &st);
    assert_int_equal(st.max, 7);
    sp_dense_destroy(d);
    free(buffer);

    sp_dense_desc grow = {.name = "gr", .item_size = 16, .max = 100, .chunk_items = 64,
                          .overflow = SP_OVERFLOW_GROW, .logger = test_log_make(&tl)};
    d = sp_dense_create(&grow);
    for (int i = 0; i < 150; i++) assert_non_null(sp_dense_add(d, NULL));
    sp_dense_stats_get(d, &st);
    assert_int_equal(st.max, 100);
    assert_int_equal(st.size, 164); /* 64, 100 (max), then 164 */
    assert_int_equal(st.grown_past_max, st.size - st.max);
    sp_dense_destroy(d);
}

/* A name longer than 255 bytes is cut, with one info line; one that fits is kept, silently. */
static void a_long_name_is_cut_with_an_info_line(void **state) {
    (void)state;
    test_log tl = {0};
    char name[301];
    memset(name, 'n', 300);
    name[300] = '\0';
    sp_dense_desc desc = {.name = name, .item_size = 8, .logger = test_log_make(&tl)};
    sp_dense *d = sp_dense_create(&desc);
    assert_int_equal(strlen(sp_dense_name(d)), 255);
    assert_int_equal(tl.infos, 1);
    assert_true(test_log_last_has(&tl, "name cut to 255 bytes (it had 300)"));
    sp_dense_destroy(d);
    desc.name = "sparks";
    d = sp_dense_create(&desc);
    assert_string_equal(sp_dense_name(d), "sparks");
    assert_int_equal(tl.infos, 1);
    sp_dense_destroy(d);
}

/* GROW past max with a small chunk_items grows on nearly every add: the warnings come when the
   places past max reach a power of two, not once per growth. */
static void growing_past_max_warns_at_powers_of_two(void **state) {
    (void)state;
    test_log tl = {0};
    sp_dense_desc desc = {.name = "budget", .item_size = 8, .max = 10, .chunk_items = 1,
                          .overflow = SP_OVERFLOW_GROW, .logger = test_log_make(&tl)};
    sp_dense *d = sp_dense_create(&desc);
    for (int i = 0; i < 1010; i++) assert_non_null(sp_dense_add(d, NULL));
    sp_stats st;
    sp_dense_stats_get(d, &st);
    assert_int_equal(st.grown_past_max, 1000);
    assert_int_equal(tl.warnings, 10); /* 1, 2, 4, ... 512 */
    assert_true(test_log_last_has(&tl, "(512 places past it)"));
    sp_dense_destroy(d);
}

/* sp_dense_buffer_size never wraps: any answer but 0 holds n elements of the item's size. */
static void buffer_size_returns_0_instead_of_wrapping(void **state) {
    (void)state;
    sp_dense_desc d = {.item_size = POW2(40, 20)};
    assert_int_equal(sp_dense_buffer_size(&d, (size_t)1 << 24), 0);
    static const size_t items[] = {1, 8, 24, 4096, (size_t)1 << 20, POW2(32, 16), POW2(38, 19) - 8,
                                   POW2(38, 19), POW2(40, 20), SIZE_MAX >> 8, SIZE_MAX};
    for (size_t i = 0; i < sizeof items / sizeof items[0]; i++) {
        for (uint32_t shift = 0; shift <= 24; shift++) {
            for (int reclaim = 0; reclaim < 2; reclaim++) {
                sp_dense_desc di = {.item_size = items[i], .overflow = reclaim ? SP_OVERFLOW_RECLAIM : SP_OVERFLOW_DROP};
                size_t n = (size_t)1 << shift;
                size_t bytes = sp_dense_buffer_size(&di, n);
                if (bytes != 0 && bytes / n < items[i]) fail_msg("item %zu x %zu: %zu bytes wrapped", items[i], n, bytes);
            }
        }
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fixed_reclaim_goes_on_when_the_oldest_reaches_its_last_life),
        cmocka_unit_test(fixed_reclaim_goes_on_after_a_slot_retired),
        cmocka_unit_test(fixed_reclaim_drops_only_when_every_slot_retired),
        cmocka_unit_test(forged_and_foreign_lookups_warn_rate_limited),
        cmocka_unit_test(null_pool_calls_log_one_line_each),
        cmocka_unit_test(create_names_the_field_at_fault),
        cmocka_unit_test(stats_report_max_in_fixed_mode_and_places_grown_past_max),
        cmocka_unit_test(a_long_name_is_cut_with_an_info_line),
        cmocka_unit_test(growing_past_max_warns_at_powers_of_two),
        cmocka_unit_test(buffer_size_returns_0_instead_of_wrapping),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
