#!/usr/bin/env bash
# `qmlx devices` on this machine: lists llvmpipe (lavapipe, which scripts/setup.sh installs)
# and exits 0; without a Vulkan loader it still exits 0 and says so; --device errors name what
# was found; --json is valid JSON. Exit 77 (skip) when the machine has no lavapipe at all.
set -euo pipefail
qmlx="$1"
fail() { echo "FAIL: $*" >&2; exit 1; }

out=$("$qmlx" devices) || fail "qmlx devices exited $?"
echo "$out"
if ! grep -q llvmpipe <<<"$out"; then
  grep -q "^vulkan:" <<<"$out" || fail "no vulkan line"
  echo "SKIP: no lavapipe here (scripts/setup.sh installs mesa-vulkan-drivers)"
  exit 77
fi
grep -q "can run: yes" <<<"$out" || fail "llvmpipe listed but not runnable"

json=$("$qmlx" devices --json) || fail "--json exited $?"
python3 -c '
import json, sys
d = json.load(sys.stdin)["vulkan"]
assert d["status"] == "ok", d
assert any("llvmpipe" in x["name"] and x["can_run"] for x in d["devices"]), d
' <<<"$json" || fail "--json output: $json"

no_loader=$(QMLX_VULKAN_LOADER=/nonexistent/libvulkan.so.1 "$qmlx" devices) ||
  fail "without a loader qmlx devices exited $?"
grep -q "no Vulkan loader (/nonexistent/libvulkan.so.1) found" <<<"$no_loader" ||
  fail "missing-loader message: $no_loader"

if err=$("$qmlx" devices --device vulkan:99 2>&1); then fail "--device vulkan:99 succeeded"; fi
grep -q "no device 99; found: 0: llvmpipe" <<<"$err" || fail "--device error: $err"
if err=$(QMLX_VULKAN_LOADER=/nonexistent/libvulkan.so.1 "$qmlx" devices --device vulkan 2>&1); then
  fail "--device vulkan without a loader succeeded"
fi
grep -q "Vulkan is not available; found: no Vulkan loader" <<<"$err" || fail "no-loader error: $err"

# The forward pass asked of a device that is not there: generate and serve refuse to start,
# naming what was found (never a quiet fall back to the CPU).
model=$(mktemp -d)
trap 'rm -rf "$model"' EXIT
"$qmlx" make-model --out "$model/m" --arch qwen3 >/dev/null 2>&1 || fail "make-model"
if err=$(QMLX_VULKAN_LOADER=/nonexistent/libvulkan.so.1 "$qmlx" generate --model "$model/m" \
         --tokens 1,2,3 --max-tokens 1 --device vulkan 2>&1); then
  fail "generate --device vulkan without a loader succeeded"
fi
grep -q "no Vulkan loader (/nonexistent/libvulkan.so.1) found" <<<"$err" || fail "generate error: $err"
if err=$("$qmlx" generate --model "$model/m" --tokens 1,2,3 --max-tokens 1 --device vulkan:99 2>&1)
then
  fail "generate --device vulkan:99 succeeded"
fi
grep -q "no device 99; found: 0: llvmpipe" <<<"$err" || fail "generate vulkan:99 error: $err"
# ... and where it is there, the tokens are the CPU's (a random model's greedy picks; a near-tie
# could differ, which this seed does not have).
cpu=$("$qmlx" generate --model "$model/m" --tokens 1,2,3 --max-tokens 8 --json 2>/dev/null |
      python3 -c 'import json,sys; print(json.load(sys.stdin)["tokens"])')
gpu=$("$qmlx" generate --model "$model/m" --tokens 1,2,3 --max-tokens 8 --json --device vulkan \
      2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["tokens"])')
[[ "$cpu" == "$gpu" ]] || fail "generate on the device: $gpu, on the CPU: $cpu"

# Validation on: probing must produce no validation messages (they are logged as errors).
log=$(QMLX_VULKAN_VALIDATION=1 "$qmlx" devices 2>&1 >/dev/null)
[[ -z "$log" ]] || fail "stderr with validation on: $log"
echo "PASS"
