#!/usr/bin/python3
"""Cache benchmark (issue 5): what the disk cache buys on the Qwen3.5-0.8B-shaped model.

In one run, against the real `qmlx serve`:
  * disk sequential read speed (O_DIRECT dd of a scratch file in the store's folder);
  * for each prompt length: TTFT cold (empty cache), then TTFT warm after a server restart
    with the store's files dropped from the page cache, so the restore really reads the disk;
    the restore's effective GB/s (bytes read / restore time) beside the disk's;
  * decode tokens/s with checkpoints on (cache on, an `interval` snapshot every 64 tokens)
    and off (both tiers off);
  * disk bytes held after a 20-turn conversation against the sum of full copies (what a
    cache that copies the whole state at every checkpoint would write).
Usage: bench/cache/cache_bench.py QMLX MODEL_DIR WORK_DIR [PROMPT_TOKENS ...] [--ttft-only]
Prints a Markdown report; medians where runs repeat.
"""
import json, os, socket, statistics, subprocess, sys, time, urllib.error, urllib.request

qmlx, model, work = sys.argv[1], sys.argv[2], sys.argv[3]
ttft_only = "--ttft-only" in sys.argv[4:]  # just the cold/warm table (long prompts take long)
lengths = [int(n) for n in sys.argv[4:] if n != "--ttft-only"] or [1024, 4096]
store = os.path.join(work, "store")
os.makedirs(work, exist_ok=True)


def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p


class Server:
    def __init__(self, cache):
        cfg = os.path.join(work, "cache.json")
        with open(cfg, "w") as f:
            json.dump({"cache": {"disk_cache_dir": store, **cache}}, f)
        self.port = free_port()
        self.log = open(os.path.join(work, "server.log"), "a")
        self.proc = subprocess.Popen([qmlx, "serve", "--model", model, "--cache-config", cfg,
                                      "--port", str(self.port), "--max-context", "200000"],
                                     stderr=self.log)
        for _ in range(6000):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=1)
                return
            except Exception:
                time.sleep(0.1)
        raise SystemExit("server did not start")

    def complete(self, ids, max_tokens):
        body = json.dumps({"prompt": ids, "max_tokens": max_tokens, "temperature": 0}).encode()
        print(f"request: {len(ids)} prompt tokens, {max_tokens} to generate", file=sys.stderr)
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}/v1/completions", data=body,
                                     headers={"Authorization": "Bearer bench"})
        try:
            return json.load(urllib.request.urlopen(req, timeout=7200))
        except urllib.error.HTTPError as e:
            self.stop()
            raise SystemExit(f"request failed: {e.code} {e.read().decode()}")

    def stop(self):
        self.proc.terminate(); self.proc.wait(); self.log.close()


def drop_store_from_page_cache():
    for root, _, files in os.walk(store):
        for f in files:
            fd = os.open(os.path.join(root, f), os.O_RDONLY)
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            os.close(fd)


def disk_read_gbps():
    path = os.path.join(work, "ddtest.bin")
    subprocess.run(["dd", "if=/dev/urandom", f"of={path}", "bs=8M", "count=128", "oflag=direct"],
                   check=True, capture_output=True)
    speeds = []
    for _ in range(3):
        t = time.perf_counter()
        subprocess.run(["dd", f"if={path}", "of=/dev/null", "bs=8M", "iflag=direct"], check=True,
                       capture_output=True)
        speeds.append(1024 * 2**20 / (time.perf_counter() - t) / 1e9)
    os.remove(path)
    return statistics.median(speeds)


def vocab_size():
    # Ordinary (non-special) tokens of the tokenizer: every id below is a valid prompt token.
    with open(os.path.join(model, "tokenizer.json")) as f:
        return len(json.load(f)["model"]["vocab"])


VOCAB = vocab_size()


def prompt_ids(n, seed):
    # Token ids spread over the vocabulary, deterministic per seed (no tokenizer needed).
    return [(seed * 7919 + i * 104729) % (VOCAB - 256) + 256 for i in range(n)]


def rm_store():
    subprocess.run(["rm", "-rf", store], check=True)


out = []
disk = disk_read_gbps()
out.append(f"Disk sequential read (O_DIRECT, 8 MiB blocks, median of 3): **{disk:.2f} GB/s**\n")
out.append("| prompt tokens | TTFT cold s | TTFT warm s (restart, page cache dropped) | speed-up | "
           "restore bytes | restore ms | restore GB/s | disk GB/s |")
out.append("|---|---|---|---|---|---|---|---|")
on = {"memory_prefix_cache": False, "disk_kv_cache": True, "fsync": True}
for n in lengths:
    rm_store()
    ids = prompt_ids(n, n)
    s = Server(on)
    cold = s.complete(ids, 1)["timings"]
    s.stop()  # SIGTERM: the writer finishes its queue
    drop_store_from_page_cache()
    s = Server(on)
    warm = s.complete(ids, 1)["timings"]
    s.stop()
    c = warm["cache"]
    restore_ms = c["lookup_ms"] + c["read_ms"] + c["verify_ms"] + c["install_ms"]
    gbps = c["restore_bytes"] / (restore_ms / 1e3) / 1e9 if restore_ms > 0 else 0
    assert warm["cached"] == n, warm
    out.append(f"| {n} | {cold['ttft_ms']/1e3:.2f} | {warm['ttft_ms']/1e3:.3f} | "
               f"{cold['ttft_ms']/max(warm['ttft_ms'],1e-9):.0f}x | {c['restore_bytes']/2**20:.1f} MiB | "
               f"{restore_ms:.1f} (read {c['read_ms']:.1f}, verify {c['verify_ms']:.1f}, install "
               f"{c['install_ms']:.1f}) | {gbps:.2f} | {disk:.2f} |")

if ttft_only:
    print("\n".join(out))
    sys.exit(0)

# Decode with checkpoints on vs off.
decode = {}
for label, cache in (("on (interval 64)", {**on, "memory_prefix_cache": True,
                                            "checkpoint_interval_tokens": 64}),
                     ("off", {"memory_prefix_cache": False, "disk_kv_cache": False})):
    rm_store()
    s = Server(cache)
    rates = [s.complete(prompt_ids(128, 900 + r), 256)["timings"]["decode_tokens_per_second"]
             for r in range(3)]
    s.stop()
    decode[label] = statistics.median(rates)
out.append("\n| decode, 256 tokens after a 128-token prompt | tok/s (median of 3) |")
out.append("|---|---|")
for label, rate in decode.items():
    out.append(f"| checkpoints {label} | {rate:.2f} |")
out.append(f"| ratio on / off | {decode['on (interval 64)'] / decode['off']:.3f} |")

# A 20-turn conversation: disk held vs full copies.
rm_store()
s = Server(on)
ids = prompt_ids(512, 5)
for turn in range(20):
    r = s.complete(ids, 16)
    ids = ids + prompt_ids(64, 100 + turn)  # the reply is not resent: a new message each turn
s.stop()
held = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(store) for f in fs)
snaps = subprocess.run([qmlx, "cache", "ls", "--cache-config", os.path.join(work, "cache.json"),
                        "--json"], capture_output=True, text=True, check=True)
listing = json.loads(snaps.stdout)
listing = listing["snapshots"] if isinstance(listing, dict) else listing
tokens = [x["tokens"] for x in listing]
# Bytes per token of K/V and the fixed state, from the store itself: a snapshot holds the state
# plus its tail rows; chunks hold the rest.
kv_per_token = (held - sum(x["bytes"] for x in listing)) / max(1, max(tokens))
state = min(x["bytes"] for x in listing)
full = sum(state + kv_per_token * t for t in tokens)
out.append(f"\n20-turn conversation (512 → {len(ids)} tokens, {len(tokens)} snapshots): disk held "
           f"**{held/2**20:.1f} MiB**; full copies of the same snapshots would be "
           f"**{full/2**20:.1f} MiB** ({full/held:.1f}x).")
print("\n".join(out))
