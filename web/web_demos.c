/* SPDX-License-Identifier: Zlib */
/* web_demos.c -- the fountain, turret and particles demos on a web page.

   The simulations are the desktop demos' own (examples/fountain/fountain_sim.c,
   examples/turret/turret_sim.c, examples/particles/particles_sim.c); this file is only their
   web front end: each demo draws into an RGBA framebuffer (web_gfx) that web/demos.js puts on a
   canvas, and fills an array of counters that the page shows beside it. Emscripten's SDL2 port
   is not needed (it is downloaded at build time, which a packaged build cannot do).

   Every export is `web_<demo>_<verb>`; the JS glue calls them through Module._web_...
   Keys are passed as ASCII: 'u' up, 'd' down, '+', '-', 'p' policy, 'r' drop/reclaim, 'c'
   clear, ' ' pause. */
#include <emscripten.h>

#include "fountain_sim.h"
#include "particles_sim.h"
#include "turret_sim.h"
#include "web_gfx.h"

#include <math.h>
#include <string.h>

#define WEB_W 960
#define WEB_H 540

/* =============================================================================================
   Fountain: one fountain twice, pooled on the left, malloc/free per spark on the right
   ========================================================================================== */
#define WF_PANEL_W (WEB_W / 2)
#define WF_FLOOR 470.0f
#define WF_PX_PER_M 58.0f
#define WF_HEAT 16
#define WF_GRAPH_Y 492
#define WF_GRAPH_H 40

/* Counter slots, per side (base = side * WF_SIDE_N) and then for the whole demo. */
enum {
    WF_LIVE, WF_FREE, WF_SIZE, WF_PEAK, WF_MAX, WF_CREATED, WF_ALLOC_CALLS, WF_DROPPED,
    WF_RECLAIMED, WF_GROWN, WF_UPDATE_MS, WF_P99_MS, WF_STEADY_CALLS, WF_SIDE_N
};
enum { WF_RATE = 2 * WF_SIDE_N, WF_CAP, WF_POLICY, WF_WARM, WF_FRAMES, WF_LOG_LINES, WF_N };

static struct {
    fs_sim sim;
    bool running;
    wg_image im;
    wg_rgb heat[WF_HEAT];
    double counters[WF_N];
} wf;

static void wf_heat_init(void) {
    /* white-hot at launch, then yellow, orange, red, and a dim ember at the end of life */
    static const wg_rgb stops[5] = {
        {255, 245, 220}, {255, 215, 90}, {255, 140, 35}, {215, 55, 20}, {90, 22, 12}};
    for (int i = 0; i < WF_HEAT; i++) {
        float f = (float)i / (WF_HEAT - 1) * 4.0f;
        int k = f >= 4.0f ? 3 : (int)f;
        wf.heat[i] = wg_mix(stops[k], stops[k + 1], f - (float)k);
    }
}

EMSCRIPTEN_KEEPALIVE int web_fountain_start(double rate, int policy) {
    if (wf.running) fs_sim_fini(&wf.sim);
    wf.running = false;
    if (!wf.im.pixels && wg_init(&wf.im, WEB_W, WEB_H) != 0) return 0;
    wf_heat_init();
    fs_config cfg = {.rate = rate, .policy = (sp_overflow)policy, .seed = 1};
    if (!fs_sim_init(&wf.sim, &cfg)) {
        fs_sim_fini(&wf.sim);
        return 0;
    }
    wf.running = true;
    return 1;
}

typedef struct wf_batch {
    float origin_x;
} wf_batch;

/* A spark is a bright head and a two-step tail along its velocity, added so crowds glow. */
static void wf_spark(const fs_spark *s, void *user) {
    const wf_batch *b = user;
    int heat = (int)(s->age / s->life * (WF_HEAT - 1) + 0.5f);
    heat = heat < 0 ? 0 : heat >= WF_HEAT ? WF_HEAT - 1 : heat;
    int tail = heat + 2 < WF_HEAT ? heat + 2 : WF_HEAT - 1;
    float sx = b->origin_x + s->x * WF_PX_PER_M, sy = WF_FLOOR - s->y * WF_PX_PER_M;
    float tx = s->vx * WF_PX_PER_M * 0.010f, ty = -s->vy * WF_PX_PER_M * 0.010f;
    wg_rect_add(&wf.im, (int)sx - 1, (int)sy - 1, 3, 3, wf.heat[heat], 0.6f);
    wg_rect_add(&wf.im, (int)(sx - tx) - 1, (int)(sy - ty) - 1, 2, 2, wf.heat[tail], 0.6f);
    wg_rect_add(&wf.im, (int)(sx - 2 * tx) - 1, (int)(sy - 2 * ty) - 1, 2, 2, wf.heat[tail], 0.6f);
}

/* Allocator calls in each of the last 120 frames, as bars: on the pooled side, an empty box. */
static void wf_graph(const fs_counters *c, float x, wg_rgb accent, unsigned top) {
    float w = 360.0f, bar = w / 120.0f;
    wg_rect(&wf.im, x, WF_GRAPH_Y, w, WF_GRAPH_H, (wg_rgb){12, 14, 22}, 1.0f);
    wg_rect(&wf.im, x, WF_GRAPH_Y + WF_GRAPH_H, w, 1, (wg_rgb){70, 78, 100}, 1.0f);
    for (int i = 0; i < 120; i++) {
        unsigned v = c->calls_hist[i];
        if (!v) continue;
        float h = (float)WF_GRAPH_H * (float)(v > top ? top : v) / (float)top;
        wg_rect(&wf.im, x + (float)i * bar, WF_GRAPH_Y + WF_GRAPH_H - h, bar - 0.5f, h, accent, 0.9f);
    }
}

static void wf_draw(const fs_counters c[FS_SIDES]) {
    static const wg_rgb accent[FS_SIDES] = {{70, 220, 255}, {255, 150, 60}};
    wg_vgradient(&wf.im, (wg_rgb){10, 12, 24}, (wg_rgb){24, 26, 44});
    unsigned top = 8;
    for (int side = 0; side < FS_SIDES; side++)
        for (int i = 0; i < 120; i++)
            if (c[side].calls_hist[i] > top) top = c[side].calls_hist[i];
    for (int side = 0; side < FS_SIDES; side++) {
        float x0 = (float)(side * WF_PANEL_W);
        wf_batch b = {x0 + WF_PANEL_W / 2.0f};
        fs_sim_each(&wf.sim, side, wf_spark, &b);
        float half = FS_WORLD_HALF_W * WF_PX_PER_M;
        wg_rect(&wf.im, b.origin_x - half, WF_FLOOR + 1, 2 * half, 8, (wg_rgb){25, 70, 120}, 1.0f);
        wg_rect(&wf.im, b.origin_x - half, WF_FLOOR + 1, 2 * half, 2, (wg_rgb){50, 120, 190}, 1.0f);
        wg_rect(&wf.im, b.origin_x - 5, WF_FLOOR - 20, 10, 21, (wg_rgb){110, 120, 140}, 1.0f);
        wg_rect(&wf.im, b.origin_x - 9, WF_FLOOR - 22, 18, 4, (wg_rgb){110, 120, 140}, 1.0f);
        wg_rect(&wf.im, x0, 0, WF_PANEL_W, 3, accent[side], 1.0f);
        wf_graph(&c[side], x0 + 60.0f, accent[side], top);
    }
    wg_rect(&wf.im, WF_PANEL_W - 1, 0, 2, WEB_H, (wg_rgb){60, 66, 90}, 1.0f);
}

static void wf_fill_counters(const fs_counters c[FS_SIDES]) {
    for (int side = 0; side < FS_SIDES; side++) {
        double *o = wf.counters + side * WF_SIDE_N;
        fs_result r;
        fs_sim_result(&wf.sim, side, &r);
        o[WF_LIVE] = (double)c[side].live;
        o[WF_FREE] = (double)c[side].free;
        o[WF_SIZE] = (double)c[side].size;
        o[WF_PEAK] = (double)c[side].peak;
        o[WF_MAX] = (double)c[side].max;
        o[WF_CREATED] = (double)c[side].created;
        o[WF_ALLOC_CALLS] = (double)c[side].alloc_calls;
        o[WF_DROPPED] = (double)c[side].dropped;
        o[WF_RECLAIMED] = (double)c[side].reclaimed;
        o[WF_GROWN] = (double)c[side].grown;
        o[WF_UPDATE_MS] = c[side].frame_ms;
        o[WF_P99_MS] = c[side].p99_ms;
        o[WF_STEADY_CALLS] = (double)r.steady_alloc_calls;
    }
    wf.counters[WF_RATE] = wf.sim.cfg.rate;
    wf.counters[WF_CAP] = (double)wf.sim.cfg.cap;
    wf.counters[WF_POLICY] = (double)wf.sim.cfg.policy;
    wf.counters[WF_WARM] = wf.sim.warm;
    wf.counters[WF_FRAMES] = (double)wf.sim.frame;
    wf.counters[WF_LOG_LINES] = wf.sim.log_lines;
}

/* One 1/60 s step, drawn. @return the framebuffer, or NULL before a successful start. */
EMSCRIPTEN_KEEPALIVE uint32_t *web_fountain_frame(void) {
    if (!wf.running) return NULL;
    fs_sim_step(&wf.sim);
    fs_counters c[FS_SIDES];
    for (int side = 0; side < FS_SIDES; side++) fs_sim_counters(&wf.sim, side, &c[side]);
    wf_draw(c);
    wf_fill_counters(c);
    return wf.im.pixels;
}

EMSCRIPTEN_KEEPALIVE const double *web_fountain_counters(void) { return wf.counters; }

/* The desktop window's keys: up/down spawn rate, +/- pool cap, p next policy (the pool is
   rebuilt: the policy is fixed when a pool is created). @return 1 when the key did something. */
EMSCRIPTEN_KEEPALIVE int web_fountain_key(int key) {
    if (!wf.running) return 0;
    fs_sim *sim = &wf.sim;
    switch (key) {
    case 'u': fs_sim_set_rate(sim, fmin(50000.0, sim->cfg.rate * 1.25)); return 1;
    case 'd': fs_sim_set_rate(sim, fmax(50.0, sim->cfg.rate / 1.25)); return 1;
    case '+': fs_sim_set_cap(sim, (size_t)ceil((double)sim->cfg.cap * 1.25)); return 1;
    case '-': fs_sim_set_cap(sim, (size_t)((double)sim->cfg.cap / 1.25)); return 1;
    case 'p': return fs_sim_set_policy(sim, (sp_overflow)((sim->cfg.policy + 1) % 3));
    default: return 0;
    }
}

/* =============================================================================================
   Turret: a fixed-buffer pool, one cube per member
   ========================================================================================== */
enum {
    WT_SLOTS, WT_POLICY, WT_RATE, WT_LEASED, WT_FREE, WT_PEAK, WT_FIRED, WT_DROPPED, WT_RECLAIMED,
    WT_BUILT, WT_BUFFER_BYTES, WT_ALLOC_CALLS, WT_REBUILDS, WT_N
};

static struct {
    turret t;
    bool running;
    wg_image im;
    double counters[WT_N];
} wt;

static const wg_rgb WT_USED = {0, 210, 230}, WT_FREE_C = {92, 98, 110}, WT_SHOT = {255, 150, 40},
                    WT_DROP = {235, 50, 50}, WT_RECLAIM = {255, 230, 120};

EMSCRIPTEN_KEEPALIVE int web_turret_start(int slots, double rate, int reclaim) {
    if (wt.running) turret_fini(&wt.t);
    wt.running = false;
    if (!wt.im.pixels && wg_init(&wt.im, WEB_W, WEB_H) != 0) return 0;
    memset(&wt.t, 0, sizeof wt.t);
    wt.t.policy = reclaim ? POLICY_RECLAIM : POLICY_DROP;
    wt.t.rate = (float)rate;
    if (!turret_pool_build(&wt.t, (size_t)slots)) return 0;
    wt.t.allocator_calls = 0; /* from here on, the pool's allocator must stay silent */
    wt.running = true;
    return 1;
}

static void wt_cube(float x, float y, float size, wg_rgb face) {
    float d = size * 0.28f;
    wg_rgb top = wg_mix(face, (wg_rgb){255, 255, 255}, 0.35f);
    wg_rgb side = wg_mix(face, (wg_rgb){0, 0, 0}, 0.35f);
    for (int i = 0; i < (int)d; i++) { /* the top and right faces, a row of pixels at a time */
        wg_rect(&wt.im, x + (float)i + 1, y - (float)i - 1, size, 1, top, 1.0f);
        wg_rect(&wt.im, x + size + (float)i, y - (float)i - 1, 1, size, side, 1.0f);
    }
    wg_rect(&wt.im, x, y, size, size, face, 1.0f);
}

static void wt_draw(void) {
    const turret *t = &wt.t;
    wg_vgradient(&wt.im, (wg_rgb){18, 22, 34}, (wg_rgb){30, 36, 52});
    wg_rect(&wt.im, 0, MUZZLE_Y + 62.0f, WEB_W, 2, (wg_rgb){48, 56, 74}, 1.0f);
    /* projectiles, fading out over the last fifth of their life */
    for (const void *it = sp_first(t->pool); it; it = sp_next(t->pool, it)) {
        const projectile *p = it;
        float a = fmaxf(0.0f, fminf(1.0f, (SHOT_LIFETIME - p->age) / (SHOT_LIFETIME * 0.2f)));
        wg_line(&wt.im, p->x - p->vx * 0.05f, p->y - p->vy * 0.05f, p->x, p->y, 4.0f, WT_SHOT, 0.0f,
                a * 0.5f);
        wg_disc(&wt.im, p->x, p->y, 18.0f, WT_SHOT, a / 3.0f, 0.0f);
        wg_disc(&wt.im, p->x, p->y, 6.0f, (wg_rgb){255, 235, 190}, a, a * 0.6f);
    }
    /* the turret: a halo when a shot is refused (red) or recycled (yellow), base, barrel */
    if (t->drop_flash > 0.0f)
        wg_disc(&wt.im, MUZZLE_X, MUZZLE_Y, 70.0f, WT_DROP, 0.8f * t->drop_flash / FLASH_TIME, 0);
    if (t->reclaim_flash > 0.0f)
        wg_disc(&wt.im, MUZZLE_X, MUZZLE_Y, 60.0f, WT_RECLAIM,
                0.45f * t->reclaim_flash / FLASH_TIME, 0);
    wg_line(&wt.im, MUZZLE_X, MUZZLE_Y, MUZZLE_X + cosf(t->aim) * BARREL_LEN,
            MUZZLE_Y + sinf(t->aim) * BARREL_LEN, 14.0f, (wg_rgb){150, 160, 178}, 1.0f, 1.0f);
    wg_disc(&wt.im, MUZZLE_X, MUZZLE_Y, 30.0f, (wg_rgb){110, 118, 134}, 1.0f, 1.0f);
    wg_disc(&wt.im, MUZZLE_X, MUZZLE_Y, 24.0f, (wg_rgb){70, 78, 92}, 1.0f, 1.0f);
    wg_rect(&wt.im, MUZZLE_X - 40.0f, MUZZLE_Y + 26.0f, 80.0f, 36.0f, (wg_rgb){40, 44, 54}, 1.0f);
    /* the pool's members, one cube each: cyan leased, grey free, yellow just reclaimed */
    bool used[MAX_SLOTS] = {false};
    for (const void *it = sp_first(t->pool); it; it = sp_next(t->pool, it)) {
        uint32_t slot = ((const projectile *)it)->slot;
        if (slot < MAX_SLOTS) used[slot] = true;
    }
    const size_t per_row = t->slots < 32 ? t->slots : 32;
    const size_t rows = (t->slots + per_row - 1) / per_row;
    float pitch = fminf(48.0f, (WEB_W - 120.0f) / (float)per_row), size = pitch * 0.72f;
    float top = 430.0f - (float)(rows - 1) * pitch, left = (WEB_W - pitch * (float)per_row) * 0.5f;
    if (t->drop_flash > 0.0f)
        wg_rect(&wt.im, left - 10.0f, top - size * 0.28f - 10.0f, pitch * (float)per_row + 14.0f,
                (float)(rows - 1) * pitch + size * 1.28f + 20.0f, WT_DROP,
                0.8f * t->drop_flash / FLASH_TIME);
    for (size_t i = 0; i < t->slots; i++) {
        wg_rgb face = used[i] ? WT_USED : WT_FREE_C;
        if (t->cube_flash[i] > 0.0f)
            face = wg_mix(face, WT_RECLAIM, t->cube_flash[i] / (FLASH_TIME * 2.0f));
        wt_cube(left + (float)(i % per_row) * pitch, top + (float)(i / per_row) * pitch, size, face);
    }
}

EMSCRIPTEN_KEEPALIVE uint32_t *web_turret_frame(void) {
    if (!wt.running) return NULL;
    turret_update(&wt.t, FRAME_DT);
    wt_draw();
    sp_stats st;
    sp_stats_get(wt.t.pool, &st);
    double *o = wt.counters;
    o[WT_SLOTS] = (double)wt.t.slots;
    o[WT_POLICY] = wt.t.policy == POLICY_RECLAIM;
    o[WT_RATE] = wt.t.rate;
    o[WT_LEASED] = (double)st.leased;
    o[WT_FREE] = (double)st.free;
    o[WT_PEAK] = (double)st.peak_leased;
    o[WT_FIRED] = (double)wt.t.shots_fired;
    o[WT_DROPPED] = (double)wt.t.shots_dropped;
    o[WT_RECLAIMED] = (double)wt.t.shots_reclaimed;
    o[WT_BUILT] = (double)st.created;
    o[WT_BUFFER_BYTES] = (double)wt.t.buffer_bytes;
    o[WT_ALLOC_CALLS] = (double)wt.t.allocator_calls;
    o[WT_REBUILDS] = (double)wt.t.pool_rebuilds;
    return wt.im.pixels;
}

EMSCRIPTEN_KEEPALIVE const double *web_turret_counters(void) { return wt.counters; }

/* The desktop keys: up/down fire rate, +/- pool size (rebuilt in a new buffer), r DROP/RECLAIM. */
EMSCRIPTEN_KEEPALIVE int web_turret_key(int key) {
    if (!wt.running) return 0;
    turret *t = &wt.t;
    switch (key) {
    case 'u': t->rate = fminf(60.0f, t->rate + 1.0f); return 1;
    case 'd': t->rate = fmaxf(1.0f, t->rate - 1.0f); return 1;
    case 'r': t->policy = t->policy == POLICY_DROP ? POLICY_RECLAIM : POLICY_DROP; return 1;
    case '+': return turret_resize(t, +1);
    case '-': return turret_resize(t, -1);
    default: return 0;
    }
}

/* =============================================================================================
   Particles: 100k+ sparks in an sp_dense pool
   ========================================================================================== */
enum {
    WP_COUNT, WP_SIZE, WP_MAX, WP_PEAK, WP_SPAWNED, WP_REMOVED, WP_MOVES, WP_DROPPED, WP_RECLAIMED,
    WP_ALLOC_CALLS_AFTER_CREATE, WP_HANDLE_CHECKS, WP_HANDLE_WRONG, WP_HANDLE_EXPIRED, WP_RATE,
    WP_PAUSED, WP_POLICY, WP_UNACCOUNTED, WP_N
};

static struct {
    pt_sim sim;
    pt_fb fb;
    bool running, paused;
    sp_overflow policy;
    size_t cap;
    wg_image im;
    double counters[WP_N];
} wp;

/* cap 0: sized by Little's law for the rate. */
EMSCRIPTEN_KEEPALIVE int web_particles_start(double rate, double cap, int policy) {
    if (wp.running) pt_sim_fini(&wp.sim);
    wp.running = false;
    if (!wp.im.pixels && wg_init(&wp.im, PT_W, PT_H) != 0) return 0;
    if (!wp.fb.pixels && pt_fb_init(&wp.fb) != 0) return 0;
    wp.policy = (sp_overflow)policy;
    wp.cap = (size_t)cap;
    if (pt_sim_init(&wp.sim, rate, wp.cap, wp.policy, 1) != 0) return 0;
    wp.running = true;
    return 1;
}

EMSCRIPTEN_KEEPALIVE uint32_t *web_particles_frame(void) {
    if (!wp.running) return NULL;
    if (!wp.paused) pt_step(&wp.sim, PT_W, PT_H);
    pt_fb_draw(&wp.fb, &wp.sim);
    /* XRGB (0x00RRGGBB) to the canvas's byte order R, G, B, A */
    for (size_t i = 0; i < (size_t)PT_W * PT_H; i++) {
        uint32_t c = wp.fb.pixels[i];
        wp.im.pixels[i] = 0xFF000000u | (c & 0xFFu) << 16 | (c & 0xFF00u) | (c >> 16 & 0xFFu);
    }
    sp_stats st;
    sp_dense_stats_get(wp.sim.sparks, &st);
    double *o = wp.counters;
    o[WP_COUNT] = (double)sp_dense_count(wp.sim.sparks);
    o[WP_SIZE] = (double)st.size;
    o[WP_MAX] = (double)st.max;
    o[WP_PEAK] = (double)st.peak_leased;
    o[WP_SPAWNED] = (double)st.acquired;
    o[WP_REMOVED] = (double)st.released;
    o[WP_MOVES] = (double)wp.sim.moves;
    o[WP_DROPPED] = (double)st.dropped;
    o[WP_RECLAIMED] = (double)st.reclaimed;
    o[WP_ALLOC_CALLS_AFTER_CREATE] = (double)(wp.sim.allocs.calls - wp.sim.allocs_after_create);
    o[WP_HANDLE_CHECKS] = (double)wp.sim.tracked_checks;
    o[WP_HANDLE_WRONG] = (double)wp.sim.tracked_wrong;
    o[WP_HANDLE_EXPIRED] = (double)wp.sim.tracked_lost;
    o[WP_RATE] = wp.sim.rate;
    o[WP_PAUSED] = wp.paused;
    o[WP_POLICY] = (double)wp.policy;
    o[WP_UNACCOUNTED] = (double)((long long)(st.acquired - st.released) -
                                 (long long)sp_dense_count(wp.sim.sparks));
    return wp.im.pixels;
}

EMSCRIPTEN_KEEPALIVE const double *web_particles_counters(void) { return wp.counters; }

/* The desktop keys: up/down spawn rate, c clear, space pause; and, for the page's buttons,
   p drop/reclaim and +/- cap: the dense pool's policy and cap are set when it is created, so
   these start a new pool (the sparks in flight end). */
EMSCRIPTEN_KEEPALIVE int web_particles_key(int key) {
    if (!wp.running) return 0;
    pt_sim *s = &wp.sim;
    sp_stats st;
    sp_dense_stats_get(s->sparks, &st);
    switch (key) {
    case 'u': s->rate = fmin(2e5, s->rate * 1.25); return 1;
    case 'd': s->rate = fmax(100.0, s->rate / 1.25); return 1;
    case 'c': sp_dense_clear(s->sparks); return 1;
    case ' ': wp.paused = !wp.paused; return 1;
    case 'p':
        return web_particles_start(s->rate, (double)wp.cap,
                                   wp.policy == SP_OVERFLOW_DROP ? SP_OVERFLOW_RECLAIM
                                                                 : SP_OVERFLOW_DROP);
    case '+': return web_particles_start(s->rate, ceil((double)st.max * 1.25), (int)wp.policy);
    case '-': return web_particles_start(s->rate, fmax(1.0, floor((double)st.max / 1.25)), (int)wp.policy);
    default: return 0;
    }
}
