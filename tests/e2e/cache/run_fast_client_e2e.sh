#!/usr/bin/env bash
# End-to-end test of a fast client (issue 14, item 6): a tool loop that sends each next request
# the moment the reply arrives, against `qmlx serve` on a scripted model that calls a tool every
# turn. The next request then arrives while the server pre-fills the reply's history in idle
# time; it must continue from that work, not throw it away: over the loop the server prefills at
# most 1.05 x the tokens the client added (each turn's prompt less the conversation it had
# already seen, as the model's template renders it), and every answer equals the cold one.
# Usage: run_fast_client_e2e.sh QMLX_BINARY WORK_DIR [TURNS]
set -euo pipefail
qmlx=$1
work=$2
turns=${3:-12}
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work"
mkdir -p "$work"
source "$here/serve_helpers.sh"

# The qwen3_5 template opens <think> in the generation prompt: the script starts inside it.
printf '%s' 'The user wants the weather. I will call the tool and then look at what it returns before I answer, as the instructions say.
</think>

Let me check.

<tool_call>
<function=get_weather>
<parameter=city>
Paris
</parameter>
<parameter=days>
3
</parameter>
</function>
</tool_call>' > "$work/script.txt"
"$qmlx" make-model --out "$work/model" --script "$work/script.txt" --arch qwen3_5 >/dev/null
config() {  # config FILE MEMORY DISK
  echo "{\"cache\": {\"disk_cache_dir\": \"$work/store\", \"fsync\": false,
         \"memory_prefix_cache\": $2, \"disk_kv_cache\": $3}}" > "$1"
}
config "$work/warm.json" true true
config "$work/cold.json" false false

start_server "$work/model" "$work/warm.json" "$work/warm.log"
$py "$here/fast_tool_loop.py" "$port" "$turns" "$work/warm.jsonl"
stop_server
start_server "$work/model" "$work/cold.json" "$work/cold.log"
$py "$here/fast_tool_loop.py" "$port" 0 "$work/cold.jsonl" --replay "$work/warm.jsonl"
stop_server

# Tokens each turn added: its prompt less the conversation before its new messages (the last
# reply included), both rendered by the model's own template.
$py - "$qmlx" "$work" <<'PY'
import json, subprocess, sys
qmlx, work = sys.argv[1], sys.argv[2]
def tokens(messages, tools, generation_prompt):
    path = f"{work}/render.json"
    json.dump(messages, open(path, "w"))
    json.dump(tools, open(f"{work}/tools.json", "w"))
    args = [qmlx, "tokenize", "--model", f"{work}/model", "--messages", path,
            "--tools", f"{work}/tools.json", "--json"]
    if not generation_prompt:
        args.append("--no-generation-prompt")
    return json.loads(subprocess.check_output(args))["ids"]
warm = [json.loads(l) for l in open(f"{work}/warm.jsonl")]
cold = [json.loads(l) for l in open(f"{work}/cold.jsonl")]
prefilled = added = 0
for i, (w, c) in enumerate(zip(warm, cold)):
    if w["reply"] != c["reply"]:
        sys.exit(f"FAIL: turn {i}: warm reply differs from cold: {w['reply']} vs {c['reply']}")
    t = w["timings"]
    print(f"turn {i}: prompt={w['usage']['prompt_tokens']} cached={t['cached']} "
          f"prefill={t['prefill']} kind={t['cache']['kind']} tier={t['cache']['tier']} "
          f"queue_ms={t['queue_ms']:.1f}")
    if i == 0:
        continue
    messages, tools = w["request"]["messages"], w["request"]["tools"]
    prompt = tokens(messages, tools, True)
    seen = len(messages)
    while seen > 0 and messages[seen - 1]["role"] == "tool":
        seen -= 1
    seen = messages[:seen]
    history = tokens(seen, tools, False)
    if prompt[: len(history)] != history or len(prompt) != w["usage"]["prompt_tokens"]:
        sys.exit(f"FAIL: turn {i}: the conversation so far is not a prefix of the prompt")
    prefilled += t["prefill"]
    added += len(prompt) - len(history)
ratio = prefilled / added
print(f"prefill {prefilled} / new tokens {added} = {ratio:.3f} over {len(warm) - 1} turns")
if ratio > 1.05:
    sys.exit("FAIL: the loop prefilled more than its new tokens (limit 1.05)")
PY
echo "ok fast tool loop: warm == cold, prefill within 5% of the new tokens"
