/* SPDX-License-Identifier: Zlib */
/* font5x7.h -- a built-in 5x7 bitmap font for the demos' counters and labels.

   The demos draw text without SDL_ttf or font files: each glyph is 5 columns by 7 rows, drawn
   as filled squares of `scale` pixels (demo_sdl.h's demo_text_draw). It covers digits, letters
   (lowercase is drawn as uppercase, the look of a game HUD) and the punctuation counters need;
   '^' and '~' are drawn as up and down arrows for key hints. Unknown characters are a box. */
#ifndef FONT5X7_H_INCLUDED
#define FONT5X7_H_INCLUDED

#define FONT5X7_W 5
#define FONT5X7_H 7
#define FONT5X7_ADVANCE 6 /* glyph width plus one column of spacing */

/* Fills rows[0..6] (top first) with the glyph of ch; bit 4 is the leftmost column. */
void font5x7_glyph(int ch, unsigned char rows[FONT5X7_H]);

#endif /* FONT5X7_H_INCLUDED */
