#!/usr/bin/env python3
"""Puts a tokenizer.json's vocabulary into a GGUF model, so that llama.cpp (node-llama-cpp in
peers.mjs) runs its grammar sampler over the same vocabulary as the other engines. The model
is a tiny random one from `qmlx make-model --format gguf --arch qwen3 --vocab N` (N at least
the tokenizer's ids); this rewrites its tokenizer.ggml.* metadata (tokens by id, their types,
the merges, the end-of-turn id) and copies the tensors unchanged. Ids the tokenizer does not
use stay "[PAD<id>]" tokens of type unused, as llama.cpp's converter pads them.
Usage: vocab_gguf.py MODEL.gguf TOKENIZER.json OUT.gguf
"""
import json
import struct
import sys

# GGUF value types (the format's numbering).
U32, I32, BOOL, STRING, ARRAY = 4, 5, 7, 8, 9
SCALAR_SIZES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
# llama.cpp's token types.
NORMAL, CONTROL, USER_DEFINED, UNUSED = 1, 3, 4, 5


class Reader:
    def __init__(self, data):
        self.data, self.pos = data, 0

    def take(self, fmt):
        values = struct.unpack_from("<" + fmt, self.data, self.pos)
        self.pos += struct.calcsize("<" + fmt)
        return values[0] if len(values) == 1 else values

    def string(self):
        n = self.take("Q")
        self.pos += n
        return self.data[self.pos - n:self.pos].decode()

    def skip_value(self, vtype):
        if vtype == STRING:
            self.string()
        elif vtype == ARRAY:
            etype, n = self.take("I"), self.take("Q")
            for _ in range(n):
                self.skip_value(etype)
        else:
            self.pos += SCALAR_SIZES[vtype]


def gguf_string(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def kv(key, vtype, payload):
    return gguf_string(key) + struct.pack("<I", vtype) + payload


def string_array(values):
    return struct.pack("<IQ", STRING, len(values)) + b"".join(gguf_string(v) for v in values)


def i32_array(values):
    return struct.pack("<IQ", I32, len(values)) + struct.pack("<%di" % len(values), *values)


def main():
    model_path, tokenizer_path, out_path = sys.argv[1:4]
    data = open(model_path, "rb").read()
    r = Reader(data)
    magic, version, n_tensors, n_kv = r.take("4sIQQ")
    if magic != b"GGUF" or version != 3:
        sys.exit("%s: not a GGUF v3 file" % model_path)
    kept, alignment, n_vocab = [], 32, None
    for _ in range(n_kv):
        start = r.pos
        key = r.string()
        vtype = r.take("I")
        if key == "general.alignment":
            alignment = struct.unpack_from("<I", data, r.pos)[0]
        if key == "tokenizer.ggml.tokens":
            n_vocab = struct.unpack_from("<Q", data, r.pos + 4)[0]
        r.skip_value(vtype)
        if key not in ("tokenizer.ggml.tokens", "tokenizer.ggml.token_type",
                       "tokenizer.ggml.merges", "tokenizer.ggml.eos_token_id",
                       "tokenizer.ggml.bos_token_id", "tokenizer.ggml.padding_token_id"):
            kept.append(data[start:r.pos])
    for _ in range(n_tensors):
        r.string()
        n_dims = r.take("I")
        r.pos += 8 * n_dims + 4 + 8  # dims, type, offset
    infos_end = r.pos
    data_start = (infos_end + alignment - 1) // alignment * alignment

    tok = json.load(open(tokenizer_path))
    names = {v: k for k, v in tok["model"]["vocab"].items()}
    types = {v: NORMAL for v in names}
    for t in tok["added_tokens"]:
        names[t["id"]] = t["content"]
        types[t["id"]] = CONTROL if t["special"] else USER_DEFINED
    if max(names) >= n_vocab:
        sys.exit("the model has %d token rows, the tokenizer %d ids" % (n_vocab, max(names) + 1))
    tokens = [names.get(i, "[PAD%d]" % i) for i in range(n_vocab)]
    token_types = [types.get(i, UNUSED) for i in range(n_vocab)]
    merges = [m if isinstance(m, str) else " ".join(m) for m in tok["model"]["merges"]]
    ids = {t["content"]: t["id"] for t in tok["added_tokens"]}
    added = [
        kv("tokenizer.ggml.tokens", ARRAY, string_array(tokens)),
        kv("tokenizer.ggml.token_type", ARRAY, i32_array(token_types)),
        kv("tokenizer.ggml.merges", ARRAY, string_array(merges)),
        kv("tokenizer.ggml.eos_token_id", U32, struct.pack("<I", ids["<|im_end|>"])),
        kv("tokenizer.ggml.bos_token_id", U32, struct.pack("<I", ids["<|endoftext|>"])),
        kv("tokenizer.ggml.padding_token_id", U32, struct.pack("<I", ids["<|endoftext|>"])),
    ]
    # The tensor infos are the bytes between the last key-value pair and the padding.
    kv_end = Reader(data)
    kv_end.take("4sIQQ")
    for _ in range(n_kv):
        kv_end.string()
        kv_end.skip_value(kv_end.take("I"))
    tensor_infos = data[kv_end.pos:infos_end]
    head = (struct.pack("<4sIQQ", b"GGUF", 3, n_tensors, len(kept) + len(added)) +
            b"".join(kept) + b"".join(added) + tensor_infos)
    head += b"\0" * ((-len(head)) % alignment)
    with open(out_path, "wb") as f:
        f.write(head)
        f.write(data[data_start:])
    print("%s: %d tokens (%d from the tokenizer), %d merges" % (
        out_path, n_vocab, len(names), len(merges)))


if __name__ == "__main__":
    main()
