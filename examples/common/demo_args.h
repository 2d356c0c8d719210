/* SPDX-License-Identifier: Zlib */
/* demo_args.h -- one command-line convention for every demo, over getopt_long.

   Each demo lists its options in a table; demo_args_parse() parses argv with getopt_long,
   checks numbers against their ranges and choices against their names, and writes the values
   through the table's pointers. The convention:
       --help            prints the usage to stdout; the demo exits 0
       an unknown flag,  one line on stderr naming it ("try --help"); the demo exits 2
       a bad value, or
       a stray argument
   Flags take their value as `--frames 300` or `--frames=300`.

   Usage:
       static const demo_opt opts[] = {
           {"frames", DEMO_OPT_LONG, &frames, 1, 1e6, NULL, "N", "frames to run (default 300)"},
           {"headless", DEMO_OPT_FLAG, &headless, 0, 0, NULL, NULL, "render offscreen"},
           {"policy", DEMO_OPT_CHOICE, &policy, 0, 0, "drop|reclaim", "P", "when full"},
           {0},
       };
       int rc = demo_args_parse("turret", "One line on what it is.", opts, argc, argv);
       if (rc != DEMO_ARGS_RUN) return rc;
*/
#ifndef DEMO_ARGS_H
#define DEMO_ARGS_H

#include <stdbool.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum demo_opt_kind {
    DEMO_OPT_FLAG,   /* no value; out: bool*, set to true */
    DEMO_OPT_LONG,   /* an integer in [lo, hi]; out: long* */
    DEMO_OPT_DOUBLE, /* a number in [lo, hi]; out: double* */
    DEMO_OPT_STRING, /* any text; out: const char ** (points into argv) */
    DEMO_OPT_CHOICE  /* one of `choices` ("a|b|c"); out: int*, the index of the choice */
} demo_opt_kind;

typedef struct demo_opt {
    const char *name;    /* the long name, without "--"; NULL ends the table */
    demo_opt_kind kind;
    void *out;
    double lo, hi;       /* DEMO_OPT_LONG and DEMO_OPT_DOUBLE */
    const char *choices; /* DEMO_OPT_CHOICE */
    const char *value;   /* the value's name in the usage ("N", "FILE") */
    const char *help;    /* one line; "\n" starts a continuation line */
} demo_opt;

#define DEMO_ARGS_RUN (-1)

/* Parses argv against opts (at most 32). `about` is printed under the usage line by --help,
   `epilogue` (may be NULL) after the options.
   @return DEMO_ARGS_RUN to go on, or the exit code: 0 after --help, 2 on a bad command line. */
int demo_args_parse(const char *prog, const char *about, const char *epilogue,
                    const demo_opt *opts, int argc, char **argv);

/* Prints the usage demo_args_parse prints for --help. */
void demo_args_usage(FILE *out, const char *prog, const char *about, const char *epilogue,
                     const demo_opt *opts);

/* For a demo's own checks after parsing ("--screenshot needs --headless"): one line on stderr,
   "prog: message (try --help)". @return 2, the exit code for a bad command line. */
int demo_args_error(const char *prog, const char *message);

#ifdef __cplusplus
}
#endif

#endif /* DEMO_ARGS_H */
