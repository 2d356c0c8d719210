/* SPDX-License-Identifier: Zlib */
/* demo_args.c -- the demos' command lines over getopt_long; see demo_args.h. */
#define _GNU_SOURCE /* getopt_long */
#include "demo_args.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#define DEMO_ARGS_MAX 32
#define DEMO_ARGS_HELP 1000 /* getopt_long's code for --help; the table's are their indices */

void demo_args_usage(FILE *out, const char *prog, const char *about, const char *epilogue,
                     const demo_opt *opts) {
    fprintf(out, "usage: %s [options]\n%s\n\n", prog, about);
    for (const demo_opt *o = opts; o->name; o++) {
        char left[64];
        snprintf(left, sizeof left, "--%s%s%s", o->name, o->value ? " " : "",
                 o->value ? o->value : "");
        fprintf(out, "  %-20s", left);
        for (const char *h = o->help; *h; h++) {
            fputc(*h, out);
            if (*h == '\n') fprintf(out, "  %-20s", "");
        }
        fputc('\n', out);
    }
    fprintf(out, "  %-20s%s\n", "--help", "this text");
    if (epilogue) fprintf(out, "\n%s\n", epilogue);
}

int demo_args_error(const char *prog, const char *message) {
    fprintf(stderr, "%s: %s (try --help)\n", prog, message);
    return 2;
}

/* Writes one value through o->out. @return 0, or 2 after saying what was wrong. */
static int store(const char *prog, const demo_opt *o, const char *v) {
    char msg[256];
    if (o->kind == DEMO_OPT_FLAG) {
        *(bool *)o->out = true;
        return 0;
    }
    if (o->kind == DEMO_OPT_STRING) {
        if (!*v) {
            snprintf(msg, sizeof msg, "--%s wants a %s", o->name, o->value ? o->value : "value");
            return demo_args_error(prog, msg);
        }
        *(const char **)o->out = v;
        return 0;
    }
    if (o->kind == DEMO_OPT_CHOICE) {
        int index = 0;
        for (const char *c = o->choices; *c; index++) {
            size_t len = strcspn(c, "|");
            if (strlen(v) == len && !strncmp(c, v, len)) {
                *(int *)o->out = index;
                return 0;
            }
            c += len + (c[len] == '|');
        }
        snprintf(msg, sizeof msg, "--%s wants one of %s, not '%s'", o->name, o->choices, v);
        return demo_args_error(prog, msg);
    }
    char *end;
    errno = 0;
    double d = strtod(v, &end);
    bool whole = o->kind != DEMO_OPT_LONG || d == (double)(long)d;
    if (end == v || *end || errno || !(d >= o->lo && d <= o->hi) || !whole) {
        snprintf(msg, sizeof msg, "--%s wants %s from %g to %g, not '%s'", o->name,
                 o->kind == DEMO_OPT_LONG ? "a whole number" : "a number", o->lo, o->hi, v);
        return demo_args_error(prog, msg);
    }
    if (o->kind == DEMO_OPT_LONG) *(long *)o->out = (long)d;
    else *(double *)o->out = d;
    return 0;
}

int demo_args_parse(const char *prog, const char *about, const char *epilogue,
                    const demo_opt *opts, int argc, char **argv) {
    struct option longs[DEMO_ARGS_MAX + 2];
    int n = 0;
    for (; opts[n].name && n < DEMO_ARGS_MAX; n++) {
        longs[n].name = opts[n].name;
        longs[n].has_arg = opts[n].kind == DEMO_OPT_FLAG ? no_argument : required_argument;
        longs[n].flag = NULL;
        longs[n].val = n;
    }
    longs[n] = (struct option){"help", no_argument, NULL, DEMO_ARGS_HELP};
    longs[n + 1] = (struct option){0, 0, 0, 0};
    char msg[256];
    opterr = 0; /* our messages, in the convention's form */
    optind = 1;
    for (;;) {
        int at = optind;
        int c = getopt_long(argc, argv, ":h", longs, NULL);
        if (c == -1) break;
        if (c == DEMO_ARGS_HELP || c == 'h') {
            demo_args_usage(stdout, prog, about, epilogue, opts);
            return 0;
        }
        if (c == ':') {
            snprintf(msg, sizeof msg, "%s wants a value", argv[at]);
            return demo_args_error(prog, msg);
        }
        if (c == '?' || c < 0 || c >= n) {
            snprintf(msg, sizeof msg, "unknown option '%s'", argv[at < argc ? at : argc - 1]);
            return demo_args_error(prog, msg);
        }
        if (store(prog, &opts[c], optarg ? optarg : "") != 0) return 2;
    }
    if (optind < argc) {
        snprintf(msg, sizeof msg, "unexpected argument '%s'", argv[optind]);
        return demo_args_error(prog, msg);
    }
    return DEMO_ARGS_RUN;
}
