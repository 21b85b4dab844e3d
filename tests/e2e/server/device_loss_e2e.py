#!/usr/bin/env python3
"""A GPU lost mid-service (issue 27): `qmlx serve --device vulkan` on lavapipe answers a request,
then the device is lost (simulated: the file $QMLX_VULKAN_LOSE_DEVICE_FILE appears). The next
requests get 503 (retry), never a hang or a 500; the log says what happened in one line per
request; /health still answers. Exit 77 (skip) where no Vulkan device can run qmlx.
Usage: device_loss_e2e.py QMLX_BINARY WORK_DIR
"""
import http.client
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from e2e_support import fail, free_port, wait_healthy  # noqa: E402

QMLX, WORK = sys.argv[1], sys.argv[2]
KEY = "loss-key"

if subprocess.run([QMLX, "devices", "--device", "vulkan"], capture_output=True).returncode != 0:
    print("SKIP: no Vulkan device here")
    sys.exit(77)

shutil.rmtree(WORK, ignore_errors=True)
os.makedirs(WORK)
model = os.path.join(WORK, "model")
subprocess.run([QMLX, "make-model", "--out", model, "--arch", "qwen3"], check=True,
               capture_output=True)
trigger = os.path.join(WORK, "lose-device")
port, metrics_port = free_port(), free_port()
log_path = os.path.join(WORK, "server.log")
env = dict(os.environ, QMLX_VULKAN_LOSE_DEVICE_FILE=trigger)
with open(os.path.join(WORK, "cache.json"), "w") as f:
    json.dump({"cache": {"memory_prefix_cache": False, "disk_kv_cache": False}}, f)
with open(log_path, "w") as log:
    server = subprocess.Popen(
        [QMLX, "serve", "--model", model, "--port", str(port), "--metrics-port",
         str(metrics_port), "--api-key", KEY, "--device", "vulkan", "--cache-config",
         os.path.join(WORK, "cache.json")], stdout=log, stderr=subprocess.STDOUT, env=env)
try:
    wait_healthy(port, server, log_path)

    def complete(timeout=120):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        start = time.monotonic()
        conn.request("POST", "/v1/completions",
                     json.dumps({"prompt": [1, 2, 3, 4], "max_tokens": 4, "temperature": 0}),
                     {"Content-Type": "application/json", "Authorization": "Bearer " + KEY})
        res = conn.getresponse()
        return res.status, res.read().decode(), time.monotonic() - start

    status, body, _ = complete()
    if status != 200:
        fail("before the loss: status %d %s" % (status, body[:300]))
    open(trigger, "w").close()
    for attempt in range(2):
        status, body, seconds = complete()
        if status != 503:
            fail("after the loss, attempt %d: status %d, not 503: %s" % (attempt, status, body[:300]))
        if "device lost" not in body:
            fail("the 503 does not say the device was lost: " + body[:300])
        if seconds > 30:
            fail("the 503 took %.1f s" % seconds)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", "/health")
    if conn.getresponse().status != 200:
        fail("/health after the loss")
    with open(log_path) as f:
        lines = [l for l in f if "generation failed: status=503" in l]
    if len(lines) != 2 or not all("device lost" in l for l in lines):
        fail("log lines of the failed requests: %r" % lines)
    print("PASS: 200, then two 503s naming the lost device, /health answers")
finally:
    server.terminate()
    server.wait(timeout=30)
