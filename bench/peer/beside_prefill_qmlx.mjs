// qmlx side of the decode-beside-a-long-prefill benchmark (issue 31), against a running
// `qmlx serve`: a LONG_PROMPT-token request (max_tokens 1) is sent; with MODE "beside", a
// SHORT_PROMPT-token request streaming DECODE_TOKENS tokens follows DELAY_MS later. Reports the
// long prefill's throughput (prompt tokens over its wall time), and for the short request its
// time to first token and the gaps between its streamed tokens (median, p90, max) while the
// long one still prefills. Prompts are the pseudo-random id streams the other peer benchmarks
// use. Prints one JSON line.
//   node beside_prefill_qmlx.mjs BASE_URL MODE(alone|beside) LONG_PROMPT SHORT_PROMPT DECODE_TOKENS
//        [DELAY_MS=3000]
import {arrivalStats, promptOf, sseChunks} from "./prompt_streams.mjs";

const [base, mode, longArg, shortArg, decodeArg, delayArg] = process.argv.slice(2);
const longPrompt = Number(longArg), shortPrompt = Number(shortArg);
const decodeTokens = Number(decodeArg), delayMs = Number(delayArg ?? 3000);

async function post(prompt, maxTokens, stream) {
  const response = await fetch(`${base}/v1/completions`, {
    method: "POST",
    headers: {"content-type": "application/json", "authorization": "Bearer bench"},
    body: JSON.stringify({prompt, max_tokens: maxTokens, temperature: 0, stream}),
  });
  if (!response.ok) throw new Error(`HTTP ${response.status}: ${await response.text()}`);
  return response;
}

// The arrival time of every streamed chunk that carries text.
async function streamedTimes(prompt, maxTokens) {
  const response = await post(prompt, maxTokens, true);
  const times = [];
  for await (const {chunk, now} of sseChunks(response)) {
    if (chunk.choices?.[0]?.text) times.push(now);
  }
  return times;
}

const result = {engine: "qmlx", base, mode, long_prompt_tokens: longPrompt,
                short_prompt_tokens: shortPrompt, decode_tokens: decodeTokens};
const longSent = performance.now();
// Streamed, as agents do: a 24k-token cold prefill outlives fetch's 300 s header timeout,
// and a stream's headers (then keep-alives) come at once. It ends with its one token.
const long = post(promptOf(longPrompt, 99), 1, true).then(async (r) => {
  for await (const _ of sseChunks(r)) { /* read to the end */ }
  return performance.now();
});
if (mode === "beside") {
  await new Promise((r) => setTimeout(r, delayMs));  // the long prefill is under way
  const sent = performance.now();
  const times = await streamedTimes(promptOf(shortPrompt, 7), decodeTokens);
  const longEnd = await Promise.race([long, Promise.resolve(null)]);
  Object.assign(result, arrivalStats(sent, times));
  result.short_decoded_while_long_prefilled = longEnd === null;
}
const longEnd = await long;
result.long_ms = longEnd - longSent;
result.long_prefill_tokens_per_second = longPrompt / ((longEnd - longSent) / 1000);
console.log(JSON.stringify(result));
