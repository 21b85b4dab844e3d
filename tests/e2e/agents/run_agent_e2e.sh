#!/usr/bin/env bash
# Runs one real coding agent's e2e test (agent_e2e.mjs, or the script $AGENT_TEST names). Where the kernel lets an unprivileged
# user make namespaces, the server, the proxies and the client run in a fresh network namespace
# whose only interface is loopback, so even traffic that ignores the proxy settings cannot leave
# the machine (the egress trap still records what honours them).
# Usage: run_agent_e2e.sh QMLX_BINARY WORK_DIR AGENTS_NODE_MODULES CLIENT
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
test_script=$here/${AGENT_TEST:-agent_e2e.mjs}
if [[ ! -x $3/.bin/$4 ]]; then
  echo "SKIP: $4 is not installed in $3 (run scripts/setup.sh)"
  exit 77
fi
if unshare --user --map-root-user --net true 2>/dev/null && command -v ip >/dev/null; then
  echo "running in a network namespace with loopback only"
  exec unshare --user --map-root-user --net \
    bash -c 'ip link set lo up && exec node "$0" "$@"' "$test_script" "$@"
fi
echo "no network namespace available: relying on the proxy settings and the egress trap"
exec node "$test_script" "$@"
