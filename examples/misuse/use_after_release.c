/* SPDX-License-Identifier: Zlib */
/* use_after_release.c -- a deliberately planted bug, and what spawnpool's debug checks make of it.

   A turret keeps a plain pointer to an enemy. The enemy dies and goes back to its pool, but the
   turret still writes through the old pointer. Without a pool, that is a use-after-free that
   AddressSanitizer and valgrind report. With a naive pool it is silent: the memory is still
   valid, and the write lands in whichever enemy the pool hands out next.

   Linked with the debug library (SP_DEBUG=1: examples/CMakeLists.txt links it in every build
   type), spawnpool makes the released enemy visible:
     - the library and this program built with -fsanitize=address: ASan reports
       "use-after-poison" at the planted line;
     - run under valgrind: memcheck reports "Invalid write" at the planted line;
     - otherwise: the next acquisition logs that the member was written after its release,
       naming where it was released.
   Linked with a library without the checks, it says so first: then nothing catches the bug.

   Run without arguments it does everything right; `--write` plants the bug. tests/ run it all
   three ways. It prints text only: there is no picture to take, so no --headless/--screenshot. */
#include <spawnpool.h>

#include "demo_args.h"

#include <stdio.h>

typedef struct enemy {
    int hp;
    float x, y;
} enemy;

int main(int argc, char **argv) {
    // Initialization
    bool plant_bug = false;
    const demo_opt opts[] = {
        {"write", DEMO_OPT_FLAG, &plant_bug, 0, 0, NULL, NULL,
         "plant the bug: write through a pointer to a released enemy"},
        {0},
    };
    int rc = demo_args_parse("use_after_release",
        "A write through a stale pointer, and what spawnpool's debug checks report (ASan,\n"
        "valgrind, or the write-after-release checksum, depending on the build).",
        NULL, opts, argc, argv);
    if (rc != DEMO_ARGS_RUN) return rc;
    setvbuf(stdout, NULL, _IOLBF, 0); /* the story and the library's report in order, piped too */
#if !SP_DEBUG
    fprintf(stderr, "use_after_release: this build has no debug checks (SP_DEBUG=0), so --write "
                    "goes unreported; link libspawnpool-debug (spawnpool_debug in CMake)\n");
#endif
    sp_pool *enemies = sp_pool_create(&(sp_desc){.name = "enemies", .item_size = sizeof(enemy), .initial = 4});
    if (!enemies) return 1;

    // Update: an enemy spawns, the turret locks on with a plain pointer, the enemy dies.
    enemy *target = (enemy *)sp_acquire(enemies);
    target->hp = 10;
    sp_handle target_handle = sp_handle_of(enemies, target);
    sp_release(enemies, target);

    // The right way: the handle says the enemy is gone.
    if (sp_resolve(enemies, target_handle) == NULL) printf("handle: target expired, turret stops aiming\n");

    // The bug: the plain pointer still "works".
    if (plant_bug) {
        target->hp -= 3; /* PLANTED: write through a stale pointer */
    }

    // The next enemy to spawn gets the same memory.
    enemy *next = (enemy *)sp_acquire(enemies);
    printf("next enemy hp=%d (same memory as the dead one: %s)\n", next->hp, next == target ? "yes" : "no");
    sp_release(enemies, next);

    // De-Initialization
    sp_pool_destroy(enemies);
    return 0;
}
