#!/usr/bin/env bash
# Kernel rooflines: read bandwidth, FMA peak, and the matmul kernels against them.
# Usage: bench/kernels/run.sh [BUILD_DIR] [threads=2]
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-$root/build}"
cmake --build "$build" --target qmlx_kernel_bench
"$build/bench/kernels/qmlx_kernel_bench" "${2:-2}"
