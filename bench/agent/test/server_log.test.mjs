// Log and metrics parsing: request lines, divergence lines (with and without a uid, quoted
// text with escapes), and Prometheus samples.
import test from 'node:test';
import assert from 'node:assert/strict';

import { parseLog, parseRequestLine } from '../lib/server_log.mjs';
import { parsePrometheus, summarizeMetrics } from '../lib/metrics.mjs';

test('request lines: HIT with kind, MISS with reason, prefix before uid', () => {
  const hit = parseRequestLine('2026-01-01T00:00:00Z INFO uid=12 HIT cached=4096 prefill=37 ' +
    'prompt=4133 completion=20 ttft=12.5ms finish=stop kind=canonical_history tier=disk');
  assert.deepEqual([hit.uid, hit.hit, hit.cached, hit.prefill, hit.prompt, hit.ttftMs, hit.kind],
    [12, true, 4096, 37, 4133, 12.5, 'canonical_history']);
  const miss = parseRequestLine('uid=3 MISS cached=0 prefill=900 miss_reason=no_candidate');
  assert.deepEqual([miss.hit, miss.cached, miss.reason], [false, 0, 'no_candidate']);
  assert.equal(parseRequestLine('uid=3 prefill 100/900 tokens'), null);
});

test('divergence lines pair by uid, or with the next request line', () => {
  const text = [
    'uid=1 MISS cached=0 prefill=10 reason=none',
    'divergence pos=57 restored=0 snapshot=ab kind=message_boundary before="id: \\"req_" ' +
      'cached="aa12" incoming="bb34\\n"',
    'uid=2 MISS cached=0 prefill=80',
    'uid=3 HIT cached=70 prefill=12',
    'uid=3 divergence pos=75 restored=70 snapshot=cd kind=interval before="x" cached="y" incoming="z"',
  ].join('\n');
  const [r1, r2, r3] = parseLog(text);
  assert.equal(r1.divergence, null);
  assert.equal(r2.divergence.pos, 57);
  assert.equal(r2.divergence.before, 'id: "req_');
  assert.equal(r2.divergence.incoming, 'bb34\n');
  assert.equal(r3.divergence.pos, 75);
  assert.equal(r3.divergence.kind, 'interval');
});

test('prometheus: labelled samples summed per family', () => {
  const samples = parsePrometheus([
    '# HELP qmlx_disk_cache_bytes Bytes',
    '# TYPE qmlx_disk_cache_bytes gauge',
    'qmlx_disk_cache_bytes 1048576',
    'qmlx_checkpoint_writes_total{kind="interval"} 7',
    'qmlx_checkpoint_writes_total{kind="message_boundary"} 3',
    'qmlx_evictions_total{reason="interval"} 2',
  ].join('\n'));
  const m = summarizeMetrics(samples);
  assert.equal(m.diskCacheBytes, 1048576);
  assert.deepEqual(m.checkpointWrites, { interval: 7, message_boundary: 3 });
  assert.deepEqual(m.evictions, { interval: 2 });
  assert.equal(m.writtenBytes, null);
});
