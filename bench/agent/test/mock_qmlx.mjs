#!/usr/bin/env node
// A stand-in for `qmlx serve`, used only to test the replay instrument itself: the same
// command line, routes, SSE shape, log lines and metrics, with a toy word tokenizer, a ChatML
// renderer and an idealized prefix cache (snapshots at the message boundary, the user start,
// the generation end, the interrupted point and the canonical history, persisted to
// disk_cache_dir for restarts). --mock-bug FLAG breaks it on purpose so tests can show the
// checks catch it: `no-cache` (every request misses), `no-canonical` (the next turn restores
// only the previous prompt's boundary and prefills the reply again), `late-divergence`
// (divergence lines point past the split). --mock-tools makes every reply a streamed tool
// call, as the scripted fixture model's are.
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { parseArgs } from 'node:util';

const args = process.argv.slice(2);
if (args[0] !== 'serve') {
  process.stderr.write(`mock qmlx: unknown command '${args[0]}'\n`);
  process.exit(2);
}
if (args.includes('--help')) {
  process.stdout.write('mock qmlx serve\n');
  process.exit(0);
}
const { values: opt } = parseArgs({ args: args.slice(1), strict: false, options: {
  model: { type: 'string' }, port: { type: 'string' }, 'metrics-port': { type: 'string' },
  host: { type: 'string' }, 'cache-config': { type: 'string' },
  'disk-kv-restore': { type: 'boolean' }, 'mock-bug': { type: 'string' },
  'mock-tools': { type: 'boolean' } } });
const bug = opt['mock-bug'] ?? '';
const config = opt['cache-config']
  ? JSON.parse(fs.readFileSync(opt['cache-config'], 'utf8')).cache ?? {} : {};
const cacheOn = config.memory_prefix_cache !== false || config.disk_kv_cache !== false;
const store = config.disk_cache_dir ? path.join(config.disk_cache_dir, 'mock-snapshots.json') : null;

// Toy tokenizer: special tokens, words, single non-space characters, whitespace runs.
const PIECE = /<\|[a-z_]+\|>|<\/?think>|<\/?tool_response>|\w+|\s+|[^\w\s]/g;
const vocab = new Map();
const pieces = [];
function encode(text) {
  return (text.match(PIECE) ?? []).map((p) => {
    if (!vocab.has(p)) {
      vocab.set(p, pieces.length);
      pieces.push(p);
    }
    return vocab.get(p);
  });
}
const decode = (ids) => ids.map((i) => pieces[i] ?? '').join('');

function renderMessage(m) {
  if (m.role === 'tool') return `<|im_start|>user\n<tool_response>\n${m.content}\n</tool_response><|im_end|>\n`;
  let body = typeof m.content === 'string' ? m.content : JSON.stringify(m.content ?? '');
  if (m.role === 'assistant' && m.reasoning_content) body = `<think>\n${m.reasoning_content}\n</think>\n\n${body}`;
  for (const call of m.tool_calls ?? []) body += `<tool_call>${JSON.stringify(call.function)}</tool_call>`;
  return `<|im_start|>${m.role}\n${body}<|im_end|>\n`;
}

function render(messages, tools, addGenerationPrompt) {
  let text = '';
  messages.forEach((m, i) => {
    text += renderMessage(m);
    if (i === 0 && tools?.length) text += `<|im_start|>system\n# Tools\n${JSON.stringify(tools)}<|im_end|>\n`;
  });
  return addGenerationPrompt ? text + '<|im_start|>assistant\n' : text;
}

let snapshots = [];  // {kind, ids}
if (store && opt['disk-kv-restore'] && fs.existsSync(store)) {
  snapshots = JSON.parse(fs.readFileSync(store, 'utf8')).map((s) => ({ kind: s.kind, ids: encode(s.text) }));
}
function save(kind, ids) {
  if (!cacheOn || bug === 'no-cache') return;
  snapshots.push({ kind, ids });
  if (store && config.disk_kv_cache !== false) {
    fs.writeFileSync(store, JSON.stringify(snapshots.map((s) => ({ kind: s.kind, text: decode(s.ids) }))));
  }
}

const lcp = (a, b) => {
  let n = 0;
  while (n < a.length && n < b.length && a[n] === b[n]) n++;
  return n;
};

function lookup(ids) {
  let best = { cached: 0, kind: null };
  let shared = { n: 0, snap: null };
  for (const s of snapshots) {
    const n = lcp(ids, s.ids);
    if (n === s.ids.length && n > best.cached && n <= ids.length) best = { cached: Math.min(n, ids.length - 1), kind: s.kind };
    if (n > shared.n) shared = { n, snap: s };
  }
  let divergence = null;
  if (shared.snap && shared.n - best.cached >= 8) {
    const pos = bug === 'late-divergence' ? shared.n + 5 : shared.n;
    const q = (x) => JSON.stringify(decode(x));
    divergence = `divergence pos=${pos} restored=${best.cached} snapshot=abc kind=${shared.snap.kind} ` +
      `before=${q(ids.slice(Math.max(0, pos - 40), pos))} cached=${q(shared.snap.ids.slice(pos, pos + 40))} ` +
      `incoming=${q(ids.slice(pos, pos + 40))}`;
  }
  return { ...best, divergence };
}

let uid = 0;
const log = (line) => process.stderr.write(`${new Date().toISOString()} I ${line}\n`);

function reply(ids) {
  const h = ids.reduce((a, b) => (a * 31 + b) >>> 0, 7);
  const words = ['check', 'the', 'parser', 'and', 'writer', 'path', 'first', 'then', 'run', 'tests'];
  const content = Array.from({ length: 40 }, (_, i) => words[(h + i * 7) % words.length]).join(' ');
  return { reasoning: `Looking at turn ${h % 1000}.`, content };
}

function sse(res, obj) {
  res.write(`data: ${JSON.stringify(obj)}\n\n`);
}

async function chat(req, res, body) {
  const id = ++uid;
  const ids = encode(render(body.messages, body.tools, true));
  const userStart = body.messages.findLastIndex((m) => m.role === 'user');
  const { cached, kind, divergence } = cacheOn && bug !== 'no-cache' ? lookup(ids) : { cached: 0 };
  if (divergence) log(`uid=${id} ${divergence}`);
  const prefill = ids.length - cached;
  const ttft = 1 + prefill * 0.01;
  const out = reply(ids);
  const call = (d) => ({ tool_calls: [{ index: 0, ...d }] });
  const pieces = opt['mock-tools']
    ? [{ reasoning_content: out.reasoning }, call({ id: `call_${id}`, type: 'function',
      function: { name: 'read_file', arguments: '' } }), call({ function: { arguments: '{"path": ' } }),
    call({ function: { arguments: `"src/f${id}.cpp"}` } })]
    : [{ reasoning_content: out.reasoning }, ...out.content.split(' ').map((w, i) => ({ content: (i ? ' ' : '') + w }))];
  const max = body.max_tokens ?? 1000;
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  let closed = false;
  res.on('close', () => { closed = true; });
  let sent = 0;
  let text = '';
  let reasoning = '';
  const toolCalls = [];
  for (const delta of pieces.slice(0, max)) {
    if (closed) break;
    sse(res, { id: `c${id}`, object: 'chat.completion.chunk', choices: [{ index: 0, delta }] });
    if (delta.content) text += delta.content;
    if (delta.reasoning_content) reasoning += delta.reasoning_content;
    for (const d of delta.tool_calls ?? []) {
      if (d.id) toolCalls.push({ id: d.id, type: 'function', function: { ...d.function } });
      else toolCalls[0].function.arguments += d.function.arguments;
    }
    sent++;
    await new Promise((r) => setTimeout(r, 2));
  }
  save('message_boundary', encode(render(body.messages, body.tools, false)));
  if (userStart >= 0) save('user_start', encode(render(body.messages.slice(0, userStart), body.tools, false)));
  const assistant = { role: 'assistant', content: text, ...(reasoning ? { reasoning_content: reasoning } : {}),
    ...(toolCalls.length ? { tool_calls: toolCalls } : {}) };
  const withReply = encode(render([...body.messages, assistant], body.tools, false));
  if (!closed && bug !== 'no-canonical') save('canonical_history', withReply);
  if (closed) save('interrupted', withReply.slice(0, -2));
  const line = `uid=${id} ${cached > 0 ? 'HIT' : 'MISS'} cached=${cached} prefill=${prefill} prompt=${ids.length} ` +
    `completion=${sent} ttft=${ttft.toFixed(1)}ms finish=${closed ? 'cancelled' : 'stop'}` +
    (cached > 0 ? ` kind=${kind}` : ` miss_reason=${snapshots.length ? 'no_candidate' : 'none'}`);
  log(line);
  if (closed) return;
  sse(res, { id: `c${id}`, object: 'chat.completion.chunk',
    choices: [{ index: 0, delta: {}, finish_reason: toolCalls.length ? 'tool_calls' : 'stop' }] });
  sse(res, { id: `c${id}`, object: 'chat.completion.chunk', choices: [],
    usage: { prompt_tokens: ids.length, completion_tokens: sent, total_tokens: ids.length + sent,
      prompt_tokens_details: { cached_tokens: cached } },
    timings: { cached, prefill, ttft_ms: ttft, prefill_ms: ttft, decode_ms: sent, decode_tokens_per_second: 1000, uid: id,
      ...(cached > 0 ? { cache: { kind, lookup_ms: 0.1, read_ms: 0.2, verify_ms: 0.1, install_ms: 0.1 } } : {}) } });
  res.end('data: [DONE]\n\n');
}

function json(res, status, obj) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(obj));
}

const server = http.createServer((req, res) => {
  let data = '';
  req.on('data', (c) => { data += c; });
  req.on('end', () => {
    if (req.url === '/health') return json(res, 200, { status: 'ok' });
    if (req.url === '/v1/models') return json(res, 200, { data: [{ id: 'mock' }] });
    const body = data ? JSON.parse(data) : {};
    if (req.url === '/tokenize') return json(res, 200, { tokens: encode(body.content) });
    if (req.url === '/apply-template') {
      const prompt = render(body.messages, body.tools, body.add_generation_prompt !== false);
      return json(res, 200, { prompt, tokens: encode(prompt) });
    }
    if (req.url === '/v1/chat/completions') return void chat(req, res, body);
    return json(res, 404, { error: { message: 'not found' } });
  });
});
const metrics = http.createServer((req, res) => {
  const bytes = store && fs.existsSync(store) ? fs.statSync(store).size : 0;
  res.end(`# HELP qmlx_disk_cache_bytes b\n# TYPE qmlx_disk_cache_bytes gauge\nqmlx_disk_cache_bytes ${bytes}\n` +
    `qmlx_checkpoint_writes_total{kind="message_boundary"} ${snapshots.length}\n`);
});
server.listen(Number(opt.port), '127.0.0.1');
metrics.listen(Number(opt['metrics-port']), '127.0.0.1');
process.on('SIGTERM', () => process.exit(0));
log(`mock qmlx listening on ${opt.port}, cache ${cacheOn ? 'on' : 'off'}`);
