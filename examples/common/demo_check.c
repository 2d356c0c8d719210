/* SPDX-License-Identifier: Zlib */
/* demo_check: runs a demo's headless mode and checks what it printed and the PNG it wrote.
   Used by the demos' ctest entries (examples/CMakeLists.txt), so the tests need no Python.

       demo_check [checks] -- COMMAND [ARGS...]

   The command must exit 0 (or the status given with --exit). Its stdout is echoed (ctest shows it on failure) and scanned for
   `key=value` lines, which the checks refer to:
       --expect KEY<op>NUMBER   op is one of = != < <= > >=    e.g. --expect pooled_steady_alloc_calls=0
       --contains TEXT          the output contains TEXT
       --exit N                 the command exits with status N (default 0)
       --png FILE               FILE is a PNG that decodes (Debian's libstb, stb_image),
                                written by this run (it is deleted before the command runs)
       --size WxH               ... of this size
       --min-colours N          ... with at least N distinct colours
       --min-foreground PCT     ... and at least PCT % of pixels differ from the most common one */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#ifdef DEMO_HAVE_STB
#include <stb_image.h>
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
   Reading the PNG (Debian's libstb: stb_image decodes it)
   ------------------------------------------------------------------------------------------ */
#ifndef DEMO_HAVE_STB
static void dc_png(const char *path, int want_w, int want_h, long min_colours, double min_fg) {
    (void)want_w, (void)want_h, (void)min_colours, (void)min_fg;
    dc_fail("cannot check %s: built without Debian's libstb-dev (stb_image)%s", path, "");
}
#else
static int dc_cmp_u32(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

static void dc_png(const char *path, int want_w, int want_h, long min_colours, double min_fg) {
    static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
    unsigned char head[8] = {0};
    FILE *f = fopen(path, "rb");
    if (!f) {
        dc_fail("%s was not written: %s", path, strerror(errno));
        return;
    }
    size_t got_head = fread(head, 1, sizeof head, f);
    fclose(f);
    if (got_head != sizeof head || memcmp(head, sig, sizeof sig) != 0) {
        dc_fail("%s has no PNG signature%s", path, "");
        return;
    }
    int w = 0, h = 0, channels = 0;
    unsigned char *rgb = stbi_load(path, &w, &h, &channels, 3);
    if (!rgb) {
        dc_fail("%s does not decode: %s", path, stbi_failure_reason());
        return;
    }
    char got[64], want[64];
    snprintf(got, sizeof got, "%dx%d", w, h);
    snprintf(want, sizeof want, "%dx%d", want_w, want_h);
    size_t n = (size_t)w * (size_t)h, distinct = 0, best_run = 0;
    uint32_t *px = malloc(n * sizeof *px);
    if (want_w && (w != want_w || h != want_h)) {
        dc_fail("PNG is %s, expected %s", got, want);
    } else if (!px) {
        dc_fail("%s: no memory for %s pixels", path, got);
    } else {
        for (size_t i = 0; i < n; i++)
            px[i] = (uint32_t)rgb[3 * i] << 16 | (uint32_t)rgb[3 * i + 1] << 8 | rgb[3 * i + 2];
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
    }
    free(px);
    stbi_image_free(rgb);
}
#endif

/* ---------------------------------------------------------------------------------------------
   Main
   ------------------------------------------------------------------------------------------ */
int main(int argc, char **argv) {
    const char *expects[DC_MAX_CHECKS], *contains[DC_MAX_CHECKS], *png = NULL;
    int n_expect = 0, n_contains = 0, w = 0, h = 0, cmd = 0, want_status = 0;
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
        else if (!strcmp(a, "--exit")) want_status = (int)strtol(v, NULL, 10);
        else if (!strcmp(a, "--size")) {
            if (sscanf(v, "%dx%d", &w, &h) != 2) break;
        } else if (!strcmp(a, "--min-colours")) min_colours = strtol(v, NULL, 10);
        else if (!strcmp(a, "--min-foreground")) min_fg = strtod(v, NULL);
        else break;
    }
    if (!cmd || cmd >= argc) {
        fprintf(stderr, "usage: demo_check [--expect K<op>N] [--contains TEXT] [--exit N] [--png FILE "
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
    if (!WIFEXITED(status) || WEXITSTATUS(status) != want_status) {
        char code[64];
        snprintf(code, sizeof code, "%d, not %d", WIFEXITED(status) ? WEXITSTATUS(status) : -1,
                 want_status);
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
