#!/usr/bin/env bash
# Builds qmlx and runs every test: the full suite on the release build, then the unit tests
# again under AddressSanitizer + UndefinedBehaviorSanitizer, then the libFuzzer targets
# (tests/fuzz, built with clang) for a bounded time each.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
JOBS=$(nproc)
# Let ccache reuse objects across clones of the repository in different folders.
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$JOBS"
ctest --test-dir build --output-on-failure -j "$JOBS"

# The sanitizer build compiles only the unit-test executables, at -O1 so model tests stay quick.
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g" \
  -DQMLX_SANITIZE=ON >/dev/null
mapfile -t UNIT_TARGETS < <(ninja -C build-asan -t targets all | sed -n 's/^\(qmlx_[a-z0-9_]*_tests\): .*/\1/p' | sort -u)
cmake --build build-asan -j "$JOBS" --target "${UNIT_TARGETS[@]}"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-asan --output-on-failure -j "$JOBS" -L unit

# The fuzz targets: their own clang-14 build (build-fuzz), each run FUZZ_SECONDS from the
# checked-in seed corpus; any crash fails the suite.
./tests/fuzz/run_fuzzers.sh
