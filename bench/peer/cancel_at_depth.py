#!/usr/bin/env python3
"""Cancellation within a step at depth (issue 31, item 2): `qmlx serve` (its cache in a fresh
folder, so the prompt prefills cold) gets a LONG-token non-streaming completion; its client closes the
connection after LEAVE_S seconds, deep into the prefill. Reports how long after the close the
request's one log line (status=499) was written, the prefill position it reached, the
checkpoint the cache kept there, and the step bound it ran under. Prompts are the pseudo-random ids of the other peer benchmarks.
Usage: cancel_at_depth.py QMLX_BINARY MODEL [--long 24576] [--leave-s 230] [--max-step-ms 500]
       [--threads 2]
"""
import argparse
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../tests/e2e"))
from e2e_support import free_port  # noqa: E402


def prompt_ids(length, seed):
    # The same stream as bench/peer/prompt_streams.mjs promptOf (an LCG over 256 ids).
    ids = []
    for _ in range(length):
        seed = (seed * 1103515245 + 12345) % 2147483648
        ids.append(seed % 256)
    return ids


def main():
    p = argparse.ArgumentParser()
    p.add_argument("qmlx")
    p.add_argument("model")
    p.add_argument("--long", type=int, default=24576)
    p.add_argument("--leave-s", type=float, default=230)
    p.add_argument("--max-step-ms", type=int, default=500)
    p.add_argument("--threads", type=int, default=2)
    a = p.parse_args()
    work = tempfile.mkdtemp(prefix="qmlx-cancel-")
    port = free_port()
    log_path = os.path.join(work, "serve.log")
    log = open(log_path, "w")
    server = subprocess.Popen(
        [a.qmlx, "serve", "--model", a.model, "--port", str(port), "--threads", str(a.threads),
         "--max-context", str(a.long + 1024), "--max-step-ms", str(a.max_step_ms)],
        stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ, QMLX_HOME=work))
    try:
        for _ in range(1200):
            try:
                with urllib.request.urlopen("http://127.0.0.1:%d/health" % port, timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                time.sleep(0.5)
        body = json.dumps({"prompt": prompt_ids(a.long, 99), "max_tokens": 1, "temperature": 0})
        head = ("POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer bench\r\n"
                "Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body))
        sock = socket.create_connection(("127.0.0.1", port))
        sock.sendall(head.encode() + body.encode())
        time.sleep(a.leave_s)
        sock.close()
        closed = time.time()
        line = None
        for _ in range(600):
            with open(log_path) as f:
                for text in f:
                    if "status=499" in text and " prefill=" in text:
                        line = text
            if line:
                break
            time.sleep(0.05)
        logged = time.time()
        if line is None:
            sys.exit("no status=499 line within 30 s of the close")
        prefill = int(re.search(r" prefill=(\d+)", line).group(1))
        ran = re.search(r" ran=([\d.]+)ms", line).group(1)
        checkpoint = re.search(r" checkpoint=(\S+)", line).group(1)
        print(json.dumps({"long_prompt_tokens": a.long, "left_after_s": a.leave_s,
                          "max_step_ms": a.max_step_ms, "prefilled_when_stopped": prefill,
                          "ran_ms": float(ran), "checkpoint": checkpoint,
                          "stopped_after_close_ms": round((logged - closed) * 1000)}))
    finally:
        server.terminate()
        server.wait(30)


if __name__ == "__main__":
    main()
