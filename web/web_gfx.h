/* SPDX-License-Identifier: Zlib */
/* web_gfx.h -- the few shapes the web page's demos draw, into an RGBA framebuffer that the JS
   glue (web/demos.js) hands to a 2D canvas as ImageData. A pixel is four bytes R, G, B, A in
   memory order, i.e. the uint32 0xAABBGGRR on WebAssembly (little-endian). Everything is
   clipped, nothing allocates after wg_init. */
#ifndef WEB_GFX_H
#define WEB_GFX_H

#include <stdint.h>

typedef struct wg_rgb {
    uint8_t r, g, b;
} wg_rgb;

typedef struct wg_image {
    uint32_t *pixels;
    int w, h;
} wg_image;

/* @return 0, or -1 when out of memory. */
int wg_init(wg_image *im, int w, int h);
void wg_fini(wg_image *im);

uint32_t wg_pack(wg_rgb c);
wg_rgb wg_mix(wg_rgb a, wg_rgb b, float k);

/* A vertical gradient over the whole image. */
void wg_vgradient(wg_image *im, wg_rgb top, wg_rgb bottom);
/* A rectangle blended with `alpha` (0..1) over what is there. */
void wg_rect(wg_image *im, float x, float y, float w, float h, wg_rgb c, float alpha);
/* A rectangle added (saturating) to what is there, scaled by `k`: crowded sparks glow. */
void wg_rect_add(wg_image *im, int x, int y, int w, int h, wg_rgb c, float k);
/* A disc whose opacity falls from `alpha` at the centre to `edge_alpha` at the rim. */
void wg_disc(wg_image *im, float cx, float cy, float radius, wg_rgb c, float alpha,
             float edge_alpha);
/* A segment `width` pixels thick, opacity from a0 at its start to a1 at its end. */
void wg_line(wg_image *im, float x0, float y0, float x1, float y1, float width, wg_rgb c, float a0,
             float a1);

#endif /* WEB_GFX_H */
