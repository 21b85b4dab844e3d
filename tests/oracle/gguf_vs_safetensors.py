"""GGUF correctness: for each architecture, the same random weights written as a Hugging Face
safetensors model (f32) and as llama.cpp-style GGUF files (F32, F16, Q8_0, Q4_K) must give the
engine the same greedy tokens and logits within the tolerance of the storage type.

Tolerances (max |a - b| / max |b| over the first step's logits, which both runs compute from the
same prompt):
  F32   1e-4   identical weights; only summation order differs.
  F16   5e-3   weights rounded to 11 significant bits (relative error <= 2^-11 each).
  Q8_0  2e-2   int8 codes: error per weight <= scale / 2 = max|w in block| / 254.
  Q4_K  3e-1   4-bit codes with 6-bit sub-block scales: error per weight up to ~1/30 of the
               sub-block range; on random weights this moves logits by tens of percent.
Measured on these models: F16 ~4e-4, Q8_0 ~6e-3, Q4_K ~0.1-0.12 (tolerances leave 3-10x room).
Greedy tokens must match exactly for F32, F16 and Q8_0 (their errors are far below the logit
gaps of these models); Q4_K is checked on logits only.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

ARCHS = ["qwen3_5", "qwen3_5_moe", "qwen3_next", "qwen3"]
# Every matrix whose rows are a multiple of 256 can take Q4_K (others fall back as llama.cpp does).
SHAPE = ["--hidden", "256", "--intermediate", "256", "--moe-intermediate", "256",
         "--shared-intermediate", "256"]
TOLERANCE = {"f32": 1e-4, "f16": 5e-3, "q8_0": 2e-2, "q4_k": 3e-1}
EXACT_TOKENS = {"f32", "f16", "q8_0"}
PROMPT = "1,5,9,17,33,65,129,200,300,400"
STEPS = 6


def generate(qmlx, model, logits_path):
    out = subprocess.run([qmlx, "generate", "--model", model, "--tokens", PROMPT, "--max-tokens",
                          str(STEPS), "--json", "--logits-out", logits_path],
                         check=True, capture_output=True, text=True).stdout
    tokens = json.loads(out)["tokens"]
    logits = np.fromfile(logits_path, "<f4").reshape(STEPS, -1)
    return tokens, logits


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--qmlx", required=True)
    args = ap.parse_args()
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for arch in ARCHS:
            st = os.path.join(tmp, arch + "-st")
            subprocess.run([args.qmlx, "make-model", "--arch", arch, "--seed", "3", "--out", st]
                           + SHAPE, check=True, capture_output=True)
            ref_tokens, ref_logits = generate(args.qmlx, st, os.path.join(tmp, "ref.bin"))
            for gtype, tol in TOLERANCE.items():
                path = os.path.join(tmp, f"{arch}-{gtype}.gguf")
                subprocess.run([args.qmlx, "make-model", "--arch", arch, "--seed", "3", "--out",
                                path, "--format", "gguf", "--gguf-type", gtype] + SHAPE,
                               check=True, capture_output=True)
                tokens, logits = generate(args.qmlx, path, os.path.join(tmp, "g.bin"))
                err = np.max(np.abs(logits[0] - ref_logits[0])) / np.max(np.abs(ref_logits[0]))
                ok = err <= tol and (gtype not in EXACT_TOKENS or tokens == ref_tokens)
                if ok and tokens == ref_tokens:
                    err_all = np.max(np.abs(logits - ref_logits)) / np.max(np.abs(ref_logits))
                    ok = err_all <= tol
                print(f"{arch:12s} {gtype:5s} step0_rel_err={err:.2e} (tol {tol:.0e}) "
                      f"tokens {'==' if tokens == ref_tokens else '!='} safetensors "
                      f"{'ok' if ok else 'FAIL'}")
                failures += not ok
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
