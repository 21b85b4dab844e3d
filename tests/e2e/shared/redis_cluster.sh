#!/usr/bin/env bash
# A throwaway Redis Cluster on loopback for the shared-tier tests (unit and e2e):
#   redis_cluster.sh start DIR [MASTERS] [--tls]
#                                          starts MASTERS (default 3) redis-server processes in
#                                          cluster mode, joins them with `redis-cli --cluster
#                                          create`, waits for cluster_state:ok and prints the
#                                          node list "127.0.0.1:P1,127.0.0.1:P2,..."
#                                          --tls: the nodes speak TLS only (clients and cluster
#                                          bus) with a throwaway CA made in DIR/tls (see make_certs)
#   redis_cluster.sh kill DIR I            stops node I (0-based) at once (SIGKILL)
#   redis_cluster.sh stop DIR              stops every node this DIR started
# Nodes keep no data on disk (--save '' --appendonly no); ports are chosen free at start.
set -euo pipefail

cmd=${1:?usage: redis_cluster.sh start|kill|stop DIR [ARG]}
dir=${2:?DIR missing}

port_free() { ! (echo >/dev/tcp/127.0.0.1/"$1") 2>/dev/null; }

# DIR/tls: ca.crt (the CA that signs the nodes' certificate), server.crt/.key (for 127.0.0.1,
# localhost and redis.test), client.crt/.key (signed by the CA: mutual TLS), and other-ca.crt
# with other-client.crt/.key (a CA the nodes do not trust, and a client certificate of it).
make_certs() {
  local t=$dir/tls
  mkdir -p "$t"
  local key=(-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes)
  openssl req -x509 "${key[@]}" -days 2 -subj "/CN=qmlx test CA" \
    -keyout "$t/ca.key" -out "$t/ca.crt" 2>/dev/null
  openssl req -x509 "${key[@]}" -days 2 -subj "/CN=qmlx other CA" \
    -keyout "$t/other-ca.key" -out "$t/other-ca.crt" 2>/dev/null
  sign() { # NAME CA SUBJECT EXTENSIONS
    openssl req "${key[@]}" -subj "$3" -keyout "$t/$1.key" -out "$t/$1.csr" 2>/dev/null
    printf '%s\n' "$4" >"$t/$1.ext"
    openssl x509 -req -in "$t/$1.csr" -CA "$t/$2.crt" -CAkey "$t/$2.key" -CAcreateserial \
      -days 2 -extfile "$t/$1.ext" -out "$t/$1.crt" 2>/dev/null
  }
  sign server ca "/CN=redis.test" \
    $'subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:redis.test\nextendedKeyUsage=serverAuth,clientAuth'
  sign client ca "/CN=qmlx client" "extendedKeyUsage=clientAuth"
  sign other-client other-ca "/CN=qmlx other client" "extendedKeyUsage=clientAuth"
}

# One try at starting the cluster on fresh ports; fails (leaving its nodes running for stop_all)
# when a node never answers or `--cluster create` fails: a port checked free can still be taken
# before redis-server binds it (the bus ports lie in the kernel's ephemeral range).
try_start() {
  local masters=$1 tls=$2 tries base p i up nodes=() listen=()
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
    listen=(--port "$p")
    if [[ $tls == --tls ]]; then
      listen=(--port 0 --tls-port "$p" --tls-cluster yes --tls-replication yes
        --tls-auth-clients optional --tls-ca-cert-file "$dir/tls/ca.crt"
        --tls-cert-file "$dir/tls/server.crt" --tls-key-file "$dir/tls/server.key")
    fi
    redis-server "${listen[@]}" --bind 127.0.0.1 --cluster-enabled yes \
      --cluster-config-file "$dir/nodes-$p.conf" --dir "$dir" --save '' --appendonly no \
      --daemonize yes --pidfile "$dir/node-$i.pid" --logfile "$dir/node-$i.log" >/dev/null
    echo "$p" >"$dir/node-$i.port"
  done
  for ((i = 0; i < masters; i++)); do
    p=${nodes[$i]#127.0.0.1:}
    up=no
    for _ in $(seq 100); do
      "${cli[@]}" -p "$p" ping >/dev/null 2>&1 && up=yes && break
      sleep 0.05
    done
    if [[ $up == no ]]; then
      echo "redis_cluster.sh: node $i (port $p) did not start: $(tail -2 "$dir/node-$i.log" 2>/dev/null)" >&2
      return 1
    fi
  done
  if ! "${cli[@]}" --cluster create "${nodes[@]}" --cluster-replicas 0 --cluster-yes \
    >"$dir/create.log" 2>&1; then
    echo "redis_cluster.sh: cluster create failed: $(tail -3 "$dir/create.log")" >&2
    return 1
  fi
  for ((i = 0; i < masters; i++)); do
    p=${nodes[$i]#127.0.0.1:}
    for _ in $(seq 200); do
      "${cli[@]}" -p "$p" cluster info 2>/dev/null | grep -q 'cluster_state:ok' && break
      sleep 0.05
    done
  done
  local IFS=,
  echo "${nodes[*]}"
}

start() {
  local masters=${1:-3} tls=${2:-} attempt
  cli=(redis-cli)
  mkdir -p "$dir"
  if [[ $tls == --tls ]]; then
    make_certs
    cli+=(--tls --cacert "$dir/tls/ca.crt")
  fi
  for attempt in 1 2 3; do
    try_start "$masters" "$tls" && return 0
    stop_all
    rm -f "$dir"/nodes-*.conf "$dir"/node-*.port
  done
  echo "redis_cluster.sh: no cluster after 3 attempts" >&2
  return 1
}

stop_all() {
  local pidfile i
  for pidfile in "$dir"/node-*.pid; do
    [[ -f $pidfile ]] || continue
    i=${pidfile##*/node-}
    kill_node "${i%.pid}"
  done
}

kill_node() {
  local pidfile="$dir/node-$1.pid"
  [[ -f $pidfile ]] || return 0
  kill -9 "$(cat "$pidfile")" 2>/dev/null || true
  rm -f "$pidfile"
}

case $cmd in
  start) start "${3:-3}" "${4:-}" ;;
  kill) kill_node "${3:?node index missing}" ;;
  stop) stop_all ;;
  *) echo "unknown command $cmd" >&2; exit 2 ;;
esac
