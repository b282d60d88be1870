# The two front-door commands. Both install missing Debian packages first.
#   make bench      build everything (release) and run the side-by-side benchmark (quick)
#   make bench FULL=1   the full grids
#   make test       build and run every test: release (GCC), ASan+UBSan (clang-16), and
#                   the threaded tests under TSan (clang-16)
.PHONY: bench test deps-test deps-bench build-release build-sanitize build-tsan build-bench test-release test-sanitize test-tsan clean

JOBS ?= $(shell nproc)
BENCH_ARGS ?=
ifeq ($(FULL),1)
  BENCH_ARGS += --full
endif

deps-test:
	@scripts/install-deps.sh test

deps-bench:
	@scripts/install-deps.sh bench

build-release: deps-test
	cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release
	cmake --build build/release -j $(JOBS)

build-sanitize: deps-test
	cmake -S . -B build/sanitize -G Ninja -DCMAKE_BUILD_TYPE=Debug \
	  -DCMAKE_CXX_COMPILER=clang++-16 -DCMAKE_C_COMPILER=clang-16 \
	  -DRINGIO_SANITIZE=address,undefined
	cmake --build build/sanitize -j $(JOBS)

test-release: build-release
	ctest --test-dir build/release --output-on-failure -j 2

test-sanitize: build-sanitize
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --test-dir build/sanitize --output-on-failure -j 2

# ThreadSanitizer: the tests whose code runs on several threads.
TSAN_TESTS = CrossThread|Channel|ChannelAcrossLoops|MpscRing|Cancellation.StopFromAnotherThread
build-tsan: deps-test
	cmake -S . -B build/tsan -G Ninja -DCMAKE_BUILD_TYPE=Debug \
	  -DCMAKE_CXX_COMPILER=clang++-16 -DCMAKE_C_COMPILER=clang-16 \
	  -DRINGIO_SANITIZE=thread -DRINGIO_BUILD_APPS=OFF
	cmake --build build/tsan -j $(JOBS) --target unit_tests integration_tests

test-tsan: build-tsan
	TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
	  ctest --test-dir build/tsan --output-on-failure -j 2 -R '$(TSAN_TESTS)'

test: test-release test-sanitize test-tsan

build-bench: deps-bench
	cmake -S . -B build/bench -G Ninja -DCMAKE_BUILD_TYPE=Release -DRINGIO_BUILD_TESTS=OFF -DRINGIO_BUILD_PEERS=ON
	cmake --build build/bench -j $(JOBS)
	cd bench/peers/tokio && cargo build --release --locked -j $(JOBS)

bench: build-bench
	bench/run $(BENCH_ARGS)

clean:
	rm -rf build
