/* SPDX-License-Identifier: Zlib */
/* The fountain's SDL2 front ends: a window with keys (rate, cap, policy), and a headless mode
   that renders the same picture with SDL's software renderer into an offscreen surface (no
   display needed) and saves the last frame as a PNG, for tests and docs. Both draw with
   fs_draw(): two fountains side by side, each with its counters, an allocator-calls-per-frame
   graph and a bar of the pool's members. Text uses examples/common's built-in 5x7 font. */
#define SDL_MAIN_HANDLED
#include "fountain_sim.h"

#include <SDL.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "demo_sdl.h"

#define FS_W 1280
#define FS_H 720
#define FS_PANEL_W (FS_W / 2)
#define FS_TOP 96          /* fountain area: from here ... */
#define FS_FLOOR 492       /* ... down to the basin floor */
#define FS_HEAT 16         /* colour steps of a spark's life */
#define FS_WINDOW_SECONDS 30.0

typedef struct fs_rgb { Uint8 r, g, b; } fs_rgb;

static const fs_rgb fs_accent[FS_SIDES] = {{70, 220, 255}, {255, 150, 60}};
static const fs_rgb fs_text = {225, 230, 240};
static const fs_rgb fs_dim = {120, 130, 155};

/* Sparks are batched by colour: one SDL_RenderFillRects call per heat step. */
typedef struct fs_batch {
    SDL_Rect *rects[FS_HEAT];
    int n[FS_HEAT], cap[FS_HEAT];
    fs_rgb heat[FS_HEAT];
    float px_per_m;
    int origin_x, origin_y;
} fs_batch;

typedef struct fs_view {
    SDL_Renderer *r;
    fs_batch batch;
    char toast[96];
    double toast_until;
} fs_view;

/* ---------------------------------------------------------------------------------------------
   Initialization
   ------------------------------------------------------------------------------------------ */
static void fs_heat_init(fs_batch *b) {
    /* white-hot at launch, then yellow, orange, red, and a dim ember at the end of life */
    static const float stops[5][3] = {
        {255, 245, 220}, {255, 215, 90}, {255, 140, 35}, {215, 55, 20}, {90, 22, 12}};
    for (int i = 0; i < FS_HEAT; i++) {
        float f = (float)i / (FS_HEAT - 1) * 4.0f;
        int k = f >= 4.0f ? 3 : (int)f;
        float u = f - (float)k;
        b->heat[i].r = (Uint8)(stops[k][0] + (stops[k + 1][0] - stops[k][0]) * u);
        b->heat[i].g = (Uint8)(stops[k][1] + (stops[k + 1][1] - stops[k][1]) * u);
        b->heat[i].b = (Uint8)(stops[k][2] + (stops[k + 1][2] - stops[k][2]) * u);
    }
    b->px_per_m = (float)(FS_FLOOR - FS_TOP) / FS_WORLD_H;
}

static void fs_batch_free(fs_batch *b) {
    for (int i = 0; i < FS_HEAT; i++) free(b->rects[i]);
}

/* ---------------------------------------------------------------------------------------------
   Draw
   ------------------------------------------------------------------------------------------ */
static void fs_colour(SDL_Renderer *r, fs_rgb c, Uint8 a) { SDL_SetRenderDrawColor(r, c.r, c.g, c.b, a); }

static void fs_fill(SDL_Renderer *r, int x, int y, int w, int h) {
    SDL_Rect rc = {x, y, w, h};
    SDL_RenderFillRect(r, &rc);
}

static void fs_frame(SDL_Renderer *r, int x, int y, int w, int h) {
    SDL_Rect rc = {x, y, w, h};
    SDL_RenderDrawRect(r, &rc);
}

static void fs_text_at(SDL_Renderer *r, fs_rgb c, int x, int y, int scale, const char *s) {
    fs_colour(r, c, 255);
    demo_text_draw(r, x, y, scale, s);
}

static void fs_text_right(SDL_Renderer *r, fs_rgb c, int right, int y, int scale, const char *s) {
    fs_text_at(r, c, right - demo_text_width(s, scale), y, scale, s);
}

static void fs_push(fs_batch *b, int heat, int x, int y, int size) {
    if (b->n[heat] == b->cap[heat]) {
        int cap = b->cap[heat] ? b->cap[heat] * 2 : 4096;
        SDL_Rect *grown = realloc(b->rects[heat], (size_t)cap * sizeof *grown);
        if (!grown) return;
        b->rects[heat] = grown;
        b->cap[heat] = cap;
    }
    b->rects[heat][b->n[heat]++] = (SDL_Rect){x - size / 2, y - size / 2, size, size};
}

/* A spark is a bright head and a two-step tail along its velocity. */
static void fs_batch_spark(const fs_spark *s, void *user) {
    fs_batch *b = user;
    float f = s->age / s->life;
    int heat = (int)(f * (FS_HEAT - 1) + 0.5f);
    heat = heat < 0 ? 0 : heat >= FS_HEAT ? FS_HEAT - 1 : heat;
    float sx = (float)b->origin_x + s->x * b->px_per_m;
    float sy = (float)b->origin_y - s->y * b->px_per_m;
    float tx = s->vx * b->px_per_m * 0.010f, ty = -s->vy * b->px_per_m * 0.010f;
    fs_push(b, heat, (int)sx, (int)sy, 3);
    int tail = heat + 2 < FS_HEAT ? heat + 2 : FS_HEAT - 1;
    fs_push(b, tail, (int)(sx - tx), (int)(sy - ty), 2);
    fs_push(b, tail, (int)(sx - 2 * tx), (int)(sy - 2 * ty), 2);
}

static void fs_draw_fountain(fs_view *v, const fs_sim *sim, int side, int x0) {
    SDL_Renderer *r = v->r;
    fs_batch *b = &v->batch;
    b->origin_x = x0 + FS_PANEL_W / 2;
    b->origin_y = FS_FLOOR;
    for (int i = 0; i < FS_HEAT; i++) b->n[i] = 0;
    fs_sim_each(sim, side, fs_batch_spark, b);

    /* Additive blending: where sparks crowd, the fountain glows white. */
    SDL_SetRenderDrawBlendMode(r, SDL_BLENDMODE_ADD);
    for (int i = FS_HEAT - 1; i >= 0; i--) {
        fs_colour(r, b->heat[i], 150);
        SDL_RenderFillRects(r, b->rects[i], b->n[i]);
    }
    SDL_SetRenderDrawBlendMode(r, SDL_BLENDMODE_NONE);

    /* The basin and the nozzle. */
    int half = (int)(FS_WORLD_HALF_W * b->px_per_m);
    fs_colour(r, (fs_rgb){25, 70, 120}, 255);
    fs_fill(r, b->origin_x - half, FS_FLOOR + 1, 2 * half, 8);
    fs_colour(r, (fs_rgb){50, 120, 190}, 255);
    fs_fill(r, b->origin_x - half, FS_FLOOR + 1, 2 * half, 2);
    fs_colour(r, (fs_rgb){110, 120, 140}, 255);
    fs_fill(r, b->origin_x - 5, FS_FLOOR - 20, 10, 21);
    fs_fill(r, b->origin_x - 9, FS_FLOOR - 22, 18, 4);
}

/* Allocator calls in each of the last 120 frames, as bars; an empty box is the point. */
static void fs_draw_calls_graph(SDL_Renderer *r, const fs_counters *c, fs_rgb accent, int x, int y,
                                int w, int h) {
    unsigned top = 8, sum = 0;
    for (int i = 0; i < 120; i++) {
        top = c->calls_hist[i] > top ? c->calls_hist[i] : top;
        sum += c->calls_hist[i];
    }
    fs_colour(r, (fs_rgb){18, 22, 38}, 255);
    fs_fill(r, x, y, w, h);
    if (sum == 0) {
        const char *none = "NONE IN 2 S";
        fs_text_at(r, (fs_rgb){70, 150, 90}, x + (w - demo_text_width(none, 2)) / 2,
                   y + (h - 14) / 2, 2, none);
    }
    fs_colour(r, (fs_rgb){255, 80, 70}, 255);
    for (int i = 0; i < 120; i++) {
        int bh = (int)((double)c->calls_hist[i] / top * (h - 4));
        int bx = x + 2 + i * (w - 4) / 120, bx1 = x + 2 + (i + 1) * (w - 4) / 120;
        if (bh) fs_fill(r, bx, y + h - 2 - bh, bx1 - bx > 1 ? bx1 - bx - 1 : 1, bh);
    }
    fs_colour(r, accent, 255);
    fs_frame(r, x, y, w, h);
}

/* The pool's members: leased, free, and room left under the cap. The malloc side gets the same
   scale, with its live sparks as heap blocks. */
static void fs_draw_members(SDL_Renderer *r, const fs_counters *c, fs_rgb accent, size_t scale,
                            int x, int y, int w, int h, bool pooled) {
    fs_colour(r, (fs_rgb){18, 22, 38}, 255);
    fs_fill(r, x, y, w, h);
    double px = (double)(w - 2) / (double)(scale ? scale : 1);
    int live = (int)((double)c->live * px), built = (int)((double)c->size * px);
    if (built > w - 2) built = w - 2;
    if (live > built) live = built;
    fs_colour(r, (fs_rgb){(Uint8)(accent.r / 3), (Uint8)(accent.g / 3), (Uint8)(accent.b / 3)}, 255);
    fs_fill(r, x + 1, y + 1, built, h - 2);
    fs_colour(r, accent, 255);
    fs_fill(r, x + 1, y + 1, live, h - 2);
    fs_colour(r, fs_dim, 255);
    fs_frame(r, x, y, w, h);
    if (pooled && c->max) { /* the cap */
        int cx = x + 1 + (int)((double)c->max * px);
        if (cx < x + w) {
            fs_colour(r, (fs_rgb){255, 255, 255}, 255);
            fs_fill(r, cx, y - 3, 2, h + 6);
        }
    }
}

static void fs_draw_panel(fs_view *v, const fs_sim *sim, int side, size_t bar_scale) {
    SDL_Renderer *r = v->r;
    int x0 = side * FS_PANEL_W;
    fs_rgb accent = fs_accent[side];
    fs_counters c;
    fs_sim_counters(sim, side, &c);
    char s[96];

    fs_text_at(r, accent, x0 + 24, 58, 3, side == FS_POOLED ? "POOLED" : "SPAWN-AND-DESTROY");
    fs_text_right(r, fs_dim, x0 + FS_PANEL_W - 24, 66, 2,
                  side == FS_POOLED ? "SP_POOL: ACQUIRE/RELEASE" : "MALLOC/FREE PER SPARK");
    fs_draw_fountain(v, sim, side, x0);

    /* Counters: label left, value right-aligned, two columns. */
    int y = 520, lx = x0 + 24, vx = x0 + 270;
    struct { const char *label; char value[32]; fs_rgb colour; } rows[8];
    int n = 0;
#define FS_ROW(lbl, col, ...) \
    do { rows[n].label = lbl; rows[n].colour = col; snprintf(rows[n].value, 32, __VA_ARGS__); n++; } while (0)
    FS_ROW("LIVE", fs_text, "%zu", c.live);
    if (side == FS_POOLED) FS_ROW("FREE", fs_text, "%zu", c.free);
    else FS_ROW("FREE", fs_dim, "-");
    FS_ROW("SIZE", fs_text, "%zu", c.size);
    FS_ROW("CREATED", fs_text, "%llu", (unsigned long long)c.created);
    FS_ROW("PEAK LIVE", fs_text, "%zu", c.peak);
    fs_rgb calls_colour = side == FS_MALLOC ? (fs_rgb){255, 110, 90} : fs_text;
    FS_ROW("ALLOC CALLS", calls_colour, "%llu", (unsigned long long)c.alloc_calls);
    FS_ROW("UPDATE MS", fs_text, "%.3f", c.frame_ms);
    FS_ROW("UPDATE P99", fs_text, "%.3f", c.p99_ms);
#undef FS_ROW
    for (int i = 0; i < n; i++) {
        fs_text_at(r, fs_dim, lx, y + i * 22, 2, rows[i].label);
        fs_text_right(r, rows[i].colour, vx, y + i * 22, 2, rows[i].value);
    }

    /* Right column: allocator calls per frame, the members bar, the pool's own counters. */
    int gx = x0 + 310, gw = 2 + 120 * 2 + 2 + 50;
    unsigned per_s = 0;
    for (int f = 60; f < 120; f++) per_s += c.calls_hist[f];
    fs_text_at(r, fs_dim, gx, 520, 2, "ALLOC CALLS/S");
    snprintf(s, sizeof s, "%u", per_s);
    fs_text_right(r, per_s ? (fs_rgb){255, 90, 80} : (fs_rgb){110, 235, 120}, gx + gw, 520, 2, s);
    fs_draw_calls_graph(r, &c, accent, gx, 542, gw, 56);
    fs_text_at(r, fs_dim, gx, 612, 2, side == FS_POOLED ? "MEMBERS" : "HEAP BLOCKS");
    if (side == FS_POOLED) snprintf(s, sizeof s, "CAP %zu", c.max);
    else snprintf(s, sizeof s, "%zu", c.live);
    fs_text_right(r, fs_text, gx + gw, 612, 2, s);
    fs_draw_members(r, &c, accent, bar_scale, gx, 634, gw, 16, side == FS_POOLED);
    if (side == FS_POOLED) {
        snprintf(s, sizeof s, "DROPPED %llu  RECLAIMED %llu", (unsigned long long)c.dropped,
                 (unsigned long long)c.reclaimed);
        fs_text_at(r, c.dropped || c.reclaimed ? (fs_rgb){255, 200, 90} : fs_dim, gx, 662, 2, s);
        snprintf(s, sizeof s, "GROWN PAST CAP %llu", (unsigned long long)c.grown);
        fs_text_at(r, c.grown ? (fs_rgb){255, 200, 90} : fs_dim, gx, 684, 2, s);
    } else {
        fs_text_at(r, fs_dim, gx, 662, 2, "1 MALLOC AT BIRTH");
        fs_text_at(r, fs_dim, gx, 684, 2, "1 FREE AT DEATH");
    }
}

static void fs_draw(fs_view *v, const fs_sim *sim, double seconds, double now) {
    SDL_Renderer *r = v->r;
    /* Night sky: a vertical gradient, drawn as bands. */
    for (int y = 0; y < FS_H; y += 8) {
        float f = (float)y / FS_H;
        fs_colour(r, (fs_rgb){(Uint8)(8 + 10 * f), (Uint8)(10 + 12 * f), (Uint8)(24 + 22 * f)}, 255);
        fs_fill(r, 0, y, FS_W, 8);
    }
    fs_colour(r, (fs_rgb){4, 5, 12}, 255);
    fs_fill(r, 0, 0, FS_W, 44);
    fs_fill(r, 0, FS_FLOOR + 10, FS_W, FS_H - FS_FLOOR - 10);

    /* Header: the title, then the settings right-aligned, each followed by its keys (dim). */
    char rate[32], cap[32], policy[32], clock[32];
    snprintf(rate, sizeof rate, "RATE %.0f/S", sim->cfg.rate);
    snprintf(cap, sizeof cap, "   CAP %zu", sim->cfg.cap);
    snprintf(policy, sizeof policy, "   POLICY %s", fs_policy_name(sim->cfg.policy));
    snprintf(clock, sizeof clock, "   %4.1f/%.0f S", sim->t, seconds);
    const char *piece[] = {rate, " [^~]", cap, " [+-]", policy, " [P]", clock};
    int total = 0, gap = 2; /* the letter gap (one font column at scale 2) after each piece */
    for (int i = 0; i < 7; i++) total += demo_text_width(piece[i], 2) + gap;
    fs_text_at(r, fs_text, 20, 12, 3, "SPAWNPOOL FOUNTAIN");
    for (int i = 0, x = FS_W - 20 - total; i < 7; i++) {
        fs_text_at(r, i % 2 ? fs_dim : fs_text, x, 17, 2, piece[i]);
        x += demo_text_width(piece[i], 2) + gap;
    }

    fs_colour(r, (fs_rgb){40, 46, 70}, 255);
    fs_fill(r, FS_PANEL_W - 1, 44, 2, FS_H - 44);
    size_t bar_scale = sim->cfg.cap;
    fs_counters pc, mc;
    fs_sim_counters(sim, FS_POOLED, &pc);
    fs_sim_counters(sim, FS_MALLOC, &mc);
    if (pc.size > bar_scale) bar_scale = pc.size;
    if (mc.live > bar_scale) bar_scale = mc.live;
    for (int side = 0; side < FS_SIDES; side++) fs_draw_panel(v, sim, side, bar_scale);

    if (!sim->warm) {
        fs_text_at(r, (fs_rgb){255, 210, 90}, FS_W / 2 - demo_text_width("WARMING UP", 2) / 2, 470 - 380, 2, "WARMING UP");
    }
    if (v->toast[0] && now < v->toast_until) {
        int w = demo_text_width(v->toast, 2);
        fs_colour(r, (fs_rgb){20, 24, 44}, 255);
        fs_fill(r, FS_W / 2 - w / 2 - 12, 112, w + 24, 30);
        fs_colour(r, fs_text, 255);
        fs_frame(r, FS_W / 2 - w / 2 - 12, 112, w + 24, 30);
        demo_text_draw(r, FS_W / 2 - w / 2, 120, 2, v->toast);
    }
}

static void fs_finish(const fs_sim *sim, bool kv) {
    fs_summary_print(stdout, sim, sim->t);
    if (kv) fs_kv_print(stdout, sim);
    fflush(stdout);
}

/* ---------------------------------------------------------------------------------------------
   Headless: the offscreen surface and its software renderer need no display.
   ------------------------------------------------------------------------------------------ */
int fs_run_headless(const fs_options *opt) {
    double seconds = opt->frames * FS_DT;
    fs_sim sim;
    if (!fs_sim_start(&sim, &opt->sim, seconds, opt->frames)) return 1;
    SDL_Surface *surface = SDL_CreateRGBSurfaceWithFormat(0, FS_W, FS_H, 32, SDL_PIXELFORMAT_RGB888);
    SDL_Renderer *r = surface ? SDL_CreateSoftwareRenderer(surface) : NULL;
    if (!r) {
        fprintf(stderr, "fountain: offscreen renderer: %s\n", SDL_GetError());
        SDL_FreeSurface(surface);
        fs_sim_fini(&sim);
        return 1;
    }
    fs_view v = {.r = r};
    fs_heat_init(&v.batch);
    int rc = 0;
    unsigned first_after_draw[FS_SIDES] = {0}; /* which side met the caches a draw left */
    bool drew = false;
    for (unsigned f = 0; f < opt->frames; f++) {
        fs_sim_step(&sim);
        if (drew) first_after_draw[sim.first_side]++;
        /* Every 10th frame and the last are drawn: that exercises the draw code all along the
           run while keeping the software renderer cheap under the sanitizers. */
        drew = f % 10 == 9 || f + 1 == opt->frames;
        if (drew) fs_draw(&v, &sim, seconds, sim.t);
    }
    printf("pooled_first_after_draw=%u\nmalloc_first_after_draw=%u\n",
           first_after_draw[FS_POOLED], first_after_draw[FS_MALLOC]);
    if (opt->screenshot) {
        if (demo_screenshot(r, opt->screenshot) != 0) {
            fprintf(stderr, "fountain: cannot write %s\n", opt->screenshot);
            rc = 1;
        } else {
            printf("screenshot=%s\nscreenshot_width=%d\nscreenshot_height=%d\n", opt->screenshot, FS_W, FS_H);
        }
    }
    fs_finish(&sim, true);
    fs_batch_free(&v.batch);
    SDL_DestroyRenderer(r);
    SDL_FreeSurface(surface);
    SDL_Quit();
    fs_sim_fini(&sim);
    return rc;
}

/* ---------------------------------------------------------------------------------------------
   Window
   ------------------------------------------------------------------------------------------ */
static void fs_key(fs_view *v, fs_sim *sim, SDL_Keycode key, double now) {
    switch (key) {
    case SDLK_UP:
        fs_sim_set_rate(sim, sim->cfg.rate * 1.25 > 50000 ? 50000 : sim->cfg.rate * 1.25);
        snprintf(v->toast, sizeof v->toast, "RATE %.0f SPARKS/S", sim->cfg.rate);
        break;
    case SDLK_DOWN:
        fs_sim_set_rate(sim, sim->cfg.rate / 1.25 < 50 ? 50 : sim->cfg.rate / 1.25);
        snprintf(v->toast, sizeof v->toast, "RATE %.0f SPARKS/S", sim->cfg.rate);
        break;
    case SDLK_PLUS: case SDLK_EQUALS: case SDLK_KP_PLUS:
        fs_sim_set_cap(sim, (size_t)ceil((double)sim->cfg.cap * 1.25));
        snprintf(v->toast, sizeof v->toast, "POOL CAP %zu", sim->cfg.cap);
        break;
    case SDLK_MINUS: case SDLK_KP_MINUS:
        fs_sim_set_cap(sim, (size_t)((double)sim->cfg.cap / 1.25));
        snprintf(v->toast, sizeof v->toast, "POOL CAP %zu", sim->cfg.cap);
        break;
    case SDLK_p: {
        sp_overflow next = (sp_overflow)((sim->cfg.policy + 1) % 3);
        if (fs_sim_set_policy(sim, next))
            snprintf(v->toast, sizeof v->toast, "POLICY %s: POOL REBUILT", fs_policy_name(next));
        break;
    }
    default: return;
    }
    v->toast_until = now + 2.0;
}

int fs_run_window(const fs_options *opt) {
    SDL_SetMainReady();
    if (SDL_Init(SDL_INIT_VIDEO) != 0) return -1;
    /* SDL falls back to its invisible "offscreen" (or "dummy") driver when no display answers:
       that is no window for a person to watch, so the terminal fountain is the better show. */
    const char *driver = SDL_GetCurrentVideoDriver();
    if (!driver || !strcmp(driver, "offscreen") || !strcmp(driver, "dummy")) {
        SDL_Quit();
        return -1;
    }
    SDL_Window *win = SDL_CreateWindow("spawnpool fountain: pooled vs spawn-and-destroy",
                                       SDL_WINDOWPOS_CENTERED, SDL_WINDOWPOS_CENTERED, FS_W, FS_H,
                                       SDL_WINDOW_RESIZABLE | SDL_WINDOW_ALLOW_HIGHDPI);
    SDL_Renderer *r = win ? SDL_CreateRenderer(win, -1, SDL_RENDERER_PRESENTVSYNC) : NULL;
    if (win && !r) r = SDL_CreateRenderer(win, -1, SDL_RENDERER_SOFTWARE);
    if (!r) {
        if (win) SDL_DestroyWindow(win);
        SDL_Quit();
        return -1;
    }
    SDL_RenderSetLogicalSize(r, FS_W, FS_H);

    double seconds = opt->seconds > 0 ? opt->seconds : FS_WINDOW_SECONDS;
    fs_sim sim;
    if (!fs_sim_start(&sim, &opt->sim, seconds, (size_t)(seconds * 60.0) + 1)) {
        SDL_DestroyRenderer(r);
        SDL_DestroyWindow(win);
        SDL_Quit();
        return 1;
    }
    printf("spawnpool fountain: window open for %.0f s (esc to quit early; up/down rate, +/- cap, "
           "p policy)\n", seconds);
    fflush(stdout);
    fs_view v = {.r = r};
    fs_heat_init(&v.batch);

    /* Main loop: the simulation steps at a fixed 60 Hz whatever the display's refresh rate. */
    Uint64 freq = SDL_GetPerformanceFrequency(), start = SDL_GetPerformanceCounter();
    bool quit = false;
    int rc = 0;
    while (!quit && sim.t < seconds) {
        double now = (double)(SDL_GetPerformanceCounter() - start) / (double)freq;
        SDL_Event e;
        while (SDL_PollEvent(&e)) {
            if (e.type == SDL_QUIT) quit = true;
            else if (e.type == SDL_KEYDOWN) {
                if (e.key.keysym.sym == SDLK_ESCAPE || e.key.keysym.sym == SDLK_q) quit = true;
                else fs_key(&v, &sim, e.key.keysym.sym, now);
            }
        }
        for (int steps = 0; sim.t < now && steps < 4; steps++) fs_sim_step(&sim);
        fs_draw(&v, &sim, seconds, now);
        bool last = quit || sim.t >= seconds;
        if (last && opt->screenshot && demo_screenshot(r, opt->screenshot) != 0) rc = 1;
        SDL_RenderPresent(r);
        SDL_Delay(1); /* vsync paces us; without it this keeps the loop from spinning */
    }
    fs_finish(&sim, opt->kv);
    fs_batch_free(&v.batch);
    fs_sim_fini(&sim);
    SDL_DestroyRenderer(r);
    SDL_DestroyWindow(win);
    SDL_Quit();
    return rc;
}
