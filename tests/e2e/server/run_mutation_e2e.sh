#!/usr/bin/env bash
# HTTP-level mutation test (issue 17): MUTATION_COUNT (default 2000) mutated requests from the
# fuzz seed corpus against a real `qmlx serve` (scripted model, disk cache on); the server never
# dies, every answer is well-formed with status < 500 (or 503), and a normal request still
# succeeds at the end. Usage: run_mutation_e2e.sh QMLX_BINARY WORK_DIR
set -euo pipefail
qmlx=$1
work=$2
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work"
mkdir -p "$work"
source "$here/../cache/serve_helpers.sh"

printf '%s' '<think>mutations</think>Still here.' >"$work/reply.txt"
"$qmlx" make-model --out "$work/model" --script "$work/reply.txt" --arch qwen3_5 >/dev/null
echo "{\"cache\": {\"disk_cache_dir\": \"$work/store\", \"fsync\": false}}" >"$work/cache.json"
# Greedy by default and a small context: the scripted model ends its reply at temperature 0, and
# a mutated request that asks for many tokens stays bounded.
start_server "$work/model" "$work/cache.json" "$work/server.log" --max-body-mb 1 \
  --default-temperature 0 --max-context 1024

$py "$here/http_mutation.py" "$port" k "$here/../../fuzz/corpus/requests" \
  "${MUTATION_COUNT:-2000}" "${MUTATION_SEED:-17}" || {
  kill -0 "$server_pid" 2>/dev/null || echo "the server died; its log ends:" >&2
  tail -20 "$work/server.log" >&2
  fail "mutated requests"
}
kill -0 "$server_pid" 2>/dev/null || fail "the server exited"
stop_server
echo "ok mutation: server alive, no 5xx, normal request served"
