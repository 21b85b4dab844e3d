#!/usr/bin/env node
// Agent-session replay: replays multi-turn coding-agent sessions against qmlx over HTTP, as an
// agent would, and reports per turn what the cache did (HIT/MISS, cached and prefilled tokens,
// new tokens, restore time, TTFT, snapshot kind, divergence lines), with the cache on and off
// side by side, as Markdown, JSON and an SVG chart. With --assert it exits 1 when a scenario's
// promise (issue 6) is broken. See README.md in this folder.
import fs from 'node:fs';
import path from 'node:path';

import { parseOptions, usage } from './lib/options.mjs';
import { SCENARIO_NAMES, scenarioPlan } from './lib/scenarios.mjs';
import { SessionGenerator } from './lib/generator.mjs';
import { readTrace, TraceSource } from './lib/trace.mjs';
import { ManagedServer, dirBytes, hasServe, writeCacheConfig } from './lib/server_process.mjs';
import { ServerApi } from './lib/server_api.mjs';
import { runSession, accountSession } from './lib/session_runner.mjs';
import { turnRow } from './lib/turn_rows.mjs';
import { summarize } from './lib/stats.mjs';
import { scrapeMetrics } from './lib/metrics.mjs';
import { checkExercised, checkSameHitRate, checkTimestamp, checkWarmHits } from './lib/checks.mjs';
import { renderMarkdown } from './lib/report_markdown.mjs';
import { renderChart } from './lib/report_svg.mjs';
import * as corpus from './lib/corpus.mjs';
import { Prng } from './lib/prng.mjs';

function log(message) {
  process.stderr.write(`[agent-replay] ${message}\n`);
}

// Characters per token of the server's tokenizer on generator-like text, so that token
// targets mean tokens.
async function measureCharsPerToken(api) {
  const rng = new Prng(12345);
  const sample = corpus.sourceFile(rng, 6000) + corpus.testLog(rng, 3000) + corpus.prose(rng, 3000);
  const ids = await api.tokenize(sample);
  return ids?.length ? sample.length / ids.length : null;
}

function makeSource(o, plan) {
  if (o.trace) return new TraceSource(readTrace(o.trace), { mode: o.traceMode });
  return new SessionGenerator({ seed: o.seed, startTokens: o.startTokens,
    targetTokens: o.targetTokens, turns: o.turns, maxTurns: o.maxTurns,
    charsPerToken: o.charsPerToken, maxTokens: plan.maxTokens, thinkTimeMs: o.thinkTimeMs,
    toolCount: o.toolCount,
    ...plan.generator });
}

// A server started by someone else: no restarts, no configuration of our own.
function fixedTarget(o) {
  return { url: o.url.replace(/\/$/, ''), metricsUrl: o.metricsUrl || null,
    logPath: o.serverLog || null, epoch: 1,
    restart: () => { throw new Error('the restart scenario needs --qmlx (a server it can restart)'); },
    writeBytes: () => null, stop: async () => {} };
}

async function managedTarget(o, plan, run) {
  const name = `${plan.name}-${run.key}`;
  const cacheDir = path.resolve(o.out, 'cache', name);
  fs.rmSync(cacheDir, { recursive: true, force: true });
  fs.mkdirSync(cacheDir, { recursive: true });
  const base = o.cacheConfig ? JSON.parse(fs.readFileSync(o.cacheConfig, 'utf8')) : {};
  const configPath = path.resolve(o.out, 'logs', `${name}.cache_config.json`);
  writeCacheConfig(configPath, base, { ...run.cache, disk_cache_dir: cacheDir });
  const server = new ManagedServer({ bin: o.qmlx, model: o.model, configPath, name,
    logDir: path.resolve(o.out, 'logs'), diskKvRestore: !o.noDiskKvRestore,
    extraArgs: o.serveArg, startTimeoutMs: o.startTimeoutMs });
  await server.start();
  server.cacheDir = cacheDir;
  return server;
}

async function runOne(o, plan, run) {
  const target = o.qmlx ? await managedTarget(o, plan, run) : fixedTarget(o);
  try {
    const api = new ServerApi(target.url, o.apiKey);
    if (!o.charsPerToken) {
      o.charsPerToken = (await measureCharsPerToken(api)) ?? 3.5;
      log(`chars per token: ${o.charsPerToken.toFixed(2)}`);
    }
    o.requestModel ||= o.modelId || (await api.modelId()) || 'qmlx';
    log(`${plan.name} / ${run.label}: ${target.url}`);
    const turns = await runSession(makeSource(o, plan), target, {
      apiKey: o.apiKey, timeoutMs: o.timeoutMs, model: o.requestModel, maxTokens: plan.maxTokens,
      temperature: o.temperature, record: o.record || null, logWaitMs: o.logWaitMs,
      restartEvery: plan.restartEvery,
      templateKwargs: o.noThinking ? { enable_thinking: false } : undefined });
    await accountSession(turns, target, o.apiKey);
    const metrics = await scrapeMetrics(target.metricsUrl);
    const disk = { writtenBytes: metrics?.writtenBytes ?? target.writeBytes(),
      heldBytes: metrics?.diskCacheBytes ?? (target.cacheDir ? dirBytes(target.cacheDir) : null) };
    const rows = turns.map(turnRow);
    for (const r of rows) {
      log(`  turn ${r.turn}: ${r.error ? `ERROR ${r.error}` : `${r.status} cached=${r.cached} ` +
        `prefill=${r.prefill} new=${r.newTokens} ttft=${r.ttftMs?.toFixed?.(1)}ms`}`);
    }
    return { key: run.key, label: run.label, checked: run.checked ?? false,
      baseline: run.baseline ?? false, cache: run.cache, rows, summary: summarize(rows),
      metrics, disk };
  } finally {
    await target.stop();
  }
}

function runChecks(o, plan, runs) {
  const checks = [];
  const baseline = runs.find((r) => r.baseline);
  for (const run of runs.filter((r) => r.checked)) {
    checks.push({ run: run.label, ...checkExercised(plan.name, run.rows) });
    for (const name of plan.checks) {
      let check;
      if (name === 'warm-hits') {
        check = checkWarmHits(run.rows, { tolerance: o.tolerance,
          rerenderAllowance: o.rerenderAllowance });
      } else if (name === 'timestamp-divergence') {
        check = checkTimestamp(run.rows);
      } else if (name === 'same-hit-rate' && baseline) {
        check = checkSameHitRate(run.rows, baseline.rows, summarize);
      }
      if (check) checks.push({ run: run.label, ...check });
    }
  }
  return checks;
}

function ttftRatio(runs) {
  const on = runs.find((r) => r.key === 'on');
  const off = runs.find((r) => r.key === 'off');
  const a = on?.summary.deepestTtftMs;
  const b = off?.summary.deepestTtftMs;
  return a > 0 && b > 0 ? b / a : null;
}

function describeSession(o, plan) {
  if (o.trace) return `trace ${o.trace} (${o.traceMode})`;
  return `generated, seed ${o.seed}, ${o.startTokens} → ${o.targetTokens} tokens in about ` +
    `${o.turns} turns, max_tokens ${plan.maxTokens}, think time ${o.thinkTimeMs} ms` +
    (plan.restartEvery ? `, restart every ${plan.restartEvery} turn(s)` : '') +
    (Object.keys(plan.generator).length ? `, ${JSON.stringify(plan.generator)}` : '');
}

async function runScenario(o, name) {
  const plan = scenarioPlan(name, o);
  const runs = [];
  for (const run of plan.runs) runs.push(await runOne(o, plan, run));
  const chartFile = `${name}.svg`;
  const report = { scenario: name, command: process.argv.slice(1).join(' '),
    sessionDescription: describeSession(o, plan), model: o.requestModel,
    startedAt: new Date().toISOString(), options: o, chartFile, runs,
    checks: runChecks(o, plan, runs), ttftRatioDeepest: ttftRatio(runs) };
  fs.writeFileSync(path.join(o.out, `${name}.json`), JSON.stringify(report, null, 2) + '\n');
  fs.writeFileSync(path.join(o.out, `${name}.md`), renderMarkdown(report));
  fs.writeFileSync(path.join(o.out, chartFile),
    renderChart(`${name}: TTFT and cached vs prefilled tokens per turn`, runs));
  for (const c of report.checks) {
    log(`${c.ok ? 'PASS' : 'FAIL'} ${name} / ${c.run}: ${c.name}`);
    for (const d of c.details.slice(0, 10)) log(`    ${d}`);
  }
  return report;
}

function summaryMarkdown(reports) {
  const lines = ['# Agent replay summary', '', '| scenario | run | hit rate | prefill / new | ' +
    'TTFT median ms | TTFT p95 ms | off/on TTFT at deepest | checks |', '|---|---|---|---|---|---|---|---|'];
  for (const r of reports) {
    for (const run of r.runs) {
      const s = run.summary;
      const checks = r.checks.filter((c) => c.run === run.label);
      lines.push(`| [${r.scenario}](${r.scenario}.md) | ${run.label} | ` +
        `${s.hitRate === null ? '–' : (s.hitRate * 100).toFixed(1) + '%'} | ` +
        `${s.prefillOverNew?.toFixed(3) ?? '–'} | ${s.ttftMedianMs?.toFixed(1) ?? '–'} | ` +
        `${s.ttftP95Ms?.toFixed(1) ?? '–'} | ${run.key === 'on' && r.ttftRatioDeepest
          ? r.ttftRatioDeepest.toFixed(2) + 'x' : ''} | ` +
        `${checks.map((c) => `${c.ok ? 'PASS' : 'FAIL'} ${c.name}`).join(', ')} |`);
    }
  }
  return lines.join('\n') + '\n';
}

async function main() {
  let o;
  try {
    o = parseOptions(process.argv.slice(2));
  } catch (e) {
    process.stderr.write(`${e.message}\n\n${usage()}\n`);
    return 2;
  }
  if (o.help) {
    process.stdout.write(usage() + '\n');
    return 0;
  }
  o.charsPerToken = o.charsPerToken ? Number(o.charsPerToken) : null;
  const names = o.scenario === 'all' ? SCENARIO_NAMES : o.scenario.split(',').map((n) => n.trim());
  const unknown = names.filter((n) => !SCENARIO_NAMES.includes(n));
  if (unknown.length) {
    process.stderr.write(`unknown scenario ${unknown.join(', ')} (one of ${SCENARIO_NAMES.join(', ')}, all)\n`);
    return 2;
  }
  if (o.qmlx && !(await hasServe(o.qmlx))) {
    process.stderr.write(`${o.qmlx} has no working \`serve\` command\n`);
    return 2;
  }
  fs.mkdirSync(path.join(o.out, 'logs'), { recursive: true });
  if (o.record) fs.rmSync(o.record, { force: true });
  const reports = [];
  for (const name of names) reports.push(await runScenario(o, name));
  fs.writeFileSync(path.join(o.out, 'summary.md'), summaryMarkdown(reports));
  log(`report: ${path.resolve(o.out, 'summary.md')}`);
  const failed = reports.flatMap((r) => r.checks).filter((c) => !c.ok);
  return o.assert && failed.length > 0 ? 1 : 0;
}

main().then((code) => process.exit(code), (e) => {
  process.stderr.write(`[agent-replay] error: ${e.stack ?? e}\n`);
  process.exit(2);
});
