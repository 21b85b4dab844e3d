#!/usr/bin/env bash
# The decode GEMV's instruction sets side by side (kernels/affine_gemv.h): the engine's decode
# tokens/s at 1, 2, 4 and 8 sequences per step with AVX2 (QMLX_GEMV_ISA=avx2) and with AVX-512
# VNNI (the default where the CPU has it), in interleaved rounds so both see the same machine.
# Usage: bench/engine/gemv_isa.sh [BUILD_DIR]. Environment: ROUNDS (3), BITS ("8 4"),
# QMLX_BENCH_MODELS (model cache folder).
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
    for isa in avx2 avx512; do
      QMLX_GEMV_ISA=$isa "$build/bench/engine/qmlx_engine_bench" "$dir" 512 32 --batch 1,2,4,8 |
        /usr/bin/python3 -c "
import json, sys
d = json.load(sys.stdin)
rates = ' '.join('B=%d %.1f' % (b['batch'], b['tokens_per_second']) for b in d['batch_decode'])
print('%d-bit round $round %-6s %s tok/s' % ($bits, '$isa', rates))"
    done
  done
done
