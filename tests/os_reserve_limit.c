/* SPDX-License-Identifier: Zlib */
/* Run under a lowered address-space limit (ctest: sh -c 'ulimit -v 1000000; exec prog'): a
   reservation larger than the limit fails cleanly (NULL, no crash, no signal), as the pool's
   fallback needs, while a small one still succeeds and commits. Exit status 0 on success.
   Not a cmocka suite (and not named test_*): the sanitizers' shadow memory cannot start under
   such a limit, and valgrind runs the test_* executables. */
#include "sp_os.h"

#include <stdio.h>
#include <string.h>

static int fail(const char *what) {
    fprintf(stderr, "os_reserve_limit: %s\n", what);
    return 1;
}

int main(void) {
    /* 64 GiB on 64-bit, 2 GiB on 32-bit: far above the 1 GB limit either way. */
    size_t huge = sizeof(size_t) > 4 ? (size_t)64 << 30 : (size_t)2 << 30;
    size_t page = sp__os_page_size();
    if (sp__os_reserve(huge)) return fail("a reservation beyond ulimit -v succeeded");
    sp__vm vm;
    sp_allocator none;
    memset(&none, 0, sizeof none);
    if (sp__allocator_vm(&none, &vm)) return fail("a zero allocator was refused");
    if (!sp__os_has_virtual_memory()) return vm.reserve ? fail("reserve without VM") : 0;
    if (vm.reserve(huge, vm.user)) return fail("the pool's reserve beyond ulimit -v succeeded");

    unsigned char *small = (unsigned char *)sp__os_reserve(256u * page);
    if (!small) return fail("a small reservation failed under the limit");
    if (!sp__os_commit(small, 4u * page)) return fail("commit of a small reservation failed");
    memset(small, 1, 4u * page);
    sp__os_release(small, 256u * page);
    printf("os_reserve_limit: a %zu-byte reservation beyond the limit failed cleanly\n", huge);
    return 0;
}
