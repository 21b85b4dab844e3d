"""Decodes ggml's GGUF tensor types to float64 with numpy, from the block layouts documented in
ggml-common.h (struct sizes and field order) and the decoding rules of ggml-quants.c. Written
independently of the engine's kernels/gguf_blocks.cpp; vectorised over all blocks at once.

Every block format starts (or ends) with f16 scale fields; codes are little-endian bit fields.
"""
import numpy as np

QK = 32
QKK = 256

# ggml id -> (name, values per block, bytes per block)
TYPES = {
    0: ("F32", 1, 4),
    1: ("F16", 1, 2),
    30: ("BF16", 1, 2),
    2: ("Q4_0", QK, 18),
    3: ("Q4_1", QK, 20),
    6: ("Q5_0", QK, 22),
    7: ("Q5_1", QK, 24),
    8: ("Q8_0", QK, 34),
    10: ("Q2_K", QKK, 84),
    11: ("Q3_K", QKK, 110),
    12: ("Q4_K", QKK, 144),
    13: ("Q5_K", QKK, 176),
    14: ("Q6_K", QKK, 210),
}
ID_BY_NAME = {name: i for i, (name, _, _) in TYPES.items()}


def _f16(blocks, offset):
    """The f16 field at byte `offset` of every block, as a column of float64."""
    return blocks[:, offset:offset + 2].copy().view("<f2").astype(np.float64)


def _bits(u8):
    """[n, b] bytes -> [n, b, 8] bits, least significant first."""
    return (u8[:, :, None] >> np.arange(8, dtype=np.uint8)) & 1


def _nibbles_low_then_high(qs):
    """[n, 16] bytes -> [n, 32] codes: value j < 16 is the low nibble of byte j, j >= 16 high."""
    return np.concatenate([qs & 0x0F, qs >> 4], axis=1).astype(np.int64)


def _q4_0(b):
    return _f16(b, 0) * (_nibbles_low_then_high(b[:, 2:18]) - 8)


def _q4_1(b):
    return _f16(b, 0) * _nibbles_low_then_high(b[:, 4:20]) + _f16(b, 2)


def _fifth_bits(qh4):
    """[n, 4] bytes (one little-endian u32) -> [n, 32] bits, value i gets bit i."""
    return _bits(qh4).reshape(-1, 32).astype(np.int64)


def _q5_0(b):
    codes = _nibbles_low_then_high(b[:, 6:22]) + 16 * _fifth_bits(b[:, 2:6])
    return _f16(b, 0) * (codes - 16)


def _q5_1(b):
    codes = _nibbles_low_then_high(b[:, 8:24]) + 16 * _fifth_bits(b[:, 4:8])
    return _f16(b, 0) * codes + _f16(b, 2)


def _q8_0(b):
    return _f16(b, 0) * b[:, 2:34].view(np.int8).astype(np.int64)


def _q2_k(b):
    # 16 sub-blocks of 16 values. Value v: half h = v // 128, plane p = (v % 128) // 32 (bits
    # 2p..2p+1), byte 32h + v % 32 of qs; scale byte v // 16 (low nibble scale, high min).
    v = np.arange(QKK)
    qs = b[:, 16:80].astype(np.int64)
    codes = (qs[:, 32 * (v // 128) + v % 32] >> (2 * ((v % 128) // 32))) & 3
    sc = b[:, 0:16].astype(np.int64)[:, v // 16]
    return _f16(b, 80) * (sc & 15) * codes - _f16(b, 82) * (sc >> 4)


def _q3_k(b):
    v = np.arange(QKK)
    hmask = b[:, 0:32].astype(np.int64)
    qs = b[:, 32:96].astype(np.int64)
    packed = b[:, 96:108].astype(np.int64)
    low2 = (qs[:, 32 * (v // 128) + v % 32] >> (2 * ((v % 128) // 32))) & 3
    # hmask bit index counts the 2-bit planes over both halves: 4 * half + plane.
    high = (hmask[:, v % 32] >> (v // 32)) & 1
    codes = low2 - 4 * (1 - high)
    s = np.arange(16)
    low4 = np.where(s < 8, packed[:, s % 8] & 15, packed[:, s % 8] >> 4)
    top2 = (packed[:, 8 + s % 4] >> (2 * (s // 4))) & 3
    scales = (low4 | (top2 << 4)) - 32
    return _f16(b, 108) * scales[:, v // 16] * codes


def _six_bit_scales_mins(packed):
    """[n, 12] bytes -> ([n, 8] scales, [n, 8] mins) of the Q4_K/Q5_K packing."""
    p = packed.astype(np.int64)
    sc = np.empty((p.shape[0], 8), np.int64)
    mn = np.empty_like(sc)
    sc[:, :4] = p[:, 0:4] & 63
    mn[:, :4] = p[:, 4:8] & 63
    sc[:, 4:] = (p[:, 8:12] & 15) | ((p[:, 0:4] >> 6) << 4)
    mn[:, 4:] = (p[:, 8:12] >> 4) | ((p[:, 4:8] >> 6) << 4)
    return sc, mn


def _q4_k_like(b, qs_offset, qh_offset):
    v = np.arange(QKK)
    sub = v // 32  # 8 sub-blocks of 32: chunk = sub // 2 selects 32 bytes, sub % 2 the nibble
    qs = b[:, qs_offset:qs_offset + 128].astype(np.int64)
    codes = (qs[:, 32 * (sub // 2) + v % 32] >> (4 * (sub % 2))) & 15
    if qh_offset is not None:
        qh = b[:, qh_offset:qh_offset + 32].astype(np.int64)
        codes = codes + 16 * ((qh[:, v % 32] >> sub) & 1)
    sc, mn = _six_bit_scales_mins(b[:, 4:16])
    return _f16(b, 0) * sc[:, sub] * codes - _f16(b, 2) * mn[:, sub]


def _q4_k(b):
    return _q4_k_like(b, 16, None)


def _q5_k(b):
    return _q4_k_like(b, 48, 16)


def _q6_k(b):
    v = np.arange(QKK)
    half, w = v // 128, v % 128
    quarter, l = w // 32, w % 32  # value l + 32 * quarter of the half
    ql = b[:, 0:128].astype(np.int64)
    qh = b[:, 128:192].astype(np.int64)
    low = (ql[:, 64 * half + l + 32 * (quarter % 2)] >> (4 * (quarter // 2))) & 15
    high = (qh[:, 32 * half + l] >> (2 * quarter)) & 3
    codes = (low | (high << 4)) - 32
    scales = b[:, 192:208].view(np.int8).astype(np.int64)
    return _f16(b, 208) * scales[:, 8 * half + l // 16 + 2 * quarter] * codes


_DECODERS = {
    "Q4_0": _q4_0, "Q4_1": _q4_1, "Q5_0": _q5_0, "Q5_1": _q5_1, "Q8_0": _q8_0,
    "Q2_K": _q2_k, "Q3_K": _q3_k, "Q4_K": _q4_k, "Q5_K": _q5_k, "Q6_K": _q6_k,
}


def nbytes(type_id, n):
    _, elems, size = TYPES[type_id]
    return n // elems * size


def dequantize(type_id, raw, n):
    """Decodes n values of ggml type `type_id` from the bytes `raw` to float64."""
    if type_id not in TYPES:
        raise ValueError(f"unsupported ggml type id {type_id}")
    name, elems, size = TYPES[type_id]
    data = np.frombuffer(raw, np.uint8, count=nbytes(type_id, n))
    if name == "F32":
        return data.view("<f4").astype(np.float64)
    if name == "F16":
        return data.view("<f2").astype(np.float64)
    if name == "BF16":
        return (data.view("<u2").astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    blocks = data.reshape(-1, size)
    return _DECODERS[name](blocks).reshape(-1)
