/* SPDX-License-Identifier: Zlib */
/* turret_sim.h -- the turret demo's simulation, shared by its SDL front end (turret.c) and the
   web page (web/): a turret fires projectiles from a pool that lives in one fixed buffer. No
   drawing here, and nothing that needs SDL. */
#ifndef TURRET_SIM_H
#define TURRET_SIM_H

#include <spawnpool.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SCREEN_W 960
#define SCREEN_H 540
#define FRAME_DT (1.0f / 60.0f)    /* fixed step: headless runs are deterministic */
#define SHOT_SPEED 520.0f          /* px/s */
#define SHOT_LIFETIME 1.5f         /* s; with 10 shots/s, Little's law says 15 in flight */
#define MUZZLE_X 112.0f
#define MUZZLE_Y 250.0f
#define BARREL_LEN 60.0f
#define MIN_SLOTS 1
#define MAX_SLOTS 64
#define FLASH_TIME 0.25f           /* s a drop or reclaim stays lit */

typedef struct projectile {
    float x, y, vx, vy;
    float age;      /* seconds since it left the muzzle, reset by every life */
    uint32_t slot;  /* which cube is this member's; set once when the member is built */
} projectile;

/* What on_acquire needs to start a projectile's life. */
typedef struct shot {
    float x, y, vx, vy;
} shot;

typedef enum policy { POLICY_DROP, POLICY_RECLAIM } policy;

typedef struct turret {
    /* the pool and the one buffer it lives in */
    sp_pool *pool;
    void *buffer;
    size_t buffer_bytes;
    size_t slots;
    uint32_t next_slot;        /* create hook numbering */
    /* controls */
    policy policy;
    float rate;                /* shots per second */
    /* simulation */
    float fire_acc;            /* fractional shots owed */
    float time;
    float aim;                 /* barrel angle, radians */
    float drop_flash;          /* > 0 while the red flash shows */
    float reclaim_flash;
    float cube_flash[MAX_SLOTS];
    /* counters */
    uint64_t shots_fired, shots_dropped, shots_reclaimed;
    uint64_t buffers_made;     /* the app's own allocations: one per pool size */
    uint64_t pool_rebuilds;
    uint64_t allocator_calls;  /* calls the pool made to its allocator (zeroed after start) */
} turret;

/* (Re)builds the pool in a fresh buffer of exactly the size it needs. Shots in flight are lost:
   a pool size change is a load-time decision, made at runtime only for the demo. */
bool turret_pool_build(turret *t, size_t slots);
/* Rebuilds the pool one slot bigger or smaller (delta +1 or -1) within MIN_SLOTS..MAX_SLOTS;
   counts a rebuild. @return false when nothing changed. */
bool turret_resize(turret *t, int delta);
void turret_update(turret *t, float dt);
/* Releases the shots in flight, destroys the pool and frees its buffer. */
void turret_fini(turret *t);

#endif /* TURRET_SIM_H */
