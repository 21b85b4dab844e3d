#!/usr/bin/python3
"""Oracle test: the engine's MTP head against the independent numpy reference (tools/reference).

For Qwen3.5 (dense and MoE) and Qwen3-Next, in HF and MLX layouts (float and MLX-quantized,
tied and untied heads) and as llama.cpp-style GGUF files (F32), it writes a tiny random
model with `make-model --mtp`, runs qmlx_mtp_logits (prompt prefill, MTP prefill over every
prompt position, then one MTP row per greedy step, so the head's K/V cache grows over many
positions) and the reference on the same schedule, and checks every MTP logits row
(max|a-b| / max|b| <= 1e-4, the engine-vs-reference tolerance) and the main model's greedy
tokens. A GGUF file is checked against the reference of the HF f32 file with the same seed.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

TOLERANCE = 1e-4
STEPS = 8
PROMPTS = [7, 65]  # 65 rows: more than one 64-token chunk in the main model's prefill

CASES = [  # (arch, name, make-model flags)
    ("qwen3_5", "hf-f32", ["--layout", "hf", "--dtype", "f32"]),
    ("qwen3_5", "mlx-bf16", ["--layout", "mlx", "--dtype", "bf16"]),
    ("qwen3_5", "mlx-q4-tied", ["--layout", "mlx", "--bits", "4", "--group-size", "32", "--tie"]),
    ("qwen3_5_moe", "hf-f32", ["--layout", "hf", "--dtype", "f32"]),
    ("qwen3_5_moe", "mlx-q4", ["--layout", "mlx", "--bits", "4", "--group-size", "64"]),
    ("qwen3_next", "hf-bf16", ["--layout", "hf", "--dtype", "bf16"]),
    ("qwen3_next", "mlx-q5", ["--layout", "mlx", "--bits", "5", "--group-size", "32"]),
]
GGUF_CASES = ["qwen3_5", "qwen3_5_moe", "qwen3_next"]


def prompt(length, salt):
    return [(i * 7919 + salt * 104729 + 13) % 300 for i in range(length)]


def run_tool(tool, model, tokens, work):
    out = os.path.join(work, "mtp_logits.bin")
    done = subprocess.run([tool, model, ",".join(map(str, tokens)), str(STEPS), out],
                          capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise RuntimeError(f"qmlx_mtp_logits failed ({done.returncode}): {done.stderr}")
    return json.loads(done.stdout)["tokens"], np.fromfile(out, "<f4").reshape(STEPS, -1)


def run_reference(cfg, weights, tokens):
    import forward
    main = forward.Model(cfg, weights, "chunked")
    mtp = forward.MtpHead(cfg, weights)
    logits = main.forward(tokens)[-1]
    greedy = [int(np.argmax(logits))]
    rows = [mtp.forward(main.hidden, list(tokens[1:]) + greedy)[-1]]
    for _ in range(STEPS - 1):
        logits = main.forward([greedy[-1]])[-1]
        greedy.append(int(np.argmax(logits)))
        rows.append(mtp.forward(main.hidden, [greedy[-1]])[-1])
    return greedy, np.array(rows)


def compare(label, engine, reference):
    (e_tokens, e_rows), (r_tokens, r_rows) = engine, reference
    if e_tokens != r_tokens:
        return [f"{label}: greedy tokens differ: engine {e_tokens} reference {r_tokens}"]
    if e_rows.shape != r_rows.shape:
        return [f"{label}: MTP logits shape {e_rows.shape}, reference {r_rows.shape}"]
    for i in range(len(r_rows)):
        error = np.abs(e_rows[i] - r_rows[i]).max() / np.abs(r_rows[i]).max()
        if not error <= TOLERANCE:
            return [f"{label}: MTP row {i} relative error {error:.3g} > {TOLERANCE}"]
    return []


def make(args, arch, out, seed, flags):
    subprocess.run([args.make_model, "make-model", "--arch", arch, "--out", out, "--seed", str(seed), "--mtp"]
                   + flags, check=True, capture_output=True)


def check(args, arch, name, models, reference_dir, work):
    """`models`: the engine's model paths, all checked against the reference of reference_dir."""
    import checkpoint
    cfg, weights = checkpoint.load(reference_dir)
    if "mtp.fc.weight" not in weights:
        return [f"{arch} {name}: the reference found no MTP head in {reference_dir}"]
    problems = []
    for salt, length in enumerate(PROMPTS):
        tokens = prompt(length, salt)
        reference = run_reference(cfg, weights, tokens)
        for model in models:
            label = f"{arch} {name} {os.path.basename(model)} prompt {length}"
            try:
                problems += compare(label, run_tool(args.tool, model, tokens, work), reference)
            except (RuntimeError, ValueError, subprocess.TimeoutExpired) as error:
                problems.append(f"{label}: {error}")
    print(f"{'ok  ' if not problems else 'FAIL'} {arch} {name}", flush=True)
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--make-model", required=True, help="an executable with make-model")
    parser.add_argument("--tool", required=True, help="qmlx_mtp_logits")
    parser.add_argument("--reference-dir", required=True, help="tools/reference")
    args = parser.parse_args()
    sys.path.insert(0, args.reference_dir)
    problems = []
    with tempfile.TemporaryDirectory(prefix="qmlx_mtp_oracle_") as work:
        for arch, name, flags in CASES:
            model = os.path.join(work, f"{arch}-{name}")
            make(args, arch, model, sum(map(ord, arch + name)), flags)
            problems += check(args, arch, name, [model], model, work)
            shutil.rmtree(model, ignore_errors=True)
        for arch in GGUF_CASES:
            seed = sum(map(ord, arch + "gguf"))
            hf = os.path.join(work, f"{arch}-hf")
            gguf = os.path.join(work, f"{arch}.gguf")
            make(args, arch, hf, seed, ["--layout", "hf", "--dtype", "f32"])
            make(args, arch, gguf, seed, ["--format", "gguf", "--gguf-type", "f32"])
            problems += check(args, arch, "gguf-f32", [gguf, hf], hf, work)
    for problem in problems:
        print(problem)
    print(f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
