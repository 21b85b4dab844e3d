// Drives a running `qmlx serve` with the official OpenAI and Anthropic SDKs and checks what a
// real client sees. Usage: node clients.cjs (env: QMLX_URL, QMLX_KEY, QMLX_MODEL_ID,
// QMLX_KIND = xml | json | plain, QMLX_NODE_MODULES). Exits non-zero on the first failure.
'use strict';
const path = require('path');
const assert = require('assert/strict');

const modules = process.env.QMLX_NODE_MODULES;
const openaiModule = require(path.join(modules, 'openai'));
const anthropicModule = require(path.join(modules, '@anthropic-ai/sdk'));
const OpenAI = openaiModule.OpenAI || openaiModule.default || openaiModule;
const Anthropic = anthropicModule.Anthropic || anthropicModule.default || anthropicModule;

const url = process.env.QMLX_URL;
const key = process.env.QMLX_KEY;
const model = process.env.QMLX_MODEL_ID;
const kind = process.env.QMLX_KIND;

const openai = new OpenAI({ baseURL: `${url}/v1`, apiKey: key, maxRetries: 0 });
const anthropic = new Anthropic({ baseURL: url, apiKey: key, maxRetries: 0 });

// What each fixture script must come back as (see run_server_e2e.sh for the scripts).
const expected = {
  xml: {
    reasoning: 'The user wants the weather. I will call the tool.',
    content: 'Let me check.',
    calls: [{ name: 'get_weather', arguments: { city: 'Paris', days: 3 } }],
  },
  json: {
    reasoning: 'Two lookups are needed.',
    content: 'Calling two tools.',
    calls: [
      { name: 'get_weather', arguments: { city: 'Paris', days: 2 } },
      { name: 'get_time', arguments: { zone: 'CET' } },
    ],
  },
  plain: { reasoning: '', content: 'Hello from the scripted model!', calls: [] },
}[kind];

const tools = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'Weather for a city',
      parameters: {
        type: 'object',
        properties: { city: { type: 'string' }, days: { type: 'integer' } },
        required: ['city'],
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'get_time',
      description: 'Time in a zone',
      parameters: { type: 'object', properties: { zone: { type: 'string' } } },
    },
  },
];
const anthropicTools = tools.map((t) => ({
  name: t.function.name,
  description: t.function.description,
  input_schema: t.function.parameters,
}));
const hasTools = expected ? expected.calls.length > 0 : true;
const question = [{ role: 'user', content: 'What is the weather in Paris?' }];

function checkTimings(timings, promptTokens) {
  assert.equal(typeof timings, 'object');
  assert.equal(timings.cached + timings.prefill, promptTokens);
  for (const k of ['prefill_ms', 'ttft_ms', 'decode_ms', 'decode_tokens_per_second']) {
    assert.equal(typeof timings[k], 'number', k);
  }
}

async function chatWhole() {
  const r = await openai.chat.completions.create({
    model, messages: question, temperature: 0, max_tokens: 200, ...(hasTools ? { tools } : {}),
  });
  const m = r.choices[0].message;
  assert.equal((m.reasoning_content || '').trim(), expected.reasoning);
  assert.equal((m.content || '').trim(), expected.content);
  const calls = (m.tool_calls || []).map((c) => ({ name: c.function.name, arguments: JSON.parse(c.function.arguments) }));
  assert.deepEqual(calls, expected.calls);
  assert.equal(r.choices[0].finish_reason, hasTools ? 'tool_calls' : 'stop');
  assert.ok(r.usage.prompt_tokens > 0 && r.usage.completion_tokens > 0);
  assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens);
  // The prefix cache may serve a repeated prompt; checkTimings checks cached + prefill = prompt.
  assert.equal(r.usage.prompt_tokens_details.cached_tokens, r.timings.cached);
  checkTimings(r.timings, r.usage.prompt_tokens);
  return r;
}

async function chatStream() {
  const stream = await openai.chat.completions.create({
    model, messages: question, temperature: 0, max_tokens: 200, stream: true,
    stream_options: { include_usage: true }, ...(hasTools ? { tools } : {}),
  });
  let content = '', reasoning = '', finish = null, usage = null;
  const calls = [];
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    if (!chunk.choices.length) continue;
    const c = chunk.choices[0];
    content += c.delta.content || '';
    reasoning += c.delta.reasoning_content || '';
    for (const t of c.delta.tool_calls || []) {
      if (!calls[t.index]) calls[t.index] = { name: '', args: '' };
      if (t.function?.name) calls[t.index].name += t.function.name;
      calls[t.index].args += t.function?.arguments || '';
    }
    if (c.finish_reason) finish = c.finish_reason;
  }
  assert.equal(content.trim(), expected.content);
  assert.equal(reasoning.trim(), expected.reasoning);
  assert.deepEqual(calls.map((c) => ({ name: c.name, arguments: JSON.parse(c.args) })), expected.calls);
  assert.equal(finish, hasTools ? 'tool_calls' : 'stop');
  assert.ok(usage && usage.completion_tokens > 0);
}

async function chatToolResult(first) {
  const m = first.choices[0].message;
  const messages = [...question, m, ...m.tool_calls.map((c) => ({
    role: 'tool', tool_call_id: c.id, content: JSON.stringify({ ok: true, name: c.function.name }),
  }))];
  const r = await openai.chat.completions.create({ model, messages, temperature: 0, max_tokens: 200, tools });
  assert.ok(r.usage.prompt_tokens > first.usage.prompt_tokens, 'the tool result is in the prompt');
  assert.ok(r.choices[0].finish_reason);
}

async function messagesWhole() {
  const r = await anthropic.messages.create({
    model, max_tokens: 200, temperature: 0, system: 'You are terse.', messages: question,
    ...(hasTools ? { tools: anthropicTools } : {}),
  });
  assert.equal(r.type, 'message');
  const thinking = r.content.filter((b) => b.type === 'thinking').map((b) => b.thinking).join('');
  const text = r.content.filter((b) => b.type === 'text').map((b) => b.text).join('');
  const uses = r.content.filter((b) => b.type === 'tool_use').map((b) => ({ name: b.name, arguments: b.input }));
  assert.equal(thinking.trim(), expected.reasoning);
  assert.equal(text.trim(), expected.content);
  assert.deepEqual(uses, expected.calls);
  assert.equal(r.stop_reason, hasTools ? 'tool_use' : 'end_turn');
  assert.equal(r.usage.cache_creation_input_tokens, 0);
  // A repeated prompt may be served by the prefix cache: what was read plus what was not.
  assert.equal(r.usage.cache_read_input_tokens, r.timings.cached);
  assert.equal(r.usage.input_tokens, r.timings.prefill);
  assert.ok(r.usage.input_tokens + r.usage.cache_read_input_tokens > 0 && r.usage.output_tokens > 0);
  return r;
}

async function messagesStream() {
  const stream = anthropic.messages.stream({
    model, max_tokens: 200, temperature: 0, messages: question, ...(hasTools ? { tools: anthropicTools } : {}),
  });
  const events = [];
  stream.on('streamEvent', (e) => events.push(e.type));
  const final = await stream.finalMessage();
  assert.equal(events[0], 'message_start');
  assert.equal(events[events.length - 1], 'message_stop');
  assert.equal(events[events.length - 2], 'message_delta');
  // Blocks open and close strictly in turn.
  let open = false;
  for (const e of events) {
    if (e === 'content_block_start') { assert.ok(!open); open = true; }
    if (e === 'content_block_delta') assert.ok(open);
    if (e === 'content_block_stop') { assert.ok(open); open = false; }
  }
  const uses = final.content.filter((b) => b.type === 'tool_use').map((b) => ({ name: b.name, arguments: b.input }));
  assert.deepEqual(uses, expected.calls);
  const text = final.content.filter((b) => b.type === 'text').map((b) => b.text).join('');
  assert.equal(text.trim(), expected.content);
  assert.equal(final.stop_reason, hasTools ? 'tool_use' : 'end_turn');
  assert.ok(final.usage.output_tokens > 0);
}

async function messagesToolResult(first) {
  const toolUses = first.content.filter((b) => b.type === 'tool_use');
  const r = await anthropic.messages.create({
    model, max_tokens: 100, temperature: 0, tools: anthropicTools,
    messages: [...question, { role: 'assistant', content: first.content },
      { role: 'user', content: toolUses.map((b) => ({ type: 'tool_result', tool_use_id: b.id, content: 'sunny, 21C' })) }],
  });
  assert.equal(r.type, 'message');
  assert.ok(r.usage.input_tokens > first.usage.input_tokens);
}

async function countTokens() {
  const r = await anthropic.messages.countTokens({ model, messages: question });
  assert.ok(r.input_tokens > 0);
}

async function modelsAndErrors() {
  // QMLX_STRICT=1: the server runs with --strict-model-id --model-alias fixture-alias.
  const strict = process.env.QMLX_STRICT === '1';
  const list = await openai.models.list();
  assert.deepEqual(list.data.map((m) => m.id), strict ? [model, 'fixture-alias'] : [model]);
  if (strict) {
    await assert.rejects(openai.chat.completions.create({ model: 'no-such-model', messages: question }),
      (e) => e.status === 404);
    await assert.rejects(anthropic.messages.create({ model: 'no-such-model', max_tokens: 5, messages: question }),
      (e) => e.status === 404 && e.error?.error?.type === 'not_found_error');
    const alias = await openai.chat.completions.create({ model: 'fixture-alias', messages: question, max_tokens: 4 });
    assert.equal(alias.model, model);
  } else {
    // By default any name is served (agents send claude-* / gpt-* names) and answered as ours.
    const other = await openai.chat.completions.create({ model: 'gpt-5-mini', messages: question, max_tokens: 4 });
    assert.equal(other.model, model);
    const claude = await anthropic.messages.create({ model: 'claude-haiku-4-5', max_tokens: 4, messages: question });
    assert.equal(claude.model, model);
  }
  // A body over --max-body-mb (1 MB here): a 413 at once, and the same client goes on working.
  await assert.rejects(openai.chat.completions.create({ model, messages: [{ role: 'user', content: 'x'.repeat(2_000_000) }] }),
    (e) => e.status === 413);
  assert.equal((await openai.models.list()).data[0].id, model);
  const wrong = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'wrong-key', maxRetries: 0 });
  await assert.rejects(wrong.chat.completions.create({ model, messages: question }), (e) => e.status === 401);
  const wrongAnthropic = new Anthropic({ baseURL: url, apiKey: 'wrong-key', maxRetries: 0 });
  await assert.rejects(wrongAnthropic.messages.create({ model, max_tokens: 5, messages: question }),
    (e) => e.status === 401 && e.error?.error?.type === 'authentication_error');
}

async function completions() {
  const r = await openai.completions.create({ model, prompt: 'Say hi', max_tokens: 8, temperature: 0, echo: true });
  assert.ok(r.choices[0].text.startsWith('Say hi'));
  assert.ok(r.usage.completion_tokens > 0);
}

async function concurrent() {
  const runs = [];
  for (let i = 0; i < 4; i++) runs.push(i % 2 ? chatWhole() : chatStream());
  runs.push(messagesWhole(), messagesStream());
  await Promise.all(runs);
}

// tool_choice fixtures (see run_server_e2e.sh): the "required" model writes a call's body but
// never opens it; the "named" model writes only the arguments. A call comes back only because
// the server forces the opening (and the name).
async function toolChoiceRequired() {
  const free = await openai.chat.completions.create({ model, messages: question, temperature: 0, max_tokens: 100, tools });
  assert.equal(free.choices[0].finish_reason, 'stop', 'without tool_choice the body is plain content');
  const r = await openai.chat.completions.create({
    model, messages: question, temperature: 0, max_tokens: 100, tools, tool_choice: 'required',
  });
  assert.equal(r.choices[0].finish_reason, 'tool_calls');
  const calls = r.choices[0].message.tool_calls.map((c) => ({ name: c.function.name, arguments: JSON.parse(c.function.arguments) }));
  assert.deepEqual(calls, [{ name: 'get_time', arguments: { zone: 'CET' } }]);
  const m = await anthropic.messages.create({
    model, max_tokens: 100, temperature: 0, messages: question, tools: anthropicTools, tool_choice: { type: 'any' },
  });
  assert.equal(m.stop_reason, 'tool_use');
  assert.deepEqual(m.content.filter((b) => b.type === 'tool_use').map((b) => b.name), ['get_time']);
}

async function toolChoiceNamed() {
  for (const name of ['get_time', 'get_weather']) {
    const tool_choice = { type: 'function', function: { name } };
    const r = await openai.chat.completions.create({ model, messages: question, temperature: 0, max_tokens: 100, tools, tool_choice });
    assert.equal(r.choices[0].finish_reason, 'tool_calls');
    const calls = r.choices[0].message.tool_calls.map((c) => ({ name: c.function.name, arguments: JSON.parse(c.function.arguments) }));
    assert.deepEqual(calls, [{ name, arguments: { zone: 'CET' } }]);
    const stream = await openai.chat.completions.create({
      model, messages: question, temperature: 0, max_tokens: 100, tools, tool_choice, stream: true,
    });
    let streamedName = '', finish = null;
    for await (const chunk of stream) {
      const c = chunk.choices[0];
      if (!c) continue;
      for (const t of c.delta.tool_calls || []) streamedName += t.function?.name || '';
      if (c.finish_reason) finish = c.finish_reason;
    }
    assert.equal(streamedName, name);
    assert.equal(finish, 'tool_calls');
  }
  const m = await anthropic.messages.create({
    model, max_tokens: 100, temperature: 0, messages: question, tools: anthropicTools,
    tool_choice: { type: 'tool', name: 'get_weather' },
  });
  assert.equal(m.stop_reason, 'tool_use');
  assert.deepEqual(m.content.filter((b) => b.type === 'tool_use').map((b) => b.name), ['get_weather']);
}

(async () => {
  const toolChoiceStep = { required: toolChoiceRequired, named: toolChoiceNamed }[kind];
  if (toolChoiceStep) {
    await toolChoiceStep();
    console.log(`ok ${kind}: tool_choice`);
    return;
  }
  const steps = [['models and errors', modelsAndErrors], ['chat', chatWhole], ['chat stream', chatStream],
    ['messages', messagesWhole], ['messages stream', messagesStream], ['count_tokens', countTokens],
    ['completions', completions], ['concurrent clients', concurrent]];
  for (const [name, fn] of steps) {
    await fn();
    console.log(`ok ${kind}: ${name}`);
  }
  if (hasTools) {
    await chatToolResult(await chatWhole());
    console.log(`ok ${kind}: chat tool result`);
    await messagesToolResult(await messagesWhole());
    console.log(`ok ${kind}: messages tool result`);
  }
})().catch((e) => {
  console.error(`FAIL ${kind}:`, e);
  process.exit(1);
});
