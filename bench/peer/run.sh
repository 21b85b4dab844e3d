#!/usr/bin/env bash
# Side-by-side benchmark: qmlx against llama.cpp (npm node-llama-cpp@3.21.1, CPU build, same
# thread count) on random-weight models of the Qwen3.5-0.8B shape (dense) and the
# Qwen3.5-35B-A3B shape cut to a few layers (MoE). Both engines run in the same invocation,
# alternating run by run; table.py prints medians and qmlx / llama.cpp ratios.
#   bench/peer/run.sh [BUILD_DIR]
# Environment (defaults in brackets):
#   RUNS [3]  PROMPTS ["512 2048 8192"]  DECODE_AFTER ["512 8192"] (prompt lengths whose run
#   also measures decode)  DECODE_TOKENS [32]  THREADS [2]  SHAPES ["dense moe"]
#   MOE_LAYERS [4]  MOE_FULL_ATTENTION_INTERVAL [4]  FORMATS ["mlx-8bit mlx-4bit gguf-q8_0 gguf-q4_k_m"] (q4_k_m: Q4_K with Q6_K
#   where llama.cpp's Q4_K_M uses it)
#   QMLX_PEER_MODELS [${TMPDIR:-/tmp}/qmlx-peer-models]  OUT [bench/peer/results.jsonl]
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
here="$root/bench/peer"
build="${1:-$root/build}"
runs="${RUNS:-3}" threads="${THREADS:-2}" decode_tokens="${DECODE_TOKENS:-32}"
models="${QMLX_PEER_MODELS:-${TMPDIR:-/tmp}/qmlx-peer-models}"
out="${OUT:-$here/results.jsonl}"

cmake --build "$build" --target qmlx_make_model qmlx_engine_bench qmlx_kernel_bench
make_model="$build/tests/modelgen/qmlx_make_model"
if [ ! -d "$here/node_modules/node-llama-cpp" ]; then
  # The prebuilt CPU binaries come with the package; nothing is downloaded or compiled.
  (cd "$here" && NODE_LLAMA_CPP_SKIP_DOWNLOAD=true npm ci --no-audit --no-fund)
fi
gguf_ok=0
if "$make_model" make-model --help 2>&1 | grep -q -- '--gguf-type'; then gguf_ok=1; fi

shape_flags() {
  case "$1" in
    dense) echo "--preset qwen3.5-0.8b" ;;
    # Qwen3.5-35B-A3B (model-spec §1.3) cut to MOE_LAYERS layers, every
    # MOE_FULL_ATTENTION_INTERVAL-th one full attention (4, as in the real model).
    moe) echo "--arch qwen3_5_moe --hidden 2048 --layers ${MOE_LAYERS:-4} --heads 16 --kv-heads 2
               --head-dim 256 --linear-key-heads 16 --linear-value-heads 32 --linear-key-dim 128
               --linear-value-dim 128 --experts 256 --experts-per-tok 8 --moe-intermediate 512
               --shared-intermediate 512 --vocab 248320
               --full-attention-interval ${MOE_FULL_ATTENTION_INTERVAL:-4} --no-tie" ;;
  esac
}

# Path of the model of one shape and format, generated on first use.
model_path() {
  local shape="$1" format="$2" dir="$models/$1-$2"
  case "$format" in
    mlx-*bit)
      local bits="${format#mlx-}"; bits="${bits%bit}"
      [ -f "$dir/config.json" ] || "$make_model" make-model $(shape_flags "$shape") --layout mlx \
        --bits "$bits" --group-size 64 --out "$dir" >&2
      echo "$dir" ;;
    gguf-*)
      local type="${format#gguf-}"
      [ -f "$dir.gguf" ] || "$make_model" make-model $(shape_flags "$shape") --format gguf \
        --gguf-type "$type" --out "$dir.gguf" >&2
      echo "$dir.gguf" ;;
  esac
}

tag() {  # prefixes a JSON line with the fields table.py groups by (each engine names itself)
  sed "s/^{/{\"shape\":\"$1\",\"format\":\"$2\",\"prompt\":$3,/"
}

mkdir -p "$models"
: > "$out"
bandwidth=$("$build/bench/kernels/qmlx_kernel_bench" "$threads" bandwidth)
echo "read bandwidth ($threads threads): $bandwidth GB/s" >&2
for shape in ${SHAPES:-dense moe}; do
  for format in ${FORMATS:-mlx-8bit mlx-4bit gguf-q8_0 gguf-q4_k_m}; do
    if [[ "$format" == gguf-* && $gguf_ok == 0 ]]; then
      echo "skipping $format: make-model has no --format gguf yet" >&2
      continue
    fi
    path=$(model_path "$shape" "$format")
    if [[ "$format" == gguf-* ]] && ! "$build/bench/engine/qmlx_engine_bench" "$path" 1 0 \
        "$threads" > /dev/null 2>&1; then
      echo "skipping $format: this qmlx build cannot load .gguf models" >&2
      continue
    fi
    peer_format="${format#gguf-}"
    [[ "$format" == mlx-8bit ]] && peer_format=q8_0
    [[ "$format" == mlx-4bit ]] && peer_format=q4_k_m
    peer_path=""
    [ $gguf_ok == 1 ] && peer_path=$(model_path "$shape" "gguf-$peer_format")
    for prompt in ${PROMPTS:-512 2048 8192}; do
      decode=4
      [[ " ${DECODE_AFTER:-512 8192} " == *" $prompt "* ]] && decode=$decode_tokens
      for run in $(seq "$runs"); do
        echo "$shape $format prompt $prompt run $run" >&2
        QMLX_BENCH_BANDWIDTH_GBS="$bandwidth" "$build/bench/engine/qmlx_engine_bench" \
          "$path" "$prompt" "$decode" "$threads" | tag "$shape" "$format" "$prompt" >> "$out"
        # The peer format is measured once per pair of runs (formats sharing it reuse it).
        if [ -n "$peer_path" ] && ! grep -q "\"shape\":\"$shape\",\"format\":\"$peer_format\",\"prompt\":$prompt,\"engine\":\"llama.cpp\".*\"run\":$run}" "$out"; then
          node "$here/llama_bench.mjs" "$peer_path" "$prompt" "$decode" "$threads" |
            sed "s/}$/,\"run\":$run}/" | tag "$shape" "$peer_format" "$prompt" >> "$out"
        fi
      done
    done
  done
done
/usr/bin/python3 "$here/table.py" "$out"
