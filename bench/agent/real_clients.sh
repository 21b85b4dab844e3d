#!/usr/bin/env bash
# Real coding agents turn by turn against `qmlx serve`, prefix cache on and off: prompt tokens,
# cached, prefill and TTFT of every request (bench/agent/real_clients.mjs). Needs the build
# (build/bin/qmlx) and the pinned clients (scripts/setup.sh). Runs in a loopback-only network
# namespace where the kernel allows one.
# Usage: bench/agent/real_clients.sh [--model DIR] [--clients qwen,opencode,claude,codex]
#                                    [--turns N] [--json FILE] [--qmlx BIN]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if unshare --user --map-root-user --net true 2>/dev/null && command -v ip >/dev/null; then
  exec unshare --user --map-root-user --net \
    bash -c 'ip link set lo up && exec node "$0" "$@"' "$here/real_clients.mjs" "$@"
fi
exec node "$here/real_clients.mjs" "$@"
