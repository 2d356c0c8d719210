/* SPDX-License-Identifier: Zlib */
/*
    arena -- spawnpool inside a small game: a scene, its entities, and the pools under them.

    The player (green, malloc'd) and two turrets (malloc'd) fight a wave of enemies (pooled),
    each circled by a shield spark (pooled, released with its enemy). Bullets and spark bursts
    come from pools built when the scene loads. Read scene.h and entity.h first: they are the
    part to copy into an engine. This file only opens the window, runs the loop and draws.

    Keys: arrows move the player (it flies itself until you do), Esc quits.

    Headless (tests, docs): --headless --frames N --screenshot FILE.png [--seed S] renders
    offscreen and prints the scene's counters as key=value lines; the exit code is 1 when a
    stale event was delivered or a member leaked.
*/
#define SDL_MAIN_HANDLED /* our main is a plain main: no SDL2main needed */
#include "entity.h"
#include "scene.h"

#include "demo_args.h"
#include "demo_gfx.h"

#include <SDL.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FRAME_DT (1.0f / 60.0f)
#define HUD_H 116.0f /* the counters' strip under the play field */

/* ---------------------------------------------------------------------------------------------
   Draw
   ------------------------------------------------------------------------------------------ */

static const SDL_Color COLOR_TEXT = {220, 226, 236, 255};
static const SDL_Color COLOR_DIM = {140, 148, 162, 255};
static const SDL_Color COLOR_GOOD = {90, 220, 140, 255};
static const SDL_Color COLOR_BAD = {235, 70, 70, 255};

static SDL_Color rgba(uint32_t c)
{
    return (SDL_Color){(Uint8)(c >> 24), (Uint8)(c >> 16), (Uint8)(c >> 8), (Uint8)c};
}

static void draw_entity(SDL_Renderer *r, const scene *s, const entity *e)
{
    SDL_Color c = rgba(e->rgba), none = gfx_alpha(c, 0.0f);
    switch (e->kind) {
    case ENTITY_PLAYER: {
        SDL_Color body = gfx_mix(c, COLOR_BAD, s->player_hit_flash * 4.0f);
        gfx_disc(r, e->x, e->y, e->radius * 2.4f, gfx_alpha(body, 0.25f), gfx_alpha(body, 0.0f));
        gfx_disc(r, e->x, e->y, e->radius, gfx_mix(body, (SDL_Color){255, 255, 255, 255}, 0.4f),
                 body);
        break;
    }
    case ENTITY_TURRET: {
        const entity *target = (const entity *)sp_resolve(s->enemies, e->target);
        SDL_Color barrel = target ? (SDL_Color){255, 208, 80, 255} : COLOR_DIM;
        if (target) /* the handle, made visible: a thin line to what it resolves to */
            gfx_line(r, e->x, e->y, target->x, target->y, 1.5f, gfx_alpha(barrel, 0.5f),
                     gfx_alpha(barrel, 0.1f));
        gfx_fill_rect(r, e->x - 24.0f, e->y - 24.0f, 48.0f, 48.0f, (SDL_Color){52, 58, 72, 255});
        gfx_line(r, e->x, e->y, e->x + cosf(e->angle) * 34.0f, e->y + sinf(e->angle) * 34.0f,
                 10.0f, barrel, barrel);
        gfx_disc(r, e->x, e->y, 14.0f, c, gfx_mix(c, (SDL_Color){0, 0, 0, 255}, 0.4f));
        break;
    }
    case ENTITY_BULLET:
        gfx_line(r, e->x - e->vx * 0.04f, e->y - e->vy * 0.04f, e->x, e->y, 3.0f, none,
                 gfx_alpha(c, 0.7f));
        gfx_disc(r, e->x, e->y, e->radius * 2.5f, gfx_alpha(c, 0.3f), none);
        gfx_disc(r, e->x, e->y, e->radius, (SDL_Color){255, 255, 230, 255}, c);
        break;
    case ENTITY_ENEMY: {
        gfx_disc(r, e->x, e->y, e->radius * 2.0f, gfx_alpha(c, 0.22f), none);
        gfx_disc(r, e->x, e->y, e->radius, gfx_mix(c, (SDL_Color){255, 255, 255, 255}, 0.25f),
                 gfx_mix(c, (SDL_Color){0, 0, 0, 255}, 0.35f));
        for (int k = 0; k < e->hp; k++) /* hit points as pips */
            gfx_disc(r, e->x - 4.0f + 8.0f * (float)k, e->y, 2.5f, COLOR_TEXT, COLOR_TEXT);
        break;
    }
    case ENTITY_SPARK:
        if (e->shield) {
            gfx_arc(r, e->parent->x, e->parent->y, 22.0f, 1.5f, 0.0f, 6.2831853f,
                    gfx_alpha(c, 0.25f));
            gfx_disc(r, e->x, e->y, e->radius * 2.5f, gfx_alpha(c, 0.35f), none);
            gfx_disc(r, e->x, e->y, e->radius, c, c);
        } else {
            /* Burst sparks: a hot core and a glow that both fade over the spark's life. */
            float k = e->life_max > 0.0f ? e->life / e->life_max : 1.0f;
            gfx_disc(r, e->x, e->y, e->radius * (1.5f + 3.0f * k), gfx_alpha(c, 0.45f * k), none);
            gfx_disc(r, e->x, e->y, e->radius, gfx_alpha((SDL_Color){255, 240, 200, 255}, k),
                     gfx_alpha(c, k));
        }
        break;
    }
}

static void draw_hud(SDL_Renderer *r, const scene *s, bool headless)
{
    char line[160];
    /* A strip under the play field, so that no panel hides an enemy. */
    gfx_fill_rect(r, 0.0f, SCENE_H, SCENE_W, HUD_H, (SDL_Color){8, 10, 16, 255});
    gfx_fill_rect(r, 0.0f, SCENE_H, SCENE_W, 1.0f, (SDL_Color){60, 66, 90, 255});
    float y = SCENE_H + 8.0f;
    gfx_text(r, 16.0f, y, 2, COLOR_TEXT, "ARENA  scene > registry > pools");
    y += 24.0f;
    for (size_t i = 0; i < sp_registry_count(s->registry); i++) {
        sp_pool *p = sp_registry_pool_at(s->registry, i);
        sp_stats st;
        sp_stats_get(p, &st);
        snprintf(line, sizeof line, "%-8s live %3zu  free %3zu  built %3llu", sp_pool_name(p),
                 st.leased, st.free, (unsigned long long)st.created);
        gfx_text(r, 16.0f, y, 2, COLOR_DIM, line);
        y += 20.0f;
    }
    snprintf(line, sizeof line, "allocations since load %llu",
             (unsigned long long)s->n.allocator_calls);
    gfx_text(r, 16.0f, y, 2, s->n.allocator_calls ? COLOR_BAD : COLOR_GOOD, line);

    /* The event queue's scorecard: stale events are dropped, never delivered. */
    float x = SCENE_W - 390.0f;
    y = SCENE_H + 12.0f;
    snprintf(line, sizeof line, "events delivered      %5llu",
             (unsigned long long)s->n.events_delivered);
    gfx_text(r, x, y, 2, COLOR_DIM, line);
    y += 20.0f;
    snprintf(line, sizeof line, "stale, dropped        %5llu",
             (unsigned long long)s->n.stale_events_dropped);
    gfx_text(r, x, y, 2, COLOR_DIM, line);
    y += 20.0f;
    snprintf(line, sizeof line, "  pointer would misfire %3llu",
             (unsigned long long)s->n.stale_pointer_reused);
    gfx_text(r, x, y, 2, COLOR_DIM, line);
    y += 20.0f;
    snprintf(line, sizeof line, "stale, delivered      %5llu",
             (unsigned long long)s->n.stale_events_delivered);
    gfx_text(r, x, y, 2, s->n.stale_events_delivered ? COLOR_BAD : COLOR_GOOD, line);
    y += 20.0f;
    snprintf(line, sizeof line, "kills %llu   targets expired %llu", (unsigned long long)s->n.kills,
             (unsigned long long)s->n.targets_expired);
    gfx_text(r, x, y, 2, COLOR_DIM, line);
    if (!headless)
        gfx_text(r, 500.0f, SCENE_H + 12.0f, 1, COLOR_DIM, "arrows move   Esc quit");
}

static void scene_draw(SDL_Renderer *r, const scene *s, bool headless)
{
    gfx_vgradient(r, 0.0f, 0.0f, SCENE_W, SCENE_H, (SDL_Color){16, 18, 28, 255},
                  (SDL_Color){26, 30, 46, 255});
    const SDL_Color grid = {255, 255, 255, 10};
    for (int gx = 40; gx < (int)SCENE_W; gx += 40)
        gfx_fill_rect(r, (float)gx, 0.0f, 1.0f, SCENE_H, grid);
    for (int gy = 40; gy < (int)SCENE_H; gy += 40)
        gfx_fill_rect(r, 0.0f, (float)gy, SCENE_W, 1.0f, grid);
    /* Layers by kind, so sparks sit on top of what they burst from. Dormant members are in the
       list too; their `visible` flag keeps them out of the picture. */
    static const entity_kind order[] = {ENTITY_TURRET, ENTITY_ENEMY, ENTITY_PLAYER,
                                        ENTITY_BULLET, ENTITY_SPARK};
    for (size_t k = 0; k < sizeof order / sizeof order[0]; k++)
        for (size_t i = 0; i < s->count; i++) {
            const scene_node *n = &s->list[i];
            if (n->visible && n->kind == order[k]) draw_entity(r, s, n->e);
        }
    draw_hud(r, s, headless);
}

/* ---------------------------------------------------------------------------------------------
   Main
   ------------------------------------------------------------------------------------------ */

typedef struct options {
    bool headless;
    long frames;
    const char *screenshot;
    uint32_t seed;
    bool trust_pointers, no_priority; /* scene_mistakes, made on purpose */
} options;

/* @return DEMO_ARGS_RUN to run, else the exit code (0 after --help, 2 on a bad flag). */
static int parse_options(int argc, char **argv, options *o)
{
    *o = (options){.frames = 600, .seed = 12345u};
    long seed = 12345;
    const demo_opt opts[] = {
        {"headless", DEMO_OPT_FLAG, &o->headless, 0, 0, NULL, NULL,
         "render offscreen (no display needed) and print the scene's\ncounters as key=value lines"},
        {"frames", DEMO_OPT_LONG, &o->frames, 1, 1e7, NULL, "N",
         "frames to run headless (default 600); a window runs until Esc"},
        {"screenshot", DEMO_OPT_STRING, &o->screenshot, 0, 0, NULL, "FILE",
         "PNG of the last frame (headless, or the window's when it closes)"},
        {"seed", DEMO_OPT_LONG, &seed, 0, 4294967295.0, NULL, "S", "random seed (default 12345)"},
        {"trust-pointers", DEMO_OPT_FLAG, &o->trust_pointers, 0, 0, NULL, NULL,
         "the mistake on purpose: deliver an event through its pointer\nwhen its slot is in use "
         "again (docs/guide.md, section 10)"},
        {"no-priority", DEMO_OPT_FLAG, &o->no_priority, 0, 0, NULL, NULL,
         "the mistake on purpose: no priority hook for the sparks pool,\nwhich then reclaims "
         "its oldest sparks, the shields"},
        {0},
    };
    int rc = demo_args_parse("arena",
        "spawnpool inside a small game: a scene, its entities, and the pools under them.",
        "Keys: arrows move the player (it flies itself until you do), Esc quits.", opts, argc,
        argv);
    o->seed = (uint32_t)seed;
    return rc;
}

int main(int argc, char **argv)
{
    // Initialization
    //------------------------------------------------------------------------------------------
    options opt;
    int parsed = parse_options(argc, argv, &opt);
    if (parsed != DEMO_ARGS_RUN) return parsed;
    gfx_target target;
    if (!gfx_open(&target, "spawnpool arena", (int)SCENE_W, (int)(SCENE_H + HUD_H),
                  opt.headless)) {
        fprintf(stderr, "arena: no display and no offscreen renderer: %s\n", SDL_GetError());
        return 1;
    }
    if (target.headless && !opt.headless)
        fprintf(stderr, "arena: no display, running %ld frames headless\n", opt.frames);

    scene s;
    unsigned mistakes = (opt.trust_pointers ? SCENE_TRUST_POINTERS : 0u) |
                        (opt.no_priority ? SCENE_NO_SPARK_PRIORITY : 0u);
    if (!scene_enter(&s, opt.seed, mistakes)) {
        fprintf(stderr, "arena: out of memory loading the scene\n");
        gfx_close(&target);
        return 1;
    }

    // Main loop
    //------------------------------------------------------------------------------------------
    bool quit = false;
    long frame = 0;
    for (; !quit && (!target.headless || frame < opt.frames); frame++) {
        SDL_Event ev;
        while (!target.headless && SDL_PollEvent(&ev)) {
            if (ev.type == SDL_QUIT) quit = true;
            if (ev.type == SDL_KEYDOWN && ev.key.keysym.sym == SDLK_ESCAPE) quit = true;
        }
        if (!target.headless) {
            const Uint8 *keys = SDL_GetKeyboardState(NULL);
            s.input_x = (float)(keys[SDL_SCANCODE_RIGHT] - keys[SDL_SCANCODE_LEFT]);
            s.input_y = (float)(keys[SDL_SCANCODE_DOWN] - keys[SDL_SCANCODE_UP]);
            if (s.input_x != 0.0f || s.input_y != 0.0f) s.manual = true;
        }

        // Update
        //--------------------------------------------------------------------------------------
        scene_update(&s, FRAME_DT);

        // Draw
        //--------------------------------------------------------------------------------------
        /* Headless, only the last frame is seen (the screenshot): drawing the others in
           software would only slow the tests down. */
        if (!target.headless || frame == opt.frames - 1) {
            scene_draw(target.renderer, &s, target.headless);
            gfx_present(&target);
        }
    }

    int rc = 0;
    if (opt.screenshot && !gfx_screenshot(&target, opt.screenshot)) {
        fprintf(stderr, "arena: cannot write %s\n", opt.screenshot);
        rc = 1;
    }

    /* The counters, read before leaving (leaving frees everything), then what leaving found. */
    const scene_counters *n = &s.n;
    printf("frames=%ld\n", frame);
    for (size_t i = 0; i < sp_registry_count(s.registry); i++) {
        sp_pool *p = sp_registry_pool_at(s.registry, i);
        const char *name = sp_pool_name(p);
        sp_stats st;
        sp_stats_get(p, &st);
        printf("%s_built=%llu\n%s_peak=%zu\n%s_dropped=%llu\n%s_reclaimed=%llu\n", name,
               (unsigned long long)st.created, name, st.peak_leased, name,
               (unsigned long long)st.dropped, name, (unsigned long long)st.reclaimed);
    }
    printf("shots=%llu\n", (unsigned long long)n->shots);
    printf("kills=%llu\n", (unsigned long long)n->kills);
    printf("contacts=%llu\n", (unsigned long long)n->contacts);
    printf("events_queued=%llu\n", (unsigned long long)n->events_queued);
    printf("events_delivered=%llu\n", (unsigned long long)n->events_delivered);
    printf("stale_events_dropped=%llu\n", (unsigned long long)n->stale_events_dropped);
    printf("stale_events_delivered=%llu\n", (unsigned long long)n->stale_events_delivered);
    printf("stale_pointer_reused=%llu\n", (unsigned long long)n->stale_pointer_reused);
    printf("events_overflowed=%llu\n", (unsigned long long)n->events_overflowed);
    printf("targets_acquired=%llu\n", (unsigned long long)n->targets_acquired);
    printf("targets_expired=%llu\n", (unsigned long long)n->targets_expired);
    printf("shields_lost=%llu\n", (unsigned long long)n->shields_lost);
    printf("allocator_calls_after_load=%llu\n", (unsigned long long)n->allocator_calls);

    // De-Initialization
    //------------------------------------------------------------------------------------------
    scene_report report;
    scene_leave(&s, &report);
    gfx_close(&target);

    printf("destroy_errors=%llu\n", (unsigned long long)n->destroy_errors);
    printf("pool_warnings=%llu\n", (unsigned long long)n->pool_warnings);
    printf("entities_left=%zu\n", report.list_left);
    printf("leaked=%zu\n", report.leaked);

    if (n->stale_events_delivered || report.leaked || report.list_left || n->destroy_errors ||
        n->pool_warnings)
        rc = 1;
    return rc;
}
