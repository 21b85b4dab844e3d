#!/usr/bin/env python3
"""Writes a tokenizer.json of Qwen3.5's size (248,320 ids) from Qwen3's (151,669): the extra
96,651 ids are synthetic tokens, each the concatenation of two Qwen3 tokens drawn at random
(seeded; byte-level strings, so every one is valid UTF-8 or a partial sequence as real BPE
tokens are), with no merges: text encodes exactly as with Qwen3, but every mask must decide
about 248k ids, and the vocabulary's byte trie grows as a larger BPE vocabulary's does (longer
tokens that extend existing ones). Qwen3's special tokens keep their ids (151,643-151,668).
Usage: make_vocab_248k.py QWEN3_TOKENIZER_JSON OUT_TOKENIZER_JSON [--size 248320]
"""
import argparse
import json
import random


def main():
    p = argparse.ArgumentParser()
    p.add_argument("qwen3")
    p.add_argument("out")
    p.add_argument("--size", type=int, default=248320)
    a = p.parse_args()
    with open(a.qwen3) as f:
        tok = json.load(f)
    vocab = tok["model"]["vocab"]
    plain = sorted(vocab, key=vocab.get)
    next_id = 1 + max(max(vocab.values()), max(t["id"] for t in tok["added_tokens"]))
    seen = set(vocab) | {t["content"] for t in tok["added_tokens"]}
    rng = random.Random(248)
    while next_id < a.size:
        token = rng.choice(plain) + rng.choice(plain)
        if token in seen:
            continue
        seen.add(token)
        vocab[token] = next_id
        next_id += 1
    with open(a.out, "w") as f:
        json.dump(tok, f, ensure_ascii=False)
    print("%s: %d ids (%d synthetic)" % (a.out, next_id, len(vocab) - len(plain)))


if __name__ == "__main__":
    main()
