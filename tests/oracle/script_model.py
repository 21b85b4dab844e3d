#!/usr/bin/python3
"""Oracle test of the scripted fixture model (`qmlx make-model --script FILE`): the numpy
reference, run on assorted prompts, must continue each of them with exactly the script's
text and then <|im_end|>. Decoding uses the model's tokenizer.json with an independent
byte-level decoder. With --qmlx, the engine's `generate` must produce the same tokens.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

SCRIPTS = {
    "reasoning_xml_tools": ("qwen3_5",
        "<think>\nThe user wants the weather in two cities, so I will call the tool twice.\n"
        "</think>\n\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n"
        "</parameter>\n</function>\n</tool_call>\n<tool_call>\n<function=get_weather>\n"
        "<parameter=city>\nTokyo\n</parameter>\n</function>\n</tool_call>"),
    "json_tools_repeated": ("qwen3",
        "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}}\n</tool_call>\n"
        "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}}\n</tool_call>"),
    "plain_text": ("qwen3_next",
        "Hello! The answer is 42. Ünïcödé and emoji 🙂 work too; the the the the repeats.\n\n"
        "Done."),
}


def byte_decoder():
    """GPT-2 byte-level alphabet, inverted: character -> byte."""
    printable = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
                 + list(range(ord("®"), ord("ÿ") + 1)))
    chars = {b: chr(b) for b in printable}
    extra = 0
    for b in range(256):
        if b not in chars:
            chars[b] = chr(256 + extra)
            extra += 1
    return {c: b for b, c in chars.items()}


class Decoder:
    def __init__(self, model_dir):
        with open(os.path.join(model_dir, "tokenizer.json")) as f:
            t = json.load(f)
        self.plain = {i: s for s, i in t["model"]["vocab"].items()}
        self.added = {a["id"]: a["content"] for a in t["added_tokens"]}
        self.bytes_of = byte_decoder()

    def decode(self, ids):
        out = bytearray()
        for i in ids:
            if i in self.added:
                out += self.added[i].encode()
            else:
                out += bytes(self.bytes_of[c] for c in self.plain[i])
        return out.decode("utf-8")

    def id_of(self, content):
        return next(i for i, c in self.added.items() if c == content)


def greedy(cfg, weights, prompt, limit, stop):
    import forward
    model = forward.Model(cfg, weights)
    logits = model.forward(prompt)[-1]
    out = []
    while len(out) < limit:
        out.append(int(np.argmax(logits)))
        if out[-1] == stop:
            break
        logits = model.forward([out[-1]])[-1]
    return out


def prompts(decoder):
    """Prompts of assorted lengths and endings, including a chat-template-like one."""
    plain_ids = sorted(decoder.plain)[:len(decoder.plain) // 2]  # bytes and merges only
    im_start, im_end = decoder.id_of("<|im_start|>"), decoder.id_of("<|im_end|>")
    newline = next(i for i, s in decoder.plain.items() if s == "Ċ")
    chat = [im_start] + plain_ids[50:60] + [newline] + plain_ids[100:140] + [im_end, newline,
            im_start] + plain_ids[70:75] + [newline]
    return [[plain_ids[5]], plain_ids[10:17], [plain_ids[(i * 37) % len(plain_ids)]
                                             for i in range(130)], chat]


def run_engine(qmlx, model_dir, prompt, limit):
    cmd = [qmlx, "generate", "--model", model_dir, "--tokens", ",".join(map(str, prompt)),
           "--max-tokens", str(limit), "--json"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise RuntimeError(f"engine failed: {done.stderr.strip()}")
    return json.loads(done.stdout)["tokens"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--make-model", required=True, help="an executable with make-model")
    parser.add_argument("--reference-dir", required=True)
    parser.add_argument("--qmlx", help="also check the engine's generate")
    args = parser.parse_args()
    sys.path.insert(0, args.reference_dir)
    import checkpoint

    failures = 0
    with tempfile.TemporaryDirectory(prefix="qmlx_script_") as work:
        for name, (template, text) in SCRIPTS.items():
            script_path = os.path.join(work, name + ".txt")
            with open(script_path, "w", encoding="utf-8") as f:
                f.write(text)
            model_dir = os.path.join(work, name)
            subprocess.run([args.make_model, "make-model", "--script", script_path,
                            "--template", template, "--out", model_dir],
                           check=True, capture_output=True)
            cfg, weights = checkpoint.load(model_dir)
            decoder = Decoder(model_dir)
            im_end = decoder.id_of("<|im_end|>")
            for prompt in prompts(decoder):
                limit = len(text) + 8
                generated = greedy(cfg, weights, prompt, limit, im_end)
                ok = generated[-1] == im_end and decoder.decode(generated[:-1]) == text
                detail = "" if ok else f": got {decoder.decode(generated)!r}"
                if ok and args.qmlx:
                    engine = run_engine(args.qmlx, model_dir, prompt, len(generated))
                    ok = engine == generated
                    detail = "" if ok else f": engine tokens {engine} != reference {generated}"
                failures += not ok
                print(f"{'ok  ' if ok else 'FAIL'} {name} prompt of {len(prompt)}{detail}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
