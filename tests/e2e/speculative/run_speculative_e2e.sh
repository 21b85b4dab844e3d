#!/usr/bin/env bash
# End-to-end test of MTP speculative decoding (issue 16, item 3): `qmlx serve --speculative
# mtp:K` on a scripted model whose MTP head is right by construction (make-model --script
# --mtp) answers every request exactly as the server without it does (whole replies, max_tokens,
# stop strings, streaming, tool calls, a second turn restored from the cache), accepts nearly
# every draft, and says so in the request's log line and in /metrics. A model without a head
# decodes plainly with one line saying so; one whose head is incomplete, and bad values, are
# refused at start. With DEVICE (vulkan), the servers' forward pass and head run there (the
# rollback of a rejected draft's recurrent state too), and only the comparisons run: the rest
# does not depend on the device. Exit 77 (skip) when no Vulkan device can run.
# Usage: run_speculative_e2e.sh QMLX_BINARY WORK_DIR [DEVICE]
set -euo pipefail
qmlx=$1
work=$2
device=${3:-cpu}
if [[ $device != cpu ]]; then
  "$qmlx" devices | grep -q "can run: yes" || { echo "SKIP: no Vulkan device can run"; exit 77; }
fi
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work"
mkdir -p "$work"
source "$here/../cache/serve_helpers.sh"

printf '%s' 'The user wants the weather in Paris. I will call the tool, then answer.
</think>

Let me check the forecast for you.

<tool_call>
<function=get_weather>
<parameter=city>
Paris
</parameter>
</function>
</tool_call>' > "$work/script.txt"
"$qmlx" make-model --out "$work/model" --script "$work/script.txt" --arch qwen3_5 --mtp >/dev/null
"$qmlx" make-model --out "$work/plain-model" --script "$work/script.txt" --arch qwen3_5 >/dev/null
echo "{\"cache\": {\"disk_cache_dir\": \"$work/store\", \"fsync\": false}}" > "$work/cache.json"

for k in 1 3; do
  rm -rf "$work/store"
  start_server "$work/model" "$work/cache.json" "$work/plain.log" --device "$device"
  $py "$here/speculative_requests.py" "$port" "$work/plain-$k.json"
  stop_server
  rm -rf "$work/store"
  start_server "$work/model" "$work/cache.json" "$work/spec-$k.log" --device "$device" \
    --speculative "mtp:$k"
  $py "$here/speculative_requests.py" "$port" "$work/spec-$k.json"
  curl -s "http://127.0.0.1:$metrics/metrics" > "$work/metrics-$k.txt"
  stop_server
  cmp -s "$work/plain-$k.json" "$work/spec-$k.json" ||
    { diff "$work/plain-$k.json" "$work/spec-$k.json" >&2; fail "k=$k: replies differ"; }
  grep -q "speculative decoding: MTP head, $k draft token(s) per step" "$work/spec-$k.log" ||
    fail "k=$k: no start-up line"
  # Constrained replies speculate too (the schema and strict-tool requests).
  ! grep -q "speculative decoding off for this request" "$work/spec-$k.log" ||
    fail "k=$k: a constrained request decoded without speculation"
  $py - "$work/spec-$k.json" <<'PY' || fail "k=$k: a constrained reply is not the schema's JSON"
import json, sys
r = json.load(open(sys.argv[1]))
for name in ("schema_120", "schema_stream"):
    value = json.loads(r[name]["content"])
    assert set(value) == {"city", "days"} and len(value["city"]) <= 6, (name, value)
    assert isinstance(value["days"], int), (name, value)
assert r["schema_16"]["finish_reason"] == "length", r["schema_16"]
calls = r["strict_tool"]["tool_calls"]
assert [(n, json.loads(a)) for n, a in calls] == [("get_weather", {"city": "Paris"})], calls
PY
  # The whole-reply request (the first): nearly every draft accepted.
  line=$(grep -m1 -o 'spec_accept=[0-9.]* spec_tokens_per_step=[0-9.]*' "$work/spec-$k.log") ||
    fail "k=$k: no spec_accept in the request log line"
  echo "k=$k: $line"
  $py - "$line" "$k" <<'PY' || fail "k=$k: acceptance too low: $line"
import sys
fields = dict(f.split("=") for f in sys.argv[1].split())
k = int(sys.argv[2])
assert float(fields["spec_accept"]) >= 0.85, fields
assert float(fields["spec_tokens_per_step"]) >= 1 + 0.8 * k, fields
PY
  grep -Eq '^qmlx_speculative_accepted_tokens_total [1-9]' "$work/metrics-$k.txt" ||
    fail "k=$k: qmlx_speculative_accepted_tokens_total not counted"
  grep -q '^qmlx_speculative_acceptance_rate_bucket' "$work/metrics-$k.txt" ||
    fail "k=$k: no qmlx_speculative_acceptance_rate histogram"
done
if [[ $device != cpu ]]; then
  echo "PASS ($device)"
  exit 0
fi

# No MTP head: plain decoding, said once.
start_server "$work/plain-model" "$work/cache.json" "$work/no-head.log" --speculative mtp:2
stop_server
grep -q "speculative decoding off: the model has no MTP head" "$work/no-head.log" ||
  fail "no line saying speculative decoding is off"

# An incomplete head (some mtp.* tensors missing) is dropped at load: asking for it ends the
# start (exit 1) with an error naming what is missing.
"$qmlx" make-model --out "$work/broken-head" --script "$work/script.txt" --arch qwen3_5 --mtp \
  --omit-tensor mtp.pre_fc_norm_hidden.weight >/dev/null
status=0
"$qmlx" serve --model "$work/broken-head" --port "$(free_port)" --metrics-port "$(free_port)" \
  --speculative mtp >"$work/broken-head.log" 2>&1 || status=$?
broken() { cat "$work/broken-head.log" >&2; fail "incomplete head: $*"; }
[[ $status == 1 ]] || broken "exit $status, not 1"
missing="(missing mtp.pre_fc_norm_hidden.weight)"
grep -qF "model: MTP head incomplete $missing" "$work/broken-head.log" || broken "no load warning"
grep -qF "needs the MTP head, but the model's MTP head is incomplete $missing" \
  "$work/broken-head.log" || broken "unclear error"

# Bad values are refused before the server starts, with an error naming the flag.
refused() {
  if "$qmlx" serve --model "$work/model" --port "$(free_port)" "$@" >"$work/bad.log" 2>&1; then
    fail "'$*' was accepted"
  fi
  grep -q "speculative" "$work/bad.log" || { cat "$work/bad.log" >&2; fail "'$*': unclear error"; }
}
refused --speculative mtp:9
refused --speculative eagle
refused --speculative-config '{"method":"ngram"}'
refused --speculative-config '{"method":"mtp","num_speculative_tokens":0}'
refused --speculative mtp --speculative-config '{"method":"mtp"}'
echo "PASS"
