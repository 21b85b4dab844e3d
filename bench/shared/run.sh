#!/usr/bin/env bash
# Restore throughput of the shared tier against the local disk tier and redis-benchmark (the
# physical reference: the same value sizes, raw SET/GET), on a loopback 3-master cluster.
# Usage: bench/shared/run.sh BUILD_DIR
set -euo pipefail
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'bash "$here/../../tests/e2e/shared/redis_cluster.sh" stop "$work/redis"; rm -rf "$work"' EXIT
nodes=$(bash "$here/../../tests/e2e/shared/redis_cluster.sh" start "$work/redis" 3)
"$build/bench/shared/qmlx_shared_tier_bench" "$nodes" "$work/disk"
port=$(cut -d, -f1 <<<"$nodes" | cut -d: -f2)
for size in 262144 6291456; do
  # One connection, one request at a time: the restore path's pattern (-P 1, -c 1).
  redis-benchmark -p "$port" --cluster -c 1 -n 32 -d "$size" -t set,get -q 2>/dev/null |
    sed "s/^/redis-benchmark d=$size  /"
done
