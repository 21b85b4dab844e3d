#!/usr/bin/python3
"""Oracle test: the language model's forward pass with images against the independent numpy
reference (tools/reference/forward.py: embedding injection and Qwen3-VL's M-RoPE positions).

For tiny random Qwen3.5 models written by `make-model --vision --mtp` (HF layout; dense f32 and
bf16, MoE f32; interleaved mrope_section scaled to the tiny rotary dimension) it encodes two
random images with the engine's own tower (qmlx_vision_encode; the tower itself is checked by
vision_vs_reference.py), builds the prompt
    text, <|vision_start|>, 2 x 3 pads, <|vision_end|>, text, <|vision_start|>, 4 x 4 pads,
    <|vision_end|>, text
and runs qmlx_image_logits (the prompt in one call, and in calls of 7 rows that cut through
both images, which must give the same bits; then greedy decoding, so the text after the images
continues from the state's rope_delta) and the reference on the same embedding rows. Every
logits row of the main model and of the MTP head must be within max|a-b| / max|b| <= 1e-4 (the
engine-vs-reference tolerance) and the greedy tokens equal. So that the test has teeth, the
reference with plain positions for the image rows must miss that tolerance.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

TOLERANCE = 1e-4
STEPS = 6
PATCH_DIM = 3 * 2 * 16 * 16
PATCH_GRIDS = [(1, 4, 6), (1, 8, 8)]  # merged 2 x 3 and 4 x 4
CASES = [  # (arch, name, make-model flags)
    ("qwen3_5", "hf-f32", ["--dtype", "f32"]),
    ("qwen3_5", "hf-bf16", ["--dtype", "bf16"]),
    ("qwen3_5_moe", "hf-f32", ["--dtype", "f32"]),
]


def make(args, arch, out, seed, flags):
    subprocess.run([args.make_model, "make-model", "--arch", arch, "--out", out, "--seed",
                    str(seed), "--layout", "hf", "--vision", "--mtp"] + flags, check=True,
                   capture_output=True)


def encode(args, model, grid, pixels, work):
    pixel_file, out = os.path.join(work, "pixels.bin"), os.path.join(work, "encoded.bin")
    pixels.astype("<f4").tofile(pixel_file)
    subprocess.run([args.encode, model, *map(str, grid), pixel_file, out], check=True,
                   capture_output=True, timeout=120)
    return np.fromfile(out, "<f4")


def build_prompt(config, rng, merged):
    """Token ids and the images' (first_row, grid_h, grid_w)."""
    text = lambda n: [int(t) for t in rng.integers(0, 256, n)]
    tokens, images = text(5), []
    for gh, gw in merged:
        tokens.append(config["vision_start_token_id"])
        images.append((len(tokens), gh, gw))
        tokens += [config["image_token_id"]] * (gh * gw)
        tokens.append(config["vision_end_token_id"])
        tokens += text(4)
    return tokens, images


def run_tool(args, model, tokens, images, embeddings, chunk, work):
    emb_file, out = os.path.join(work, "embeddings.bin"), os.path.join(work, "logits.bin")
    np.concatenate(embeddings).astype("<f4").tofile(emb_file)
    spec = ",".join(f"{r}:{h}:{w}" for r, h, w in images)
    done = subprocess.run([args.tool, model, ",".join(map(str, tokens)), spec, emb_file,
                           str(chunk), str(STEPS), out], capture_output=True, text=True,
                          timeout=300)
    if done.returncode != 0:
        raise RuntimeError(f"qmlx_image_logits failed ({done.returncode}): {done.stderr}")
    rows = np.fromfile(out, "<f4").reshape(STEPS, -1)
    mtp = np.fromfile(out + ".mtp", "<f4").reshape(STEPS, -1)
    return json.loads(done.stdout)["tokens"], rows, mtp


def run_reference(cfg, weights, tokens, images, embeddings, plain_positions=False):
    import forward
    main, head = forward.Model(cfg, weights, "chunked"), forward.MtpHead(cfg, weights)
    for model in (main, head):
        model.images = [forward.Image(r, h, w, e.reshape(h * w, -1))
                        for (r, h, w), e in zip(images, embeddings)]
        if plain_positions:
            model.positions = lambda first, count: np.arange(first, first + count)
    logits = main.forward(tokens)[-1]
    greedy, rows = [int(np.argmax(logits))], [logits]
    mtp = [head.forward(main.hidden, list(tokens[1:]) + greedy)[-1]]
    for _ in range(STEPS - 1):
        logits = main.forward([greedy[-1]])[-1]
        greedy.append(int(np.argmax(logits)))
        rows.append(logits)
        mtp.append(head.forward(main.hidden, [greedy[-1]])[-1])
    return greedy, np.array(rows), np.array(mtp)


def worst(engine_rows, reference_rows):
    return max(np.abs(a - b).max() / np.abs(b).max() for a, b in zip(engine_rows, reference_rows))


def check(args, label, model, work):
    import checkpoint
    cfg, weights = checkpoint.load(model)
    with open(os.path.join(model, "config.json")) as f:
        config = json.load(f)
    rng = np.random.default_rng(sum(map(ord, label)))
    embeddings = []
    for grid in PATCH_GRIDS:
        pixels = rng.uniform(-1, 1, (int(np.prod(grid)), PATCH_DIM)).astype(np.float32)
        embeddings.append(encode(args, model, grid, pixels, work))
    tokens, images = build_prompt(config, rng, [(h // 2, w // 2) for _, h, w in PATCH_GRIDS])
    e_tokens, e_rows, e_mtp = run_tool(args, model, tokens, images, embeddings, 0, work)
    problems = []
    c_tokens, c_rows, c_mtp = run_tool(args, model, tokens, images, embeddings, 7, work)
    if c_tokens != e_tokens or not np.array_equal(c_rows, e_rows) or not np.array_equal(c_mtp,
                                                                                         e_mtp):
        problems.append(f"{label}: the prompt in calls of 7 rows differs from one call")
    r_tokens, r_rows, r_mtp = run_reference(cfg, weights, tokens, images, embeddings)
    if e_tokens != r_tokens:
        problems.append(f"{label}: greedy tokens differ: engine {e_tokens} reference {r_tokens}")
    main_error, mtp_error = worst(e_rows, r_rows), worst(e_mtp, r_mtp)
    _, p_rows, _ = run_reference(cfg, weights, tokens, images, embeddings, plain_positions=True)
    plain_error = worst(e_rows, p_rows)
    print(f"     {label}: {len(tokens)} prompt rows, relative error main {main_error:.2e}, "
          f"MTP {mtp_error:.2e} (plain positions: {plain_error:.2e})", flush=True)
    if not main_error <= TOLERANCE:
        problems.append(f"{label}: main logits relative error {main_error:.3g} > {TOLERANCE}")
    if not mtp_error <= TOLERANCE:
        problems.append(f"{label}: MTP logits relative error {mtp_error:.3g} > {TOLERANCE}")
    if not plain_error > TOLERANCE:
        problems.append(f"{label}: plain positions agree too ({plain_error:.3g}): no teeth")
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--make-model", required=True, help="an executable with make-model")
    parser.add_argument("--encode", required=True, help="qmlx_vision_encode")
    parser.add_argument("--tool", required=True, help="qmlx_image_logits")
    parser.add_argument("--reference-dir", required=True, help="tools/reference")
    args = parser.parse_args()
    sys.path.insert(0, args.reference_dir)
    problems = []
    with tempfile.TemporaryDirectory(prefix="qmlx_image_oracle_") as work:
        for arch, name, flags in CASES:
            model = os.path.join(work, f"{arch}-{name}")
            make(args, arch, model, sum(map(ord, arch + name)), flags)
            label = f"{arch} {name}"
            try:
                found = check(args, label, model, work)
            except (RuntimeError, ValueError, subprocess.SubprocessError) as error:
                found = [f"{label}: {error}"]
            print(f"{'ok  ' if not found else 'FAIL'} {label}", flush=True)
            problems += found
    for problem in problems:
        print(problem)
    print(f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
