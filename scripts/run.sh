#!/usr/bin/env bash
# Builds qmlx and starts it on the built-in demo model (or pass your own flags, e.g.
# --model DIR). Until the server lands this runs a generation on the demo model.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$(nproc)"
if ./build/bin/qmlx --help | grep -q '^  serve '; then
  exec ./build/bin/qmlx serve "$@"
fi
exec ./build/bin/qmlx generate --prompt "Hello" --max-tokens 32 "$@"
