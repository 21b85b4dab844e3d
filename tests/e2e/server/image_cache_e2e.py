#!/usr/bin/env python3
"""Screenshots in a conversation, warm == cold (issue 29 item 4), against `qmlx serve` on a tiny
model with a vision tower (make-model --vision), temperature 0:
  1. a server without any cache gives the reference replies: turn 1 (text + image A), turn 2
     (turn 1's history, its reply, a new question), and turn 2 with image B where A was;
  2. a cached server: turn 2 HITs past the image (its pads restored, the image not encoded again)
     with the cold reply, and from the idle pre-filled canonical history when the client sends
     the reply back as given; turn 2 with image B never restores past B's first pad and gives B's
     cold reply; the same image in a new conversation is not encoded again (the encoder-output
     cache); every log line says images= and images_encoded=;
  3. the cached server restarted on its disk: turn 2 HITs from the disk with the cold reply;
  4. the image as each API sends it (Anthropic base64 block, Responses input_image) is read;
  5. MTP drafting after an image gives plain decoding's tokens and logits;
  6. the shared tier (a throwaway Redis Cluster, where redis-server is installed): turn 1 on
     server A, turn 2 on server B with an empty disk HITs from the shared tier past the image
     with the cold reply; image B in A's place there never restores past B's first pad.
With DEVICE (e.g. vulkan) every server runs with --device DEVICE (images, M-RoPE, the
vision encoder itself, its rows and MTP drafting on the device: the start log must say the
vision tower is on the device; the encoder being deterministic, warm == cold still holds),
references included; exit 77 (skip) when no Vulkan device can run.
Usage: image_cache_e2e.py QMLX_BINARY WORK_DIR [DEVICE]
"""
import base64
import http.client
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import time
import zlib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from e2e_support import fail, free_port, wait_healthy  # noqa: E402

QMLX, WORK = sys.argv[1], sys.argv[2]
DEVICE = sys.argv[3] if len(sys.argv) > 3 else None
# --mmproj-offload on: lavapipe is the CPU itself, where the tower would otherwise stay on the
# CPU encoder (auto); the e2e puts it on the device to run that path.
DEVICE_ARGS = ("--device", DEVICE, "--mmproj-offload", "on") if DEVICE else ()
if DEVICE and "can run: yes" not in subprocess.run([QMLX, "devices"], capture_output=True,
                                                    text=True).stdout:
    print("SKIP: no Vulkan device can run")
    sys.exit(77)
KEY = "image-key"


def png(width, height, seed):
    """An RGB PNG of deterministic noise, written with zlib alone."""
    rows = bytearray()
    state = seed
    for _ in range(height):
        rows.append(0)
        for _ in range(width * 3):
            state = (state * 1103515245 + 12345) & 0x7FFFFFFF
            rows.append(state >> 23)

    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(bytes(rows)))
            + chunk(b"IEND", b""))


IMAGE_A = base64.b64encode(png(96, 64, 1)).decode()
IMAGE_B = base64.b64encode(png(96, 64, 2)).decode()
SYSTEM = "You are a coding agent. Look at screenshots carefully. " * 12


def chat_messages(image, turn, reply1=None, verbatim=False):
    messages = [{"role": "system", "content": SYSTEM},
                {"role": "user", "content": [
                    {"type": "text", "text": "What does this screenshot show?"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64," + image}}]}]
    if turn == 2:
        assistant = {"role": "assistant", "content": reply1.content}
        if verbatim:  # the reply as the server gave it (content and reasoning apart)
            assistant = {"role": "assistant", "content": reply1.message.get("content") or "",
                         "reasoning_content": reply1.message.get("reasoning_content") or ""}
        messages += [assistant,
                     {"role": "user", "content": "And what should I click next?"}]
    return messages


class Reply:
    def __init__(self, message, key):
        self.message, self.key = message, key
        # As a client that keeps only the text sends it back (the tiny model may put every
        # token in the reasoning).
        self.content = message.get("content") or message.get("reasoning_content") or ""

    def __eq__(self, other):
        return self.key == other.key

    def __repr__(self):
        return self.key[:200]


class Server:
    def __init__(self, name, cache, extra=()):
        self.name = name
        self.port, self.metrics_port = free_port(), free_port()
        self.log_path = os.path.join(WORK, name + ".log")
        config = os.path.join(WORK, name + ".json")
        with open(config, "w") as f:
            json.dump({"cache": cache}, f)
        self.log = open(self.log_path, "a")
        self.process = subprocess.Popen(
            [QMLX, "serve", "--model", MODEL, "--port", str(self.port), "--metrics-port",
             str(self.metrics_port), "--api-key", KEY, "--cache-config", config, *DEVICE_ARGS,
             *extra],
            stdout=self.log, stderr=subprocess.STDOUT)
        wait_healthy(self.port, self.process, self.log_path)

    def post(self, path, body):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=300)
        conn.request("POST", path, json.dumps(body),
                     {"Content-Type": "application/json", "Authorization": "Bearer " + KEY,
                      "x-api-key": KEY, "anthropic-version": "2023-06-01"})
        response = conn.getresponse()
        data = json.loads(response.read().decode() or "null")
        self.last_uid = response.getheader("X-Request-Id")
        conn.close()
        if response.status != 200:
            fail("%s %s: %d %s" % (self.name, path, response.status, data))
        return data

    def chat(self, messages):
        """(reply, cached tokens); the reply's `key` adds every token's logprobs to its text,
        so warm == cold checks the logits' bits, not only the greedy tokens a tiny model
        repeats."""
        d = self.post("/v1/chat/completions",
                      {"messages": messages, "max_tokens": 10, "temperature": 0,
                       "logprobs": True, "top_logprobs": 3})
        choice = d["choices"][0]
        message = choice["message"]
        text = (message.get("reasoning_content") or "") + "|" + (message.get("content") or "")
        return Reply(message, text + "|" + json.dumps(choice.get("logprobs"), sort_keys=True)), \
            d["usage"]["prompt_tokens_details"]["cached_tokens"]

    def last_log_line(self):
        """The log line of the last request (written as its response ends: waited for)."""
        pattern = re.compile(r"\buid=%s (HIT|MISS)" % re.escape(self.last_uid or "?"))
        for _ in range(100):
            with open(self.log_path) as f:
                lines = [l for l in f if pattern.search(l)]
            if lines:
                return lines[-1]
            time.sleep(0.05)
        fail("%s: no log line for uid %s" % (self.name, self.last_uid))

    def stop(self):
        self.process.terminate()
        if self.process.wait(timeout=60) != 0:
            fail(self.name + " did not exit 0 on SIGTERM")
        self.log.close()


def expect_hit(server, messages, cold_reply, tier, what):
    """Sends `messages`; the reply must be `cold_reply` and restored from `tier`. Returns the
    cached tokens."""
    text, cached = server.chat(messages)
    line = server.last_log_line()
    if text != cold_reply:
        fail("%s differs from cold: %r vs %r" % (what, text, cold_reply))
    if cached <= 0 or log_field(line, "tier") != tier:
        fail("%s did not hit the %s tier: %s" % (what, tier, line))
    return cached


def log_field(line, name):
    m = re.search(r"\b%s=([^ ]+)" % name, line)
    if not m:
        fail("no %s= in the log line: %s" % (name, line))
    return m.group(1)


shutil.rmtree(WORK, ignore_errors=True)
os.makedirs(WORK)
MODEL = os.path.join(WORK, "model")
subprocess.run([QMLX, "make-model", "--out", MODEL, "--arch", "qwen3_5", "--vision", "--mtp",
                "--seed", "7"], check=True, capture_output=True)

# 1. Cold references.
cold = Server("cold", {"memory_prefix_cache": False, "disk_kv_cache": False})
cold1, _ = cold.chat(chat_messages(IMAGE_A, 1))
cold2, _ = cold.chat(chat_messages(IMAGE_A, 2, cold1))
cold2b, _ = cold.chat(chat_messages(IMAGE_B, 2, cold1))
line = cold.last_log_line()
if log_field(line, "images") != "1" or log_field(line, "images_encoded") != "1":
    fail("a cold request with one image must encode it: " + line)
cold2v, _ = cold.chat(chat_messages(IMAGE_A, 2, cold1, verbatim=True))
cold.stop()
if DEVICE:
    with open(cold.log_path) as f:
        if "vision tower on the device" not in f.read():
            fail("--device %s: the start log does not say the vision tower is on the device (%s)"
                 % (DEVICE, cold.log_path))
    print("ok the vision tower runs on the device")
if cold2 == cold2b:
    fail("image A and image B give the same logits: the image does not reach the model")
print("ok cold references (image A and image B give different logits)")

# 2. The cached server.
disk = os.path.join(WORK, "disk")
warm_cache = {"disk_cache_dir": disk, "chunk_tokens": 32, "fsync": False}
warm = Server("warm", warm_cache)
text, cached = warm.chat(chat_messages(IMAGE_A, 1))
if text != cold1:
    fail("turn 1 differs from cold: %r vs %r" % (text, cold1))
text, cached = warm.chat(chat_messages(IMAGE_A, 2, cold1))
line = warm.last_log_line()
prefill2 = int(log_field(line, "prefill"))
if text != cold2:
    fail("warm turn 2 differs from cold: %r vs %r" % (text, cold2))
prompt = int(log_field(line, "prompt"))
if cached <= 0:
    fail("turn 2 did not hit: " + line)
if log_field(line, "images_encoded") != "0":
    fail("turn 2 encoded its image again (restored past it, or kept from turn 1): " + line)
print("ok warm turn 2: HIT %d of %d tokens, cold reply, image not encoded again" % (cached, prompt))

text, cached_b = warm.chat(chat_messages(IMAGE_B, 2, cold1))
line = warm.last_log_line()
if text != cold2b:
    fail("turn 2 with image B differs from its cold reply: %r vs %r" % (text, cold2b))
if log_field(line, "images_encoded") != "1":
    fail("image B was not encoded: " + line)
if cached_b >= cached:
    fail("image B restored as deep as image A (%d >= %d): the image is not in the cache key"
         % (cached_b, cached))
print("ok image B in A's place: restored only %d tokens (before the image), cold reply" % cached_b)

# The reply sent back as the server gave it: the next turn resumes from the canonical history
# pre-filled in idle time (the reply re-rendered as history), images and all.
warm.chat(chat_messages(IMAGE_A, 1))
text, cached_v = warm.chat(chat_messages(IMAGE_A, 2, cold1, verbatim=True))
line = warm.last_log_line()
if text != cold2v:
    fail("turn 2 after the canonical history differs from cold: %r vs %r" % (text, cold2v))
# The pre-filled history is in the slot's live session (kind live) or its checkpoint; either way
# the reply (10 tokens) is not prefilled again, as it is when the client rewrote it.
if log_field(line, "kind") not in ("canonical_history", "live") or \
        int(log_field(line, "prefill")) + 10 > prefill2:
    fail("turn 2 did not resume from the canonical history: " + line)
print("ok turn 2 from the canonical history pre-filled with the image (%d tokens, prefill %s)"
      % (cached_v, log_field(line, "prefill")))

other = [{"role": "user", "content": [
    {"type": "image_url", "image_url": {"url": "data:image/png;base64," + IMAGE_A}},
    {"type": "text", "text": "Describe it in one word."}]}]
warm.chat(other)
line = warm.last_log_line()
if log_field(line, "images_encoded") != "0":
    fail("image A in a new conversation was encoded again: " + line)
print("ok the same image in a new conversation: encoder output reused")

# 4. The other APIs' image forms (the same pixels, the same prompt): the same reply.
anthropic = warm.post("/v1/messages", {
    "model": "m", "max_tokens": 10, "temperature": 0, "system": SYSTEM,
    "messages": [{"role": "user", "content": [
        {"type": "text", "text": "What does this screenshot show?"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                     "data": IMAGE_A}}]}]})
if not any(block.get("type") in ("text", "thinking") for block in anthropic["content"]):
    fail("anthropic image request gave no text: %s" % anthropic)
responses = warm.post("/v1/responses", {
    "max_output_tokens": 10, "temperature": 0, "instructions": SYSTEM,
    "input": [{"role": "user", "content": [
        {"type": "input_text", "text": "What does this screenshot show?"},
        {"type": "input_image", "image_url": "data:image/png;base64," + IMAGE_A}]}]})
if responses.get("status") not in ("completed", "incomplete"):
    fail("responses image request: %s" % responses)
print("ok Anthropic image block and Responses input_image answered")
warm.stop()

# 3. Restarted on its disk.
again = Server("restarted", warm_cache)
cached = expect_hit(again, chat_messages(IMAGE_A, 2, cold1), cold2, "disk", "restarted turn 2")
again.stop()
print("ok restarted: turn 2 HIT %d tokens from disk, cold reply" % cached)

# 5. MTP drafting after an image: the same tokens and logits as plain decoding, cache on.
spec = Server("speculative", warm_cache, ("--speculative", "mtp:2", "--parallel", "1"))
text, cached = spec.chat(chat_messages(IMAGE_B, 2, cold1))
line = spec.last_log_line()
if text != cold2b:
    fail("MTP drafting after image B differs from plain decoding: %r vs %r" % (text, cold2b))
if "spec_accept=" not in line:
    fail("no drafts were checked: " + line)
spec.stop()
print("ok MTP drafting after an image: plain decoding's tokens and logits (%s)" %
      log_field(line, "spec_accept"))

# 6. The shared tier: another server with an empty disk restores the image conversation.
if shutil.which("redis-server") and shutil.which("redis-cli"):
    cluster = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "shared",
                           "redis_cluster.sh")
    redis_dir = os.path.join(WORK, "redis")
    nodes = subprocess.run(["bash", cluster, "start", redis_dir, "3"], check=True,
                           capture_output=True, text=True).stdout.strip().splitlines()[-1]
    try:
        def shared_cache(name):
            return {"disk_cache_dir": os.path.join(WORK, "disk-" + name), "chunk_tokens": 32,
                    "fsync": False, "shared": {"nodes": nodes.split(","), "timeout_ms": 1000}}
        a = Server("shared-a", shared_cache("a"))
        text, _ = a.chat(chat_messages(IMAGE_A, 1))
        if text != cold1:
            fail("shared A turn 1 differs from cold: %r vs %r" % (text, cold1))
        a.stop()  # its checkpoints are written and published before it exits
        b = Server("shared-b", shared_cache("b"))
        cached = expect_hit(b, chat_messages(IMAGE_A, 2, cold1), cold2, "shared",
                            "turn 2 on B from the shared tier")
        text, cached_b = b.chat(chat_messages(IMAGE_B, 2, cold1))
        line = b.last_log_line()
        if text != cold2b:
            fail("image B on B differs from its cold reply: %r vs %r" % (text, cold2b))
        if cached_b >= cached:
            fail("image B restored as deep as image A from the shared tier (%d >= %d)"
                 % (cached_b, cached))
        b.stop()
        print("ok shared tier: turn 2 on another server HIT %d tokens past the image, cold "
              "reply; image B restored only %d" % (cached, cached_b))
    finally:
        subprocess.run(["bash", cluster, "stop", redis_dir], capture_output=True)
else:
    print("skip shared tier: no redis-server (scripts/setup.sh installs it)")
print("PASS image cache e2e")
