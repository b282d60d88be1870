# SPDX-License-Identifier: Apache-2.0
# The two front-door commands. Both install missing Debian packages first.
#   make bench      build everything (release) and run the side-by-side benchmark (quick)
#   make bench FULL=1   the full grids
#   make test       build and run every test: release (GCC), a Debug build (GCC -O0) of the
#                   coroutine suites, ASan+UBSan (clang-16), the
#                   threaded tests under TSan (clang-16), and each libFuzzer target for
#                   FUZZ_SECONDS (8) on its corpus; and the API reference (make docs)
#                   must build without a warning
#   make install PREFIX=/usr/local   build the libraries alone (no apps, examples or
#                   tests) and install them with their CMake and pkg-config files
.PHONY: install bench test docs format format-check tidy soak soak-sim deps-test deps-bench build-release build-debug build-sanitize build-tsan build-fuzz build-bench test-release test-debug test-sanitize test-tsan test-fuzz test-bench-runner clean

JOBS ?= $(shell nproc)
# STDEXEC_DIR=/path/to/stdexec builds the stdexec interop tests too (docs/senders.md).
STDEXEC_ARGS = $(if $(STDEXEC_DIR),-DRINGIO_STDEXEC_DIR=$(STDEXEC_DIR))
BENCH_ARGS ?=
ifeq ($(FULL),1)
  BENCH_ARGS += --full
endif

deps-test:
	@scripts/install-deps.sh test

deps-bench:
	@scripts/install-deps.sh bench

build-release: deps-test
	cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release $(STDEXEC_ARGS)
	cmake --build build/release -j $(JOBS)

# GCC at -O0, as a consumer's Debug build: symmetric transfer is an ordinary call there,
# not a tail call, so these suites check that awaits completing at once do not grow the
# stack (tests/unit/flat_stack_test.cpp), besides the task, fiber and sender tests. The
# core I/O tests run at -O0 under clang (the ASan+UBSan build) and with GCC at -O3
# (release). Each binary runs whole (a hang is cut at 10 minutes).
DEBUG_TESTS = unit_tests fiber_tests sender_tests
build-debug: deps-test
	cmake -S . -B build/debug -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_COMPILER=g++ -DCMAKE_C_COMPILER=gcc \
	  -DRINGIO_BUILD_APPS=OFF -DRINGIO_BUILD_EXAMPLES=OFF $(STDEXEC_ARGS)
	cmake --build build/debug -j $(JOBS) --target $(DEBUG_TESTS)

test-debug: build-debug
	@for t in $(DEBUG_TESTS); do \
	  echo "test-debug: $$t (GCC -O0)"; timeout 600 build/debug/tests/$$t --gtest_brief=1 || exit 1; \
	done

# The sanitizer builds keep line tables only (reports still name file and line): the
# full debug information of the test files made them 5-30% slower to compile.
build-sanitize: deps-test
	cmake -S . -B build/sanitize -G Ninja -DCMAKE_BUILD_TYPE=Debug \
	  -DCMAKE_CXX_COMPILER=clang++-16 -DCMAKE_C_COMPILER=clang-16 \
	  -DCMAKE_CXX_FLAGS_DEBUG=-gline-tables-only -DCMAKE_C_FLAGS_DEBUG=-gline-tables-only \
	  -DRINGIO_SANITIZE=address,undefined $(STDEXEC_ARGS)
	cmake --build build/sanitize -j $(JOBS)

# Six at a time on two cores: most release tests wait on sockets, timers and child
# processes (the tests' times add up to about four times the suite's wall time at -j4),
# and the whole suite passes at -j6 with the machine's load average above 20. On a
# clean 2-core machine: 386 s at -j4, 318 s at -j6 (docs/testing.md).
test-release: build-release
	ctest --test-dir build/release --output-on-failure -j 6

# Four at a time: 694 s at -j2, 489 s at -j4 on a clean 2-core machine.
test-sanitize: build-sanitize
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --test-dir build/sanitize --output-on-failure -j 4

# ThreadSanitizer: the tests whose code runs on several threads. Fibers run on one
# thread; their stack switches are told to TSan (__tsan_switch_to_fiber), and the one
# fiber test with a second thread (a stop from it) runs here, and the hooks' getaddrinfo
# on the blocking pool (FiberHooksLookup, linked and preloaded); from the attack suites,
# one static-file handler on two loops and the hooks' ring waits stopped or closed from
# other threads, and the busy-poll suite's hand-offs between loops (events, channels).
TSAN_TESTS = CrossThread|StopContinue|Teardown|AdversarialCrossThread|SenderCrossThread|StdexecInterop|Channel|ChannelAcrossLoops|MpscRing|Cancellation.StopFromAnotherThread|Chaos|Log\.|ServeProgram|Fiber.StopFromAnotherThread|Sync\.EventSetFromAnotherThread|SyncRandom\.Channel|Client\.Resolve|MinWait\.CrossThread|SpawnBlocking|FiberHooksLookup|StaticFileCacheAttack\.OneHandlerOnTwoLoops|FiberHooksRingAttack\.(StopRacing|HookedServerOnALoopOfAnotherThread|PlainThreadCloses)|OwnTokenStops\.TwoThreadsStopWhileDataArrives|SmallRingPool\.MultishotReceiversKeepEveryByteInOrder|RingResizeCrossThread|BusyPollAttack\.EventPingPong|RuntimeMetrics
build-tsan: deps-test
	cmake -S . -B build/tsan -G Ninja -DCMAKE_BUILD_TYPE=Debug \
	  -DCMAKE_CXX_COMPILER=clang++-16 -DCMAKE_C_COMPILER=clang-16 \
	  -DCMAKE_CXX_FLAGS_DEBUG=-gline-tables-only -DCMAKE_C_FLAGS_DEBUG=-gline-tables-only \
	  -DRINGIO_SANITIZE=thread -DRINGIO_BUILD_APPS=OFF $(STDEXEC_ARGS)
	cmake --build build/tsan -j $(JOBS) --target unit_tests integration_tests chaos_tests fiber_tests sender_tests stdexec_interop_tests http_client_tests send_wait_tests adversarial_tests beyond_sockets_tests \
	  fiber_hooks_tests fiber_hooks_preload_tests ringio_fiber_hooks_preload \
	  static_file_cache_attack_tests fiber_hooks_ring_attack_tests idle_memory_attack_tests ring_resize_attack_tests busy_poll_attack_tests metrics_tests

test-tsan: build-tsan
	TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
	  ctest --test-dir build/tsan --output-on-failure -j 2 -R '$(TSAN_TESTS)'

# libFuzzer targets (fuzz/, ASan+UBSan, clang-16), each replaying its whole corpus and
# then fuzzing for FUZZ_SECONDS; a crash fails the run and joins the corpus as a
# regression case (scripts/run-fuzz.sh, docs/testing.md).
FUZZ_TARGETS = http_request_fuzz http_path_fuzz http_chunked_fuzz http_response_fuzz websocket_frame_fuzz \
  websocket_deflate_fuzz
FUZZ_SECONDS ?= 8
build-fuzz: deps-test
	cmake -S . -B build/fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DCMAKE_CXX_COMPILER=clang++-16 -DCMAKE_C_COMPILER=clang-16 \
	  -DRINGIO_BUILD_FUZZ=ON -DRINGIO_BUILD_TESTS=OFF -DRINGIO_BUILD_APPS=OFF
	cmake --build build/fuzz -j $(JOBS) --target $(FUZZ_TARGETS)

test-fuzz: build-fuzz
	scripts/run-fuzz.sh $(FUZZ_SECONDS) $(FUZZ_TARGETS)

# The API reference from the public headers (Doxygen): build/docs/html/index.html.
# Any warning fails it, an undocumented public function included.
docs: deps-test
	@mkdir -p build/docs
	RINGIO_DOCS_OUT=build/docs doxygen docs/reference/Doxyfile

# The benchmark runner's own tests (plans, parsers, reports): Python only, seconds.
test-bench-runner: deps-test
	cd bench && python3 -m unittest discover -s runner/tests -t . -q

# House style: clang-format (.clang-format) over every tracked C++ file; `make format`
# applies it, the check (part of `make test`) fails on any difference. clang-tidy
# (.clang-tidy: a bugprone/performance subset) over the library's sources, with the
# sanitizer build's compile commands (clang's flags).
FORMAT_FILES = $(shell git ls-files '*.cpp' '*.hpp' '*.h' 2>/dev/null || find apps bench examples fuzz include src tests -name '*.cpp' -o -name '*.hpp' -o -name '*.h' | grep -v '/target/\|/node_modules/')
format: deps-test
	clang-format-16 -i $(FORMAT_FILES)

format-check: deps-test
	@clang-format-16 --dry-run --Werror $(FORMAT_FILES) && echo "format-check: $(words $(FORMAT_FILES)) files in house style"

tidy: build-sanitize
	find src -name '*.cpp' | sort | xargs clang-tidy-16 -p build/sanitize --quiet

test: format-check docs test-bench-runner test-release test-debug test-sanitize test-tsan test-fuzz

build-bench: deps-bench
	cmake -S . -B build/bench -G Ninja -DCMAKE_BUILD_TYPE=Release -DRINGIO_BUILD_TESTS=OFF -DRINGIO_BUILD_PEERS=ON
	cmake --build build/bench -j $(JOBS)
	cd bench/peers/tokio && cargo build --release --locked -j $(JOBS)

bench: build-bench
	bench/run $(BENCH_ARGS)

clean:
	rm -rf build

# The simulation tests for a long time (docs/simulation.md): SOAK_MINUTES shared by the
# sim binaries, each running fresh seeds from SOAK_SEED (default: the time) until its
# share is spent; a failure prints its seed (replay with RINGIO_SIM_SEED).
SIM_SOAK_BINARIES = sim_tests sim_http_tests sim_example_tests sim_tls_tests
soak-sim: deps-test
	cmake -S . -B build/chaos -G Ninja -DCMAKE_BUILD_TYPE=Release -DRINGIO_BUILD_APPS=OFF
	cmake --build build/chaos -j $(JOBS) --target $(SIM_SOAK_BINARIES)
	@first=$${SOAK_SEED:-$$(date +%s)}; ok=1; \
	per_test=$$(( $(SOAK_MINUTES) * 60 / 14 + 1 )); \
	for b in $(SIM_SOAK_BINARIES); do \
	  RINGIO_SIM_FIRST_SEED=$$first RINGIO_SIM_SECONDS=$$per_test build/chaos/tests/$$b --gtest_brief=1 || ok=0; \
	done; \
	echo "soak-sim: seeds from $$first, about $$per_test s per simulation test"; \
	[ $$ok -eq 1 ] && echo "soak-sim: no failure" || { echo "soak-sim: FAILED (the seed is in the output above)"; exit 1; }

PREFIX ?= /usr/local
install:
	cmake -S . -B build/install -G Ninja -DCMAKE_BUILD_TYPE=Release -DRINGIO_LIBRARIES_ONLY=ON
	cmake --build build/install -j $(JOBS)
	cmake --install build/install --prefix $(PREFIX)

# The chaos run for a long time (docs/testing.md): SOAK_MINUTES (default 30) over a moving
# range of seeds, SOAK_BATCH seeds per run of the binary; prints the range covered and the
# seed of every failure. SOAK_SEED chooses the first seed. Then each fuzz target for
# SOAK_FUZZ_SECONDS (default 300). Fails if any seed or fuzz target failed.
SOAK_MINUTES ?= 30
SOAK_BATCH ?= 50
SOAK_FUZZ_SECONDS ?= 300
soak: deps-test build-fuzz
	cmake -S . -B build/chaos -G Ninja -DCMAKE_BUILD_TYPE=Release -DRINGIO_BUILD_APPS=OFF
	cmake --build build/chaos -j $(JOBS) --target chaos_tests
	@end=$$(( $$(date +%s) + $(SOAK_MINUTES) * 60 )); first=$${SOAK_SEED:-$$(date +%s)}; seed=$$first; \
	failed=""; log=build/chaos/soak.log; : > $$log; \
	while [ $$(date +%s) -lt $$end ]; do \
	  if ! RINGIO_PERTURB=$$seed RINGIO_CHAOS_SEED=$$seed RINGIO_CHAOS_SEEDS=$(SOAK_BATCH) RINGIO_CHAOS_SECONDS=100000 \
	       build/chaos/tests/stress/chaos_tests --gtest_filter='ChaosRun.*' > build/chaos/soak-batch.log 2>&1; then \
	    cat build/chaos/soak-batch.log >> $$log; \
	    grep -E '^chaos failure|^chaos: HANG' build/chaos/soak-batch.log; \
	    failed="$$failed $$(grep -oE '^chaos failure: backend [a-z-]+, seed [0-9]+|HANG: chaos run, backend [a-z-]+, seed [0-9]+' build/chaos/soak-batch.log | sed -E 's/.*backend ([a-z-]+),? seed ([0-9]+)/\1:\2/' | tr '\n' ' ')"; \
	    if ! grep -qE '^chaos failure|HANG' build/chaos/soak-batch.log; then failed="$$failed batch-$$seed(crash)"; tail -20 build/chaos/soak-batch.log; fi; \
	  fi; \
	  grep -E '^chaos (uring|epoll|uring-poll): seeds' build/chaos/soak-batch.log | cut -c1-120; \
	  seed=$$(( seed + $(SOAK_BATCH) )); \
	done; \
	echo "soak: seeds $$first..$$(( seed - 1 )) on uring, epoll and uring-poll ($(SOAK_MINUTES) min), each batch perturbed (RINGIO_PERTURB = its first seed); full log: $$log"; \
	fuzz_ok=1; scripts/run-fuzz.sh $(SOAK_FUZZ_SECONDS) $(FUZZ_TARGETS) || fuzz_ok=0; \
	if [ -n "$$failed" ]; then \
	  echo "soak: FAILED (backend:seed):$$failed"; \
	  echo "reproduce one: RINGIO_PERTURB=<its batch's first seed> RINGIO_CHAOS_SEED=<seed> RINGIO_CHAOS_SEEDS=1 RINGIO_CHAOS_TRACE=1 build/chaos/tests/stress/chaos_tests --gtest_filter='ChaosRun.*'"; \
	fi; \
	if [ $$fuzz_ok -eq 0 ]; then echo "soak: FAILED: a fuzz target (above)"; fi; \
	if [ -n "$$failed" ] || [ $$fuzz_ok -eq 0 ]; then exit 1; fi; \
	echo "soak: no failure"
