#!/usr/bin/env python3
"""Writes a tokenizer.json of Qwen3.5's size (248,320 ids) from Qwen3's (151,669): the extra
96,651 ids are synthetic tokens, each the concatenation of two Qwen3 tokens drawn at random
(seeded) among those made of letters only, the first maybe with its leading space: like the
real additions (words, mostly of more scripts) they extend existing tokens and do not straddle
JSON punctuation (pairs of any tokens would put quotes and brackets mid-token far more often
than a trained vocabulary does). Byte-level strings, so a token may hold a partial UTF-8
sequence, as real BPE tokens do. No merges: text encodes exactly as with Qwen3, but every mask
must decide about 248k ids. Qwen3's special tokens keep their ids (151,643-151,668).
Usage: make_vocab_248k.py QWEN3_TOKENIZER_JSON OUT_TOKENIZER_JSON [--size 248320]
"""
import argparse
import json
import random


def byte_level_decoder():
    """Byte-level BPE's spelling of bytes: printable Latin-1 bytes stand for themselves, the
    others (controls, space, ...) for code points from 256 up, in byte order."""
    kept = set(range(ord("!"), ord("~") + 1)) | set(range(0xA1, 0xAD)) | set(range(0xAE, 0x100))
    decoder, extra = {}, 0
    for b in range(256):
        if b in kept:
            decoder[chr(b)] = b
        else:
            decoder[chr(256 + extra)] = b
            extra += 1
    return decoder


def is_word(token, decoder, space_allowed):
    """Letters only (a partial UTF-8 sequence at either end allowed), maybe after one space."""
    raw = bytes(decoder[c] for c in token)
    if space_allowed and raw.startswith(b" "):
        raw = raw[1:]
    text = raw.decode("utf-8", errors="ignore")
    return text.isalpha()


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
    decoder = byte_level_decoder()
    words = [t for t in plain if is_word(t, decoder, True)]
    rest = [t for t in plain if is_word(t, decoder, False)]
    next_id = 1 + max(max(vocab.values()), max(t["id"] for t in tok["added_tokens"]))
    seen = set(vocab) | {t["content"] for t in tok["added_tokens"]}
    rng = random.Random(248)
    while next_id < a.size:
        token = rng.choice(words) + rng.choice(rest)
        if token in seen:
            continue
        seen.add(token)
        vocab[token] = next_id
        next_id += 1
    with open(a.out, "w") as f:
        json.dump(tok, f, ensure_ascii=False)
    print("%s: %d ids (%d synthetic, from %d letter tokens)" % (
        a.out, next_id, len(vocab) - len(plain), len(words)))


if __name__ == "__main__":
    main()
