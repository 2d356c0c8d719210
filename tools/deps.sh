#!/bin/sh
# SPDX-License-Identifier: Zlib
# The Makefile's dependency step: tools/deps.sh GOAL... (demo, examples, test, bench, install,
# report, web).
# Looks for what each goal needs itself (command -v for tools, pkg-config or a compile of the
# header for libraries, a test link for clang's sanitizer runtime), not for package names, so it
# is right on any machine however the things got there. What is missing:
#   - as root on Debian (apt-get present), unless SP_NO_INSTALL=1: installed with apt-get, whose
#     output is shown;
#   - otherwise: listed with the command that would install it; a missing requirement fails,
#     a missing nice-to-have (SDL2 for the demo's window, gnuplot for plots...) is only reported.
set -eu
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || { echo "usage: tools/deps.sh demo|examples|test|bench|install|report|web..." >&2; exit 2; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# have KIND NAME: is it there?
have() {
    case $1 in
    cmd) command -v "$2" >/dev/null 2>&1 ;;
    pc) command -v pkg-config >/dev/null 2>&1 && pkg-config --exists "$2" ;;
    hdr) printf '#include <%s>\n' "$2" | ${CC:-cc} -E -x c - >/dev/null 2>&1 ;;
    hdrxx) printf '#include <%s>\n' "$2" | ${CXX:-c++} -E -x c++ - >/dev/null 2>&1 ;;
    lib) ldconfig -p 2>/dev/null | grep -F "	$2 (" >/dev/null ;;
    # clang's sanitizer and libFuzzer runtimes: link a program with them.
    clangrt)
        command -v clang >/dev/null 2>&1 &&
            printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return d && n; }\n' \
                >"$tmp/f.c" &&
            clang -fsanitize=address,undefined,fuzzer "$tmp/f.c" -o "$tmp/f" >/dev/null 2>&1 ;;
    # lldb's Python module (the lldb command runs without it, but runs no scripts), where
    # tests/debugger/check_printers.py looks for it too (see lldb_python_path).
    lldbpy)
        command -v lldb >/dev/null 2>&1 &&
            PYTHONPATH=$(lldb_python_path) lldb -b -o "script import lldb" >/dev/null 2>&1 ;;
    # gcc's ThreadSanitizer runtime (libtsan, pulled in by gcc on amd64): link a program with it.
    tsan)
        printf 'int main(void) { return 0; }\n' >"$tmp/t.c" &&
            gcc -fsanitize=thread "$tmp/t.c" -o "$tmp/t" >/dev/null 2>&1 ;;
    esac
}

# Debian's lldb 14 looks for its Python module in a directory that does not exist
# (/usr/lib/local/lib/python3.X/dist-packages): the directories that hold it, for PYTHONPATH.
lldb_python_path() {
    for d in /usr/lib/llvm-*/lib/python3*/dist-packages; do
        [ -f "$d/lldb/__init__.py" ] && printf '%s:' "$d"
    done
    printf '%s\n' "${PYTHONPATH:-}"
}

# The clang runtime's package follows the installed clang's major version (libclang-rt-14-dev
# for clang 14, libclang-rt-19-dev for clang 19).
clangrt_pkg() {
    v=$(clang --version 2>/dev/null | sed -n 's/.*clang version \([0-9][0-9]*\).*/\1/p' | head -1)
    if [ -n "$v" ]; then echo "libclang-rt-$v-dev"; else echo "libclang-rt-dev"; fi
}

# One requirement a line: need|want KIND NAME PACKAGE WHAT-FOR
reqs() {
    echo "need cmd cmake cmake the build"
    echo "need cmd make make the build"
    echo "need cmd gcc gcc the build"
    echo "need cmd pkg-config pkg-config finding libraries"
    for goal in "$@"; do
        case $goal in
        install) ;;
        demo | examples | test)
            echo "need cmd g++ g++ the C++ parts (tests, C++ example)"
            if [ "$goal" = test ]; then
                echo "need pc sdl2 libsdl2-dev the demos' headless tests"
                echo "need pc cmocka libcmocka-dev the test suite"
                echo "need cmd clang clang the sanitizer build"
                echo "need cmd clang++ clang the sanitizer build"
                echo "need tsan gcc-tsan libtsan2 the ThreadSanitizer build of the thread tests"
                echo "need cmd valgrind valgrind the valgrind run"
                echo "need hdr valgrind/memcheck.h valgrind the library's valgrind annotations"
                echo "need cmd clang-tidy clang-tidy static analysis"
                echo "need cmd cppcheck cppcheck static analysis"
                echo "need cmd python3 python3 the documentation checks (tools/check_docs.py)"
                echo "need cmd git git the documentation checks (the README's FetchContent)"
                echo "need cmd gdb gdb the debugger printers' test (tests/debugger)"
                echo "need cmd lldb lldb the debugger printers' test under lldb (tests/debugger)"
                echo "need lldbpy lldb python3-lldb the debugger printers' test under lldb (its Python)"
            else
                echo "want pc sdl2 libsdl2-dev windows and screenshots (without it: the terminal fountain only)"
            fi
            if [ "$goal" = test ]; then
                echo "need hdr stb/stb_image_write.h libstb-dev the demos' screenshots and their checks"
            else
                echo "want hdr stb/stb_image_write.h libstb-dev windows and screenshots (with SDL2)"
            fi
            ;;
        bench)
            echo "need cmd g++ g++ the boost peer"
            echo "need hdrxx boost/pool/object_pool.hpp libboost-dev the boost::pool peer"
            echo "need pc glib-2.0 libglib2.0-dev the GSlice peer"
            echo "want lib libmimalloc.so.2 libmimalloc-dev the mimalloc peer"
            echo "want lib libtcmalloc_minimal.so.4 libgoogle-perftools-dev the tcmalloc peer"
            echo "want lib libjemalloc.so.2 libjemalloc-dev the jemalloc peer"
            echo "want cmd valgrind valgrind instruction counts"
            echo "want hdr valgrind/callgrind.h valgrind instruction counts"
            echo "want cmd gnuplot gnuplot-nox the plots"
            ;;
        report)
            echo "need cmd gnuplot gnuplot-nox the benchmark charts"
            ;;
        web)
            echo "need cmd emcc emscripten the WebAssembly build"
            echo "need cmd emcmake emscripten the WebAssembly build"
            echo "need cmd node nodejs the test suites under WebAssembly, the browser test"
            echo "need cmd python3 python3 serving the page to the browser test"
            echo "need cmd chromium chromium the browser test (headless)"
            ;;
        *) echo "tools/deps.sh: unknown goal $goal" >&2; exit 2 ;;
        esac
    done
}

can_install() {
    [ "${SP_NO_INSTALL:-0}" != 1 ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1
}

updated=0
apt_install() {
    echo "deps: installing with apt-get: $*"
    if [ $updated = 0 ]; then apt-get update; updated=1; fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@"
}

# check PASS: lists what is missing, installs it when allowed; echoes nothing when all is there.
check() {
    need_missing=""; want_missing=""; pkgs=""
    reqs "$@" > "$tmp/reqs"
    while read -r level kind name pkg what; do
        have "$kind" "$name" && continue
        case " $pkgs " in *" $pkg "*) ;; *) pkgs="$pkgs $pkg" ;; esac
        if [ "$level" = need ]; then
            need_missing="$need_missing
  $name ($pkg): $what"
        else
            want_missing="$want_missing
  $name ($pkg): $what"
        fi
    done < "$tmp/reqs"
    # clang's runtime, once clang itself is there.
    case " $* " in *" test "*)
        if command -v clang >/dev/null 2>&1 && ! have clangrt; then
            p=$(clangrt_pkg); pkgs="$pkgs $p"
            need_missing="$need_missing
  clang's sanitizer and libFuzzer runtime ($p): the sanitizer build"
        fi ;;
    esac
}

check "$@"
if [ -n "$pkgs" ] && can_install; then
    # shellcheck disable=SC2086
    apt_install $pkgs || exit 1
    check "$@" # again: clang's runtime can only be asked for once clang is there
    if [ -n "$pkgs" ] && can_install; then
        # shellcheck disable=SC2086
        apt_install $pkgs || exit 1
        check "$@"
    fi
fi
if [ -n "$want_missing" ]; then
    echo "deps: optional, not found (the build goes on without):$want_missing"
fi
if [ -n "$need_missing" ]; then
    echo "deps: missing:$need_missing"
    if [ "${SP_NO_INSTALL:-0}" = 1 ]; then
        echo "deps: SP_NO_INSTALL=1: not installing. On Debian: sudo apt-get install$pkgs"
    elif command -v apt-get >/dev/null 2>&1; then
        echo "deps: run: sudo apt-get install$pkgs   (then make again)"
    else
        echo "deps: install these with your system's package manager, then make again"
    fi
    exit 1
fi
if [ -n "$pkgs" ] && [ -n "$want_missing" ] && ! can_install; then
    echo "deps: to get them too: sudo apt-get install$pkgs"
fi
exit 0
