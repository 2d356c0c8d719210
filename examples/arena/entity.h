/* SPDX-License-Identifier: Zlib */
/* entity.h -- the arena's entities, and how they live in pools.

   Every entity has the same shape, whichever kind it is: that is what lets entity_destroy()
   take any of them. Bullets, enemies and sparks are pool members, built once when the scene
   loads and woken and put to sleep by the pool's hooks; the player and the turrets are
   ordinary malloc'd objects. The rest of the game does not care which is which: it reads the
   entity's `active` and `visible` flags and calls entity_destroy().

   The flags are kept in the scene's list (scene_node), not in the struct below: loops over
   the list then skip a dormant member without reading its memory. A free member belongs to its
   pool, and a debug build (SP_DEBUG) poisons it, so that any read through a stale pointer is
   reported; a flag inside the member would be exactly such a read. */
#ifndef ARENA_ENTITY_H
#define ARENA_ENTITY_H

#include <spawnpool.h>

#include <stdbool.h>
#include <stdint.h>

struct scene;

typedef enum entity_kind {
    ENTITY_PLAYER,
    ENTITY_TURRET,
    ENTITY_BULLET,
    ENTITY_ENEMY,
    ENTITY_SPARK
} entity_kind;

typedef struct entity {
    entity_kind kind;
    bool pooled;          /* a pool member: destroy releases it, otherwise destroy frees it */
    bool shield;          /* a spark orbiting an enemy (its child), not a burst spark */
    struct scene *scene;
    size_t scene_index;   /* its node in the scene's list, where its flags are */
    uint64_t serial;      /* which life this is, numbered by the scene; read only by the check
                             that no event reaches a life it was not queued for */
    float x, y, vx, vy;
    float radius;
    float life, life_max; /* seconds left and at spawn (bullets, sparks); 0: no limit */
    float angle;          /* barrel (turret) or orbit (shield spark) */
    float cooldown;       /* seconds until the next shot (turret, player) */
    int hp;
    uint32_t rgba;
    /* References. A shield spark dies with its enemy, so it may point at it plainly; an enemy's
       shield can also be reclaimed by the sparks pool on its own, and a turret's target dies
       whenever it is shot: those are handles, which stop resolving when that life ends. */
    struct entity *parent;
    sp_handle child;
    sp_handle target;
} entity;

/* What a spawn passes to the pool's on_acquire hook: the whole starting state of a life. */
typedef struct entity_spawn {
    float x, y, vx, vy;
    float radius;
    float life;
    int hp;
    uint32_t rgba;
    bool shield;
    entity *parent;
} entity_spawn;

/* Pool hooks, one set for every pooled kind; `user` is the scene. */
void entity_bullet_create(void *item, void *user);
void entity_enemy_create(void *item, void *user);
void entity_spark_create(void *item, void *user);
void entity_wake(void *item, const void *arg, void *user);
void entity_sleep(void *item, void *user);
void entity_dispose(void *item, void *user);
/* RECLAIM order for sparks: burst sparks closest to their end go first, shields last. */
double entity_spark_priority(const void *item, void *user);

/* A non-pooled entity (player, turret): malloc'd, linked into the scene, woken like a pooled
   one. @return NULL when out of memory. */
entity *entity_create(struct scene *s, entity_kind kind, const entity_spawn *spawn);

/* Ends an entity's life, whatever it is: a pool member goes back to its pool through the
   registry (its on_release hook puts it to sleep and takes its children with it); anything
   else is unlinked from the scene and freed. */
void entity_destroy(entity *e);

#endif /* ARENA_ENTITY_H */
