/* SPDX-License-Identifier: Zlib */
/* fountain_sim.h -- the fountain demo's simulation, shared by its terminal and SDL front ends.

   One fountain of physics sparks is simulated twice from the same random seed: once with the
   sparks in an sp_pool (built once, acquired and released), once with every spark malloc'ed at
   birth and freed at death. Both sides see the same launches, so while the pool is not
   saturated they draw the very same fountain; what differs is what the counters show. */
#ifndef FOUNTAIN_SIM_H
#define FOUNTAIN_SIM_H

#include <spawnpool.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ---------------------------------------------------------------------------------------------
   World: metres and seconds, y up, the nozzle at the origin, the basin floor at y = 0.
   ------------------------------------------------------------------------------------------ */
#define FS_WORLD_HALF_W 3.6f
#define FS_WORLD_H 5.7f
#define FS_LIFE_MIN 1.0f /* a spark lives 1-2 s */
#define FS_LIFE_MAX 2.0f
#define FS_DT (1.0 / 60.0) /* fixed simulation step */

enum { FS_POOLED = 0, FS_MALLOC = 1, FS_SIDES = 2 };

typedef struct fs_spark {
    float x, y, vx, vy;     /* position (m), velocity (m/s) */
    float age, life;        /* seconds lived, seconds it will live */
    float drag;             /* set once by create: a property of the spark, not of a life */
    uint8_t tint;           /* 0..255, yellow-white to deep orange */
    uint8_t bounced;
    struct fs_spark *prev, *next; /* the side's list of live sparks, oldest first */
} fs_spark;

/* Both sides keep their live sparks in the same intrusive list (the pooled side links and
   unlinks in on_acquire/on_release), so their update loops are the same code and the only
   difference measured is where a spark's memory comes from. */
typedef struct fs_list {
    fs_spark *head, *tail;
} fs_list;

typedef struct fs_config {
    double rate;         /* sparks per second (=2000) */
    size_t cap;          /* pool max (=0: rate x 2.5 s, Little's law with headroom) */
    sp_overflow policy;  /* what the saturated pool does (=DROP) */
    uint32_t seed;       /* RNG seed (=0: 1) */
    double warmup;       /* seconds before the steady state (=0: 2 s, the longest life) */
    size_t frames_hint;  /* expected frames, to size the timing log (0 is fine) */
} fs_config;

/* What the overlays show for one side. The spawn-and-destroy side has free = 0, size = live. */
typedef struct fs_counters {
    size_t live, free, size, peak, max;
    uint64_t created;     /* sparks built: pool members, or malloc'ed sparks */
    uint64_t alloc_calls; /* calls into the allocator: pool chunks, or malloc + free */
    uint64_t dropped, reclaimed, grown;
    double frame_ms;      /* this side's update time, mean of the last 30 frames */
    double p99_ms;        /* 99th percentile over the last 300 frames */
    unsigned calls_hist[120]; /* allocator calls in each of the last 120 frames, oldest first */
} fs_counters;

/* The end-of-run numbers for one side. */
typedef struct fs_result {
    uint64_t steady_alloc_calls; /* allocator calls after warm-up */
    uint64_t alloc_calls, created, created_at_warm;
    size_t peak;
    double p50_ms, p99_ms;       /* over steady-state frames (all frames if none were steady) */
    uint64_t dropped, reclaimed, grown;
} fs_result;

#define FS_RECENT 300

typedef struct fs_side {
    uint32_t rng;
    double spawn_acc;
    uint64_t alloc_calls;
    uint64_t base_created, base_dropped, base_reclaimed, base_grown; /* from rebuilt pools */
    uint64_t calls_at_warm, created_at_warm;
    uint64_t frame_calls_start;
    unsigned calls_hist[120];
    float recent[FS_RECENT]; /* update ms, ring */
    unsigned recent_n, recent_pos;
    float *steady;           /* update ms of every steady-state frame */
    size_t steady_n, steady_cap;
} fs_side;

typedef struct fs_sim {
    fs_config cfg;
    sp_pool *pool;
    fs_list live[FS_SIDES];
    bool moving;           /* rebuilding the pool: old members leave no list */
    size_t m_live, m_peak;
    uint64_t m_created;
    fs_side side[FS_SIDES];
    double t;
    uint64_t frame;
    int first_side;         /* the side the last step timed first (see fs_sim_step) */
    bool warm;
    unsigned log_lines;    /* lines the pool logged (GROW warns); kept off the screen */
    char log_last[160];
} fs_sim;

/* Creates the pool (prewarmed for the rate) and the empty malloc side. @return false when the
   pool cannot be created (the reason is in sim->log_last). */
bool fs_sim_init(fs_sim *sim, const fs_config *cfg);
void fs_sim_fini(fs_sim *sim);
/* What every front end does first: fs_sim_init for a run of `seconds` over `frames` frames
   (warm-up: half the run, at most a spark's life), reporting a failure on stderr (then the sim
   is already finished). */
bool fs_sim_start(fs_sim *sim, const fs_config *base, double seconds, size_t frames);

/* Advances both sides by FS_DT: ages and moves sparks, ends spent ones, spawns new ones. */
void fs_sim_step(fs_sim *sim);

/* Live controls. The overflow policy is fixed when a pool is created (sp_desc.overflow), so
   changing it rebuilds the pool, moving the live sparks across; its counters carry on. */
void fs_sim_set_rate(fs_sim *sim, double rate);
void fs_sim_set_cap(fs_sim *sim, size_t cap);
bool fs_sim_set_policy(fs_sim *sim, sp_overflow policy);

void fs_sim_counters(const fs_sim *sim, int side, fs_counters *out);
void fs_sim_result(const fs_sim *sim, int side, fs_result *out);

/* Calls fn on every live spark of a side, oldest first. */
typedef void (*fs_spark_fn)(const fs_spark *spark, void *user);
void fs_sim_each(const fs_sim *sim, int side, fs_spark_fn fn, void *user);

const char *fs_policy_name(sp_overflow policy);

/* ---------------------------------------------------------------------------------------------
   Front ends (fountain.c: options, terminal, summary; fountain_sdl.c: window and headless)
   ------------------------------------------------------------------------------------------ */
typedef struct fs_options {
    fs_config sim;
    double seconds;         /* run length (=0: 9 s in the terminal, 30 s in a window) */
    bool terminal;          /* --terminal: never open a window */
    bool headless;          /* --headless: offscreen software rendering, no display needed */
    unsigned frames;        /* --frames (headless; =300) */
    const char *screenshot; /* --screenshot FILE.png (headless, or a window's last frame) */
    bool kv;                /* --kv: key=value counters after the summary */
} fs_options;

/* Side-by-side summary table, and the same numbers as key=value lines for scripts. */
void fs_summary_print(FILE *out, const fs_sim *sim, double seconds);
void fs_kv_print(FILE *out, const fs_sim *sim);

/* Runs the SDL window; @return -1 (before drawing anything) when no window can be opened, so
   the caller falls back to the terminal, else the exit status. */
int fs_run_window(const fs_options *opt);
/* Renders opt->frames frames offscreen and writes opt->screenshot. @return exit status. */
int fs_run_headless(const fs_options *opt);

#endif /* FOUNTAIN_SIM_H */
