#!/usr/bin/env bash
# The nginx routing of issue 15 (item 6), on loopback: deploy/nginx/qmlx-fleet.conf in front of
# two `qmlx serve` with separate disks and one Redis Cluster. A conversation (Claude Code's
# X-Claude-Code-Session-Id, Codex's session-id) sticks to one server; when that server dies,
# its next turn goes to the other server, which restores it from the shared tier with the
# tokens of a cold server.
# Usage: run_nginx_failover.sh QMLX_BINARY WORK_DIR
set -euo pipefail
qmlx=$1
work=$2
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
rm -rf "$work"
mkdir -p "$work/nginx/logs"
source "$here/../cache/serve_helpers.sh"  # py, fail, free_port, wait_healthy
cluster="$here/redis_cluster.sh"
declare -A pids=() ports=()
nginx_pid=""

cleanup() {
  for name in "${!pids[@]}"; do kill "${pids[$name]}" 2>/dev/null || true; done
  [[ -n $nginx_pid ]] && kill "$nginx_pid" 2>/dev/null || true
  bash "$cluster" stop "$work/redis" || true
}
trap cleanup EXIT

nodes=$(bash "$cluster" start "$work/redis" 3)
nodes_json=$($py -c 'import json,sys; print(json.dumps(sys.argv[1].split(",")))' "$nodes")
"$qmlx" make-model --out "$work/model" --arch qwen3_5 --seed 31 >/dev/null
echo '{"cache": {"memory_prefix_cache": false, "disk_kv_cache": false}}' >"$work/cold.json"
start() {  # start NAME CONFIG_JSON
  ports[$1]=$(free_port)
  echo "$2" >"$work/$1.json"
  "$qmlx" serve --model "$work/model" --cache-config "$work/$1.json" --port "${ports[$1]}" \
    --api-key k 2>"$work/$1.log" &
  pids[$1]=$!
  wait_healthy "${ports[$1]}" "${pids[$1]}" "$work/$1.log"
}
shared_config() {
  echo "{\"cache\": {\"disk_cache_dir\": \"$work/disk-$1\", \"chunk_tokens\": 32, \"fsync\": false,
         \"shared\": {\"nodes\": $nodes_json, \"timeout_ms\": 250}}}"
}

start cold "$(cat "$work/cold.json")"
read -r _ _ _ cold1 < <($py "$here/chat.py" "${ports[cold]}" 1)
read -r _ _ _ cold2 < <($py "$here/chat.py" "${ports[cold]}" 2 "$cold1")
kill "${pids[cold]}"; wait "${pids[cold]}" || true; unset "pids[cold]"
start A "$(shared_config A)"
start B "$(shared_config B)"

# The shipped config, with this test's ports and a private prefix.
lb=$(free_port)
sed -e "s/listen 127.0.0.1:8080;/listen 127.0.0.1:$lb;/" \
    -e "s/127.0.0.1:8181/127.0.0.1:${ports[A]}/" -e "s/127.0.0.1:8182/127.0.0.1:${ports[B]}/" \
    -e "/127.0.0.1:8183/d" \
    "$root/deploy/nginx/qmlx-fleet.conf" >"$work/nginx/fleet.conf"
cat >"$work/nginx/nginx.conf" <<CONF
worker_processes 1;
error_log $work/nginx/logs/error.log;
pid $work/nginx/nginx.pid;
events { worker_connections 64; }
http {
  access_log $work/nginx/logs/access.log;
  client_body_temp_path $work/nginx/body;
  proxy_temp_path $work/nginx/proxy;
  include $work/nginx/fleet.conf;
}
CONF
nginx -t -p "$work/nginx" -c "$work/nginx/nginx.conf" 2>"$work/nginx/test.log" ||
  { cat "$work/nginx/test.log" >&2; fail "nginx rejects the shipped config"; }
nginx -p "$work/nginx" -c "$work/nginx/nginx.conf" -g 'daemon off;' 2>"$work/nginx/stderr.log" &
nginx_pid=$!
for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$lb/health" && break; sleep 0.1; done

requests() { grep -c 'uid=[0-9]* \(HIT\|MISS\)' "$work/$1.log" || true; }

# Stickiness: each conversation's requests all land on one server, for both header styles.
for header in "X-Claude-Code-Session-Id: 0b6f2c1e-claude" "session-id: 7d1e9a44-codex"; do
  before_a=$(requests A); before_b=$(requests B)
  for _ in 1 2 3; do
    read -r status _ _ text < <(QMLX_CHAT_HEADER="$header" $py "$here/chat.py" "$lb" 1)
    [[ $status == 200 && $text == "$cold1" ]] || fail "through nginx: $status $text"
  done
  grown_a=$(($(requests A) - before_a)); grown_b=$(($(requests B) - before_b))
  [[ $grown_a == 3 && $grown_b == 0 || $grown_a == 0 && $grown_b == 3 ]] ||
    fail "$header spread over servers (A +$grown_a, B +$grown_b)"
done
echo "ok stickiness: each conversation id stays on one server"

# Failover: the server holding the Claude conversation dies; its next turn restores on the other.
header="X-Claude-Code-Session-Id: 0b6f2c1e-claude"
before_a=$(requests A)
QMLX_CHAT_HEADER="$header" $py "$here/chat.py" "$lb" 1 >/dev/null
if [[ $(requests A) -gt $before_a ]]; then holder=A other=B; else holder=B other=A; fi
sleep 1  # the holder's writer publishes the checkpoint
kill -9 "${pids[$holder]}"; wait "${pids[$holder]}" 2>/dev/null || true; unset "pids[$holder]"
read -r status cached tier text < <(QMLX_CHAT_HEADER="$header" $py "$here/chat.py" "$lb" 2 "$cold1")
[[ $status == 200 ]] || fail "failover request failed: $status"
[[ $cached -gt 0 && $tier == shared ]] || fail "failover server did not restore from shared: $cached $tier"
[[ $text == "$cold2" ]] || fail "failover answer differs from cold: $text vs $cold2"
echo "ok failover: $holder died, $other restored the conversation from shared ($cached tokens)"
echo "PASS nginx failover"
