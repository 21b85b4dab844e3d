# Sourced by the device e2e scripts (tests/backend/*_e2e.sh) after `set -euo pipefail`, with the
# qmlx binary as their $1: skips the test (exit 77) where no Vulkan device can run, and gives
# them a scratch folder that is removed at exit with the server they started ($pid), their own
# QMLX_HOME, a port, and the helpers below.
qmlx="$1"
fail() { echo "FAIL: $*" >&2; exit 1; }
"$qmlx" devices | grep -q "can run: yes" || { echo "SKIP: no Vulkan device can run"; exit 77; }

work=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
export QMLX_HOME="$work/home"
port=$((20000 + RANDOM % 20000))

# wait_ready LOG: waits up to 120 s for the server writing LOG to say it is ready.
wait_ready() {
  for _ in $(seq 1 240); do grep -q "ready:" "$1" && return 0; sleep 0.5; done
  fail "no start: $(tail -5 "$1")"
}

# chat MAX_TOKENS: a one-message chat request to the server on $port; prints the HTTP status
# and leaves the body in $work/body.
chat() {
  curl -s -o "$work/body" -w "%{http_code}" "http://127.0.0.1:$port/v1/chat/completions" \
    -H "Authorization: Bearer any" -H "content-type: application/json" \
    -d "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":$1}"
}
