#!/usr/bin/env bash
# Engine benchmark: Qwen3.5-0.8B-shaped random models (MLX 8-bit and 4-bit), prefill and decode
# tokens/s next to the memory-bandwidth roofline. Usage: bench/engine/run.sh [BUILD_DIR]
# Environment: PROMPT_TOKENS (512), DECODE_TOKENS (32), QMLX_BENCH_MODELS (model cache folder).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-$root/build}"
cmake --build "$build" --target qmlx_make_model qmlx_engine_bench
models="${QMLX_BENCH_MODELS:-${TMPDIR:-/tmp}/qmlx-bench-models}"
mkdir -p "$models"
for bits in 8 4; do
  dir="$models/qwen3.5-0.8b-mlx-${bits}bit"
  if [ ! -f "$dir/config.json" ]; then
    "$build/tests/modelgen/qmlx_make_model" make-model --preset qwen3.5-0.8b --layout mlx \
      --bits "$bits" --group-size 64 --out "$dir"
  fi
  "$build/bench/engine/qmlx_engine_bench" "$dir" "${PROMPT_TOKENS:-512}" "${DECODE_TOKENS:-32}"
done
