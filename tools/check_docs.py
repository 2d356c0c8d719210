#!/usr/bin/env python3
# SPDX-License-Identifier: Zlib
"""Holds the documentation to the code: `make test` runs this, so a snippet, a command, a quoted
output, a version or a picture that no longer matches the program fails the build.

    tools/check_docs.py blocks --src DIR --build DIR --work DIR [--cc CC] [--cxx CXX] FILE.md...
    tools/check_docs.py versions --src DIR
    tools/check_docs.py images --src DIR --build DIR

blocks: every fenced code block of each file, by its language and the directives before it
(HTML comments, so a reader of the rendered page sees none of them):
  c, cpp   a block with a main() is a program: compiled with -Wall -Wextra -Wpedantic -Werror
           against the build's static library, once plain and once against the debug library
           (-DSP_DEBUG=1), and run; it must exit 0. Any other C or C++ block needs a directive:
             <!-- check: in NAME -->        compile it inside the context NAME, defined in the
                                            same file by a comment whose "@@" line stands for
                                            the block:  <!-- check: context NAME ... @@ ... -->
             <!-- check: excerpt PATH -->   the block is quoted from PATH: its lines appear there
                                            in order, a "..." line standing for any lines
  sh       run, line after line, in the file's session (below); a `make GOAL` line is checked
           with `make -n` (the goal exists; every goal builds in a directory of its own and
           some take minutes), everything else runs as written
  cmake    needs `file` or `append` (below), or `excerpt`
  text,    prose (a diagram, a layout) unless `<!-- check: output COMMAND -->`: COMMAND runs in
  none     the session and the block's lines must appear in its output in order (a "..." in a
           line matches any text; hex addresses and sanitizer pids are masked on both sides)
Any block:
  <!-- check: file PATH -->     also write the block to PATH in the session before its commands
  <!-- check: append PATH -->   append it to PATH
  <!-- check: skip REASON -->   do not run it (a command that runs for minutes or forever); the
                                reason is required, and the set is meant to stay small
The session of a file is a scratch copy of the source tree (cwd for its commands) with HOME in
the scratch directory too, and a shell block's `export` lines hold for the file's later blocks,
as in one terminal. Two substitutions make the commands runnable there: programs the
docs run from build/examples/ or build/demo/examples/ (what `cmake --build build` and
`make examples` build) run from this build's examples/, the same programs from the same
sources; and the placeholders <url> and <commit> of a FetchContent declaration name a git
repository made from the source tree.

versions: the project version (CMakeLists.txt) is the header's SP_VERSION, the top entry of
CHANGELOG.md, every find_package(spawnpool X.Y) and every libspawnpool.so.X.Y in the docs, the
header and the install test.

images: each docs/img/NAME.png has a NAME.txt beside it, written by tools/docs_images.sh with
the picture: the command that drew it and the counters it printed. The command runs again and
must print the same counters (measured times aside): the picture shows what the demo does now.
"""
import argparse
import os
import re
import shutil
import signal
import subprocess
import sys

TIMEOUT = 240  # seconds for one command or program


class Failure(Exception):
    pass


# --------------------------------------------------------------------------------------------
# Markdown: fenced blocks and the directives before them
# --------------------------------------------------------------------------------------------

class Block:
    def __init__(self, path, line, lang, text, directives):
        self.path, self.line, self.lang, self.text = path, line, lang, text
        self.directives = directives  # [(name, argument)]

    def where(self):
        return "%s:%d" % (self.path, self.line)

    def get(self, name):
        return [arg for d, arg in self.directives if d == name]


FENCE = re.compile(r"^(\s*)(```+|~~~+)\s*([\w+-]*)")
DIRECTIVE = re.compile(r"^\s*<!-- check: (\w[\w-]*)\s*(.*?)\s*-->\s*$")
CONTEXT = re.compile(r"<!-- check: context (\S+)\n(.*?)\n\s*-->", re.S)


def parse(path):
    """The fenced blocks of a Markdown file, and its contexts {name: text with @@}."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    text = "\n".join(lines)
    contexts = {m.group(1): m.group(2) for m in CONTEXT.finditer(text)}
    blocks, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, lang = m.group(1), m.group(2), m.group(3)
        directives, j = [], i - 1
        while j >= 0 and DIRECTIVE.match(lines[j]):
            d = DIRECTIVE.match(lines[j])
            directives.insert(0, (d.group(1), d.group(2)))
            j -= 1
        body, k = [], i + 1
        while k < len(lines) and not lines[k].strip().startswith(fence[:3]):
            body.append(lines[k][len(indent):] if lines[k].startswith(indent) else lines[k])
            k += 1
        if k == len(lines):
            raise Failure("%s:%d: the code block never closes" % (path, i + 1))
        blocks.append(Block(path, i + 1, lang, "\n".join(body) + "\n", directives))
        i = k + 1
    return blocks, contexts


# --------------------------------------------------------------------------------------------
# Running things
# --------------------------------------------------------------------------------------------

def run(cmd, cwd, env, what, shell=False, check=True):
    """Runs cmd (in a process group of its own, all of which a timeout ends); its output."""
    p = subprocess.Popen(cmd, cwd=cwd, env=env, shell=shell, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                         executable="/bin/bash" if shell else None, start_new_session=True)
    try:
        out, _ = p.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        raise Failure("%s: did not end within %d s" % (what, TIMEOUT))
    out = out.decode("utf-8", "replace")
    if check and p.returncode != 0:
        raise Failure("%s: exit status %d\n%s" % (what, p.returncode, out[-4000:]))
    return out


def mask(line):
    line = re.sub(r"0x[0-9a-fA-F]+", "0x?", line)
    line = re.sub(r"==\d+==", "==?==", line)
    return line.rstrip()


def expect_lines(expected, output, what):
    """Each expected line matches a line of the output, in order ("..." matches any text)."""
    out = [mask(l) for l in output.split("\n")]
    at = 0
    for want in expected.strip("\n").split("\n"):
        want = mask(want)
        if want.strip() == "...":
            continue
        pattern = re.compile(".*".join(re.escape(part) for part in want.split("...")) + r"\Z")
        while at < len(out) and not pattern.match(out[at]):
            at += 1
        if at == len(out):
            raise Failure("%s: no line of the output matches\n    %s\noutput:\n%s"
                          % (what, want, "\n".join(out)[-3000:]))
        at += 1


class Session:
    """A document's scratch copy of the source tree, where its commands run."""

    def __init__(self, args, name):
        self.args = args
        self.root = os.path.join(args.work, name)
        shutil.rmtree(self.root, ignore_errors=True)
        self.src = os.path.join(self.root, "spawnpool")
        self.home = os.path.join(self.root, "home")
        os.makedirs(self.home)
        self.skip = shutil.ignore_patterns(".git", "build", "build-*", "*.tmp")
        shutil.copytree(args.src, self.src, ignore=self.skip, symlinks=True)
        self.env = dict(os.environ, HOME=self.home, CC=args.cc, CXX=args.cxx)
        self.env.pop("MAKEFLAGS", None)
        self.env.pop("MAKELEVEL", None)
        self.git_url = None
        self.exports = []  # the export lines of the blocks run so far

    def path(self, rel):
        p = os.path.join(self.src, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        return p

    def placeholders(self, text):
        """<url> and <commit>: a git repository of the source tree (as the session began: not
        what its commands built), made on first use."""
        if "<url>" not in text and "<commit>" not in text:
            return text
        if self.git_url is None:
            repo = os.path.join(self.root, "spawnpool.git")
            shutil.copytree(self.args.src, repo, ignore=self.skip, symlinks=True)
            git = ["git", "-c", "user.name=check_docs", "-c", "user.email=check_docs@localhost"]
            run(["git", "init", "-q", repo], self.root, self.env, "git init")
            run(git + ["-C", repo, "add", "-A"], self.root, self.env, "git add")
            run(git + ["-C", repo, "commit", "-q", "-m", "docs check"], self.root, self.env,
                "git commit")
            self.commit = run(["git", "-C", repo, "rev-parse", "HEAD"], self.root, self.env,
                              "git rev-parse").strip()
            self.git_url = "file://" + repo
        return text.replace("<url>", self.git_url).replace("<commit>", self.commit)

    def command(self, text):
        """A shell text as it runs here: the build's examples, make goals dry-run."""
        examples = os.path.join(self.args.build, "examples") + "/"
        out = []
        for line in self.placeholders(text).split("\n"):
            line = re.sub(r"(?<![\w/.-])build/(demo/)?examples/", examples, line)
            line = re.sub(r"^(\s*)make(\s)", r"\1make -n\2", line)
            out.append(line)
        return "\n".join(out)


def compile_and_run(block, source, lang, args, work, run_it, in_context=False):
    os.makedirs(work, exist_ok=True)
    ext = "cpp" if lang == "cpp" else "c"
    src = os.path.join(work, "snippet_%d.%s" % (block.line, ext))
    with open(src, "w") as f:
        f.write(source)
    compiler = args.cxx if lang == "cpp" else args.cc
    std = "-std=c++11" if lang == "cpp" else "-std=c11"
    flags = [std, "-Wall", "-Wextra", "-Wpedantic", "-Werror", "-I", os.path.join(args.src, "include")]
    if in_context:  # a fragment declares what it does not use
        flags += ["-Wno-unused-function", "-Wno-unused-variable", "-Wno-unused-parameter",
                  "-Wno-unused-but-set-variable"]
    variants = [("plain", args.lib, []), ("debug", args.debug_lib, ["-DSP_DEBUG=1"])]
    for name, lib, defs in variants:
        what = "%s (%s, %s)" % (block.where(), lang, name)
        if not run_it:
            run([compiler] + flags + defs + ["-c", src, "-o", os.devnull], work, None, what)
            continue
        exe = os.path.join(work, "snippet_%d_%s" % (block.line, name))
        run([compiler] + flags + defs + [src, lib, "-lpthread", "-lm", "-o", exe], work, None, what)
        run([exe], work, None, what + ", run")


ELISION = ("...", "/* ... */", "// ...")


def code_lines(text):
    """The code of a C text, line by line: comments gone, spaces collapsed, empty lines out."""
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    out = []
    for line in text.split("\n"):
        line = " ".join(re.sub(r"//.*$", "", line).split())
        if line:
            out.append(line)
    return out


def excerpt(block, args):
    """The block quotes the file's code: its lines appear there in order and together, an
    elided line ("...") standing for any lines. Comments do not count, on either side, so the
    docs may annotate a quote in their own words."""
    rel = block.get("excerpt")[0]
    with open(os.path.join(args.src, rel), encoding="utf-8") as f:
        source = code_lines(f.read())
    parts, part = [], []
    for line in block.text.strip("\n").split("\n"):
        if line.strip() in ELISION:
            parts.append(code_lines("\n".join(part)))
            part = []
        else:
            part.append(line)
    parts.append(code_lines("\n".join(part)))
    at = 0
    for part in (p for p in parts if p):
        best = 0  # the most lines of the part that match somewhere, for the message
        for start in range(at, len(source)):
            n = 0
            while n < len(part) and start + n < len(source) and source[start + n] == part[n]:
                n += 1
            if n == len(part):
                at = start + n
                break
            best = max(best, n)
        else:
            raise Failure("%s: not a quote of %s (in order, after what the block quoted before): "
                          "its code has no line\n    %s\n%s" % (
                              block.where(), rel, part[best],
                              "after\n    " + part[best - 1] if best else ""))


def check_blocks(args):
    failures = 0
    for path in args.files:
        rel = os.path.relpath(path, args.src)
        name = re.sub(r"[^\w]+", "_", rel)
        blocks, contexts = parse(path)
        session = None
        work = os.path.join(args.work, name + "_snippets")
        counts = {}
        for b in blocks:
            b.path = rel
            try:
                kind = check_block(b, contexts, args, work)
                if kind == "session":
                    if session is None:
                        session = Session(args, name)
                    kind = session_block(b, session)
                counts[kind] = counts.get(kind, 0) + 1
            except Failure as e:
                print("FAILED " + str(e), file=sys.stderr)
                failures += 1
        summary = ", ".join("%d %s" % (n, k) for k, n in sorted(counts.items()))
        print("%s: %d blocks: %s" % (rel, len(blocks), summary or "none"))
    return failures


def check_block(b, contexts, args, work):
    """Blocks that need no session; "session" for the others."""
    if b.get("skip"):
        if not b.get("skip")[0]:
            raise Failure("%s: skip needs a reason" % b.where())
        return "skipped"
    if b.get("excerpt"):
        excerpt(b, args)
        return "quoted"
    if b.lang in ("c", "cpp"):
        if b.get("in"):
            ctx = contexts.get(b.get("in")[0])
            if ctx is None or "@@" not in ctx:
                raise Failure("%s: no context %s (with an @@ line) in this file"
                              % (b.where(), b.get("in")[0]))
            compile_and_run(b, ctx.replace("@@", b.text), b.lang, args, work, False, True)
            if b.get("file") or b.get("append"):
                return "session"
            return "compiled in a context"
        if not re.search(r"\bmain\s*\(", b.text):
            raise Failure("%s: a %s block without main() needs `in CONTEXT`, `excerpt PATH` or "
                          "`skip REASON`" % (b.where(), b.lang))
        compile_and_run(b, b.text, b.lang, args, work, True)
        if b.get("file") or b.get("append"):
            return "session"
        return "programs run"
    if b.lang in ("sh", "bash", "shell", "console"):
        return "session"
    if b.lang == "cmake":
        if not (b.get("file") or b.get("append")):
            raise Failure("%s: a cmake block needs `file PATH`, `append PATH`, `excerpt PATH` or "
                          "`skip REASON`" % b.where())
        return "session"
    if b.get("output") or b.get("file") or b.get("append"):
        return "session"
    return "prose"


def session_block(b, session):
    for rel in b.get("file"):
        with open(session.path(rel), "w") as f:
            f.write(session.placeholders(b.text))
    for rel in b.get("append"):
        with open(session.path(rel), "a") as f:
            f.write(session.placeholders(b.text))
    if b.lang in ("sh", "bash", "shell", "console"):
        script = "set -e -o pipefail\n" + "".join(session.exports) + session.command(b.text)
        run(script, session.src, session.env, "%s (commands)" % b.where(), shell=True)
        session.exports += [l + "\n" for l in b.text.split("\n") if re.match(r"\s*export\s+\w+=", l)]
        return "commands run"
    if b.get("output"):
        cmd = "".join(session.exports) + session.command(b.get("output")[0])
        out = run(cmd, session.src, session.env, "%s: %s" % (b.where(), cmd), shell=True,
                  check=False)
        expect_lines(b.text, out, "%s: the output of %s" % (b.where(), b.get("output")[0]))
        return "outputs matched"
    if b.lang in ("c", "cpp"):
        return "programs run"
    return "files written"


# --------------------------------------------------------------------------------------------
# Versions
# --------------------------------------------------------------------------------------------

def read(src, rel):
    with open(os.path.join(src, rel), encoding="utf-8") as f:
        return f.read()


def check_versions(args):
    src, errors = args.src, []
    m = re.search(r"project\(spawnpool VERSION (\d+)\.(\d+)\.(\d+)", read(src, "CMakeLists.txt"))
    major, minor, patch = m.groups()
    version = "%s.%s.%s" % (major, minor, patch)
    compat = "%s.%s" % (major, minor) if major == "0" else major  # SameMinorVersion, soname
    header = read(src, "include/spawnpool.h")
    for part, value in (("MAJOR", major), ("MINOR", minor), ("PATCH", patch)):
        if not re.search(r"#define SP_VERSION_%s %s\b" % (part, value), header):
            errors.append("include/spawnpool.h: SP_VERSION_%s is not %s (CMakeLists.txt says %s)"
                          % (part, value, version))
    if '#define SP_VERSION "%s"' % version not in header:
        errors.append('include/spawnpool.h: SP_VERSION is not "%s"' % version)
    top = re.search(r"^## (\d+\.\d+\.\d+)", read(src, "CHANGELOG.md"), re.M)
    if not top or top.group(1) != version:
        errors.append("CHANGELOG.md: the top entry is %s, the project is %s"
                      % (top.group(1) if top else "missing", version))
    files = ["README.md", "examples/README.md", "CMakeLists.txt", "tests/install/CMakeLists.txt",
             "tests/install/install_test.cmake", "include/spawnpool.h",
             "include/spawnpool_dense.h", "include/spawnpool.hpp"]
    files += ["docs/" + f for f in sorted(os.listdir(os.path.join(src, "docs"))) if f.endswith(".md")]
    finds = sonames = 0
    for rel in files:
        text = read(src, rel)
        for n, line in enumerate(text.split("\n"), 1):
            for v in re.findall(r"find_package\(spawnpool ([\d.]+)", line):
                finds += 1
                if ".".join(v.split(".")[:len(compat.split("."))]) != compat or \
                        len(v.split(".")) < len(compat.split(".")):
                    errors.append("%s:%d: find_package(spawnpool %s): the installed package "
                                  "accepts %s.x only" % (rel, n, v, compat))
            for v in re.findall(r"(?:libspawnpool(?:-debug)?|`)\.so\.([\d.]+\d)", line):
                sonames += 1
                if v != compat:
                    errors.append("%s:%d: libspawnpool.so.%s: the soname is libspawnpool.so.%s"
                                  % (rel, n, v, compat))
    for e in errors:
        print("FAILED " + e, file=sys.stderr)
    print("versions: %s; %d find_package lines and %d sonames checked" % (version, finds, sonames))
    return len(errors)


# --------------------------------------------------------------------------------------------
# Pictures
# --------------------------------------------------------------------------------------------

MEASURED = re.compile(r"(_ms|_us|_ns)$|_ms_|^screenshot")


def counters(text):
    kv = {}
    for line in text.split("\n"):
        m = re.match(r"^([a-z][a-z0-9_]*)=(.*)$", line.strip())
        if m and not MEASURED.search(m.group(1)):
            kv[m.group(1)] = m.group(2)
    return kv


def check_images(args):
    img = os.path.join(args.src, "docs", "img")
    failures = 0
    for name in sorted(os.listdir(img)):
        if not name.endswith(".png"):
            continue
        side = os.path.join(img, name[:-4] + ".txt")
        if not os.path.exists(side):
            print("FAILED docs/img/%s has no %s: run make docs-images" % (name, name[:-4] + ".txt"),
                  file=sys.stderr)
            failures += 1
            continue
        with open(side) as f:
            text = f.read()
        m = re.match(r"# (\S+): (.*)", text)
        if not m:
            print("FAILED docs/img/%s: no '# TOOL: COMMAND' line" % os.path.basename(side),
                  file=sys.stderr)
            failures += 1
            continue
        if m.group(1) != "tools/docs_images.sh":
            print("docs/img/%s: drawn by %s, not rerun here" % (name, m.group(1)))
            continue
        demo, *rest = m.group(2).split()
        exe = os.path.join(args.build, "examples", demo)
        if not os.path.exists(exe):
            print("docs/img/%s: %s is not built here, not checked" % (name, demo))
            continue
        out = run([exe] + rest + ["--headless"], args.build, None, "docs/img/%s: %s" % (name, demo))
        then, now = counters(text), counters(out)
        diff = ["%s=%s, now %s" % (k, then[k], now.get(k, "(missing)"))
                for k in then if now.get(k) != then[k]]
        diff += ["%s=%s, new" % (k, now[k]) for k in now if k not in then]
        if diff:
            print("FAILED docs/img/%s was drawn by a demo that printed other counters than it "
                  "does now (run make docs-images):\n    %s" % (name, "\n    ".join(diff)),
                  file=sys.stderr)
            failures += 1
        else:
            print("docs/img/%s: %d counters as drawn" % (name, len(then)))
    return failures


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("what", choices=["blocks", "versions", "images"])
    ap.add_argument("files", nargs="*")
    ap.add_argument("--src", required=True)
    ap.add_argument("--build")
    ap.add_argument("--work")
    ap.add_argument("--cc", default="cc")
    ap.add_argument("--cxx", default="c++")
    ap.add_argument("--lib")
    ap.add_argument("--debug-lib")
    args = ap.parse_intermixed_args()
    args.src = os.path.abspath(args.src)
    if args.build:
        args.build = os.path.abspath(args.build)
    if args.work:
        args.work = os.path.abspath(args.work)
    try:
        if args.what == "blocks":
            failures = check_blocks(args)
        elif args.what == "versions":
            failures = check_versions(args)
        else:
            failures = check_images(args)
    except Failure as e:
        print("FAILED " + str(e), file=sys.stderr)
        failures = 1
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
