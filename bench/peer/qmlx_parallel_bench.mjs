// qmlx side of the concurrency benchmark (issue 18), against a running `qmlx serve --parallel N`:
// SEQUENCES requests at once to /v1/completions, each with its own PROMPT_TOKENS pseudo-random
// ids (the same streams as llama_parallel_bench.mjs) and max_tokens DECODE_TOKENS, greedy.
// Each response's timings give its decode window [end - decode_ms, end]; the aggregate rate is
// counted where all windows overlap (every sequence decoding), each request's tokens spread
// evenly over its window. With LONG_PROMPT > 0 it also sends a LONG_PROMPT-token request, then
// after a second a PROMPT_TOKENS one, and reports the short one's time to its first token (its
// whole request, max_tokens 1). Prints one JSON line with llama_parallel_bench.mjs's fields.
//   node qmlx_parallel_bench.mjs BASE_URL SEQUENCES PROMPT_TOKENS DECODE_TOKENS [LONG_PROMPT=0]
const [base, sequencesArg, promptArg, decodeArg, longArg] = process.argv.slice(2);
const sequences = Number(sequencesArg), promptTokens = Number(promptArg);
const decodeTokens = Number(decodeArg), longPrompt = Number(longArg ?? 0);

function promptOf(length, seed) {
  return Array.from({length}, () => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed % 256;
  });
}

async function complete(prompt, maxTokens) {
  const sent = performance.now();
  const response = await fetch(`${base}/v1/completions`, {
    method: "POST",
    headers: {"content-type": "application/json", "authorization": "Bearer bench"},
    body: JSON.stringify({prompt, max_tokens: maxTokens, temperature: 0}),
  });
  const body = await response.json();
  if (!response.ok) throw new Error(`HTTP ${response.status}: ${JSON.stringify(body)}`);
  return {sent, end: performance.now(), tokens: body.usage.completion_tokens,
          decodeMs: body.timings?.decode_ms ?? 0};
}

const result = {engine: "qmlx", base, sequences, prompt_tokens: promptTokens,
                decode_tokens: decodeTokens};
if (sequences > 0) {
  const runs = await Promise.all(Array.from({length: sequences},
      (_, i) => complete(promptOf(promptTokens, i + 1), decodeTokens)));
  const windows = runs.map((r) => ({from: r.end - r.decodeMs, to: r.end,
                                    rate: (r.tokens - 1) / Math.max(r.decodeMs, 1e-9)}));
  const from = Math.max(...windows.map((w) => w.from)), to = Math.min(...windows.map((w) => w.to));
  if (to > from) {
    const tokens = windows.reduce((sum, w) => sum + w.rate * (to - from), 0);
    result.aggregate_decode_tokens_per_second = tokens / ((to - from) / 1000);
  }
  result.overlap_ms = Math.max(0, to - from);
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
