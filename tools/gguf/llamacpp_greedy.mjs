// Loads GGUF files with llama.cpp (npm node-llama-cpp@3.21.1, CPU) and prints greedy tokens for
// the prompt "Hello world, hello", to compare with `qmlx generate --model FILE.gguf --tokens ...`.
//   cd /tmp/nlc && npm i node-llama-cpp@3.21.1 && cp THIS . && node llamacpp_greedy.mjs A.gguf B.gguf
import {getLlama, LlamaLogLevel} from "node-llama-cpp";
const llama = await getLlama({gpu: false, logLevel: LlamaLogLevel.warn});
for (const path of process.argv.slice(2)) {
  try {
    const model = await llama.loadModel({modelPath: path});
    const ctx = await model.createContext({contextSize: 256, threads: 2});
    const seq = ctx.getSequence();
    const tokens = model.tokenize("Hello world, hello");
    const out = [];
    for await (const t of seq.evaluate(tokens, {temperature: 0})) { out.push(t); if (out.length >= 8) break; }
    console.log(JSON.stringify({path, ok: true, prompt: Array.from(tokens), greedy: out}));
    await ctx.dispose(); await model.dispose();
  } catch (e) { console.log(JSON.stringify({path, ok: false, error: String(e)})); }
}
