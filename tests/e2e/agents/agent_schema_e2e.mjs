// Codex `exec --output-schema` end to end (issue 28 item 7): the real Codex CLI, headless
// against `qmlx serve` on a scripted model, asked for a final answer that fits a JSON schema of
// the kind Codex users write (an object of required string, string array, enum and integer
// properties, additionalProperties false, as OpenAI's strict mode requires). The model is
// scripted to answer with JSON that does NOT fit the schema (a status outside the enum, and a
// word where the schema wants an integer), so only the grammar can make the answer valid:
//  1. control: the same prompt without --output-schema gives the script's invalid text, which
//     ajv rejects (so the check below can fail);
//  2. with --output-schema: Codex sends the schema as the Responses API's text.format
//     (json_schema, strict, name codex_output_schema), the server's log line for that request
//     says the reply was held to it (format=json_schema:...), and the final message Codex
//     writes (-o FILE) parses and is valid for the schema by ajv (an independent validator,
//     from tests/node/node_modules), the script's valid parts kept as they were;
//  3. nothing may leave the machine (the egress trap, as in agent_e2e.mjs).
// Both runs set model_reasoning_effort "none" (Codex sends reasoning.effort "none", the
// template closes the think block in the prompt): with reasoning on, the constraint forces the
// blank line after </think> as the tokenizer spells it, which is not the scripted model's own
// piece, and the scripted model, off its script, starts its script again inside the first free
// string and never closes it. A real model has no such trouble; the constraint's reasoning
// phase is tested in tests/server/reply_constraint_test.cpp.
// Usage: node agent_schema_e2e.mjs QMLX_BINARY WORK_DIR AGENTS_NODE_MODULES codex
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";

import { CLIENTS } from "./clients.mjs";
import { checkExchangesClean, logEntryOf, openClientSession, runClient } from "./harness.mjs";

const [qmlx, workRoot, nodeModules, name] = process.argv.slice(2);
const client = CLIENTS[name];
if (!client || name !== "codex") {
  console.error("usage: agent_schema_e2e.mjs QMLX WORK_DIR NODE_MODULES codex");
  process.exit(2);
}
// ajv is a test tool of tests/node (scripts/setup.sh installs it beside the agents).
const testTools = path.resolve(nodeModules, "..", "..", "node", "node_modules");
let Ajv;
try {
  Ajv = createRequire(path.join(testTools, "noop.js"))("ajv");
} catch {
  console.log(`SKIP: ajv is not installed in ${testTools} (run scripts/setup.sh)`);
  process.exit(77);
}

// Properties in the order the script writes them (the grammar writes them in schema order).
const SCHEMA = {
  type: "object",
  properties: {
    summary: { type: "string" },
    tags: { type: "array", items: { type: "string" } },
    status: { type: "string", enum: ["done", "blocked", "needs_review"] },
    files_changed: { type: "integer", minimum: 0, maximum: 99 },
  },
  required: ["summary", "tags", "status", "files_changed"],
  additionalProperties: false,
};
const PROMPT = "Summarise what you changed, as JSON.";
// The script's answer, invalid for SCHEMA twice over: a status outside the enum, and a word
// where files_changed must be an integer. Both are in bounded places (an enum, a bounded
// integer, then the object's end): a scripted model pushed off its script inside a free string
// would never find the closing quote.
const SUMMARY = "Fixed the parser", TAGS = ["bug", "parser"];
const ANSWER = `{"summary":${JSON.stringify(SUMMARY)},"tags":${JSON.stringify(TAGS)},` +
  '"status":"finished","files_changed":"two"}';
const work = path.join(workRoot, `${name}-schema`);
const TURN_TIMEOUT_MS = 120000;

let failures = 0;
const check = (ok, what, detail = "") => {
  console.log(`${ok ? "ok  " : "FAIL"} ${name} schema: ${what}${ok || !detail ? "" : `: ${detail}`}`);
  if (!ok) ++failures;
};

const ajv = new Ajv({ strict: true, allErrors: true });
const validate = ajv.compile(SCHEMA);
// What ajv makes of a final message: { json, valid, why }.
function judge(text) {
  let value;
  try {
    value = JSON.parse(text);
  } catch (e) {
    return { json: false, valid: false, why: `not JSON (${e.message})` };
  }
  const valid = validate(value);
  return { json: true, valid, why: valid ? "" : ajv.errorsText(validate.errors) };
}

fs.rmSync(work, { recursive: true, force: true });
const model = path.join(workRoot, `${name}-schema-model`, "model");  // openClientSession empties work
fs.mkdirSync(path.dirname(model), { recursive: true });
fs.writeFileSync(`${model}.script.txt`, ANSWER);
execFileSync(qmlx, ["make-model", "--out", model, "--arch", "qwen3_5", "--script",
  `${model}.script.txt`], { stdio: ["ignore", "ignore", "inherit"] });
const session = await openClientSession({ qmlx, client, work, model });
const { project, server, recorder, trap, env } = session;
const bin = path.join(nodeModules, ".bin", client.bin);
const schemaFile = path.join(work, "schema.json");
fs.writeFileSync(schemaFile, JSON.stringify(SCHEMA, null, 2) + "\n");

const dump = (label, run) => {
  const file = path.join(work, `${label}.out`);
  fs.writeFileSync(file, `exit ${run.code} signal ${run.signal} after ${run.seconds}s\n` +
    `--- stdout\n${run.stdout}\n--- stderr\n${run.stderr}\n`);
  return file;
};
// One fresh `codex exec`, its last message written to LABEL.last.txt; resolves with the run,
// the message and the requests it made.
async function turn(label, extra) {
  const lastFile = path.join(work, `${label}.last.txt`);
  const before = recorder.exchanges.length;
  const run = await runClient([bin, "exec", "--skip-git-repo-check", "--json",
    "--dangerously-bypass-approvals-and-sandbox", "-c", 'model_reasoning_effort="none"',
    "-o", lastFile, ...extra, PROMPT],
  { cwd: project, env, timeoutMs: TURN_TIMEOUT_MS });
  const out = dump(label, run);
  const last = fs.existsSync(lastFile) ? fs.readFileSync(lastFile, "utf8") : null;
  return { run, out, last, requests: recorder.exchanges.slice(before) };
}

try {
  // 1. Control: no schema, so the script's text comes back as it is, and ajv refuses it.
  const control = await turn("control", []);
  check(control.run.code === 0, `control run exits 0 (${control.run.seconds.toFixed(1)} s)`,
    `see ${control.out}`);
  check(control.last !== null && control.last.trim() === ANSWER,
    "without --output-schema the final message is the script's text", `got ${control.last}`);
  const controlJudged = judge(control.last?.trim() ?? "");
  check(!controlJudged.valid, `ajv rejects it (${controlJudged.why})`);
  const controlFormats = control.requests.filter((e) => e.body?.text?.format);
  check(controlFormats.every((e) => e.body.text.format.type === "text"),
    "the control requests ask for no JSON format",
    controlFormats.map((e) => JSON.stringify(e.body.text.format)).join("; "));
  const controlEntry = control.requests.length
    ? await logEntryOf(server, control.requests.at(-1)) : null;
  check(controlEntry !== null && !/\bformat=/.test(controlEntry.line),
    "the control request's log line names no format", controlEntry?.line ?? "no log line");

  // 2. With --output-schema: the grammar holds the reply to the schema.
  const held = await turn("schema", ["--output-schema", schemaFile]);
  check(held.run.code === 0, `--output-schema run exits 0 (${held.run.seconds.toFixed(1)} s)`,
    `see ${held.out}`);
  const asked = held.requests.filter((e) => e.body?.text?.format?.type === "json_schema");
  check(asked.length >= 1 && asked.every((e) => e.status === 200),
    `Codex sent the schema as text.format json_schema (${asked.length} requests)`,
    held.requests.map((e) => `${e.method} ${e.path} -> ${e.status}`).join("; "));
  const request = asked.at(-1);
  if (request) {
    const { schema, ...rest } = request.body.text.format;
    console.log(`     Codex's text.format: ${JSON.stringify(rest)}, schema ` +
      `${JSON.stringify(schema) === JSON.stringify(SCHEMA) ? "as written" : JSON.stringify(schema)}`);
    console.log(`     request: POST ${request.path}, stream ${request.body.stream}, fields ` +
      Object.keys(request.body).sort().join(","));
    check(JSON.stringify(schema) === JSON.stringify(SCHEMA) && rest.strict === true,
      "the schema arrives as written, with strict: true", JSON.stringify(request.body.text));
  }
  const entry = request ? await logEntryOf(server, request) : null;
  check(entry !== null && /\bformat=json_schema\b/.test(entry.line),
    "the server's log line says the reply was held to the schema (format=json_schema)",
    entry?.line ?? `no log line for uid ${request?.uid}`);
  if (entry) console.log(`     ${entry.line}`);
  check(held.last !== null, "Codex wrote its last message", `see ${held.out}`);
  const heldJudged = judge(held.last ?? "");
  check(heldJudged.json, "the final message parses as JSON", `${heldJudged.why}: ${held.last}`);
  check(heldJudged.valid, `ajv: the final message is valid for the schema: ${held.last}`,
    heldJudged.why);
  if (heldJudged.valid) {
    const value = JSON.parse(held.last);
    check(value.summary === SUMMARY && JSON.stringify(value.tags) === JSON.stringify(TAGS),
      "the script's valid parts come through as written (summary, tags)", held.last);
  }

  checkExchangesClean(check, recorder, trap);
} finally {
  fs.writeFileSync(path.join(work, "requests.json"), JSON.stringify(recorder.exchanges, null, 1));
  await session.close();
}
process.exit(failures ? 1 : 0);
