#!/usr/bin/env python3
"""A second turn with a screenshot in its history (issue 29, item 7), against `qmlx serve`.

The model is tiny except its vision tower, which has the real Qwen3.5-35B-A3B tower shape
(`make-model --vision --vision-shape qwen3.5-35b-a3b`), so the image's cost is the real
encoder's and the language model's prefill is small beside it. Two servers, one after the other:
  cache on:  the memory prefix cache and the disk tier (a fresh folder);
  cache off: {"memory_prefix_cache": false, "disk_kv_cache": false}.
Each gets turn 1 (a system prompt, then a user message with the question and a screenshot PNG as
an OpenAI chat `image_url` data URL) and turn 2 (turn 1's messages, its reply, a new question);
between them, the cache-on server restarted on its disk gets turn 2 alone.
For each turn: prompt, cached and prefilled tokens (the response's usage and timings), TTFT
(timings.ttft_ms) and, from the server's log line of that request (timings.uid), images= /
images_encoded= / image_encode_time=. The encoder-output cache (512 MiB, per image identity) is not part of the
cache config: with the cache off, turn 2 still reuses turn 1's encoder output and prefills the
whole prompt; the turn-1 rows are the cost of a screenshot nothing has seen.

Usage: second_turn.py QMLX MODEL_DIR WORK_DIR [--size WxH] [--max-tokens N]
Prints a Markdown table (progress on stderr). Python 3 standard library only.
"""
import argparse
import base64
import http.client
import json
import os
import random
import re
import shutil
import socket
import struct
import subprocess
import sys
import time
import zlib

parser = argparse.ArgumentParser()
parser.add_argument("qmlx")
parser.add_argument("model")
parser.add_argument("work")
parser.add_argument("--size", default="1920x1080", help="screenshot width x height")
parser.add_argument("--max-tokens", type=int, default=8, help="tokens each reply generates")
args = parser.parse_args()
WIDTH, HEIGHT = (int(v) for v in args.size.split("x"))
KEY = "vision-bench"


def screenshot_png(width, height, seed=1):
    """A screenshot-like RGB PNG (a light page, a dark title bar, lines of text-like noise, as
    bench/image's screenshots), written with zlib alone. Deterministic per seed."""
    rng = random.Random(seed)
    page, bar = bytes((245, 245, 245)), bytes((40, 44, 52))
    rows = []
    for y in range(height):
        if y < height // 12:
            row = bar * width
        elif y >= height // 8 and (y - height // 8) % 18 < 9:
            n = rng.randrange(width // 4, width - 40) if (y - height // 8) % 18 == 0 else n
            ink = bytes(v % 90 for v in rng.randbytes(n))  # grey "glyphs"
            row = page * 20 + bytes(c for v in ink for c in (v, v, v)) + page * (width - 20 - n)
        else:
            row = page * width
        rows.append(b"\x00" + row)

    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) +
            chunk(b"IDAT", zlib.compress(b"".join(rows), 6)) + chunk(b"IEND", b""))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Server:
    def __init__(self, name, cache):
        self.name = name
        self.port = free_port()
        self.log_path = os.path.join(args.work, name + ".log")
        config = os.path.join(args.work, name + ".json")
        with open(config, "w") as f:
            json.dump({"cache": cache}, f)
        self.log = open(self.log_path, "w")
        self.process = subprocess.Popen(
            [args.qmlx, "serve", "--model", args.model, "--port", str(self.port),
             "--api-key", KEY, "--cache-config", config],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 600
        while time.time() < deadline:
            if self.process.poll() is not None:
                sys.exit("%s exited at start; see %s" % (name, self.log_path))
            try:
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
                conn.request("GET", "/health")
                if conn.getresponse().status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.2)
        sys.exit("%s did not become healthy" % name)

    def chat(self, messages):
        """The response's JSON; the encoder can take minutes, so no short timeout."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=3600)
        body = {"messages": messages, "max_tokens": args.max_tokens, "temperature": 0}
        conn.request("POST", "/v1/chat/completions", json.dumps(body),
                     {"Content-Type": "application/json", "Authorization": "Bearer " + KEY})
        response = conn.getresponse()
        data = response.read().decode()
        conn.close()
        if response.status != 200:
            self.stop()
            sys.exit("%s: %d %s" % (self.name, response.status, data[:500]))
        return json.loads(data)

    def request_line(self, uid):
        """The request's own log line, which the server may write just after the response."""
        pattern = re.compile(r"\buid=%d (HIT|MISS)" % uid)
        deadline = time.time() + 30
        while time.time() < deadline:
            with open(self.log_path) as f:
                lines = [line.strip() for line in f if pattern.search(line)]
            if lines:
                return lines[-1]
            time.sleep(0.05)
        sys.exit("%s: no log line for uid=%d in %s" % (self.name, uid, self.log_path))

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=120)
        self.log.close()


def log_field(line, name):
    m = re.search(r"\b%s=([^ ]+)" % name, line)
    return m.group(1) if m else None


SYSTEM = ("You are a coding agent working in a terminal. When the user shares a screenshot, "
          "read it carefully: error dialogs, stack traces, the state of the UI. ") * 8
IMAGE_URL = "data:image/png;base64," + base64.b64encode(screenshot_png(WIDTH, HEIGHT)).decode()


def turn1():
    return [{"role": "system", "content": SYSTEM},
            {"role": "user", "content": [
                {"type": "text", "text": "The build fails with this dialog. What does it say?"},
                {"type": "image_url", "image_url": {"url": IMAGE_URL}}]}]


def measure(name, cache, turns):
    """Each of `turns` ((number, messages or None for turn 2 after this server's turn 1)) on a
    fresh server: one result dict per turn, and the messages of the turn 2 it sent."""
    server = Server(re.sub(r"\W+", "-", name), cache)
    results = []
    for turn, given in turns:
        messages = given or next_turn
        sent = messages
        start = time.perf_counter()
        response = server.chat(messages)
        wall = time.perf_counter() - start
        usage, timings = response["usage"], response["timings"]
        line = server.request_line(timings["uid"])
        results.append({
            "cache": name, "turn": turn, "prompt": usage["prompt_tokens"],
            "cached": usage["prompt_tokens_details"]["cached_tokens"],
            "prefilled": timings["prefill"], "ttft_s": timings["ttft_ms"] / 1e3,
            "wall_s": wall, "images": log_field(line, "images"),
            "encoded": log_field(line, "images_encoded"),
            "encode_s": float((log_field(line, "image_encode_time") or "0ms").rstrip("ms")) / 1e3,
            "line": line})
        print("%s turn %d: %s" % (name, turn, line), file=sys.stderr, flush=True)
        reply = response["choices"][0]["message"].get("content") or ""
        next_turn = messages + [{"role": "assistant", "content": reply},
                                {"role": "user", "content": "Which file should I open first?"}]
    server.stop()
    return results, sent


shutil.rmtree(args.work, ignore_errors=True)
os.makedirs(args.work)
on = {"disk_cache_dir": os.path.join(args.work, "disk")}
rows, second = measure("on", on, [(1, turn1()), (2, None)])
# The same disk after a restart: nothing in memory, the encoder-output cache empty too.
more, _ = measure("on, restarted", on, [(2, second)])
rows += more
more, _ = measure("off", {"memory_prefix_cache": False, "disk_kv_cache": False},
                  [(1, turn1()), (2, None)])
rows += more

print("| cache | turn | prompt tokens | cached | prefilled | images / encoded | image encode s "
      "| TTFT s | request s |")
print("|---|---|---|---|---|---|---|---|---|")
for r in rows:
    print("| %s | %d | %d | %d | %s | %s / %s | %.3g | %.3g | %.3g |" % (
        r["cache"], r["turn"], r["prompt"], r["cached"], r["prefilled"], r["images"],
        r["encoded"], r["encode_s"], r["ttft_s"], r["wall_s"]))
