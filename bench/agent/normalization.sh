#!/usr/bin/env bash
# Prompt normalization on real client traffic: prefill per request with every rule off, with
# the defaults (strip_claude_code_billing_header only) and with every rule on, on a scripted
# model (the reply is fixed; the prompts are the clients' own).
#   Qwen Code: a one-shot prompt, its --continue second turn, then a new session (each also
#              sends its own side requests: memory extraction, summaries).
#   Claude Code: the first request of two new sessions with different first prompts (captured
#              from the real binary, then sent to /v1/messages as it is, but not streamed and
#              with a short max_tokens).
# Usage: bench/agent/normalization.sh [QMLX_BINARY] [AGENTS_BIN_DIR]
# Prints one row per request: client, step, mode, prompt, cached, prefill, rules that fired.
set -euo pipefail

QMLX=${1:-build/bin/qmlx}
AGENTS=$(realpath "${2:-tests/agents/node_modules/.bin}")
QMLX=$(realpath "$QMLX")
WORK=$(mktemp -d)
PORT=${PORT:-18600}
trap 'kill $(jobs -p) 2>/dev/null || true; [ -n "${KEEP_WORK:-}" ] || rm -rf "$WORK"' EXIT

printf 'Hi there.' > "$WORK/script.txt"
"$QMLX" make-model --script "$WORK/script.txt" --out "$WORK/model" > /dev/null

# A project folder for the agents, a git repository as they expect.
mkdir -p "$WORK/proj"
(cd "$WORK/proj" && git init -q && echo "print('hello')" > main.py)

# Claude Code's first request of two sessions, captured by a server that answers 400.
capture_claude() {
  local out=$WORK/claude_capture
  mkdir -p "$out" "$WORK/claude_home"
  python3 - "$((PORT + 2))" "$out" <<'EOF' &
import http.server, json, sys, itertools
n = itertools.count()
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get('Content-Length') or 0))
        with open(f"{sys.argv[2]}/{next(n):03d}.json", "wb") as f: f.write(body)
        msg = b'{"type":"error","error":{"type":"invalid_request_error","message":"capture"}}'
        self.send_response(400); self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(msg))); self.end_headers(); self.wfile.write(msg)
    def log_message(self, *a): pass
http.server.ThreadingHTTPServer(('127.0.0.1', int(sys.argv[1])), H).serve_forever()
EOF
  local capture_pid=$!
  sleep 1
  for prompt in "say hi" "list the files here"; do
    before=$(ls "$out" | wc -l)
    (cd "$WORK/proj" && HOME=$WORK/claude_home ANTHROPIC_BASE_URL=http://127.0.0.1:$((PORT + 2)) \
      ANTHROPIC_API_KEY=k CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_TELEMETRY=1 \
      timeout 120 "$AGENTS/claude" -p "$prompt" --max-turns 1 > /dev/null 2>&1 || true)
    cp "$out/$(printf %03d "$before").json" "$WORK/claude_session_$((before > 0)).json"
  done
  kill "$capture_pid"
}

# Sends a captured Claude Code request to qmlx's /v1/messages (whole reply, 16 tokens at most).
send_claude() {
  python3 - "$1" "$PORT" <<'EOF'
import json, sys, urllib.request
body = json.load(open(sys.argv[1]))
body.update(stream=False, max_tokens=16)
req = urllib.request.Request(f'http://127.0.0.1:{sys.argv[2]}/v1/messages', data=json.dumps(body).encode(),
                             headers={'x-api-key': 'k', 'content-type': 'application/json'})
urllib.request.urlopen(req).read()
EOF
}

qwen() {
  (cd "$WORK/proj" && HOME=$WORK/qwen_home OPENAI_BASE_URL=http://127.0.0.1:$PORT/v1 \
    OPENAI_API_KEY=k OPENAI_MODEL=model timeout 600 "$AGENTS/qwen" "$@" > /dev/null 2>&1)
}

# Runs `step` and labels the log lines it produced.
LOG=
label() {
  local client=$1 step=$2 mode=$3
  shift 3
  local before
  before=$(grep -c ' uid=[0-9]* \(HIT\|MISS\)' "$LOG" || true)
  "$@"
  sleep 1  # the log line is written after the reply
  grep ' uid=[0-9]* \(HIT\|MISS\)' "$LOG" | tail -n +"$((before + 1))" |
    sed -E "s/.* uid=([0-9]+) (HIT|MISS) cached=([0-9]+) prefill=([0-9]+).* prompt=([0-9]+) .*finish=[a-z_]+( normalized=([a-z_,]+))?.*/$client|$step|$mode|\5|\3|\4|\7/"
}

capture_claude
printf 'client|step|rules|prompt|cached|prefill|fired\n'
for mode in off default all; do
  billing=$([ "$mode" = off ] && echo false || echo true)
  tools=$([ "$mode" = all ] && echo true || echo false)
  mkdir -p "$WORK/$mode" "$WORK/qwen_home/.qwen"
  rm -rf "$WORK/qwen_home/.qwen/"*
  echo '{"telemetry": {"enabled": false}, "usageStatisticsEnabled": false}' \
    > "$WORK/qwen_home/.qwen/settings.json"
  cat > "$WORK/$mode/config.json" <<EOF
{"cache": {"disk_cache_dir": "$WORK/$mode/cache", "fsync": false},
 "prompt_normalization": {"strip_claude_code_billing_header": $billing,
                          "canonical_tool_order": $tools}}
EOF
  LOG=$WORK/$mode/serve.log
  "$QMLX" serve --model "$WORK/model" --port "$PORT" --cache-config "$WORK/$mode/config.json" \
    > "$LOG" 2>&1 &
  server=$!
  until grep -q ' ready: ' "$LOG"; do sleep 0.2; done
  label claude "session 1" "$mode" send_claude "$WORK/claude_session_0.json"
  label claude "session 2" "$mode" send_claude "$WORK/claude_session_1.json"
  label qwen "turn 1" "$mode" qwen -p "say hi"
  label qwen "turn 2 (--continue)" "$mode" qwen -c -p "now say bye"
  label qwen "new session" "$mode" qwen -p "list the files here"
  kill "$server"
  wait "$server" 2> /dev/null || true
done
