#!/usr/bin/python3
"""Turns the JSON lines of bench/peer/run.sh into the side-by-side Markdown table: medians over
the runs of each (shape, format, prompt length, engine), and qmlx / llama.cpp ratios for each
pair of formats with the same bits per weight.
  table.py RESULTS.jsonl"""
import collections
import json
import statistics
import sys

# qmlx format -> the llama.cpp format it is compared with (same bits per weight).
PAIRS = [("gguf-q8_0", "q8_0"), ("gguf-q4_k_m", "q4_k_m"), ("mlx-8bit", "q8_0"),
         ("mlx-4bit", "q4_k_m")]


def main(path):
    runs = collections.defaultdict(list)
    for line in open(path):
        r = json.loads(line)
        runs[(r["shape"], r["format"], r["prompt"], r["engine"])].append(r)

    def median(key, field):
        values = [r[field] for r in runs.get(key, []) if r.get(field)]
        return statistics.median(values) if values else None

    def fmt(v, scale=1.0, digits=1):
        return "–" if v is None else f"{v / scale:.{digits}f}"

    print("| shape | qmlx format | llama.cpp format | prompt | prefill tok/s qmlx / llama | ratio "
          "| decode tok/s qmlx / llama | ratio | peak RSS MB qmlx / llama | runs |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    shapes = sorted({k[0] for k in runs})
    prompts = sorted({k[2] for k in runs})
    for shape in shapes:
        for ours, theirs in PAIRS:
            for prompt in prompts:
                q, l = (shape, ours, prompt, "qmlx"), (shape, theirs, prompt, "llama.cpp")
                if q not in runs or l not in runs:
                    continue
                pq, pl = median(q, "prefill_tokens_per_second"), median(l, "prefill_tokens_per_second")
                dq, dl = median(q, "decode_tokens_per_second"), median(l, "decode_tokens_per_second")
                mq, ml = median(q, "peak_rss_bytes"), median(l, "peak_rss_bytes")
                ratio = lambda a, b: "–" if a is None or b is None else f"**{a / b:.2f}x**"
                print(f"| {shape} | {ours} | {theirs} | {prompt} | {fmt(pq)} / {fmt(pl)} | "
                      f"{ratio(pq, pl)} | {fmt(dq)} / {fmt(dl)} | {ratio(dq, dl)} | "
                      f"{fmt(mq, 1e6, 0)} / {fmt(ml, 1e6, 0)} | {len(runs[q])}+{len(runs[l])} |")


if __name__ == "__main__":
    main(sys.argv[1])
