#!/usr/bin/env bash
# Concurrency benchmark (issue 18), qmlx against llama.cpp (npm node-llama-cpp@3.21.1, CPU build)
# on the same GGUF file with the same threads, alternating engine by engine in one invocation:
# aggregate decode tokens/s with 1, 2, 4 and 8 sequences decoding at once (qmlx: `serve
# --parallel N`, N requests; llama.cpp: one context with N sequences), and the time to first
# token of a short request sent while an 8k-token prefill runs. Prints JSON lines (also to OUT).
#   bench/peer/parallel.sh [BUILD_DIR]
# Environment (defaults in brackets): SHAPES ["dense moe"]  FORMAT [gguf-q8_0]
#   SEQUENCES ["1 2 4 8"]  PROMPT_TOKENS [64]  DECODE_TOKENS [32]  LONG_PROMPT [8192]
#   THREADS [2]  RUNS [1]  OUT [bench/peer/parallel.jsonl]  (models as in run.sh)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
here="$root/bench/peer"
build="${1:-$root/build}"
threads="${THREADS:-2}" runs="${RUNS:-1}" prompt="${PROMPT_TOKENS:-64}"
decode="${DECODE_TOKENS:-32}" long="${LONG_PROMPT:-8192}" format="${FORMAT:-gguf-q8_0}"
out="${OUT:-$here/parallel.jsonl}"
port=$((20000 + RANDOM % 20000))

cmake --build "$build" --target qmlx_cli qmlx_make_model
if [ ! -d "$here/node_modules/node-llama-cpp" ]; then
  (cd "$here" && NODE_LLAMA_CPP_SKIP_DOWNLOAD=true npm ci --no-audit --no-fund)
fi
# model_path and shape_flags: the same generated models as run.sh.
source <(sed -n '/^shape_flags()/,/^}/p; /^model_path()/,/^}/p' "$here/run.sh")
make_model="$build/tests/modelgen/qmlx_make_model"
models="${QMLX_PEER_MODELS:-${TMPDIR:-/tmp}/qmlx-peer-models}"
mkdir -p "$models"

work="$(mktemp -d)"
server=""
cleanup() { [ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
# No prefix cache: every run prefills, as llama.cpp's does.
echo '{"cache": {"memory_prefix_cache": false, "disk_kv_cache": false}}' >"$work/cache.json"

serve() {  # MODEL PARALLEL: starts qmlx serve and waits until it answers
  "$build/bin/qmlx" serve --model "$1" --parallel "$2" --threads "$threads" --port "$port" \
    --cache-config "$work/cache.json" --max-context $((long + 1024)) 2>"$work/serve.log" &
  server=$!
  for _ in $(seq 600); do
    curl -sf -H "Authorization: Bearer bench" "http://127.0.0.1:$port/v1/models" >/dev/null && return 0
    kill -0 "$server" 2>/dev/null || { cat "$work/serve.log" >&2; return 1; }
    sleep 0.5
  done
  return 1
}
stop() {  # prints the server's peak RSS in bytes, then stops it
  awk '/VmHWM/ {print $2 * 1024}' "/proc/$server/status"
  kill "$server"; wait "$server" 2>/dev/null || true; server=""
}
emit() { echo "{\"shape\": \"$1\", \"format\": \"$format\", \"run\": $2, \"result\": $3}" | tee -a "$out"; }

for shape in ${SHAPES:-dense moe}; do
  model="$(model_path "$shape" "$format")"
  for run in $(seq "$runs"); do
    for n in ${SEQUENCES:-1 2 4 8}; do
      emit "$shape" "$run" "$(node "$here/llama_parallel_bench.mjs" "$model" "$n" "$prompt" "$decode" "$threads")"
      serve "$model" "$n"
      result="$(node "$here/qmlx_parallel_bench.mjs" "http://127.0.0.1:$port" "$n" "$prompt" "$decode")"
      emit "$shape" "$run" "${result%\}}, \"peak_rss_bytes\": $(stop)}"
    done
    if [ "$long" -gt 0 ]; then
      emit "$shape" "$run" "$(node "$here/llama_parallel_bench.mjs" "$model" 0 "$prompt" 1 "$threads" "$long")"
      serve "$model" 2
      result="$(node "$here/qmlx_parallel_bench.mjs" "http://127.0.0.1:$port" 0 "$prompt" 1 "$long")"
      emit "$shape" "$run" "${result%\}}, \"peak_rss_bytes\": $(stop)}"
    fi
  done
done
