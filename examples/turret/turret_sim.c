/* SPDX-License-Identifier: Zlib */
/* The turret demo's simulation; see turret_sim.h. */
#include "turret_sim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Every call the pool makes to its allocator is counted (turret.allocator_calls). With `buffer`
   set the pool must never make one, and the HUD shows this number to prove it. */
static void *counting_alloc(size_t size, size_t align, void *user)
{
    ((turret *)user)->allocator_calls++;
    if (align <= _Alignof(max_align_t)) return malloc(size);
    return aligned_alloc(align, (size + align - 1) / align * align); /* ranges: a cache line */
}

static void counting_free(void *ptr, size_t size, void *user)
{
    (void)size;
    ((turret *)user)->allocator_calls++;
    free(ptr);
}

/* ---------------------------------------------------------------------------------------------
   Pool hooks
   ------------------------------------------------------------------------------------------ */

/* Runs once per member, at load: numbering members here is what lets the cube row show slots
   without knowing the pool's memory layout. */
static void projectile_create(void *item, void *user)
{
    turret *t = (turret *)user;
    ((projectile *)item)->slot = t->next_slot++;
}

/* Runs on every life, including a reclaimed member's next one: this is where the oldest
   projectile "reappears at the muzzle". */
static void projectile_fire(void *item, const void *arg, void *user)
{
    projectile *p = (projectile *)item;
    const shot *s = (const shot *)arg;
    (void)user;
    p->x = s->x;
    p->y = s->y;
    p->vx = s->vx;
    p->vy = s->vy;
    p->age = 0.0f;
}

/* ---------------------------------------------------------------------------------------------
   Pool setup: one buffer, every member built at load
   ------------------------------------------------------------------------------------------ */

static sp_desc turret_pool_desc(turret *t, size_t slots)
{
    return (sp_desc){
        .name = "projectiles",
        .item_size = sizeof(projectile),
        .initial = slots,       /* build every member now: nothing is built mid-fight */
        .max = slots,
        /* DROP is the pool's policy; RECLAIM mode asks for it per shot with sp_acquire_force,
           so R switches policy without rebuilding the pool or losing shots in flight. */
        .overflow = SP_OVERFLOW_DROP,
        /* ...and a forced shot should recycle the oldest one in flight, which only a pool that
           keeps acquisition order knows (a DROP pool defaults to memory order). */
        .order = SP_ORDER_ACQUISITION,
        .create = projectile_create,
        .on_acquire = projectile_fire,
        .user = t,
        .allocator = {.alloc = counting_alloc, .free = counting_free, .user = t},
    };
}

bool turret_pool_build(turret *t, size_t slots)
{
    if (t->pool) {
        sp_release_all(t->pool);    /* shots in flight end here, they do not leak */
        sp_pool_destroy(t->pool);
    }
    free(t->buffer);
    t->pool = NULL;
    t->buffer = NULL;
    t->next_slot = 0;

    sp_desc desc = turret_pool_desc(t, slots);
    size_t bytes = sp_buffer_size(&desc, slots);
    void *buffer = bytes ? malloc(bytes) : NULL;
    if (!buffer) return false;
    desc.buffer = buffer;
    desc.buffer_size = bytes;
    t->pool = sp_pool_create(&desc);
    if (!t->pool) {
        free(buffer);
        return false;
    }
    t->buffer = buffer;
    t->buffer_bytes = bytes;
    t->slots = slots;
    t->buffers_made++;
    memset(t->cube_flash, 0, sizeof t->cube_flash);
    return true;
}

/* ---------------------------------------------------------------------------------------------
   Update
   ------------------------------------------------------------------------------------------ */

static void turret_fire(turret *t)
{
    float c = cosf(t->aim), s = sinf(t->aim);
    shot sh = {MUZZLE_X + c * BARREL_LEN, MUZZLE_Y + s * BARREL_LEN, c * SHOT_SPEED,
               s * SHOT_SPEED};
    sp_stats before, after;
    sp_stats_get(t->pool, &before);
    projectile *p = (projectile *)(t->policy == POLICY_DROP ? sp_acquire_with(t->pool, &sh)
                                                             : sp_acquire_force(t->pool, &sh));
    sp_stats_get(t->pool, &after);
    if (!p) {
        t->shots_dropped++;
        t->drop_flash = FLASH_TIME;
        return;
    }
    t->shots_fired++;
    if (after.reclaimed != before.reclaimed) {
        t->shots_reclaimed++;
        t->reclaim_flash = FLASH_TIME;
        if (p->slot < MAX_SLOTS) t->cube_flash[p->slot] = FLASH_TIME * 2.0f;
    }
}

void turret_update(turret *t, float dt)
{
    t->time += dt;
    /* The barrel sweeps slowly so the shots fan out and each one can be followed. */
    t->aim = 0.22f * sinf(t->time * 1.1f) - 0.04f;

    t->fire_acc += t->rate * dt;
    while (t->fire_acc >= 1.0f) {
        t->fire_acc -= 1.0f;
        turret_fire(t);
    }

    for (void *it = sp_first(t->pool), *next; it; it = next) {
        next = sp_next(t->pool, it);    /* taken first: releasing `it` is then safe */
        projectile *p = (projectile *)it;
        p->x += p->vx * dt;
        p->y += p->vy * dt;
        p->age += dt;
        if (p->age >= SHOT_LIFETIME) sp_release(t->pool, p);
    }

    t->drop_flash = fmaxf(0.0f, t->drop_flash - dt);
    t->reclaim_flash = fmaxf(0.0f, t->reclaim_flash - dt);
    for (size_t i = 0; i < MAX_SLOTS; i++) t->cube_flash[i] = fmaxf(0.0f, t->cube_flash[i] - dt);
}

bool turret_resize(turret *t, int delta)
{
    if (delta > 0 && t->slots >= MAX_SLOTS) return false;
    if (delta < 0 && t->slots <= MIN_SLOTS) return false;
    size_t slots = delta > 0 ? t->slots + 1 : t->slots - 1;
    if (!turret_pool_build(t, slots)) return false;
    t->pool_rebuilds++;
    return true;
}

void turret_fini(turret *t)
{
    if (t->pool) {
        sp_release_all(t->pool);
        sp_pool_destroy(t->pool);
    }
    free(t->buffer);
    t->pool = NULL;
    t->buffer = NULL;
}
