#!/usr/bin/python3
"""Oracle test: qmlx's vision tower and image prompts against llama.cpp's tools/mtmd, on the same
files (an independent implementation, beside the float64 numpy reference).

tools/mtmd/build_mtmd.sh builds libmtmd from the llama.cpp that npm node-llama-cpp@3.21.1 ships
and links tools/mtmd/mtmd_driver.cpp, which runs one image prompt through mtmd's public C API
(mtmd_tokenize, mtmd_encode_chunk, mtmd_get_output_embd, mtmd_helper_decode_image_chunk,
llama_decode) and writes the prompt's tokens, the image chunk's embeddings, the last position's
logits and greedy tokens. Without that driver this test exits 77 (ctest: skipped).

For tiny random Qwen3.5 models (`qmlx make-model --format gguf --vision --mmproj-out`: an F32
text GGUF plus its tower as an mmproj GGUF whose matrices are f32, f16, bf16 or q8_0; dense and
MoE) and PNG images whose sides are multiples of 32 within the tower's pixel bounds (so neither
side resizes: both feed the tower the same normalized pixels), it checks:
  - the prompt: qmlx's chat template renders the conversation (one image, one question); its
    image placeholder becomes mtmd's media marker; the ids mtmd tokenizes (llama.cpp's
    tokenizer, vision_start / pads / vision_end added by mtmd) equal qmlx's (qmlx's tokenizer,
    the one pad expanded to the image's rows); mtmd's merged grid equals qmlx's preprocessing
    and its M-RoPE positions are transformers' get_rope_index;
  - the embeddings: qmlx_vision_encode (on qmlx_image_preprocess's pixels, the mmproj tower)
    against mtmd_get_output_embd, max|a-b| / max|b| within EMBD_TOLERANCE[type];
  - the language model and positions alone: qmlx_image_logits fed mtmd's embedding rows, the
    prompt's last logits and each greedy step's while the tokens agree, within LM_TOLERANCE;
  - end to end: qmlx_image_logits on qmlx's own embeddings, within E2E_TOLERANCE[type];
    greedy tokens equal unless the step is a near tie (top-2 gap within the tolerance).
So the comparison has teeth, mutations must miss the tolerances: qmlx's embeddings of another
image, and qmlx's logits with the image's grid transposed (same rows, other positions).
Preprocessing differences on images that need a resize are printed, not checked.
"""
import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile
import zlib

import numpy as np

SKIP = 77
STEPS = 4
MIN_TOKENS, MAX_TOKENS = 4, 64  # make-model's preprocessor bounds, in merged 32 x 32 tokens
# Relative tolerances, max|a-b| / max|b|, by the mmproj's matrix type (docs/vision.md, "Against
# llama.cpp's mtmd"): mtmd's patch embedding rounds pixels and kernel to f16 and its GELU reads
# an f16 table (the merger's too, tanh where Qwen's is erf): 4e-4 to 9e-4 at f32; ggml's BF16
# and Q8_0 dots round the activations to the weights' type; qmlx keeps them in float. The
# language models, fed the same rows, agree to ~5e-7.
EMBD_TOLERANCE = {"f32": 3e-3, "f16": 3e-3, "bf16": 1e-2, "q8_0": 5e-2}
LM_TOLERANCE = 5e-6
E2E_TOLERANCE = {"f32": 1e-3, "f16": 1e-3, "bf16": 2e-3, "q8_0": 1e-2}
# (width, height) in pixels: multiples of 32, 4 to 64 merged tokens; the tower's position grid
# is 6 x 6 patches (96 x 96 pixels), so all but one size interpolate it.
SIZES = [(64, 64), (96, 96), (96, 64), (64, 160), (160, 96), (256, 128)]
CASES = [  # (name, arch, mmproj weight type, seed, sizes)
    ("dense-f32", "qwen3_5", "f32", 1, SIZES),
    ("dense-f16", "qwen3_5", "f16", 2, SIZES[1:4]),
    ("dense-bf16", "qwen3_5", "bf16", 3, SIZES[1:4]),
    ("dense-q8_0", "qwen3_5", "q8_0", 5, SIZES[2:5]),
    ("moe-f32", "qwen3_5_moe", "f32", 4, SIZES[2:5]),
]
QUESTION = "What is in this picture?"


def write_png(path, rgb):
    """An 8-bit RGB PNG (no filter), from a [h][w][3] uint8 array."""
    h, w, _ = rgb.shape
    raw = b"".join(b"\x00" + rgb[y].tobytes() for y in range(h))

    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def image(seed, width, height):
    """Smooth colour gradients plus noise, so the image has structure at every scale."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width]
    base = np.stack([x / width, y / height, (x + y) / (width + height)], -1) * 200
    return np.clip(base + rng.normal(0, 30, base.shape), 0, 255).astype(np.uint8)


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, **kw)
    if r.returncode != 0:
        sys.exit(f"FAIL: {' '.join(map(str, cmd))}\n{r.stdout}{r.stderr}")
    return r.stdout


def rel(a, b):
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))


def make_model(args, arch, mmproj_type, seed, work):
    """The text model in F32 (its values rounded to the tower's float type), so the logits
    compare the language models at f32; the mmproj's matrices in mmproj_type."""
    model, mmproj = os.path.join(work, "model.gguf"), os.path.join(work, "mmproj.gguf")
    dtype = ["--dtype", mmproj_type] if mmproj_type != "q8_0" else [
        "--dtype", "f32", "--mmproj-type", mmproj_type]
    run([args.qmlx, "make-model", "--arch", arch, "--format", "gguf", *dtype, "--gguf-type",
         "f32", "--vision", "--seed", str(seed), "--out", model, "--mmproj-out", mmproj])
    return model, mmproj


def render_prompt(args, model, work):
    """qmlx's chat template over one user message (an image, then QUESTION): the prompt text and
    qmlx's token ids with the image's single pad."""
    messages = os.path.join(work, "messages.json")
    with open(messages, "w") as f:
        json.dump([{"role": "user", "content": [
            {"type": "image"},
            {"type": "text", "text": QUESTION}]}], f)
    out = json.loads(run([args.qmlx, "tokenize", "--model", model, "--messages", messages,
                          "--json"]))
    return out["prompt"], out["ids"]


def qmlx_side(args, model, mmproj, png, work):
    pixels, embd = os.path.join(work, "pixels.f32"), os.path.join(work, "qmlx.embd")
    pre = json.loads(run([args.preprocess, png, str(MIN_TOKENS * 1024), str(MAX_TOKENS * 1024),
                          pixels]))
    run([args.encode, model, *map(str, pre["grid"]), pixels, embd, mmproj])
    return pre, np.fromfile(embd, "<f4")


def qmlx_logits(args, model, tokens, first_row, gh, gw, embd, work):
    embd_file, out = os.path.join(work, "logits.embd"), os.path.join(work, "qmlx.logits")
    embd.astype("<f4").tofile(embd_file)
    greedy = json.loads(run([args.logits, model, ",".join(map(str, tokens)),
                             f"{first_row}:{gh}:{gw}", embd_file, "0", str(STEPS), out]))
    return np.fromfile(out, "<f4").reshape(STEPS, -1), greedy["tokens"]


def preprocessing_notes(args, model, mmproj, mtmd_prompt, work):
    """Where mtmd's preprocessing differs from transformers' (which qmlx follows); reported, not
    checked (docs/vision.md): images that need a resize."""
    def mtmd_image(png):
        out = os.path.join(work, "pre")
        run([args.driver, model, mmproj, png, mtmd_prompt, str(MIN_TOKENS), str(MAX_TOKENS), "1",
             out])
        with open(out + ".json") as f:
            img = json.load(f)["image"]
        return (img["grid_h"], img["grid_w"]), np.fromfile(out + ".embd", "<f4")

    notes, colour = [], np.array([200, 60, 120], np.uint8)
    # 1. A uniform 100 x 70 image: both choose 96 x 64, qmlx stretches it (transformers), mtmd
    #    fits it (92 x 64) and pads with black columns; a uniform image resamples to itself, so
    #    mtmd's embeddings are qmlx's of the padded picture.
    png = os.path.join(work, "uniform.png")
    write_png(png, np.tile(colour, (70, 100, 1)))
    _, m_embd = mtmd_image(png)
    _, stretched = qmlx_side(args, model, mmproj, png, work)
    padded = np.tile(colour, (64, 96, 1))
    padded[:, :2] = padded[:, 94:] = 0
    write_png(png, padded)
    _, letterboxed = qmlx_side(args, model, mmproj, png, work)
    notes.append(f"uniform 100x70: qmlx (stretched to 96x64) vs mtmd {rel(stretched, m_embd):.2e}; "
                 f"qmlx on the 92x64 picture padded with black to 96x64 vs mtmd "
                 f"{rel(letterboxed, m_embd):.2e}")
    # 2. 80 x 48: 2.5 and 1.5 patch blocks a side; transformers' round() (half to even, qmlx)
    #    gives 64 x 64, mtmd's std::round (half away from zero) 96 x 64.
    png = os.path.join(work, "halves.png")
    write_png(png, image(7, 80, 48))
    (mh, mw), _ = mtmd_image(png)
    pre, _ = qmlx_side(args, model, mmproj, png, work)
    notes.append(f"80x48: qmlx's merged grid {pre['grid'][1] // 2}x{pre['grid'][2] // 2}, "
                 f"mtmd's {mh}x{mw}")
    for line in notes:
        print("  preprocessing (reported): " + line, flush=True)
    return notes


def greedy_agreement(q_logits, m_logits, q_greedy, m_greedy, tol):
    """'equal', or where the tokens part and whether that step is a near tie; None if not."""
    for s, (a, b) in enumerate(zip(q_greedy, m_greedy)):
        if a != b:
            gap = lambda row: (np.sort(row)[-1] - np.sort(row)[-2]) / np.max(np.abs(row))
            if min(gap(q_logits[s]), gap(m_logits[s])) <= tol:
                return f"part at step {s} (a near tie)"
            return None
    return "equal"


def compare_logits(q_logits, m_logits, q_greedy, m_greedy):
    """max relative error over the steps both sides fed the same tokens."""
    same = next((s for s, (a, b) in enumerate(zip(q_greedy, m_greedy)) if a != b), STEPS - 1)
    return max(rel(q_logits[s], m_logits[s]) for s in range(same + 1))


def check_case(args, name, arch, dtype, seed, sizes, work, report):
    model, mmproj = make_model(args, arch, dtype, seed, work)
    prompt, ids = render_prompt(args, model, work)
    block = "<|vision_start|><|image_pad|><|vision_end|>"
    if prompt.count(block) != 1:
        sys.exit(f"FAIL {name}: the rendered prompt has no single image block: {prompt!r}")
    mtmd_prompt = prompt.replace(block, "<__media__>")
    tol_e, tol_q = EMBD_TOLERANCE[dtype], E2E_TOLERANCE[dtype]
    failures = []
    for i, (w, h) in enumerate(sizes):
        label = f"{name} {w}x{h}"
        png = os.path.join(work, f"image{i}.png")
        write_png(png, image(seed * 100 + i, w, h))
        pre, q_embd = qmlx_side(args, model, mmproj, png, work)
        if pre["resized"] != [h, w]:
            sys.exit(f"FAIL {label}: qmlx resized the image to {pre['resized']}")
        gh, gw = pre["grid"][1] // 2, pre["grid"][2] // 2

        out = os.path.join(work, "mtmd")
        run([args.driver, model, mmproj, png, mtmd_prompt, str(MIN_TOKENS), str(MAX_TOKENS),
             str(STEPS), out])
        with open(out + ".json") as f:
            m = json.load(f)
        m_embd = np.fromfile(out + ".embd", "<f4")
        m_logits = np.fromfile(out + ".logits", "<f4").reshape(STEPS, -1)
        img = m["image"]
        if (img["grid_h"], img["grid_w"]) != (gh, gw) or img["n_tokens"] != gh * gw:
            sys.exit(f"FAIL {label}: mtmd's grid {img['grid_h']}x{img['grid_w']} "
                     f"({img['n_tokens']} tokens) is not qmlx's {gh}x{gw}")
        # qmlx's prompt: its one pad expanded to the image's rows; mtmd's: its image rows (-1)
        # read as that pad.
        pad = img["first_row"]
        q_tokens = ids[:pad] + [ids[pad]] * (gh * gw) + ids[pad + 1:]
        m_tokens = [ids[pad] if t == -1 else t for t in m["tokens"]]
        if q_tokens != m_tokens:
            sys.exit(f"FAIL {label}: prompt tokens differ\n qmlx {q_tokens}\n mtmd {m_tokens}")
        # mtmd's M-RoPE positions: transformers' get_rope_index (t = start, h = start + row,
        # w = start + column; the text after the image at start + max(gh, gw)).
        want = [[pad, pad + r, pad + c] for r in range(gh) for c in range(gw)]
        if img["positions"] != want or img["n_pos"] != max(gh, gw):
            sys.exit(f"FAIL {label}: mtmd's image positions {img['positions']} "
                     f"(n_pos {img['n_pos']}) are not get_rope_index's")

        # The encoders, each on its own preprocessing of the PNG.
        e_err = rel(q_embd, m_embd)
        # The language model and positions alone: qmlx fed mtmd's embedding rows.
        l_logits, l_greedy = qmlx_logits(args, model, q_tokens, pad, gh, gw, m_embd, work)
        l_err = compare_logits(l_logits, m_logits, l_greedy, m["greedy"])
        l_agree = greedy_agreement(l_logits, m_logits, l_greedy, m["greedy"], LM_TOLERANCE)
        # End to end: qmlx's own embeddings.
        q_logits, q_greedy = qmlx_logits(args, model, q_tokens, pad, gh, gw, q_embd, work)
        q_err = compare_logits(q_logits, m_logits, q_greedy, m["greedy"])
        q_agree = greedy_agreement(q_logits, m_logits, q_greedy, m["greedy"], tol_q)
        line = (f"{label}: grid {gh}x{gw}, {len(q_tokens)} tokens; embeddings {e_err:.2e}; "
                f"logits on mtmd's rows {l_err:.2e}, end to end {q_err:.2e}; greedy "
                f"{m['greedy']}: {l_agree}, end to end {q_agree}")
        report.append(line)
        print(line, flush=True)
        if e_err > tol_e:
            failures.append(f"{label}: embeddings {e_err:.3e} > {tol_e:g}")
        if l_err > LM_TOLERANCE or l_agree is None:
            failures.append(f"{label}: logits on mtmd's rows {l_err:.3e} > {LM_TOLERANCE:g} "
                            f"or greedy {l_greedy} vs {m['greedy']}")
        if q_err > tol_q or q_agree is None:
            failures.append(f"{label}: end-to-end logits {q_err:.3e} > {tol_q:g} "
                            f"or greedy {q_greedy} vs {m['greedy']}")

        # Mutations: the check must see another image, and the image rows at other positions.
        if i == 0:
            other = os.path.join(work, "other.png")
            write_png(other, image(seed * 100 + 99, w, h))
            _, o_embd = qmlx_side(args, model, mmproj, other, work)
            mut = rel(o_embd, m_embd)
            print(f"  mutation: another image's embeddings {mut:.2e} (tolerance {tol_e:g})",
                  flush=True)
            if mut <= tol_e:
                failures.append(f"{label}: another image's embeddings pass ({mut:.3e})")
        if gh != gw:
            t_logits, _ = qmlx_logits(args, model, q_tokens, pad, gw, gh, m_embd, work)
            mut = rel(t_logits[0], m_logits[0])
            print(f"  mutation: grid transposed to {gw}x{gh}, logits {mut:.2e} "
                  f"(tolerance {LM_TOLERANCE:g})", flush=True)
            if mut <= LM_TOLERANCE:
                failures.append(f"{label}: transposed positions pass ({mut:.3e})")
    if name == CASES[0][0]:
        preprocessing_notes(args, model, mmproj, mtmd_prompt, work)
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--qmlx", required=True, help="the qmlx CLI (make-model, tokenize)")
    parser.add_argument("--preprocess", required=True, help="qmlx_image_preprocess")
    parser.add_argument("--encode", required=True, help="qmlx_vision_encode")
    parser.add_argument("--logits", required=True, help="qmlx_image_logits")
    parser.add_argument("--driver", help="qmlx_mtmd_driver (default: $QMLX_MTMD_DRIVER, then "
                        "build-mtmd/qmlx_mtmd_driver in the repository)")
    parser.add_argument("--only", help="run only the case of this name")
    args = parser.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    args.driver = (args.driver or os.environ.get("QMLX_MTMD_DRIVER")
                   or os.path.join(root, "build-mtmd", "qmlx_mtmd_driver"))
    if not os.access(args.driver, os.X_OK):
        print(f"SKIP: no llama.cpp mtmd driver at {args.driver}; build it with "
              "tools/mtmd/build_mtmd.sh (10 min or more on 2 cores) or set QMLX_MTMD_DRIVER")
        return SKIP
    failures, report = [], []
    for name, arch, dtype, seed, sizes in CASES:
        if args.only and name != args.only:
            continue
        with tempfile.TemporaryDirectory() as work:
            failures += check_case(args, name, arch, dtype, seed, sizes, work, report)
    if failures:
        print("FAIL:\n  " + "\n  ".join(failures))
        return 1
    print(f"OK: {len(report)} image prompts within tolerance")
    return 0


if __name__ == "__main__":
    sys.exit(main())
