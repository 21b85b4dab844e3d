#!/usr/bin/env bash
# Image input cost per image size: qmlx's decode, resize and patch flattening (CPU time, best of
# 5) against PIL's decode + Image.resize(BICUBIC) on the same files, the path transformers' slow
# processor takes. Screenshot-like PNGs (flat areas, text-like noise) and photo-like JPEGs at
# 512x512, 1024x1024, 1920x1080 and 3840x2160.
# Usage: bench/image/run.sh [BUILD_DIR]   (builds image_preprocess_bench there first)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
cmake --build "$build" --target image_preprocess_bench >/dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

/usr/bin/python3 - "$work" <<'PY'
import sys
import numpy as np
from PIL import Image
rng = np.random.default_rng(1)
for w, h in [(512, 512), (1024, 1024), (1920, 1080), (3840, 2160)]:
    shot = np.full((h, w, 3), 245, np.uint8)                      # a page
    shot[: h // 12] = (40, 44, 52)                                # a title bar
    for y in range(h // 8, h, 18):                                # lines of "text"
        n = int(rng.integers(w // 4, w - 40))
        shot[y:y + 9, 20:20 + n] = rng.integers(0, 90, (9, n, 1), dtype=np.uint8)
    Image.fromarray(shot).save(f"{sys.argv[1]}/shot_{w}x{h}.png")
    ramp = np.add.outer(np.arange(h), np.arange(w)) * 255 // (h + w)
    photo = np.clip(ramp[:, :, None] + rng.integers(-30, 31, (h, w, 3)), 0, 255).astype(np.uint8)
    Image.fromarray(photo).save(f"{sys.argv[1]}/photo_{w}x{h}.jpg", quality=90)
PY

files=("$work"/shot_*.png "$work"/photo_*.jpg)
"$build/bench/image/image_preprocess_bench" 5 "${files[@]}"

/usr/bin/python3 - "${files[@]}" <<'PY'
import json, math, sys, time
from PIL import Image
def best(fn, n=5):
    t = []
    for _ in range(n):
        s = time.thread_time(); r = fn(); t.append(time.thread_time() - s)
    return min(t) * 1e3, r
for f in sys.argv[1:]:
    def load():
        im = Image.open(f); im.load(); return im.convert("RGB")
    dec, im = best(load)
    w, h = im.size
    rh = max(32, round(h / 32) * 32); rw = max(32, round(w / 32) * 32)  # in range for these sizes
    res, _ = best(lambda: im.resize((rw, rh), Image.BICUBIC))
    print(json.dumps({"file": f, "peer": "PIL " + Image.__version__, "decode_ms": round(dec, 2),
                      "resize_ms": round(res, 2)}))
PY
