/* SPDX-License-Identifier: Zlib */
/* fountain: the same fountain of sparks run twice, pooled and spawn-and-destroy.

   The left fountain's sparks live in an sp_pool: built once (create), handed out at launch
   (on_acquire) and taken back when spent (on_release). The right fountain's sparks are
   malloc'ed at launch and freed when spent. Both are driven by the same random seed, so they
   look the same; the counters under each show the difference: once warm, the pool stops
   calling the allocator while spawn-and-destroy calls it twice per spark.

   It opens an SDL2 window when there is a display (keys change the rate, the cap and the
   policy), animates the terminal when stdout is one, and otherwise logs once per second. It
   ends by itself and prints a side-by-side summary. `fountain --help` lists the flags.

   This file holds the options, the terminal front end and the summary; fountain_sim.c the
   simulation; fountain_sdl.c the window and the headless renderer. */
#define _POSIX_C_SOURCE 200809L
#include "fountain_sim.h"

#include "demo_args.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#define FS_TERM_SECONDS 9.0
#define FS_TERM_COUNTER_ROWS 7
/* Lines around the fountain rows: 2 of header, 2 of frame, the counters, 1 for the cursor. */
#define FS_TERM_CHROME (2 + 2 + FS_TERM_COUNTER_ROWS + 1)

static volatile sig_atomic_t fs_stop = 0;

static void fs_on_signal(int sig) {
    (void)sig;
    fs_stop = 1;
}

/* ---------------------------------------------------------------------------------------------
   Options
   ------------------------------------------------------------------------------------------ */
/* @return DEMO_ARGS_RUN to run, else the exit code (0 after --help, 2 on a bad flag). */
static int fs_parse(int argc, char **argv, fs_options *opt) {
    memset(opt, 0, sizeof *opt);
    opt->sim.rate = 2000.0;
    long cap = 0, seed = 1, frames = 300;
    int policy = 0;
    const demo_opt opts[] = {
        {"rate", DEMO_OPT_DOUBLE, &opt->sim.rate, 1, 200000, NULL, "N",
         "sparks per second (default 2000)"},
        {"seconds", DEMO_OPT_DOUBLE, &opt->seconds, 0.1, 86400, NULL, "S",
         "run length (default 9 in the terminal, 30 in a window)"},
        {"cap", DEMO_OPT_LONG, &cap, 1, 1e7, NULL, "N",
         "pool max (default rate x 2.5 s; prewarmed to rate x 1.9 s)"},
        {"policy", DEMO_OPT_CHOICE, &policy, 0, 0, "drop|reclaim|grow", "P",
         "when the pool is full: drop (default), reclaim or grow"},
        {"seed", DEMO_OPT_LONG, &seed, 1, 4294967295.0, NULL, "N",
         "random seed (default 1); both fountains use the same one"},
        {"terminal", DEMO_OPT_FLAG, &opt->terminal, 0, 0, NULL, NULL, "never open a window"},
        {"headless", DEMO_OPT_FLAG, &opt->headless, 0, 0, NULL, NULL,
         "render offscreen (no display needed), write --screenshot, print\n"
         "the counters as key=value lines"},
        {"frames", DEMO_OPT_LONG, &frames, 1, 1e6, NULL, "N",
         "frames to render with --headless (default 300, 60 per second)"},
        {"kv", DEMO_OPT_FLAG, &opt->kv, 0, 0, NULL, NULL,
         "also print the counters as key=value lines (always with --headless)"},
        {"screenshot", DEMO_OPT_STRING, &opt->screenshot, 0, 0, NULL, "FILE",
         "PNG of the last frame (with --headless, or in a window; the\n"
         "terminal front end draws no picture, so there it is an error)"},
        {0},
    };
    int rc = demo_args_parse("fountain",
        "The same fountain of sparks, pooled (sp_pool) and spawn-and-destroy (malloc/free),\n"
        "with live counters. Opens a window when a display is available, else animates the\n"
        "terminal (or logs once per second when stdout is not a terminal), then prints a summary.",
        "Window keys: up/down spawn rate, +/- pool cap, p overflow policy, esc quit.", opts,
        argc, argv);
    if (rc != DEMO_ARGS_RUN) return rc;
    static const sp_overflow policies[] = {SP_OVERFLOW_DROP, SP_OVERFLOW_RECLAIM,
                                           SP_OVERFLOW_GROW};
    opt->sim.policy = policies[policy];
    opt->sim.cap = (size_t)cap;
    opt->sim.seed = (uint32_t)seed;
    opt->frames = (unsigned)frames;
    return DEMO_ARGS_RUN;
}

/* ---------------------------------------------------------------------------------------------
   Summary
   ------------------------------------------------------------------------------------------ */
void fs_summary_print(FILE *out, const fs_sim *sim, double seconds) {
    fs_result p, m;
    fs_sim_result(sim, FS_POOLED, &p);
    fs_sim_result(sim, FS_MALLOC, &m);
    char warm[64];
    if (sim->warm) snprintf(warm, sizeof warm, "steady after %.1f s", sim->cfg.warmup);
    else snprintf(warm, sizeof warm, "ended before the %.1f s warm-up", sim->cfg.warmup);
    fprintf(out, "\nsummary: %.1f s, %.0f sparks/s, pool cap %zu, policy %s, %s\n", seconds,
            sim->cfg.rate, sim->cfg.cap, fs_policy_name(sim->cfg.policy), warm);
    fprintf(out, "  %-32s %16s %20s\n", "", "pooled (sp_pool)", "spawn-and-destroy");
    fprintf(out, "  %-32s %16llu %20llu\n", "allocator calls, steady state",
            (unsigned long long)p.steady_alloc_calls, (unsigned long long)m.steady_alloc_calls);
    fprintf(out, "  %-32s %16llu %20llu\n", "allocator calls, whole run",
            (unsigned long long)p.alloc_calls, (unsigned long long)m.alloc_calls);
    fprintf(out, "  %-32s %16llu %20llu\n", "sparks built (created)",
            (unsigned long long)p.created, (unsigned long long)m.created);
    fprintf(out, "  %-32s %16llu %20llu\n", "  of which after warm-up",
            (unsigned long long)(p.created - p.created_at_warm),
            (unsigned long long)(m.created - m.created_at_warm));
    fprintf(out, "  %-32s %16zu %20zu\n", "peak live", p.peak, m.peak);
    fprintf(out, "  %-32s %16.3f %20.3f\n", "update ms p50", p.p50_ms, m.p50_ms);
    fprintf(out, "  %-32s %16.3f %20.3f\n", "update ms p99", p.p99_ms, m.p99_ms);
    char drops[64];
    snprintf(drops, sizeof drops, "%llu / %llu / %llu", (unsigned long long)p.dropped,
             (unsigned long long)p.reclaimed, (unsigned long long)p.grown);
    fprintf(out, "  %-32s %16s %20s\n", "dropped / reclaimed / grown", drops, "-");
    if (sim->log_lines)
        fprintf(out, "  pool log: %u line(s), last: %s\n", sim->log_lines, sim->log_last);
    if (sim->warm) {
        double steady_s = sim->t - sim->cfg.warmup;
        fprintf(out, "once warm: pooled %llu allocator calls, spawn-and-destroy %llu (%.0f per "
                     "second)\n",
                (unsigned long long)p.steady_alloc_calls, (unsigned long long)m.steady_alloc_calls,
                steady_s > 0 ? (double)m.steady_alloc_calls / steady_s : 0.0);
    }
}

void fs_kv_print(FILE *out, const fs_sim *sim) {
    fprintf(out, "frames=%llu\nseconds=%.3f\nrate=%.0f\ncap=%zu\npolicy=%s\nwarm=%d\n",
            (unsigned long long)sim->frame, sim->t, sim->cfg.rate, sim->cfg.cap,
            fs_policy_name(sim->cfg.policy), sim->warm ? 1 : 0);
    static const char *const prefix[FS_SIDES] = {"pooled", "malloc"};
    for (int i = 0; i < FS_SIDES; i++) {
        fs_result r;
        fs_counters c;
        fs_sim_result(sim, i, &r);
        fs_sim_counters(sim, i, &c);
        const char *n = prefix[i];
        fprintf(out, "%s_live=%zu\n%s_free=%zu\n%s_size=%zu\n%s_peak=%zu\n", n, c.live, n, c.free,
                n, c.size, n, r.peak);
        fprintf(out, "%s_created=%llu\n%s_created_at_warmup=%llu\n%s_created_steady=%llu\n", n,
                (unsigned long long)r.created, n, (unsigned long long)r.created_at_warm, n,
                (unsigned long long)(r.created - r.created_at_warm));
        fprintf(out, "%s_alloc_calls=%llu\n%s_steady_alloc_calls=%llu\n", n,
                (unsigned long long)r.alloc_calls, n, (unsigned long long)r.steady_alloc_calls);
        fprintf(out, "%s_dropped=%llu\n%s_reclaimed=%llu\n%s_grown=%llu\n", n,
                (unsigned long long)r.dropped, n, (unsigned long long)r.reclaimed, n,
                (unsigned long long)r.grown);
        fprintf(out, "%s_p50_ms=%.4f\n%s_p99_ms=%.4f\n", n, r.p50_ms, n, r.p99_ms);
    }
}

/* ---------------------------------------------------------------------------------------------
   Terminal front end
   ------------------------------------------------------------------------------------------ */
typedef struct fs_term {
    char *buf;
    size_t len, cap;
    int w, h;            /* fountain cells per panel */
    unsigned *count;     /* sparks per cell */
    float *age;          /* sum of age fractions per cell */
} fs_term;

#if defined(__GNUC__) /* gcc and clang check fs_put's format strings like printf's */
static void fs_put(fs_term *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#endif

static void fs_put(fs_term *t, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap);
    va_end(ap);
    if (n > 0) t->len += (size_t)n < t->cap - t->len ? (size_t)n : t->cap - t->len - 1;
}

static void fs_term_cell(const fs_spark *s, void *user) {
    fs_term *t = user;
    int cx = (int)((s->x + FS_WORLD_HALF_W) / (2.0f * FS_WORLD_HALF_W) * (float)t->w);
    int cy = t->h - 1 - (int)(s->y / FS_WORLD_H * (float)t->h);
    if (cx < 0 || cx >= t->w || cy < 0 || cy >= t->h) return;
    t->count[cy * t->w + cx]++;
    t->age[cy * t->w + cx] += s->age / s->life;
}

/* One row of one panel's fountain: density picks the character, mean age the colour (white
   hot at the nozzle, through yellow and orange, to red as sparks burn out). */
static void fs_term_row(fs_term *t, int side, int row, double scale) {
    static const char ramp[] = " .:+*#@";
    static const int heat[] = {231, 229, 226, 220, 214, 208, 202, 196, 160};
    int last_colour = -1;
    for (int x = 0; x < t->w; x++) {
        size_t k = (size_t)side * (size_t)(t->w * t->h) + (size_t)(row * t->w + x);
        unsigned n = t->count[k];
        if (n == 0) {
            fs_put(t, " ");
            continue;
        }
        double d = (double)n / scale;
        int level = d < 1 ? 1 : d < 2 ? 2 : d < 4 ? 3 : d < 8 ? 4 : d < 16 ? 5 : 6;
        int colour = heat[(int)(t->age[k] / (float)n * 8.99f)];
        if (colour != last_colour) fs_put(t, "\x1b[38;5;%dm", colour);
        last_colour = colour;
        fs_put(t, "%c", ramp[level]);
    }
    fs_put(t, "\x1b[0m");
}

static void fs_term_draw(fs_term *t, const fs_sim *sim, double seconds) {
    static const int accent[FS_SIDES] = {51, 208};
    static const char *const title[FS_SIDES] = {" POOLED: sp_pool ", " SPAWN-AND-DESTROY: malloc/free "};
    size_t cells = (size_t)(t->w * t->h);
    memset(t->count, 0, 2 * cells * sizeof *t->count);
    memset(t->age, 0, 2 * cells * sizeof *t->age);
    fs_counters c[FS_SIDES];
    for (int i = 0; i < FS_SIDES; i++) {
        fs_term cell = *t;
        cell.count = t->count + (size_t)i * cells;
        cell.age = t->age + (size_t)i * cells;
        fs_sim_each(sim, i, fs_term_cell, &cell);
        fs_sim_counters(sim, i, &c[i]);
    }
    /* Density steps scale with the crowd and with the area a cell covers, so that a busier
       fountain or a smaller terminal does not turn into a solid block. */
    size_t crowd = c[FS_MALLOC].live > c[FS_POOLED].live ? c[FS_MALLOC].live : c[FS_POOLED].live;
    double scale = (double)crowd / 1500.0 * (46.0 * 16.0) / (double)(t->w * t->h);
    if (scale < 0.25) scale = 0.25;

    t->len = 0;
    fs_put(t, "\x1b[H\x1b[1m spawnpool fountain\x1b[0m  the same sparks, two ways"
              "   \x1b[2mt %4.1f / %.0f s\x1b[0m\x1b[K\n", sim->t, seconds);
    fs_put(t, " rate \x1b[1m%.0f\x1b[0m sparks/s   pool cap \x1b[1m%zu\x1b[0m   policy "
              "\x1b[1m%s\x1b[0m   %s\x1b[K\n",
           sim->cfg.rate, sim->cfg.cap, fs_policy_name(sim->cfg.policy),
           sim->warm ? "\x1b[32msteady state\x1b[0m" : "\x1b[33mwarming up\x1b[0m");
    for (int i = 0; i < FS_SIDES; i++) {
        int dashes = t->w - (int)strlen(title[i]) - 1;
        fs_put(t, "%s\x1b[38;5;%dm+-\x1b[1m%s\x1b[22m", i ? " " : "", accent[i], title[i]);
        for (int k = 0; k < dashes; k++) fs_put(t, "-");
        fs_put(t, "+\x1b[0m");
    }
    fs_put(t, "\x1b[K\n");
    for (int row = 0; row < t->h; row++) {
        for (int i = 0; i < FS_SIDES; i++) {
            fs_put(t, "%s\x1b[38;5;%dm|\x1b[0m", i ? " " : "", accent[i]);
            fs_term_row(t, i, row, scale);
            fs_put(t, "\x1b[38;5;%dm|\x1b[0m", accent[i]);
        }
        fs_put(t, "\x1b[K\n");
    }
    for (int i = 0; i < FS_SIDES; i++) { /* the basin */
        fs_put(t, "%s\x1b[38;5;%dm+\x1b[38;5;39m", i ? " " : "", accent[i]);
        for (int k = 0; k < t->w; k++) fs_put(t, "%s", k == t->w / 2 ? "A" : "~");
        fs_put(t, "\x1b[38;5;%dm+\x1b[0m", accent[i]);
    }
    fs_put(t, "\x1b[K\n");

    /* Counters, one column per side, under its fountain; colour marks the allocator lines. */
    enum { ROWS = FS_TERM_COUNTER_ROWS };
    char txt[FS_SIDES][ROWS][64];
    const char *tone[FS_SIDES][ROWS] = {{0}};
    for (int i = 0; i < FS_SIDES; i++) {
        const fs_counters *k = &c[i];
        unsigned per_s = 0;
        for (int f = 60; f < 120; f++) per_s += k->calls_hist[f];
        char(*l)[64] = txt[i];
        char cap[24] = "-", free_txt[24] = "-";
        if (i == FS_POOLED) {
            snprintf(cap, sizeof cap, "%zu", k->max);
            snprintf(free_txt, sizeof free_txt, "%zu", k->free);
        }
        snprintf(l[0], 64, "live    %7zu   free    %7s", k->live, free_txt);
        snprintf(l[1], 64, "size    %7zu   cap     %7s", k->size, cap);
        snprintf(l[2], 64, "created %7llu   peak    %7zu", (unsigned long long)k->created, k->peak);
        snprintf(l[3], 64, "allocator calls   %7llu", (unsigned long long)k->alloc_calls);
        snprintf(l[4], 64, "allocator calls/s %7u", per_s);
        tone[i][4] = per_s ? "\x1b[1;31m" : "\x1b[1;32m";
        snprintf(l[5], 64, "update ms %7.3f   p99 %7.3f", k->frame_ms, k->p99_ms);
        if (i == FS_POOLED)
            snprintf(l[6], 64, "dropped %llu  reclaimed %llu  grown %llu",
                     (unsigned long long)k->dropped, (unsigned long long)k->reclaimed,
                     (unsigned long long)k->grown);
        else
            snprintf(l[6], 64, "each spark: 1 malloc + 1 free");
        /* the overflow policy at work is worth noticing */
        tone[i][6] = k->dropped || k->reclaimed || k->grown ? "\x1b[33m" : "\x1b[2m";
    }
    for (int row = 0; row < ROWS; row++) {
        for (int i = 0; i < FS_SIDES; i++) {
            int pad = t->w - (int)strlen(txt[i][row]); /* columns as wide as the panels */
            fs_put(t, "%s  %s%s\x1b[0m%*s", i ? " " : "", tone[i][row] ? tone[i][row] : "",
                   txt[i][row], pad > 0 ? pad : 0, "");
        }
        fs_put(t, "\x1b[K\n");
    }
    fs_put(t, "\x1b[J");
    fwrite(t->buf, 1, t->len, stdout);
    fflush(stdout);
}

static void fs_sleep_until(double deadline_ms, double now_ms) {
    if (deadline_ms <= now_ms) return;
    double d = (deadline_ms - now_ms) * 1e-3;
    struct timespec ts = {(time_t)d, (long)((d - floor(d)) * 1e9)};
    nanosleep(&ts, NULL);
}

static double fs_wall_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static void fs_log_second(const fs_sim *sim, uint64_t calls_before[FS_SIDES]) {
    fs_counters p, m;
    fs_sim_counters(sim, FS_POOLED, &p);
    fs_sim_counters(sim, FS_MALLOC, &m);
    printf("t=%4.1fs  pooled: live %5zu size %5zu created %6llu alloc calls %6llu (+%llu)"
           "  |  malloc: live %5zu created %7llu alloc calls %7llu (+%llu)"
           "  |  update ms %.3f vs %.3f\n",
           sim->t, p.live, p.size, (unsigned long long)p.created,
           (unsigned long long)p.alloc_calls,
           (unsigned long long)(p.alloc_calls - calls_before[FS_POOLED]), m.live,
           (unsigned long long)m.created, (unsigned long long)m.alloc_calls,
           (unsigned long long)(m.alloc_calls - calls_before[FS_MALLOC]), p.frame_ms, m.frame_ms);
    calls_before[FS_POOLED] = p.alloc_calls;
    calls_before[FS_MALLOC] = m.alloc_calls;
    fflush(stdout);
}

static int fs_run_terminal(const fs_options *opt) {
    double seconds = opt->seconds > 0 ? opt->seconds : FS_TERM_SECONDS;
    fs_sim sim;
    if (!fs_sim_start(&sim, &opt->sim, seconds, (size_t)(seconds * 60.0) + 1)) return 1;
    bool tty = isatty(STDOUT_FILENO);
    fs_term t = {0};
    if (tty) {
        /* Fit the terminal: two panels side by side, as tall as the lines allow (an 80x24
           terminal gets 37x12 cells per fountain). */
        struct winsize ws;
        bool known = ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col && ws.ws_row;
        int cols = known ? ws.ws_col : 80, lines = known ? ws.ws_row : 24;
        t.w = (cols - 5) / 2;
        t.w = t.w > 46 ? 46 : t.w < 30 ? 30 : t.w;
        t.h = lines - FS_TERM_CHROME;
        t.h = t.h > 16 ? 16 : t.h < 8 ? 8 : t.h;
        t.cap = 64 * 1024;
        t.buf = malloc(t.cap);
        t.count = calloc(2 * (size_t)(t.w * t.h), sizeof *t.count);
        t.age = calloc(2 * (size_t)(t.w * t.h), sizeof *t.age);
        if (!t.buf || !t.count || !t.age) tty = false;
        else printf("\x1b[2J\x1b[?25l");
    }
    if (!tty)
        printf("spawnpool fountain: %.0f sparks/s for %.0f s, pool cap %zu, policy %s "
               "(pooled vs spawn-and-destroy)\n",
               sim.cfg.rate, seconds, sim.cfg.cap, fs_policy_name(sim.cfg.policy));
    signal(SIGINT, fs_on_signal);
    signal(SIGTERM, fs_on_signal);

    uint64_t calls_before[FS_SIDES] = {sim.side[0].alloc_calls, sim.side[1].alloc_calls};
    unsigned frames = (unsigned)lround(seconds * 60.0);
    double start = fs_wall_ms();
    for (unsigned f = 0; f < frames && !fs_stop; f++) {
        fs_sim_step(&sim);
        if (tty && f % 2 == 1) fs_term_draw(&t, &sim, seconds);
        if (!tty && sim.frame % 60 == 0) fs_log_second(&sim, calls_before);
        fs_sleep_until(start + (double)(f + 1) * FS_DT * 1e3, fs_wall_ms());
    }
    if (tty) {
        fs_term_draw(&t, &sim, seconds);
        printf("\x1b[?25h");
    }
    fs_summary_print(stdout, &sim, sim.t);
    if (opt->kv) fs_kv_print(stdout, &sim);
    free(t.buf);
    free(t.count);
    free(t.age);
    fs_sim_fini(&sim);
    return 0;
}

/* ---------------------------------------------------------------------------------------------
   Main: pick the front end
   ------------------------------------------------------------------------------------------ */
#ifndef SP_HAVE_SDL2
int fs_run_window(const fs_options *opt) {
    (void)opt;
    return -1;
}

int fs_run_headless(const fs_options *opt) {
    (void)opt;
    fprintf(stderr, "fountain: built without SDL2, so no --headless (install libsdl2-dev)\n");
    return 2;
}
#endif

int main(int argc, char **argv) {
    fs_options opt;
    int rc = fs_parse(argc, argv, &opt);
    if (rc != DEMO_ARGS_RUN) return rc;
    if (opt.headless) return fs_run_headless(&opt);
    const char *x11 = getenv("DISPLAY"), *wayland = getenv("WAYLAND_DISPLAY");
    if (!opt.terminal && ((x11 && *x11) || (wayland && *wayland))) {
        rc = fs_run_window(&opt);
        if (rc >= 0) return rc;
    }
    /* The terminal draws characters, not a picture: say so rather than write nothing. */
    if (opt.screenshot)
        return demo_args_error("fountain", "--screenshot needs a picture: add --headless, or "
                                           "run in a window (the terminal draws none)");
    return fs_run_terminal(&opt);
}
