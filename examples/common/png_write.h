/* SPDX-License-Identifier: Zlib */
/* png_write.h -- writes 8-bit RGB/RGBA PNG files, for the demos' screenshots.

   SDL2 only saves BMP, and the demos' headless tests and docs want PNG. This writer has no
   dependency beyond the C library: with zlib (PNG_WRITE_HAVE_ZLIB, set by examples/CMakeLists.txt
   when Debian's zlib1g-dev is found) the image data is deflated with compress2(); without it the
   data goes into stored (uncompressed) deflate blocks, which every PNG reader accepts.

   Usage:
       // pixels: height rows top to bottom, `stride` bytes apart, `channels` bytes per pixel
       if (png_write("shot.png", pixels, w, h, pitch, 3) != 0) perror("shot.png");

   demo_sdl.h has demo_screenshot(renderer, path), which reads the renderer's pixels and calls
   this. png_crc32() is exported for readers (examples/common/demo_check.c) that verify chunks. */
#ifndef PNG_WRITE_H
#define PNG_WRITE_H

#include <stddef.h>
#include <stdint.h>

/* Writes pixels as a PNG file (colour type 2 for channels 3, 6 for channels 4).
   @return 0 on success, -1 on invalid arguments, allocation or I/O failure (errno set by the
           failing call for I/O). */
int png_write(const char *path, const unsigned char *pixels, int width, int height,
              size_t stride, int channels);

/* Encodes the same PNG into memory. *out is malloc'ed (free it); *out_size its length.
   @return 0 on success, -1 on failure (nothing to free). */
int png_encode(const unsigned char *pixels, int width, int height, size_t stride, int channels,
               unsigned char **out, size_t *out_size);

/* CRC-32 as PNG chunks use it (ISO 3309), continued from crc (start with 0). */
uint32_t png_crc32(uint32_t crc, const unsigned char *data, size_t len);

#endif /* PNG_WRITE_H */
