"""A coding agent's tool loop against `qmlx serve`, with no pause at all between a reply and the
next request (issue 14, item 6): each turn appends the reply exactly as received and a tool
result, and is sent the moment the reply arrives. Writes one JSON line per turn: the messages
sent, the reply, and the server's usage and timings.

Usage: fast_tool_loop.py PORT TURNS OUT.jsonl [--replay IN.jsonl]
With --replay the same requests are sent again (to a cold server) instead of building new ones.
"""
import json
import sys
import urllib.request

port, turns, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
replay = sys.argv[5] if len(sys.argv) > 5 and sys.argv[4] == "--replay" else None

TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Weather forecast for a city",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]}}}]
SYSTEM = ("You are a coding agent working in a large repository. You run tools to inspect "
          "files, run tests and fetch data, then report briefly. " * 8)


def post(body):
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/v1/chat/completions", data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Authorization": "Bearer k"})
    with urllib.request.urlopen(request, timeout=600) as response:
        return json.load(response)


def reply_message(reply):
    """The assistant message as an agent appends it: everything the server returned."""
    message = {"role": "assistant", "content": reply.get("content")}
    for key in ("reasoning_content", "tool_calls"):
        if reply.get(key):
            message[key] = reply[key]
    return message


bodies = [json.loads(line)["request"] for line in open(replay)] if replay else None
messages = [{"role": "system", "content": SYSTEM},
            {"role": "user", "content": "What is the weather in Paris for three days?"}]
with open(out, "w") as log:
    for turn in range(len(bodies) if bodies else turns):
        body = bodies[turn] if bodies else {"messages": messages, "tools": TOOLS,
                                            "max_tokens": 200, "temperature": 0, "seed": 7}
        result = post(body)
        reply = result["choices"][0]["message"]
        log.write(json.dumps({"request": body, "reply": reply, "usage": result["usage"],
                              "timings": result["timings"]}) + "\n")
        if bodies:
            continue
        calls = reply.get("tool_calls") or [{"id": "call_0"}]
        messages = messages + [reply_message(reply)] + [
            {"role": "tool", "tool_call_id": call["id"],
             "content": f"turn {turn}: Paris {12 + turn} C, light rain"} for call in calls]
