#!/usr/bin/env bash
# Restore throughput of the shared tier against the local disk tier and redis-benchmark (the
# physical reference: the same value sizes, raw SET/GET), on a loopback 3-master cluster.
# Usage: bench/shared/run.sh BUILD_DIR [--tls]   (--tls: the cluster and every client speak TLS)
set -euo pipefail
build=${1:-build}
tls=${2:-}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'bash "$here/../../tests/e2e/shared/redis_cluster.sh" stop "$work/redis"; rm -rf "$work"' EXIT
nodes=$(bash "$here/../../tests/e2e/shared/redis_cluster.sh" start "$work/redis" 3 $tls)
ca=() tls_cli=()
if [[ $tls == --tls ]]; then
  ca=("$work/redis/tls/ca.crt")
  tls_cli=(--tls --cacert "$work/redis/tls/ca.crt")
fi
"$build/bench/shared/qmlx_shared_tier_bench" "$nodes" "$work/disk" "${ca[@]}"
port=$(cut -d, -f1 <<<"$nodes" | cut -d: -f2)
# One connection, one request at a time (the pattern of one restore's reads); MB/s = rps x size.
# Two connections at once for the parallel restore pattern.
for case in "262144 400 1" "6291456 60 1" "6291456 60 2"; do
  read -r size n c <<<"$case"
  redis-benchmark "${tls_cli[@]}" -p "$port" --cluster -c "$c" -n "$n" -d "$size" -t set,get --csv 2>/dev/null |
    awk -F'"' -v size="$size" -v c="$c" '/^"(SET|GET)"/ { printf "redis-benchmark %-4s %10d  %d conn  %8.0f MB/s\n", $2, size, c, $4 * size / 1e6 }'
done
