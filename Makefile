# SPDX-License-Identifier: Zlib
# The README's two commands. Each installs the Debian packages it needs (apt-get when root,
# otherwise it prints the command), configures with CMake, builds and runs.
#   make demo   the fountain demo: pooled vs spawn-and-destroy
#   make test   every test: the cmocka suite (gcc, optimised) and again under ASan+UBSan (clang)
#               (+ the suite under valgrind, the fuzzer for ~25 s, clang-tidy and cppcheck)

BUILD     ?= build
JOBS      ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE     ?= cmake
DEMO_ARGS ?=

TEST_PKGS = cmake gcc g++ clang make pkg-config libcmocka-dev libclang-rt-14-dev valgrind libsdl2-dev zlib1g-dev \
            clang-tidy cppcheck
DEMO_PKGS = cmake gcc g++ make pkg-config libsdl2-dev zlib1g-dev
BENCH_PKGS = cmake gcc g++ make pkg-config libboost-dev libglib2.0-dev libmimalloc-dev \
             libjemalloc-dev libgoogle-perftools-dev gnuplot-nox valgrind

# Installs the packages named in $(1) that dpkg does not list as installed.
define ensure_pkgs
	@missing=""; for p in $(1); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing:$$missing"; \
	    if [ ! -f $(BUILD)/.apt-updated ]; then apt-get update -qq && mkdir -p $(BUILD) && touch $(BUILD)/.apt-updated; fi; \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null || exit 1; \
	  else \
	    echo "missing packages; run: sudo apt-get install -y$$missing"; exit 1; \
	  fi; \
	fi
endef

.PHONY: all demo test deps-test deps-demo clean fuzz

all: test

deps-test:
	$(call ensure_pkgs,$(TEST_PKGS))

deps-demo:
	$(call ensure_pkgs,$(DEMO_PKGS))

demo: deps-demo
	$(CMAKE) -S . -B $(BUILD)/release -DCMAKE_BUILD_TYPE=Release -DSP_BUILD_TESTS=OFF >/dev/null
	$(CMAKE) --build $(BUILD)/release -j $(JOBS) --target fountain
	./$(BUILD)/release/examples/fountain $(DEMO_ARGS)

test: deps-test
	$(CMAKE) -S . -B $(BUILD)/release -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++ >/dev/null
	$(CMAKE) --build $(BUILD)/release -j $(JOBS)
	cd $(BUILD)/release && ctest --output-on-failure -j $(JOBS)
	JOBS=$(JOBS) tools/valgrind_tests.sh $(BUILD)/release/tests
	$(CMAKE) -S . -B $(BUILD)/asan -DCMAKE_BUILD_TYPE=Debug -DSP_SANITIZE=ON -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_EXPORT_COMPILE_COMMANDS=ON >/dev/null
	$(CMAKE) --build $(BUILD)/asan -j $(JOBS)
	cd $(BUILD)/asan && ctest --output-on-failure -j $(JOBS)
	JOBS=$(JOBS) tools/static_analysis.sh $(BUILD)/asan

# The model-based fuzzer (tests/fuzz) for FUZZ_SECONDS on one core in the sanitizer build; new
# inputs go to $(BUILD)/fuzz-corpus, divergences and crashes to $(BUILD)/fuzz-crash-*. It ends
# with "fuzz: N model-checked operations, 0 divergences (... ops/s)". `make test` runs it ~25 s.
# FUZZ_MAX_LEN caps an input's bytes (about 3-4 bytes an operation).
# FUZZ_MODEL="FZ_MODEL_GUARDS=1 ..." turns on the model of behaviour still being built (fuzz.h).
FUZZ_SECONDS ?= 300
FUZZ_MAX_LEN ?= 4096
FUZZ_MODEL ?=
fuzz: deps-test
	$(CMAKE) -S . -B $(BUILD)/asan -DCMAKE_BUILD_TYPE=Debug -DSP_SANITIZE=ON -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_EXPORT_COMPILE_COMMANDS=ON "-DSP_FUZZ_MODEL=$(FUZZ_MODEL)" >/dev/null
	$(CMAKE) --build $(BUILD)/asan -j $(JOBS) --target fuzz_pool
	mkdir -p $(BUILD)/fuzz-corpus
	./$(BUILD)/asan/tests/fuzz/fuzz_pool -max_total_time=$(FUZZ_SECONDS) -max_len=$(FUZZ_MAX_LEN) -timeout=10 \
	  -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix=$(BUILD)/fuzz- $(BUILD)/fuzz-corpus tests/fuzz/corpus

clean:
	rm -rf $(BUILD)

# make bench [QUICK=1]   the benchmark suite against the peers; writes bench/results/
# make bench-instr       instructions per operation under callgrind, appended to latest.csv
.PHONY: bench bench-instr deps-bench bench-build
QUICK ?=
deps-bench:
	$(call ensure_pkgs,$(BENCH_PKGS))

bench-build: deps-bench
	$(CMAKE) -S . -B $(BUILD)/bench -DSP_BUILD_BENCH=ON -DCMAKE_BUILD_TYPE=Release -DSP_BUILD_TESTS=OFF -DSP_BUILD_EXAMPLES=OFF -DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++ >/dev/null
	$(CMAKE) --build $(BUILD)/bench -j $(JOBS) --target spbench spinstr spreport

bench: bench-build
	bench/run.sh $(BUILD)/bench/bench $(if $(filter 1 yes true,$(QUICK)),quick,full)

bench-instr: bench-build
	bench/run.sh $(BUILD)/bench/bench $(if $(filter 1 yes true,$(QUICK)),quick,full) instr-only
