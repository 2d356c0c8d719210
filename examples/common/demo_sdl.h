/* SPDX-License-Identifier: Zlib */
/* demo_sdl.h -- small SDL2 helpers the demos share: text in the built-in 5x7 font and a PNG
   screenshot of whatever a renderer shows (a window, or an offscreen software renderer in
   headless mode). Header-only (static inline) so a demo needs no extra SDL-linked library;
   link examples/common's font5x7.c (the sp_demo_common CMake target), which also brings
   Debian's libstb (stb_image_write) for the PNG. */
#ifndef DEMO_SDL_H
#define DEMO_SDL_H

#include <SDL.h>
#include <stdlib.h>

#include "font5x7.h"

#include <stb_image_write.h>

/* Width in pixels of text drawn at scale. */
static inline int demo_text_width(const char *text, int scale) {
    int n = (int)SDL_strlen(text);
    return n ? (n * FONT5X7_ADVANCE - 1) * scale : 0;
}

/* Draws text with its top-left corner at (x, y), each font pixel a scale x scale square, in
   the renderer's current draw colour. '\n' starts a new line. @return the x after the text. */
static inline int demo_text_draw(SDL_Renderer *r, int x, int y, int scale, const char *text) {
    SDL_Rect rects[256];
    int n = 0, cx = x;
    for (const char *p = text; *p; p++) {
        if (*p == '\n') {
            cx = x;
            y += (FONT5X7_H + 3) * scale;
            continue;
        }
        unsigned char rows[FONT5X7_H];
        font5x7_glyph((unsigned char)*p, rows);
        for (int gy = 0; gy < FONT5X7_H; gy++)
            for (int gx = 0; gx < FONT5X7_W; gx++) {
                if (!(rows[gy] & (1u << (FONT5X7_W - 1 - gx)))) continue;
                rects[n++] = (SDL_Rect){cx + gx * scale, y + gy * scale, scale, scale};
                if (n == (int)(sizeof rects / sizeof rects[0])) {
                    SDL_RenderFillRects(r, rects, n);
                    n = 0;
                }
            }
        cx += FONT5X7_ADVANCE * scale;
    }
    if (n) SDL_RenderFillRects(r, rects, n);
    return cx;
}

/* Writes what the renderer currently shows (call before SDL_RenderPresent) to a PNG file.
   @return 0 on success, -1 on failure (SDL_GetError() says why, or the file could not be
   written). */
static inline int demo_screenshot(SDL_Renderer *r, const char *path) {
    int w, h;
    if (SDL_GetRendererOutputSize(r, &w, &h) != 0) return -1;
    unsigned char *pixels = malloc((size_t)w * (size_t)h * 3);
    if (!pixels) return -1;
    int rc = -1;
    if (SDL_RenderReadPixels(r, NULL, SDL_PIXELFORMAT_RGB24, pixels, w * 3) == 0)
        rc = stbi_write_png(path, w, h, 3, pixels, w * 3) ? 0 : -1;
    free(pixels);
    return rc;
}

#endif /* DEMO_SDL_H */
