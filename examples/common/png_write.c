/* SPDX-License-Identifier: Zlib */
/* PNG encoder for the demos' screenshots; see png_write.h. The image is written as one IDAT
   chunk with filter type 0 on every row: screenshots of dark scenes compress well enough that
   the per-row filter search of a full encoder is not worth its code here. */
#include "png_write.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef PNG_WRITE_HAVE_ZLIB
#include <zlib.h>
#endif

uint32_t png_crc32(uint32_t crc, const unsigned char *data, size_t len) {
    /* The table is built on first use: 1 KiB of constants is not worth spelling out. */
    static uint32_t table[256];
    static int table_ready = 0;
    if (!table_ready) {
        for (uint32_t n = 0; n < 256; n++) {
            uint32_t c = n;
            for (int k = 0; k < 8; k++) c = (c & 1u) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
            table[n] = c;
        }
        table_ready = 1;
    }
    crc ^= 0xFFFFFFFFu;
    for (size_t i = 0; i < len; i++) crc = table[(crc ^ data[i]) & 0xFFu] ^ (crc >> 8);
    return crc ^ 0xFFFFFFFFu;
}

static void png_put32(unsigned char *p, uint32_t v) {
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

/* Appends one chunk (length, type, data, CRC over type and data) at out + *pos. */
static void png_chunk(unsigned char *out, size_t *pos, const char type[4],
                      const unsigned char *data, size_t len) {
    unsigned char *p = out + *pos;
    png_put32(p, (uint32_t)len);
    memcpy(p + 4, type, 4);
    if (len) memcpy(p + 8, data, len);
    png_put32(p + 8 + len, png_crc32(0, p + 4, len + 4));
    *pos += len + 12;
}

#ifndef PNG_WRITE_HAVE_ZLIB
/* A zlib stream of stored deflate blocks (RFC 1950/1951): header, blocks of at most 65535
   bytes each with LEN and its complement, then the Adler-32 of the data. */
static size_t png_stored_bound(size_t n) { return 2 + n + 5 * (n / 65535 + 1) + 4; }

static size_t png_store(unsigned char *out, const unsigned char *in, size_t n) {
    size_t o = 0;
    out[o++] = 0x78; /* deflate, 32K window */
    out[o++] = 0x01; /* no preset dictionary, fastest; 0x7801 is a multiple of 31 */
    size_t i = 0;
    do {
        size_t len = n - i < 65535 ? n - i : 65535;
        out[o++] = (unsigned char)(i + len == n ? 1 : 0); /* BFINAL, BTYPE 00 */
        out[o++] = (unsigned char)(len & 0xFFu);
        out[o++] = (unsigned char)(len >> 8);
        out[o++] = (unsigned char)(~len & 0xFFu);
        out[o++] = (unsigned char)((~len >> 8) & 0xFFu);
        memcpy(out + o, in + i, len);
        o += len;
        i += len;
    } while (i < n);
    uint32_t a = 1, b = 0;
    for (size_t k = 0; k < n; k++) {
        a = (a + in[k]) % 65521u;
        b = (b + a) % 65521u;
    }
    png_put32(out + o, (b << 16) | a);
    return o + 4;
}
#endif

int png_encode(const unsigned char *pixels, int width, int height, size_t stride, int channels,
               unsigned char **out, size_t *out_size) {
    if (!pixels || !out || !out_size || width <= 0 || height <= 0 ||
        (channels != 3 && channels != 4))
        return -1;
    size_t w = (size_t)width, h = (size_t)height, ch = (size_t)channels;
    size_t row = 1 + w * ch;
    if (stride < w * ch || w > 0x7FFFFFFFu / ch || h > (size_t)0x7FFFFFFF / row) return -1;

    /* Raw scanlines: a filter-type byte (0, none) and the row's bytes. */
    size_t raw_size = row * h;
    unsigned char *raw = malloc(raw_size);
    if (!raw) return -1;
    for (size_t y = 0; y < h; y++) {
        raw[y * row] = 0;
        memcpy(raw + y * row + 1, pixels + y * stride, w * ch);
    }

#ifdef PNG_WRITE_HAVE_ZLIB
    uLongf z_size = compressBound((uLong)raw_size);
#else
    size_t z_size = png_stored_bound(raw_size);
#endif
    /* signature 8 + IHDR 25 + IDAT 12 + data + IEND 12 */
    unsigned char *png = malloc(8 + 25 + 12 + (size_t)z_size + 12);
    if (!png) {
        free(raw);
        return -1;
    }
    static const unsigned char signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
    memcpy(png, signature, 8);
    size_t pos = 8;

    unsigned char ihdr[13];
    png_put32(ihdr, (uint32_t)w);
    png_put32(ihdr + 4, (uint32_t)h);
    ihdr[8] = 8;                               /* bit depth */
    ihdr[9] = (unsigned char)(ch == 3 ? 2 : 6); /* truecolour, or truecolour with alpha */
    ihdr[10] = ihdr[11] = ihdr[12] = 0;         /* deflate, adaptive filters, no interlace */
    png_chunk(png, &pos, "IHDR", ihdr, sizeof ihdr);

    /* Deflate straight into the IDAT chunk's data field, then frame it. */
    unsigned char *idat = png + pos + 8;
#ifdef PNG_WRITE_HAVE_ZLIB
    if (compress2(idat, &z_size, raw, (uLong)raw_size, 6) != Z_OK) {
        free(raw);
        free(png);
        return -1;
    }
#else
    z_size = png_store(idat, raw, raw_size);
#endif
    free(raw);
    png_put32(png + pos, (uint32_t)z_size);
    memcpy(png + pos + 4, "IDAT", 4);
    png_put32(png + pos + 8 + z_size, png_crc32(0, png + pos + 4, (size_t)z_size + 4));
    pos += (size_t)z_size + 12;
    png_chunk(png, &pos, "IEND", NULL, 0);

    *out = png;
    *out_size = pos;
    return 0;
}

int png_write(const char *path, const unsigned char *pixels, int width, int height,
              size_t stride, int channels) {
    unsigned char *png;
    size_t size;
    if (!path || png_encode(pixels, width, height, stride, channels, &png, &size) != 0) return -1;
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(png, 1, size, f) == size;
    if (f && fclose(f) != 0) ok = 0;
    free(png);
    return ok ? 0 : -1;
}
