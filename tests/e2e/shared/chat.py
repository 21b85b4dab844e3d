"""One chat completion at temperature 0 against a qmlx server, for the shared-tier e2e tests.
Usage: chat.py PORT TURN [REPLY1]   (env QMLX_CHAT_HEADER="Name: value" adds one header)
TURN 1 is a fixed long agent prompt; TURN 2 is turn 1, its reply REPLY1 and a new question.
Prints one line: "<status> <cached tokens> <tier or -> <reply>", the reply as the JSON of
[reasoning_content, content] (the tiny model may put every token in either); status is the HTTP
status, so a failed request is visible to the caller instead of raising here."""
import json
import os
import sys
import urllib.error
import urllib.request

port, turn = sys.argv[1], sys.argv[2]
system = "You are a coding agent working in a large C++ repository. " * 24
messages = [{"role": "system", "content": system},
            {"role": "user", "content": "Read src/main.cpp and explain the start-up sequence."}]
if turn == "2":
    reasoning, content = json.loads(sys.argv[3])
    messages += [{"role": "assistant", "content": content or reasoning},
                 {"role": "user", "content": "Now list the files it opens, in order."}]
body = json.dumps({"messages": messages, "max_tokens": 12, "temperature": 0}).encode()
headers = {"Authorization": "Bearer k", "Content-Type": "application/json"}
if os.environ.get("QMLX_CHAT_HEADER"):
    name, value = os.environ["QMLX_CHAT_HEADER"].split(":", 1)
    headers[name.strip()] = value.strip()
request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions", data=body,
                                 headers=headers)
try:
    with urllib.request.urlopen(request, timeout=60) as response:
        d = json.load(response)
        cached = d["usage"]["prompt_tokens_details"]["cached_tokens"]
        tier = d["timings"]["cache"]["tier"] or "-"
        message = d["choices"][0]["message"]
        print(response.status, cached, tier,
              json.dumps([message.get("reasoning_content"), message.get("content")]))
except urllib.error.HTTPError as e:
    print(e.code, 0, "-", json.dumps(e.read().decode()))
