#!/usr/bin/python3
"""Writes the image tests' fixtures, with PIL (Debian's python3-pil) as the oracle.

Usage: make_image_fixtures.py OUT_DIR

OUT_DIR/manifest.json lists:
  decode:   encoded files in every format and mode, each with the RGB8 bytes PIL makes of it
            (EXIF-transposed as transformers' load_image does, alpha composited over white);
  resize:   raw RGB8 sources and PIL's Image.resize(size, BICUBIC) of each;
  smart_resize: [height, width, factor, min_pixels, max_pixels, resized_h, resized_w] rows from
            the processor's formula (Python's own round, floor, ceil, sqrt);
  preprocess: raw RGB8 sources and the processor's pixel_values (float32) and grid, computed
            with numpy the way transformers' slow Qwen2-VL processor does it.
Plus over_white.bin: PIL's alpha_composite over white for every (colour, alpha) pair.
Deterministic (seeded), so the files are the same on every run.
"""
import io
import json
import math
import os
import random
import struct
import sys
import zlib

import numpy as np
from PIL import Image, ImageOps

OUT = sys.argv[1]
rng = np.random.default_rng(29)
manifest = {"decode": [], "resize": [], "smart_resize": [], "preprocess": []}


def write(name, data):
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)


def noise(h, w, channels):
    """Random pixels over a smooth ramp: the ramp survives lossy codecs, the noise finds rounding."""
    ramp = (np.add.outer(np.arange(h) * 255 // max(h, 1), np.arange(w) * 255 // max(w, 1)) // 2)
    img = ramp[:, :, None] + rng.integers(-40, 41, size=(h, w, channels))
    return np.clip(img, 0, 255).astype(np.uint8)


def pil_rgb(im):
    """What the decoder must produce: upright, alpha over white, RGB8."""
    im = ImageOps.exif_transpose(im)
    if im.mode in ("RGBA", "LA", "PA") or "transparency" in im.info:
        rgba = im.convert("RGBA")
        white = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        return Image.alpha_composite(white, rgba).convert("RGB")
    return im.convert("RGB")


def add_decode(name, data, expected=None):
    """`expected`: RGB8 array when PIL is not the oracle (16-bit PNGs: see below)."""
    write(name, data)
    if expected is None:
        expected = np.asarray(pil_rgb(Image.open(io.BytesIO(data))))
    h, w = expected.shape[:2]
    write(name + ".rgb", np.ascontiguousarray(expected, dtype=np.uint8).tobytes())
    manifest["decode"].append({"file": name, "width": w, "height": h})


def encode(im, fmt, **options):
    buf = io.BytesIO()
    im.save(buf, fmt, **options)
    return buf.getvalue()


def png_chunk(kind, payload):
    return struct.pack(">I", len(payload)) + kind + payload + struct.pack(
        ">I", zlib.crc32(kind + payload) & 0xFFFFFFFF)


# Adam7's passes: (first column, first row, column step, row step).
ADAM7 = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)]


def png_by_hand(samples, color_type, interlaced=False):
    """A PNG written by hand, for what PIL does not write: 16-bit colour (PIL writes 16 bits only
    for grey) and Adam7 interlacing. samples: uint8 or uint16 [h, w, c]; filter 0 on every row."""
    h, w = samples.shape[:2]
    depth = 16 if samples.dtype == np.uint16 else 8
    rows = lambda img: b"".join(b"\0" + img[y].astype(">u2" if depth == 16 else "u1").tobytes()
                                for y in range(img.shape[0]) if img.shape[1])
    if interlaced:
        raw = b"".join(rows(samples[y0::dy, x0::dx]) for x0, y0, dx, dy in ADAM7)
    else:
        raw = rows(samples)
    ihdr = struct.pack(">IIBBBBB", w, h, depth, color_type, 0, 0, 1 if interlaced else 0)
    return (b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", ihdr) + png_chunk(b"IDAT", zlib.compress(raw))
            + png_chunk(b"IEND", b""))


def exif_with_orientation(orientation):
    exif = Image.Exif()
    exif[0x0112] = orientation
    return exif.tobytes()


def decode_cases():
    rgb = Image.fromarray(noise(23, 37, 3), "RGB")
    rgba_px = noise(23, 37, 4)
    rgba_px[:, :, 3] = rng.integers(0, 256, size=(23, 37))
    rgba_px[0, :, 3] = 0
    rgba = Image.fromarray(rgba_px, "RGBA")
    gray = Image.fromarray(noise(19, 29, 1)[:, :, 0], "L")
    la = Image.merge("LA", (gray, Image.fromarray(rng.integers(0, 256, (19, 29), dtype=np.uint8), "L")))
    palette = rgb.quantize(64)
    palette_trns = palette.copy()
    palette_trns.info["transparency"] = 5

    add_decode("rgb.png", encode(rgb, "PNG"))
    add_decode("rgba.png", encode(rgba, "PNG"))
    add_decode("la.png", encode(la, "PNG"))
    add_decode("gray.png", encode(gray, "PNG"))
    add_decode("bilevel.png", encode(gray.convert("1"), "PNG"))
    add_decode("palette.png", encode(palette, "PNG"))
    add_decode("palette_trns.png", encode(palette_trns, "PNG", transparency=5))
    add_decode("rgb_trns.png", encode(rgb, "PNG", transparency=tuple(int(v) for v in rgb.getpixel((3, 4)))))
    # 16-bit: the high byte of each sample is the oracle (PIL keeps it for RGB; for grey it
    # clips the 16-bit value to 255, which is wrong, so numpy is the oracle for all of them).
    s16 = rng.integers(0, 65536, size=(17, 21, 4), dtype=np.uint16)
    hi = (s16 >> 8).astype(np.uint32)
    add_decode("rgb16.png", png_by_hand(s16[:, :, :3], 2), (hi[:, :, :3]).astype(np.uint8))
    a = hi[:, :, 3:4]
    over = (hi[:, :, :3] * a + 255 * (255 - a) + 127) // 255
    add_decode("rgba16.png", png_by_hand(s16, 6), over.astype(np.uint8))
    add_decode("gray16.png", png_by_hand(s16[:, :, :1], 0), np.repeat(hi[:, :, :1], 3, axis=2).astype(np.uint8))
    add_decode("adam7.png", png_by_hand(rgba_px, 6, interlaced=True))
    add_decode("exif6.png", encode(rgb, "PNG", exif=exif_with_orientation(6)))

    add_decode("baseline.jpg", encode(rgb, "JPEG", quality=90))
    add_decode("progressive.jpg", encode(rgb, "JPEG", quality=85, progressive=True))
    add_decode("subsampling444.jpg", encode(rgb, "JPEG", quality=95, subsampling=0))
    add_decode("gray.jpg", encode(gray, "JPEG", quality=90))
    add_decode("cmyk.jpg", encode(rgb.convert("CMYK"), "JPEG", quality=90))
    for orientation in range(1, 9):
        add_decode(f"exif{orientation}.jpg", encode(rgb, "JPEG", quality=90, exif=exif_with_orientation(orientation)))

    add_decode("lossless.webp", encode(rgba, "WEBP", lossless=True))
    add_decode("lossy.webp", encode(rgb, "WEBP", quality=80))
    add_decode("lossy_alpha.webp", encode(rgba, "WEBP", quality=80))
    add_decode("exif8.webp", encode(rgb, "WEBP", quality=80, exif=exif_with_orientation(8)))
    frames = [Image.fromarray(noise(23, 37, 3), "RGB") for _ in range(3)]
    add_decode("animated.webp", encode(frames[0], "WEBP", save_all=True, append_images=frames[1:], lossless=True))

    add_decode("palette.gif", encode(palette, "GIF", interlace=False))
    add_decode("interlaced.gif", encode(palette, "GIF", interlace=True))
    add_decode("transparent.gif", encode(palette, "GIF", transparency=5, interlace=False))
    gif_frames = [f.quantize(32) for f in frames]
    add_decode("animated.gif", encode(gif_frames[0], "GIF", save_all=True, append_images=gif_frames[1:]))


def resize_cases():
    cases = [((48, 64), (32, 32)), ((37, 100), (96, 256)), ((17, 1000), (5, 33)), ((48, 64), (96, 64)),
             ((48, 64), (48, 20)), ((661, 997), (32, 64)), ((1, 1), (32, 32)), ((500, 3), (64, 32)),
             ((1080, 1920), (1088, 1920)), ((768, 1366), (768, 1376)), ((301, 257), (224, 320)),
             ((1200, 1800), (544, 832)), ((33, 31), (32, 32))]
    for i, ((sh, sw), (dh, dw)) in enumerate(cases):
        src = noise(sh, sw, 3)
        if i % 2:  # hard edges too: black and white stripes overshoot and must clip
            src[:, ::3] = 0
            src[::5] = 255
        out = np.asarray(Image.fromarray(src, "RGB").resize((dw, dh), Image.BICUBIC))
        name = f"resize{i}"
        write(name + ".src", src.tobytes())
        write(name + ".out", np.ascontiguousarray(out).tobytes())
        manifest["resize"].append({"name": name, "src": [sh, sw], "out": [dh, dw]})


def smart_resize(height, width, factor, min_pixels, max_pixels):
    # The processor's formula (transformers' image_processing_qwen2_vl.py), written out again.
    h_bar = round(height / factor) * factor
    w_bar = round(width / factor) * factor
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


def smart_resize_cases():
    r = random.Random(29)
    limits = [(32, 65536, 16777216), (32, 65536, 4194304), (28, 3136, 1003520), (32, 1024, 65536),
              (32, 256 * 32 * 32, 1280 * 32 * 32)]
    sizes = [(1, 1), (16, 16), (31, 31), (32, 32), (48, 48), (80, 16), (1080, 1920), (2160, 3840),
             (1964, 3024), (4096, 4096), (5000, 25), (25, 5000), (10, 2000), (4032, 3024), (48, 80)]
    sizes += [(r.randint(1, 8000), r.randint(1, 8000)) for _ in range(400)]
    sizes += [(r.randint(1, 100), r.randint(1, 100)) for _ in range(200)]
    # Exact halves: round()'s ties go to even.
    sizes += [(16 * k, 16 * j) for k in range(1, 12, 2) for j in range(1, 12, 2)]
    for height, width in sizes:
        if max(height, width) / min(height, width) > 200:
            continue
        for factor, lo, hi in limits:
            rh, rw = smart_resize(height, width, factor, lo, hi)
            manifest["smart_resize"].append([height, width, factor, lo, hi, rh, rw])


def preprocess_cases():
    clip_mean, clip_std = [0.48145466, 0.4578275, 0.40821073], [0.26862954, 0.26130258, 0.27577711]
    cases = [((70, 100), 32 * 32 * 4, 32 * 32 * 12, [0.5] * 3, [0.5] * 3),
             ((64, 64), 32 * 32, 32 * 32 * 64, clip_mean, clip_std),
             ((123, 45), 32 * 32 * 8, 32 * 32 * 20, clip_mean, clip_std)]
    patch, temporal, merge = 16, 2, 2
    for i, ((h, w), lo, hi, mean, std) in enumerate(cases):
        src = noise(h, w, 3)
        rh, rw = smart_resize(h, w, patch * merge, lo, hi)
        img = np.asarray(Image.fromarray(src, "RGB").resize((rw, rh), Image.BICUBIC))
        # rescale (float64 product, cast to float32), then normalise in float32, as the processor.
        x = (img.astype(np.float64) * (1 / 255)).astype(np.float32)
        x = (x - np.array(mean, dtype=np.float32)) / np.array(std, dtype=np.float32)
        x = x.transpose(2, 0, 1)[None]                      # [1, C, H, W]
        x = np.repeat(x, temporal, axis=0)                  # the still image, twice in time
        gt, gh, gw = x.shape[0] // temporal, rh // patch, rw // patch
        x = x.reshape(gt, temporal, 3, gh // merge, merge, patch, gw // merge, merge, patch)
        x = x.transpose(0, 3, 6, 4, 7, 2, 1, 5, 8)
        x = x.reshape(gt * gh * gw, 3 * temporal * patch * patch)
        name = f"preprocess{i}"
        write(name + ".src", src.tobytes())
        write(name + ".out", np.ascontiguousarray(x, dtype=np.float32).tobytes())
        manifest["preprocess"].append({"name": name, "src": [h, w], "min_pixels": lo, "max_pixels": hi,
                                       "mean": mean, "std": std, "grid": [gt, gh, gw]})


def over_white_table():
    c = np.repeat(np.arange(256, dtype=np.uint8), 256)
    a = np.tile(np.arange(256, dtype=np.uint8), 256)
    im = Image.fromarray(np.stack([c, c, c, a], -1).reshape(256, 256, 4), "RGBA")
    white = Image.new("RGBA", im.size, (255, 255, 255, 255))
    out = np.asarray(Image.alpha_composite(white, im))[:, :, 0]
    write("over_white.bin", np.ascontiguousarray(out).tobytes())  # [c][a]


os.makedirs(OUT, exist_ok=True)
decode_cases()
resize_cases()
smart_resize_cases()
preprocess_cases()
over_white_table()
with open(os.path.join(OUT, "manifest.json"), "w") as f:
    json.dump(manifest, f)
