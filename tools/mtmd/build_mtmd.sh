#!/usr/bin/env bash
# Builds llama.cpp's libmtmd (CPU only, static, portable: GGML_NATIVE=OFF) from the llama.cpp
# source that npm node-llama-cpp@3.21.1 ships (llama/gitRelease.bundle, release named in
# llama/llama.cpp.info.json), and links tools/mtmd/mtmd_driver.cpp against it, for
# tests/oracle/mtmd_vs_qmlx.py.
#   tools/mtmd/build_mtmd.sh [DIR]          (DIR: default build-mtmd in the repository, ignored)
# Prints the driver's path last. Idempotent: the clone, the configure step and the driver are
# skipped when present and current; ninja rebuilds nothing when nothing changed.
# node-llama-cpp comes from bench/peer's lock file (npm ci, no install scripts, no prebuilt
# binaries) unless QMLX_NODE_LLAMA_CPP names an installed node_modules/node-llama-cpp.
# Jobs: QMLX_MTMD_JOBS (default 2), run under nice.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DIR=$(mkdir -p "${1:-$ROOT/build-mtmd}" && cd "${1:-$ROOT/build-mtmd}" && pwd)
JOBS=${QMLX_MTMD_JOBS:-2}
PIN=3.21.1

NLC=${QMLX_NODE_LLAMA_CPP:-$ROOT/bench/peer/node_modules/node-llama-cpp}
if [[ ! -f $NLC/llama/gitRelease.bundle ]]; then
  [[ -n ${QMLX_NODE_LLAMA_CPP:-} ]] && { echo "build_mtmd: no llama/gitRelease.bundle in $NLC" >&2; exit 1; }
  echo "build_mtmd: installing node-llama-cpp@$PIN (bench/peer's lock file)" >&2
  (cd "$ROOT/bench/peer" && npm ci --ignore-scripts --omit=optional --no-audit --no-fund --loglevel=error)
fi
version=$(node -p "require('$NLC/package.json').version")
[[ $version == "$PIN" ]] || { echo "build_mtmd: $NLC is node-llama-cpp $version, not $PIN" >&2; exit 1; }
release=$(node -p "require('$NLC/llama/llama.cpp.info.json').tag")

SRC=$DIR/llama.cpp
BUILD=$DIR/build
commit=$(git bundle list-heads "$NLC/llama/gitRelease.bundle" | awk '$2 == "HEAD" {print $1}')
if [[ ! -f $SRC/tools/mtmd/mtmd.h ]] || [[ $(git -C "$SRC" rev-parse HEAD) != "$commit" ]]; then
  echo "build_mtmd: cloning llama.cpp $release ($commit) from node-llama-cpp@$PIN's bundle" >&2
  rm -rf "$SRC" "$BUILD"
  git clone -q "$NLC/llama/gitRelease.bundle" "$SRC" 2>/dev/null
fi

if [[ ! -f $BUILD/build.ninja ]]; then
  # Only libllama, ggml's CPU backend and libmtmd: no common library, tools, tests, examples,
  # server, HTTPS or video (ffmpeg) support.
  cmake -S "$SRC" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
    -DGGML_NATIVE=OFF -DGGML_CCACHE=OFF -DLLAMA_BUILD_COMMON=OFF -DLLAMA_BUILD_TOOLS=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF \
    -DLLAMA_BUILD_APP=OFF -DLLAMA_BUILD_MTMD=ON -DLLAMA_OPENSSL=OFF -DLLAMA_SUBPROCESS=OFF \
    -DMTMD_VIDEO=OFF >"$DIR/configure.log" 2>&1 ||
    { cat "$DIR/configure.log" >&2; exit 1; }
fi
nice cmake --build "$BUILD" -j "$JOBS" --target mtmd >"$DIR/build.log" 2>&1 ||
  { tail -50 "$DIR/build.log" >&2; exit 1; }

# The driver, linked by hand against the static libraries (the llama.cpp tree stays untouched).
DRIVER=$DIR/qmlx_mtmd_driver
LIBS=("$BUILD/tools/mtmd/libmtmd.a" "$BUILD/src/libllama.a" "$BUILD/ggml/src/libggml.a"
      "$BUILD/ggml/src/libggml-cpu.a" "$BUILD/ggml/src/libggml-base.a"
      "$BUILD/vendor/hash/libvendor-hash.a")
stale=0
[[ -x $DRIVER ]] || stale=1
for dep in "$ROOT/tools/mtmd/mtmd_driver.cpp" "$0" "${LIBS[@]}"; do
  [[ $stale == 1 || $dep -nt $DRIVER ]] && stale=1
done
if [[ $stale == 1 ]]; then
  openmp=()
  grep -q '^GGML_OPENMP:BOOL=ON' "$BUILD/CMakeCache.txt" && openmp=(-fopenmp)
  nice c++ -std=c++17 -O2 -Wall -Wextra -Werror -I"$SRC/include" -I"$SRC/ggml/include" \
    -I"$SRC/tools/mtmd" "$ROOT/tools/mtmd/mtmd_driver.cpp" -o "$DRIVER.tmp" \
    "${LIBS[@]}" "${openmp[@]}" -lpthread -ldl -lm
  mv "$DRIVER.tmp" "$DRIVER"
  echo "llama.cpp $release ($(git -C "$SRC" rev-parse --short HEAD)) from node-llama-cpp@$PIN" \
    >"$DIR/VERSION"
fi
echo "$DRIVER"
