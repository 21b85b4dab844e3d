// Tokenizer oracle: encodes the deterministic corpus with @huggingface/tokenizers (the
// JavaScript port of Hugging Face tokenizers) and writes what qmlx must reproduce.
// Usage: node tokenizer_oracle.mjs TOKENIZER_DIR OUT.json
// OUT.json: [{"text", "ids", "decoded", "nfc"}...]; decoded is the oracle's decode(ids),
// nfc the NFC form of text (what decode(encode(text)) returns under an NFC normalizer).
import fs from "node:fs";
import path from "node:path";
import { Tokenizer } from "@huggingface/tokenizers";
import { buildCorpus } from "./tokenizer_corpus.mjs";

const [dir, out] = process.argv.slice(2);
if (!dir || !out) {
  console.error("usage: node tokenizer_oracle.mjs TOKENIZER_DIR OUT.json");
  process.exit(2);
}
const read = (name) => JSON.parse(fs.readFileSync(path.join(dir, name), "utf8"));
const tokenizer = new Tokenizer(read("tokenizer.json"), read("tokenizer_config.json"));
const cases = buildCorpus().map((text) => {
  const ids = tokenizer.encode(text, { add_special_tokens: false }).ids;
  const decoded = ids.length ? tokenizer.decode(ids) : "";
  return { text, ids, decoded, nfc: text.normalize("NFC") };
});
fs.writeFileSync(out, JSON.stringify(cases));
console.log(`tokenizer oracle: ${cases.length} cases -> ${out}`);
