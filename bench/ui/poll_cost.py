#!/usr/bin/env python3
"""What open status pages cost decode (issue 30): one `qmlx serve`, a streamed generation's
decode rate with no page open and with --tabs pages polling as the page does (GET
/admin/ui/status?since=<last seq> once a second, /admin/cache/snapshots every 5 s; each tab's
first poll takes the whole history), alternating off/on for --rounds rounds so drift hits both
alike. Before measuring, --history short requests in 20 conversations fill the page's history
(the first polls then carry a realistic body). Prints the median decode rate of each condition,
their ratio, and the poll route's latency and body size.
Usage: poll_cost.py QMLX_BINARY [MODEL] [--tabs 3] [--tokens 256] [--rounds 4] [--history 200]
"""
import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "../../tests/e2e"))
sys.path.insert(0, os.path.join(here, "../parallel"))
from e2e_support import free_port  # noqa: E402
from decode_throughput import stream  # noqa: E402  (a streamed completion's arrival times)

KEY = "bench"


def request(port, method, path, body=None, timeout=600):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    headers = {"Authorization": "Bearer " + KEY}
    if body is not None:
        headers["Content-Type"] = "application/json"
    conn.request(method, path, json.dumps(body) if body is not None else None, headers)
    res = conn.getresponse()
    data = res.read()
    conn.close()
    return res.status, data


def decode_rate(port, tokens):
    """Streams one completion; tokens per second between its first and last token."""
    arrivals = []
    stream(port, "Once upon a time, in a city by the sea, there lived", tokens, arrivals)
    times = arrivals[0]
    if len(times) < 8:
        sys.exit("the model stopped after %d tokens: use a model that keeps talking" % len(times))
    return (len(times) - 1) / (times[-1] - times[0])


class Tab(threading.Thread):
    """Polls as the page does until stopped; records each status poll's latency and size."""

    def __init__(self, port):
        super().__init__(daemon=True)
        self.port, self.stop, self.latencies, self.sizes = port, threading.Event(), [], []

    def run(self):
        since, last_snapshots = 0, 0.0
        while not self.stop.is_set():
            started = time.monotonic()
            status, data = request(self.port, "GET", "/admin/ui/status?since=%d" % since)
            self.latencies.append(time.monotonic() - started)
            self.sizes.append(len(data))
            if status != 200:
                sys.exit("status poll answered %d" % status)
            since = json.loads(data)["activity"]["seq"]
            if time.monotonic() - last_snapshots >= 5:
                request(self.port, "GET", "/admin/cache/snapshots")
                last_snapshots = time.monotonic()
            self.stop.wait(1.0)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("qmlx")
    parser.add_argument("model", nargs="?", default="")
    parser.add_argument("--tabs", type=int, default=3)
    parser.add_argument("--tokens", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--history", type=int, default=200)
    args = parser.parse_args()

    home = tempfile.mkdtemp(prefix="qmlx-poll-cost-")
    port = free_port()
    cmd = [args.qmlx, "serve", "--port", str(port)]
    if args.model:
        cmd += ["--model", args.model]
    log = open(os.path.join(home, "serve.log"), "w")
    server = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                              env=dict(os.environ, QMLX_HOME=home))
    try:
        for _ in range(1200):  # a large model loads and calibrates for a while
            if server.poll() is not None:
                sys.exit("qmlx serve exited; see " + log.name)
            try:
                if request(port, "GET", "/health", timeout=2)[0] == 200:
                    break
            except OSError:
                pass
            time.sleep(0.5)
        for i in range(args.history):
            request(port, "POST", "/v1/chat/completions", {
                "max_tokens": 2, "temperature": 0,
                "messages": [{"role": "user", "content": "task %d of the bench" % (i % 20)}]})
        decode_rate(port, 16)  # warm-up
        rates = {"off": [], "on": []}
        tabs_used = []
        for _ in range(args.rounds):
            rates["off"].append(decode_rate(port, args.tokens))
            tabs = [Tab(port) for _ in range(args.tabs)]
            for tab in tabs:
                tab.start()
            time.sleep(1.5)  # past each tab's first, whole-history poll
            rates["on"].append(decode_rate(port, args.tokens))
            for tab in tabs:
                tab.stop.set()
            for tab in tabs:
                tab.join(10)
            tabs_used += tabs
        off, on = statistics.median(rates["off"]), statistics.median(rates["on"])
        latencies = sorted(l for t in tabs_used for l in t.latencies)
        sizes = [s for t in tabs_used for s in t.sizes]
        first_sizes = [t.sizes[0] for t in tabs_used if t.sizes]
        print("decode tok/s, no page: %s  median %.2f" % (
            " ".join("%.2f" % r for r in rates["off"]), off))
        print("decode tok/s, %d tabs polling: %s  median %.2f" % (
            args.tabs, " ".join("%.2f" % r for r in rates["on"]), on))
        print("ratio on/off: %.3f" % (on / off))
        print("status polls: %d, latency p50 %.2f ms p99 %.2f ms; body: first poll %d bytes, "
              "later median %d bytes" % (
                  len(latencies), 1000 * latencies[len(latencies) // 2],
                  1000 * latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))],
                  statistics.median(first_sizes), statistics.median(sizes)))
    finally:
        server.terminate()
        server.wait(30)


if __name__ == "__main__":
    main()
