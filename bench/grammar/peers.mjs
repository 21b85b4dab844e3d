// The peers' side of the grammar mask bench: walks the token ids grammar_mask_bench wrote
// (walks.json: per schema, its instances as the tokenizer encodes them) with
//  - xgrammar's WebAssembly build (@mlc-ai/web-xgrammar): compileJSONSchema (compact: no
//    whitespace, "," and ":" separators, strict), then per token the matcher's mask and
//    acceptToken(). Timed two ways: the WebAssembly call that fills the mask (one crossing of
//    the JavaScript/WebAssembly boundary; the mask stays in WebAssembly memory), and the
//    package's getNextTokenBitmask(), which also copies the mask out into a JS Int32Array and
//    returns a promise (its tail is the JS garbage collector's: the slow positions differ from
//    pass to pass).
//  - llama.cpp's grammar sampler through node-llama-cpp: createGrammarForJsonSchema (its own
//    JSON Schema to GBNF converter), then per token the sampler with the grammar applied to
//    all candidates. node-llama-cpp samples first and checks only the picked token against the
//    grammar, applying it to every candidate only when the pick is refused; a bias on a token
//    the grammar never allows (raw byte 0x01) makes every call take that path, so the time is
//    the full mask's. Calls are asynchronous (a worker thread): the same call without a grammar
//    is timed at every position and subtracted; the difference still holds one extra fill of
//    the candidate array and one extra argmax. Needs a GGUF model carrying the same vocabulary
//    (vocab_gguf.py).
// Prints, per schema (or pooled group), compile ms and p50 / p99 / max microseconds per token;
// the first pass over each walk is not timed, as in grammar_mask_bench.
//   node peers.mjs WALKS.json [--gguf MODEL.gguf] [--repeats 3] [--engines xgrammar,llama.cpp]
import fs from "node:fs";
import { createRequire } from "node:module";
import { performance } from "node:perf_hooks";

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : fallback;
};
const walksFile = JSON.parse(fs.readFileSync(args[0], "utf8"));
const repeats = Number(option("--repeats", "3"));
const engines = option("--engines", "xgrammar,llama.cpp").split(",");
const gguf = option("--gguf", undefined);

// The vocabulary by id, in the tokenizer's byte-level spelling.
const tokenizer = JSON.parse(fs.readFileSync(walksFile.tokenizer, "utf8"));
const vocab = [];
for (const [text, id] of Object.entries(tokenizer.model.vocab)) vocab[id] = text;
for (const t of tokenizer.added_tokens) vocab[t.id] = t.content;
for (let i = 0; i < vocab.length; ++i) if (vocab[i] === undefined) vocab[i] = "";
const addedId = (content) => tokenizer.added_tokens.find((t) => t.content === content).id;
const stopIds = [addedId("<|im_end|>"), addedId("<|endoftext|>")];

function percentile(values, p) {
  const v = [...values].sort((a, b) => a - b);
  return v[Math.min(v.length - 1, Math.floor(p * v.length))];
}
const median = (v) => percentile(v, 0.5);

// Rows as grammar_mask_bench prints them: one per named case, one pooled per group.
class Table {
  constructor(engine) {
    this.engine = engine;
    this.rows = new Map();
    this.skipped = new Map();
    this.refusedWalks = 0;
  }
  row(group) {
    if (!this.rows.has(group))
      this.rows.set(group, { cases: 0, tokens: 0, compile: [], us: [], usApi: [] });
    return this.rows.get(group);
  }
  skip(reason) {
    this.skipped.set(reason, (this.skipped.get(reason) ?? 0) + 1);
  }
  print() {
    console.log(`\n${this.engine}`);
    const api = [...this.rows.values()].some((r) => r.usApi.length > 0);
    console.log("schema (group)            cases  tokens  compile ms  p50 us  p99 us   max us" +
      (api ? "  API p50  API p99  API max" : ""));
    const f = (x, w) => x.toFixed(1).padStart(w);
    for (const [group, r] of this.rows) {
      if (r.us.length === 0) continue;
      console.log(`${group.padEnd(24)} ${String(r.cases).padStart(6)} ${String(r.tokens).padStart(7)} ` +
        `${f(median(r.compile), 11)} ${f(percentile(r.us, 0.5), 7)} ${f(percentile(r.us, 0.99), 7)} ` +
        `${f(Math.max(...r.us), 8)}` + (api ? ` ${f(percentile(r.usApi, 0.5), 8)} ` +
        `${f(percentile(r.usApi, 0.99), 8)} ${f(Math.max(...r.usApi), 8)}` : ""));
    }
    if (this.baseline) console.log(`sampling without the grammar, subtracted: p50 ` +
      `${percentile(this.baseline, 0.5).toFixed(1)} us, p99 ${percentile(this.baseline, 0.99).toFixed(1)} us`);
    for (const [reason, n] of this.skipped) console.log(`skipped ${n} cases: ${reason}`);
    console.log(`walks refused by this engine's grammar (left out): ${this.refusedWalks}`);
  }
}

const allowedIn = (bitmask, id) => ((bitmask[id >>> 5] >>> (id & 31)) & 1) === 1;

async function runXgrammar() {
  // The package declares itself an ES module but ships a UMD bundle: loaded as a module it
  // exports nothing and sets globalThis.xgrammar, and its Emscripten loader, under Node, still
  // calls require() and reads __filename and __dirname: give it the CommonJS ones.
  const require = createRequire(import.meta.url);
  const entry = require.resolve("@mlc-ai/web-xgrammar");
  Object.assign(globalThis, { require, __filename: entry, __dirname: entry.replace(/\/[^/]*$/, "") });
  await import("@mlc-ai/web-xgrammar");
  const xg = globalThis.xgrammar;
  const table = new Table("xgrammar (WebAssembly, called from JavaScript)");
  const t0 = performance.now();
  const info = await xg.TokenizerInfo.createTokenizerInfo(vocab, "byte_level", false, vocab.length,
    stopIds);
  const compiler = await xg.GrammarCompiler.createGrammarCompiler(info, false);
  console.log(`xgrammar: vocabulary of ${info.getVocabSize()} ids loaded in ` +
    `${(performance.now() - t0).toFixed(0)} ms`);
  for (const c of walksFile.cases) {
    let compiled;
    const c0 = performance.now();
    try {
      compiled = await compiler.compileJSONSchema(JSON.stringify(c.schema), false, -1, [",", ":"],
        true);
    } catch (e) {
      table.skip(`not compiled (${String(e.message ?? e).split("\n")[0].slice(0, 80)})`);
      continue;
    }
    const compileMs = performance.now() - c0;
    const times = [], apiTimes = [];
    let tokens = 0;
    const size = info.getVocabSize();
    for (const ids of c.walks) {
      const walkTimes = [], walkApiTimes = [];
      let refused = false;
      for (let r = 0; r < repeats && !refused; ++r) {
        const matcher = await xg.GrammarMatcher.createGrammarMatcher(compiled);
        for (const id of ids) {
          const m0 = performance.now();
          const mask = matcher.handle.GetNextTokenBitmask(size);
          const m1 = performance.now();
          const allowed = ((mask.get(id >>> 5) >>> (id & 31)) & 1) === 1;
          mask.delete();
          const a0 = performance.now();
          const bitmask = await matcher.getNextTokenBitmask();
          const a1 = performance.now();
          if (r > 0 || repeats === 1) {
            walkTimes.push(1000 * (m1 - m0));
            walkApiTimes.push(1000 * (a1 - a0));
          }
          if (!allowed || !allowedIn(bitmask, id) || !matcher.acceptToken(id)) {
            refused = true;
            break;
          }
        }
        matcher.dispose();
      }
      if (refused) {
        ++table.refusedWalks;
        continue;
      }
      times.push(...walkTimes);
      apiTimes.push(...walkApiTimes);
      tokens += ids.length;
    }
    compiled.dispose();
    if (times.length === 0) {
      table.skip("no walk accepted");
      continue;
    }
    const row = table.row(c.group);
    ++row.cases;
    row.tokens += tokens;
    row.compile.push(compileMs);
    row.us.push(...times);
    row.usApi.push(...apiTimes);
  }
  compiler.dispose();
  info.dispose();
  return table;
}

async function runLlama() {
  const table = new Table("llama.cpp grammar sampler (node-llama-cpp 3.21.1, CPU build)");
  table.baseline = [];
  if (!gguf) {
    table.skip("no --gguf model given (vocab_gguf.py writes one)");
    return table;
  }
  const { getLlama, LlamaGrammarEvaluationState } = await import("node-llama-cpp");
  const llama = await getLlama({ gpu: false, logLevel: "error" });
  const model = await llama.loadModel({ modelPath: gguf });
  const context = await model.createContext({ contextSize: 256, threads: 1 });
  const sequence = context.getSequence();
  // One forward pass, so the context holds a row of logits to sample from.
  context._ctx.initBatch(1);
  const [logitIndex] = context._ctx.addToBatch(sequence._sequenceId, 0, Uint32Array.of(stopIds[1]),
    Uint32Array.of(0));
  await context._ctx.decodeBatch();
  // Raw byte 0x01 (byte-level "ā"), which no JSON grammar allows, made the unconstrained pick.
  const neverAllowed = tokenizer.model.vocab["\u0101"];
  const biased = { temperature: 0, tokenBiasKeys: Uint32Array.of(neverAllowed),
    tokenBiasValues: Float32Array.of(1e6) };
  const Sampler = llama._bindings.AddonSampler;
  const plain = new Sampler(model._model);
  plain.applyConfig(biased);
  console.log(`llama.cpp: ${gguf} loaded`);
  for (const c of walksFile.cases) {
    let grammar;
    const c0 = performance.now();
    try {
      grammar = await llama.createGrammarForJsonSchema(c.schema);
    } catch (e) {
      table.skip(`not compiled (${String(e.message ?? e).split("\n")[0].slice(0, 80)})`);
      continue;
    }
    const times = [];
    let tokens = 0;
    let compileMs;
    for (const ids of c.walks) {
      const walkTimes = [];
      let refused = false;
      for (let r = 0; r < repeats && !refused; ++r) {
        const state = new LlamaGrammarEvaluationState({ model, grammar });
        // The GBNF is parsed when the first evaluation state is made: part of compiling.
        if (compileMs === undefined) compileMs = performance.now() - c0;
        const constrained = new Sampler(model._model);
        for (const id of ids) {
          // Sampling accepts the picked token into the grammar: it samples on a copy, made
          // outside the timed call, and the walk's own token advances the state.
          const copy = new LlamaGrammarEvaluationState(state);
          constrained.applyConfig({ ...biased, grammarEvaluationState: copy._state });
          const b0 = performance.now();
          await context._ctx.sampleToken(logitIndex, plain);
          const m0 = performance.now();
          await context._ctx.sampleToken(logitIndex, constrained);
          const m1 = performance.now();
          if (r > 0 || repeats === 1) {
            walkTimes.push(1000 * (m1 - m0 - (m0 - b0)));
            table.baseline.push(1000 * (m0 - b0));
          }
          if (!Sampler.canBeNextTokenForGrammarEvaluationState(state._state, id)) {
            refused = true;
            break;
          }
          Sampler.acceptGrammarEvaluationStateToken(state._state, id);
        }
        constrained.dispose();
      }
      if (refused) {
        ++table.refusedWalks;
        continue;
      }
      times.push(...walkTimes);
      tokens += ids.length;
    }
    if (times.length === 0) {
      table.skip("no walk accepted");
      continue;
    }
    const row = table.row(c.group);
    ++row.cases;
    row.tokens += tokens;
    row.compile.push(compileMs);
    row.us.push(...times);
  }
  plain.dispose();
  await context.dispose();
  await model.dispose();
  return table;
}

const tables = [];
if (engines.includes("xgrammar")) tables.push(await runXgrammar());
if (engines.includes("llama.cpp")) tables.push(await runLlama());
for (const t of tables) t.print();
