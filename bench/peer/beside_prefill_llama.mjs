// llama.cpp side of the decode-beside-a-long-prefill benchmark (issue 31), through
// node-llama-cpp's CPU build: one context with 2 sequences (llama-server's --parallel 2); one
// sequence prefills LONG_PROMPT ids; with MODE "beside", the other, DELAY_MS later, prefills
// SHORT_PROMPT ids and decodes DECODE_TOKENS greedily. node-llama-cpp's batch dispatcher puts
// both sequences' pending tokens into each llama_decode, cut into micro-batches of BATCH (its
// batchSize: llama.cpp's --ubatch-size decides the same trade). Prints one JSON line with
// beside_prefill_qmlx.mjs's fields.
//   node beside_prefill_llama.mjs MODEL.gguf MODE LONG_PROMPT SHORT_PROMPT DECODE_TOKENS
//        [threads=2] [DELAY_MS=3000] [BATCH=512]
import {getLlama} from "node-llama-cpp";
import {arrivalStats, promptOf} from "./prompt_streams.mjs";

const [modelPath, mode, longArg, shortArg, decodeArg, threadsArg, delayArg, batchArg] =
    process.argv.slice(2);
const longPrompt = Number(longArg), shortPrompt = Number(shortArg);
const decodeTokens = Number(decodeArg), threads = Number(threadsArg ?? 2);
const delayMs = Number(delayArg ?? 3000), batchSize = Number(batchArg ?? 512);

const llama = await getLlama({gpu: false, build: "never", logLevel: "error"});
const model = await llama.loadModel({modelPath, gpuLayers: 0});
const context = await model.createContext({
  contextSize: 2 * (Math.max(longPrompt, shortPrompt + decodeTokens) + 16),
  batchSize,
  threads,
  sequences: 2,
});

const result = {engine: "llama.cpp", model: modelPath, threads, batch_size: batchSize, mode,
                long_prompt_tokens: longPrompt, short_prompt_tokens: shortPrompt,
                decode_tokens: decodeTokens};
const long = context.getSequence(), short = context.getSequence();
const longSent = performance.now();
let longFinished = false;
const longDone = long.evaluateWithoutGeneratingNewTokens(promptOf(longPrompt, 99)).then(() => {
  longFinished = true;
  return performance.now();
});
if (mode === "beside") {
  await new Promise((r) => setTimeout(r, delayMs));
  const sent = performance.now();
  const times = [];
  for await (const token of short.evaluate(promptOf(shortPrompt, 7),
                                           {temperature: 0, yieldEogToken: true})) {
    void token;
    times.push(performance.now());
    if (times.length >= decodeTokens) break;
  }
  Object.assign(result, arrivalStats(sent, times));
  result.short_decoded_while_long_prefilled = !longFinished;
}
const longEnd = await longDone;
result.long_ms = longEnd - longSent;
result.long_prefill_tokens_per_second = longPrompt / ((longEnd - longSent) / 1000);
console.log(JSON.stringify(result));
await context.dispose();
await model.dispose();
