/* SPDX-License-Identifier: Zlib */
/* Bugs the model-based fuzzer (tests/fuzz) found, each reduced to its smallest form. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "testutil.h"

#include <string.h>

/* The header's rule for misuse: an error code, nothing changed, one line naming the pool.
   sp_set_overflow refused an unknown policy and GROW on a fixed buffer without a word. */
static void set_overflow_refusals_log_one_line_naming_the_pool(void **state) {
    (void)state;
    test_env env;
    sp_desc d = test_env_desc(&env, "ships", 16);
    sp_pool *p = sp_pool_create(&d);
    assert_int_equal(sp_set_overflow(p, (sp_overflow)3), SP_ERR_INVALID);
    assert_int_equal(env.log.warnings + env.log.errors, 1);
    assert_string_equal(env.log.last_pool, "ships");
    assert_int_equal(sp_set_overflow(p, SP_OVERFLOW_RECLAIM), SP_OK);
    assert_int_equal(env.log.warnings + env.log.errors, 1);
    sp_pool_destroy(p);

    unsigned char buffer[4096];
    d = test_env_desc(&env, "fixed", 16);
    d.buffer = buffer;
    d.buffer_size = sizeof buffer;
    p = sp_pool_create(&d);
    assert_non_null(p);
    assert_int_equal(sp_set_overflow(p, SP_OVERFLOW_GROW), SP_ERR_INVALID);
    assert_int_equal(env.log.warnings + env.log.errors, 1);
    assert_string_equal(env.log.last_pool, "fixed");
    sp_stats s;
    sp_stats_get(p, &s);
    assert_int_equal(s.size, 0); /* nothing changed: still DROP, so a full pool drops */
    sp_pool_destroy(p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(set_overflow_refusals_log_one_line_naming_the_pool),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
