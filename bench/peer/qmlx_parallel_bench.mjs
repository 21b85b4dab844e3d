// qmlx side of the concurrency benchmark (issue 18), against a running `qmlx serve --parallel N`:
// SEQUENCES requests at once to /v1/completions, each with its own PROMPT_TOKENS pseudo-random
// ids (the same streams as llama_parallel_bench.mjs) and max_tokens DECODE_TOKENS, greedy,
// streamed. The aggregate rate is counted where every sequence is decoding: from the last
// request's first token to the first request's last one, each request's tokens in that window
// (its streamed chunks there, scaled by its tokens per chunk) over the window's length. So the
// steps in which some requests still prefill, and the tail where some have finished, are left
// out, as llama_parallel_bench.mjs prefills every sequence before it starts its clock.
// aggregate_by_decode_timings is the earlier estimate from each response's timings (its decode
// window [end - decode_ms, end], its tokens spread evenly over it), which counts those mixed
// steps in. With LONG_PROMPT > 0 it also sends a LONG_PROMPT-token request, then after a second
// a PROMPT_TOKENS one, and reports the short one's time to its first token (its whole request,
// max_tokens 1). Prints one JSON line with llama_parallel_bench.mjs's fields.
//   node qmlx_parallel_bench.mjs BASE_URL SEQUENCES PROMPT_TOKENS DECODE_TOKENS [LONG_PROMPT=0]
import {promptOf, sseChunks} from "./prompt_streams.mjs";

const [base, sequencesArg, promptArg, decodeArg, longArg] = process.argv.slice(2);
const sequences = Number(sequencesArg), promptTokens = Number(promptArg);
const decodeTokens = Number(decodeArg), longPrompt = Number(longArg ?? 0);

async function post(prompt, maxTokens, stream) {
  const response = await fetch(`${base}/v1/completions`, {
    method: "POST",
    headers: {"content-type": "application/json", "authorization": "Bearer bench"},
    body: JSON.stringify({prompt, max_tokens: maxTokens, temperature: 0, stream,
                          ...(stream ? {stream_options: {include_usage: true}} : {})}),
  });
  if (!response.ok) throw new Error(`HTTP ${response.status}: ${await response.text()}`);
  return response;
}

async function complete(prompt, maxTokens) {
  const sent = performance.now();
  const body = await (await post(prompt, maxTokens, false)).json();
  return {sent, end: performance.now(), tokens: body.usage.completion_tokens};
}

// A streamed request: the arrival time of every chunk that carries text, its token count (usage)
// and the server's decode time.
async function streamed(prompt, maxTokens) {
  const response = await post(prompt, maxTokens, true);
  const times = [];
  let tokens = 0, decodeMs = 0;
  for await (const {chunk, now} of sseChunks(response)) {
    if (chunk.usage) tokens = chunk.usage.completion_tokens;
    if (chunk.timings) decodeMs = chunk.timings.decode_ms ?? 0;
    if (chunk.choices?.[0]?.text) times.push(now);
  }
  return {end: performance.now(), tokens, decodeMs, times};
}

const result = {engine: "qmlx", base, sequences, prompt_tokens: promptTokens,
                decode_tokens: decodeTokens};
if (sequences > 0) {
  const runs = await Promise.all(Array.from({length: sequences},
      (_, i) => streamed(promptOf(promptTokens, i + 1), decodeTokens)));
  const from = Math.max(...runs.map((r) => r.times[0]));
  const to = Math.min(...runs.map((r) => r.times.at(-1)));
  if (to > from) {
    const tokens = runs.reduce((sum, r) => sum + r.times.filter((t) => t > from && t <= to).length *
                                   (r.tokens - 1) / Math.max(r.times.length - 1, 1), 0);
    result.aggregate_decode_tokens_per_second = tokens / ((to - from) / 1000);
  }
  result.overlap_ms = Math.max(0, to - from);
  // The earlier estimate, from the responses' timings alone.
  const windows = runs.map((r) => ({from: r.end - r.decodeMs, to: r.end,
                                    rate: (r.tokens - 1) / Math.max(r.decodeMs, 1e-9)}));
  const wFrom = Math.max(...windows.map((w) => w.from)), wTo = Math.min(...windows.map((w) => w.to));
  if (wTo > wFrom) {
    result.aggregate_by_decode_timings =
        windows.reduce((sum, w) => sum + w.rate * (wTo - wFrom), 0) / ((wTo - wFrom) / 1000);
  }
  result.total_tokens = runs.reduce((sum, r) => sum + r.tokens, 0);
}
if (longPrompt > 0) {
  const long = complete(promptOf(longPrompt, 99), 1);
  await new Promise((r) => setTimeout(r, 1000));  // the long prefill is under way
  const short = await complete(promptOf(promptTokens, 7), 1);
  result.long_prompt_tokens = longPrompt;
  result.short_ttft_ms_during_long_prefill = short.end - short.sent;
  const l = await long;
  result.long_prefill_ms = l.end - l.sent;
}
console.log(JSON.stringify(result));
