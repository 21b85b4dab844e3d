#!/usr/bin/env bash
# A throwaway Redis Cluster on loopback for the shared-tier tests (unit and e2e):
#   redis_cluster.sh start DIR [MASTERS]   starts MASTERS (default 3) redis-server processes in
#                                          cluster mode, joins them with `redis-cli --cluster
#                                          create`, waits for cluster_state:ok and prints the
#                                          node list "127.0.0.1:P1,127.0.0.1:P2,..."
#   redis_cluster.sh kill DIR I            stops node I (0-based) at once (SIGKILL)
#   redis_cluster.sh stop DIR              stops every node this DIR started
# Nodes keep no data on disk (--save '' --appendonly no); ports are chosen free at start.
set -euo pipefail

cmd=${1:?usage: redis_cluster.sh start|kill|stop DIR [ARG]}
dir=${2:?DIR missing}

port_free() { ! (echo >/dev/tcp/127.0.0.1/"$1") 2>/dev/null; }

start() {
  local masters=${1:-3} tries base p i nodes=()
  mkdir -p "$dir"
  for tries in 1 2 3 4 5 6 7 8; do
    base=$((20000 + (RANDOM % 1500) * 10))
    nodes=()
    for ((i = 0; i < masters; i++)); do
      p=$((base + i))
      port_free "$p" && port_free $((p + 10000)) || continue 2
      nodes+=("127.0.0.1:$p")
    done
    break
  done
  for ((i = 0; i < masters; i++)); do
    p=${nodes[$i]#127.0.0.1:}
    redis-server --port "$p" --bind 127.0.0.1 --cluster-enabled yes \
      --cluster-config-file "$dir/nodes-$p.conf" --dir "$dir" --save '' --appendonly no \
      --daemonize yes --pidfile "$dir/node-$i.pid" --logfile "$dir/node-$i.log" >/dev/null
    echo "$p" >"$dir/node-$i.port"
  done
  for ((i = 0; i < masters; i++)); do
    p=${nodes[$i]#127.0.0.1:}
    for _ in $(seq 100); do
      redis-cli -p "$p" ping >/dev/null 2>&1 && break
      sleep 0.05
    done
  done
  redis-cli --cluster create "${nodes[@]}" --cluster-replicas 0 --cluster-yes >"$dir/create.log" 2>&1
  for ((i = 0; i < masters; i++)); do
    p=${nodes[$i]#127.0.0.1:}
    for _ in $(seq 200); do
      redis-cli -p "$p" cluster info 2>/dev/null | grep -q 'cluster_state:ok' && break
      sleep 0.05
    done
  done
  local IFS=,
  echo "${nodes[*]}"
}

kill_node() {
  local pidfile="$dir/node-$1.pid"
  [[ -f $pidfile ]] || return 0
  kill -9 "$(cat "$pidfile")" 2>/dev/null || true
  rm -f "$pidfile"
}

case $cmd in
  start) start "${3:-3}" ;;
  kill) kill_node "${3:?node index missing}" ;;
  stop)
    for pidfile in "$dir"/node-*.pid; do
      [[ -f $pidfile ]] || continue
      i=${pidfile##*/node-}
      kill_node "${i%.pid}"
    done
    ;;
  *) echo "unknown command $cmd" >&2; exit 2 ;;
esac
