#!/usr/bin/env python3
"""What a JSON schema costs decode (issue 28, item 5): one `qmlx serve --parallel P` per P, then
--rounds rounds of P streamed /v1/completions at once without a schema and P with
`response_format: json_schema` (same prompts, temperature 0, max_tokens --tokens), the order of
the two conditions swapped every round so drift hits both alike. A condition's rate is the sum
over its streams of (tokens - 1) / (last chunk - first chunk), tokens from the usage the stream
ends with. Prints each round's rates, the medians and their ratio, the median of the rounds'
own schema/free ratios (drift between rounds cancels), and how each reply finished;
and the server's CPU time per token (user + system, from /proc), which other jobs on a shared
machine disturb less than the wall-clock rate. With --perf, one more constrained round runs
under `perf record` and the share of the server's samples spent in grammar work (the mask, its
application to the logits, advancing the matcher) is printed: on a loaded machine the most
direct measure of what the schema costs.
The schema asks for many items so that every reply runs to max_tokens, as the free one does.
The model must carry a real tokenizer (the mask's cost grows with the vocabulary): e.g. a
`qmlx make-model --preset qwen3.5-0.8b` folder with the Qwen3 tokenizer.json put in.
Usage: decode_cost.py QMLX_BINARY MODEL [--parallel 1,4] [--tokens 200] [--rounds 4] [--perf]
"""
import argparse
import http.client
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../tests/e2e"))
from e2e_support import free_port, wait_healthy  # noqa: E402

SCHEMA = {
    "type": "object",
    "properties": {
        "title": {"type": "string"},
        "steps": {
            "type": "array", "minItems": 100,
            "items": {
                "type": "object",
                "properties": {"explanation": {"type": "string"}, "output": {"type": "string"},
                               "done": {"type": "boolean"}, "score": {"type": "integer"}},
                "required": ["explanation", "output", "done", "score"],
                "additionalProperties": False}}},
    "required": ["title", "steps"],
    "additionalProperties": False,
}


# Symbols of the grammar's work in the decode loop.
GRAMMAR_WORK = re.compile(r"qmlx::grammar::|select_by_bits|ReplyConstraint")


def grammar_share(perf_data):
    """Percent of the samples in grammar work, and the symbols that hold them."""
    report = subprocess.run(["perf", "report", "-i", perf_data, "--sort", "symbol", "--stdio"],
                            capture_output=True, text=True).stdout
    total, symbols = 0.0, []
    for line in report.splitlines():
        m = re.match(r"\s*([\d.]+)%\s+\[\.\]\s+(\S+)", line)
        if m and GRAMMAR_WORK.search(m.group(2)):
            total += float(m.group(1))
            symbols.append("%s %s%%" % (m.group(2).split("(")[0], m.group(1)))
    return total, symbols


def stream(port, prompt, tokens, schema, out):
    """One streamed completion: appends (chunk arrival times, completion tokens, finish)."""
    body = {"model": "m", "stream": True, "temperature": 0, "max_tokens": tokens,
            "prompt": prompt, "stream_options": {"include_usage": True}}
    if schema:
        body["response_format"] = {"type": "json_schema",
                                   "json_schema": {"name": "steps", "schema": SCHEMA}}
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    conn.request("POST", "/v1/completions", json.dumps(body),
                 {"Content-Type": "application/json", "Authorization": "Bearer bench"})
    res = conn.getresponse()
    if res.status != 200:
        sys.exit("completion answered %d: %s" % (res.status, res.read()[:300]))
    times, used, finish = [], 0, None
    for raw in res:
        line = raw.decode().strip()
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        chunk = json.loads(line[6:])
        if chunk.get("usage"):
            used = chunk["usage"]["completion_tokens"]
        for choice in chunk.get("choices") or []:
            if choice.get("text"):
                times.append(time.monotonic())
            finish = choice.get("finish_reason") or finish
    out.append((times, used, finish))


def cpu_seconds(pid):
    """User + system CPU time of a process so far."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def condition(port, pid, parallel, tokens, schema):
    """P streams at once: the sum of their decode rates, the server's CPU milliseconds per
    token, and their finish reasons."""
    results = []
    cpu_before = cpu_seconds(pid)
    workers = [threading.Thread(target=stream, args=(
        port, "Story %d: Once upon a time, in a village by the sea," % i, tokens, schema,
        results)) for i in range(parallel)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    rate = 0.0
    for times, used, _ in results:
        if len(times) < 2 or used < 8:
            sys.exit("a reply stopped after %d tokens: the rate needs longer ones" % used)
        rate += (used - 1) / (times[-1] - times[0])
    cpu_ms = 1000 * (cpu_seconds(pid) - cpu_before) / sum(r[1] for r in results)
    return rate, cpu_ms, [r[2] for r in results]


def run(qmlx, model, parallel, tokens, rounds, perf):
    home = tempfile.mkdtemp(prefix="qmlx-decode-cost-")
    port = free_port()
    log_path = os.path.join(home, "serve.log")
    proc = subprocess.Popen([qmlx, "serve", "--model", model, "--port", str(port), "--parallel",
                             str(parallel), "--max-context", "4096"],
                            stdout=open(log_path, "w"), stderr=subprocess.STDOUT,
                            env=dict(os.environ, QMLX_HOME=home))
    try:
        wait_healthy(port, proc, log_path)
        condition(port, proc.pid, parallel, 16, False)  # warm-up; the second binds the schema
        condition(port, proc.pid, parallel, 16, True)
        rates = {"free": [], "schema": []}
        cpu = {"free": [], "schema": []}
        finishes = {"free": [], "schema": []}
        for r in range(rounds):
            order = ["free", "schema"] if r % 2 == 0 else ["schema", "free"]
            for name in order:
                rate, cpu_ms, fin = condition(port, proc.pid, parallel, tokens,
                                              name == "schema")
                rates[name].append(rate)
                cpu[name].append(cpu_ms)
                finishes[name] += fin
        free, schema = statistics.median(rates["free"]), statistics.median(rates["schema"])
        for name in ("free", "schema"):
            print("--parallel %d, %-6s tok/s: %s  median %.2f  finish %s" % (
                parallel, name, " ".join("%.2f" % x for x in rates[name]),
                statistics.median(rates[name]),
                {f: finishes[name].count(f) for f in set(finishes[name])}), flush=True)
        for name in ("free", "schema"):
            print("--parallel %d, %-6s server CPU ms/token: %s  median %.2f" % (
                parallel, name, " ".join("%.2f" % x for x in cpu[name]),
                statistics.median(cpu[name])), flush=True)
        print("--parallel %d ratio schema/free: tok/s %.3f, CPU per token %.3f" % (
            parallel, schema / free,
            statistics.median(cpu["schema"]) / statistics.median(cpu["free"])), flush=True)
        # The two conditions of a round ran back to back: their ratio cancels the drift between
        # rounds that the medians above still carry.
        paired = [s / f for s, f in zip(rates["schema"], rates["free"])]
        print("--parallel %d paired ratios schema/free: %s  median %.3f" % (
            parallel, " ".join("%.3f" % x for x in paired), statistics.median(paired)), flush=True)
        if perf:
            data = os.path.join(home, "perf.data")
            recorder = subprocess.Popen(["perf", "record", "-F", "999", "-p", str(proc.pid),
                                         "-o", data], stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL)
            time.sleep(0.5)
            condition(port, proc.pid, parallel, tokens, True)
            recorder.send_signal(signal.SIGINT)
            recorder.wait()
            share, symbols = grammar_share(data)
            print("--parallel %d, schema: grammar work %.2f%% of the server's samples (%s)" % (
                parallel, share, ", ".join(symbols)), flush=True)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("qmlx")
    p.add_argument("model")
    p.add_argument("--parallel", default="1,4")
    p.add_argument("--tokens", type=int, default=200)
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--perf", action="store_true")
    a = p.parse_args()
    for parallel in [int(x) for x in a.parallel.split(",")]:
        run(a.qmlx, a.model, parallel, a.tokens, a.rounds, a.perf)


if __name__ == "__main__":
    main()
