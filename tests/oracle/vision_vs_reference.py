#!/usr/bin/python3
"""Oracle test: the engine's vision encoder against the independent numpy reference
(tools/reference/vision.py).

For tiny random Qwen3.5 towers written by `make-model --vision` (HF layout; dense and MoE
language models; f32 and bf16 files), it runs qmlx_vision_encode on random pixel values for
several patch grids (1x4x6: the 6x6 position grid shrunk along one side; 1x8x8: stretched;
1x2x2: one output token; 2x4x4: two frames that must not attend to each other) and compares
the output with the float64 reference: max|a-b| / max|b| <= 1e-5 (fp32 arithmetic through two
blocks; observed below 1e-6). The same random tower is also written in the other layouts the
engine reads, and must give the Hugging Face layout's output within LAYOUT_TOLERANCE (the
stored values are the same, so only the order of the load-time copies differs): mlx-vlm's
(`--layout mlx`: `vision_tower.*`, the patch embedding channels-last), and llama.cpp's mmproj
GGUF (`--mmproj-out`: the Conv3d split into two temporal Conv2d kernels, clip.* keys) given
with the model folder (replacing its own tower) and beside a llama.cpp-style GGUF text model.
It also checks that a tower with a tensor missing is dropped with a message naming it, and
that a model without a tower says so.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

TOLERANCE = 1e-5
LAYOUT_TOLERANCE = 1e-6
GRIDS = [(1, 4, 6), (1, 8, 8), (1, 2, 2), (2, 4, 4)]
CASES = [  # (arch, name, make-model flags)
    ("qwen3_5", "f32", ["--dtype", "f32"]),
    ("qwen3_5", "bf16", ["--dtype", "bf16"]),
    ("qwen3_5", "f16", ["--dtype", "f16"]),
    ("qwen3_5_moe", "f32", ["--dtype", "f32"]),
]
PATCH_DIM = 3 * 2 * 16 * 16


def make(args, arch, out, seed, flags, layout="hf"):
    subprocess.run([args.make_model, "make-model", "--arch", arch, "--out", out, "--seed",
                    str(seed), "--layout", layout] + flags, check=True, capture_output=True)


def run_tool(tool, model, grid, pixels, work, mmproj=None):
    pixel_file, out = os.path.join(work, "pixels.bin"), os.path.join(work, "encoded.bin")
    pixels.astype("<f4").tofile(pixel_file)
    done = subprocess.run([tool, model, *map(str, grid), pixel_file, out]
                          + ([mmproj] if mmproj else []), capture_output=True, text=True,
                          timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"qmlx_vision_encode failed ({done.returncode}): {done.stderr.strip()}")
    return np.fromfile(out, "<f4")


def check_model(args, label, model, work, layouts):
    """The HF-layout `model` against the reference, and each of `layouts` ((name, model,
    mmproj or None)) against the HF layout's engine output."""
    import vision
    tower = vision.VisionTower(model)
    problems = []
    rng = np.random.default_rng(sum(map(ord, label)))
    for grid in GRIDS:
        t, h, w = grid
        # Normalised pixels of Qwen3.5's processor lie in [-1, 1].
        pixels = rng.uniform(-1, 1, (t * h * w, PATCH_DIM)).astype(np.float32)
        reference = tower.encode(pixels, grid)
        try:
            engine = run_tool(args.tool, model, grid, pixels, work).reshape(reference.shape)
        except (RuntimeError, ValueError, subprocess.TimeoutExpired) as error:
            problems.append(f"{label} grid {grid}: {error}")
            continue
        error = np.abs(engine - reference).max() / np.abs(reference).max()
        print(f"     {label} grid {t}x{h}x{w}: relative error {error:.2e}", flush=True)
        if not error <= TOLERANCE:
            problems.append(f"{label} grid {grid}: relative error {error:.3g} > {TOLERANCE}")
        for name, other, mmproj in layouts:
            try:
                out = run_tool(args.tool, other, grid, pixels, work, mmproj).reshape(engine.shape)
            except (RuntimeError, ValueError, subprocess.TimeoutExpired) as error:
                problems.append(f"{label} {name} grid {grid}: {error}")
                continue
            diff = np.abs(out - engine).max() / np.abs(engine).max()
            print(f"       {name}: relative to the HF layout {diff:.2e}", flush=True)
            if not diff <= LAYOUT_TOLERANCE:
                problems.append(f"{label} {name} grid {grid}: relative to the HF layout "
                                f"{diff:.3g} > {LAYOUT_TOLERANCE}")
    return problems


def expect_refusal(args, label, model, words, work):
    try:
        run_tool(args.tool, model, (1, 2, 2), np.zeros((4, PATCH_DIM), np.float32), work)
    except RuntimeError as error:
        missing = [w for w in words if w not in str(error)]
        return [f"{label}: message lacks {missing}: {error}"] if missing else []
    return [f"{label}: encoded an image without a whole tower"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--make-model", required=True, help="an executable with make-model")
    parser.add_argument("--tool", required=True, help="qmlx_vision_encode")
    parser.add_argument("--reference-dir", required=True, help="tools/reference")
    args = parser.parse_args()
    sys.path.insert(0, args.reference_dir)
    problems = []
    with tempfile.TemporaryDirectory(prefix="qmlx_vision_oracle_") as work:
        for arch, name, flags in CASES:
            seed = sum(map(ord, arch + name))
            model = os.path.join(work, f"{arch}-{name}")
            mlx, mmproj = model + "-mlx", model + "-mmproj.gguf"
            make(args, arch, model, seed, flags + ["--vision", "--mmproj-out", mmproj])
            make(args, arch, mlx, seed, flags + ["--vision"], layout="mlx")
            layouts = [("mlx-vlm layout", mlx, None),
                       ("mmproj over the folder's tower", model, mmproj)]
            if name == "f32":
                # llama.cpp's pair: a GGUF text model without a tower, and the mmproj.
                text_gguf = os.path.join(work, f"{arch}-{name}.gguf")
                make(args, arch, text_gguf, seed, flags + ["--vision", "--format", "gguf",
                                                           "--mmproj-out", mmproj + ".2"])
                layouts.append(("GGUF model + mmproj", text_gguf, mmproj + ".2"))
            found = check_model(args, f"{arch} {name}", model, work, layouts)
            print(f"{'ok  ' if not found else 'FAIL'} {arch} {name}", flush=True)
            problems += found
        partial = os.path.join(work, "partial")
        make(args, "qwen3_5", partial, 1,
             ["--vision", "--omit-tensor", "model.visual.merger.norm.bias"])
        problems += expect_refusal(args, "incomplete tower", partial,
                                   ["incomplete", "model.visual.merger.norm.bias"], work)
        text_only = os.path.join(work, "text-only")
        make(args, "qwen3_5", text_only, 1, [])
        problems += expect_refusal(args, "no tower", text_only, ["has no vision tower"], work)
    for problem in problems:
        print(problem)
    print(f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
