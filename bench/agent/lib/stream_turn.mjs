// One agent turn over the official `openai` client: a streaming chat completion whose deltas
// are assembled exactly as an agent assembles them (content, reasoning_content, tool_calls by
// index), optionally cut by aborting the stream after N chunks (the client going away), with
// the client-side TTFT and the server's usage and timings from the final chunk.
import OpenAI from '../../../tests/node/node_modules/openai/index.mjs';

export function makeClient(baseUrl, apiKey, timeoutMs) {
  return new OpenAI({ baseURL: `${baseUrl}/v1`, apiKey, timeout: timeoutMs, maxRetries: 0 });
}

function hasPayload(delta) {
  return Boolean(delta && (delta.content || delta.reasoning_content || delta.tool_calls?.length));
}

function mergeToolCall(calls, piece) {
  const i = piece.index ?? calls.length;
  calls[i] ??= { id: '', type: 'function', function: { name: '', arguments: '' } };
  const call = calls[i];
  if (piece.id) call.id = piece.id;
  if (piece.type) call.type = piece.type;
  if (piece.function?.name) call.function.name += piece.function.name;
  if (piece.function?.arguments) call.function.arguments += piece.function.arguments;
}

// The assistant message a client appends to its history: what it received, nothing more.
// A cut reply keeps its text and reasoning; its tool calls are dropped, since a half-streamed
// call has unparsable arguments and an agent cannot have run it.
export function assistantMessage(reply) {
  const message = { role: 'assistant', content: reply.content };
  if (reply.reasoning) message.reasoning_content = reply.reasoning;
  if (reply.toolCalls.length > 0) message.tool_calls = reply.toolCalls;
  return message;
}

export async function streamTurn(client, body, { interruptAfter = 0 } = {}) {
  const controller = new AbortController();
  const started = performance.now();
  const reply = { content: '', reasoning: '', toolCalls: [], interrupted: false, chunks: 0,
    finishReason: null, usage: null, timings: null, clientTtftMs: null, totalMs: 0 };
  const calls = [];
  const stream = await client.chat.completions.create(body, { signal: controller.signal });
  for await (const chunk of stream) {
    if (chunk.usage) reply.usage = chunk.usage;
    if (chunk.timings) reply.timings = chunk.timings;
    const choice = chunk.choices?.[0];
    if (!choice) continue;
    if (choice.finish_reason) reply.finishReason = choice.finish_reason;
    const delta = choice.delta;
    if (!hasPayload(delta)) continue;
    reply.clientTtftMs ??= performance.now() - started;
    reply.chunks++;
    if (delta.content) reply.content += delta.content;
    if (delta.reasoning_content) reply.reasoning += delta.reasoning_content;
    for (const piece of delta.tool_calls ?? []) mergeToolCall(calls, piece);
    if (interruptAfter > 0 && reply.chunks >= interruptAfter) {
      reply.interrupted = true;
      controller.abort();
      break;
    }
  }
  reply.toolCalls = reply.interrupted ? [] : calls.filter(Boolean);
  reply.totalMs = performance.now() - started;
  return reply;
}
