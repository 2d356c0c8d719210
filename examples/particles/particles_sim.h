/* SPDX-License-Identifier: Zlib */
/* particles_sim.h -- the particles demo's simulation and its software framebuffer, shared by
   its SDL and terminal front ends (particles.c) and the web page (web/). Nothing here needs
   SDL: sparks live in an sp_dense pool, and pt_fb_draw adds them into an XRGB image. */
#ifndef PARTICLES_SIM_H
#define PARTICLES_SIM_H

#include <spawnpool_dense.h>

#include <stddef.h>
#include <stdint.h>

#define PT_W 960
#define PT_H 540
#define PT_DT (1.0f / 60.0f)     /* fixed step: headless runs are reproducible */
#define PT_LIFE_MIN 1.5f
#define PT_LIFE_MAX 2.5f
#define PT_GRAVITY 420.0f        /* pixels / s^2 */
#define PT_EMITTERS 3
#define PT_TRACKED 6

/* 24 bytes: five floats of state and a serial that names the spark (the tracker checks that a
   handle finds the same serial it was taken for). */
typedef struct spark {
    float x, y, vx, vy, life;
    uint32_t serial;
} spark;

/* Counts the allocator's calls, to show they stop once the pool is built. */
typedef struct pt_alloc_count {
    unsigned long long calls;
} pt_alloc_count;

typedef struct pt_sim {
    sp_dense *sparks;
    pt_alloc_count allocs;
    unsigned long long allocs_after_create;
    double rate, spawn_debt;
    uint32_t rng, next_serial;
    unsigned long long moves;          /* on_move calls: sparks shifted by swap-removes */
    sp_handle tracked[PT_TRACKED];
    uint32_t tracked_serial[PT_TRACKED];
    unsigned long long tracked_checks, tracked_wrong, tracked_lost;
    unsigned long long frame;
} pt_sim;

/* Creates the pool for `rate` sparks per second, capped at `cap` (0: Little's law, rate x mean
   life x 1.25), built at load. @return 0, or -1 when the pool cannot be created. */
int pt_sim_init(pt_sim *s, double rate, size_t cap, sp_overflow policy, unsigned seed);
void pt_sim_fini(pt_sim *s);
/* One PT_DT step in a w x h field: spawn, integrate (swap-removing spent sparks), follow the
   tracked handles. */
void pt_step(pt_sim *s, int w, int h);

/* The software framebuffer: PT_W x PT_H XRGB pixels (0x00RRGGBB). */
typedef struct pt_fb {
    uint32_t *pixels;
    uint32_t *background; /* drawn once, copied into pixels at the start of every frame */
    uint32_t palette[PT_EMITTERS][64]; /* by emitter and remaining life */
} pt_fb;

/* @return 0, or -1 when out of memory (then nothing is held). */
int pt_fb_init(pt_fb *g);
void pt_fb_fini(pt_fb *g);
/* Draws the sparks (added, so crowds glow) and boxes around the tracked ones. */
void pt_fb_draw(pt_fb *g, const pt_sim *s);

#endif /* PARTICLES_SIM_H */
