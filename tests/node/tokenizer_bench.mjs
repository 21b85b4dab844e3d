// Tokenizer benchmark peer for bench/tokenizer/run.sh.
//   node tokenizer_bench.mjs docs OUT.json MEGABYTES   writes mixed-text documents
//   node tokenizer_bench.mjs run TOKENIZER_DIR DOCS.json  prints {"cold_mbps", "warm_mbps", ...}
// Documents are chat-like mixed text (benchDocument in tokenizer_corpus.mjs), ~1-20 kB each.
import fs from "node:fs";
import path from "node:path";
import { Tokenizer } from "@huggingface/tokenizers";
import { benchDocument, makeRng } from "./tokenizer_corpus.mjs";

function makeDocs(out, megabytes) {
  const rng = makeRng(11);
  const docs = [];
  let total = 0;
  while (total < megabytes * 1e6) {
    const doc = benchDocument(rng, 1000 + rng.int(20000));
    docs.push(doc);
    total += Buffer.byteLength(doc);
  }
  fs.writeFileSync(out, JSON.stringify(docs));
  console.error(`${docs.length} documents, ${(total / 1e6).toFixed(2)} MB -> ${out}`);
}

function run(dir, docsPath) {
  const read = (name) => JSON.parse(fs.readFileSync(path.join(dir, name), "utf8"));
  const docs = JSON.parse(fs.readFileSync(docsPath, "utf8"));
  const bytes = docs.reduce((n, d) => n + Buffer.byteLength(d), 0);
  // CPU time (user + system), like the C++ side: the machine may be shared.
  const cpuSeconds = () => {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1e6;
  };
  const t0 = cpuSeconds();
  const tokenizer = new Tokenizer(read("tokenizer.json"), read("tokenizer_config.json"));
  const loadMs = (cpuSeconds() - t0) * 1000;
  const pass = () => {
    const start = cpuSeconds();
    let tokens = 0;
    for (const d of docs) tokens += tokenizer.encode(d, { add_special_tokens: false }).ids.length;
    return { seconds: cpuSeconds() - start, tokens };
  };
  const cold = pass();
  const warm = pass();
  console.log(JSON.stringify({ bytes, tokens: cold.tokens, load_ms: loadMs,
    cold_mbps: bytes / 1e6 / cold.seconds, warm_mbps: bytes / 1e6 / warm.seconds }));
}

const [mode, a, b] = process.argv.slice(2);
if (mode === "docs") makeDocs(a, Number(b || 4));
else if (mode === "run") run(a, b);
else {
  console.error("usage: tokenizer_bench.mjs docs OUT.json MB | run TOKENIZER_DIR DOCS.json");
  process.exit(2);
}
