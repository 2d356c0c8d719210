#!/usr/bin/env python3
# SPDX-License-Identifier: Zlib
"""check_printers.py -- runs gdb in batch mode on printers_program with the printers of
tools/debugger loaded and printers.gdb's commands, and compares what it prints after the BEGIN
line with printers.expected, exactly (trailing blanks aside), after these normalisations:
  - addresses (0x...) become 0x?, byte counts (bytes = N) become N: they differ from build to
    build; the script checks the byte counts against sp_stats_get itself;
  - the path of printers_program.c is cut to its name, process ids become ?;
  - @NAME@ in the expected text is the line of the source marked SITE_NAME;
  - expected lines starting "debug|" are for the program linked to the debug library (sites),
    "release|" for the one linked to the SP_DEBUG=0 library, both prefixes removed.
With --install BUILD PREFIX, the build is installed into PREFIX first (cmake --install) and
nothing is sourced: gdb auto-loads the printers with the installed shared library, which the
program (linked to it, without a build-tree RPATH) loads from PREFIX.
With --debugger lldb, GDB is lldb, SCRIPT is spawnpool_lldb.py and the commands are lldb's.
Exits 77 (ctest: skipped) with a line when the debugger is not installed.
  check_printers.py --gdb GDB --program PROG --variant debug|release --printers SCRIPT
                    --commands printers.gdb --expected printers.expected --source printers_program.c
                    [--install BUILD PREFIX --cmake CMAKE --libdir LIBDIR]"""
import argparse
import difflib
import glob
import os
import re
import shutil
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser()
    for a in ("gdb", "program", "variant", "printers", "commands", "expected", "source"):
        ap.add_argument("--" + a, required=True)
    ap.add_argument("--debugger", default="gdb", choices=("gdb", "lldb"))
    ap.add_argument("--checks", help="lldb: a script of commands the commands use (lldb_checks.py)")
    ap.add_argument("--install", nargs=2)
    ap.add_argument("--cmake", default="cmake")
    ap.add_argument("--libdir", default="lib")
    args = ap.parse_args()
    gdb = shutil.which(args.gdb)
    if not gdb:
        print("check_printers: SKIPPED: %s not found (%s); on Debian: apt-get install %s "
              "(make test installs it)" % (args.debugger, args.gdb, args.debugger))
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
    command = [gdb, "-batch", "-nx"] + load + ["-x", args.commands, args.program]
    if args.debugger == "lldb":
        # Debian's lldb 14 looks for its Python module where it is not (tools/deps.sh says the same)
        env["PYTHONPATH"] = ":".join([d for d in glob.glob("/usr/lib/llvm-*/lib/python3*/dist-packages")
                                      if os.path.exists(os.path.join(d, "lldb", "__init__.py"))] +
                                     [env.get("PYTHONPATH", "")])
        # lldb's embedded Python takes its prefix from the python3 on PATH: the distribution's,
        # beside lldb, and not one of another installation (pyenv, a virtualenv) that runs this.
        env["PATH"] = os.path.dirname(gdb) + os.pathsep + env.get("PATH", "")
        command = [gdb, "-b", "-x", "-o", "command script import " + args.printers]
        if args.checks:
            command += ["-o", "command script import " + args.checks]
        command += ["-s", args.commands, "--", args.program]
    run = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
    out = run.stdout + run.stderr
    if "==BEGIN==\n" not in out:
        print("check_printers: gdb never reached the stop:\n" + out)
        return 1
    got = out.split("==BEGIN==\n", 1)[1]
    got = re.sub(r"0x[0-9a-f]+", "0x?", got)
    got = re.sub(r"\b(bytes|bytes_reserved) = \d+", r"\1 = N", got)
    got = re.sub(r"\S*/printers_program\.c", "printers_program.c", got)
    got = re.sub(r"\bProcess \d+ exited\b", "Process ? exited", got)
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
    got = "".join(line.rstrip() + "\n" for line in got.splitlines())
    if got == want:
        print("check_printers: %s printed what %s says (%s library, %d lines)" % (
            args.debugger, os.path.basename(args.expected), args.variant, want.count("\n")))
        return 0
    print("check_printers: %s's output differs from %s (%s library):" % (
        args.debugger, os.path.basename(args.expected), args.variant))
    sys.stdout.writelines(difflib.unified_diff(want.splitlines(True), got.splitlines(True),
                                               "expected", args.debugger + " printed"))
    return 1


if __name__ == "__main__":
    sys.exit(main())
