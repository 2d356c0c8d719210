/* SPDX-License-Identifier: Zlib */
/* printers_program.c -- the program the debugger printers' test stops in (tests/debugger):
   pools of each kind in a known state, with live and stale handles and members leased at known
   lines (each marked SITE_<name>, which the check finds), then a call of debugger_stop, where
   the scripts break. Built with -g against the debug library (sites) and against the release
   one (no sites). */
#include <spawnpool.h>
#include <spawnpool_dense.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct enemy {
    int hp;
    float x;
} enemy;

typedef struct spark {
    unsigned id;
} spark;

/* What the scripts print, global so that they find it from any frame. */
sp_pool *enemies, *bullets, *sparks, *empty_pool;
sp_registry *scene;
sp_dense *particles;
enemy *boss, *grunt, *scout;
sp_handle boss_handle, scout_handle, dead_handle, null_handle, forged_handle, gone_handle;
sp_handle spark_handle, spark_dead_handle, particle_handle, particle_dead_handle;
enemy *bullet_a, *bullet_b;
spark *thread_spark;
/* What sp_stats_get says of each pool at the stop: the printers must say the same. */
sp_stats enemies_stats, bullets_stats, sparks_stats, empty_stats, decals_stats, particles_stats;

/* The scripts break here: everything above is in its state. (A volatile write: a call that an
   optimising build keeps.) */
volatile int stops;
__attribute__((noinline)) void debugger_stop(void) { stops++; }

static void check(int ok, const char *what) {
    if (!ok) {
        fprintf(stderr, "printers_program: %s failed\n", what);
        exit(1);
    }
}

/* A second thread's acquisitions: its cache's counters are summed with the main thread's. */
static void *spark_thread(void *arg) {
    (void)arg;
    thread_spark = sp_acquire(sparks); /* SITE_spark_thread */
    spark *b = sp_acquire(sparks);
    check(thread_spark && b, "spark_thread");
    thread_spark->id = 7;
    check(sp_release(sparks, b) == SP_OK, "spark release");
    return NULL;
}

int main(void) {
    /* A plain pool in acquisition order that reclaims: leases in the words. */
    enemies = sp_pool_create(&(sp_desc){.name = "enemies", .item_size = sizeof(enemy), .max = 8,
                                        .overflow = SP_OVERFLOW_RECLAIM});
    boss = sp_acquire_handle(enemies, NULL, &boss_handle); /* SITE_boss */
    grunt = sp_acquire(enemies);                           /* SITE_grunt */
    enemy *dead = sp_acquire_handle(enemies, NULL, &dead_handle);
    scout = sp_acquire(enemies); /* SITE_scout */
    check(boss && grunt && dead && scout, "enemies");
    boss->hp = 100, boss->x = 1.5f;
    grunt->hp = 20, grunt->x = -2.0f;
    scout->hp = 5, scout->x = 0.25f;
    scout_handle = sp_handle_of(enemies, scout);
    check(sp_release(enemies, dead) == SP_OK, "release dead"); /* its handle is stale now */
    forged_handle.id = boss_handle.id + ((uint64_t)5 << 41);    /* a life never handed out */

    /* A plain pool in memory order: its leases are plain (no handle, no hook). */
    bullets = sp_pool_create(&(sp_desc){.name = "bullets", .item_size = sizeof(enemy), .initial = 4});
    bullet_a = sp_acquire(bullets); /* SITE_bullet_a */
    bullet_b = sp_acquire(bullets); /* SITE_bullet_b */
    check(bullet_a && bullet_b, "bullets");
    bullet_a->hp = 1, bullet_b->hp = 2;

    /* A thread-safe pool, used by two threads. */
    sparks = sp_pool_create(&(sp_desc){.name = "sparks", .item_size = sizeof(spark), .threads = SP_THREADS_SAFE});
    check(sparks != NULL, "sparks");
    pthread_t t;
    check(pthread_create(&t, NULL, spark_thread, NULL) == 0 && pthread_join(t, NULL) == 0, "thread");
    spark *s = sp_acquire_handle(sparks, NULL, &spark_handle); /* SITE_spark */
    spark *s_dead = sp_acquire_handle(sparks, NULL, &spark_dead_handle);
    check(s && s_dead, "sparks acquire");
    s->id = 42;
    check(sp_release(sparks, s_dead) == SP_OK, "sparks release");

    /* A pool whose tag has gone: its handle names no live pool. */
    sp_pool *gone = sp_pool_create(&(sp_desc){.name = "gone", .item_size = 8});
    void *gone_member = sp_acquire_handle(gone, NULL, &gone_handle);
    check(gone_member && sp_release(gone, gone_member) == SP_OK, "gone");
    sp_pool_destroy(gone);

    empty_pool = sp_pool_create(&(sp_desc){.name = "empty", .item_size = 16});

    /* A registry of two pools. */
    scene = sp_registry_create();
    check(scene && sp_registry_add(scene, "ui", &(sp_desc){.item_size = 32}) &&
              sp_registry_add(scene, "decals", &(sp_desc){.item_size = 64, .max = 100}),
          "registry");
    void *decal = sp_acquire(sp_registry_get(scene, "decals"));
    check(decal != NULL, "decal");

    /* A dense pool with a live and a removed element. */
    particles = sp_dense_create(&(sp_dense_desc){.name = "particles", .item_size = sizeof(enemy)});
    check(particles != NULL, "particles");
    enemy e1 = {.hp = 3, .x = 3.0f}, e2 = {.hp = 4, .x = 4.0f};
    particle_dead_handle = sp_dense_add_handle(particles, &e1);
    particle_handle = sp_dense_add_handle(particles, &e2);
    check(sp_dense_remove_handle(particles, particle_dead_handle) == SP_OK, "particle remove");

    sp_stats_get(enemies, &enemies_stats);
    sp_stats_get(bullets, &bullets_stats);
    sp_stats_get(sparks, &sparks_stats);
    sp_stats_get(empty_pool, &empty_stats);
    sp_stats_get(sp_registry_get(scene, "decals"), &decals_stats);
    sp_dense_stats_get(particles, &particles_stats);
    debugger_stop();

    sp_dense_destroy(particles);
    sp_registry_release(scene, decal);
    sp_registry_destroy(scene);
    sp_pool_destroy(empty_pool);
    sp_release(sparks, s);
    sp_release(sparks, thread_spark);
    sp_pool_destroy(sparks);
    sp_release(bullets, bullet_a);
    sp_release(bullets, bullet_b);
    sp_pool_destroy(bullets);
    sp_release(enemies, boss);
    sp_release(enemies, grunt);
    sp_release(enemies, scout);
    sp_pool_destroy(enemies);
    return 0;
}
