/* SPDX-License-Identifier: Zlib */
/* entity.c -- how an entity enters, leaves and re-enters play.

   The pool hooks are the whole lifecycle of a pooled entity: `create` links it into the scene
   once, `on_acquire` (entity_wake) starts a life from the spawn arguments, `on_release`
   (entity_sleep) ends it, and `dispose` unlinks it when the scene goes away. Non-pooled
   entities go through the same wake and sleep, so the game code cannot tell them apart. */
#include "entity.h"

#include "scene.h"

#include <stdlib.h>

/* Every pooled kind is built the same way; only the kind differs. The pool zeroed the memory,
   and so did scene_link for its node's flags: a built member is dormant until a spawn wakes it. */
static void entity_build(void *item, void *user, entity_kind kind)
{
    entity *e = (entity *)item;
    scene *s = (scene *)user;
    e->kind = kind;
    e->pooled = true;
    e->scene = s;
    /* Linked once, for every life the member will have: waking and sleeping only flip flags,
       which is much cheaper than adding to and removing from the scene on every shot. */
    if (!scene_link(s, e)) e->scene_index = SIZE_MAX;
}

void entity_bullet_create(void *item, void *user) { entity_build(item, user, ENTITY_BULLET); }
void entity_enemy_create(void *item, void *user) { entity_build(item, user, ENTITY_ENEMY); }
void entity_spark_create(void *item, void *user) { entity_build(item, user, ENTITY_SPARK); }

/* on_acquire: the start of a life. Everything a life reads is set here or in entity_sleep, so a
   recycled member carries nothing over from its previous life. */
void entity_wake(void *item, const void *arg, void *user)
{
    entity *e = (entity *)item;
    scene *s = (scene *)user;
    static const entity_spawn none = {0};
    const entity_spawn *sp = arg ? (const entity_spawn *)arg : &none;
    e->x = sp->x;
    e->y = sp->y;
    e->vx = sp->vx;
    e->vy = sp->vy;
    e->radius = sp->radius;
    e->life = e->life_max = sp->life;
    e->hp = sp->hp;
    e->rgba = sp->rgba;
    e->shield = sp->shield;
    e->parent = sp->parent;
    e->angle = 0.0f;
    e->cooldown = 0.0f;
    e->serial = ++s->next_serial;
    scene_set_flags(s, e, true, true);
}

/* on_release: the end of a life, on every path (destroy, RECLAIM, scene exit). */
void entity_sleep(void *item, void *user)
{
    entity *e = (entity *)item;
    scene *s = (scene *)user;
    scene_set_flags(s, e, false, false);
    /* Children end with their parent. The child is a handle because the sparks pool may have
       reclaimed the shield already; then it no longer resolves and there is nothing to do. */
    entity *child = (entity *)sp_resolve(s->sparks, e->child);
    if (child) entity_destroy(child);
    /* Drop every reference here rather than on the next wake: a dormant member must not keep
       a target or a parent "alive" in anyone's eyes, and nothing can follow them by mistake. */
    e->child = sp_handle_null();
    e->target = sp_handle_null();
    e->parent = NULL;
}

void entity_dispose(void *item, void *user)
{
    entity *e = (entity *)item;
    if (e->scene_index != SIZE_MAX) scene_unlink((scene *)user, e);
}

double entity_spark_priority(const void *item, void *user)
{
    const entity *e = (const entity *)item;
    (void)user;
    /* A shield is part of an enemy, a burst spark is decoration: when the pool is full, the
       burst spark with the least time left is the one nobody will miss. */
    return e->shield ? 1e9 : (double)e->life;
}

entity *entity_create(scene *s, entity_kind kind, const entity_spawn *spawn)
{
    entity *e = (entity *)calloc(1, sizeof *e);
    if (!e) return NULL;
    e->kind = kind;
    e->scene_index = SIZE_MAX;
    e->scene = s;
    if (!scene_link(s, e)) {
        free(e);
        return NULL;
    }
    entity_wake(e, spawn, s);
    return e;
}

void entity_destroy(entity *e)
{
    scene *s = e->scene;
    if (e->pooled) {
        /* Destroy is a release: the registry finds the member's pool, whose on_release hook
           (entity_sleep) does the rest. A refusal means a double destroy: count it. */
        if (sp_registry_release(s->registry, e) != SP_OK) s->n.destroy_errors++;
        return;
    }
    entity_sleep(e, s);
    scene_unlink(s, e);
    free(e);
}
