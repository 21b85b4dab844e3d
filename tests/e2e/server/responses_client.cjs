// Drives `POST /v1/responses` of a running `qmlx serve` (the xml fixture model: reasoning,
// "Let me check.", a get_weather call) with the official OpenAI SDK, as Codex uses the API:
// a whole response, a stream (client.responses.stream), a second turn that sends turn 1's
// output items back with the tool's output and must HIT the prefix cache (cached_tokens > 0),
// a third turn by previous_response_id, and an unknown id as a 404.
// Usage: node responses_client.cjs (env: QMLX_URL, QMLX_KEY, QMLX_MODEL_ID, QMLX_NODE_MODULES).
'use strict';
const path = require('path');
const assert = require('assert/strict');

const openaiModule = require(path.join(process.env.QMLX_NODE_MODULES, 'openai'));
const OpenAI = openaiModule.OpenAI || openaiModule.default || openaiModule;
const client = new OpenAI({
  baseURL: `${process.env.QMLX_URL}/v1`, apiKey: process.env.QMLX_KEY, maxRetries: 0,
});
const model = process.env.QMLX_MODEL_ID;

const tools = [
  {
    type: 'function', name: 'get_weather', description: 'Weather for a city', strict: false,
    parameters: {
      type: 'object',
      properties: { city: { type: 'string' }, days: { type: 'integer' } },
      required: ['city'],
    },
  },
  { type: 'custom', name: 'apply_patch', description: 'Edit files with a patch' },
  {
    type: 'namespace', name: 'agents', description: 'Sub-agents',
    tools: [{ type: 'function', name: 'close_agent', parameters: { type: 'object' } }],
  },
  { type: 'web_search' },
];
const turn1Input = [
  { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'Be brief.' }] },
  { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Weather in Paris?' }] },
];
const base = {
  model, tools, tool_choice: 'auto', parallel_tool_calls: true, temperature: 0,
  reasoning: { summary: 'auto' }, include: ['reasoning.encrypted_content'],
  prompt_cache_key: 'e2e-session', max_output_tokens: 200,
};

function checkOutput(response) {
  assert.equal(response.object, 'response');
  assert.equal(response.status, 'completed');
  const [reasoning, message, call] = response.output;
  assert.equal(response.output.length, 3, JSON.stringify(response.output));
  assert.equal(reasoning.type, 'reasoning');
  assert.equal(reasoning.content[0].text, 'The user wants the weather. I will call the tool.');
  assert.match(reasoning.encrypted_content, /^qmlx-reasoning-v1:/);
  assert.equal(message.type, 'message');
  assert.equal(response.output_text, 'Let me check.');
  assert.equal(call.type, 'function_call');
  assert.equal(call.name, 'get_weather');
  assert.deepEqual(JSON.parse(call.arguments), { city: 'Paris', days: 3 });
  assert.match(call.call_id, /^call_/);
  const usage = response.usage;
  assert.equal(usage.total_tokens, usage.input_tokens + usage.output_tokens);
  assert.ok(usage.output_tokens_details.reasoning_tokens > 0);
  assert.ok(usage.output_tokens_details.reasoning_tokens < usage.output_tokens);
  return call;
}

async function whole() {
  const r = await client.responses.create({ ...base, input: turn1Input, store: false });
  checkOutput(r);
  console.log(`ok responses whole: ${r.usage.input_tokens} prompt tokens`);
}

async function streamed(input, extra = {}) {
  const stream = client.responses.stream({ ...base, input, ...extra });
  const types = [];
  let text = '';
  for await (const event of stream) {
    types.push(event.type);
    if (event.type === 'response.output_text.delta') text += event.delta;
  }
  const response = await stream.finalResponse();
  assert.equal(types[0], 'response.created');
  assert.equal(types[1], 'response.in_progress');
  assert.equal(types[types.length - 1], 'response.completed');
  for (const t of ['response.reasoning_text.delta', 'response.output_text.delta',
    'response.function_call_arguments.delta', 'response.output_item.done']) {
    assert.ok(types.includes(t), `no ${t} in ${types.join(' ')}`);
  }
  assert.equal(text, 'Let me check.');
  return { response, call: checkOutput(response) };
}

async function conversation() {
  const turn1 = await streamed(turn1Input);
  console.log('ok responses stream');
  // Turn 2 as Codex sends it: everything so far, the output items as given, the tool output.
  const turn2Input = [
    ...turn1Input, ...turn1.response.output,
    { type: 'function_call_output', call_id: turn1.call.call_id, output: 'Sunny, 21 C' },
  ];
  const turn2 = await streamed(turn2Input);
  const cached = turn2.response.usage.input_tokens_details.cached_tokens;
  assert.ok(cached > 0, `turn 2 missed the cache: ${JSON.stringify(turn2.response.usage)}`);
  console.log(`ok responses turn 2: ${cached} of ${turn2.response.usage.input_tokens} cached`);

  // Turn 3 by previous_response_id: only the new tool output is sent.
  const turn3 = await client.responses.create({
    ...base, previous_response_id: turn2.response.id,
    input: [{ type: 'function_call_output', call_id: turn2.call.call_id, output: 'Rain' }],
  });
  checkOutput(turn3);
  assert.equal(turn3.previous_response_id, turn2.response.id);
  assert.ok(turn3.usage.input_tokens > turn2.response.usage.input_tokens);
  assert.ok(turn3.usage.input_tokens_details.cached_tokens > cached);
  console.log(`ok responses previous_response_id: ${turn3.usage.input_tokens_details.cached_tokens}` +
    ` of ${turn3.usage.input_tokens} cached`);

  await assert.rejects(
    client.responses.create({ ...base, previous_response_id: 'resp_nope', input: 'x' }),
    (e) => e.status === 404 && /resp_nope/.test(e.message));
  console.log('ok responses unknown previous_response_id: 404');
}

(async () => {
  await whole();
  await conversation();
})().catch((e) => {
  console.error('FAIL:', e);
  process.exit(1);
});
