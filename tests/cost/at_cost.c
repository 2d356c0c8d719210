/* SPDX-License-Identifier: Zlib */
/* A client built with the debug checks (SP_DEBUG=1: the site macros turn sp_acquire and
   sp_release into sp_acquire_at and sp_release_at) that links the release library (SP_DEBUG=0,
   which records no sites). at_cost.sh counts, under callgrind, the instructions of N pairs made
   through the plain functions and N made through the _at ones, for a plain pool and a
   thread-safe one: the header says the _at calls of such a library cost what the plain ones do
   (they jump to them), and the test holds it to a few instructions a pair.
     at_cost plain|ts */
#undef SP_DEBUG
#define SP_DEBUG 1 /* the client's, whatever the library's */
#include <spawnpool.h>

#include <stdio.h>
#include <string.h>

#define PAIRS 100000

/* The two loops callgrind counts (--toggle-collect), each N pairs of one member. */
__attribute__((noinline)) static void pairs_plain(sp_pool *pool) {
    for (int i = 0; i < PAIRS; i++) (sp_release)(pool, (sp_acquire)(pool));
}

__attribute__((noinline)) static void pairs_at(sp_pool *pool) {
    for (int i = 0; i < PAIRS; i++) sp_release(pool, sp_acquire(pool)); /* the site macros */
}

int main(int argc, char **argv) {
    sp_desc d;
    memset(&d, 0, sizeof d);
    d.item_size = 64;
    d.threads = argc > 1 && strcmp(argv[1], "ts") == 0 ? SP_THREADS_SAFE : SP_THREADS_NONE;
    sp_pool *pool = sp_pool_create(&d);
    if (!pool) return 1;
    pairs_plain(pool); /* warm: the member, the thread's cache */
    pairs_at(pool);
    pairs_plain(pool);
    pairs_at(pool);
    printf("%d\n", PAIRS);
    sp_pool_destroy(pool);
    return 0;
}
