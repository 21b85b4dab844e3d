#!/usr/bin/env python3
"""Aggregate decode throughput of `qmlx serve --parallel N` (issue 18): for each concurrency C,
starts a server with --parallel C, sends C streaming completions at once (short distinct story
prompts that keep the model talking, temperature 0, max_tokens --tokens), and reports the
streamed tokens of all of them over the whole run's wall time, and the rate while all C were
decoding together (tokens between the last first token and the first finish, over that span).
Usage: decode_throughput.py QMLX_BINARY MODEL_DIR [--concurrency 1,2,4,8] [--tokens 64]
       [--threads 0]
"""
import argparse
import http.client
import json
import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../tests/e2e"))
from e2e_support import free_port, wait_healthy  # noqa: E402


def stream(port, prompt, tokens, out):
    body = {"model": "m", "stream": True, "temperature": 0, "max_tokens": tokens,
            "prompt": prompt}
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    conn.request("POST", "/v1/completions", json.dumps(body),
                 {"Content-Type": "application/json", "Authorization": "Bearer bench"})
    res = conn.getresponse()
    times = []
    for raw in res:
        line = raw.decode().strip()
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        chunk = json.loads(line[6:])
        if chunk.get("choices") and chunk["choices"][0].get("text"):
            times.append(time.monotonic())
    out.append(times)


def run(qmlx, model, concurrency, tokens, threads):
    port = free_port()
    args = [qmlx, "serve", "--model", model, "--port", str(port), "--parallel", str(concurrency),
            "--max-context", "4096"]
    if threads:
        args += ["--threads", str(threads)]
    log_path = "/tmp/qmlx-parallel-bench-%d.log" % concurrency
    proc = subprocess.Popen(args, stderr=open(log_path, "w"))
    try:
        wait_healthy(port, proc, log_path)
        stream(port, "Warm up.", 4, [])
        results = []
        start = time.monotonic()
        workers = [threading.Thread(target=stream, args=(
            port, "Story %d: Once upon a time, in a village by the sea," % i, tokens, results))
            for i in range(concurrency)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        wall = time.monotonic() - start
        total = sum(len(t) for t in results)
        last_first = max(t[0] for t in results)
        first_end = min(t[-1] for t in results)
        together = sum(sum(1 for x in t if last_first <= x <= first_end) for t in results)
        span = first_end - last_first
        steady = together / span if span > 0 else float("nan")
        print("concurrency %d: %d tokens in %.2fs (%.1f tok/s overall), %.1f tok/s while all "
              "%d decoded together" % (concurrency, total, wall, total / wall, steady, concurrency),
              flush=True)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("qmlx")
    p.add_argument("model")
    p.add_argument("--concurrency", default="1,2,4,8")
    p.add_argument("--tokens", type=int, default=64)
    p.add_argument("--threads", type=int, default=0)
    a = p.parse_args()
    for c in [int(x) for x in a.concurrency.split(",")]:
        run(a.qmlx, a.model, c, a.tokens, a.threads)


if __name__ == "__main__":
    main()
