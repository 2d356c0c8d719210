/* SPDX-License-Identifier: Zlib */
/* The web page's rasteriser; see web_gfx.h. */
#include "web_gfx.h"

#include <math.h>
#include <stdlib.h>

int wg_init(wg_image *im, int w, int h) {
    im->pixels = calloc((size_t)w * (size_t)h, sizeof(uint32_t));
    im->w = im->pixels ? w : 0;
    im->h = im->pixels ? h : 0;
    return im->pixels ? 0 : -1;
}

void wg_fini(wg_image *im) {
    free(im->pixels);
    im->pixels = NULL;
    im->w = im->h = 0;
}

uint32_t wg_pack(wg_rgb c) {
    return 0xFF000000u | (uint32_t)c.b << 16 | (uint32_t)c.g << 8 | (uint32_t)c.r;
}

static uint8_t wg_lerp8(uint8_t a, uint8_t b, float k) {
    return (uint8_t)((float)a + ((float)b - (float)a) * k + 0.5f);
}

wg_rgb wg_mix(wg_rgb a, wg_rgb b, float k) {
    k = k < 0.0f ? 0.0f : k > 1.0f ? 1.0f : k;
    return (wg_rgb){wg_lerp8(a.r, b.r, k), wg_lerp8(a.g, b.g, k), wg_lerp8(a.b, b.b, k)};
}

/* Blends c over the pixel with opacity a (0..1). */
static void wg_blend(uint32_t *px, wg_rgb c, float a) {
    if (a <= 0.0f) return;
    if (a > 1.0f) a = 1.0f;
    wg_rgb d = {(uint8_t)(*px & 0xFFu), (uint8_t)(*px >> 8 & 0xFFu), (uint8_t)(*px >> 16 & 0xFFu)};
    *px = wg_pack(wg_mix(d, c, a));
}

void wg_vgradient(wg_image *im, wg_rgb top, wg_rgb bottom) {
    for (int y = 0; y < im->h; y++) {
        uint32_t c = wg_pack(wg_mix(top, bottom, (float)y / (float)(im->h > 1 ? im->h - 1 : 1)));
        uint32_t *row = im->pixels + (size_t)y * (size_t)im->w;
        for (int x = 0; x < im->w; x++) row[x] = c;
    }
}

/* Clips [x0, x1) x [y0, y1) to the image. @return 0 when nothing is left. */
static int wg_clip(const wg_image *im, int *x0, int *y0, int *x1, int *y1) {
    if (*x0 < 0) *x0 = 0;
    if (*y0 < 0) *y0 = 0;
    if (*x1 > im->w) *x1 = im->w;
    if (*y1 > im->h) *y1 = im->h;
    return *x0 < *x1 && *y0 < *y1;
}

void wg_rect(wg_image *im, float x, float y, float w, float h, wg_rgb c, float alpha) {
    int x0 = (int)floorf(x), y0 = (int)floorf(y), x1 = (int)floorf(x + w), y1 = (int)floorf(y + h);
    if (!wg_clip(im, &x0, &y0, &x1, &y1)) return;
    uint32_t solid = wg_pack(c);
    for (int py = y0; py < y1; py++) {
        uint32_t *row = im->pixels + (size_t)py * (size_t)im->w;
        for (int px = x0; px < x1; px++) {
            if (alpha >= 1.0f) row[px] = solid;
            else wg_blend(&row[px], c, alpha);
        }
    }
}

static uint32_t wg_add8(uint32_t a, uint32_t b) { return a + b > 255u ? 255u : a + b; }

void wg_rect_add(wg_image *im, int x, int y, int w, int h, wg_rgb c, float k) {
    int x0 = x, y0 = y, x1 = x + w, y1 = y + h;
    if (!wg_clip(im, &x0, &y0, &x1, &y1)) return;
    uint32_t r = (uint32_t)((float)c.r * k), g = (uint32_t)((float)c.g * k),
             b = (uint32_t)((float)c.b * k);
    for (int py = y0; py < y1; py++) {
        uint32_t *row = im->pixels + (size_t)py * (size_t)im->w;
        for (int px = x0; px < x1; px++) {
            uint32_t p = row[px];
            row[px] = 0xFF000000u | wg_add8(p >> 16 & 0xFFu, b) << 16 |
                      wg_add8(p >> 8 & 0xFFu, g) << 8 | wg_add8(p & 0xFFu, r);
        }
    }
}

void wg_disc(wg_image *im, float cx, float cy, float radius, wg_rgb c, float alpha,
             float edge_alpha) {
    if (radius <= 0.0f) return;
    int x0 = (int)floorf(cx - radius), y0 = (int)floorf(cy - radius);
    int x1 = (int)ceilf(cx + radius) + 1, y1 = (int)ceilf(cy + radius) + 1;
    if (!wg_clip(im, &x0, &y0, &x1, &y1)) return;
    for (int py = y0; py < y1; py++)
        for (int px = x0; px < x1; px++) {
            float dx = (float)px + 0.5f - cx, dy = (float)py + 0.5f - cy;
            float d = sqrtf(dx * dx + dy * dy) / radius;
            if (d >= 1.0f) continue;
            wg_blend(&im->pixels[(size_t)py * (size_t)im->w + (size_t)px], c,
                     alpha + (edge_alpha - alpha) * d);
        }
}

void wg_line(wg_image *im, float x0, float y0, float x1, float y1, float width, wg_rgb c, float a0,
             float a1) {
    float half = width * 0.5f, dx = x1 - x0, dy = y1 - y0, len2 = dx * dx + dy * dy;
    int bx0 = (int)floorf(fminf(x0, x1) - half), by0 = (int)floorf(fminf(y0, y1) - half);
    int bx1 = (int)ceilf(fmaxf(x0, x1) + half) + 1, by1 = (int)ceilf(fmaxf(y0, y1) + half) + 1;
    if (!wg_clip(im, &bx0, &by0, &bx1, &by1)) return;
    for (int py = by0; py < by1; py++)
        for (int px = bx0; px < bx1; px++) {
            float qx = (float)px + 0.5f - x0, qy = (float)py + 0.5f - y0;
            float t = len2 > 0.0f ? (qx * dx + qy * dy) / len2 : 0.0f;
            t = t < 0.0f ? 0.0f : t > 1.0f ? 1.0f : t;
            float ex = qx - t * dx, ey = qy - t * dy;
            if (ex * ex + ey * ey > half * half) continue;
            wg_blend(&im->pixels[(size_t)py * (size_t)im->w + (size_t)px], c, a0 + (a1 - a0) * t);
        }
}
