#!/usr/bin/env bash
# Short run of every agent-replay scenario (issue 6) against the real `qmlx serve` on tiny
# generated models, with --assert: a random-weight hybrid model for all scenarios, and the
# scripted fixture model (replies are tool calls) for the clean one.
# Usage: run_scenarios.sh QMLX_BINARY WORK_DIR. Exit 77 (skip) only while `qmlx serve` is
# not built into the binary yet.
set -euo pipefail
qmlx=$1
work=$2
here=$(cd "$(dirname "$0")" && pwd)
replay="$here/../../../bench/agent/replay.mjs"

if ! "$qmlx" serve --help >/dev/null 2>&1; then
  echo "SKIP: '$qmlx serve' does not exist yet"
  exit 77
fi

rm -rf "$work"
mkdir -p "$work"
"$qmlx" make-model --out "$work/model" --arch qwen3_5 --seed 6 >/dev/null
cat > "$work/script.txt" <<'SCRIPT'
<think>
I need to look at the parser before changing anything.
</think>

<tool_call>
<function=read_file>
<parameter=path>
src/parser.cpp
</parameter>
</function>
</tool_call>
SCRIPT
"$qmlx" make-model --out "$work/script-model" --script "$work/script.txt" >/dev/null

# Small sessions: four tool schemas, a ~1.5k-token first prompt growing to ~3k in about 4 turns.
common=(--qmlx "$qmlx" --cache on --assert --seed 3 --tool-count 4 --start-tokens 1500 --target-tokens 3000
  --turns 4 --max-tokens 24 --think-time-ms 300 --interrupt-after 4 --regenerate-every 2
  --flood-max-tokens 300 --flood-disk-gb 0.002 --start-timeout-ms 60000 --timeout-ms 60000)

status=0
node "$replay" "${common[@]}" --model "$work/model" --scenario all --out "$work/random" || status=1
node "$replay" "${common[@]}" --max-tokens 200 --model "$work/script-model" --scenario clean \
  --out "$work/scripted" || status=1
cat "$work/random/summary.md" "$work/scripted/summary.md" 2>/dev/null || true
exit $status
