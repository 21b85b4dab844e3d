#!/usr/bin/env bash
# --cpu-moe / --n-cpu-moe on a real `qmlx serve` / `qmlx generate --device vulkan` (lavapipe):
# a MoE model whose routed experts (12 MiB) do not fit a device made small with
# QMLX_VULKAN_MEMORY_MB fails to start with a fit error that suggests --cpu-moe; with --cpu-moe
# it starts, says how many layers' experts stay on the CPU and how many bytes that keeps off the
# device, and answers a chat request. generate takes --n-cpu-moe N, and with --device cpu the
# flags are accepted and do nothing (no such line). Exit 77 (skip) without a Vulkan device.
set -euo pipefail
source "$(dirname "$0")/device_e2e_common.sh"
# 4 layers x 16 experts x 3 matrices of 256 x 64 floats: 12.0 MiB of routed experts.
"$qmlx" make-model --out "$work/m" --arch qwen3_5_moe --experts 16 --moe-intermediate 256 \
  >/dev/null
line="the routed experts of 4 of 4 MoE layers stay in host memory and run on the CPU, keeping 12.0 MiB off the device"

if QMLX_VULKAN_MEMORY_MB=8 timeout 120 "$qmlx" serve --model "$work/m" --device vulkan \
    --port "$port" --metrics-port 0 >"$work/fit.log" 2>&1; then
  fail "the experts fitted an 8 MiB device"
fi
grep -q "or --cpu-moe / --n-cpu-moe N" "$work/fit.log" ||
  fail "the fit error does not suggest --cpu-moe: $(tail -3 "$work/fit.log")"

QMLX_VULKAN_MEMORY_MB=8 "$qmlx" serve --model "$work/m" --device vulkan --cpu-moe \
  --port "$port" --metrics-port 0 >"$work/serve.log" 2>&1 &
pid=$!
wait_ready "$work/serve.log"
grep -qF "$line" "$work/serve.log" || fail "no host experts line: $(grep -i expert "$work/serve.log")"
code=$(chat 5)
[ "$code" = 200 ] || fail "chat: $code $(cat "$work/body")"
grep -q '"completion_tokens":5' "$work/body" || fail "chat body: $(cat "$work/body")"

"$qmlx" generate --model "$work/m" --device vulkan --n-cpu-moe 1 --tokens 1,2,3 \
  --max-tokens 3 >"$work/generate.log" 2>&1 || fail "generate: $(tail -3 "$work/generate.log")"
grep -qF "the routed experts of 1 of 4 MoE layers" "$work/generate.log" ||
  fail "generate's line: $(cat "$work/generate.log")"
"$qmlx" generate --model "$work/m" --cpu-moe --tokens 1,2,3 --max-tokens 3 \
  >"$work/cpu.log" 2>&1 || fail "generate on the CPU: $(tail -3 "$work/cpu.log")"
if grep -q "routed experts of" "$work/cpu.log"; then fail "--cpu-moe did something on the CPU"; fi
echo "PASS"
