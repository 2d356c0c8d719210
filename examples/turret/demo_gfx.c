/* SPDX-License-Identifier: Zlib */
/* The drawing layer of the turret and arena demos; see demo_gfx.h. */
#include "demo_gfx.h"

#include "demo_sdl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define GFX_DISC_SEGMENTS 32

bool gfx_open(gfx_target *t, const char *title, int width, int height, bool headless)
{
    memset(t, 0, sizeof *t);
    t->width = width;
    t->height = height;
    if (!headless && SDL_Init(SDL_INIT_VIDEO) == 0) {
        t->window = SDL_CreateWindow(title, SDL_WINDOWPOS_CENTERED, SDL_WINDOWPOS_CENTERED, width,
                                     height, 0);
        if (t->window) t->renderer = SDL_CreateRenderer(t->window, -1, SDL_RENDERER_PRESENTVSYNC);
        if (t->window && !t->renderer) t->renderer = SDL_CreateRenderer(t->window, -1, 0);
        if (t->renderer) {
            SDL_SetRenderDrawBlendMode(t->renderer, SDL_BLENDMODE_BLEND);
            t->frame_start = SDL_GetTicks64();
            return true;
        }
        if (t->window) SDL_DestroyWindow(t->window);
        t->window = NULL;
        SDL_QuitSubSystem(SDL_INIT_VIDEO);
    }
    /* Offscreen: the software renderer needs no video subsystem, so no display and no Xvfb. */
    t->headless = true;
    t->surface = SDL_CreateRGBSurfaceWithFormat(0, width, height, 32, SDL_PIXELFORMAT_ARGB8888);
    if (!t->surface) return false;
    t->renderer = SDL_CreateSoftwareRenderer(t->surface);
    if (!t->renderer) {
        SDL_FreeSurface(t->surface);
        t->surface = NULL;
        return false;
    }
    SDL_SetRenderDrawBlendMode(t->renderer, SDL_BLENDMODE_BLEND);
    return true;
}

void gfx_close(gfx_target *t)
{
    if (t->renderer) SDL_DestroyRenderer(t->renderer);
    if (t->window) SDL_DestroyWindow(t->window);
    if (t->surface) SDL_FreeSurface(t->surface);
    memset(t, 0, sizeof *t);
    SDL_Quit();
}

void gfx_present(gfx_target *t)
{
    SDL_RenderPresent(t->renderer);
    if (t->headless) return;
    /* Vsync may be off (software renderer, some drivers): cap at 60 fps ourselves. */
    Uint64 now = SDL_GetTicks64();
    Uint64 spent = now - t->frame_start;
    if (spent < 16) SDL_Delay((Uint32)(16 - spent));
    t->frame_start = SDL_GetTicks64();
}

bool gfx_screenshot(gfx_target *t, const char *path)
{
    SDL_Surface *rgb = NULL;
    if (t->headless) {
        rgb = SDL_ConvertSurfaceFormat(t->surface, SDL_PIXELFORMAT_RGB24, 0);
    } else {
        rgb = SDL_CreateRGBSurfaceWithFormat(0, t->width, t->height, 24, SDL_PIXELFORMAT_RGB24);
        if (rgb && SDL_RenderReadPixels(t->renderer, NULL, SDL_PIXELFORMAT_RGB24, rgb->pixels,
                                        rgb->pitch) != 0) {
            SDL_FreeSurface(rgb);
            rgb = NULL;
        }
    }
    if (!rgb) return false;
    size_t len = strlen(path);
    bool ok;
    if (len > 4 && !strcmp(path + len - 4, ".bmp")) {
        ok = SDL_SaveBMP(rgb, path) == 0;
    } else {
        SDL_LockSurface(rgb);
        ok = stbi_write_png(path, rgb->w, rgb->h, 3, rgb->pixels, rgb->pitch) != 0;
        SDL_UnlockSurface(rgb);
    }
    SDL_FreeSurface(rgb);
    return ok;
}

/* ---------------------------------------------------------------------------------------------
   Shapes
   ------------------------------------------------------------------------------------------ */

static Uint8 gfx_lerp8(Uint8 a, Uint8 b, float k)
{
    float v = (float)a + ((float)b - (float)a) * k;
    return (Uint8)(v < 0.0f ? 0.0f : v > 255.0f ? 255.0f : v + 0.5f);
}

SDL_Color gfx_mix(SDL_Color a, SDL_Color b, float k)
{
    k = k < 0.0f ? 0.0f : k > 1.0f ? 1.0f : k;
    return (SDL_Color){gfx_lerp8(a.r, b.r, k), gfx_lerp8(a.g, b.g, k), gfx_lerp8(a.b, b.b, k),
                       gfx_lerp8(a.a, b.a, k)};
}

SDL_Color gfx_alpha(SDL_Color c, float alpha)
{
    alpha = alpha < 0.0f ? 0.0f : alpha > 1.0f ? 1.0f : alpha;
    c.a = (Uint8)((float)c.a * alpha + 0.5f);
    return c;
}

static SDL_Vertex gfx_vertex(float x, float y, SDL_Color c)
{
    SDL_Vertex v = {{x, y}, c, {0.0f, 0.0f}};
    return v;
}

static void gfx_quad4(SDL_Renderer *r, const SDL_Vertex v[4])
{
    static const int idx[6] = {0, 1, 2, 0, 2, 3};
    SDL_RenderGeometry(r, NULL, v, 4, idx, 6);
}

void gfx_fill_rect(SDL_Renderer *r, float x, float y, float w, float h, SDL_Color c)
{
    gfx_quad(r, x, y, x + w, y, x + w, y + h, x, y + h, c);
}

void gfx_vgradient(SDL_Renderer *r, float x, float y, float w, float h, SDL_Color top,
                   SDL_Color bottom)
{
    SDL_Vertex v[4] = {gfx_vertex(x, y, top), gfx_vertex(x + w, y, top),
                       gfx_vertex(x + w, y + h, bottom), gfx_vertex(x, y + h, bottom)};
    gfx_quad4(r, v);
}

void gfx_quad(SDL_Renderer *r, float x0, float y0, float x1, float y1, float x2, float y2,
              float x3, float y3, SDL_Color c)
{
    SDL_Vertex v[4] = {gfx_vertex(x0, y0, c), gfx_vertex(x1, y1, c), gfx_vertex(x2, y2, c),
                       gfx_vertex(x3, y3, c)};
    gfx_quad4(r, v);
}

void gfx_disc(SDL_Renderer *r, float cx, float cy, float radius, SDL_Color center, SDL_Color edge)
{
    SDL_Vertex v[GFX_DISC_SEGMENTS + 1];
    int idx[GFX_DISC_SEGMENTS * 3];
    v[0] = gfx_vertex(cx, cy, center);
    for (int i = 0; i < GFX_DISC_SEGMENTS; i++) {
        float a = (float)i * (6.28318531f / GFX_DISC_SEGMENTS);
        v[i + 1] = gfx_vertex(cx + cosf(a) * radius, cy + sinf(a) * radius, edge);
        idx[i * 3] = 0;
        idx[i * 3 + 1] = i + 1;
        idx[i * 3 + 2] = (i + 1) % GFX_DISC_SEGMENTS + 1;
    }
    SDL_RenderGeometry(r, NULL, v, GFX_DISC_SEGMENTS + 1, idx, GFX_DISC_SEGMENTS * 3);
}

void gfx_arc(SDL_Renderer *r, float cx, float cy, float radius, float thickness, float a0,
             float a1, SDL_Color c)
{
    enum { SEGMENTS = 24 };
    SDL_Vertex v[(SEGMENTS + 1) * 2];
    int idx[SEGMENTS * 6];
    float inner = radius - thickness * 0.5f, outer = radius + thickness * 0.5f;
    for (int i = 0; i <= SEGMENTS; i++) {
        float a = a0 + (a1 - a0) * (float)i / SEGMENTS;
        v[i * 2] = gfx_vertex(cx + cosf(a) * inner, cy + sinf(a) * inner, c);
        v[i * 2 + 1] = gfx_vertex(cx + cosf(a) * outer, cy + sinf(a) * outer, c);
    }
    for (int i = 0; i < SEGMENTS; i++) {
        int b = i * 2;
        int *q = idx + i * 6;
        q[0] = b, q[1] = b + 1, q[2] = b + 3, q[3] = b, q[4] = b + 3, q[5] = b + 2;
    }
    SDL_RenderGeometry(r, NULL, v, (SEGMENTS + 1) * 2, idx, SEGMENTS * 6);
}

void gfx_line(SDL_Renderer *r, float x0, float y0, float x1, float y1, float width, SDL_Color c0,
              SDL_Color c1)
{
    float dx = x1 - x0, dy = y1 - y0;
    float len = sqrtf(dx * dx + dy * dy);
    if (len <= 0.0f) return;
    float nx = -dy / len * width * 0.5f, ny = dx / len * width * 0.5f;
    SDL_Vertex v[4] = {gfx_vertex(x0 + nx, y0 + ny, c0), gfx_vertex(x1 + nx, y1 + ny, c1),
                       gfx_vertex(x1 - nx, y1 - ny, c1), gfx_vertex(x0 - nx, y0 - ny, c0)};
    gfx_quad4(r, v);
}

float gfx_text(SDL_Renderer *r, float x, float y, int scale, SDL_Color c, const char *text)
{
    /* A one-pixel shadow keeps small text readable over glows and bright shapes. */
    SDL_SetRenderDrawColor(r, 0, 0, 0, (Uint8)(c.a / 2));
    demo_text_draw(r, (int)x + 1, (int)y + 1, scale, text);
    SDL_SetRenderDrawColor(r, c.r, c.g, c.b, c.a);
    return (float)demo_text_draw(r, (int)x, (int)y, scale, text) - x;
}
