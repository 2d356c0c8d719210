/* SPDX-License-Identifier: Zlib */
/* The fountain's two simulations; see fountain_sim.h. Both sides run the same code for a
   spark's physics and draw from identical RNG streams: the only difference is where a spark's
   memory comes from and goes back to, which is the point of the demo. */
#define _POSIX_C_SOURCE 200809L
#include "fountain_sim.h"

#include <math.h>
#include <stdalign.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FS_GRAVITY 9.81f
#define FS_CHUNK 256

/* ---------------------------------------------------------------------------------------------
   Random numbers: xorshift32, one stream per side so both see the same launches.
   ------------------------------------------------------------------------------------------ */
static uint32_t fs_rand(uint32_t *state) {
    uint32_t x = *state;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return *state = x;
}

static float fs_randf(uint32_t *state, float lo, float hi) {
    return lo + (hi - lo) * (float)(fs_rand(state) >> 8) * (1.0f / 16777216.0f);
}

/* A spark at birth: the template on_acquire copies, and what the malloc side writes. */
static void fs_launch_make(uint32_t *rng, fs_spark *t) {
    float angle = fs_randf(rng, -0.2f, 0.2f);        /* radians from vertical */
    float speed = fs_randf(rng, 8.0f, 11.0f);
    t->x = fs_randf(rng, -0.06f, 0.06f);
    t->y = 0.35f;                                     /* the nozzle's lip */
    t->vx = speed * sinf(angle);
    t->vy = speed * cosf(angle);
    t->age = 0.0f;
    t->life = fs_randf(rng, FS_LIFE_MIN, FS_LIFE_MAX);
    t->tint = (uint8_t)(fs_rand(rng) >> 24);
    t->bounced = 0;
}

/* ---------------------------------------------------------------------------------------------
   Spark behaviour, identical on both sides
   ------------------------------------------------------------------------------------------ */
static void fs_spark_build(fs_spark *s) { s->drag = 0.35f; }

static void fs_spark_launch(fs_spark *s, const fs_spark *t) {
    s->x = t->x;
    s->y = t->y;
    s->vx = t->vx;
    s->vy = t->vy;
    s->age = t->age;
    s->life = t->life;
    s->tint = t->tint;
    s->bounced = t->bounced;
}

/* Moves a spark one step. @return false when its life is spent. */
static bool fs_spark_update(fs_spark *s, float dt) {
    s->age += dt;
    if (s->age >= s->life) return false;
    float k = 1.0f - s->drag * dt;
    s->vx *= k;
    s->vy = s->vy * k - FS_GRAVITY * dt;
    s->x += s->vx * dt;
    s->y += s->vy * dt;
    if (s->y < 0.0f) { /* splash off the basin floor, losing most of the energy */
        s->y = -s->y * 0.3f;
        s->vy = -s->vy * 0.3f;
        s->vx *= 1.6f;
        s->bounced = 1;
    }
    return true;
}

static void fs_list_push(fs_list *l, fs_spark *s) {
    s->prev = l->tail;
    s->next = NULL;
    if (l->tail) l->tail->next = s;
    else l->head = s;
    l->tail = s;
}

static void fs_list_unlink(fs_list *l, fs_spark *s) {
    if (s->prev) s->prev->next = s->next;
    else l->head = s->next;
    if (s->next) s->next->prev = s->prev;
    else l->tail = s->prev;
    s->prev = s->next = NULL;
}

/* ---------------------------------------------------------------------------------------------
   Pool hooks and the counting allocator
   ------------------------------------------------------------------------------------------ */
static void fs_pool_create(void *item, void *user) {
    (void)user;
    fs_spark_build(item);
}

/* An acquired spark joins the live list: what a game's "active" flag would do. */
static void fs_pool_acquire(void *item, const void *arg, void *user) {
    fs_sim *sim = user;
    fs_spark_launch(item, arg);
    fs_list_push(&sim->live[FS_POOLED], item);
}

/* Every release path (sp_release, and RECLAIM taking the oldest spark) leaves the list. */
static void fs_pool_release(void *item, void *user) {
    fs_sim *sim = user;
    if (!sim->moving) fs_list_unlink(&sim->live[FS_POOLED], item);
}

static void *fs_count_alloc(size_t size, size_t align, void *user) {
    ((fs_side *)user)->alloc_calls++;
    if (align <= alignof(max_align_t)) return malloc(size);
    return aligned_alloc(align, (size + align - 1) / align * align);
}

static void fs_count_free(void *ptr, size_t size, void *user) {
    (void)size;
    ((fs_side *)user)->alloc_calls++;
    free(ptr);
}

/* GROW warns on every member built past max: keep the lines off the animated screen, count
   them and keep the last one for the summary. */
static void fs_pool_log(sp_log_level level, const char *pool_name, const char *message,
                        void *user) {
    fs_sim *sim = user;
    (void)level;
    sim->log_lines++;
    snprintf(sim->log_last, sizeof sim->log_last, "%s: %s", pool_name, message);
}

static sp_pool *fs_pool_make(fs_sim *sim, sp_overflow policy, size_t initial) {
    size_t cap = sim->cfg.cap;
    return sp_pool_create(&(sp_desc){
        .name = "sparks",
        .item_size = sizeof(fs_spark),
        .initial = initial < cap ? initial : cap,
        .max = cap,
        .overflow = policy,
        .chunk_items = FS_CHUNK,
        .create = fs_pool_create,
        .on_acquire = fs_pool_acquire,
        .on_release = fs_pool_release,
        .user = sim,
        .allocator = {.alloc = fs_count_alloc, .free = fs_count_free,
                      .user = &sim->side[FS_POOLED]},
        .logger = {fs_pool_log, sim},
    });
}

/* Little's law: live sparks = rate x mean life (1.5 s); prewarm a quarter more. */
static size_t fs_prewarm_for(double rate) { return (size_t)ceil(rate * 1.5 * 1.25); }

/* ---------------------------------------------------------------------------------------------
   Timing
   ------------------------------------------------------------------------------------------ */
/* The thread's CPU time, not the wall clock: a side's update takes ~20 us, and on a busy
   machine a wall-clock p99 over a few hundred frames is whichever side the scheduler happened
   to preempt (a malloc p99 of 5 ms, once). CPU time still counts page faults and cache misses,
   which are the costs the two sides differ in. Where there is no thread CPU clock
   (WebAssembly), the monotonic wall clock. */
static double fs_now_ms(void) {
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int fs_cmp_float(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* q-quantile (nearest rank) of n values; sorts a copy. */
static double fs_quantile(const float *values, size_t n, double q) {
    if (n == 0) return 0.0;
    float *tmp = malloc(n * sizeof *tmp);
    if (!tmp) return 0.0;
    memcpy(tmp, values, n * sizeof *tmp);
    qsort(tmp, n, sizeof *tmp, fs_cmp_float);
    size_t rank = (size_t)ceil(q * (double)n);
    double v = tmp[rank ? rank - 1 : 0];
    free(tmp);
    return v;
}

static void fs_side_record(fs_sim *sim, fs_side *side, double ms) {
    side->recent[side->recent_pos] = (float)ms;
    side->recent_pos = (side->recent_pos + 1) % FS_RECENT;
    if (side->recent_n < FS_RECENT) side->recent_n++;
    memmove(side->calls_hist, side->calls_hist + 1, sizeof side->calls_hist - sizeof(unsigned));
    side->calls_hist[119] = (unsigned)(side->alloc_calls - side->frame_calls_start);
    if (!sim->warm) return;
    if (side->steady_n == side->steady_cap) {
        size_t cap = side->steady_cap ? side->steady_cap * 2 : 1024;
        float *grown = realloc(side->steady, cap * sizeof *grown);
        if (!grown) return; /* the summary then covers fewer frames; not worth failing for */
        side->steady = grown;
        side->steady_cap = cap;
    }
    side->steady[side->steady_n++] = (float)ms;
}

/* ---------------------------------------------------------------------------------------------
   Life cycle
   ------------------------------------------------------------------------------------------ */
bool fs_sim_start(fs_sim *sim, const fs_config *base, double seconds, size_t frames) {
    fs_config cfg = *base;
    cfg.warmup = seconds / 2 < FS_LIFE_MAX ? seconds / 2 : FS_LIFE_MAX;
    cfg.frames_hint = frames;
    if (fs_sim_init(sim, &cfg)) return true;
    fprintf(stderr, "fountain: cannot create the pool: %s\n", sim->log_last);
    fs_sim_fini(sim);
    return false;
}

bool fs_sim_init(fs_sim *sim, const fs_config *cfg) {
    memset(sim, 0, sizeof *sim);
    sim->cfg = *cfg;
    if (sim->cfg.rate <= 0.0) sim->cfg.rate = 2000.0;
    if (sim->cfg.cap == 0) sim->cfg.cap = (size_t)ceil(sim->cfg.rate * 2.5);
    if (sim->cfg.seed == 0) sim->cfg.seed = 1;
    if (sim->cfg.warmup <= 0.0) sim->cfg.warmup = FS_LIFE_MAX;
    for (int i = 0; i < FS_SIDES; i++) {
        sim->side[i].rng = sim->cfg.seed;
        if (cfg->frames_hint) {
            sim->side[i].steady = malloc(cfg->frames_hint * sizeof(float));
            if (sim->side[i].steady) sim->side[i].steady_cap = cfg->frames_hint;
        }
    }
    sim->pool = fs_pool_make(sim, sim->cfg.policy, fs_prewarm_for(sim->cfg.rate));
    return sim->pool != NULL;
}

void fs_sim_fini(fs_sim *sim) {
    if (sim->pool) {
        sp_release_all(sim->pool);
        sp_pool_destroy(sim->pool);
    }
    for (fs_spark *s = sim->live[FS_MALLOC].head, *nx; s; s = nx) {
        nx = s->next;
        free(s);
    }
    for (int i = 0; i < FS_SIDES; i++) free(sim->side[i].steady);
    memset(sim, 0, sizeof *sim);
}

/* ---------------------------------------------------------------------------------------------
   Update
   ------------------------------------------------------------------------------------------ */
static unsigned fs_spawn_count(fs_sim *sim, fs_side *side) {
    side->spawn_acc += sim->cfg.rate * FS_DT;
    double n = floor(side->spawn_acc);
    side->spawn_acc -= n;
    return (unsigned)n;
}

static void fs_step_pooled(fs_sim *sim) {
    fs_side *side = &sim->side[FS_POOLED];
    sp_pool *pool = sim->pool;
    for (fs_spark *s = sim->live[FS_POOLED].head, *nx; s; s = nx) {
        nx = s->next;
        if (!fs_spark_update(s, (float)FS_DT)) sp_release(pool, s); /* on_release unlinks */
    }
    /* A lowered cap only blocks growth; dispose of free members above it so that it bites
       (not under GROW, where the cap is a soft budget the pool may exceed). */
    sp_stats st;
    sp_stats_get(pool, &st);
    if (sim->cfg.policy != SP_OVERFLOW_GROW && st.size > sim->cfg.cap && st.free > 0) {
        size_t excess = st.size - sim->cfg.cap;
        sp_trim(pool, st.free > excess ? st.free - excess : 0);
    }
    for (unsigned i = fs_spawn_count(sim, side); i > 0; i--) {
        fs_spark t;
        fs_launch_make(&side->rng, &t);
        sp_acquire_with(pool, &t); /* NULL under DROP when saturated: counted as dropped */
    }
}

static void fs_step_malloc(fs_sim *sim) {
    fs_side *side = &sim->side[FS_MALLOC];
    for (fs_spark *s = sim->live[FS_MALLOC].head, *nx; s; s = nx) {
        nx = s->next;
        if (fs_spark_update(s, (float)FS_DT)) continue;
        fs_list_unlink(&sim->live[FS_MALLOC], s);
        free(s);
        side->alloc_calls++;
        sim->m_live--;
    }
    for (unsigned i = fs_spawn_count(sim, side); i > 0; i--) {
        fs_spark t;
        fs_launch_make(&side->rng, &t);
        fs_spark *s = malloc(sizeof *s);
        side->alloc_calls++;
        if (!s) continue;
        memset(s, 0, sizeof *s); /* what the pool does for a new member */
        fs_spark_build(s);
        fs_spark_launch(s, &t);
        fs_list_push(&sim->live[FS_MALLOC], s);
        sim->m_created++;
        if (++sim->m_live > sim->m_peak) sim->m_peak = sim->m_live;
    }
}

void fs_sim_step(fs_sim *sim) {
    if (!sim->warm && sim->t >= sim->cfg.warmup) {
        sim->warm = true;
        for (int i = 0; i < FS_SIDES; i++) {
            fs_counters c;
            fs_sim_counters(sim, i, &c);
            sim->side[i].calls_at_warm = c.alloc_calls;
            sim->side[i].created_at_warm = c.created;
        }
    }
    /* Which side runs first, the one that meets the caches as the last frame (or a draw) left
       them, is chosen by a hash of the frame number: half the frames each, and no periodic
       event can favour one side. Plain alternation could: the headless renderer draws every
       10th frame, so the frame after each draw is even and the pooled side always ran first
       into the caches the draw had emptied, which put every slow post-draw frame in the
       pooled side's p99 (the README picture once showed 0.159 ms against 0.093). */
    int first = (int)(((uint32_t)sim->frame * 2654435761u) >> 31);
    sim->first_side = first;
    for (int k = 0; k < FS_SIDES; k++) {
        int i = (first + k) % FS_SIDES;
        fs_side *side = &sim->side[i];
        side->frame_calls_start = side->alloc_calls;
        double t0 = fs_now_ms();
        if (i == FS_POOLED) fs_step_pooled(sim);
        else fs_step_malloc(sim);
        fs_side_record(sim, side, fs_now_ms() - t0);
    }
    sim->t += FS_DT;
    sim->frame++;
}

/* ---------------------------------------------------------------------------------------------
   Controls
   ------------------------------------------------------------------------------------------ */
void fs_sim_set_rate(fs_sim *sim, double rate) { sim->cfg.rate = rate; }

void fs_sim_set_cap(fs_sim *sim, size_t cap) {
    sim->cfg.cap = cap ? cap : 1;
    sp_set_max(sim->pool, sim->cfg.cap);
}

bool fs_sim_set_policy(fs_sim *sim, sp_overflow policy) {
    sp_stats old;
    sp_stats_get(sim->pool, &old);
    sp_pool *next = fs_pool_make(sim, policy, old.size);
    if (!next) return false;
    /* Move the live sparks across, oldest first, so RECLAIM's order carries over; the new
       pool's on_acquire builds a fresh list, the old pool's releases leave it alone. */
    fs_list old_list = sim->live[FS_POOLED];
    sim->live[FS_POOLED] = (fs_list){NULL, NULL};
    for (fs_spark *s = old_list.head; s; s = s->next) sp_acquire_with(next, s);
    fs_side *side = &sim->side[FS_POOLED];
    side->base_created += old.created;
    side->base_dropped += old.dropped;
    side->base_reclaimed += old.reclaimed;
    side->base_grown += old.grown_past_max;
    sim->moving = true;
    sp_release_all(sim->pool);
    sim->moving = false;
    sp_pool_destroy(sim->pool);
    sim->pool = next;
    sim->cfg.policy = policy;
    return true;
}

/* ---------------------------------------------------------------------------------------------
   Counters
   ------------------------------------------------------------------------------------------ */
void fs_sim_counters(const fs_sim *sim, int i, fs_counters *out) {
    const fs_side *side = &sim->side[i];
    memset(out, 0, sizeof *out);
    if (i == FS_POOLED) {
        sp_stats st;
        sp_stats_get(sim->pool, &st);
        out->live = st.leased;
        out->free = st.free;
        out->size = st.size;
        out->peak = st.peak_leased;
        out->max = st.max;
        out->created = side->base_created + st.created;
        out->dropped = side->base_dropped + st.dropped;
        out->reclaimed = side->base_reclaimed + st.reclaimed;
        out->grown = side->base_grown + st.grown_past_max;
    } else {
        out->live = out->size = sim->m_live;
        out->peak = sim->m_peak;
        out->created = sim->m_created;
    }
    out->alloc_calls = side->alloc_calls;
    unsigned n = side->recent_n < 30 ? side->recent_n : 30;
    double sum = 0.0;
    for (unsigned k = 1; k <= n; k++) sum += side->recent[(side->recent_pos + FS_RECENT - k) % FS_RECENT];
    out->frame_ms = n ? sum / n : 0.0;
    out->p99_ms = fs_quantile(side->recent, side->recent_n, 0.99);
    memcpy(out->calls_hist, side->calls_hist, sizeof out->calls_hist);
}

void fs_sim_result(const fs_sim *sim, int i, fs_result *out) {
    const fs_side *side = &sim->side[i];
    fs_counters c;
    fs_sim_counters(sim, i, &c);
    memset(out, 0, sizeof *out);
    out->alloc_calls = c.alloc_calls;
    out->created = c.created;
    out->created_at_warm = sim->warm ? side->created_at_warm : c.created;
    out->steady_alloc_calls = sim->warm ? c.alloc_calls - side->calls_at_warm : 0;
    out->peak = c.peak;
    out->dropped = c.dropped;
    out->reclaimed = c.reclaimed;
    out->grown = c.grown;
    const float *v = side->steady_n ? side->steady : side->recent;
    size_t n = side->steady_n ? side->steady_n : side->recent_n;
    out->p50_ms = fs_quantile(v, n, 0.50);
    out->p99_ms = fs_quantile(v, n, 0.99);
}

void fs_sim_each(const fs_sim *sim, int i, fs_spark_fn fn, void *user) {
    for (const fs_spark *s = sim->live[i].head; s; s = s->next) fn(s, user);
}

const char *fs_policy_name(sp_overflow policy) {
    switch (policy) {
    case SP_OVERFLOW_DROP: return "drop";
    case SP_OVERFLOW_RECLAIM: return "reclaim";
    case SP_OVERFLOW_GROW: return "grow";
    }
    return "?";
}
