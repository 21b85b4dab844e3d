#!/usr/bin/env bash
# End-to-end test of the shared tier (issue 15, item 7), all on loopback: a 3-master Redis
# Cluster and several `qmlx serve` processes with separate local disks, temperature 0.
#   1. turn 1 on server A; turn 2 on server B (empty disk) HITs from the shared tier with the
#      tokens of a cold server, and the log line says tier=shared
#   2. A restarted with an empty disk resumes turn 2 warm from the shared tier
#   3. a server of another model never restores what this model stored
#   4. a corrupted value is detected, deleted from Redis, counted, and the answer is the cold one
#   5. a Redis node killed while restores run costs no failed request and no wrong token
# Usage: run_shared_e2e.sh QMLX_BINARY WORK_DIR
set -euo pipefail
qmlx=$1
work=$2
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work"
mkdir -p "$work"
source "$here/../cache/serve_helpers.sh"  # py, fail, free_port, wait_healthy
source "$here/servers.sh"  # start, stop, chat, metric, wait_published; cleanup on exit

nodes=$(bash "$cluster" start "$work/redis" 3)
[[ -n $nodes ]] || fail "no cluster"
nodes_json=$($py -c 'import json,sys; print(json.dumps(sys.argv[1].split(",")))' "$nodes")
node_port() { cut -d, -f$(($1 + 1)) <<<"$nodes" | cut -d: -f2; }

"$qmlx" make-model --out "$work/model" --arch qwen3_5 --seed 31 >/dev/null
"$qmlx" make-model --out "$work/other" --arch qwen3_5 --seed 32 >/dev/null
config() {  # config NAME [LOCAL_TIERS]: its own disk and the shared tier on (LOCAL_TIERS false:
  # no RAM or disk tier, so every restore reads the shared tier)
  local tiers=${2:-true}
  echo "{\"cache\": {\"disk_cache_dir\": \"$work/disk-$1\", \"chunk_tokens\": 32,
         \"fsync\": false, \"memory_prefix_cache\": $tiers, \"disk_kv_cache\": $tiers,
         \"shared\": {\"nodes\": $nodes_json, \"timeout_ms\": 250,
         \"breaker_cooldown_ms\": 1000}}}" >"$work/$1.json"
  echo "$work/$1.json"
}
# Cold references: no cache at all.
cold_references "$work/model"

# 1. Turn 1 on A, turn 2 on B from the shared tier.
turn_2_on_another "$work/model" "$(config A)" "$(config B)"
hits=$(metric B qmlx_shared_tier_hits_total)
[[ $hits == 1 ]] || fail "B shared hit not counted: qmlx_shared_tier_hits_total=$hits"
echo "ok turn 2 on another server: HIT from shared ($cached tokens), cold answer"

# 2. A restarted with an empty disk resumes warm.
wait_published B
stop A
rm -rf "$work/disk-A"
start A "$work/model" "$work/A.json"
read -r status cached tier text < <(chat A 2 "$cold1")
[[ $status == 200 && $cached -gt 0 && $tier == shared && $text == "$cold2" ]] ||
  fail "A restarted empty: $status $cached $tier $text"
echo "ok restarted server with an empty disk: HIT from shared ($cached tokens)"

# 3. Another model never restores.
start O "$work/other" "$(config O)"
read -r status cached _ _ < <(chat O 2 "$cold1")
[[ $status == 200 && $cached == 0 ]] || fail "another model restored: $status $cached"
[[ $(metric O qmlx_shared_tier_hits_total) == 0 ]] || fail "another model read from shared"
stop O
echo "ok another model: MISS"

# 4. Corrupt every snapshot of the model in Redis; a fresh server detects, deletes, answers cold.
marker=CORRUPTCORRUPT
snapshot_parts() {  # "port key" of the first part of every snapshot in the cluster
  for i in 0 1 2; do
    local p key generation
    p=$(node_port $i)
    while read -r key; do
      [[ -n $key ]] || continue
      generation=$(redis-cli -p "$p" get "$key" | cut -d' ' -f2)
      echo "$p $key:$generation:0"
    done < <(redis-cli -p "$p" --scan --pattern 'qmlx:{*:snapshots/*}')
  done
}
count_marked() {
  local n=0 p part
  while read -r p part; do
    [[ $(redis-cli -p "$p" getrange "$part" 200 $((200 + ${#marker} - 1)) | tr -d '\0') == "$marker" ]] &&
      n=$((n + 1))
  done < <(snapshot_parts)
  echo $n
}
while read -r p part; do redis-cli -p "$p" setrange "$part" 200 "$marker" >/dev/null; done < <(snapshot_parts)
corrupted=$(count_marked)
[[ $corrupted -gt 0 ]] || fail "no snapshot in Redis to corrupt"
start C "$work/model" "$(config C)"
read -r status cached tier text < <(chat C 2 "$cold1")
[[ $status == 200 && $text == "$cold2" ]] || fail "after corruption: $status $text vs $cold2"
[[ $tier != shared ]] || fail "a corrupted snapshot was restored"
deleted=$(metric C qmlx_shared_tier_corrupt_deleted_total)
[[ $deleted -ge 1 ]] || fail "corruption not counted"
grep -q 'rejected resume point .*(checksum)' "$work/C.log" || fail "checksum reject not logged"
# Each deleted value is gone (C's own checkpoints may have replaced a few more with good ones).
remaining=$(count_marked)
[[ $remaining -le $((corrupted - deleted)) ]] ||
  fail "corrupted values not deleted from Redis ($remaining of $corrupted left, $deleted counted)"
stop C
echo "ok corrupted value: detected, $deleted deleted from Redis, cold answer"

# 5. Kill a Redis node while servers restore: every request 200 with the cold tokens. D and E
# keep nothing locally, so each of their requests restores from the shared tier (or falls back).
for name in D E; do start "$name" "$work/model" "$(config "$name" false)"; done
chat D 2 "$cold1" >/dev/null  # the turn-2 checkpoints are in the tier again (step 4 deleted some)
(
  for round in 1 2 3 4; do
    for name in D E; do chat "$name" 2 "$cold1" >>"$work/kill-$name.txt"; done
  done
) &
load=$!
for _ in $(seq 100); do  # kill once a request has restored from the shared tier
  grep -q ' shared ' "$work/kill-D.txt" "$work/kill-E.txt" 2>/dev/null && break
  sleep 0.05
done
bash "$cluster" kill "$work/redis" 1
wait "$load"
from_shared=$(cat "$work/kill-D.txt" "$work/kill-E.txt" | grep -c ' shared ' || true)
for name in D E; do
  while read -r status cached tier text; do
    [[ $status == 200 ]] || fail "$name: a request failed after the node died ($status)"
    [[ $text == "$cold2" ]] || fail "$name: wrong tokens after the node died: $text"
  done <"$work/kill-$name.txt"
done
# Afterwards (breaker open or not) a request still answers correctly, within the bound.
start_ms=$(date +%s%3N)
read -r status _ _ text < <(chat D 1)
[[ $status == 200 && $text == "$cold1" ]] || fail "after the node died: $status $text"
echo "ok node killed during restores: no failed request, cold tokens ($from_shared of 8 from shared;" \
  "next request $(($(date +%s%3N) - start_ms)) ms)"
echo "PASS shared tier e2e"
