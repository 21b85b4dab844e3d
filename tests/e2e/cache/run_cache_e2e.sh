#!/usr/bin/env bash
# End-to-end test of the prefix cache through `qmlx serve` (issue 5): a repeated prompt is a
# HIT with the same answer; the store survives a restart (disk tier); the admin routes and
# `qmlx cache` list, inspect, verify, pin and delete; the metrics port passes promtool with
# every cache family once; flipped bytes in every snapshot and chunk are detected,
# quarantined and counted, and the answer is the cold one; a store written by another model
# is never restored; both tiers off is a true cold baseline.
# Usage: run_cache_e2e.sh QMLX_BINARY WORK_DIR
set -euo pipefail
qmlx=$1
work=$2
rm -rf "$work"
mkdir -p "$work"
source "$(dirname "$0")/serve_helpers.sh"

"$qmlx" make-model --out "$work/model-a" --arch qwen3_5 --seed 31 >/dev/null
"$qmlx" make-model --out "$work/model-b" --arch qwen3_5 --seed 32 >/dev/null
config() {  # config FILE MEMORY DISK
  echo "{\"cache\": {\"disk_cache_dir\": \"$work/store\", \"chunk_tokens\": 32, \"fsync\": false,
         \"memory_prefix_cache\": $2, \"disk_kv_cache\": $3}}" > "$1"
}
config "$work/both.json" true true
config "$work/disk.json" false true
config "$work/off.json" false false

api() { curl -sS -H "Authorization: Bearer k" "$@"; }
# chat OUT: one fixed conversation at temperature 0; prints "cached text".
chat() {
  api "http://127.0.0.1:$port/v1/chat/completions" -d '{"messages": [
      {"role": "system", "content": "You are a coding agent in a large repository. Be brief."},
      {"role": "user", "content": "Read src/main.cpp and explain the start-up sequence."}],
      "max_tokens": 12, "temperature": 0}' > "$1"
  $py -c 'import json,sys; d=json.load(open(sys.argv[1])); m=d["choices"][0]["message"];
print(d["usage"]["prompt_tokens_details"]["cached_tokens"], d["timings"]["cache"]["tier"] or "-", json.dumps([m.get("reasoning_content"), m.get("content")]))' "$1"
}

# 1. Cold, then a repeat restored from RAM with the same answer.
start_server "$work/model-a" "$work/both.json" "$work/a1.log"
read -r cold_cached _ cold_text < <(chat "$work/r1.json")
[[ $cold_cached == 0 ]] || fail "first request was not cold"
read -r warm_cached tier warm_text < <(chat "$work/r2.json")
[[ $warm_cached -gt 0 && $tier == ram ]] || fail "repeat not restored from RAM ($warm_cached $tier)"
[[ $warm_text == "$cold_text" ]] || fail "warm answer differs: $warm_text vs $cold_text"
grep -Eq 'uid=1 MISS cached=0 prefill=[0-9]+ reason=no_candidate' "$work/a1.log" || fail "MISS log line"
grep -Eq 'uid=2 HIT cached=[0-9]+ prefill=0 kind=prompt_end tier=ram lookup=' "$work/a1.log" || fail "HIT log line"
echo "ok repeat: HIT from RAM, same answer"

# 2. Metrics: promtool-clean, each cache family exactly once.
curl -s "http://127.0.0.1:$metrics/metrics" > "$work/metrics.txt"
promtool check metrics < "$work/metrics.txt" || fail "promtool rejects the metrics"
for family in qmlx_cache_hit_total qmlx_cache_miss_total qmlx_cached_tokens_total \
  qmlx_prefill_tokens_total qmlx_restore_seconds qmlx_restore_bytes_total \
  qmlx_restore_rejected_total qmlx_checkpoint_writes_total qmlx_checkpoint_write_seconds \
  qmlx_checkpoint_queue_depth qmlx_checkpoint_dropped_total qmlx_disk_cache_bytes \
  qmlx_disk_cache_snapshots qmlx_disk_cache_chunks qmlx_evictions_total \
  qmlx_cache_divergence_total; do
  [[ $(grep -c "^# TYPE $family " "$work/metrics.txt") == 1 ]] || fail "family $family not once"
done
grep -q '^qmlx_cache_hit_total 1$' "$work/metrics.txt" || fail "hit counter"
grep -q '^qmlx_cache_miss_total{reason="no_candidate"} 1$' "$work/metrics.txt" || fail "miss counter"
echo "ok metrics: promtool and every cache family once"

# 3. Admin routes.
api "http://127.0.0.1:$port/admin/cache/snapshots" > "$work/list.json"
id=$($py -c 'import json,sys; d=json.load(open(sys.argv[1]))["data"]; print([s["id"] for s in d if s["kind"]=="prompt_end"][0]); assert len(d)>=3' "$work/list.json")
api "http://127.0.0.1:$port/admin/cache/snapshots/$id" | grep -q '"kind":"prompt_end"' || fail "inspect"
api "http://127.0.0.1:$port/admin/cache/snapshots/${id^^}" | grep -q "\"id\":\"$id\"" || fail "inspect by upper-case id"
api -d "{\"pinned\": true}" "http://127.0.0.1:$port/admin/cache/snapshots/$id/pin" | grep -q '"pinned":true' || fail "pin"
api -d "" "http://127.0.0.1:$port/admin/cache/verify" | grep -q '"failed":0' || fail "verify all"
api "http://127.0.0.1:$port/admin/cache/stats" | grep -q '"fingerprint"' || fail "stats"
[[ $(api -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/admin/cache/snapshots/00000000000000000000000000000000") == 404 ]] || fail "unknown id is not 404"
[[ $(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/admin/cache/stats") == 401 ]] || fail "admin without key is not 401"
echo "ok admin: list, inspect (either case), pin, verify, stats, 404, 401"
stop_server

# 4. Restart: the disk tier restores, the pin survived; `qmlx cache` sees the same store.
start_server "$work/model-a" "$work/disk.json" "$work/a2.log"
read -r cached tier text < <(chat "$work/r3.json")
[[ $cached -gt 0 && $tier == disk && $text == "$cold_text" ]] || fail "after restart: $cached $tier $text"
api "http://127.0.0.1:$port/admin/cache/snapshots/$id" | grep -q '"pinned":true' || fail "pin lost"
stop_server
"$qmlx" cache ls --cache-config "$work/disk.json" --json > "$work/ls.json"
$py -c 'import json,sys; d=json.load(open(sys.argv[1])); assert any(s["id"]==sys.argv[2] and s["pinned"] for s in (d["snapshots"] if isinstance(d,dict) else d)), d' "$work/ls.json" "$id" || fail "qmlx cache ls"
"$qmlx" cache verify --cache-config "$work/disk.json" >/dev/null || fail "qmlx cache verify"
echo "ok restart: HIT from disk, same answer, pin kept, qmlx cache ls/verify"

# 5. Another model on the same folder never restores model A's store.
start_server "$work/model-b" "$work/disk.json" "$work/b.log"
read -r cached _ _ < <(chat "$work/r4.json")
[[ $cached == 0 ]] || fail "model B restored model A's state"
stop_server
echo "ok foreign: another model's store is never restored"

# 6. Flipped bytes in every chunk and snapshot of model A: detected, quarantined, counted, and
#    the answer is the cold one.
$py - "$work/store" <<'PY'
import os, sys
for root, _, files in os.walk(sys.argv[1]):
    if "quarantine" in root: continue
    for f in files:
        if f.endswith((".kv", ".snap")):
            p = os.path.join(root, f); b = bytearray(open(p, "rb").read())
            b[len(b) * 2 // 3] ^= 0x5A; open(p, "wb").write(bytes(b))
PY
start_server "$work/model-a" "$work/disk.json" "$work/a3.log"
read -r cached _ text < <(chat "$work/r5.json")
[[ $cached == 0 && $text == "$cold_text" ]] || fail "corrupt store: cached=$cached text=$text"
curl -s "http://127.0.0.1:$metrics/metrics" > "$work/metrics2.txt"
grep -Eq '^qmlx_restore_rejected_total\{reason="checksum"\} [1-9]' "$work/metrics2.txt" ||
  fail "rejections not counted"
grep -Eq '^qmlx_cache_quarantined_total [1-9]' "$work/metrics2.txt" || fail "nothing quarantined"
grep -q 'quarantined' "$work/a3.log" || fail "quarantine not logged"
ls "$work"/store/*/quarantine/* >/dev/null 2>&1 || fail "quarantine folder empty"
# The cold answer was checkpointed again: the next repeat is a HIT.
read -r cached _ text < <(chat "$work/r6.json")
[[ $cached -gt 0 && $text == "$cold_text" ]] || fail "no recovery after quarantine"
stop_server
echo "ok corruption: rejected, quarantined, counted, cold answer, recovered"

# 7. Both tiers off: nothing at all is reused, even with the qMLX flag that turns the disk on.
start_server "$work/model-a" "$work/off.json" "$work/off.log" --disk-kv-restore
chat "$work/r7.json" >/dev/null
read -r cached _ text < <(chat "$work/r8.json")
[[ $cached == 0 && $text == "$cold_text" ]] || fail "cold baseline reused something"
grep -q 'cache: off' "$work/off.log" || fail "cache off not logged"
grep -q 'disk-kv-restore / deltanet_state_aware ignored' "$work/off.log" || fail "flag not explained"
stop_server
echo "ok cold baseline: both tiers off"
