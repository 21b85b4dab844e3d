// The session generator: deterministic from its seed, sizes spread from a few tokens to
// thousands, and each scenario's shape (per-turn id, regeneration, interruption follow-up).
import test from 'node:test';
import assert from 'node:assert/strict';

import { SessionGenerator } from '../lib/generator.mjs';

const noReply = { content: 'x', reasoning: '', toolCalls: [], interrupted: false };

// Drives a generator with fixed replies and a prompt size that grows by what it appends.
function drive(options, replyFor = () => noReply) {
  const gen = new SessionGenerator(options);
  const steps = [gen.first()];
  let history = [...steps[0].append];
  let tokens = gen.tokens(steps[0].system + JSON.stringify(gen.tools)) +
    gen.tokens(steps[0].append[0].content);
  for (let turn = 1; ; turn++) {
    const reply = replyFor(turn);
    history.push({ role: 'assistant', content: reply.content });
    const step = gen.next({ reply, history, promptTokens: tokens });
    if (!step) break;
    if (step.keep !== undefined) history = history.slice(0, step.keep);
    history.push(...step.append);
    tokens = gen.tokens(JSON.stringify(history)) + gen.tokens(step.system);
    steps.push(step);
  }
  return { steps, history, tokens };
}

const base = { seed: 7, startTokens: 4000, targetTokens: 30000, turns: 20, charsPerToken: 3.5,
  maxTokens: 64 };

test('same seed, same session; another seed, another session', () => {
  const a = JSON.stringify(drive(base).steps);
  assert.equal(a, JSON.stringify(drive(base).steps));
  assert.notEqual(a, JSON.stringify(drive({ ...base, seed: 8 }).steps));
});

test('first prompt is about --start-tokens and the session reaches the target', () => {
  const gen = new SessionGenerator(base);
  const first = gen.first();
  const tokens = gen.tokens(first.system + JSON.stringify(gen.tools) + first.append[0].content);
  assert.ok(tokens > 3400 && tokens < 4600, `first prompt ${tokens} tokens`);
  assert.equal(gen.tools.length, 12);
  const { tokens: final, steps } = drive(base);
  assert.ok(final >= base.targetTokens, `ended at ${final} tokens`);
  assert.ok(steps.length > 5 && steps.length <= base.turns * 2 + 4, `${steps.length} turns`);
});

test('tool results range from a few tokens to thousands', () => {
  const { steps } = drive({ ...base, targetTokens: 120000, turns: 60 });
  const sizes = steps.flatMap((s) => s.append.filter((m) => m.role === 'tool'))
    .map((m) => m.content.length / base.charsPerToken);
  assert.ok(sizes.length > 30, `${sizes.length} tool results`);
  assert.ok(Math.min(...sizes) < 30, `smallest ${Math.min(...sizes)} tokens`);
  assert.ok(Math.max(...sizes) > 2000, `largest ${Math.max(...sizes)} tokens`);
  assert.ok(steps.some((s) => s.kind === 'user'), 'has user follow-ups');
});

test('timestamp: the id changes every turn and is in the system prompt', () => {
  const { steps } = drive({ ...base, timestamp: true, targetTokens: 8000 });
  const markers = steps.map((s) => s.marker);
  assert.equal(new Set(markers).size, markers.length);
  for (const s of steps) assert.ok(s.system.includes(s.marker));
  const plain = drive(base).steps;
  assert.equal(new Set(plain.map((s) => s.system)).size, 1);
});

test('regenerate: the last user message is re-sent edited and the tail dropped', () => {
  const { steps } = drive({ ...base, regenerateEvery: 3 });
  const regen = steps.filter((s) => s.kind === 'regenerate');
  assert.ok(regen.length >= 2);
  for (const s of regen) {
    const i = steps.indexOf(s);
    const original = steps[i - 1].append.at(-1);
    assert.equal(original.role, 'user');
    assert.ok(s.append[0].content.startsWith(original.content));
    assert.notEqual(s.append[0].content, original.content);
    assert.equal(typeof s.keep, 'number');
  }
});

test('model tool calls are answered by id; an interrupted reply gets a user follow-up', () => {
  const calls = [{ id: 'call_a', function: { name: 'read_file', arguments: '{}' } },
    { id: 'call_b', function: { name: 'grep', arguments: '{}' } }];
  const gen = new SessionGenerator(base);
  gen.first();
  const answered = gen.next({ reply: { ...noReply, toolCalls: calls }, history: [], promptTokens: 0 });
  assert.deepEqual(answered.append.map((m) => [m.role, m.tool_call_id]),
    [['tool', 'call_a'], ['tool', 'call_b']]);
  const after = gen.next({ reply: { ...noReply, interrupted: true }, history: [], promptTokens: 0 });
  assert.equal(after.append[0].role, 'user');
});

test('interrupt: every N-th step asks for a cut', () => {
  const { steps } = drive({ ...base, interruptEvery: 2, interruptAfter: 5 });
  steps.forEach((s, i) => assert.equal(s.interruptAfter, i > 0 && i % 2 === 0 ? 5 : 0));
});
