#!/usr/bin/python3
"""Independent numpy reference for qmlx: greedy generation from token ids.

  reference.py --model DIR --tokens 1,2,3 --max-tokens N [--logits-out FILE]
               [--gdn-form chunked|recurrent] [--json]

--logits-out writes raw little-endian float32 logits, max_tokens rows x vocab_size; row i is
the distribution generated token i was chosen from (greedy). Prints the generated tokens as
JSON ({"prompt_tokens", "tokens"}). Reads config.json and the safetensors files itself and
shares no code with the engine or the model generator.
"""
import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import checkpoint  # noqa: E402
import forward  # noqa: E402


def generate(model, prompt, max_tokens):
    logits = model.forward(prompt)[-1]
    rows, tokens = [], []
    for _ in range(max_tokens):
        rows.append(logits)
        token = int(np.argmax(logits))
        tokens.append(token)
        if len(tokens) == max_tokens:
            break
        logits = model.forward([token])[-1]
    return tokens, np.array(rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--tokens", required=True)
    parser.add_argument("--max-tokens", type=int, default=16)
    parser.add_argument("--logits-out")
    parser.add_argument("--gdn-form", choices=["chunked", "recurrent"], default="chunked")
    args = parser.parse_args()
    prompt = [int(t) for t in args.tokens.split(",") if t]
    cfg, weights = checkpoint.load(args.model)
    model = forward.Model(cfg, weights, args.gdn_form)
    tokens, rows = generate(model, prompt, args.max_tokens)
    if args.logits_out:
        rows.astype("<f4").tofile(args.logits_out)
    print(json.dumps({"prompt_tokens": prompt, "tokens": tokens}))


if __name__ == "__main__":
    main()
