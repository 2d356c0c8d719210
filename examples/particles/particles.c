/* SPDX-License-Identifier: Zlib */
/* particles: 100k+ sparks in an sp_dense pool, integrated and drawn every frame.

   Three fountains spray sparks at 60,000 per second; each lives 1.5 to 2.5 seconds, so about
   120,000 are alive at once. They sit packed in one sp_dense array: the update is a plain loop
   over contiguous memory, and a spent spark is swap-removed (the last spark moves into its
   place, so the loop looks at the same index again). The pool is sized at load by Little's law
   (rate x mean lifetime x headroom), so after creation it never calls the allocator: the
   `allocator calls` counter stays put while millions of sparks come and go.

   A few sparks are followed by sp_handle, drawn as boxes: they move around the array with every
   swap-remove, and the handle still finds them until they die (then another one is picked).

   Front ends: an SDL2 window when there is a display; `--headless` renders offscreen with SDL's
   software renderer, writes `--screenshot` and prints the counters as key=value lines (what the
   ctest check reads); `--terminal` (or no SDL2 / no display) prints frame times once per
   simulated second. `particles --help` lists the flags.

   Sections, raylib-style: Options, Simulation, Drawing, Front ends, Main. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "demo_args.h"
#include "particles_sim.h"

#ifdef SP_HAVE_SDL2
#  include "demo_sdl.h"
#endif

#define PT_TIMES 256             /* frame-time ring for the p99 */

/* ---------------------------------------------------------------------------------------------
   Options
   ------------------------------------------------------------------------------------------ */
typedef struct pt_options {
    double rate;            /* sparks per second */
    size_t max;             /* pool cap (0: Little's law) */
    sp_overflow policy;
    unsigned frames;        /* headless / terminal run length */
    unsigned seed;
    const char *screenshot;
    bool headless, terminal;
} pt_options;

/* @return DEMO_ARGS_RUN to run, else the exit code (0 after --help, 2 on a bad flag). */
static int pt_parse(int argc, char **argv, pt_options *o) {
    memset(o, 0, sizeof *o);
    o->rate = 60000.0;
    long max = 0, seed = 1, frames = 0;
    int policy = 0;
    bool headless = false, terminal = false;
    const demo_opt opts[] = {
        {"rate", DEMO_OPT_DOUBLE, &o->rate, 1, 2e6, NULL, "N",
         "sparks per second (default 60000)"},
        {"max", DEMO_OPT_LONG, &max, 1, 1 << 24, NULL, "N",
         "pool cap (default rate x 2.0 s mean life x 1.25 headroom)"},
        {"policy", DEMO_OPT_CHOICE, &policy, 0, 0, "drop|reclaim", "P",
         "when the pool is full: drop (default) or reclaim"},
        {"seed", DEMO_OPT_LONG, &seed, 0, 4294967295.0, NULL, "N", "random seed (default 1)"},
        {"frames", DEMO_OPT_LONG, &frames, 1, 1e7, NULL, "N",
         "frames to run (default: 200 headless, 600 in the terminal, a window\n"
         "runs until esc)"},
        {"headless", DEMO_OPT_FLAG, &headless, 0, 0, NULL, NULL,
         "render offscreen (no display needed), write --screenshot, print\n"
         "the counters as key=value lines"},
        {"screenshot", DEMO_OPT_STRING, &o->screenshot, 0, 0, NULL, "FILE",
         "PNG of the last frame (with --headless, or in a window; the\n"
         "terminal front end draws no picture, so there it is an error)"},
        {"terminal", DEMO_OPT_FLAG, &terminal, 0, 0, NULL, NULL, "never open a window"},
        {0},
    };
    int rc = demo_args_parse("particles",
        "100k+ sparks in an sp_dense pool: spawned at a rate, integrated, swap-removed when\n"
        "spent. Opens a window when a display is available, else prints frame times.",
        "Window keys: up/down spawn rate, c clear, space pause, esc quit.", opts, argc, argv);
    if (rc != DEMO_ARGS_RUN) return rc;
    o->max = (size_t)max;
    o->seed = (unsigned)seed;
    o->frames = (unsigned)frames;
    o->policy = policy ? SP_OVERFLOW_RECLAIM : SP_OVERFLOW_DROP;
    o->headless = headless;
    o->terminal = terminal;
    return DEMO_ARGS_RUN;
}

/* Frame times: a ring of the last PT_TIMES, for the average and the p99. */
typedef struct pt_times {
    double ms[PT_TIMES];
    unsigned n, at;
    double sum_all;
    unsigned long long n_all;
} pt_times;

static void pt_times_add(pt_times *t, double ms) {
    t->ms[t->at] = ms;
    t->at = (t->at + 1) % PT_TIMES;
    if (t->n < PT_TIMES) t->n++;
    t->sum_all += ms;
    t->n_all++;
}

static int pt_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double pt_times_p99(const pt_times *t) {
    if (t->n == 0) return 0.0;
    double sorted[PT_TIMES];
    memcpy(sorted, t->ms, t->n * sizeof(double));
    qsort(sorted, t->n, sizeof(double), pt_cmp_double);
    return sorted[(t->n * 99) / 100];
}

static double pt_times_avg(const pt_times *t) { return t->n_all ? t->sum_all / (double)t->n_all : 0; }

static double pt_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static void pt_kv_print(FILE *out, const pt_sim *s, const pt_times *update, const pt_times *frame) {
    sp_stats st;
    sp_dense_stats_get(s->sparks, &st);
    fprintf(out, "frames=%llu\nrate=%.0f\nparticles=%zu\ncapacity=%zu\nmax=%zu\npeak=%zu\n",
            s->frame, s->rate, st.leased, st.size, st.max, st.peak_leased);
    fprintf(out, "spawned=%llu\nremoved=%llu\nmoves=%llu\ndropped=%llu\nreclaimed=%llu\n",
            (unsigned long long)st.acquired, (unsigned long long)st.released, s->moves,
            (unsigned long long)st.dropped, (unsigned long long)st.reclaimed);
    /* the pool's counters against its count: every spark spawned is alive or was removed */
    fprintf(out, "unaccounted=%lld\n",
            (long long)(st.acquired - st.released) - (long long)sp_dense_count(s->sparks));
    fprintf(out, "created=%llu\nbytes=%zu\nalloc_calls=%llu\nalloc_calls_after_create=%llu\n",
            (unsigned long long)st.created, st.bytes, s->allocs.calls,
            s->allocs.calls - s->allocs_after_create);
    fprintf(out, "handle_checks=%llu\nhandle_wrong=%llu\nhandle_expired=%llu\n",
            s->tracked_checks, s->tracked_wrong, s->tracked_lost);
    fprintf(out, "update_ms_avg=%.3f\nupdate_ms_p99=%.3f\n", pt_times_avg(update),
            pt_times_p99(update));
    if (frame)
        fprintf(out, "frame_ms_avg=%.3f\nframe_ms_p99=%.3f\n", pt_times_avg(frame),
                pt_times_p99(frame));
}

/* ---------------------------------------------------------------------------------------------
   Terminal front end: the simulation alone, a line of timings per simulated second.
   ------------------------------------------------------------------------------------------ */
static int pt_run_terminal(const pt_options *o) {
    pt_sim s;
    if (pt_sim_init(&s, o->rate, o->max, o->policy, o->seed) != 0) return 1;
    pt_times update = {0};
    unsigned frames = o->frames ? o->frames : 600;
    sp_stats st0;
    sp_dense_stats_get(s.sparks, &st0);
    printf("particles (terminal): %u frames at 60 Hz, %.0f sparks/s, cap %zu\n", frames, o->rate,
           st0.max);
    for (unsigned f = 0; f < frames; f++) {
        double t0 = pt_now_ms();
        pt_step(&s, PT_W, PT_H);
        pt_times_add(&update, pt_now_ms() - t0);
        if (s.frame % 60 == 0) {
            sp_stats st;
            sp_dense_stats_get(s.sparks, &st);
            printf("t=%5.1fs  particles=%7zu  update %6.3f ms (p99 %6.3f)  dropped=%llu  "
                   "allocator calls since load=%llu\n",
                   (double)s.frame / 60.0, st.leased, update.ms[(update.at + PT_TIMES - 1) % PT_TIMES],
                   pt_times_p99(&update), (unsigned long long)st.dropped,
                   s.allocs.calls - s.allocs_after_create);
        }
    }
    pt_kv_print(stdout, &s, &update, NULL);
    pt_sim_fini(&s);
    return 0;
}

/* ---------------------------------------------------------------------------------------------
   Drawing (SDL2): sparks are added into an XRGB framebuffer (overlaps glow), which is uploaded
   to a streaming texture; the HUD and the tracked sparks' boxes are drawn with the renderer.
   ------------------------------------------------------------------------------------------ */
#ifdef SP_HAVE_SDL2

typedef struct pt_gfx {
    SDL_Renderer *renderer;
    SDL_Texture *texture;
    pt_fb fb;
} pt_gfx;

static int pt_gfx_init(pt_gfx *g, SDL_Renderer *r) {
    memset(g, 0, sizeof *g);
    g->renderer = r;
    g->texture = SDL_CreateTexture(r, SDL_PIXELFORMAT_RGB888, SDL_TEXTUREACCESS_STREAMING, PT_W, PT_H);
    if (!g->texture || pt_fb_init(&g->fb) != 0) {
        fprintf(stderr, "particles: cannot make the framebuffer: %s\n", SDL_GetError());
        if (g->texture) SDL_DestroyTexture(g->texture);
        return -1;
    }
    return 0;
}

static void pt_gfx_fini(pt_gfx *g) {
    SDL_DestroyTexture(g->texture);
    pt_fb_fini(&g->fb);
}

static void pt_draw(pt_gfx *g, const pt_sim *s, const pt_times *frame, const pt_times *update,
                    int paused) {
    pt_fb_draw(&g->fb, s);
    SDL_UpdateTexture(g->texture, NULL, g->fb.pixels, PT_W * (int)sizeof(uint32_t));
    SDL_RenderCopy(g->renderer, g->texture, NULL, NULL);

    sp_stats st;
    sp_dense_stats_get(s->sparks, &st);
    char hud[512];
    snprintf(hud, sizeof hud,
             "SP_DENSE PARTICLES%s\n"
             "LIVE %zu / CAP %zu   SPAWN %.0f/S\n"
             "FRAME %.2f MS (P99 %.2f)   UPDATE %.2f MS\n"
             "SPAWNED %llu  REMOVED %llu  MOVED %llu\n"
             "DROPPED %llu  ALLOCATOR CALLS SINCE LOAD %llu\n"
             "HANDLES FOLLOWED %d  CHECKS %llu  WRONG %llu",
             paused ? "  (PAUSED)" : "", st.leased, st.size, s->rate,
             frame->n ? frame->ms[(frame->at + PT_TIMES - 1) % PT_TIMES] : 0.0, pt_times_p99(frame),
             update->n ? update->ms[(update->at + PT_TIMES - 1) % PT_TIMES] : 0.0,
             (unsigned long long)st.acquired, (unsigned long long)st.released, s->moves,
             (unsigned long long)st.dropped, s->allocs.calls - s->allocs_after_create,
             PT_TRACKED, s->tracked_checks, s->tracked_wrong);
    SDL_SetRenderDrawBlendMode(g->renderer, SDL_BLENDMODE_BLEND);
    SDL_SetRenderDrawColor(g->renderer, 0, 0, 0, 150);
    SDL_Rect panel = {8, 8, 360, 64};
    SDL_RenderFillRect(g->renderer, &panel);
    SDL_SetRenderDrawColor(g->renderer, 235, 235, 220, 255);
    demo_text_draw(g->renderer, 14, 14, 1, hud);
}

/* ---------------------------------------------------------------------------------------------
   Headless front end: software renderer on an offscreen surface, no display needed.
   ------------------------------------------------------------------------------------------ */
static int pt_run_headless(const pt_options *o) {
    unsigned frames = o->frames ? o->frames : 200;
    if (SDL_Init(0) != 0) {
        fprintf(stderr, "particles: SDL_Init: %s\n", SDL_GetError());
        return 1;
    }
    SDL_Surface *surface = SDL_CreateRGBSurfaceWithFormat(0, PT_W, PT_H, 32, SDL_PIXELFORMAT_RGB888);
    SDL_Renderer *r = surface ? SDL_CreateSoftwareRenderer(surface) : NULL;
    pt_sim s;
    pt_gfx g;
    int rc = 1;
    if (!r) {
        fprintf(stderr, "particles: software renderer: %s\n", SDL_GetError());
        goto out_sdl;
    }
    if (pt_sim_init(&s, o->rate, o->max, o->policy, o->seed) != 0) goto out_sdl;
    if (pt_gfx_init(&g, r) != 0) goto out_sim;
    pt_times update = {0}, frame = {0};
    for (unsigned f = 0; f < frames; f++) {
        double t0 = pt_now_ms();
        pt_step(&s, PT_W, PT_H);
        double t1 = pt_now_ms();
        pt_draw(&g, &s, &frame, &update, 0);
        pt_times_add(&update, t1 - t0);
        pt_times_add(&frame, pt_now_ms() - t0);
    }
    rc = 0;
    if (o->screenshot) {
        if (demo_screenshot(r, o->screenshot) != 0) {
            fprintf(stderr, "particles: cannot write %s: %s\n", o->screenshot, SDL_GetError());
            rc = 1;
        }
    }
    pt_kv_print(stdout, &s, &update, &frame);
    /* lit pixels of the last frame, so a check can tell sparks from an empty background */
    size_t lit = 0;
    for (size_t i = 0; i < (size_t)PT_W * PT_H; i++) lit += (g.fb.pixels[i] & 0xFF0000u) > 0x200000u;
    printf("lit_pixels=%zu\nscreenshot=%s\n", lit, o->screenshot ? o->screenshot : "");
    pt_gfx_fini(&g);
out_sim:
    pt_sim_fini(&s);
out_sdl:
    if (r) SDL_DestroyRenderer(r);
    if (surface) SDL_FreeSurface(surface);
    SDL_Quit();
    return rc;
}

/* ---------------------------------------------------------------------------------------------
   Window front end
   ------------------------------------------------------------------------------------------ */
static int pt_run_window(const pt_options *o) {
    if (SDL_Init(SDL_INIT_VIDEO) != 0) return -1; /* no display: the caller falls back */
    SDL_Window *win = SDL_CreateWindow("spawnpool: sp_dense particles", SDL_WINDOWPOS_CENTERED,
                                       SDL_WINDOWPOS_CENTERED, PT_W, PT_H, 0);
    SDL_Renderer *r = win ? SDL_CreateRenderer(win, -1, SDL_RENDERER_PRESENTVSYNC) : NULL;
    if (!r && win) r = SDL_CreateRenderer(win, -1, SDL_RENDERER_SOFTWARE);
    if (!r) {
        if (win) SDL_DestroyWindow(win);
        SDL_Quit();
        return -1;
    }
    pt_options opt = *o;
    pt_sim s;
    pt_gfx g;
    int rc = 1;
    if (pt_sim_init(&s, opt.rate, opt.max, opt.policy, opt.seed) != 0) goto out_sdl;
    if (pt_gfx_init(&g, r) != 0) goto out_sim;
    pt_times update = {0}, frame = {0};
    int running = 1, paused = 0, shot_rc = 0;
    double last = pt_now_ms();
    while (running) {
        SDL_Event ev;
        while (SDL_PollEvent(&ev)) {
            if (ev.type == SDL_QUIT) running = 0;
            if (ev.type != SDL_KEYDOWN) continue;
            switch (ev.key.keysym.sym) {
            case SDLK_ESCAPE: case SDLK_q: running = 0; break;
            case SDLK_UP: s.rate = s.rate * 1.25 > 2e6 ? 2e6 : s.rate * 1.25; break;
            case SDLK_DOWN: s.rate = s.rate / 1.25 < 100 ? 100 : s.rate / 1.25; break;
            case SDLK_c: sp_dense_clear(s.sparks); break;
            case SDLK_SPACE: paused = !paused; break;
            default: break;
            }
        }
        double t0 = pt_now_ms();
        if (!paused) pt_step(&s, PT_W, PT_H);
        double t1 = pt_now_ms();
        pt_draw(&g, &s, &frame, &update, paused);
        if (!paused) pt_times_add(&update, t1 - t0);
        pt_times_add(&frame, pt_now_ms() - t0);
        if (opt.frames && s.frame >= opt.frames) running = 0; /* --frames ends a window run */
        /* the screenshot reads the back buffer, so it comes before the present */
        if (!running && opt.screenshot) shot_rc = demo_screenshot(r, opt.screenshot);
        SDL_RenderPresent(r);
        /* fixed simulation step: without vsync, do not run faster than 60 Hz */
        double now = pt_now_ms(), wait = 1000.0 / 60.0 - (now - last);
        if (wait > 1.0) SDL_Delay((Uint32)wait);
        last = pt_now_ms();
    }
    rc = shot_rc != 0;
    if (shot_rc != 0) fprintf(stderr, "particles: cannot write %s\n", opt.screenshot);
    pt_kv_print(stdout, &s, &update, &frame);
    pt_gfx_fini(&g);
out_sim:
    pt_sim_fini(&s);
out_sdl:
    SDL_DestroyRenderer(r);
    SDL_DestroyWindow(win);
    SDL_Quit();
    return rc;
}

#else /* no SDL2: the terminal is the only front end */

static int pt_run_window(const pt_options *o) {
    (void)o;
    return -1;
}

static int pt_run_headless(const pt_options *o) {
    (void)o;
    fprintf(stderr, "particles: built without SDL2, so no --headless (install libsdl2-dev)\n");
    return 2;
}

#endif

/* ---------------------------------------------------------------------------------------------
   Main: pick the front end
   ------------------------------------------------------------------------------------------ */
int main(int argc, char **argv) {
    pt_options o;
    int rc = pt_parse(argc, argv, &o);
    if (rc != DEMO_ARGS_RUN) return rc;
    if (o.headless) return pt_run_headless(&o);
    const char *x11 = getenv("DISPLAY"), *wayland = getenv("WAYLAND_DISPLAY");
    if (!o.terminal && ((x11 && *x11) || (wayland && *wayland))) {
        rc = pt_run_window(&o);
        if (rc >= 0) return rc;
    }
    /* The terminal prints numbers, not a picture: say so rather than write nothing. */
    if (o.screenshot)
        return demo_args_error("particles", "--screenshot needs a picture: add --headless, or "
                                            "run in a window (the terminal draws none)");
    return pt_run_terminal(&o);
}
