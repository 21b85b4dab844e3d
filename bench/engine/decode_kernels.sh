#!/usr/bin/env bash
# The decode GEMV's kernels side by side (kernels/affine_gemv.h): the engine's decode tokens/s
# at 1, 2, 4 and 8 sequences per step for each weight layout (row-major, QMLX_AFFINE_TILES=0, or
# 16-row tiles, kernels/affine_tiles.h) and instruction set (AVX2, QMLX_GEMV_ISA=avx2, or AVX-512
# VNNI where the CPU has it), in interleaved rounds so all see the same machine; also the load
# time, the single-sequence prefill and the peak RSS of each.
# Usage: bench/engine/decode_kernels.sh [BUILD_DIR]. Environment: ROUNDS (3), BITS ("8 4"),
# VARIANTS ("rows-avx2 rows-avx512 tiles-avx2 tiles-avx512"), QMLX_BENCH_MODELS (model folder).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-$root/build}"
cmake --build "$build" --target qmlx_make_model qmlx_engine_bench >/dev/null
models="${QMLX_BENCH_MODELS:-${TMPDIR:-/tmp}/qmlx-bench-models}"
mkdir -p "$models"
export QMLX_BENCH_BANDWIDTH_GBS=1  # the roofline figure is not used here
for bits in ${BITS:-8 4}; do
  dir="$models/qwen3.5-0.8b-mlx-${bits}bit"
  if [ ! -f "$dir/config.json" ]; then
    "$build/tests/modelgen/qmlx_make_model" make-model --preset qwen3.5-0.8b --layout mlx \
      --bits "$bits" --group-size 64 --out "$dir" >/dev/null
  fi
  for round in $(seq "${ROUNDS:-3}"); do
    for variant in ${VARIANTS:-rows-avx2 rows-avx512 tiles-avx2 tiles-avx512}; do
      tiles=1
      [[ $variant == rows-* ]] && tiles=0
      QMLX_AFFINE_TILES=$tiles QMLX_GEMV_ISA=${variant#*-} \
        "$build/bench/engine/qmlx_engine_bench" "$dir" 512 32 --batch 1,2,4,8 |
        /usr/bin/python3 -c "
import json, sys
d = json.load(sys.stdin)
rates = ' '.join('B=%d %.1f' % (b['batch'], b['tokens_per_second']) for b in d['batch_decode'])
print('%d-bit round $round %-12s %s tok/s | load %.2f s, prefill %.1f tok/s, peak RSS %d MB' % (
    $bits, '$variant', rates, d['load_s'], d['prefill_tokens_per_second'],
    d['peak_rss_bytes'] / 1e6))"
    done
  done
done
