#!/usr/bin/env bash
# K/V storage dtype benchmark (issue 16, --kv-cache-dtype) on a Qwen3.5-0.8B-shaped random model
# (MLX 4-bit, the format whose decode the K/V traffic weighs on most). Usage:
#   bench/kv_cache/run.sh [BUILD_DIR]
# 1. accuracy: logits error and greedy agreement of bf16 and int8 K/V against f32 K/V after
#    CONTEXTS tokens ["1024 8192 32768"], DECODE_STEPS [16] steps each (real prefills: the
#    32k one takes the better part of an hour on two cores);
# 1b. float64: the same against the float64 numpy reference (tools/reference) after
#    FLOAT64_CONTEXTS tokens ["1024"], f32 K/V measured beside bf16 and int8 (the reference is
#    float64 numpy on one core: minutes at 1k tokens);
# 2. decode tok/s after DECODE_CONTEXTS tokens ["8192 32768"], each dtype in DTYPES
#    ["bf16 int8"], RUNS [3] runs interleaved (qmlx_engine_bench --context);
# 3. checkpoint size and restore time at RESTORE_CONTEXT [32768] tokens, each dtype.
# Environment: THREADS [2], QMLX_BENCH_MODELS (model cache folder), OUT [bench/kv_cache/results.jsonl],
# STEPS ["accuracy float64 decode restore"]. Every line carries the 1-minute load average.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-$root/build}"
threads="${THREADS:-2}"
out="${OUT:-$root/bench/kv_cache/results.jsonl}"
cmake --build "$build" --target qmlx_make_model qmlx_engine_bench qmlx_kv_cache_bench
models="${QMLX_BENCH_MODELS:-${TMPDIR:-/tmp}/qmlx-bench-models}"
model="$models/qwen3.5-0.8b-mlx-4bit"
mkdir -p "$models"
if [ ! -f "$model/config.json" ]; then
  "$build/tests/modelgen/qmlx_make_model" make-model --preset qwen3.5-0.8b --layout mlx \
    --bits 4 --group-size 64 --out "$model"
fi
bench="$build/bench/kv_cache/qmlx_kv_cache_bench"
: > "$out"
for step in ${STEPS:-accuracy float64 decode restore}; do
  case "$step" in
    accuracy)
      for context in ${CONTEXTS:-1024 8192 32768}; do
        "$bench" accuracy "$model" --context "$context" --decode "${DECODE_STEPS:-16}" \
          --threads "$threads" | tee -a "$out"
      done ;;
    float64)
      for context in ${FLOAT64_CONTEXTS:-1024}; do
        ids="$("$bench" prompt "$model" --context "$context")"
        ref="$(mktemp)"
        tokens="$(/usr/bin/python3 "$root/tools/reference/reference.py" --model "$model" \
          --tokens "$ids" --max-tokens "${DECODE_STEPS:-16}" --logits-out "$ref" |
          /usr/bin/python3 -c 'import json, sys; print(",".join(map(str, json.load(sys.stdin)["tokens"])))')"
        "$bench" accuracy "$model" --context "$context" --reference-logits "$ref" \
          --reference-tokens "$tokens" --dtypes f32,bf16,int8 --threads "$threads" | tee -a "$out"
        rm -f "$ref"
      done ;;
    decode)
      for context in ${DECODE_CONTEXTS:-8192 32768}; do
        for run in $(seq "${RUNS:-3}"); do
          for dtype in ${DTYPES:-bf16 int8}; do
            "$build/bench/engine/qmlx_engine_bench" "$model" 512 32 "$threads" \
              --kv-cache-dtype "$dtype" --context "$context" |
              sed "s/^{/{\"bench\":\"kv_decode\",\"run\":$run,/" | tee -a "$out"
          done
        done
      done ;;
    restore)
      for dtype in ${DTYPES:-bf16 int8}; do
        "$bench" restore "$model" --context "${RESTORE_CONTEXT:-32768}" --kv-cache-dtype "$dtype" \
          --threads "$threads" | tee -a "$out"
      done ;;
  esac
done
