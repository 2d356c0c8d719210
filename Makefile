# SPDX-License-Identifier: Zlib
# The README's commands. Each first runs tools/deps.sh, which looks for the tools and headers the
# goal needs and installs what is missing with apt-get when run as root (its output shown), or
# prints the command otherwise; SP_NO_INSTALL=1 never installs. Then CMake configures, builds, runs.
#   make demo       the fountain demo: pooled vs spawn-and-destroy         (build/demo)
#   make examples   every example and demo, into build/demo/examples/     (build/demo)
#   make test       every test: the cmocka suite (gcc, optimised; build/release) + valgrind, the
#                   suite and the fuzz corpus again with every pool in the fallback's ranges (no
#                   virtual memory; build/fallback), and again with clang, ASan+UBSan
#                   (build/asan) + fuzzer ~25 s, the thread tests (and a few cheap suites)
#                   under ThreadSanitizer (gcc, build/tsan), clang-tidy, cppcheck
#   make install    the libraries, headers, CMake package and pkg-config files into PREFIX
#   make bench      the benchmark suite (QUICK=1: about a minute); results in build/bench/results/
#   make bench-publish   copies the last run's results into bench/results/ (the tracked snapshot)
#   make bench-model     the thread-safe pool's depot contention model for 64 cores (~1 min)
#   make fuzz       the fuzzer for FUZZ_SECONDS
#   make docs-images   every picture in docs/img, from the demos' headless modes, and the
#                   benchmark charts from bench/results/latest.csv
#   make bench-report  bench/results/latest.md and the charts again from bench/results/latest.csv
#   make bench-docs the numbers the docs quote, from bench/results/latest.csv
#   make web        the demos page and the library in WebAssembly (emscripten), in build/web/
#   make test-web   the test suites under node (WebAssembly) and the page in headless Chromium;
#                   `make test` ends with it
# Each goal has its own build directory, so `make demo` then `make test` rebuilds nothing twice.

BUILD     ?= build
JOBS      ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE     ?= cmake
DEMO_ARGS ?=
PREFIX    ?= /usr/local
DEPS      ?= tools/deps.sh

.PHONY: all demo examples test install clean fuzz web test-web

# The suites `make test` runs again under ThreadSanitizer (build/tsan): the thread tests, and a
# few cheap suites of the calls they dispatch through. Built with SP_DEBUG=0, as users ship: the
# thread-safe fast paths exist only there (debug builds take the checked paths, which the other
# builds run threaded); test_threads_misuse links the debug variant, whose checks it tests.
TSAN_TESTS = test_threads test_threads_cache test_sizes test_threads_policies test_threads_same test_threads_reentry test_threads_lifecycle test_threads_misuse test_handles test_registry test_hooks test_cxx_pool_17
EMPTY :=
SPACE := $(EMPTY) $(EMPTY)

all: test

demo:
	@$(DEPS) demo
	$(CMAKE) -S . -B $(BUILD)/demo -DCMAKE_BUILD_TYPE=Release -DSP_BUILD_TESTS=OFF >/dev/null
	$(CMAKE) --build $(BUILD)/demo -j $(JOBS) --target fountain
	$(BUILD)/demo/examples/fountain $(DEMO_ARGS)

examples:
	@$(DEPS) examples
	$(CMAKE) -S . -B $(BUILD)/demo -DCMAKE_BUILD_TYPE=Release -DSP_BUILD_TESTS=OFF >/dev/null
	$(CMAKE) --build $(BUILD)/demo -j $(JOBS)
	@echo "examples built:"; find $(BUILD)/demo/examples -maxdepth 2 -type f -perm -u+x ! -name demo_check | sort | sed 's/^/  /'

test:
	@$(DEPS) test
	$(CMAKE) -S . -B $(BUILD)/release -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++ >/dev/null
	$(CMAKE) --build $(BUILD)/release -j $(JOBS)
	cd $(BUILD)/release && ctest --output-on-failure --no-tests=error -j $(JOBS)
	JOBS=$(JOBS) tools/valgrind_tests.sh $(BUILD)/release/tests
	$(CMAKE) -S . -B $(BUILD)/fallback -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSP_NO_VIRTUAL_MEMORY=ON -DSP_BUILD_EXAMPLES=OFF -DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++ >/dev/null
	$(CMAKE) --build $(BUILD)/fallback -j $(JOBS)
	cd $(BUILD)/fallback && ctest --output-on-failure --no-tests=error -j $(JOBS) -E '^(vendor_consumer|install_consumer|configure_without_test_deps)$$'
	$(CMAKE) -S . -B $(BUILD)/asan -DCMAKE_BUILD_TYPE=Debug -DSP_SANITIZE=ON -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_EXPORT_COMPILE_COMMANDS=ON >/dev/null
	$(CMAKE) --build $(BUILD)/asan -j $(JOBS)
	cd $(BUILD)/asan && ctest --output-on-failure --no-tests=error -j $(JOBS)
	$(CMAKE) -S . -B $(BUILD)/tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSP_DEBUG=0 -DSP_BUILD_EXAMPLES=OFF -DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++ \
	  -DCMAKE_C_FLAGS=-fsanitize=thread -DCMAKE_CXX_FLAGS=-fsanitize=thread -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread -DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=thread >/dev/null
	$(CMAKE) --build $(BUILD)/tsan -j $(JOBS) --target $(TSAN_TESTS)
	cd $(BUILD)/tsan && TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" ctest --output-on-failure --no-tests=error -j $(JOBS) -R '^($(subst $(SPACE),|,$(strip $(TSAN_TESTS))))$$'
	JOBS=$(JOBS) tools/static_analysis.sh $(BUILD)/asan
	@$(MAKE) --no-print-directory test-web

# The library alone (no tests, examples or C++), Release, with the debug variant beside it.
install:
	@$(DEPS) install
	$(CMAKE) -S . -B $(BUILD)/lib -DCMAKE_BUILD_TYPE=Release -DSP_BUILD_TESTS=OFF -DSP_BUILD_EXAMPLES=OFF >/dev/null
	$(CMAKE) --build $(BUILD)/lib -j $(JOBS)
	@if [ -e "$(PREFIX)" ] && [ ! -w "$(PREFIX)" ]; then \
	  echo "$(PREFIX) is not writable: run as root, or make install PREFIX=\$$HOME/.local"; exit 1; fi
	$(CMAKE) --install $(BUILD)/lib --prefix $(PREFIX)

# The model-based fuzzer (tests/fuzz) for FUZZ_SECONDS on one core in the sanitizer build; new
# inputs go to $(BUILD)/fuzz-corpus, divergences and crashes to $(BUILD)/fuzz-crash-*. It ends
# with "fuzz: N model-checked operations, 0 divergences (... ops/s)". `make test` runs it ~25 s.
# FUZZ_MAX_LEN caps an input's bytes (about 3-4 bytes an operation).
# FUZZ_MODEL="FZ_MODEL_GUARDS=1 ..." turns on the model of behaviour still being built (fuzz.h).
FUZZ_SECONDS ?= 300
FUZZ_MAX_LEN ?= 4096
FUZZ_MODEL ?=
fuzz:
	@$(DEPS) test
	$(CMAKE) -S . -B $(BUILD)/asan -DCMAKE_BUILD_TYPE=Debug -DSP_SANITIZE=ON -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_EXPORT_COMPILE_COMMANDS=ON "-DSP_FUZZ_MODEL=$(FUZZ_MODEL)" >/dev/null
	$(CMAKE) --build $(BUILD)/asan -j $(JOBS) --target fuzz_pool
	mkdir -p $(BUILD)/fuzz-corpus
	$(BUILD)/asan/tests/fuzz/fuzz_pool -max_total_time=$(FUZZ_SECONDS) -max_len=$(FUZZ_MAX_LEN) -timeout=10 \
	  -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix=$(BUILD)/fuzz- $(BUILD)/fuzz-corpus tests/fuzz/corpus

clean:
	rm -rf $(BUILD)

# make bench [QUICK=1]   the benchmark suite against the peers; writes $(BUILD)/bench/results/
# make bench-instr       instructions per operation under callgrind, added to the last run
# make bench-publish     copies the last run (CSV, report, plots) into bench/results/
# make bench-model       the depot contention model for 64 cores (docs/threads.md), from lock and
#                        magazine costs measured here; writes $(BUILD)/bench/results/model.md
# BENCH_NICE=0 keeps the run at normal priority (as root it raises it, and says so).
.PHONY: bench bench-instr bench-publish bench-build bench-model
QUICK ?=
BENCH_RESULTS = $(BUILD)/bench/results

bench-build:
	@$(DEPS) bench
	$(CMAKE) -S . -B $(BUILD)/bench -DSP_BUILD_BENCH=ON -DCMAKE_BUILD_TYPE=Release -DSP_BUILD_TESTS=OFF -DSP_BUILD_EXAMPLES=OFF -DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++ >/dev/null
	$(CMAKE) --build $(BUILD)/bench -j $(JOBS) --target spbench spinstr spreport spmodel

bench: bench-build
	bench/run.sh $(BUILD)/bench/bench $(BENCH_RESULTS) $(if $(filter 1 yes true,$(QUICK)),quick,full)

bench-instr: bench-build
	bench/run.sh $(BUILD)/bench/bench $(BENCH_RESULTS) $(if $(filter 1 yes true,$(QUICK)),quick,full) instr-only

bench-model: bench-build
	@mkdir -p $(BENCH_RESULTS)
	$(BUILD)/bench/bench/spmodel $(if $(filter 1 yes true,$(QUICK)),--quick) --out $(BENCH_RESULTS)/model.md
	@echo "model: $(BENCH_RESULTS)/model.md"

bench-publish:
	@[ -f $(BENCH_RESULTS)/latest.csv ] || { echo "no run in $(BENCH_RESULTS): make bench first"; exit 1; }
	@if grep -q 'quick mode' $(BENCH_RESULTS)/latest.md; then \
	  echo "the last run is a QUICK=1 run: publish a full one (make bench)"; exit 1; fi
	cp $(BENCH_RESULTS)/latest.csv $(BENCH_RESULTS)/latest.md $(BENCH_RESULTS)/*.png $(BENCH_RESULTS)/*.svg bench/results/
	cp $$(ls $(BENCH_RESULTS)/2*.csv | tail -1) bench/results/
	@$(MAKE) --no-print-directory bench-docs
	@echo "bench/results/ and the docs' numbers updated: review with git diff, then commit"

# make bench-report   latest.md and every plot in bench/results/ again from bench/results/latest.csv
#                     (no benchmark run: after a change to spreport, or to redraw the charts)
# make bench-docs     the numbers the docs quote (the spreport regions of README.md and docs/*.md)
#                     from bench/results/latest.csv; `make test` checks that they are current
# Both build only spreport (no peers needed), in $(BUILD)/report.
.PHONY: bench-report bench-docs report-build
REPORT = $(BUILD)/report/bench/spreport
DOC_FILES = README.md $(wildcard docs/*.md)
report-build:
	$(CMAKE) -S . -B $(BUILD)/report -DCMAKE_BUILD_TYPE=Release -DSP_BUILD_TESTS=OFF -DSP_BUILD_EXAMPLES=OFF \
	  -DSP_BUILD_SHARED=OFF -DSP_BUILD_DEBUG_LIBS=OFF >/dev/null
	$(CMAKE) --build $(BUILD)/report -j $(JOBS) --target spreport

bench-report: report-build
	@$(DEPS) report
	@mkdir -p $(BUILD)/report/data
	sed -n '/^Machine:/,/^Run:/p' bench/results/latest.md > $(BUILD)/report/meta.md
	$(REPORT) bench/results/latest.csv bench/results/latest.md $(BUILD)/report/data $(BUILD)/report/meta.md
	gnuplot $(BUILD)/report/data/plots.gp
	@echo "bench/results/: latest.md and the plots redrawn from latest.csv"

bench-docs: report-build
	$(REPORT) --docs bench/results/latest.csv bench/results/latest.md $(DOC_FILES)

# make docs-images   regenerates every picture in docs/img: the demos' headless modes
# (tools/docs_images.sh lists the commands; in its own build directory), the web page in
# headless Chromium (make web), and the benchmark charts in bench/results/ from the committed
# latest.csv (make bench-report).
.PHONY: docs-images
docs-images:
	@$(DEPS) examples
	$(CMAKE) -S . -B $(BUILD)/docs-images -DCMAKE_BUILD_TYPE=Release -DSP_BUILD_TESTS=OFF >/dev/null
	$(CMAKE) --build $(BUILD)/docs-images -j $(JOBS) --target fountain particles turret arena
	tools/docs_images.sh $(BUILD)/docs-images/examples docs/img
	@$(MAKE) --no-print-directory web
	node web/browser_test.js $(BUILD)/web --frames 300 --screenshot docs/img/web.png
	@printf '# web/browser_test.js: --frames 300 (the demos page in headless Chromium)\n' > docs/img/web.txt
	@$(MAKE) --no-print-directory bench-report

# make web        the page (index.html, demos.js, spawnpool_web.js with the wasm embedded) in
#                 build/web/: open it from disk, or serve it (cd build/web && python3 -m http.server)
# make test-web   every test suite under node (WebAssembly, a cmocka stand-in), then the page in
#                 headless Chromium (web/browser_test.js), which writes build/web/screenshot.png.
# Debian's emscripten ships its system libraries prebuilt (a frozen cache in
# /usr/share/emscripten/cache), so nothing is built on first use. Its link step's optimizer needs
# NODE_PATH=/usr/share/nodejs and node needs --no-experimental-fetch: web/CMakeLists.txt sets both.
WEB_CONFIGURE = emcmake $(CMAKE) -S . -B $(BUILD)/web -DCMAKE_BUILD_TYPE=Release -DSP_BUILD_TESTS=OFF \
  -DSP_BUILD_EXAMPLES=OFF -DSP_BUILD_SHARED=OFF -DSP_INSTALL=OFF >/dev/null
web:
	@$(DEPS) web
	$(WEB_CONFIGURE)
	$(CMAKE) --build $(BUILD)/web -j $(JOBS) --target web_page
	@echo "web: open $(BUILD)/web/index.html, or: cd $(BUILD)/web && python3 -m http.server 8000   (then http://localhost:8000/)"

test-web:
	@$(DEPS) web
	$(WEB_CONFIGURE)
	$(CMAKE) --build $(BUILD)/web -j $(JOBS)
	cd $(BUILD)/web && ctest --output-on-failure --no-tests=error -j $(JOBS)
	node web/browser_test.js $(BUILD)/web --frames 300 --screenshot $(BUILD)/web/screenshot.png
