#!/usr/bin/python3
"""Oracle self-check: the reference's chunked Gated DeltaNet (model-spec §3.6) and its
per-token recurrence give the same logits, on every hybrid architecture, for prompts that
end inside, exactly at, and just past a 64-token chunk, and over several chunks.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--make-model", required=True, help="an executable with make-model")
    parser.add_argument("--reference-dir", required=True)
    args = parser.parse_args()
    sys.path.insert(0, args.reference_dir)
    import checkpoint
    import forward

    failures = 0
    with tempfile.TemporaryDirectory(prefix="qmlx_gdn_") as work:
        for arch in ["qwen3_5_moe", "qwen3_5", "qwen3_next"]:
            model_dir = os.path.join(work, arch)
            subprocess.run([args.make_model, "make-model", "--arch", arch, "--out", model_dir,
                            "--layout", "mlx", "--bits", "4", "--seed", "3"],
                           check=True, capture_output=True)
            cfg, weights = checkpoint.load(model_dir)
            for length in (5, 64, 65, 200):
                tokens = [(i * 31 + 7) % 500 for i in range(length)]
                chunked = forward.Model(cfg, weights, "chunked").forward(tokens)
                recurrent = forward.Model(cfg, weights, "recurrent").forward(tokens)
                error = np.abs(chunked - recurrent).max() / np.abs(recurrent).max()
                ok = error < 1e-9
                failures += not ok
                print(f"{'ok  ' if ok else 'FAIL'} {arch} {length} tokens: relative {error:.2e}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
