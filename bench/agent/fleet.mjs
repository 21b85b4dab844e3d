#!/usr/bin/env node
// Fleet replay (issue 15, item 8): several agent sessions at once over N `qmlx serve`
// processes with separate local disks, each turn routed to a server by a policy, the servers
// sharing (or not) one Redis Cluster cache tier. Per policy it reports what users feel and what
// the cache did: hit rate after each session's first turn, prefill over new tokens, TTFT p50
// and p95, which tier served the restores, and the bytes the fleet holds in Redis against the
// sum of its local disks.
//
// Policies (the same sessions, the same routing draws):
//   random      each turn to a server drawn at random; shared tier on
//   affinity    a session always to one server (what deploy/nginx/qmlx-fleet.conf does with
//               the agents' session headers); shared tier on
//   shared-off  random routing, no shared tier: what a fleet without it pays
//
// Sessions come from the replay's generator (bench/agent/lib/generator.mjs), deterministic
// from --seed; replies are whatever the servers answer (temperature 0: the same on every
// server), appended as received. New tokens of a turn = its prompt minus the previous turn's
// prompt (what the client added since, the previous reply included).
//
// usage: node bench/agent/fleet.mjs --qmlx build/bin/qmlx --model DIR [options] (--help)
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';

import { SessionGenerator } from './lib/generator.mjs';
import { Prng } from './lib/prng.mjs';
import { parseLog } from './lib/server_log.mjs';
import { ManagedServer, dirBytes, writeCacheConfig } from './lib/server_process.mjs';
import { percentile } from './lib/stats.mjs';
import { assistantMessage, makeClient, streamTurn } from './lib/stream_turn.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const clusterScript = path.resolve(here, '../../tests/e2e/shared/redis_cluster.sh');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const SPEC = {
  qmlx: ['', 'qmlx binary'],
  model: ['', 'model folder for `qmlx serve --model`'],
  servers: ['3', 'qmlx serve processes'],
  sessions: ['6', 'concurrent agent sessions'],
  policies: ['random,affinity,shared-off', 'comma list of random, affinity, shared-off'],
  seed: ['1', 'sessions and routing draws'],
  'start-tokens': ['1500', 'first prompt of a session, in tokens'],
  'target-tokens': ['6000', 'a session ends once its prompt reaches this'],
  turns: ['6', 'about how many turns a session takes to its target'],
  'max-tokens': ['32', 'max_tokens of each reply'],
  'think-time-ms': ['1000', 'pause before each turn (the agent running its tools)'],
  'chars-per-token': ['1.0', 'generator size conversion (the test models\' byte-level tokenizer: ~1)'],
  'tool-count': ['4', 'tool schemas sent'],
  threads: ['1', '`qmlx serve --threads` of each server'],
  'chunk-tokens': ['256', 'cache chunk_tokens'],
  out: ['fleet-out', 'report folder: fleet.md, fleet.json, server logs'],
  help: [false, 'this text'],
};

function parseOptions(argv) {
  const options = {};
  for (const [name, [def]] of Object.entries(SPEC)) {
    options[name] = { type: typeof def === 'boolean' ? 'boolean' : 'string' };
  }
  const { values } = parseArgs({ args: argv, options, strict: true });
  const o = {};
  for (const [name, [def]] of Object.entries(SPEC)) {
    const v = values[name] ?? def;
    const key = name.replace(/-([a-z])/g, (_, c) => c.toUpperCase());
    o[key] = typeof def === 'string' && /^[0-9.]+$/.test(def) ? Number(v) : v;
  }
  if (o.help) return o;
  if (!o.qmlx || !o.model) throw new Error('--qmlx and --model are required');
  o.policies = o.policies.split(',');
  for (const p of o.policies) {
    if (!['random', 'affinity', 'shared-off'].includes(p)) throw new Error(`unknown policy ${p}`);
  }
  return o;
}

function log(message) {
  process.stderr.write(`[fleet] ${message}\n`);
}

// The server a policy sends a session's turn to.
function router(policy, servers) {
  return (session, draws) => {
    if (policy === 'affinity') return session % servers;
    return draws.int(0, servers - 1);
  };
}

async function runSession(o, session, pick, servers) {
  const source = new SessionGenerator({ seed: o.seed * 1000 + session, startTokens: o.startTokens,
    targetTokens: o.targetTokens, turns: o.turns, charsPerToken: o.charsPerToken,
    maxTokens: o.maxTokens, thinkTimeMs: o.thinkTimeMs, toolCount: o.toolCount });
  const draws = new Prng(o.seed * 7919 + session);  // the same draws under every policy
  const clients = servers.map((s) => makeClient(s.url, 'sk-fleet', 600_000));
  const turns = [];
  let history = [];
  let system;
  let previousPrompt = 0;
  let step = source.first();
  while (step) {
    if (step.keep !== undefined && step.keep !== null) history = history.slice(0, step.keep);
    history.push(...step.append);
    if (step.system !== undefined) system = step.system;
    if (step.thinkTimeMs > 0) await sleep(step.thinkTimeMs);
    const server = pick(session, draws);
    const messages = [{ role: 'system', content: system }, ...history];
    const body = { model: 'qmlx', messages, stream: true, stream_options: { include_usage: true },
      max_tokens: o.maxTokens, temperature: 0, tools: source.tools };
    if (!body.tools?.length) delete body.tools;
    let reply;
    try {
      reply = await streamTurn(clients[server], body);
    } catch (e) {
      turns.push({ session, turn: turns.length + 1, server, error: String(e.message ?? e) });
      break;
    }
    history.push(assistantMessage(reply));
    const prompt = reply.usage?.prompt_tokens ?? 0;
    turns.push({ session, turn: turns.length + 1, server, uid: reply.timings?.uid,
      ttftMs: reply.clientTtftMs, prompt,
      newTokens: prompt - previousPrompt });
    previousPrompt = prompt;
    step = source.next({ reply, history, promptTokens: prompt });
  }
  return turns;
}

// Pairs each turn with its server's log line (by uid): HIT/MISS, cached, prefill, tier.
function attachLogs(turns, servers) {
  const records = servers.map((s) => parseLog(fs.readFileSync(s.logPath, 'utf8')));
  for (const t of turns) {
    if (t.error) continue;
    const r = records[t.server].find((x) => x.uid === t.uid);
    if (!r) continue;
    t.status = r.hit ? 'HIT' : 'MISS';
    t.cached = r.cached;
    t.prefill = r.prefill;
    t.tier = r.line.match(/\btier=(\S+)/)?.[1] ?? (r.hit ? '?' : 'none');
  }
}

function summarize(turns) {
  const ok = turns.filter((t) => !t.error && t.status);
  const later = ok.filter((t) => t.turn > 1);
  const sum = (rows, k) => rows.reduce((a, t) => a + (t[k] ?? 0), 0);
  const tiers = {};
  for (const t of later) tiers[t.tier] = (tiers[t.tier] ?? 0) + 1;
  return {
    turns: ok.length, errors: turns.length - ok.length, laterTurns: later.length,
    hitRate: later.length ? later.filter((t) => t.status === 'HIT').length / later.length : null,
    prefillOverNew: sum(later, 'newTokens') ? sum(later, 'prefill') / sum(later, 'newTokens') : null,
    // Of the prompt tokens of turns > 1, the share restored instead of prefilled.
    restoredShare: sum(later, 'prompt') ? sum(later, 'cached') / sum(later, 'prompt') : null,
    prefillTokens: sum(ok, 'prefill'), promptTokens: sum(ok, 'prompt'),
    ttftP50Ms: percentile(later.map((t) => t.ttftMs), 50),
    ttftP95Ms: percentile(later.map((t) => t.ttftMs), 95),
    firstTurnTtftP50Ms: percentile(ok.filter((t) => t.turn === 1).map((t) => t.ttftMs), 50),
    tiers,
  };
}

function startCluster(dir) {
  return execFileSync('bash', [clusterScript, 'start', dir, '3'], { encoding: 'utf8' }).trim();
}

// Bytes of blobs the fleet holds in the shared tier (`qmlx cache stats`: a SCAN of every master).
function sharedBytes(o, configPath) {
  const out = execFileSync(o.qmlx, ['cache', 'stats', '--json', '--cache-config', configPath],
    { encoding: 'utf8' });
  const stats = JSON.parse(out);
  return (stats.shared?.stores ?? []).reduce((a, s) => a + (s.bytes ?? 0), 0);
}

async function runPolicy(o, policy, nodes) {
  const dir = path.resolve(o.out, policy);
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  if (nodes) {
    for (const node of nodes.split(',')) {
      execFileSync('redis-cli', ['-p', node.split(':')[1], 'flushall'], { stdio: 'ignore' });
    }
  }
  const servers = [];
  const configs = [];
  for (let i = 0; i < o.servers; i++) {
    const configPath = path.join(dir, `server${i}.json`);
    const cache = { disk_cache_dir: path.join(dir, `disk${i}`), fsync: false,
      chunk_tokens: o.chunkTokens };
    if (policy !== 'shared-off') cache.shared = { nodes: nodes.split(','), timeout_ms: 1000 };
    writeCacheConfig(configPath, {}, cache);
    configs.push(configPath);
    servers.push(new ManagedServer({ bin: o.qmlx, model: o.model, configPath, logDir: dir,
      name: `server${i}`, diskKvRestore: true, extraArgs: ['--threads', String(o.threads)] }));
  }
  await Promise.all(servers.map((s) => s.start()));
  const pick = router(policy, o.servers);
  const started = performance.now();
  const perSession = await Promise.all(
    Array.from({ length: o.sessions }, (_, s) => runSession(o, s, pick, servers)));
  const wallS = (performance.now() - started) / 1000;
  await Promise.all(servers.map((s) => s.stop()));  // flushes every queued checkpoint
  const turns = perSession.flat();
  attachLogs(turns, servers);
  const summary = summarize(turns);
  summary.wallSeconds = wallS;
  summary.localDiskBytes = configs.reduce((a, _, i) => a + dirBytes(path.join(dir, `disk${i}`)), 0);
  summary.sharedBytes = policy === 'shared-off' ? 0 : sharedBytes(o, configs[0]);
  return { policy, summary, turns };
}

const fmt = (v, d = 0) => (v === null || v === undefined ? '-' : Number(v).toFixed(d));
const mb = (b) => (b / 1e6).toFixed(1);

function report(o, results, nodes) {
  const lines = [
    `# Fleet replay: ${o.sessions} sessions over ${o.servers} servers`, '',
    `\`node bench/agent/fleet.mjs ${process.argv.slice(2).join(' ')}\``, '',
    `Sessions of ${o.startTokens} to ${o.targetTokens} tokens in about ${o.turns} turns, ` +
      `${o.thinkTimeMs} ms think time, ${o.maxTokens}-token replies; ` +
      `Redis Cluster ${nodes ?? '(none)'}.`, '',
    '| policy | turns (errors) | hit rate after turn 1 | restored / prompt | where turns > 1 resumed | prefill / new | TTFT p50 / p95 ms (turns > 1) | turn-1 TTFT p50 ms | bytes in Redis | sum of local disks | wall s |',
    '|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const { policy, summary: s } of results) {
    const tiers = Object.entries(s.tiers).map(([k, v]) => `${k} ${v}`).join(', ');
    lines.push(`| ${policy} | ${s.turns} (${s.errors}) | ${fmt(s.hitRate * 100)}% | ${fmt(s.restoredShare * 100)}% | ${tiers} | ` +
      `${fmt(s.prefillOverNew, 2)} | ${fmt(s.ttftP50Ms)} / ${fmt(s.ttftP95Ms)} | ` +
      `${fmt(s.firstTurnTtftP50Ms)} | ${mb(s.sharedBytes)} MB | ${mb(s.localDiskBytes)} MB | ` +
      `${fmt(s.wallSeconds)} |`);
  }
  return lines.join('\n') + '\n';
}

async function main() {
  const o = parseOptions(process.argv.slice(2));
  if (o.help) {
    for (const [name, [def, help]] of Object.entries(SPEC)) {
      console.log(`  --${name.padEnd(16)} ${help}${def === '' || def === false ? '' : ` (default ${def})`}`);
    }
    return;
  }
  fs.mkdirSync(o.out, { recursive: true });
  const needsCluster = o.policies.some((p) => p !== 'shared-off');
  const clusterDir = path.resolve(o.out, 'redis');
  const nodes = needsCluster ? startCluster(clusterDir) : null;
  const results = [];
  try {
    for (const policy of o.policies) {
      log(`policy ${policy}`);
      results.push(await runPolicy(o, policy, nodes));
      log(JSON.stringify(results.at(-1).summary));
    }
  } finally {
    if (needsCluster) execFileSync('bash', [clusterScript, 'stop', clusterDir], { stdio: 'ignore' });
  }
  const text = report(o, results, nodes);
  fs.writeFileSync(path.join(o.out, 'fleet.md'), text);
  fs.writeFileSync(path.join(o.out, 'fleet.json'), JSON.stringify(results, null, 2));
  process.stdout.write(text);
  if (results.some((r) => r.summary.errors > 0)) process.exitCode = 1;
}

main().catch((e) => {
  console.error(e.stack ?? String(e));
  process.exit(2);
});
