#!/usr/bin/python3
"""Oracle test: `qmlx generate` against the independent numpy reference (tools/reference).

For every architecture and several checkpoint flavours (HF f32 / bf16, MLX bf16, MLX 8-bit
and 4-bit, plus other bit widths, shards and tied heads) it writes a tiny random model with
`qmlx make-model`, runs the engine and the reference on prompts of 1, 7, 64, 65 and 300
tokens, and checks every logits row (max|a-b| / max|b| <= 1e-4) and the greedy tokens.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

ARCHS = ["qwen3_5_moe", "qwen3_5", "qwen3_next", "qwen3"]
TOLERANCE = 1e-4
LONG_STEPS = 32  # greedy steps checked on the short prompts
SHORT_STEPS = 3  # on the longer ones (their point is prefill)


def flavours(arch):
    """(name, make-model flags, prompt lengths with their step counts)."""
    tie = ["--tie"] if arch == "qwen3" else []
    full = [(1, LONG_STEPS), (7, LONG_STEPS), (64, SHORT_STEPS), (65, SHORT_STEPS),
            (300, SHORT_STEPS)]
    short = [(7, LONG_STEPS), (65, SHORT_STEPS)]
    return [
        ("hf-f32", ["--layout", "hf", "--dtype", "f32"] + tie, full),
        ("hf-bf16-sharded", ["--layout", "hf", "--dtype", "bf16", "--shards", "3"] + tie, short),
        ("mlx-bf16", ["--layout", "mlx", "--dtype", "bf16"] + tie, short),
        ("mlx-q8", ["--layout", "mlx", "--bits", "8", "--group-size", "64"] + tie, short),
        ("mlx-q4-tied", ["--layout", "mlx", "--bits", "4", "--group-size", "32", "--tie"],
         [(1, LONG_STEPS), (64, SHORT_STEPS), (300, SHORT_STEPS)]),
    ]


EXTRA = [  # the other MLX bit widths and group sizes, and an f16 file
    ("qwen3_5", "mlx-q3", ["--layout", "mlx", "--bits", "3", "--group-size", "64"]),
    ("qwen3_next", "mlx-q5-untied", ["--layout", "mlx", "--bits", "5", "--group-size", "32"]),
    ("qwen3", "mlx-q6-g128", ["--layout", "mlx", "--bits", "6", "--group-size", "128",
                              "--hidden", "128", "--no-tie"]),
    ("qwen3_5_moe", "mlx-q2", ["--layout", "mlx", "--bits", "2", "--group-size", "64"]),
    ("qwen3_5_moe", "hf-f16-layers6", ["--layout", "hf", "--dtype", "f16", "--layers", "6",
                                       "--full-attention-interval", "3"]),
]


def prompt(length, vocab, salt):
    return [(i * 7919 + salt * 104729 + 13) % vocab for i in range(length)]


def eos_ids(model_dir):
    with open(os.path.join(model_dir, "generation_config.json")) as f:
        eos = json.load(f)["eos_token_id"]
    return set(eos if isinstance(eos, list) else [eos])


def tokenizer_size(model_dir):
    with open(os.path.join(model_dir, "tokenizer.json")) as f:
        t = json.load(f)
    return len(t["model"]["vocab"]) + len(t["added_tokens"])


def run_engine(qmlx, model_dir, tokens, steps, work):
    logits_path = os.path.join(work, "engine_logits.bin")
    cmd = [qmlx, "generate", "--model", model_dir, "--tokens", ",".join(map(str, tokens)),
           "--max-tokens", str(steps), "--json", "--kv-dtype", "f32", "--logits-out", logits_path]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise RuntimeError(f"engine failed ({done.returncode}): {' '.join(cmd)}\n{done.stderr}")
    result = json.loads(done.stdout)
    logits = np.fromfile(logits_path, dtype="<f4")
    return result["tokens"], logits


def run_reference(cfg, weights, tokens, steps):
    import forward
    model = forward.Model(cfg, weights, "chunked")
    logits = model.forward(tokens)[-1]
    rows, generated = [], []
    for _ in range(steps):
        rows.append(logits)
        generated.append(int(np.argmax(logits)))
        if len(generated) < steps:
            logits = model.forward([generated[-1]])[-1]
    return generated, np.array(rows)


def compare(label, engine_tokens, engine_logits, ref_tokens, ref_logits, eos):
    vocab = ref_logits.shape[1]
    n = len(engine_tokens)
    problems = []
    if n == 0 or n > len(ref_tokens):
        return [f"{label}: engine returned {n} tokens, expected 1..{len(ref_tokens)}"]
    if n < len(ref_tokens) and engine_tokens[-1] not in eos:
        problems.append(f"{label}: engine stopped after {n} tokens without an end token")
    if engine_logits.size < n * vocab:
        return problems + [f"{label}: logits file has {engine_logits.size} values, "
                           f"expected {n} rows of {vocab}"]
    engine_logits = engine_logits[:n * vocab].reshape(n, vocab)
    for i in range(n):
        b = ref_logits[i]
        error = np.abs(engine_logits[i] - b).max() / np.abs(b).max()
        if not error <= TOLERANCE:
            problems.append(f"{label}: row {i} relative error {error:.3g} > {TOLERANCE}")
            break
    if engine_tokens != ref_tokens[:n]:
        first = next(i for i in range(n) if engine_tokens[i] != ref_tokens[i])
        problems.append(f"{label}: greedy tokens differ at step {first}: engine "
                        f"{engine_tokens[first:first + 5]} reference {ref_tokens[first:first + 5]}")
    return problems


def check_model(args, arch, name, flags, prompts, work):
    import checkpoint
    model_dir = os.path.join(work, f"{arch}-{name}")
    seed = sum(map(ord, arch + name))  # fixed per model, differs between models
    subprocess.run([args.qmlx, "make-model", "--arch", arch, "--out", model_dir, "--seed",
                    str(seed)] + flags, check=True, capture_output=True)
    cfg, weights = checkpoint.load(model_dir)
    eos = eos_ids(model_dir)
    size = tokenizer_size(model_dir)
    problems = []
    for salt, (length, steps) in enumerate(prompts):
        tokens = prompt(length, size, salt)
        label = f"{arch} {name} prompt {length}"
        try:
            engine_tokens, engine_logits = run_engine(args.qmlx, model_dir, tokens, steps, work)
        except (RuntimeError, ValueError, subprocess.TimeoutExpired) as error:
            problems.append(f"{label}: {error}")
            continue
        ref_tokens, ref_logits = run_reference(cfg, weights, tokens, steps)
        problems += compare(label, engine_tokens, engine_logits, ref_tokens, ref_logits, eos)
    shutil.rmtree(model_dir, ignore_errors=True)
    print(f"{'ok  ' if not problems else 'FAIL'} {arch} {name}", flush=True)
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--qmlx", required=True, help="the qmlx executable")
    parser.add_argument("--reference-dir", required=True, help="tools/reference")
    parser.add_argument("--only", help="run only this architecture")
    args = parser.parse_args()
    sys.path.insert(0, args.reference_dir)
    problems = []
    with tempfile.TemporaryDirectory(prefix="qmlx_oracle_") as work:
        for arch in ARCHS:
            if args.only and arch != args.only:
                continue
            for name, flags, prompts in flavours(arch):
                problems += check_model(args, arch, name, flags, prompts, work)
        for arch, name, flags in EXTRA:
            if args.only and arch != args.only:
                continue
            problems += check_model(args, arch, name, flags, [(7, 8), (65, SHORT_STEPS)], work)
    for problem in problems:
        print(problem)
    print(f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
