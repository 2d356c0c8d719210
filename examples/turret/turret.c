/* SPDX-License-Identifier: Zlib */
/*
    turret.c -- a turret fires from a fixed pool, and a row of cubes shows every slot.

    The pool lives in one buffer sized with sp_buffer_size(): after start-up nothing is ever
    allocated, and the counter on screen proves it. Each cube behind the turret is one member
    of the pool: cyan while a projectile is in flight in it, gray while it is free. Fire faster
    than the pool can hold and the turret flashes red: under DROP the shot is refused, under
    RECLAIM the oldest projectile in flight vanishes and reappears at the muzzle.

    Keys: Up/Down fire rate, +/- pool size (rebuilds the pool in a new buffer), R switches
    DROP/RECLAIM, Esc quits.

    Headless (tests, docs): --headless --frames N --screenshot FILE.png [--policy drop|reclaim]
    [--rate R] [--slots S] renders offscreen with SDL's software renderer and prints the
    counters as key=value lines. `turret --help` lists the flags.
*/
#define SDL_MAIN_HANDLED /* our main is a plain main: no SDL2main needed */
#include <spawnpool.h>

#include "demo_args.h"
#include "demo_gfx.h"
#include "turret_sim.h"

#include <SDL.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* ---------------------------------------------------------------------------------------------
   Draw
   ------------------------------------------------------------------------------------------ */

static const SDL_Color COLOR_USED = {0, 210, 230, 255};
static const SDL_Color COLOR_FREE = {92, 98, 110, 255};
static const SDL_Color COLOR_SHOT = {255, 150, 40, 255};
static const SDL_Color COLOR_DROP = {235, 50, 50, 255};
static const SDL_Color COLOR_RECLAIM = {255, 230, 120, 255};
static const SDL_Color COLOR_TEXT = {220, 226, 236, 255};
static const SDL_Color COLOR_DIM = {140, 148, 162, 255};

static void draw_projectiles(SDL_Renderer *r, const turret *t)
{
    for (const void *it = sp_first(t->pool); it; it = sp_next(t->pool, it)) {
        const projectile *p = (const projectile *)it;
        /* Fade out over the last fifth of the life, so the release is not a pop. */
        float fade = fminf(1.0f, (SHOT_LIFETIME - p->age) / (SHOT_LIFETIME * 0.2f));
        Uint8 a = (Uint8)(255.0f * fmaxf(0.0f, fade));
        SDL_Color glow = {COLOR_SHOT.r, COLOR_SHOT.g, COLOR_SHOT.b, (Uint8)(a / 3)};
        SDL_Color edge = {COLOR_SHOT.r, COLOR_SHOT.g, COLOR_SHOT.b, 0};
        SDL_Color core = {255, 235, 190, a};
        SDL_Color trail = {COLOR_SHOT.r, COLOR_SHOT.g, COLOR_SHOT.b, (Uint8)(a / 2)};
        gfx_line(r, p->x - p->vx * 0.05f, p->y - p->vy * 0.05f, p->x, p->y, 4.0f, edge, trail);
        gfx_disc(r, p->x, p->y, 18.0f, glow, edge);
        gfx_disc(r, p->x, p->y, 6.0f, core, COLOR_SHOT);
    }
}

static void draw_turret(SDL_Renderer *r, const turret *t)
{
    SDL_Color base = {70, 78, 92, 255}, rim = {40, 44, 54, 255};
    SDL_Color barrel = {150, 160, 178, 255};
    if (t->drop_flash > 0.0f) {
        float k = t->drop_flash / FLASH_TIME;
        base = gfx_mix(base, COLOR_DROP, k);
        barrel = gfx_mix(barrel, COLOR_DROP, k);
        SDL_Color halo = {COLOR_DROP.r, COLOR_DROP.g, COLOR_DROP.b, (Uint8)(200.0f * k)};
        SDL_Color none = {COLOR_DROP.r, COLOR_DROP.g, COLOR_DROP.b, 0};
        gfx_disc(r, MUZZLE_X, MUZZLE_Y, 110.0f, halo, none);
    } else if (t->reclaim_flash > 0.0f) {
        float k = t->reclaim_flash / FLASH_TIME;
        SDL_Color halo = {COLOR_RECLAIM.r, COLOR_RECLAIM.g, COLOR_RECLAIM.b, (Uint8)(110.0f * k)};
        SDL_Color none = {COLOR_RECLAIM.r, COLOR_RECLAIM.g, COLOR_RECLAIM.b, 0};
        gfx_disc(r, MUZZLE_X + cosf(t->aim) * BARREL_LEN, MUZZLE_Y + sinf(t->aim) * BARREL_LEN,
                 40.0f, halo, none);
    }
    float c = cosf(t->aim), s = sinf(t->aim);
    gfx_line(r, MUZZLE_X, MUZZLE_Y, MUZZLE_X + c * BARREL_LEN, MUZZLE_Y + s * BARREL_LEN, 16.0f,
             barrel, gfx_mix(barrel, (SDL_Color){255, 255, 255, 255}, 0.3f));
    /* A trapezoid stand and a lit dome: enough shape to read as a turret at a glance. */
    gfx_quad(r, MUZZLE_X - 30.0f, MUZZLE_Y + 14.0f, MUZZLE_X + 30.0f, MUZZLE_Y + 14.0f,
             MUZZLE_X + 46.0f, MUZZLE_Y + 62.0f, MUZZLE_X - 46.0f, MUZZLE_Y + 62.0f, rim);
    gfx_disc(r, MUZZLE_X, MUZZLE_Y, 30.0f, gfx_mix(base, (SDL_Color){255, 255, 255, 255}, 0.3f),
             rim);
    gfx_disc(r, MUZZLE_X - 8.0f, MUZZLE_Y - 9.0f, 9.0f, (SDL_Color){255, 255, 255, 60},
             (SDL_Color){255, 255, 255, 0});
    if (t->drop_flash > 0.0f) gfx_text(r, MUZZLE_X - 24.0f, MUZZLE_Y - 66.0f, 3, COLOR_DROP, "DROP");
}

/* One cube per pool member: front face, a lighter top and a darker side, so the row reads as
   a shelf of slots rather than a bar chart. */
static void draw_cube(SDL_Renderer *r, float x, float y, float size, SDL_Color face)
{
    float d = size * 0.28f;
    SDL_Color top = gfx_mix(face, (SDL_Color){255, 255, 255, 255}, 0.35f);
    SDL_Color side = gfx_mix(face, (SDL_Color){0, 0, 0, 255}, 0.35f);
    gfx_quad(r, x, y, x + d, y - d, x + size + d, y - d, x + size, y, top);
    gfx_quad(r, x + size, y, x + size + d, y - d, x + size + d, y + size - d, x + size, y + size,
             side);
    gfx_fill_rect(r, x, y, size, size, face);
}

static void draw_slots(SDL_Renderer *r, const turret *t)
{
    bool used[MAX_SLOTS] = {false};
    for (const void *it = sp_first(t->pool); it; it = sp_next(t->pool, it)) {
        uint32_t slot = ((const projectile *)it)->slot;
        if (slot < MAX_SLOTS) used[slot] = true;
    }
    /* The row is centred and its cubes shrink as the pool grows; past 32 slots it wraps into a
       second row, so 1 to 64 slots all stay readable. */
    const size_t per_row = t->slots < 32 ? t->slots : 32;
    const size_t rows = (t->slots + per_row - 1) / per_row;
    const float span = SCREEN_W - 120.0f;
    float pitch = fminf(48.0f, span / (float)per_row);
    float size = pitch * 0.72f;
    float top = 420.0f - (float)(rows - 1) * pitch;
    float left = (SCREEN_W - pitch * (float)per_row) * 0.5f;
    char label[64];
    snprintf(label, sizeof label, "pool members (%zu), one cube each", t->slots);
    gfx_text(r, left, top - 42.0f, 2, COLOR_DIM, label);
    if (t->drop_flash > 0.0f) {
        /* Every slot busy and a shot refused: the whole row flashes with the turret. */
        SDL_Color glow = gfx_alpha(COLOR_DROP, t->drop_flash / FLASH_TIME * 0.8f);
        gfx_fill_rect(r, left - 10.0f, top - size * 0.28f - 10.0f, pitch * (float)per_row + 14.0f,
                      (float)(rows - 1) * pitch + size * 1.28f + 20.0f, glow);
    }
    for (size_t i = 0; i < t->slots; i++) {
        SDL_Color face = used[i] ? COLOR_USED : COLOR_FREE;
        if (t->cube_flash[i] > 0.0f)
            face = gfx_mix(face, COLOR_RECLAIM, t->cube_flash[i] / (FLASH_TIME * 2.0f));
        draw_cube(r, left + (float)(i % per_row) * pitch, top + (float)(i / per_row) * pitch, size,
                  face);
    }
    top += (float)(rows - 1) * pitch;
    float ly = top + size + 14.0f;
    gfx_fill_rect(r, left, ly, 12.0f, 12.0f, COLOR_USED);
    gfx_text(r, left + 18.0f, ly, 2, COLOR_DIM, "leased");
    gfx_fill_rect(r, left + 110.0f, ly, 12.0f, 12.0f, COLOR_FREE);
    gfx_text(r, left + 128.0f, ly, 2, COLOR_DIM, "free");
    gfx_fill_rect(r, left + 200.0f, ly, 12.0f, 12.0f, COLOR_RECLAIM);
    gfx_text(r, left + 218.0f, ly, 2, COLOR_DIM, "reclaimed");
}

static void draw_hud(SDL_Renderer *r, const turret *t, bool headless)
{
    sp_stats st;
    sp_stats_get(t->pool, &st);
    char line[160];
    float y = 16.0f;
    gfx_text(r, 20.0f, y, 2, COLOR_TEXT, "TURRET  fixed pool, one buffer");
    y += 26.0f;
    snprintf(line, sizeof line, "policy %-7s  rate %4.1f/s  slots %zu  buffer %zu B",
             t->policy == POLICY_DROP ? "DROP" : "RECLAIM", (double)t->rate, t->slots,
             t->buffer_bytes);
    gfx_text(r, 20.0f, y, 2, COLOR_TEXT, line);
    y += 22.0f;
    snprintf(line, sizeof line, "leased %zu  free %zu  peak %zu  dropped %llu  reclaimed %llu",
             st.leased, st.free, st.peak_leased, (unsigned long long)t->shots_dropped,
             (unsigned long long)t->shots_reclaimed);
    gfx_text(r, 20.0f, y, 2, COLOR_TEXT, line);
    y += 22.0f;
    snprintf(line, sizeof line, "allocator calls since start %llu  members built %llu",
             (unsigned long long)t->allocator_calls, (unsigned long long)st.created);
    gfx_text(r, 20.0f, y, 2, t->allocator_calls ? COLOR_DROP : COLOR_USED, line);
    if (!headless)
        gfx_text(r, 20.0f, SCREEN_H - 22.0f, 2, COLOR_DIM,
                 "Up/Down rate   +/- slots   R drop/reclaim   Esc quit");
}

static void turret_draw(SDL_Renderer *r, const turret *t, bool headless)
{
    gfx_vgradient(r, 0.0f, 0.0f, SCREEN_W, SCREEN_H, (SDL_Color){18, 22, 34, 255},
                  (SDL_Color){30, 36, 52, 255});
    gfx_fill_rect(r, 0.0f, MUZZLE_Y + 62.0f, SCREEN_W, 2.0f, (SDL_Color){48, 56, 74, 255});
    draw_projectiles(r, t);
    draw_turret(r, t);
    draw_slots(r, t);
    draw_hud(r, t, headless);
}

/* ---------------------------------------------------------------------------------------------
   Command line
   ------------------------------------------------------------------------------------------ */

typedef struct options {
    bool headless;
    long frames;
    const char *screenshot;
    policy policy;
    float rate;
    size_t slots;
    const char *keys; /* "FRAME:KEY,..." pressed headless; KEY is one of + - r u d */
} options;

/* @return DEMO_ARGS_RUN to run, else the exit code (0 after --help, 2 on a bad flag). */
static int parse_options(int argc, char **argv, options *o)
{
    *o = (options){.frames = 600, .policy = POLICY_DROP, .rate = 10.0f, .slots = 20};
    double rate = 10.0;
    long slots = 20;
    int reclaim = 0;
    const demo_opt opts[] = {
        {"headless", DEMO_OPT_FLAG, &o->headless, 0, 0, NULL, NULL,
         "render offscreen (no display needed) and print the counters as\nkey=value lines"},
        {"frames", DEMO_OPT_LONG, &o->frames, 1, 1e7, NULL, "N",
         "frames to run headless (default 600); a window runs until Esc"},
        {"screenshot", DEMO_OPT_STRING, &o->screenshot, 0, 0, NULL, "FILE",
         "PNG of the last frame (headless, or the window's when it closes)"},
        {"policy", DEMO_OPT_CHOICE, &reclaim, 0, 0, "drop|reclaim", "P",
         "when the pool is full: drop (default) or reclaim"},
        {"rate", DEMO_OPT_DOUBLE, &rate, 0.1, 1000, NULL, "R", "shots per second (default 10)"},
        {"slots", DEMO_OPT_LONG, &slots, MIN_SLOTS, MAX_SLOTS, NULL, "N",
         "pool size (default 20)"},
        {"keys", DEMO_OPT_STRING, &o->keys, 0, 0, NULL, "F:K,...",
         "keys pressed at frames, e.g. 60:+,120:r (+ - r u d)"},
        {0},
    };
    int rc = demo_args_parse("turret",
        "A turret fires from a fixed-buffer pool; a row of cubes shows every slot.",
        "Keys: Up/Down fire rate, +/- pool size, R switches DROP/RECLAIM, Esc quits.", opts,
        argc, argv);
    o->policy = reclaim ? POLICY_RECLAIM : POLICY_DROP;
    o->rate = (float)rate;
    o->slots = (size_t)slots;
    return rc;
}

/* ---------------------------------------------------------------------------------------------
   Main
   ------------------------------------------------------------------------------------------ */

/* The key scripted for this frame in --keys ("60:+,120:r"), or 0. Lets the tests press the
   keys a player would, so pool rebuilds and policy switches run headless too. */
static SDL_Keycode scripted_key(const char *keys, long frame)
{
    for (const char *p = keys; p && *p;) {
        char *end;
        long at = strtol(p, &end, 10);
        if (*end != ':' || !end[1]) return 0;
        if (at == frame) {
            switch (end[1]) {
            case '+': return SDLK_PLUS;
            case '-': return SDLK_MINUS;
            case 'r': return SDLK_r;
            case 'u': return SDLK_UP;
            case 'd': return SDLK_DOWN;
            default: return 0;
            }
        }
        p = strchr(end, ',');
        if (p) p++;
    }
    return 0;
}

static void handle_key(turret *t, SDL_Keycode key, bool *quit)
{
    switch (key) {
    case SDLK_ESCAPE: *quit = true; break;
    case SDLK_UP: t->rate = fminf(60.0f, t->rate + 1.0f); break;
    case SDLK_DOWN: t->rate = fmaxf(1.0f, t->rate - 1.0f); break;
    case SDLK_r: t->policy = t->policy == POLICY_DROP ? POLICY_RECLAIM : POLICY_DROP; break;
    case SDLK_PLUS:
    case SDLK_EQUALS:
    case SDLK_KP_PLUS:
        turret_resize(t, +1);
        break;
    case SDLK_MINUS:
    case SDLK_KP_MINUS:
        turret_resize(t, -1);
        break;
    default: break;
    }
}

int main(int argc, char **argv)
{
    // Initialization
    //------------------------------------------------------------------------------------------
    options opt;
    int parsed = parse_options(argc, argv, &opt);
    if (parsed != DEMO_ARGS_RUN) return parsed;

    gfx_target target;
    if (!gfx_open(&target, "spawnpool turret", SCREEN_W, SCREEN_H, opt.headless)) {
        fprintf(stderr, "turret: no display and no offscreen renderer: %s\n", SDL_GetError());
        return 1;
    }
    if (target.headless && !opt.headless)
        fprintf(stderr, "turret: no display, running %ld frames headless\n", opt.frames);

    turret t = {.policy = opt.policy, .rate = opt.rate};
    if (!turret_pool_build(&t, opt.slots)) {
        fprintf(stderr, "turret: cannot build a pool of %zu slots\n", opt.slots);
        gfx_close(&target);
        return 1;
    }
    /* From here on, the pool's allocator must stay silent. */
    t.allocator_calls = 0;

    // Main loop
    //------------------------------------------------------------------------------------------
    bool quit = false;
    for (long frame = 0; !quit && (!target.headless || frame < opt.frames); frame++) {
        SDL_Event ev;
        while (!target.headless && SDL_PollEvent(&ev)) {
            if (ev.type == SDL_QUIT) quit = true;
            else if (ev.type == SDL_KEYDOWN) handle_key(&t, ev.key.keysym.sym, &quit);
        }
        SDL_Keycode key = scripted_key(opt.keys, frame);
        if (key) handle_key(&t, key, &quit);

        // Update
        //--------------------------------------------------------------------------------------
        turret_update(&t, FRAME_DT);

        // Draw
        //--------------------------------------------------------------------------------------
        /* Headless, only the last frame is seen (the screenshot): drawing the others in
           software would only slow the tests down. */
        if (!target.headless || frame == opt.frames - 1) {
            turret_draw(target.renderer, &t, target.headless);
            gfx_present(&target);
        }
    }

    int rc = 0;
    if (opt.screenshot && !gfx_screenshot(&target, opt.screenshot)) {
        fprintf(stderr, "turret: cannot write %s\n", opt.screenshot);
        rc = 1;
    }

    sp_stats st;
    sp_stats_get(t.pool, &st);
    printf("slots=%zu\n", t.slots);
    printf("policy=%s\n", t.policy == POLICY_DROP ? "drop" : "reclaim");
    printf("rate=%.1f\n", (double)t.rate);
    printf("leased=%zu\n", st.leased);
    printf("peak_leased=%zu\n", st.peak_leased);
    printf("fired=%llu\n", (unsigned long long)t.shots_fired);
    /* Counted by the turret, so they add up across pool rebuilds; the rest is the last pool's. */
    printf("dropped=%llu\n", (unsigned long long)t.shots_dropped);
    printf("reclaimed=%llu\n", (unsigned long long)t.shots_reclaimed);
    printf("members_built=%llu\n", (unsigned long long)st.created);
    printf("buffer_bytes=%zu\n", t.buffer_bytes);
    printf("allocator_calls_after_start=%llu\n", (unsigned long long)t.allocator_calls);
    printf("pool_rebuilds=%llu\n", (unsigned long long)t.pool_rebuilds);

    // De-Initialization
    //------------------------------------------------------------------------------------------
    turret_fini(&t);
    gfx_close(&target);
    return rc;
}
