#!/usr/bin/env python3
# SPDX-License-Identifier: Zlib
"""check_printers.py -- runs gdb in batch mode on printers_program with the printers of
tools/debugger loaded and printers.gdb's commands, and compares what it prints after the BEGIN
line with printers.expected, exactly, after four normalisations:
  - addresses (0x...) become 0x?, byte counts (bytes = N) become N: they differ from build to
    build; the script checks the byte counts against sp_stats_get itself;
  - the path of printers_program.c is cut to its name;
  - @NAME@ in the expected text is the line of the source marked SITE_NAME;
  - expected lines starting "debug|" are for the program linked to the debug library (sites),
    "release|" for the one linked to the SP_DEBUG=0 library, both prefixes removed.
With --install BUILD PREFIX, the build is installed into PREFIX first (cmake --install) and
nothing is sourced: gdb auto-loads the printers with the installed shared library, which the
program (linked to it, without a build-tree RPATH) loads from PREFIX.
Exits 77 (ctest: skipped) with a line when gdb is not installed.
  check_printers.py --gdb GDB --program PROG --variant debug|release --printers SCRIPT
                    --commands printers.gdb --expected printers.expected --source printers_program.c
                    [--install BUILD PREFIX --cmake CMAKE --libdir LIBDIR]"""
import argparse
import difflib
import os
import re
import shutil
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser()
    for a in ("gdb", "program", "variant", "printers", "commands", "expected", "source"):
        ap.add_argument("--" + a, required=True)
    ap.add_argument("--install", nargs=2)
    ap.add_argument("--cmake", default="cmake")
    ap.add_argument("--libdir", default="lib")
    args = ap.parse_args()
    gdb = shutil.which(args.gdb)
    if not gdb:
        print("check_printers: SKIPPED: gdb not found (%s); on Debian: apt-get install gdb "
              "(make test installs it)" % args.gdb)
        return 77
    env = dict(os.environ)
    # LeakSanitizer cannot run under ptrace; the program is killed at the stop anyway.
    env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":detect_leaks=0"
    load = ["-ex", "source " + args.printers]
    if args.install:
        build, prefix = args.install
        shutil.rmtree(prefix, ignore_errors=True)
        inst = subprocess.run([args.cmake, "--install", build, "--prefix", prefix], capture_output=True, text=True)
        if inst.returncode != 0:
            print("check_printers: cmake --install failed:\n" + inst.stdout + inst.stderr)
            return 1
        env["LD_LIBRARY_PATH"] = os.path.join(prefix, args.libdir)
        load = ["-iex", "set auto-load scripts-directory " + os.path.join(prefix, "share/gdb/auto-load"),
                "-iex", "add-auto-load-safe-path " + prefix]
    run = subprocess.run([gdb, "-batch", "-nx"] + load + ["-x", args.commands, args.program],
                         capture_output=True, text=True, env=env, timeout=300)
    out = run.stdout + run.stderr
    if "==BEGIN==\n" not in out:
        print("check_printers: gdb never reached the stop:\n" + out)
        return 1
    got = out.split("==BEGIN==\n", 1)[1]
    got = re.sub(r"0x[0-9a-f]+", "0x?", got)
    got = re.sub(r"\b(bytes|bytes_reserved) = \d+", r"\1 = N", got)
    got = re.sub(r"\S*/printers_program\.c", "printers_program.c", got)
    got = got.replace("[Inferior 1 (process ?) killed]\n", "")
    got = re.sub(r"\[Inferior 1 \(process \d+\) killed\]\n", "", got)

    source = open(args.source).read().splitlines()
    sites = {}
    for n, line in enumerate(source, 1):
        for m in re.finditer(r"SITE_(\w+)", line):
            sites[m.group(1)] = n
    want = []
    for line in open(args.expected).read().splitlines():
        variant = re.match(r"^(debug|release)\|", line)
        if variant:
            if variant.group(1) != args.variant:
                continue
            line = line[len(variant.group(0)):]
        want.append(re.sub(r"@(\w+)@", lambda m: str(sites[m.group(1)]), line))
    want = "\n".join(want) + "\n"
    if got == want:
        print("check_printers: gdb printed what printers.expected says (%s library, %d lines)" % (
            args.variant, want.count("\n")))
        return 0
    print("check_printers: gdb's output differs from printers.expected (%s library):" % args.variant)
    sys.stdout.writelines(difflib.unified_diff(want.splitlines(True), got.splitlines(True),
                                               "expected", "gdb printed"))
    return 1


if __name__ == "__main__":
    sys.exit(main())
