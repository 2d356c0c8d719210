/* SPDX-License-Identifier: Zlib */
/* demo_check: runs a demo's headless mode and checks what it printed and the PNG it wrote.
   Used by the demos' ctest entries (examples/CMakeLists.txt), so the tests need no Python.

       demo_check [checks] -- COMMAND [ARGS...]

   The command must exit 0. Its stdout is echoed (ctest shows it on failure) and scanned for
   `key=value` lines, which the checks refer to:
       --expect KEY<op>NUMBER   op is one of = != < <= > >=    e.g. --expect pooled_steady_alloc_calls=0
       --contains TEXT          the output contains TEXT
       --png FILE               FILE is a valid PNG (signature, chunk CRCs, 8-bit RGB/RGBA)
                                written by this run (it is deleted before the command runs)
       --size WxH               ... of this size
       --min-colours N          ... with at least N distinct colours
       --min-foreground PCT     ... and at least PCT % of pixels differ from the most common one
   The PNG reader handles what examples/common/png_write.c writes: zlib streams (inflated with
   zlib when built with it, stored blocks otherwise) and all five row filters. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "png_write.h"

#ifdef PNG_WRITE_HAVE_ZLIB
#include <zlib.h>
#endif

#define DC_MAX_CHECKS 32

static int dc_failures = 0;

static void dc_fail(const char *fmt, const char *a, const char *b) {
    fprintf(stderr, "demo_check: FAIL: ");
    fprintf(stderr, fmt, a, b);
    fputc('\n', stderr);
    dc_failures++;
}

/* ---------------------------------------------------------------------------------------------
   Running the command
   ------------------------------------------------------------------------------------------ */
static char *dc_run(char **argv, int *status) {
    int fd[2];
    if (pipe(fd) != 0) return NULL;
    pid_t pid = fork();
    if (pid < 0) return NULL;
    if (pid == 0) {
        dup2(fd[1], STDOUT_FILENO);
        close(fd[0]);
        close(fd[1]);
        execvp(argv[0], argv);
        fprintf(stderr, "demo_check: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(fd[1]);
    size_t len = 0, cap = 1 << 16;
    char *out = malloc(cap);
    for (;;) {
        if (out && len + 4096 > cap) {
            char *grown = realloc(out, cap * 2);
            if (!grown) {
                free(out);
                out = NULL;
            } else {
                out = grown;
                cap *= 2;
            }
        }
        char scratch[4096];
        ssize_t n = read(fd[0], out ? out + len : scratch, 4096);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        if (out) {
            fwrite(out + len, 1, (size_t)n, stdout);
            len += (size_t)n;
        }
    }
    close(fd[0]);
    waitpid(pid, status, 0);
    if (out) out[len] = '\0';
    return out;
}

/* The value of `key=` at the start of a line, or NULL. */
static const char *dc_value(const char *out, const char *key, size_t key_len) {
    for (const char *p = out; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        if (!strncmp(p, key, key_len) && p[key_len] == '=') return p + key_len + 1;
    }
    return NULL;
}

static void dc_expect(const char *out, const char *expr) {
    static const char *const ops[] = {"!=", "<=", ">=", "=", "<", ">"};
    const char *at = NULL, *op = NULL;
    for (const char *p = expr; *p && !at; p++)
        for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++)
            if (!strncmp(p, ops[k], strlen(ops[k]))) {
                at = p;
                op = ops[k];
                break;
            }
    if (!at || at == expr) {
        dc_fail("bad --expect '%s'%s", expr, "");
        return;
    }
    const char *v = dc_value(out, expr, (size_t)(at - expr));
    if (!v) {
        char key[128];
        snprintf(key, sizeof key, "%.*s", (int)(at - expr), expr);
        dc_fail("no '%s=' line in the output%s", key, "");
        return;
    }
    double have = strtod(v, NULL), want = strtod(at + strlen(op), NULL);
    int ok = !strcmp(op, "=") ? have == want : !strcmp(op, "!=") ? have != want
           : !strcmp(op, "<") ? have < want : !strcmp(op, "<=") ? have <= want
           : !strcmp(op, ">") ? have > want : have >= want;
    char line[128];
    snprintf(line, sizeof line, "%.*s", (int)strcspn(v, "\n"), v);
    if (!ok) dc_fail("expected %s, the value is %s", expr, line);
    else printf("demo_check: ok: %s (%s)\n", expr, line);
}

/* ---------------------------------------------------------------------------------------------
   Reading the PNG
   ------------------------------------------------------------------------------------------ */
static uint32_t dc_get32(const unsigned char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int dc_inflate(const unsigned char *z, size_t n, unsigned char *out, size_t out_size) {
#ifdef PNG_WRITE_HAVE_ZLIB
    uLongf size = (uLongf)out_size;
    return uncompress(out, &size, z, (uLong)n) == Z_OK && size == out_size ? 0 : -1;
#else
    /* stored blocks only: what png_write.c writes without zlib */
    size_t i = 2, o = 0;
    if (n < 2 || (z[0] & 0x0F) != 8) return -1;
    for (;;) {
        if (i + 5 > n || (z[i] & 0x06) != 0) return -1; /* not a stored block */
        int final = z[i] & 1;
        size_t len = (size_t)z[i + 1] | (size_t)z[i + 2] << 8;
        i += 5;
        if (i + len > n || o + len > out_size) return -1;
        memcpy(out + o, z + i, len);
        i += len;
        o += len;
        if (final) break;
    }
    return o == out_size ? 0 : -1;
#endif
}

static int dc_paeth(int a, int b, int c) {
    int p = a + b - c, pa = abs(p - a), pb = abs(p - b), pc = abs(p - c);
    return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

static int dc_cmp_u32(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

static void dc_png(const char *path, int want_w, int want_h, long min_colours, double min_fg) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        dc_fail("%s was not written: %s", path, strerror(errno));
        return;
    }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *png = size > 0 ? malloc((size_t)size) : NULL;
    if (!png || fread(png, 1, (size_t)size, f) != (size_t)size) {
        fclose(f);
        free(png);
        dc_fail("cannot read %s%s", path, "");
        return;
    }
    fclose(f);
    static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
    unsigned char *idat = NULL;
    size_t idat_len = 0, pos = 8;
    uint32_t w = 0, h = 0;
    int channels = 0, seen_end = 0;
    if (size < 8 || memcmp(png, sig, 8) != 0) {
        dc_fail("%s has no PNG signature%s", path, "");
        goto done;
    }
    while (pos + 12 <= (size_t)size && !seen_end) {
        uint32_t len = dc_get32(png + pos);
        const unsigned char *type = png + pos + 4, *data = png + pos + 8;
        if (len > (size_t)size - pos - 12) {
            dc_fail("%s: chunk runs past the end of the file%s", path, "");
            goto done;
        }
        if (png_crc32(0, type, (size_t)len + 4) != dc_get32(data + len)) {
            dc_fail("%s: bad CRC in a %.4s chunk", path, (const char *)type);
            goto done;
        }
        if (!memcmp(type, "IHDR", 4) && len == 13) {
            w = dc_get32(data);
            h = dc_get32(data + 4);
            channels = data[9] == 2 ? 3 : data[9] == 6 ? 4 : 0;
            if (data[8] != 8 || !channels || data[12] != 0) {
                dc_fail("%s: not 8-bit RGB/RGBA, non-interlaced%s", path, "");
                goto done;
            }
        } else if (!memcmp(type, "IDAT", 4)) {
            unsigned char *grown = realloc(idat, idat_len + len + 1);
            if (!grown) goto done;
            idat = grown;
            memcpy(idat + idat_len, data, len);
            idat_len += len;
        } else if (!memcmp(type, "IEND", 4)) {
            seen_end = 1;
        }
        pos += (size_t)len + 12;
    }
    if (!seen_end || !w || !h || !idat) {
        dc_fail("%s: missing IHDR, IDAT or IEND%s", path, "");
        goto done;
    }
    char got[64], want[64];
    snprintf(got, sizeof got, "%ux%u", (unsigned)w, (unsigned)h);
    snprintf(want, sizeof want, "%dx%d", want_w, want_h);
    if (want_w && ((int)w != want_w || (int)h != want_h)) {
        dc_fail("PNG is %s, expected %s", got, want);
        goto done;
    }
    size_t row = 1 + (size_t)w * (size_t)channels;
    unsigned char *raw = malloc(row * h);
    uint32_t *px = malloc((size_t)w * h * sizeof *px);
    if (!raw || !px || dc_inflate(idat, idat_len, raw, row * h) != 0) {
        dc_fail("%s: image data does not inflate to %s", path, got);
        free(raw);
        free(px);
        goto done;
    }
    /* Undo the row filters in place, then pack each pixel's RGB into a uint32. */
    size_t bpp = (size_t)channels, stride = row - 1;
    for (uint32_t y = 0; y < h; y++) {
        unsigned char *cur = raw + y * row + 1, *prev = y ? raw + (y - 1) * row + 1 : NULL;
        int filter = cur[-1];
        for (size_t i = 0; i < stride; i++) {
            int a = i >= bpp ? cur[i - bpp] : 0, b = prev ? prev[i] : 0;
            int c = prev && i >= bpp ? prev[i - bpp] : 0;
            int add = filter == 1 ? a : filter == 2 ? b : filter == 3 ? (a + b) / 2
                    : filter == 4 ? dc_paeth(a, b, c) : 0;
            cur[i] = (unsigned char)(cur[i] + add);
        }
        for (uint32_t x = 0; x < w; x++) {
            const unsigned char *p = cur + x * bpp;
            px[(size_t)y * w + x] = (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
        }
    }
    size_t n = (size_t)w * h, distinct = 0, best_run = 0;
    qsort(px, n, sizeof *px, dc_cmp_u32);
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && px[j] == px[i]) j++;
        distinct++;
        if (j - i > best_run) best_run = j - i;
        i = j;
    }
    double fg = 100.0 * (double)(n - best_run) / (double)n;
    char have[96];
    snprintf(have, sizeof have, "%zu distinct colours, %.1f%% foreground", distinct, fg);
    if ((long)distinct < min_colours || fg < min_fg) dc_fail("%s: too plain: %s", path, have);
    else printf("demo_check: ok: %s is a %s PNG with %s\n", path, got, have);
    free(raw);
    free(px);
done:
    free(idat);
    free(png);
}

/* ---------------------------------------------------------------------------------------------
   Main
   ------------------------------------------------------------------------------------------ */
int main(int argc, char **argv) {
    const char *expects[DC_MAX_CHECKS], *contains[DC_MAX_CHECKS], *png = NULL;
    int n_expect = 0, n_contains = 0, w = 0, h = 0, cmd = 0;
    long min_colours = 0;
    double min_fg = 0.0;
    /* Flags come in pairs (--flag value) until "--"; anything else stops the parse. */
    for (int i = 1; i < argc; i += 2) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--")) {
            cmd = i + 1;
            break;
        }
        if (!v) break;
        if (!strcmp(a, "--expect") && n_expect < DC_MAX_CHECKS) expects[n_expect++] = v;
        else if (!strcmp(a, "--contains") && n_contains < DC_MAX_CHECKS) contains[n_contains++] = v;
        else if (!strcmp(a, "--png")) png = v;
        else if (!strcmp(a, "--size")) {
            if (sscanf(v, "%dx%d", &w, &h) != 2) break;
        } else if (!strcmp(a, "--min-colours")) min_colours = strtol(v, NULL, 10);
        else if (!strcmp(a, "--min-foreground")) min_fg = strtod(v, NULL);
        else break;
    }
    if (!cmd || cmd >= argc) {
        fprintf(stderr, "usage: demo_check [--expect K<op>N] [--contains TEXT] [--png FILE "
                        "[--size WxH] [--min-colours N] [--min-foreground PCT]] -- COMMAND...\n");
        return 2;
    }
    if (png) remove(png);
    int status = 0;
    char *out = dc_run(argv + cmd, &status);
    if (!out) {
        fprintf(stderr, "demo_check: cannot run %s\n", argv[cmd]);
        return 1;
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        char code[32];
        snprintf(code, sizeof code, "%d", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        dc_fail("%s exited with status %s", argv[cmd], code);
    }
    for (int i = 0; i < n_expect; i++) dc_expect(out, expects[i]);
    for (int i = 0; i < n_contains; i++) {
        if (!strstr(out, contains[i])) dc_fail("the output lacks '%s'%s", contains[i], "");
        else printf("demo_check: ok: output contains '%s'\n", contains[i]);
    }
    if (png) dc_png(png, w, h, min_colours, min_fg);
    free(out);
    if (dc_failures) fprintf(stderr, "demo_check: %d check(s) failed\n", dc_failures);
    return dc_failures ? 1 : 0;
}
