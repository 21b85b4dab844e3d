#!/usr/bin/env bash
# Device memory on a real `qmlx serve --device vulkan` (lavapipe), made small with
# QMLX_VULKAN_MEMORY_MB: weights that do not fit end the start with both sizes named; otherwise
# the start-up line reports the batch memory budget the device leaves (its memory less the
# weights and the forward pass's reserve), a request whose state could not fit there is a 503
# that says so, and a small one is served. Exit 77 (skip) without lavapipe.
set -euo pipefail
source "$(dirname "$0")/device_e2e_common.sh"

if QMLX_VULKAN_MEMORY_MB=1 timeout 120 "$qmlx" serve --device vulkan --port "$port" \
    --metrics-port 0 >"$work/fit.log" 2>&1; then
  fail "a 1 MiB device served the model"
fi
grep -q "the weights take 1.4 MiB on .*, which has 1.0 MiB of device memory" "$work/fit.log" ||
  fail "no fit error: $(tail -3 "$work/fit.log")"

QMLX_VULKAN_MEMORY_MB=40 "$qmlx" serve --device vulkan --port "$port" --metrics-port 0 \
  >"$work/serve.log" 2>&1 &
pid=$!
wait_ready "$work/serve.log"
grep -q "batch memory budget: 34 MiB of sequence state (vulkan's 40 MiB less 1 MiB of weights and 4 MiB for the forward pass)" \
  "$work/serve.log" || fail "budget line: $(grep budget "$work/serve.log")"

[ "$(chat 40000)" = 503 ] || fail "40000 tokens: $(cat "$work/body")"
grep -q "more than the 34 MiB batch memory budget (vulkan's 40 MiB less" "$work/body" ||
  fail "503 body: $(cat "$work/body")"
[ "$(chat 5)" = 200 ] || fail "5 tokens: $(cat "$work/body")"
echo "PASS"
