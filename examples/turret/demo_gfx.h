/* SPDX-License-Identifier: Zlib */
/* demo_gfx.h -- the drawing layer the turret and arena demos share.

   A render target that is a window when a display exists and an offscreen surface with SDL's
   software renderer otherwise (the headless mode of tests and docs), plus the few shapes the
   demos draw: discs with a radial gradient (glows come free), thick lines, quads, gradients and
   text. Everything goes through SDL_RenderGeometry, which the software renderer supports, so a
   headless screenshot looks like the window. */
#ifndef DEMO_GFX_H
#define DEMO_GFX_H

#include <SDL.h>

#include <stdbool.h>

typedef struct gfx_target {
    SDL_Window *window;     /* NULL when headless */
    SDL_Surface *surface;   /* the offscreen image when headless */
    SDL_Renderer *renderer;
    bool headless;
    int width, height;
    Uint64 frame_start;     /* for pacing the window to 60 fps */
} gfx_target;

/* Opens a window, or the offscreen target when `headless` is asked for or no display works.
   @return false (SDL_GetError() says why) when neither can be made. */
bool gfx_open(gfx_target *t, const char *title, int width, int height, bool headless);
void gfx_close(gfx_target *t);

/* Shows the frame (window) or flushes it into the surface (headless); paces a window to 60 fps. */
void gfx_present(gfx_target *t);

/* Writes what was last presented as PNG (BMP when the path ends in .bmp). */
bool gfx_screenshot(gfx_target *t, const char *path);

SDL_Color gfx_mix(SDL_Color a, SDL_Color b, float k);
SDL_Color gfx_alpha(SDL_Color c, float alpha);
void gfx_fill_rect(SDL_Renderer *r, float x, float y, float w, float h, SDL_Color c);
void gfx_vgradient(SDL_Renderer *r, float x, float y, float w, float h, SDL_Color top,
                   SDL_Color bottom);
void gfx_quad(SDL_Renderer *r, float x0, float y0, float x1, float y1, float x2, float y2,
              float x3, float y3, SDL_Color c);
/* A disc fading from `center` to `edge` colour (alpha included). */
void gfx_disc(SDL_Renderer *r, float cx, float cy, float radius, SDL_Color center, SDL_Color edge);
/* A ring of the given thickness, from angle a0 to a1 (radians, a1 > a0). */
void gfx_arc(SDL_Renderer *r, float cx, float cy, float radius, float thickness, float a0,
             float a1, SDL_Color c);
/* A line `width` pixels thick, coloured c0 at its start and c1 at its end. */
void gfx_line(SDL_Renderer *r, float x0, float y0, float x1, float y1, float width, SDL_Color c0,
              SDL_Color c1);
/* Text in a built-in bitmap font, `scale` pixels per font pixel. @return the width drawn. */
float gfx_text(SDL_Renderer *r, float x, float y, int scale, SDL_Color c, const char *text);

#endif /* DEMO_GFX_H */
