/* SPDX-License-Identifier: Zlib */
/* The library's version at run time: sp_version() and sp_version_number() agree with the header
   the test was compiled with and with each other. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "testutil.h"

#include <stdio.h>

static void version_string_is_the_headers(void **state) {
    (void)state;
    assert_non_null(sp_version());
    assert_string_equal(sp_version(), SP_VERSION);
}

static void version_number_matches_the_string(void **state) {
    (void)state;
    int major = -1, minor = -1, patch = -1;
    char rest = 0;
    assert_int_equal(sscanf(sp_version(), "%d.%d.%d%c", &major, &minor, &patch, &rest), 3);
    assert_int_equal(major, SP_VERSION_MAJOR);
    assert_int_equal(minor, SP_VERSION_MINOR);
    assert_int_equal(patch, SP_VERSION_PATCH);
    assert_int_equal(sp_version_number(), major * 10000 + minor * 100 + patch);
    assert_int_equal(sp_version_number(), SP_VERSION_NUMBER);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(version_string_is_the_headers),
        cmocka_unit_test(version_number_matches_the_string),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
