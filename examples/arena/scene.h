/* SPDX-License-Identifier: Zlib */
/* scene.h -- a small scene layer on top of spawnpool's registry.

   A scene owns one sp_registry holding its three pools (bullets, enemies, sparks), a list of
   every entity built for it (pool members are linked once, when the pool builds them, and
   stay linked while dormant; the hooks flip their flags instead), and a queue of collision
   events. Events carry handles and are delivered after the collision pass: by then a bullet
   may already be spent and its slot reused, and the handle is how the queue notices.

   Leaving the scene ends every entity, reports what was still leased (a leak) and destroys
   the registry with every pool in it. */
#ifndef ARENA_SCENE_H
#define ARENA_SCENE_H

#include "entity.h"

#include <spawnpool.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SCENE_W 960.0f
#define SCENE_H 540.0f
#define SCENE_TURRETS 2

typedef enum scene_event_kind {
    SCENE_EVENT_HIT,     /* a: bullet, b: enemy */
    SCENE_EVENT_CONTACT  /* a: enemy that reached the player */
} scene_event_kind;

/* One entry of the scene's list per entity built for it, dormant pool members included. */
typedef struct scene_node {
    entity *e;
    entity_kind kind;  /* copied here so loops can filter without reading the entity */
    bool pooled;
    bool active;       /* takes part in updates and collisions (set by entity_wake/entity_sleep) */
    bool visible;      /* is drawn (same) */
} scene_node;

typedef struct scene_event {
    scene_event_kind kind;
    sp_handle a, b;
    /* What a queue of plain pointers would have held, and the lives it meant: only the counters
       below read these, to show what pointers would have got wrong. */
    entity *a_ptr, *b_ptr;
    uint64_t a_serial, b_serial;
} scene_event;

typedef struct scene_counters {
    uint64_t events_queued;
    uint64_t events_delivered;
    uint64_t stale_events_dropped;   /* a handle had expired: the event was for a past life */
    uint64_t stale_events_delivered; /* an event reached a life it was not queued for: must be 0 */
    uint64_t stale_pointer_reused;   /* dropped events whose pointer already held a new life:
                                        a pointer queue would have hit the wrong entity */
    uint64_t events_overflowed;
    uint64_t kills, contacts, shots;
    uint64_t targets_acquired, targets_expired;
    uint64_t shields_lost;           /* shields the sparks pool reclaimed before their enemy died */
    uint64_t destroy_errors;         /* entity_destroy that the registry refused: must be 0 */
    uint64_t pool_warnings;          /* lines the pools logged (leaks, misuse): must be 0 */
    uint64_t allocator_calls;        /* pool allocator calls since the scene finished loading */
} scene_counters;

/* Two mistakes the scene can make on purpose, to show what its design prevents (docs/guide.md,
   section 10): deliver an event through its plain pointer when the handle has expired but the
   slot is in use again, and give the sparks pool no priority hook (it then reclaims its oldest
   sparks, the shields). */
typedef enum scene_mistakes {
    SCENE_TRUST_POINTERS = 1u << 0,
    SCENE_NO_SPARK_PRIORITY = 1u << 1,
} scene_mistakes;

typedef struct scene {
    sp_registry *registry;
    sp_pool *bullets, *enemies, *sparks; /* looked up once: the registry owns them */
    scene_node *list;                    /* every entity built for the scene, dormant included */
    size_t count, cap;                   /* nodes used (holes included) and allocated */
    size_t live;                         /* linked entities */
    entity *player;
    entity *turrets[SCENE_TURRETS];
    scene_event *events;
    size_t event_count, event_cap;
    uint64_t next_serial;
    uint32_t rng;
    float time;
    float player_hit_flash;
    bool manual;                         /* the keyboard drives the player */
    float input_x, input_y;
    bool loaded;                         /* allocator calls are counted from here on */
    unsigned mistakes;                   /* scene_mistakes made on purpose (none: 0) */
    scene_counters n;
} scene;

typedef struct scene_report {
    size_t leaked;      /* members still leased when the registry was destroyed */
    size_t list_left;   /* entities the scene still listed after that: should be 0 */
} scene_report;

/* Builds the registry and its pools (every member built now, at load), the player, the
   turrets and the first wave; `mistakes` is 0 or scene_mistakes to make on purpose.
   @return false when out of memory (everything undone). */
bool scene_enter(scene *s, uint32_t seed, unsigned mistakes);

/* One fixed step: movement, firing, collisions into the queue, then the queue delivered. */
void scene_update(scene *s, float dt);

/* Ends every entity, counts leaks, destroys the registry and frees the scene's memory. */
void scene_leave(scene *s, scene_report *report);

/* For entity.c: the scene's entity list. Linking fails only when out of memory. */
bool scene_link(scene *s, entity *e);
void scene_unlink(scene *s, entity *e);
/* Sets an entity's flags (in its node). */
void scene_set_flags(scene *s, const entity *e, bool active, bool visible);

#endif /* ARENA_SCENE_H */
