// llama.cpp side of the peer benchmark, through node-llama-cpp's CPU build: loads a GGUF file,
// prefills PROMPT_TOKENS pseudo-random token ids, then decodes DECODE_TOKENS greedily, and
// prints one JSON line with the same fields as qmlx_engine_bench.
//   node llama_bench.mjs MODEL.gguf PROMPT_TOKENS DECODE_TOKENS [threads=2] [KV_TYPE]
// KV_TYPE: llama.cpp's K and V cache type (F16, Q8_0: llama-cli's --cache-type-k/-v); a quantized
// V cache needs flash attention, so giving KV_TYPE switches it on (for F16 too, to compare like
// with like). Without it, llama.cpp's defaults.
import {getLlama} from "node-llama-cpp";

const [modelPath, promptArg, decodeArg, threadsArg, kvType] = process.argv.slice(2);
const promptTokens = Number(promptArg), decodeTokens = Number(decodeArg);
const threads = Number(threadsArg ?? 2);

const llama = await getLlama({gpu: false, build: "never", logLevel: "error"});
const model = await llama.loadModel({modelPath, gpuLayers: 0});
const context = await model.createContext({
  contextSize: promptTokens + decodeTokens + 16,
  batchSize: Math.min(promptTokens, 512),
  threads,
  sequences: 1,
  ...(kvType ? {experimentalKvCacheKeyType: kvType, experimentalKvCacheValueType: kvType,
                flashAttention: true} : {}),
});
const sequence = context.getSequence();

// Ids below 1000 are ordinary tokens, as in qmlx_engine_bench. Decode goes on through end-of-
// generation tokens, as qmlx_engine_bench does.
let seed = 1;
const prompt = Array.from({length: promptTokens}, () => {
  seed = (seed * 1103515245 + 12345) % 2147483648;
  return seed % 1000;
});

let start = performance.now();
await sequence.evaluateWithoutGeneratingNewTokens(prompt);
const prefillSeconds = (performance.now() - start) / 1000;

start = performance.now();
let decoded = 0;
if (decodeTokens > 0) {
  for await (const token of sequence.evaluate([prompt.at(-1)], {temperature: 0, yieldEogToken: true})) {
    void token;
    if (++decoded >= decodeTokens) break;
  }
}
const decodeSeconds = (performance.now() - start) / 1000;

console.log(JSON.stringify({
  engine: "llama.cpp",
  model: modelPath,
  threads,
  kv_cache_type: kvType ?? "default",
  prefill_tokens: promptTokens,
  prefill_tokens_per_second: promptTokens / prefillSeconds,
  decode_tokens: decoded,
  decode_tokens_per_second: decoded > 0 ? decoded / decodeSeconds : null,
  peak_rss_bytes: process.resourceUsage().maxRSS * 1024,
}));
await context.dispose();
await model.dispose();
