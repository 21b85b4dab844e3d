"""Sends the speculative e2e test's requests to a qmlx server and writes what came back that
must not depend on speculative decoding (text, reasoning, tool calls, finish reasons, token
counts), one JSON document, so two servers' answers can be compared byte for byte.
Usage: speculative_requests.py PORT OUT_JSON"""
import json
import sys
import urllib.request

port, out_path = int(sys.argv[1]), sys.argv[2]
URL = f"http://127.0.0.1:{port}/v1/chat/completions"
TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Weather forecast",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]


def post(body):
    request = urllib.request.Request(URL, json.dumps(body).encode(), {
        "Content-Type": "application/json", "Authorization": "Bearer k"})
    with urllib.request.urlopen(request, timeout=120) as response:
        return response.read().decode()


def chat(messages, **extra):
    body = {"model": "m", "messages": messages, "temperature": 0, **extra}
    reply = json.loads(post(body))
    choice = reply["choices"][0]
    message = choice["message"]
    return {"content": message.get("content"),
            "reasoning": message.get("reasoning_content"),
            "tool_calls": [(c["function"]["name"], c["function"]["arguments"])
                           for c in message.get("tool_calls") or []],
            "finish_reason": choice["finish_reason"],
            "completion_tokens": reply["usage"]["completion_tokens"]}


def chat_stream(messages, **extra):
    body = {"model": "m", "messages": messages, "temperature": 0, "stream": True, **extra}
    content, reasoning, finish = "", "", None
    for line in post(body).splitlines():
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        choice = json.loads(line[6:])["choices"][0]
        delta = choice.get("delta", {})
        content += delta.get("content") or ""
        reasoning += delta.get("reasoning_content") or ""
        finish = choice.get("finish_reason") or finish
    return {"content": content, "reasoning": reasoning, "finish_reason": finish}


hello = [{"role": "user", "content": "What is the weather in Paris?"}]
results = {"whole": chat(hello, max_tokens=400)}
results["tools"] = chat(hello, max_tokens=400, tools=TOOLS)
for n in (1, 2, 5, 13):
    results[f"max_tokens_{n}"] = chat(hello, max_tokens=n)
for stop in ("tool, then", "forecast", "Paris\n"):
    results[f"stop_{stop}"] = chat(hello, max_tokens=400, stop=[stop])
results["stream"] = chat_stream(hello, max_tokens=400)
results["stream_stop"] = chat_stream(hello, max_tokens=400, stop=["check"])
# A second turn: its prompt begins with the first, restored from the cache.
turn2 = hello + [{"role": "assistant", "content": results["whole"]["content"] or ""},
                 {"role": "user", "content": "And tomorrow?"}]
results["turn2"] = chat(turn2, max_tokens=400)
results["turn2_again"] = chat(turn2, max_tokens=400)
# Constrained replies (issue 28 item 6): the drafts and their check are held to the mask, so
# the scripted prose becomes the schema's JSON alike with and without speculation; a short
# max_tokens closes the reasoning in time (forced tokens between speculative steps).
SCHEMA = {"type": "object", "additionalProperties": False, "required": ["city", "days"],
          "properties": {"city": {"type": "string", "maxLength": 6}, "days": {"type": "integer"}}}
FORMAT = {"type": "json_schema", "json_schema": {"name": "w", "schema": SCHEMA, "strict": True}}
for n in (16, 40, 120):
    results[f"schema_{n}"] = chat(hello, max_tokens=n, response_format=FORMAT)
results["schema_stream"] = chat_stream(hello, max_tokens=120, response_format=FORMAT)
results["json_object"] = chat(hello, max_tokens=80, response_format={"type": "json_object"})
STRICT_TOOLS = [{"type": "function", "function": {**TOOLS[0]["function"], "strict": True,
    "parameters": {"type": "object", "additionalProperties": False, "required": ["city"],
                   "properties": {"city": {"type": "string", "enum": ["Oslo", "Paris"]}}}}}]
results["strict_tool"] = chat(hello, max_tokens=400, tools=STRICT_TOOLS)
results["strict_tool_and_schema"] = chat(hello, max_tokens=400, tools=STRICT_TOOLS,
                                         response_format=FORMAT)
json.dump(results, open(out_path, "w"), indent=1, sort_keys=True)
