#!/usr/bin/env bash
# Cache benchmark on the Qwen3.5-0.8B-shaped model (MLX 8-bit): cold vs warm TTFT with the
# restore's GB/s beside the disk's, decode with checkpoints on vs off, disk bytes of a 20-turn
# conversation vs full copies. Usage: bench/cache/run.sh [BUILD_DIR] [PROMPT_TOKENS ...] [--ttft-only]
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-$root/build}"
shift || true
cmake --build "$build" --target qmlx_cli
models="${QMLX_BENCH_MODELS:-${TMPDIR:-/tmp}/qmlx-bench-models}"
dir="$models/qwen3.5-0.8b-mlx-8bit"
if [ ! -f "$dir/config.json" ]; then
  "$build/bin/qmlx" make-model --preset qwen3.5-0.8b --layout mlx --bits 8 --group-size 64 --out "$dir"
fi
work="${TMPDIR:-/tmp}/qmlx-cache-bench"
rm -rf "$work"
/usr/bin/python3 "$root/bench/cache/cache_bench.py" "$build/bin/qmlx" "$dir" "$work" "$@"
