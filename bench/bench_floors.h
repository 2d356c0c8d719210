/* SPDX-License-Identifier: Zlib */
/*
    bench_floors.h -- the floors, named once: the free lists of bench_impls.c that a pool is
    measured against (what spawnpool cannot beat, and the checked layouts it could take).
    spbench prints their rows beside a peer that runs in a process of its own (jemalloc),
    spreport's plots draw them as a band, and spinstr counts their instructions. A floor added
    to bench_impls.c is added here, and to bench/instr.sh's list if make bench-instr is to
    count it.
*/
#ifndef SP_BENCH_FLOORS_H
#define SP_BENCH_FLOORS_H

#define BENCH_FLOORS                                                                           \
    "freelist", "checked_side", "checked_bits", "checked_gen", "checked_dense", "checked_plan", \
        "checked_plan_byte"

/* The floors 0.5's targets name and the docs show: the bare free list, and the two checked
   layouts (a state bit or a byte a member beside an index stack) the core chose between. */
#define BENCH_TARGET_FLOORS "freelist", "checked_plan", "checked_plan_byte"

#endif /* SP_BENCH_FLOORS_H */
