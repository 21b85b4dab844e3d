#!/usr/bin/env python3
"""End-to-end check of `qmlx generate` on a small random model written by `qmlx make-model`:
the JSON shape, greedy tokens equal the argmax of the logged logits rows, top log-probs equal
numpy's log-softmax of those rows, and seeded sampling is reproducible. A model whose MTP head
is incomplete generates with one warning, and refuses --speculative mtp at start (exit 1)."""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

GENERATE = sys.argv[1]
MAKE_MODEL = sys.argv[2]


def run(*args):
    binary = MAKE_MODEL if args[0] == "make-model" else GENERATE
    out = subprocess.run([binary, *args], check=True, capture_output=True, text=True)
    return out.stdout


def incomplete_mtp_head(tmp):
    model = os.path.join(tmp, "broken-head")
    run("make-model", "--arch", "qwen3_5", "--mtp", "--omit-tensor", "mtp.norm.weight",
        "--omit-tensor", "mtp.layers.0.self_attn.k_norm.weight", "--out", model, "--seed", "3")
    base = [GENERATE, "generate", "--model", model, "--tokens", "1,2,3", "--max-tokens", "4"]
    plain = subprocess.run(base, capture_output=True, text=True)
    assert plain.returncode == 0, plain.stderr
    warnings = [l for l in plain.stderr.splitlines() if " warn " in l]
    expected = ("model: MTP head incomplete (missing mtp.norm.weight, "
                "mtp.layers.0.self_attn.k_norm.weight); multi-token prediction is off")
    assert len(warnings) == 1 and expected in warnings[0], plain.stderr
    for flag in (["--speculative", "mtp"],
                 ["--speculative-config", '{"method":"mtp","num_speculative_tokens":2}']):
        spec = subprocess.run(base + flag, capture_output=True, text=True)
        assert spec.returncode == 1, (flag, spec.returncode, spec.stderr)
        assert spec.stdout == "", spec.stdout
        assert ("error: speculative decoding (--speculative) needs the MTP head, but the "
                "model's MTP head is incomplete (missing mtp.norm.weight, "
                "mtp.layers.0.self_attn.k_norm.weight) and was not loaded") in spec.stderr, \
            spec.stderr


def main():
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "model")
        run("make-model", "--arch", "qwen3_5_moe", "--layout", "mlx", "--bits", "4",
            "--out", model, "--seed", "3")
        with open(os.path.join(model, "config.json")) as f:
            config = json.load(f)
        vocab = config.get("text_config", config)["vocab_size"]
        # Rows past the tokenizer's ids are padding: never sampled, not in the log-softmax.
        with open(os.path.join(model, "tokenizer.json")) as f:
            tok = json.load(f)
        ids = list(tok["model"]["vocab"].values()) + [t["id"] for t in tok["added_tokens"]]
        usable = max(ids) + 1
        logits_path = os.path.join(tmp, "logits.bin")
        steps = 6
        result = json.loads(run("generate", "--model", model, "--tokens", "1,2,3,4,5",
                                "--max-tokens", str(steps), "--json", "--top-logprobs", "3",
                                "--kv-dtype", "f32", "--logits-out", logits_path))
        assert result["prompt_tokens"] == [1, 2, 3, 4, 5], result
        assert len(result["tokens"]) == steps, result
        for key in ("load_ms", "prefill_ms", "prefill_tokens_per_second", "decode_ms",
                    "decode_tokens_per_second", "peak_rss_bytes"):
            assert key in result["timings"], key
        rows = np.fromfile(logits_path, dtype="<f4").reshape(steps, vocab)
        for i, full_row in enumerate(rows):
            assert np.all(np.isfinite(full_row))
            row = full_row[:usable]
            assert int(np.argmax(row)) == result["tokens"][i], (i, np.argmax(row), result)
            m = row.astype(np.float64).max()
            logsm = row - (m + np.log(np.exp(row.astype(np.float64) - m).sum()))
            best = np.argsort(-row)[:3]
            got = result["top_logprobs"][i]
            assert [g[0] for g in got] == [int(b) for b in best], (got, best)
            assert np.allclose([g[1] for g in got], logsm[best], atol=1e-4), (got, logsm[best])

        sampled = [json.loads(run("generate", "--model", model, "--tokens", "7,8,9",
                                  "--max-tokens", "8", "--temperature", "1.0", "--seed", "11",
                                  "--json"))["tokens"] for _ in range(2)]
        assert sampled[0] == sampled[1], sampled

        text = json.loads(run("generate", "--model", model, "--prompt", "hello",
                              "--max-tokens", "3", "--json"))
        assert len(text["prompt_tokens"]) > 0 and isinstance(text["text"], str), text

        incomplete_mtp_head(tmp)
    print("ok")


if __name__ == "__main__":
    main()
