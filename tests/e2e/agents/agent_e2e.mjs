// One real coding agent, headless, against `qmlx serve` on loopback (label e2e):
//  1. a one-shot prompt, streamed, on a scripted model that calls the client's own shell tool:
//     the client must run it (the file it writes exists) and send the result back (a later
//     request carries a tool result), and the model's answer to that request is the final one;
//  2. a second turn with the client's continue/resume: its first request must HIT the cache and
//     prefill at most 5% more than the tokens it added to the conversation's last prompt (or,
//     where the template drops old reasoning, than its new user turn alone);
//  3. nothing may leave the machine: the client runs with an egress trap as its proxy, and any
//     connection it tries to make to a non-loopback host fails the test.
// With DEVICE (e.g. vulkan) the server runs with --device DEVICE, and its start-up log must say
// the forward pass runs there; where `qmlx devices --device DEVICE` finds no such device, the
// test skips (77).
// Usage: node agent_e2e.mjs QMLX_BINARY WORK_DIR AGENTS_NODE_MODULES CLIENT [DEVICE]
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

import { AFTER_TOOL_SCRIPT, CLIENTS, FILE_NAME, FILE_TEXT, FINAL_ANSWER } from "./clients.mjs";
import {
  bodyText, chatPromptIds, checkExchangesClean, lastUserText, logEntryOf, openClientSession,
  runClient, userTurnTokens,
} from "./harness.mjs";

const [qmlx, workRoot, nodeModules, name, device] = process.argv.slice(2);
const client = CLIENTS[name];
if (!client) {
  console.error(`usage: agent_e2e.mjs QMLX WORK_DIR NODE_MODULES {${Object.keys(CLIENTS)}}`);
  process.exit(2);
}
const PROMPT_1 = "Create out.txt in this folder with the shell.";
const PROMPT_2 = "Thanks. Is the file still there?";
const PREFILL_MARGIN = 1.05;
// Where a client rewrote its own history, the resume point may lie this far before the edit
// (a checkpoint sits where a reminder block starts; the edit may be one block further on).
const EDIT_SLACK_TOKENS = 512;

// Whether the client changed a user or system message it had sent before (not the template's
// own rewriting of old assistant turns, which the cache's canonical history covers).
function clientEditedItsMessages(before, after) {
  const a = before?.messages, b = after?.messages;
  if (!Array.isArray(a) || !Array.isArray(b)) return false;
  return a.some((m, i) => (m.role === "user" || m.role === "system") &&
    JSON.stringify(m) !== JSON.stringify(b[i]));
}

const work = path.join(workRoot, device ? `${name}-${device}` : name);
// A turn's time limit: lavapipe, the CI's Vulkan device, prefills the scripted model some 50
// times slower than the CPU (its fma is emulated), so a cold turn there takes minutes.
const turnTimeoutMs = device ? 300000 : 120000;
if (device) {
  try {
    execFileSync(qmlx, ["devices", "--device", device], { stdio: ["ignore", "ignore", "pipe"] });
  } catch (e) {
    console.log(`SKIP: no ${device} device here: ${String(e.stderr ?? e).trim()}`);
    process.exit(77);
  }
}

let failures = 0;
const check = (ok, what, detail = "") => {
  console.log(`${ok ? "ok  " : "FAIL"} ${name}: ${what}${ok || !detail ? "" : `: ${detail}`}`);
  if (!ok) ++failures;
};

// A request of the main conversation carries the user's prompt; a tool result makes it the
// follow-up of a tool call in any of the three API shapes.
const carries = (exchange, text) => bodyText(exchange).includes(text);
const succeeded = (exchange) => exchange.status === 200;
const carriesToolResult = (exchange) =>
  /"role":"tool"|"type":"tool_result"|"type":"function_call_output"/.test(bodyText(exchange));

const session = await openClientSession({ qmlx, client, work, afterTool: AFTER_TOOL_SCRIPT,
  extraArgs: device ? ["--device", device] : [] });
const { home, project, server, recorder, trap, env } = session;
const bin = path.join(nodeModules, ".bin", client.bin);

function dump(label, run) {
  const file = path.join(work, `${label}.out`);
  fs.writeFileSync(file, `exit ${run.code} signal ${run.signal} after ${run.seconds}s\n` +
    `--- stdout\n${run.stdout}\n--- stderr\n${run.stderr}\n`);
  return file;
}

try {
  // Turn 1: prompt -> tool call -> the client runs it -> tool result -> final answer.
  const turn1 = await runClient([bin, ...client.turn(PROMPT_1, { resume: false, home })],
    { cwd: project, env, timeoutMs: turnTimeoutMs });
  const out1 = dump("turn1", turn1);
  check(turn1.code === 0, `turn 1 exits 0 (${turn1.seconds.toFixed(1)} s)`, `see ${out1}`);
  check(turn1.stdout.includes(FINAL_ANSWER), "turn 1 prints the model's final answer",
    `see ${out1}`);
  const written = path.join(project, FILE_NAME);
  check(fs.existsSync(written) && fs.readFileSync(written, "utf8").trim() === FILE_TEXT,
    `the client ran the shell tool (${FILE_NAME} holds ${FILE_TEXT})`);
  // Rejected requests fail the last checks; these follow the conversation as it went on.
  const main1 = recorder.exchanges.filter((e) => carries(e, PROMPT_1) && e.body?.tools &&
    succeeded(e));
  const followUp = main1.filter(carriesToolResult);
  check(main1.length >= 2 && followUp.length >= 1,
    "turn 1 sends its prompt, then the tool result in a later request",
    `${main1.length} requests with the prompt, ${followUp.length} with a tool result`);
  check(main1.length > 0 && main1.every((e) => e.body.stream === true &&
    e.contentType.startsWith("text/event-stream") && e.events > 2),
  "turn 1 streams (stream: true, text/event-stream, several events)",
  main1.map((e) => `${e.path} stream=${e.body.stream} ${e.contentType} events=${e.events}`)
    .join("; "));

  // Turn 2: the client's continue/resume; the conversation so far must stay warm.
  const before = recorder.exchanges.length;
  const turn2 = await runClient([bin, ...client.turn(PROMPT_2, { resume: true, home })],
    { cwd: project, env, timeoutMs: turnTimeoutMs });
  const out2 = dump("turn2", turn2);
  check(turn2.code === 0, `turn 2 exits 0 (${turn2.seconds.toFixed(1)} s)`, `see ${out2}`);
  const first2 = recorder.exchanges.slice(before).find((e) => carries(e, PROMPT_2) &&
    succeeded(e));
  check(first2 && carries(first2, PROMPT_1) && carriesToolResult(first2),
    "turn 2 resends the first turn (prompt and tool result) with its new prompt");
  const previous = followUp.at(-1);
  const [entry2, entry1] = first2 && previous
    ? [await logEntryOf(server, first2), await logEntryOf(server, previous)] : [null, null];
  if (entry1 && entry2) {
    // New tokens: what the prompt grew by, or, where the template rewrites history (Qwen drops
    // the reasoning of turns before the last user message), the new user turn on its own.
    const grown = entry2.prompt - entry1.prompt;
    const userTurn = await userTurnTokens(server, lastUserText(first2.body) ?? "");
    // A client that edits its own history (Qwen Code drops its date reminder from the first
    // message on replay) makes everything after the edit new: a recurrent state cannot skip
    // it. Then the cache must resume near the edit (an edit_point checkpoint before the
    // reminder block); without edit points it falls back to the last 4,096-token checkpoint.
    const ids1 = await chatPromptIds(server, previous.body);
    const ids2 = await chatPromptIds(server, first2.body);
    let common = -1;
    if (ids1 && ids2) {
      common = 0;
      while (common < ids1.length && common < ids2.length && ids1[common] === ids2[common]) ++common;
    }
    const edited = common >= 0 && clientEditedItsMessages(previous.body, first2.body);
    if (edited) {
      check(entry2.hit && entry2.cached >= common - EDIT_SLACK_TOKENS,
        `turn 2 HITs within ${EDIT_SLACK_TOKENS} tokens of the client's own edit of its history ` +
        `(the prompts differ from token ${common}; cached ${entry2.cached}, prefill ` +
        `${entry2.prefill}, of which ${entry2.prompt - common} follow the edit)`, entry2.line);
    } else {
      const added = Math.max(grown, userTurn);
      check(entry2.hit && entry2.prefill <= PREFILL_MARGIN * added,
        `turn 2 HITs and prefills at most the new tokens + 5% (prompt ${entry1.prompt} -> ` +
        `${entry2.prompt}, new ${added} = max(grown ${grown}, user turn ${userTurn}), cached ` +
        `${entry2.cached}, prefill ${entry2.prefill})`, entry2.line);
    }
  } else {
    check(false, "turn 2's request and the previous one have log lines",
      `uids ${previous?.uid} and ${first2?.uid}`);
  }

  if (device) {
    const log = fs.readFileSync(server.logPath, "utf8");
    check(new RegExp(`forward pass on ${device}`).test(log), `the forward pass runs on ${device}`,
      log.split("\n").find((l) => l.includes("forward pass")) ?? "no such log line");
  }
  checkExchangesClean(check, recorder, trap);
} finally {
  fs.writeFileSync(path.join(work, "requests.json"), JSON.stringify(recorder.exchanges, null, 1));
  await session.close();
}
process.exit(failures ? 1 : 0);
