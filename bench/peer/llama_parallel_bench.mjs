// llama.cpp side of the concurrency benchmark (issue 18), through node-llama-cpp's CPU build:
// one context with N sequences (llama-server's --parallel N), each prefilled with its own
// PROMPT_TOKENS pseudo-random ids, then all N decode DECODE_TOKENS greedily at the same time;
// node-llama-cpp's batch dispatcher puts the sequences' next tokens into one llama_decode per
// step. Prints one JSON line: aggregate decode tokens/s, and, when LONG_PROMPT > 0, the time to
// first token of a short request (PROMPT_TOKENS) sent while another sequence prefills LONG_PROMPT.
//   node llama_parallel_bench.mjs MODEL.gguf SEQUENCES PROMPT_TOKENS DECODE_TOKENS [threads=2]
//        [LONG_PROMPT=0]
import {getLlama} from "node-llama-cpp";
import {promptOf} from "./prompt_streams.mjs";

const [modelPath, sequencesArg, promptArg, decodeArg, threadsArg, longArg] = process.argv.slice(2);
const sequences = Number(sequencesArg), promptTokens = Number(promptArg);
const decodeTokens = Number(decodeArg), threads = Number(threadsArg ?? 2);
const longPrompt = Number(longArg ?? 0);

const llama = await getLlama({gpu: false, build: "never", logLevel: "error"});
const model = await llama.loadModel({modelPath, gpuLayers: 0});
const perSequence = Math.max(promptTokens + decodeTokens, longPrompt) + 16;
const context = await model.createContext({
  contextSize: perSequence * Math.max(sequences, longPrompt > 0 ? 2 : 1),
  batchSize: 512,
  threads,
  sequences: Math.max(sequences, longPrompt > 0 ? 2 : 1),
});

async function decode(sequence, prompt, tokens, onFirst) {
  let n = 0;
  for await (const token of sequence.evaluate(prompt, {temperature: 0, yieldEogToken: true})) {
    void token;
    if (n++ === 0 && onFirst) onFirst();
    if (n >= tokens) break;
  }
  return n;
}

const result = {engine: "llama.cpp", model: modelPath, threads, sequences,
                prompt_tokens: promptTokens, decode_tokens: decodeTokens};
if (sequences > 0) {
  const seqs = Array.from({length: sequences}, () => context.getSequence());
  const prompts = seqs.map((_, i) => promptOf(promptTokens, i + 1));
  // Prefill everything first, so the timed part is decode only.
  await Promise.all(seqs.map((s, i) => s.evaluateWithoutGeneratingNewTokens(prompts[i])));
  const start = performance.now();
  const counts = await Promise.all(seqs.map((s, i) => decode(s, [prompts[i].at(-1)], decodeTokens)));
  const seconds = (performance.now() - start) / 1000;
  const total = counts.reduce((a, b) => a + b, 0);
  result.aggregate_decode_tokens_per_second = total / seconds;
  for (const s of seqs) s.dispose();
}
if (longPrompt > 0) {
  const long = context.getSequence(), short = context.getSequence();
  const start = performance.now();
  const longDone = long.evaluateWithoutGeneratingNewTokens(promptOf(longPrompt, 99))
      .then(() => performance.now() - start);
  await new Promise((r) => setTimeout(r, 1000));  // the long prefill is under way
  const sent = performance.now();
  let firstToken = null;
  await decode(short, promptOf(promptTokens, 7), 1, () => { firstToken = performance.now() - sent; });
  result.long_prompt_tokens = longPrompt;
  result.short_ttft_ms_during_long_prefill = firstToken;
  result.long_prefill_ms = await longDone;
}
result.peak_rss_bytes = process.resourceUsage().maxRSS * 1024;
console.log(JSON.stringify(result));
await context.dispose();
await model.dispose();
