#!/usr/bin/env python3
"""Steps bounded in time, cancellation within a step, one honest log line (issue 31), through
`qmlx serve --parallel 2 --max-step-ms 150` on a model big enough that one prefill chunk takes
seconds here:
- the start-up line shows max_step_ms and the prefill rate it measured at 2k and 32k;
- a short streamed request sent while a long prompt prefills cold gets its tokens at gaps well
  under one chunk's time (the bound), before the long prefill ends;
- a non-streaming client that leaves mid-prefill stops its prefill within about one step: its one
  log line says status=499, the tokens it prefilled (> 0), the interrupted checkpoint the cache
  left there and how long it ran; the metrics count those prefilled tokens.
Usage: step_bound_e2e.py QMLX_BINARY WORK_DIR
"""
import http.client
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from e2e_support import fail, free_port, metric, wait_healthy  # noqa: E402

QMLX, WORK = sys.argv[1], sys.argv[2]
KEY = "step-key"
MAX_STEP_MS = 150
CHUNK = 2048  # the engine's prompt tokens per step without a time bound (a dense model)


def prompt_ids(length, seed):
    ids = []
    for _ in range(length):
        seed = (seed * 1103515245 + 12345) % 2147483648
        ids.append(seed % 256)
    return ids


def post(port, body, timeout):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    conn.request("POST", "/v1/completions", json.dumps(body),
                 {"Content-Type": "application/json", "Authorization": "Bearer " + KEY})
    return conn, conn.getresponse()


def stream_times(port, ids, max_tokens):
    """Streams a completion; returns the arrival time of each chunk with text."""
    conn, res = post(port, {"prompt": ids, "max_tokens": max_tokens, "temperature": 0,
                            "stream": True}, 600)
    if res.status != 200:
        fail("short request: status %d %s" % (res.status, res.read()[:200]))
    times = []
    for raw in res:
        line = raw.decode().strip()
        if line == "data: [DONE]":
            break
        if line.startswith("data: "):
            chunk = json.loads(line[6:])
            if any(c.get("text") for c in chunk.get("choices", [])):
                times.append(time.monotonic())
    conn.close()
    return times



def main():
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    model = os.path.join(WORK, "model")
    # Dense, 4-bit: a 2,048-token chunk takes seconds on two cores, one decode step far less.
    subprocess.run([QMLX, "make-model", "--out", model, "--arch", "qwen3_5", "--layout", "mlx",
                    "--bits", "4", "--hidden", "1024", "--layers", "8", "--heads", "8",
                    "--kv-heads", "2", "--head-dim", "128", "--linear-key-heads", "8",
                    "--linear-value-heads", "8", "--linear-key-dim", "128",
                    "--linear-value-dim", "128", "--intermediate", "4096"], check=True,
                   stdout=subprocess.DEVNULL)
    cache_config = os.path.join(WORK, "cache.json")
    with open(cache_config, "w") as f:
        json.dump({"cache": {"disk_cache_dir": os.path.join(WORK, "store"), "fsync": False}}, f)
    port, metrics_port = free_port(), free_port()
    log_path = os.path.join(WORK, "serve.log")
    log = open(log_path, "w")
    server = subprocess.Popen(
        [QMLX, "serve", "--model", model, "--port", str(port), "--metrics-port", str(metrics_port),
         "--api-key", KEY, "--parallel", "2", "--max-step-ms", str(MAX_STEP_MS),
         "--cache-config", cache_config, "--threads", "2"], stderr=log)
    try:
        wait_healthy(port, server, log_path)
        with open(log_path) as f:
            ready = [l for l in f if "ready:" in l]
        m = re.search(r"max_step_ms=(\d+) prefill \u2248 (\d+) tok/s at 2k, (\d+) at 32k",
                      ready[0] if ready else "")
        if not m or int(m.group(1)) != MAX_STEP_MS:
            fail("the start-up line lacks max_step_ms and the prefill rate: %s" % ready)
        at_2k, at_32k = int(m.group(2)), int(m.group(3))
        if not at_2k > at_32k > 0:
            fail("prefill rates %d at 2k, %d at 32k: deep tokens must cost more" % (at_2k, at_32k))
        chunk_seconds = CHUNK / at_2k
        print("ok: ready line: max_step_ms=%d, prefill ~%d tok/s at 2k (a %d-token chunk: %.1f s), "
              "%d at 32k" % (MAX_STEP_MS, at_2k, CHUNK, chunk_seconds, at_32k))
        if chunk_seconds < 2.5:
            fail("this machine prefills too fast for the check (a chunk takes %.1f s): enlarge "
                 "the model" % chunk_seconds)
        long_tokens = int(at_2k * 12)  # about 12 s of prefill

        # 1. A short request while a long prompt prefills cold.
        long_end = {}
        def long_request():
            conn, res = post(port, {"prompt": prompt_ids(long_tokens, 99), "max_tokens": 1,
                                    "temperature": 0}, 600)
            res.read()
            conn.close()
            long_end["t"] = time.monotonic()
        t = threading.Thread(target=long_request)
        t.start()
        time.sleep(2.0)
        times = stream_times(port, prompt_ids(32, 7), 12)
        t.join()
        gaps = [b - a for a, b in zip(times, times[1:])]
        if len(times) < 2 or times[-1] >= long_end["t"]:
            fail("the short request did not decode while the long one prefilled (%d tokens)"
                 % len(times))
        # Without the bound a gap is a whole chunk (chunk_seconds); with it, about one step.
        bound = min(1.2, chunk_seconds / 2)
        if max(gaps) > bound:
            fail("a decode gap of %.2f s beside the prefill (bound %.2f s; a chunk takes %.1f s)"
                 % (max(gaps), bound, chunk_seconds))
        print("ok: %d tokens beside a %d-token prefill, gaps median %.0f ms, max %.0f ms"
              % (len(times), long_tokens, sorted(gaps)[len(gaps) // 2] * 1000, max(gaps) * 1000))

        # 2. A non-streaming client that leaves mid-prefill.
        prefilled_before = metric(metrics_port, "qmlx_prefill_tokens_total")
        sock = socket.create_connection(("127.0.0.1", port))
        body = json.dumps({"prompt": prompt_ids(long_tokens, 1234), "max_tokens": 1,
                           "temperature": 0})
        sock.sendall(("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
                      "\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\n\r\n%s"
                      % (KEY, len(body), body)).encode())
        time.sleep(3.0)
        sock.close()
        left = time.monotonic()
        line = None
        while time.monotonic() - left < 30 and line is None:
            with open(log_path) as f:
                lines = [l for l in f if "status=499" in l]
            line = lines[0] if lines else None
            time.sleep(0.05)
        if line is None:
            fail("no status=499 line within 30 s of the client leaving")
        uid = re.search(r"uid=(\d+)", line).group(1)
        fields = dict(re.findall(r" (\w+)=(\S+)", line))
        prefill, ran = int(fields["prefill"]), float(fields["ran"].rstrip("ms"))
        checkpoint = fields.get("checkpoint", "")
        if prefill <= 0 or prefill >= long_tokens:
            fail("the cancelled request's line says prefill=%d: %s" % (prefill, line))
        if checkpoint != "interrupted@%d" % (int(fields["cached"]) + prefill):
            fail("the line does not name the interrupted checkpoint at the prefilled position: "
                 + line)
        # Left after 3 s; heard within one 250 ms poll; stopped at the next step's end. Without
        # cancellation within a step the prefill ran on to the end of a 1,024-token chunk.
        if ran > (3.0 + 0.25 + 1.0) * 1000:
            fail("the prefill ran %.0f ms after the client sent (left at 3 s): %s" % (ran, line))
        with open(log_path) as f:
            own = [l for l in f if re.search(r"uid=%s [A-Z]" % uid, l) or
                   re.search(r"uid=%s POST" % uid, l)]
        if len(own) != 1:
            fail("uid=%s has %d request lines, want one: %s" % (uid, len(own), own))
        deadline = time.monotonic() + 10
        while (metric(metrics_port, "qmlx_prefill_tokens_total") - prefilled_before < prefill
               and time.monotonic() < deadline):
            time.sleep(0.05)
        counted = metric(metrics_port, "qmlx_prefill_tokens_total") - prefilled_before
        if counted < prefill:
            fail("the metrics counted %d prefilled tokens of the cancelled request's %d"
                 % (counted, prefill))
        print("ok: a client that left after 3 s: %s" % line.strip())
    finally:
        server.terminate()
        server.wait(timeout=30)
    print("PASS")


main()
