#!/usr/bin/env bash
# Decode beside a long prefill (issue 31): a short request streams DECODE_TOKENS tokens while
# another request's LONG-token prompt prefills cold, and each long prefill alone, on the same
# GGUF file: qmlx with whole-chunk steps (--max-step-ms 0, the engine before issue 31) and with
# time-bounded steps (--max-step-ms MAX_STEP_MS), and llama.cpp (node-llama-cpp@3.21.1, CPU) with
# 2 sequences and its default batch of 512. Engines alternate in one invocation; JSON lines go
# to stdout and OUT as they come.
#   bench/peer/beside_prefill.sh [BUILD_DIR]
# Environment (defaults in brackets): SHAPE [dense]  FORMAT [gguf-q8_0]  LONGS ["8192 24576"]
#   SHORT_PROMPT [64]  DECODE_TOKENS [48]  DELAY_MS [3000: when the short request follows the long
#   one; ~200000 puts it ~20k tokens deep]  MAX_STEP_MS [500]  THREADS [2]  ENGINES ["qmlx-0
#   qmlx-bounded llama"]  MODES ["alone beside"]  OUT [bench/peer/results-beside-prefill.jsonl]
#   SKIP_BUILD [unset]
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
here="$root/bench/peer"
build="${1:-$root/build}"
threads="${THREADS:-2}" short="${SHORT_PROMPT:-64}" decode="${DECODE_TOKENS:-48}"
format="${FORMAT:-gguf-q8_0}" shape="${SHAPE:-dense}" max_step="${MAX_STEP_MS:-500}"
out="${OUT:-$here/results-beside-prefill.jsonl}"
port=$((20000 + RANDOM % 20000))

# SKIP_BUILD=1: BUILD_DIR/bin/qmlx as it is (a binary kept aside while the tree changes).
[ -n "${SKIP_BUILD:-}" ] || cmake --build "$build" --target qmlx_cli qmlx_make_model >&2
if [ ! -d "$here/node_modules/node-llama-cpp" ]; then
  (cd "$here" && NODE_LLAMA_CPP_SKIP_DOWNLOAD=true npm ci --no-audit --no-fund) >&2
fi
source <(sed -n '/^shape_flags()/,/^}/p; /^model_path()/,/^}/p' "$here/run.sh")
make_model="$build/tests/modelgen/qmlx_make_model"
models="${QMLX_PEER_MODELS:-${TMPDIR:-/tmp}/qmlx-peer-models}"
mkdir -p "$models"
model="$(model_path "$shape" "$format")"

work="$(mktemp -d)"
server=""
cleanup() { [ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
# No prefix cache: every run prefills cold.
echo '{"cache": {"memory_prefix_cache": false, "disk_kv_cache": false}}' >"$work/cache.json"
longest=0
for long in ${LONGS:-8192 24576}; do ((long > longest)) && longest=$long; done

serve() {  # MAX_STEP_MS: starts qmlx serve with 2 slots and waits until it answers
  "$build/bin/qmlx" serve --model "$model" --parallel 2 --threads "$threads" --port "$port" \
    --cache-config "$work/cache.json" --max-context $((longest + 1024)) --max-step-ms "$1" \
    2>"$work/serve.log" &
  server=$!
  for _ in $(seq 600); do
    curl -sf -H "Authorization: Bearer bench" "http://127.0.0.1:$port/v1/models" >/dev/null && {
      grep -o 'max_step_ms=.*' "$work/serve.log" | head -1 >&2
      return 0
    }
    kill -0 "$server" 2>/dev/null || { cat "$work/serve.log" >&2; return 1; }
    sleep 0.5
  done
  return 1
}
stop() { kill "$server"; wait "$server" 2>/dev/null || true; server=""; }
emit() {  # ENGINE_LABEL JSON
  echo "{\"shape\": \"$shape\", \"format\": \"$format\", \"label\": \"$1\", \"result\": $2}" |
    tee -a "$out"
}

for engine in ${ENGINES:-qmlx-0 qmlx-bounded llama}; do
  case "$engine" in
    qmlx-0) serve 0 ;;
    qmlx-bounded) serve "$max_step" ;;
  esac
  for long in ${LONGS:-8192 24576}; do
    for mode in ${MODES:-alone beside}; do
      if [ "$engine" = llama ]; then
        emit "$engine" "$(node "$here/beside_prefill_llama.mjs" "$model" "$mode" "$long" "$short" \
          "$decode" "$threads")"
      else
        emit "$engine" "$(node "$here/beside_prefill_qmlx.mjs" "http://127.0.0.1:$port" "$mode" \
          "$long" "$short" "$decode" "${DELAY_MS:-3000}")"
      fi
    done
  done
  if [ -n "$server" ]; then stop; fi
done
