# Servers and a cluster for the shared-tier e2e scripts (sourced; they set qmlx, work, here and
# source ../cache/serve_helpers.sh first). Servers are named; each has its own port, metrics
# port and log ($work/NAME.log); every server and the cluster in $work/redis stop on exit.
#   start NAME MODEL CONFIG   start `qmlx serve` (API key k) and wait until it is healthy
#   stop NAME                 SIGTERM, and fail unless it exits 0
#   chat NAME TURN [REPLY1]   one chat.py turn against it
#   metric NAME FAMILY        a metric's value (0 when absent)
#   wait_published NAME       until its writer has published something to the shared tier
cluster="$here/redis_cluster.sh"
declare -A pids=() ports=() metrics=()

cleanup() {
  for name in "${!pids[@]}"; do kill "${pids[$name]}" 2>/dev/null || true; done
  bash "$cluster" stop "$work/redis" || true
}
trap cleanup EXIT

start() {  # start NAME MODEL CONFIG
  local name=$1
  ports[$name]=$(free_port)
  metrics[$name]=$(free_port)
  "$qmlx" serve --model "$2" --cache-config "$3" --port "${ports[$name]}" \
    --metrics-port "${metrics[$name]}" --api-key k 2>"$work/$name.log" &
  pids[$name]=$!
  wait_healthy "${ports[$name]}" "${pids[$name]}" "$work/$name.log"
}
stop() {
  kill -TERM "${pids[$1]}"
  wait "${pids[$1]}" || fail "$1 did not exit 0 on SIGTERM"
  unset "pids[$1]"
}
chat() { $py "$here/chat.py" "${ports[$1]}" "${@:2}"; }
metric() {
  curl -s "http://127.0.0.1:${metrics[$1]}/metrics" |
    awk -v m="$2" '$1 == m { print $2; found = 1 } END { if (!found) print 0 }'
}
wait_published() {
  for _ in $(seq 1 100); do
    [[ $(metric "$1" 'qmlx_shared_tier_bytes_total{direction="written"}') != 0 ]] && return 0
    sleep 0.1
  done
  fail "$1 published nothing to the shared tier"
}

# The cold references: turns 1 and 2 from a server of MODEL with no cache, into $cold1, $cold2.
cold_references() {
  local status
  echo '{"cache": {"memory_prefix_cache": false, "disk_kv_cache": false}}' >"$work/cold.json"
  start cold "$1" "$work/cold.json"
  read -r status _ _ cold1 < <(chat cold 1)
  [[ $status == 200 ]] || fail "cold turn 1: $status"
  read -r status _ _ cold2 < <(chat cold 2 "$cold1")
  [[ $status == 200 ]] || fail "cold turn 2: $status"
  stop cold
}

# turn_2_on_another MODEL CONFIG_A CONFIG_B: turn 1 on server A, then turn 2 on server B (an
# empty disk) must HIT from the shared tier with the cold answer and say tier=shared in its log
# line; leaves A and B running and the restored token count in $cached.
turn_2_on_another() {
  local status tier text
  start A "$1" "$2"
  read -r status cached _ text < <(chat A 1)
  [[ $status == 200 && $cached == 0 && $text == "$cold1" ]] ||
    fail "A turn 1: $status $cached $text vs $cold1"
  wait_published A
  start B "$1" "$3"
  read -r status cached tier text < <(chat B 2 "$cold1")
  [[ $status == 200 && $cached -gt 0 && $tier == shared ]] ||
    fail "B turn 2 not from shared: $status $cached $tier"
  [[ $text == "$cold2" ]] || fail "B turn 2 answer differs from cold: $text vs $cold2"
  grep -Eq "HIT cached=$cached prefill=[0-9]+ .*tier=shared" "$work/B.log" ||
    fail "B log line lacks tier=shared"
}
