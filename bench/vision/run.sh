#!/usr/bin/env bash
# The vision benchmark (issue 29, item 7), each part's markdown table printed as it comes:
#   1. the machine: CPU model, the AVX-512 flags, cores, load average, commit;
#   2. qmlx_vision_bench: encoder time per image size (512x512, 1024x1024, 1920x1080) on the
#      Qwen3.5-35B-A3B tower shape with random BF16 weights, against the roofline (its FLOPs
#      over the measured rate of one BF16 matmul of the tower's MLP shape);
#   3. second_turn.py: a second chat turn with a 1920x1080 screenshot in its history through
#      `qmlx serve`, cache on and off (a tiny language model under the real-shape tower,
#      written once by make-model --vision --vision-shape qwen3.5-35b-a3b, about 0.8 GB).
# Usage: bench/vision/run.sh [--smoke] [BUILD_DIR]   (needs qmlx_vision_bench and qmlx_cli built)
#   --smoke: a tiny tower, one small image and a small screenshot (CI: the scripts work, the
#            numbers mean little)
#   REPEAT (encoder runs per image, scaled down for big images; default 3), SIZES (the
#   encoder's images, default 512x512,1024x1024,1920x1080), SCREENSHOT (default 1920x1080),
#   WORK (default BUILD_DIR/bench-vision: the model, the servers' logs and cache)
set -euo pipefail
smoke=0
if [[ ${1:-} == --smoke ]]; then
  smoke=1
  shift
fi
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$(cd "${1:-$root/build}" && pwd)"
work="${WORK:-$build/bench-vision}"
mkdir -p "$work"
qmlx="$build/bin/qmlx"

# 1. The machine: rates on a shared 2-core machine mean little without its load beside them.
cpu=$(lscpu | sed -n 's/^Model name: *//p')
avx512=$(grep -o -w 'avx512f\|avx512_bf16\|avx512_vnni' /proc/cpuinfo | sort -u | tr '\n' ' ')
echo "# $(date -u +%FT%TZ) commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown), $cpu, $(nproc) cores," \
  "AVX-512: ${avx512:-none}, load average $(cut -d' ' -f1-3 /proc/loadavg), smoke=$smoke"

# 2. The encoder alone.
echo
if [[ $smoke == 1 ]]; then
  "$build/bench/vision/qmlx_vision_bench" --smoke
else
  "$build/bench/vision/qmlx_vision_bench" --repeat "${REPEAT:-3}" \
    --sizes "${SIZES:-512x512,1024x1024,1920x1080}"
fi
echo "# load average after the encoder: $(cut -d' ' -f1-3 /proc/loadavg)"

# 3. The second turn through the server.
echo
# Written afresh each run (seconds, even the real tower): a model from an older make-model
# could lack what the routes need (the template's image parts).
model="$work/model"
rm -rf "$model"
if [[ $smoke == 1 ]]; then
  "$qmlx" make-model --out "$model" --vision >/dev/null
  screenshot=256x192
else
  "$qmlx" make-model --out "$model" --vision --vision-shape qwen3.5-35b-a3b >/dev/null
  screenshot=${SCREENSHOT:-1920x1080}
fi
/usr/bin/python3 "$root/bench/vision/second_turn.py" "$qmlx" "$model" "$work/second-turn" \
  --size "$screenshot"
echo "# load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
