/* SPDX-License-Identifier: Zlib */
/* scene.c -- the arena's rules: who moves, who shoots, who hits whom, and when it is delivered.

   One step runs in three passes. Update moves every active entity and lets the player and the
   turrets fire. Collide finds bullet-enemy and enemy-player overlaps and queues them as events
   holding handles, changing nothing. Deliver applies the queue: a hit spends the bullet,
   wounds the enemy, and a kill bursts sparks and spawns the replacement enemy at once. That
   replacement usually takes the slot the dead enemy just left, so a later event in the same
   queue that still names the dead enemy would reach the newcomer if it held a pointer. It holds
   a handle, which no longer resolves: the event is dropped and counted. */
#include "scene.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Pool sizes by Little's law, N = spawn rate x lifetime x headroom:
   bullets: the player fires 3.3/s, each turret a 3-shot burst every 0.55 s, so about 14/s;
            most hit within 0.8 s (1.4 s at most): 14 x 0.8 x 1.5 = 17, rounded up to 32 for
            the moments when every shot misses. A refused shot is harmless (DROP).
   enemies: the wave is held at 10 and a kill respawns at once: 10 x 1.2 = 12.
   sparks:  10 shields, plus about 4 kills/s x 14 sparks x 0.6 s = 34 and 8 hits/s x 3 x
            0.6 s = 14: 58. Cosmetic, so sized for the average, not the burst: 64, and RECLAIM
            recycles the burst spark nearest its end when a burst overflows. */
#define BULLETS_MAX 32
#define ENEMIES_MAX 12
#define SPARKS_MAX 64
#define WAVE_SIZE 10         /* enemies kept on the field */
#define EVENTS_MAX 512
#define ENEMY_HP 2
#define ENEMY_SPEED 60.0f
#define BULLET_SPEED 420.0f
#define BULLET_LIFE 1.4f
#define TURRET_PERIOD 0.55f  /* s between bursts */
#define TURRET_RETARGET 0.3f /* s a turret idles after its target expired */
#define PLAYER_PERIOD 0.30f
#define SHIELD_ORBIT 22.0f

/* ---------------------------------------------------------------------------------------------
   Memory and log plumbing for the pools
   ------------------------------------------------------------------------------------------ */

/* The pools allocate through this so the scene can show that nothing is allocated once it has
   loaded: every member is built at load (initial = max). */
static void *scene_alloc(size_t size, size_t align, void *user)
{
    scene *s = (scene *)user;
    if (s->loaded) s->n.allocator_calls++;
    if (align <= _Alignof(max_align_t)) return malloc(size);
    return aligned_alloc(align, (size + align - 1) / align * align); /* ranges: a cache line */
}

static void scene_free(void *ptr, size_t size, void *user)
{
    (void)size;
    (void)user;
    free(ptr);
}

/* Pools log leaks and misuse; the scene counts the lines, and the test wants none. */
static void scene_log(sp_log_level level, const char *pool_name, const char *message, void *user)
{
    scene *s = (scene *)user;
    s->n.pool_warnings++;
    fprintf(stderr, "arena: %s pool '%s': %s\n", level == SP_LOG_ERROR ? "error" : "warning",
            pool_name, message);
}

/* ---------------------------------------------------------------------------------------------
   Entity list
   ------------------------------------------------------------------------------------------ */

bool scene_link(scene *s, entity *e)
{
    if (s->count == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 256;
        scene_node *list = (scene_node *)realloc(s->list, cap * sizeof *list);
        if (!list) return false;
        s->list = list;
        s->cap = cap;
    }
    e->scene_index = s->count;
    s->list[s->count++] = (scene_node){.e = e, .kind = e->kind, .pooled = e->pooled};
    s->live++;
    return true;
}

void scene_set_flags(scene *s, const entity *e, bool active, bool visible)
{
    if (e->scene_index == SIZE_MAX) return; /* never linked (out of memory at build) */
    s->list[e->scene_index].active = active;
    s->list[e->scene_index].visible = visible;
}

void scene_unlink(scene *s, entity *e)
{
    /* The node becomes a hole rather than being filled by the last one: moving a node would
       mean writing the moved entity's scene_index, and that entity may be a dormant member,
       whose memory the scene must not touch. Holes are skipped like dormant entities; entities
       are only unlinked when the scene is left, so they do not pile up. */
    s->list[e->scene_index] = (scene_node){0};
    s->live--;
    e->scene_index = SIZE_MAX;
}

/* ---------------------------------------------------------------------------------------------
   Spawning
   ------------------------------------------------------------------------------------------ */

static float scene_random(scene *s)
{
    /* xorshift32: deterministic per seed, so headless runs repeat exactly. */
    uint32_t x = s->rng;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    s->rng = x;
    return (float)(x >> 8) / 16777216.0f;
}

static entity *scene_spawn(scene *s, const char *pool, const entity_spawn *spawn)
{
    return (entity *)sp_spawn(s->registry, pool, spawn);
}

static void scene_spawn_enemy(scene *s)
{
    /* Enemies walk in from a random point on the border. */
    float u = scene_random(s), x, y;
    switch ((int)(scene_random(s) * 4.0f)) {
    case 0: x = u * SCENE_W, y = -20.0f; break;
    case 1: x = u * SCENE_W, y = SCENE_H + 20.0f; break;
    case 2: x = -20.0f, y = u * SCENE_H; break;
    default: x = SCENE_W + 20.0f, y = u * SCENE_H; break;
    }
    entity *e = scene_spawn(s, "enemies",
                            &(entity_spawn){.x = x, .y = y, .radius = 15.0f, .hp = ENEMY_HP,
                                            .rgba = 0xe0406cffu});
    if (!e) return;
    entity *shield = scene_spawn(s, "sparks",
                                 &(entity_spawn){.x = x, .y = y, .radius = 4.0f, .shield = true,
                                                 .rgba = 0x40e0ffffu, .parent = e});
    if (shield) {
        shield->angle = scene_random(s) * 6.2831853f;
        e->child = sp_handle_of(s->sparks, shield);
    }
}

static void scene_burst(scene *s, float x, float y, int count, uint32_t rgba)
{
    for (int i = 0; i < count; i++) {
        float a = scene_random(s) * 6.2831853f, v = 60.0f + scene_random(s) * 200.0f;
        float life = 0.35f + scene_random(s) * 0.5f;
        scene_spawn(s, "sparks",
                    &(entity_spawn){.x = x, .y = y, .vx = cosf(a) * v, .vy = sinf(a) * v,
                                    .radius = 2.5f, .life = life, .rgba = rgba});
    }
}

static void scene_fire(scene *s, float x, float y, float angle, uint32_t rgba)
{
    entity *b = scene_spawn(s, "bullets",
                            &(entity_spawn){.x = x, .y = y, .vx = cosf(angle) * BULLET_SPEED,
                                            .vy = sinf(angle) * BULLET_SPEED, .radius = 4.0f,
                                            .life = BULLET_LIFE, .rgba = rgba});
    if (b) s->n.shots++;
}

static entity *scene_nearest_enemy(scene *s, float x, float y)
{
    entity *best = NULL;
    float best_d = 1e30f;
    for (size_t i = 0; i < s->count; i++) {
        if (!s->list[i].active || s->list[i].kind != ENTITY_ENEMY) continue;
        entity *e = s->list[i].e;
        float dx = e->x - x, dy = e->y - y, d = dx * dx + dy * dy;
        if (d < best_d) best_d = d, best = e;
    }
    return best;
}

/* ---------------------------------------------------------------------------------------------
   Enter / leave
   ------------------------------------------------------------------------------------------ */

static sp_pool *scene_add_pool(scene *s, const char *name, size_t max, sp_overflow overflow,
                               sp_create_fn create, sp_priority_fn priority)
{
    return sp_registry_add(s->registry, name,
                           &(sp_desc){
                               .item_size = sizeof(entity),
                               .initial = max, /* prewarm: built at load, not on first use */
                               .max = max,
                               .overflow = overflow,
                               .create = create,
                               .on_acquire = entity_wake,
                               .on_release = entity_sleep,
                               .dispose = entity_dispose,
                               .priority = priority,
                               .user = s,
                               .allocator = {.alloc = scene_alloc, .free = scene_free, .user = s},
                               .logger = {scene_log, s},
                           });
}

bool scene_enter(scene *s, uint32_t seed, unsigned mistakes)
{
    memset(s, 0, sizeof *s);
    s->rng = seed ? seed : 1u;
    s->mistakes = mistakes;
    s->registry = sp_registry_create();
    s->events = (scene_event *)malloc(EVENTS_MAX * sizeof *s->events);
    if (!s->registry || !s->events) goto fail;
    s->event_cap = EVENTS_MAX;

    /* Bullets are dropped when all are in flight (a missed shot is harmless); sparks recycle
       the least visible burst spark, so the newest effects always show. */
    s->bullets = scene_add_pool(s, "bullets", BULLETS_MAX, SP_OVERFLOW_DROP, entity_bullet_create,
                                NULL);
    s->enemies = scene_add_pool(s, "enemies", ENEMIES_MAX, SP_OVERFLOW_DROP, entity_enemy_create,
                                NULL);
    s->sparks = scene_add_pool(s, "sparks", SPARKS_MAX, SP_OVERFLOW_RECLAIM, entity_spark_create,
                               (mistakes & SCENE_NO_SPARK_PRIORITY) ? NULL : entity_spark_priority);
    if (!s->bullets || !s->enemies || !s->sparks) goto fail;

    s->player = entity_create(s, ENTITY_PLAYER,
                              &(entity_spawn){.x = SCENE_W * 0.5f, .y = SCENE_H * 0.5f,
                                              .radius = 16.0f, .rgba = 0x70f070ffu});
    s->turrets[0] = entity_create(s, ENTITY_TURRET,
                                  &(entity_spawn){.x = 90.0f, .y = SCENE_H - 90.0f,
                                                  .radius = 20.0f, .rgba = 0xa0aac0ffu});
    s->turrets[1] = entity_create(s, ENTITY_TURRET,
                                  &(entity_spawn){.x = SCENE_W - 90.0f, .y = 110.0f,
                                                  .radius = 20.0f, .rgba = 0xa0aac0ffu});
    if (!s->player || !s->turrets[0] || !s->turrets[1]) goto fail;

    for (int i = 0; i < WAVE_SIZE; i++) scene_spawn_enemy(s);
    s->loaded = true;
    return true;

fail:
    scene_leave(s, NULL);
    return false;
}

void scene_leave(scene *s, scene_report *report)
{
    /* End every life the scene still has: active entities, and non-pooled ones however they
       are flagged (they are not owned by any pool, so nothing else would free them). */
    for (size_t i = 0; i < s->count; i++) {
        const scene_node *n = &s->list[i];
        if (n->e && (n->active || !n->pooled)) entity_destroy(n->e);
    }
    size_t leaked = 0;
    for (size_t i = 0; s->registry && i < sp_registry_count(s->registry); i++) {
        sp_stats st;
        sp_stats_get(sp_registry_pool_at(s->registry, i), &st);
        leaked += st.leased;
    }
    /* Destroying the registry destroys every pool; their dispose hooks unlink the members. */
    if (s->registry) sp_registry_destroy(s->registry);
    if (report) {
        report->leaked = leaked;
        report->list_left = s->live;
    }
    free(s->list);
    free(s->events);
    s->registry = NULL;
    s->list = NULL;
    s->events = NULL;
    s->count = s->cap = s->live = 0;
}

/* ---------------------------------------------------------------------------------------------
   Update
   ------------------------------------------------------------------------------------------ */

static void update_player(scene *s, entity *p, float dt)
{
    if (s->manual) {
        p->x = fminf(SCENE_W - 20.0f, fmaxf(20.0f, p->x + s->input_x * 240.0f * dt));
        p->y = fminf(SCENE_H - 20.0f, fmaxf(20.0f, p->y + s->input_y * 240.0f * dt));
    } else {
        /* Autopilot: a slow figure of eight through the middle of the arena. */
        p->x = SCENE_W * 0.5f + cosf(s->time * 0.45f) * 230.0f;
        p->y = SCENE_H * 0.5f + sinf(s->time * 0.9f) * 110.0f;
    }
    p->cooldown -= dt;
    entity *e = scene_nearest_enemy(s, p->x, p->y);
    if (e && p->cooldown <= 0.0f) {
        p->cooldown = PLAYER_PERIOD;
        scene_fire(s, p->x, p->y, atan2f(e->y - p->y, e->x - p->x), 0xb0ff90ffu);
    }
}

static void update_turret(scene *s, entity *t, float dt)
{
    t->cooldown -= dt;
    entity *target = (entity *)sp_resolve(s->enemies, t->target);
    if (!target && !sp_handle_is_null(t->target)) {
        /* The target's life ended (shot, or reached the player): stop aiming, idle a moment. */
        t->target = sp_handle_null();
        t->cooldown = TURRET_RETARGET;
        s->n.targets_expired++;
        return;
    }
    if (!target) {
        if (t->cooldown > 0.0f) return;
        target = scene_nearest_enemy(s, t->x, t->y);
        if (!target) return;
        t->target = sp_handle_of(s->enemies, target);
        s->n.targets_acquired++;
    }
    t->angle = atan2f(target->y - t->y, target->x - t->x);
    if (t->cooldown <= 0.0f) {
        t->cooldown = TURRET_PERIOD;
        /* A three-shot burst: the shots often arrive in the same step, so two of them hit an
           enemy that the first one kills. That is where stale events come from. */
        float c = cosf(t->angle), sn = sinf(t->angle);
        for (int k = -1; k <= 1; k++) {
            float ox = -sn * 7.0f * (float)k, oy = c * 7.0f * (float)k;
            scene_fire(s, t->x + c * 30.0f + ox, t->y + sn * 30.0f + oy, t->angle, 0xffd050ffu);
        }
    }
}

static void update_enemy(scene *s, entity *e, float dt)
{
    float dx = s->player->x - e->x, dy = s->player->y - e->y;
    float d = sqrtf(dx * dx + dy * dy) + 1e-3f;
    float wobble = sinf(s->time * 2.0f + (float)(e->serial % 7u)) * 0.6f;
    e->vx = (dx / d - dy / d * wobble) * ENEMY_SPEED;
    e->vy = (dy / d + dx / d * wobble) * ENEMY_SPEED;
    e->x += e->vx * dt;
    e->y += e->vy * dt;
    if (!sp_handle_is_null(e->child) && !sp_resolve(s->sparks, e->child)) {
        e->child = sp_handle_null();
        s->n.shields_lost++;
    }
}

static void update_spark(entity *e, float dt)
{
    if (e->shield) {
        /* Released together with its parent (entity_sleep), so the plain pointer is safe. */
        e->angle += 3.5f * dt;
        e->x = e->parent->x + cosf(e->angle) * SHIELD_ORBIT;
        e->y = e->parent->y + sinf(e->angle) * SHIELD_ORBIT;
        return;
    }
    e->vx *= 1.0f - 2.5f * dt;
    e->vy *= 1.0f - 2.5f * dt;
    e->x += e->vx * dt;
    e->y += e->vy * dt;
    e->life -= dt;
    if (e->life <= 0.0f) entity_destroy(e);
}

static void update_bullet(entity *e, float dt)
{
    e->x += e->vx * dt;
    e->y += e->vy * dt;
    e->life -= dt;
    if (e->life <= 0.0f || e->x < -20.0f || e->y < -20.0f || e->x > SCENE_W + 20.0f ||
        e->y > SCENE_H + 20.0f)
        entity_destroy(e);
}

/* ---------------------------------------------------------------------------------------------
   Collisions and events
   ------------------------------------------------------------------------------------------ */

static sp_pool *scene_pool_of(scene *s, const entity *e)
{
    return e->kind == ENTITY_BULLET ? s->bullets : e->kind == ENTITY_ENEMY ? s->enemies : s->sparks;
}

static void scene_queue(scene *s, scene_event_kind kind, entity *a, entity *b)
{
    if (s->event_count == s->event_cap) {
        s->n.events_overflowed++;
        return;
    }
    scene_event *ev = &s->events[s->event_count++];
    ev->kind = kind;
    ev->a = sp_handle_of(scene_pool_of(s, a), a);
    ev->a_ptr = a;
    ev->a_serial = a->serial;
    ev->b = b ? sp_handle_of(scene_pool_of(s, b), b) : sp_handle_null();
    ev->b_ptr = b;
    ev->b_serial = b ? b->serial : 0;
    s->n.events_queued++;
}

static bool overlaps(const entity *a, const entity *b)
{
    float dx = a->x - b->x, dy = a->y - b->y, r = a->radius + b->radius;
    return dx * dx + dy * dy < r * r;
}

/* Finds overlaps and queues them; changes nothing, so every pair sees the same world. */
static void scene_collide(scene *s)
{
    entity *bullets[BULLETS_MAX], *enemies[ENEMIES_MAX];
    size_t nb = 0, ne = 0;
    for (size_t i = 0; i < s->count; i++) {
        if (!s->list[i].active) continue; /* dormant members are out of collisions */
        entity *e = s->list[i].e;
        if (e->kind == ENTITY_BULLET && nb < BULLETS_MAX) bullets[nb++] = e;
        if (e->kind == ENTITY_ENEMY && ne < ENEMIES_MAX) enemies[ne++] = e;
    }
    for (size_t j = 0; j < ne; j++) {
        for (size_t i = 0; i < nb; i++)
            if (overlaps(bullets[i], enemies[j])) scene_queue(s, SCENE_EVENT_HIT, bullets[i], enemies[j]);
        if (overlaps(enemies[j], s->player)) scene_queue(s, SCENE_EVENT_CONTACT, enemies[j], NULL);
    }
}

static void scene_kill(scene *s, entity *enemy)
{
    scene_burst(s, enemy->x, enemy->y, 14, 0xff8a30ffu);
    entity_destroy(enemy); /* its shield goes with it, from entity_sleep */
    scene_spawn_enemy(s);  /* usually into the slot just freed: a new life, a new handle */
}

static void scene_deliver(scene *s)
{
    for (size_t i = 0; i < s->event_count; i++) {
        const scene_event *ev = &s->events[i];
        bool hit = ev->kind == SCENE_EVENT_HIT;
        entity *a = (entity *)sp_resolve(hit ? s->bullets : s->enemies, ev->a);
        entity *b = hit ? (entity *)sp_resolve(s->enemies, ev->b) : s->player;
        if ((!a || !b) && (s->mistakes & SCENE_TRUST_POINTERS)) {
            /* The mistake on purpose: a slot in use again is taken for the entity queued. */
            if (!a && sp_is_leased(hit ? s->bullets : s->enemies, ev->a_ptr)) a = ev->a_ptr;
            if (hit && !b && sp_is_leased(s->enemies, ev->b_ptr)) b = ev->b_ptr;
        }
        if (!a || !b) {
            /* Queued for a life that has ended since. Had the queue held pointers, the ones
               whose slot is leased again would now name a different entity. */
            s->n.stale_events_dropped++;
            if ((!a && sp_is_leased(hit ? s->bullets : s->enemies, ev->a_ptr)) ||
                (hit && !b && sp_is_leased(s->enemies, ev->b_ptr)))
                s->n.stale_pointer_reused++;
            continue;
        }
        if (a->serial != ev->a_serial || (hit && b->serial != ev->b_serial))
            s->n.stale_events_delivered++;
        s->n.events_delivered++;
        if (hit) {
            scene_burst(s, a->x, a->y, 3, 0xffe080ffu);
            entity_destroy(a);
            if (--b->hp <= 0) {
                s->n.kills++;
                scene_kill(s, b);
            }
        } else {
            s->n.contacts++;
            s->player_hit_flash = 0.25f;
            scene_kill(s, a);
        }
    }
    s->event_count = 0;
}

void scene_update(scene *s, float dt)
{
    s->time += dt;
    s->player_hit_flash = fmaxf(0.0f, s->player_hit_flash - dt);
    /* Index loop: spawning may append to the list (when a pool has to grow) and the list may
       move when it does; nothing is ever removed during play, so indices stay valid. */
    for (size_t i = 0; i < s->count; i++) {
        if (!s->list[i].active) continue; /* dormant members are out of updates */
        entity *e = s->list[i].e;
        switch (e->kind) {
        case ENTITY_PLAYER: update_player(s, e, dt); break;
        case ENTITY_TURRET: update_turret(s, e, dt); break;
        case ENTITY_ENEMY: update_enemy(s, e, dt); break;
        case ENTITY_SPARK: update_spark(e, dt); break;
        case ENTITY_BULLET: update_bullet(e, dt); break;
        }
    }
    scene_collide(s);
    scene_deliver(s);
}
