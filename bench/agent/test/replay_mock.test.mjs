// The whole instrument end to end against mock_qmlx.mjs (a stand-in for `qmlx serve` with an
// idealized cache): every scenario passes its checks on the ideal cache, a broken cache
// (--mock-bug) makes --assert fail, and a recorded session replays from its trace.
import test from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const replay = path.join(here, '..', 'replay.mjs');
const mock = path.join(here, 'mock_qmlx.mjs');
const small = ['--start-tokens', '1200', '--target-tokens', '3000', '--turns', '5',
  '--max-tokens', '30', '--think-time-ms', '0', '--interrupt-after', '4',
  '--regenerate-every', '2', '--flood-max-tokens', '40', '--assert'];

function run(args) {
  const out = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-replay-'));
  const r = spawnSync(process.execPath, [replay, '--qmlx', mock, '--model', 'none',
    '--out', out, ...small, ...args], { encoding: 'utf8', timeout: 120_000 });
  return { ...r, out, report: (name) => JSON.parse(fs.readFileSync(path.join(out, `${name}.json`))) };
}

test('every scenario passes on an ideal cache, and each was exercised', () => {
  const r = run(['--scenario', 'all', '--cache', 'on']);
  assert.equal(r.status, 0, r.stderr);
  for (const name of ['clean', 'timestamp', 'interrupt', 'interval-flood', 'restart', 'regenerate']) {
    const report = r.report(name);
    assert.ok(report.checks.length >= 2, name);
    assert.ok(report.checks.every((c) => c.ok), name);
    assert.ok(fs.statSync(path.join(r.out, `${name}.svg`)).size > 1000);
  }
  const restart = r.report('restart').runs[0].rows;
  assert.deepEqual(restart.map((x) => x.epoch), restart.map((_, i) => i + 1));
  const ts = r.report('timestamp').runs[0].rows.slice(1);
  assert.ok(ts.length > 0 && ts.every((x) => x.status === 'MISS' &&
    (x.divergence.before + x.divergence.incoming).includes(x.marker)));
  assert.match(fs.readFileSync(path.join(r.out, 'summary.md'), 'utf8'), /PASS warm-hits/);
});

test('a cache that never hits, or logs the split in the wrong place, fails --assert', () => {
  const none = run(['--scenario', 'clean', '--cache', 'on', '--serve-arg=--mock-bug=no-cache']);
  assert.equal(none.status, 1);
  assert.match(none.stderr, /FAIL clean \/ cache on: warm-hits/);
  const late = run(['--scenario', 'timestamp', '--cache', 'on',
    '--serve-arg=--mock-bug=late-divergence']);
  assert.equal(late.status, 1);
  assert.match(late.stderr, /outside the id's tokens/);
  const noCanonical = run(['--scenario', 'clean', '--cache', 'on', '--rerender-allowance', '4',
    '--serve-arg=--mock-bug=no-canonical']);
  assert.equal(noCanonical.status, 1);
});

test('cache on and off side by side; a recorded session replays from its trace', () => {
  const trace = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'agent-trace-')), 't.jsonl');
  const both = run(['--scenario', 'clean', '--record', trace]);
  assert.equal(both.status, 0, both.stderr);
  const [on, off] = both.report('clean').runs;
  assert.equal(off.summary.hitRate, 0);
  assert.equal(on.summary.hitRate, 1);
  assert.ok(both.report('clean').ttftRatioDeepest > 1);
  const lines = fs.readFileSync(trace, 'utf8').trim().split('\n');
  assert.equal(lines.length, on.rows.length + off.rows.length);
  const firstRunOnly = path.join(path.dirname(trace), 'on.jsonl');
  fs.writeFileSync(firstRunOnly, lines.slice(0, on.rows.length).join('\n') + '\n');
  const replayed = run(['--scenario', 'clean', '--cache', 'on', '--trace', firstRunOnly]);
  assert.equal(replayed.status, 0, replayed.stderr);
  const rows = replayed.report('clean').runs[0].rows;
  assert.deepEqual(rows.map((x) => x.promptTokens), on.rows.map((x) => x.promptTokens));
});

test('model tool calls are assembled from deltas, kept verbatim and answered by id', () => {
  const r = run(['--scenario', 'clean', '--cache', 'on', '--serve-arg=--mock-tools']);
  assert.equal(r.status, 0, r.stderr);
  const rows = r.report('clean').runs[0].rows;
  assert.ok(rows.length >= 3 && rows.every((x) => x.toolCalls === 1));
  assert.ok(rows.slice(1).every((x) => x.status === 'HIT'));
});
