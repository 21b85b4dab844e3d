// Summary statistics, the checks (each shown to fail on a violating row), and the Markdown
// and SVG renderers on hand-made rows.
import test from 'node:test';
import assert from 'node:assert/strict';

import { percentile, summarize } from '../lib/stats.mjs';
import { checkExercised, checkTimestamp, checkWarmHits } from '../lib/checks.mjs';
import { renderChart } from '../lib/report_svg.mjs';
import { renderMarkdown } from '../lib/report_markdown.mjs';

function row(turn, fields) {
  return { turn, kind: 'tool', epoch: 1, status: 'HIT', cached: 1000 * turn, prefill: 100,
    newTokens: 100, replySpan: 20, promptTokens: 1000 * turn + 100, ttftMs: 10 * turn,
    interrupted: false, divergence: null, marker: null, markerSpan: null, ...fields };
}

const rows = [row(1, { status: 'MISS', cached: 0, prefill: 1100, newTokens: 1100 }),
  row(2), row(3), row(4)];

test('percentiles interpolate between ranks', () => {
  assert.equal(percentile([4, 1, 3, 2], 50), 2.5);
  assert.equal(percentile([1, 2, 3, 4, 5], 95), 4.8);
  assert.equal(percentile([null], 50), null);
});

test('summary: hit rate after the first turn, prefill over new, deepest turn', () => {
  const s = summarize([...rows.slice(0, 3), row(4, { status: 'MISS', cached: 0, prefill: 4100 })]);
  assert.equal(s.hitRate, 2 / 3);
  assert.equal(s.prefillOverNew, (100 + 100 + 4100) / 300);
  assert.equal(s.deepestTurn, 4);
  assert.equal(s.deepestTtftMs, 40);
});

test('warm-hits passes within tolerance and allowance, fails on a miss or an overrun', () => {
  const opts = { tolerance: 0.05, rerenderAllowance: 'reply' };
  assert.ok(checkWarmHits(rows, opts).ok);
  assert.ok(checkWarmHits([...rows, row(5, { prefill: 127 })], opts).ok);  // 105 + 22
  const over = checkWarmHits([...rows, row(5, { prefill: 128 })], opts);
  assert.ok(!over.ok);
  assert.match(over.details[0], /turn 5: prefill 128/);
  assert.ok(checkWarmHits([...rows, row(5, { prefill: 128 })], { ...opts, rerenderAllowance: '30' }).ok);
  assert.ok(!checkWarmHits([...rows, row(5, { status: 'MISS' })], opts).ok);
  assert.ok(!checkWarmHits([...rows, { turn: 5, error: 'socket hang up' }], opts).ok);
});

test('timestamp check wants the divergence inside the id and showing it', () => {
  const d = (pos, incoming) => ({ pos, before: 'id: req_', incoming, line: 'divergence' });
  const t = (fields) => row(2, { status: 'MISS', cached: 0, marker: 'req_abc123',
    markerSpan: { start: 40, end: 44 }, ...fields });
  assert.ok(checkTimestamp([rows[0], t({ divergence: d(41, 'abc123 rest') })]).ok);
  assert.ok(!checkTimestamp([rows[0], t({ divergence: d(60, 'abc123 rest') })]).ok);
  assert.ok(!checkTimestamp([rows[0], t({ divergence: d(41, 'zzz') })]).ok);
  assert.ok(!checkTimestamp([rows[0], t({ divergence: null })]).ok);
  assert.ok(!checkTimestamp([rows[0], t({ cached: 50, divergence: d(41, 'abc123') })]).ok);
});

test('scenario-exercised needs the event', () => {
  assert.ok(!checkExercised('interrupt', rows).ok);
  assert.ok(checkExercised('interrupt', [...rows, row(5, { interrupted: true })]).ok);
  assert.ok(!checkExercised('restart', rows).ok);
  assert.ok(checkExercised('restart', [...rows, row(5, { epoch: 2 })]).ok);
});

test('chart: one TTFT bar and two token bars per turn per run, shared scales', () => {
  const off = rows.map((r) => ({ ...r, status: 'MISS', cached: 0, prefill: r.promptTokens,
    ttftMs: r.ttftMs * 5 }));
  const svg = renderChart('clean', [{ label: 'cache on', rows }, { label: 'cache off', rows: off }]);
  assert.match(svg, /^<svg [^>]*width="1080"/);
  assert.ok(svg.trimEnd().endsWith('</svg>'));
  const bars = svg.match(/<rect [^>]*><title>/g);
  assert.equal(bars.length, 2 * rows.length * 3);
  // The tallest TTFT bar (off, turn 4: 200 ms) fills the panel; on's turn 4 (40 ms) a fifth.
  const heights = [...svg.matchAll(/height="([\d.]+)" fill="[^"]*"><title>turn 4: TTFT/g)].map((m) => +m[1]);
  assert.deepEqual(heights, [40, 200]);
});

test('markdown: summary, checks and a row per turn', () => {
  const run = { key: 'on', label: 'cache on', rows, summary: summarize(rows), disk: {} };
  const md = renderMarkdown({ scenario: 'clean', command: 'replay.mjs', sessionDescription: 's',
    model: 'm', startedAt: 't', chartFile: 'clean.svg', runs: [run], ttftRatioDeepest: 3,
    checks: [{ run: 'cache on', name: 'warm-hits', ok: false, details: ['turn 2: MISS'] }] });
  assert.match(md, /\*\*FAIL\*\* cache on: warm-hits/);
  assert.match(md, /3\.00x/);
  assert.equal(md.split('\n').filter((l) => /^\| [0-9]+ \| tool/.test(l)).length, 4);
});
