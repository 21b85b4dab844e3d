// Token accounting against a fake server with a ChatML renderer and a word tokenizer: the new
// tokens of a turn are exactly the tokens of the messages the client added (computed here
// independently by rendering those messages alone), the reply's re-render is reported apart,
// and an edit counts its whole message.
import test from 'node:test';
import assert from 'node:assert/strict';

import { accountTurn, markerSpan } from '../lib/prompt_tokens.mjs';

const tokenize = (text) => text.match(/<\|[a-z_]+\|>|\w+|\s+|[^\w\s]/g) ?? [];
const renderOne = (m) => `<|im_start|>${m.role}\n` +
  (m.reasoning_content ? `<think>${m.reasoning_content}</think>` : '') + `${m.content}<|im_end|>\n`;
const fakeApi = {
  async applyTemplate(messages, tools, addGen) {
    const prompt = messages.map(renderOne).join('') + (addGen ? '<|im_start|>assistant\n' : '');
    return { prompt, tokens: tokenize(prompt) };
  },
  async tokenize(text) {
    return tokenize(text);
  },
};

async function account(turns) {
  let prev = null;
  const out = [];
  for (const t of turns) {
    const a = await accountTurn(fakeApi, t, prev);
    out.push(a);
    prev = { ...t, ids: a.ids };
  }
  return out;
}

const sys = { role: 'system', content: 'You are helpful.' };
const u1 = { role: 'user', content: 'Read the file please' };
const r1 = { role: 'assistant', content: 'Reading it now', reasoning_content: 'plan' };
const t1 = { role: 'tool', content: 'line one\nline two' };
const u2 = { role: 'user', content: 'Thanks, now fix it' };

test('new tokens are the added messages plus the generation prompt', async () => {
  const [a, b] = await account([
    { messages: [sys, u1], assistant: r1 },
    { messages: [sys, u1, r1, t1, u2], assistant: r1 },
  ]);
  assert.equal(a.newTokens, a.promptTokens);
  const expected = tokenize(renderOne(t1) + renderOne(u2) + '<|im_start|>assistant\n').length;
  assert.equal(b.newTokens, expected);
  const replyTokens = tokenize(renderOne(r1)).length - tokenize('<|im_start|>assistant\n').length;
  assert.equal(b.replySpan, replyTokens);
});

test('an edited last user message is new as a whole, with no reply span', async () => {
  const edited = { role: 'user', content: 'Read the file please, only the header' };
  const [, b] = await account([
    { messages: [sys, u1], assistant: r1 },
    { messages: [sys, edited], assistant: r1 },
  ]);
  assert.equal(b.newTokens, tokenize(renderOne(edited) + '<|im_start|>assistant\n').length);
  assert.equal(b.replySpan, 0);
});

test('a changed system prompt makes the whole prompt new; the marker span is found', async () => {
  const s2 = { role: 'system', content: 'You are helpful. id: req_ab12 ok' };
  const [, b] = await account([
    { messages: [sys, u1], assistant: r1 },
    { messages: [s2, u1, r1, u2], assistant: r1 },
  ]);
  assert.equal(b.newTokens, b.promptTokens);
  const rendered = await fakeApi.applyTemplate([s2, u1], [], true);
  const span = await markerSpan(fakeApi, rendered.prompt, rendered.tokens, 'req_ab12');
  assert.equal(rendered.tokens[span.start], 'req_ab12');
});
