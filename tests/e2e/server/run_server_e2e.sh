#!/usr/bin/env bash
# End-to-end test of `qmlx serve`: scripted fixture models (reasoning + XML tool call, reasoning
# + two JSON tool calls, plain text, and two for tool_choice) served for real, driven by the
# official OpenAI and Anthropic SDKs (clients.cjs; responses_client.cjs for /v1/responses), curl
# for auth and every error status, promtool on a real scrape, and a clean SIGTERM shutdown.
# Usage: run_server_e2e.sh QMLX_BINARY WORK_DIR NODE_MODULES_DIR
set -euo pipefail
qmlx=$1
work=$2
node_modules=$3
here=$(cd "$(dirname "$0")" && pwd)
key=e2e-secret
rm -rf "$work"
mkdir -p "$work"

fail() { echo "FAIL: $*" >&2; exit 1; }
source "$here/../free_ports.sh"  # free_port

server_pid=""
cleanup() { [[ -n $server_pid ]] && kill "$server_pid" 2>/dev/null || true; }
trap cleanup EXIT

# The prefix cache keeps its store in the work folder, never in the user's home.
mkdir -p "$work"
echo "{\"cache\": {\"disk_cache_dir\": \"$work/cache-store\", \"fsync\": false}}" > "$work/cache.json"

# start_server MODEL_DIR LOG: starts qmlx serve, waits for /health 200, sets port/metrics/pid.
start_server() {
  port=$(free_port)
  metrics=$(free_port)
  "$qmlx" serve --model "$1" --port "$port" --metrics-port "$metrics" --api-key "$key" \
    --max-context 4096 --max-body-mb 1 --model-id fixture --cache-config "$work/cache.json" \
    "${@:3}" 2>"$2" &
  server_pid=$!
  for _ in $(seq 1 300); do
    code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/health" || true)
    [[ $code == 200 ]] && return 0
    kill -0 "$server_pid" 2>/dev/null || { cat "$2" >&2; fail "server exited during start-up"; }
    sleep 0.1
  done
  cat "$2" >&2
  fail "server not healthy after 30s"
}

stop_server() {
  kill -TERM "$server_pid"
  local status=0
  wait "$server_pid" || status=$?
  server_pid=""
  [[ $status == 0 ]] || { cat "$1" >&2; fail "SIGTERM exit status $status (want 0)"; }
  grep -q "stopped" "$1" || fail "no shutdown line in $1"
}

run_clients() {
  QMLX_URL="http://127.0.0.1:$port" QMLX_KEY=$key QMLX_MODEL_ID=fixture QMLX_KIND=$1 \
    QMLX_STRICT=${2:-0} \
    QMLX_NODE_MODULES=$node_modules node "$here/clients.cjs"
}

# expect_status WANT DESCRIPTION CURL_ARGS...: checks the status and that the body is the
# route's error shape (OpenAI {"error": {...}} or Anthropic {"type": "error", ...}).
expect_status() {
  local want=$1 what=$2
  shift 2
  local got
  got=$(curl -s -o "$work/body" -w '%{http_code}' "$@")
  [[ $got == "$want" ]] || fail "$what: status $got, want $want: $(cat "$work/body")"
  if [[ $want != 200 ]]; then
    python3 - "$work/body" "$want" "$what" <<'PY' || fail "$what: bad error body: $(cat "$work/body")"
import json, sys
body = json.load(open(sys.argv[1]))
err = body["error"]
assert isinstance(err["message"], str) and err["message"], body
if body.get("type") == "error":
    assert err["type"].endswith("_error") or err["type"] == "request_too_large", body
else:
    assert err["code"] == int(sys.argv[2]), body
PY
  fi
  echo "ok curl: $what ($got)"
}

curl_checks() {
  local base="http://127.0.0.1:$port"
  local chat='{"model":"fixture","messages":[{"role":"user","content":"hi"}],"max_tokens":4}'
  local msg='{"model":"fixture","max_tokens":4,"messages":[{"role":"user","content":"hi"}]}'
  local auth=(-H "Authorization: Bearer $key")
  local json=(-H "Content-Type: application/json")
  expect_status 200 "health needs no key" "$base/health"
  expect_status 401 "no key" "${json[@]}" -d "$chat" "$base/v1/chat/completions"
  expect_status 401 "wrong key" -H "Authorization: Bearer nope" "${json[@]}" -d "$chat" "$base/v1/chat/completions"
  expect_status 401 "x-api-key not on OpenAI routes" -H "x-api-key: $key" "${json[@]}" -d "$chat" "$base/v1/chat/completions"
  expect_status 200 "bearer key" "${auth[@]}" "${json[@]}" -d "$chat" "$base/v1/chat/completions"
  expect_status 200 "x-api-key on Anthropic routes" -H "x-api-key: $key" "${json[@]}" -d "$msg" "$base/v1/messages"
  expect_status 401 "wrong x-api-key" -H "x-api-key: nope" "${json[@]}" -d "$msg" "$base/v1/messages"
  grep -q authentication_error "$work/body" || fail "Anthropic 401 type"
  expect_status 401 "models need a key" "$base/v1/models"
  expect_status 400 "malformed JSON" "${auth[@]}" "${json[@]}" -d '{"messages": [' "$base/v1/chat/completions"
  expect_status 400 "missing messages" "${auth[@]}" "${json[@]}" -d '{"model":"fixture"}' "$base/v1/chat/completions"
  grep -q messages "$work/body" || fail "missing field not named"
  expect_status 400 "mistyped temperature" "${auth[@]}" "${json[@]}" \
    -d '{"messages":[{"role":"user","content":"x"}],"temperature":"hot"}' "$base/v1/chat/completions"
  grep -q temperature "$work/body" || fail "mistyped field not named"
  expect_status 400 "Anthropic missing max_tokens" "${auth[@]}" "${json[@]}" \
    -d '{"messages":[{"role":"user","content":"x"}]}' "$base/v1/messages"
  # max_tokens is a ceiling: beyond the context it is capped (Claude Code always asks 128,000);
  # a prompt that leaves no room at all is refused.
  expect_status 200 "max_tokens over the context is capped" "${auth[@]}" "${json[@]}" \
    -d '{"messages":[{"role":"user","content":"x"}],"max_tokens":128000}' "$base/v1/chat/completions"
  python3 -c "print('{\"messages\":[{\"role\":\"user\",\"content\":\"' + 'x ' * 6000 + '\"}]}')" > "$work/long.json"
  expect_status 400 "context overflow" "${auth[@]}" "${json[@]}" --data-binary "@$work/long.json" "$base/v1/chat/completions"
  grep -q "leaves no room" "$work/body" && grep -q "limit of 4096" "$work/body" &&
    grep -q "the prompt has" "$work/body" || fail "overflow message: $(cat "$work/body")"
  # This server runs with --strict-model-id: another model's name is a 404 before any schema check.
  expect_status 404 "unknown model" "${auth[@]}" "${json[@]}" \
    -d '{"model":"gpt-9","messages":[{"role":"user","content":"x"}]}' "$base/v1/chat/completions"
  expect_status 404 "unknown model (Anthropic)" "${auth[@]}" "${json[@]}" \
    -d '{"model":"claude-9","max_tokens":"five"}' "$base/v1/messages"
  grep -q not_found_error "$work/body" || fail "Anthropic 404 type"
  head -c 2000000 /dev/zero | tr '\0' ' ' > "$work/big.json"
  # An oversize body is refused before it is read and the connection closed, so a plain client
  # gets the 413 at once, whether it asks first (curl's Expect: 100-continue) or just uploads;
  # --max-time turns a hang into a failure.
  expect_status 413 "body over --max-body-mb" --max-time 5 "${auth[@]}" "${json[@]}" --data-binary "@$work/big.json" "$base/v1/chat/completions"
  expect_status 413 "body over --max-body-mb, no Expect" --max-time 5 -H "Expect:" "${auth[@]}" "${json[@]}" --data-binary "@$work/big.json" "$base/v1/chat/completions"
  expect_status 405 "wrong method" "${auth[@]}" -X GET "$base/v1/chat/completions"
  expect_status 405 "wrong method (Anthropic)" "${auth[@]}" -X DELETE "$base/v1/messages"
  expect_status 404 "unknown route" "${auth[@]}" "$base/v1/nothing"
  expect_status 200 "tokenize" "${auth[@]}" "${json[@]}" -d '{"content":"hello"}' "$base/tokenize"
  expect_status 200 "apply-template" "${auth[@]}" "${json[@]}" -d "$chat" "$base/apply-template"
  python3 -c 'import json,sys; b=json.load(open(sys.argv[1])); assert b["tokens"] and b["last_message_end"] > 0, b' "$work/body"
}

check_metrics() {
  curl -sf "http://127.0.0.1:$metrics/metrics" > "$work/metrics.txt" || fail "metrics scrape"
  promtool check metrics < "$work/metrics.txt" || fail "promtool check metrics"
  for family in qmlx_requests_total qmlx_requests_in_flight qmlx_prompt_tokens_total \
    qmlx_prefill_tokens_total qmlx_completion_tokens_total qmlx_ttft_seconds \
    qmlx_prefill_tokens_per_second qmlx_decode_tokens_per_second process_resident_memory_bytes; do
    [[ $(grep -c "^# TYPE $family " "$work/metrics.txt") == 1 ]] || fail "family $family not exactly once"
  done
  grep -q 'qmlx_requests_total{route="/v1/chat/completions",status="401"}' "$work/metrics.txt" ||
    fail "401s not counted"
  echo "ok metrics: promtool and families"
}

check_request_log() {
  grep -Eq 'uid=[0-9]+ MISS cached=0 prefill=[0-9]+ reason=[a-z_]+ .* ttft=[0-9.]+ms prompt=' "$1" ||
    fail "no per-request log line in $1"
  grep -q "ready: model=fixture" "$1" || fail "no start-up summary line in $1"
  # Rejected requests are logged too (uid, route, status, error), never with prompt text.
  grep -Eq 'uid=[0-9]+ POST /v1/chat/completions status=400 error="' "$1" ||
    fail "no log line for a rejected request in $1"
  grep -Eq 'uid=[0-9]+ GET /v1/nothing status=404 error="no route' "$1" ||
    fail "no log line for an unknown route in $1"
  # stderr is a file here, so loading progress comes as plain lines, not a bar.
  grep -q "loading weights: 100% (" "$1" || fail "no loading progress line in $1"
}

# Fixture scripts. The qwen3_5 template opens <think> in the generation prompt, so that
# script starts inside the reasoning; the qwen3 template does not, so those open it.
printf '%s' 'The user wants the weather. I will call the tool.
</think>

Let me check.

<tool_call>
<function=get_weather>
<parameter=city>
Paris
</parameter>
<parameter=days>
3
</parameter>
</function>
</tool_call>' > "$work/xml.txt"
printf '%s' '<think>
Two lookups are needed.
</think>

Calling two tools.
<tool_call>
{"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}
</tool_call>
<tool_call>
{"name": "get_time", "arguments": {"zone": "CET"}}
</tool_call>' > "$work/json.txt"
printf '%s' 'Hello from the scripted model!' > "$work/plain.txt"
# tool_choice fixtures: a call's body that the model never opens, and a call's arguments alone.
printf '%s' '
{"name": "get_time", "arguments": {"zone": "CET"}}
</tool_call>' > "$work/required.txt"
printf '%s' ' {"zone": "CET"}}
</tool_call>' > "$work/named.txt"

"$qmlx" make-model --out "$work/xml-model" --script "$work/xml.txt" --arch qwen3_5 >/dev/null
"$qmlx" make-model --out "$work/json-model" --script "$work/json.txt" --arch qwen3_5 --template qwen3 >/dev/null
"$qmlx" make-model --out "$work/plain-model" --script "$work/plain.txt" --arch qwen3_5 --template qwen3 >/dev/null
for kind in required named; do
  "$qmlx" make-model --out "$work/$kind-model" --script "$work/$kind.txt" --arch qwen3_5 --template qwen3 >/dev/null
done

start_server "$work/xml-model" "$work/xml.log" --log-format text --strict-model-id \
  --model-alias fixture-alias
run_clients xml 1
QMLX_URL="http://127.0.0.1:$port" QMLX_KEY=$key QMLX_MODEL_ID=fixture \
  QMLX_NODE_MODULES=$node_modules node "$here/responses_client.cjs"
curl_checks
check_metrics
stop_server "$work/xml.log"
check_request_log "$work/xml.log"

start_server "$work/json-model" "$work/json.log"
run_clients json
stop_server "$work/json.log"

start_server "$work/plain-model" "$work/plain.log" --log-format json
run_clients plain
stop_server "$work/plain.log"
python3 -c '
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
assert any(l["msg"].startswith("uid=") for l in lines), "no JSON request log line"
' "$work/plain.log" || fail "--log-format json"

# The named fixture writes get_time's argument (zone) under a forced get_weather too: that
# call breaks get_weather's schema, so the tool-call grammar (on by default) would not let it
# through; this checks the forcing alone (tool_call_grammar_e2e checks the grammar).
for kind in required named; do
  grammar=true
  [ "$kind" = named ] && grammar=false
  start_server "$work/$kind-model" "$work/$kind.log" --tool-call-grammar "$grammar"
  run_clients "$kind"
  stop_server "$work/$kind.log"
done

# Start-up errors come before the port opens, with a non-zero exit.
if "$qmlx" serve --model "$work/does-not-exist" --port "$(free_port)" 2>"$work/err.log"; then
  fail "a missing model must fail"
fi
grep -q "does-not-exist" "$work/err.log" || fail "missing model error does not name it"
echo '{"model": {"hybrid_attention": "yes"}}' > "$work/bad.json"
if "$qmlx" serve --cache-config "$work/bad.json" --port "$(free_port)" 2>"$work/err.log"; then
  fail "an invalid config value must fail"
fi
grep -q "hybrid_attention" "$work/err.log" || fail "config error does not name the key"
echo "all server e2e checks passed"
