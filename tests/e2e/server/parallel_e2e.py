#!/usr/bin/env python3
"""`qmlx serve --parallel 4` on a scripted model (issue 18): four concurrent streaming requests
each get exactly the scripted reply, the engine batched their steps (qmlx_batch_sequences), two
requests sharing a long uncached system prompt prefill it once (the second restores the first's
shared_prefix checkpoint), and a short request sent during a long prefill gets its first token
before that prefill ends.
Usage: parallel_e2e.py QMLX_BINARY WORK_DIR
"""
import http.client
import json
import os
import shutil
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from e2e_support import fail, free_port, metric, wait_healthy  # noqa: E402

QMLX, WORK = sys.argv[1], sys.argv[2]
KEY = "parallel-key"
SCRIPT = "Four requests at once, each with its own reply."


def stream_chat(port, text, events, max_tokens=64, system=None):
    """Streams one chat request; appends (time, kind, data) to `events` as they arrive:
    kind "progress" (prefill progress), "content" or "done". Returns the reply's text."""
    messages = [{"role": "user", "content": text}]
    if system is not None:
        messages.insert(0, {"role": "system", "content": system})
    body = {"model": "fixture", "stream": True, "temperature": 0, "max_tokens": max_tokens,
            "return_progress": True, "messages": messages}
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    conn.request("POST", "/v1/chat/completions", json.dumps(body),
                 {"Content-Type": "application/json", "Authorization": "Bearer " + KEY})
    res = conn.getresponse()
    if res.status != 200:
        fail("status %d: %s" % (res.status, res.read()[:300]))
    reply = ""
    for raw in res:
        line = raw.decode().strip()
        if not line.startswith("data: "):
            continue
        data = line[6:]
        if data == "[DONE]":
            events.append((time.monotonic(), "done", None))
            break
        chunk = json.loads(data)
        if "prompt_progress" in chunk:
            events.append((time.monotonic(), "progress", chunk))
            continue
        for choice in chunk.get("choices", []):
            piece = choice.get("delta", {}).get("content") or ""
            if piece:
                events.append((time.monotonic(), "content", piece))
                reply += piece
    conn.close()
    return reply



def main():
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    with open(os.path.join(WORK, "script.txt"), "w") as f:
        f.write(SCRIPT)
    model = os.path.join(WORK, "model")
    subprocess.run([QMLX, "make-model", "--out", model, "--script", os.path.join(WORK, "script.txt"),
                    "--arch", "qwen3_5", "--template", "qwen3"], check=True,
                   stdout=subprocess.DEVNULL)
    # The prefix cache (on, as by default) keeps its store in the work folder.
    cache_config = os.path.join(WORK, "cache.json")
    with open(cache_config, "w") as f:
        json.dump({"cache": {"disk_cache_dir": os.path.join(WORK, "store"), "fsync": False}}, f)
    port, metrics_port = free_port(), free_port()
    log_path = os.path.join(WORK, "serve.log")
    log = open(log_path, "w")
    server = subprocess.Popen(
        [QMLX, "serve", "--model", model, "--port", str(port), "--metrics-port", str(metrics_port),
         "--api-key", KEY, "--model-id", "fixture", "--parallel", "4", "--max-context", "65536",
         "--cache-config", cache_config,
         "--threads", "2"], stderr=log)
    try:
        wait_healthy(port, server, log_path)
        with open(log_path) as f:
            ready = [l for l in f if "ready:" in l]
        if not ready or "parallel=4" not in ready[0] or "batch_memory=" not in ready[0]:
            fail("the start-up line does not give the slots and the memory budget: %s" % ready)

        # Four at once: each gets exactly the script.
        replies = [None] * 4
        def run(i):
            replies[i] = stream_chat(port, "conversation number %d" % i, [])
        threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for i, reply in enumerate(replies):
            if reply != SCRIPT:
                fail("request %d got %r, want %r" % (i, reply, SCRIPT))
        print("ok: four concurrent streams each got the scripted reply")
        steps = metric(metrics_port, "qmlx_batch_sequences_count")
        sequences = metric(metrics_port, "qmlx_batch_sequences_sum")
        if steps <= 0 or sequences / steps <= 1.0:
            fail("no engine step batched several sequences (%s sequences in %s steps)"
                 % (sequences, steps))
        print("ok: %.0f engine steps fed %.0f sequences" % (steps, sequences))

        # A burst of sub-agents: one long system prompt nobody cached yet, two different tasks,
        # sent at once. The second waits for the first's checkpoint where they part and
        # prefills only its own message (issue 18, item 4).
        system = "You are a sub-agent. " + " ".join("rule%d" % (i % 499) for i in range(3000))
        prefilled_before = metric(metrics_port, "qmlx_prefill_tokens_total")
        prompts_before = metric(metrics_port, "qmlx_prompt_tokens_total")
        burst = [None] * 2
        def sub_agent(i):
            burst[i] = stream_chat(port, "task %d: look at module %d" % (i, i), [], system=system)
        threads = [threading.Thread(target=sub_agent, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if burst != [SCRIPT, SCRIPT]:
            fail("the sub-agents got %r" % burst)
        # A request is counted just after its last event reaches the client: wait for both.
        deadline = time.monotonic() + 30
        while (metric(metrics_port, "qmlx_prompt_tokens_total") - prompts_before < 2 * 20000
               and time.monotonic() < deadline):
            time.sleep(0.05)
        prefilled = metric(metrics_port, "qmlx_prefill_tokens_total") - prefilled_before
        prompts = metric(metrics_port, "qmlx_prompt_tokens_total") - prompts_before
        if metric(metrics_port, "qmlx_shared_prefix_waits_total") != 1:
            fail("the second sub-agent did not wait for the first's shared prefix")
        with open(log_path) as f:
            shared = [l for l in f if "kind=shared_prefix" in l and "shared_wait=" in l]
        if len(shared) != 1:
            fail("no request line says it restored the shared prefix: %s" % shared)
        # The shared prefix is nearly all of each prompt: prefilled once, about half of the two.
        if prefilled > 0.65 * prompts:
            fail("%.0f of %.0f prompt tokens prefilled: the shared prefix went in twice"
                 % (prefilled, prompts))
        print("ok: two sub-agents with one system prompt prefilled %.0f of %.0f tokens (%s)"
              % (prefilled, prompts, shared[0].split("uid=")[1].split(" lookup")[0]))

        # A long prefill, then a short request while it runs.
        long_events, short_events = [], []
        # About 47k tokens: seconds of prefill on this tiny model (its attention is what costs).
        long_text = " ".join("word%d" % (i % 997) for i in range(8000))
        long_thread = threading.Thread(
            target=lambda: stream_chat(port, long_text, long_events, max_tokens=4))
        long_thread.start()
        deadline = time.monotonic() + 60
        while not any(k == "progress" and e["prompt_progress"]["processed"] > 0
                      for _, k, e in long_events):
            if time.monotonic() > deadline or not long_thread.is_alive():
                fail("the long prefill never reported progress")
            time.sleep(0.01)
        short_reply = stream_chat(port, "a short question", short_events, max_tokens=64)
        short_first = next(t for t, k, _ in short_events if k == "content")
        long_thread.join()
        long_first = next((t for t, k, _ in long_events if k == "content"), None)
        if short_reply != SCRIPT:
            fail("the short request got %r" % short_reply)
        if long_first is None or short_first >= long_first:
            fail("the short request's first token came after the long prefill ended")
        print("ok: a short request's first token came %.2fs before the long prefill ended"
              % (long_first - short_first))
        with open(log_path) as f:
            if "generation failed" in f.read():
                fail("a generation failed; see " + log_path)
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()


main()
