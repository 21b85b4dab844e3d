"""Oracle: the engine's GGUF block decoding (src/kernels/gguf_blocks.cpp, through the
qmlx_gguf_dequantize tool) against the independent numpy decoder in tools/reference, on random
well-formed blocks of every supported type."""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

# Byte offsets of each block's f16 fields (set to finite values; other bytes are random).
HALF_OFFSETS = {"Q4_0": [0], "Q4_1": [0, 2], "Q5_0": [0], "Q5_1": [0, 2], "Q8_0": [0],
                "Q2_K": [80, 82], "Q3_K": [108], "Q4_K": [0, 2], "Q5_K": [0, 2], "Q6_K": [208]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tool", required=True)
    ap.add_argument("--reference-dir", required=True)
    args = ap.parse_args()
    sys.path.insert(0, args.reference_dir)
    import gguf_blocks_np as g

    rng = np.random.default_rng(7)
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for type_id, (name, elems, size) in sorted(g.TYPES.items()):
            n_blocks = 64
            if elems == 1:
                values = rng.standard_normal(4096).astype(np.float32)
                raw = {"F32": values.tobytes(), "F16": values.astype("<f2").tobytes(),
                       "BF16": (values.view(np.uint32) >> 16).astype("<u2").tobytes()}[name]
            else:
                blocks = rng.integers(0, 256, size=(n_blocks, size), dtype=np.uint8)
                for off in HALF_OFFSETS[name]:
                    halves = rng.uniform(-0.05, 0.05, n_blocks).astype("<f2")
                    blocks[:, off:off + 2] = halves.view(np.uint8).reshape(n_blocks, 2)
                raw = blocks.tobytes()
            n = len(raw) // size * elems
            src, dst = os.path.join(tmp, name + ".in"), os.path.join(tmp, name + ".out")
            with open(src, "wb") as f:
                f.write(raw)
            subprocess.run([args.tool, name, src, dst], check=True)
            engine = np.fromfile(dst, "<f4").astype(np.float64)
            expected = g.dequantize(type_id, raw, n)
            # The engine computes d * code in float32; allow its rounding only.
            err = np.max(np.abs(engine - expected)) / max(np.max(np.abs(expected)), 1e-30)
            ok = engine.shape == expected.shape and err < 1e-6
            print(f"{name:5s} values={n:6d} max_rel_err={err:.2e} {'ok' if ok else 'FAIL'}")
            failures += not ok
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
