"""Reads safetensors files (single or sharded) into numpy arrays, with numpy only.

The format: 8-byte little-endian header length, a JSON header mapping each tensor name to
its dtype, shape and [begin, end) byte range relative to the end of the header, then data.
"""
import json
import os
import struct

import numpy as np

_DTYPES = {
    "F32": np.dtype("<f4"),
    "F16": np.dtype("<f2"),
    "F64": np.dtype("<f8"),
    "U32": np.dtype("<u4"),
    "I32": np.dtype("<i4"),
    "U8": np.dtype("u1"),
    "BF16": np.dtype("<u2"),  # decoded below
}


def _bf16_to_f32(raw):
    return (raw.astype(np.uint32) << 16).view(np.float32)


def read_file(path):
    """Returns {name: array}; floats come back as float32 (bf16/f16 widened exactly)."""
    with open(path, "rb") as f:
        data = f.read()
    (header_size,) = struct.unpack("<Q", data[:8])
    if 8 + header_size > len(data):
        raise ValueError(f"{path}: header larger than the file")
    header = json.loads(data[8:8 + header_size])
    body = memoryview(data)[8 + header_size:]
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        dtype = _DTYPES[info["dtype"]]
        array = np.frombuffer(body[begin:end], dtype=dtype).reshape(info["shape"])
        if info["dtype"] == "BF16":
            array = _bf16_to_f32(array)
        elif info["dtype"] == "F16":
            array = array.astype(np.float32)
        tensors[name] = array
    return tensors


def read_model(model_dir):
    """All tensors of a model folder (model.safetensors or the shards its index lists)."""
    index_path = os.path.join(model_dir, "model.safetensors.index.json")
    if os.path.exists(index_path):
        with open(index_path) as f:
            files = sorted(set(json.load(f)["weight_map"].values()))
    else:
        files = ["model.safetensors"]
    tensors = {}
    for name in files:
        tensors.update(read_file(os.path.join(model_dir, name)))
    return tensors
