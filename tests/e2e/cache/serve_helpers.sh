# Shared by the cache e2e scripts (sourced): start and stop one `qmlx serve` on free loopback
# ports, with API key "k". Needs $qmlx; sets $port, $metrics and $server_pid; stops the server
# on exit.
py=/usr/bin/python3
server_pid=""
fail() { echo "FAIL: $*" >&2; exit 1; }
cleanup() { [[ -n $server_pid ]] && kill "$server_pid" 2>/dev/null || true; }
trap cleanup EXIT
source "$(dirname "${BASH_SOURCE[0]}")/../free_ports.sh"  # free_port

wait_healthy() {  # wait_healthy PORT PID LOG: until /health answers 200 (fails if PID exits)
  for _ in $(seq 1 300); do
    [[ $(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$1/health" || true) == 200 ]] &&
      return 0
    kill -0 "$2" 2>/dev/null || { cat "$3" >&2; fail "server exited during start-up"; }
    sleep 0.1
  done
  fail "server not healthy"
}
start_server() {  # start_server MODEL CONFIG LOG [FLAGS...]
  port=$(free_port)
  metrics=$(free_port)
  "$qmlx" serve --model "$1" --cache-config "$2" --port "$port" --metrics-port "$metrics" \
    --api-key k "${@:4}" 2>"$3" &
  server_pid=$!
  wait_healthy "$port" "$server_pid" "$3"
}
stop_server() {
  kill -TERM "$server_pid"
  wait "$server_pid" || fail "server did not exit 0 on SIGTERM"
  server_pid=""
}
