/* SPDX-License-Identifier: Zlib */
/* The particles demo's simulation and framebuffer; see particles_sim.h. */
#include "particles_sim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void *pt_alloc(size_t size, size_t align, void *user) {
    ((pt_alloc_count *)user)->calls++;
    if (align <= _Alignof(max_align_t)) return malloc(size);
    return aligned_alloc(align, (size + align - 1) / align * align);
}

static void pt_free(void *ptr, size_t size, void *user) {
    (void)size;
    (void)user;
    free(ptr);
}

static uint32_t pt_rand(pt_sim *s) {
    s->rng ^= s->rng << 13;
    s->rng ^= s->rng >> 17;
    s->rng ^= s->rng << 5;
    return s->rng;
}

static float pt_randf(pt_sim *s) { return (float)(pt_rand(s) >> 8) * (1.0f / 16777216.0f); }

static void pt_on_move(void *item, size_t from, size_t to, void *user) {
    (void)item;
    (void)from;
    (void)to;
    ((pt_sim *)user)->moves++;
}

int pt_sim_init(pt_sim *s, double rate, size_t cap, sp_overflow policy, unsigned seed) {
    memset(s, 0, sizeof *s);
    s->rate = rate;
    s->rng = seed * 2654435761u + 0x9E3779B9u;
    if (s->rng == 0) s->rng = 1;
    /* Little's law: live sparks = rate x mean lifetime; 25% headroom for the spread. */
    double mean_life = 0.5 * (PT_LIFE_MIN + PT_LIFE_MAX);
    size_t little = (size_t)(rate * mean_life * 1.25);
    size_t max = cap ? cap : little;
    if (max > ((size_t)1 << 24)) max = (size_t)1 << 24;
    s->sparks = sp_dense_create(&(sp_dense_desc){
        .name = "sparks",
        .item_size = sizeof(spark),
        .initial = little < max ? little : max, /* built at load, not during the first second */
        .max = max,
        .overflow = policy,
        .on_move = pt_on_move,
        .user = s,
        .allocator = {.alloc = pt_alloc, .free = pt_free, .user = &s->allocs},
    });
    if (!s->sparks) return -1;
    s->allocs_after_create = s->allocs.calls;
    return 0;
}

void pt_sim_fini(pt_sim *s) { sp_dense_destroy(s->sparks); }

static void pt_spawn(pt_sim *s, int w, int h) {
    s->spawn_debt += s->rate * (double)PT_DT;
    int n = (int)s->spawn_debt;
    s->spawn_debt -= n;
    for (int i = 0; i < n; i++) {
        uint32_t serial = s->next_serial++;
        int e = (int)(serial % PT_EMITTERS);
        float angle = -1.5708f + (pt_randf(s) - 0.5f) * (0.5f + 0.15f * (float)e);
        float speed = 380.0f + 180.0f * pt_randf(s);
        spark sp = {
            .x = (float)w * (0.25f + 0.25f * (float)e) + (pt_randf(s) - 0.5f) * 6.0f,
            .y = (float)h - 12.0f,
            .vx = cosf(angle) * speed + (float)(e - 1) * 40.0f,
            .vy = sinf(angle) * speed,
            .life = PT_LIFE_MIN + (PT_LIFE_MAX - PT_LIFE_MIN) * pt_randf(s),
            .serial = serial,
        };
        sp_dense_add(s->sparks, &sp); /* NULL when full under DROP: counted by the pool */
    }
}

/* The hot loop: a plain walk over packed memory. A spent spark is swap-removed; the spark that
   took its place has not been updated yet this frame, so i stays. */
static void pt_integrate(pt_sim *s, int w, int h) {
    spark *p = (spark *)sp_dense_data(s->sparks);
    size_t i = 0;
    const float floor_y = (float)h - 4.0f;
    while (i < sp_dense_count(s->sparks)) {
        spark *q = &p[i];
        q->life -= PT_DT;
        if (q->life <= 0.0f || q->x < 0.0f || q->x >= (float)w) {
            sp_dense_remove_at(s->sparks, i);
            continue;
        }
        q->vy += PT_GRAVITY * PT_DT;
        q->x += q->vx * PT_DT;
        q->y += q->vy * PT_DT;
        if (q->y > floor_y) { /* splash: bounce, losing most of the speed */
            q->y = floor_y;
            q->vy *= -0.35f;
            q->vx *= 0.7f;
        }
        i++;
    }
}

/* Follows a few sparks by handle; a handle that stops resolving means its spark died. */
static void pt_track(pt_sim *s) {
    for (int k = 0; k < PT_TRACKED; k++) {
        const spark *p = (const spark *)sp_dense_resolve(s->sparks, s->tracked[k]);
        if (p) {
            s->tracked_checks++;
            if (p->serial != s->tracked_serial[k]) s->tracked_wrong++;
            continue;
        }
        if (!sp_handle_is_null(s->tracked[k])) s->tracked_lost++;
        size_t n = sp_dense_count(s->sparks);
        if (n == 0) continue;
        size_t i = (size_t)pt_rand(s) % n;
        s->tracked[k] = sp_dense_handle_at(s->sparks, i);
        s->tracked_serial[k] = ((const spark *)sp_dense_at(s->sparks, i))->serial;
    }
}

void pt_step(pt_sim *s, int w, int h) {
    pt_spawn(s, w, h);
    pt_integrate(s, w, h);
    pt_track(s);
    s->frame++;
}

/* ---------------------------------------------------------------------------------------------
   Framebuffer
   ------------------------------------------------------------------------------------------ */
static uint32_t pt_rgb(float r, float g, float b) {
    uint32_t ri = (uint32_t)(r > 255 ? 255 : r), gi = (uint32_t)(g > 255 ? 255 : g),
             bi = (uint32_t)(b > 255 ? 255 : b);
    return ri << 16 | gi << 8 | bi;
}

static void pt_palette_init(pt_fb *g) {
    for (int i = 0; i < 64; i++) {
        float t = (float)i / 63.0f; /* 1: just born, 0: about to die */
        float k = 30.0f + 90.0f * t;
        g->palette[0][i] = pt_rgb(k * 1.3f, k * (0.3f + 0.7f * t), k * 0.25f * t); /* fire */
        g->palette[1][i] = pt_rgb(k * 0.3f * t, k * (0.5f + 0.4f * t), k * 1.4f);  /* ice */
        g->palette[2][i] = pt_rgb(k * 0.5f * t, k * 1.3f, k * (0.3f + 0.4f * t));  /* acid */
    }
}

/* Adds two XRGB colours channel by channel, saturating at 255: overlapping sparks glow. */
static uint32_t pt_add_sat(uint32_t a, uint32_t b) {
    uint32_t r = ((a >> 16) & 0xFFu) + ((b >> 16) & 0xFFu);
    uint32_t g = ((a >> 8) & 0xFFu) + ((b >> 8) & 0xFFu);
    uint32_t bl = (a & 0xFFu) + (b & 0xFFu);
    return (r > 255u ? 255u : r) << 16 | (g > 255u ? 255u : g) << 8 | (bl > 255u ? 255u : bl);
}

int pt_fb_init(pt_fb *g) {
    g->pixels = (uint32_t *)malloc((size_t)PT_W * PT_H * sizeof(uint32_t));
    g->background = (uint32_t *)malloc((size_t)PT_W * PT_H * sizeof(uint32_t));
    if (!g->pixels || !g->background) {
        pt_fb_fini(g);
        return -1;
    }
    /* a dark vertical gradient */
    for (int y = 0; y < PT_H; y++) {
        uint32_t c = (uint32_t)(8 + y / 40) << 8 | (uint32_t)(12 + y / 30);
        for (int x = 0; x < PT_W; x++) g->background[(size_t)y * PT_W + (size_t)x] = c;
    }
    pt_palette_init(g);
    return 0;
}

void pt_fb_fini(pt_fb *g) {
    free(g->pixels);
    free(g->background);
    g->pixels = g->background = NULL;
}

/* A 9x9 outline centred on (x, y), clipped to the framebuffer. */
static void pt_fb_box(pt_fb *g, int x, int y, uint32_t c) {
    for (int k = -4; k <= 4; k++) {
        int pts[4][2] = {{x + k, y - 4}, {x + k, y + 4}, {x - 4, y + k}, {x + 4, y + k}};
        for (int j = 0; j < 4; j++)
            if ((unsigned)pts[j][0] < PT_W && (unsigned)pts[j][1] < PT_H)
                g->pixels[(size_t)pts[j][1] * PT_W + (size_t)pts[j][0]] = c;
    }
}

void pt_fb_draw(pt_fb *g, const pt_sim *s) {
    memcpy(g->pixels, g->background, (size_t)PT_W * PT_H * sizeof(uint32_t));
    const spark *p = (const spark *)sp_dense_data(s->sparks);
    size_t n = sp_dense_count(s->sparks);
    for (size_t i = 0; i < n; i++) {
        int x = (int)p[i].x, y = (int)p[i].y;
        if ((unsigned)x >= PT_W || (unsigned)y >= PT_H) continue;
        int li = (int)(p[i].life * (63.0f / PT_LIFE_MAX));
        uint32_t c = g->palette[p[i].serial % PT_EMITTERS][li < 0 ? 0 : li > 63 ? 63 : li];
        uint32_t *px = &g->pixels[(size_t)y * PT_W + (size_t)x];
        *px = pt_add_sat(*px, c);
    }
    /* tracked sparks: boxes around what the handles resolve to */
    for (int k = 0; k < PT_TRACKED; k++) {
        const spark *t = (const spark *)sp_dense_resolve(s->sparks, s->tracked[k]);
        if (t) pt_fb_box(g, (int)t->x, (int)t->y, 0xFFFFFFu);
    }
}
