#!/usr/bin/env python3
"""A seeded random mix of concurrent requests against a real `qmlx serve` (demo model, its
defaults: --parallel 4, the cache on) for SECONDS: CLIENTS threads each send requests on the
four generation routes around a few conversations with zero to two earlier turns (shared
prefixes, fast follow-ups), half streamed, one in ten aborted by its client within 200 ms, one
in eight with a JSON schema reply format. Every request must be answered (or, when aborted,
closed) within BOUND seconds; at the end /health must show an empty queue. Not part of ctest
(it runs for minutes); run it after changes to the scheduler, the batch engine or a backend.
With --device vulkan the server runs its forward passes on the Vulkan device.
Usage: random_mix_soak.py QMLX_BINARY [--seconds 180] [--clients 4] [--seed 31] [--bound 30]
                          [--device cpu|vulkan[:N]]
"""
import argparse
import http.client
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from e2e_support import free_port, wait_healthy  # noqa: E402

SCHEMA = {"type": "object", "additionalProperties": False, "required": ["ok", "n"],
          "properties": {"ok": {"type": "boolean"}, "n": {"type": "integer", "minimum": 0,
                                                          "maximum": 99}}}


def body_for(route, rng, turns, stream, constrained):
    history = []
    for t in range(turns):
        history += [{"role": "user", "content": "step %d of task %d" % (t, rng.randrange(3))},
                    {"role": "assistant", "content": "done %d" % t}]
    user = {"role": "user", "content": "continue task %d" % rng.randrange(3)}
    if route == "/v1/completions":
        b = {"prompt": "task %d: " % rng.randrange(3) * (1 + turns), "max_tokens": 8}
    elif route == "/v1/messages":
        b = {"model": "m", "max_tokens": 8, "messages": history + [user]}
        if constrained:
            b["output_config"] = {"format": {"type": "json_schema", "schema": SCHEMA}}
    elif route == "/v1/responses":
        b = {"input": history + [user], "max_output_tokens": 16}
        if constrained:
            b["text"] = {"format": {"type": "json_schema", "name": "r", "schema": SCHEMA}}
    else:
        b = {"messages": [{"role": "system", "content": "You are an agent."}] + history + [user],
             "max_tokens": 8}
        if constrained:
            b["response_format"] = {"type": "json_schema",
                                    "json_schema": {"name": "r", "schema": SCHEMA}}
    b["stream"] = stream
    b["temperature"] = 1
    return b


def one_request(port, rng, bound):
    route = rng.choice(["/v1/chat/completions", "/v1/messages", "/v1/responses",
                        "/v1/completions"])
    stream = rng.random() < 0.5
    abort = rng.random() < 0.1
    constrained = rng.random() < 0.125 and route != "/v1/completions"
    body = json.dumps(body_for(route, rng, rng.randrange(3), stream, constrained))
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=bound)
    started = time.monotonic()
    conn.request("POST", route, body, {"Content-Type": "application/json",
                                      "Authorization": "Bearer soak", "x-api-key": "soak"})
    if abort:
        time.sleep(rng.random() * 0.2)
        conn.sock.shutdown(socket.SHUT_RDWR)
        conn.close()
        return "aborted", time.monotonic() - started
    res = conn.getresponse()
    res.read()
    conn.close()
    if res.status != 200:
        raise RuntimeError("%s answered %d" % (route, res.status))
    return "answered", time.monotonic() - started


def main():
    p = argparse.ArgumentParser()
    p.add_argument("qmlx")
    p.add_argument("--seconds", type=float, default=180)
    p.add_argument("--clients", type=int, default=4)
    p.add_argument("--seed", type=int, default=31)
    p.add_argument("--bound", type=float, default=30)
    p.add_argument("--device", default="cpu")
    a = p.parse_args()
    home = tempfile.mkdtemp(prefix="qmlx-soak-")
    port = free_port()
    log_path = os.path.join(home, "serve.log")
    server = subprocess.Popen([a.qmlx, "serve", "--port", str(port), "--device", a.device],
                              stdout=open(log_path, "w"), stderr=subprocess.STDOUT,
                              env=dict(os.environ, QMLX_HOME=home))
    counts = {"answered": 0, "aborted": 0}
    failures = []
    slowest = [0.0]
    lock = threading.Lock()
    deadline = time.monotonic() + a.seconds

    def client(index):
        rng = random.Random(a.seed * 1000 + index)
        while time.monotonic() < deadline and not failures:
            try:
                kind, took = one_request(port, rng, a.bound)
            except Exception as e:  # a timeout past the bound, a refused or failed request
                with lock:
                    failures.append("client %d: %r" % (index, e))
                return
            with lock:
                counts[kind] += 1
                slowest[0] = max(slowest[0], took)

    try:
        wait_healthy(port, server, log_path)
        threads = [threading.Thread(target=client, args=(i,)) for i in range(a.clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(a.seconds + a.bound + 30)
        time.sleep(1)
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("GET", "/health")
        health = json.loads(conn.getresponse().read())
        print(json.dumps({"counts": counts, "slowest_s": round(slowest[0], 2),
                          "queue": health["queue"], "failures": failures[:5]}))
        if failures or health["queue"]["waiting"] or health["queue"]["stalled"]:
            sys.exit("FAIL: see %s" % log_path)
        print("random_mix_soak: every request answered within %.0f s" % a.bound)
    finally:
        server.terminate()
        server.wait(30)


if __name__ == "__main__":
    main()
