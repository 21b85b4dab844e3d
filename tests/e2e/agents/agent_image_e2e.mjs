// A real coding agent sends a screenshot (issue 29 item 6), headless against `qmlx serve` on a
// scripted model with a vision tower (make-model --vision):
//   claude: the model calls Claude Code's Read tool on a PNG in the work folder; Claude Code sends
//           the image back inside the tool result (an Anthropic image block), and the model's
//           answer to that request is the final one;
//   codex:  `codex exec -i screen.png` attaches the image to the prompt (a Responses
//           input_image item).
// Then a second turn with the client's continue/resume: its first request carries the image in
// its history and must HIT the cache past the image, the image not encoded again. Nothing may
// leave the machine (the egress trap, as in agent_e2e.mjs).
// Usage: node agent_image_e2e.mjs QMLX_BINARY WORK_DIR AGENTS_NODE_MODULES CLIENT
import fs from "node:fs";
import path from "node:path";
import zlib from "node:zlib";

import { CLIENTS } from "./clients.mjs";
import {
  bodyText, checkExchangesClean, logEntryOf, makeScriptedModel, openClientSession, runClient,
} from "./harness.mjs";

const [qmlx, workRoot, nodeModules, name] = process.argv.slice(2);
const client = CLIENTS[name];
if (!client || !["claude", "codex"].includes(name)) {
  console.error("usage: agent_image_e2e.mjs QMLX WORK_DIR NODE_MODULES {claude,codex}");
  process.exit(2);
}
const IMAGE_NAME = "screen.png";
const ANSWER = "The screenshot shows a test pattern.";
const PROMPT_1 = `Look at ${IMAGE_NAME} and tell me what it shows.`;
const PROMPT_2 = "Thanks. What colour dominates it?";
const AFTER = `I looked at the image.\n</think>\n\n${ANSWER}`;
const work = path.join(workRoot, `${name}-image`);

// An RGB PNG of deterministic noise (a 160 x 96 "screenshot"), written with zlib alone.
function png(width, height) {
  const crcTable = Array.from({ length: 256 }, (_, n) => {
    let c = n;
    for (let k = 0; k < 8; ++k) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c >>> 0;
  });
  const crc = (buf) => {
    let c = 0xffffffff;
    for (const b of buf) c = crcTable[(c ^ b) & 0xff] ^ (c >>> 8);
    return (c ^ 0xffffffff) >>> 0;
  };
  const chunk = (kind, data) => {
    const body = Buffer.concat([Buffer.from(kind), data]);
    const out = Buffer.alloc(body.length + 8);
    out.writeUInt32BE(data.length, 0);
    body.copy(out, 4);
    out.writeUInt32BE(crc(body), body.length + 4);
    return out;
  };
  const raw = Buffer.alloc((width * 3 + 1) * height);
  let state = 12345;
  for (let y = 0; y < height; ++y) {
    for (let x = 0; x < width * 3; ++x) {
      state = (state * 1103515245 + 12345) & 0x7fffffff;
      raw[y * (width * 3 + 1) + 1 + x] = state >> 23;
    }
  }
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([8, 2, 0, 0, 0], 8);
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", header), chunk("IDAT", zlib.deflateSync(raw)), chunk("IEND", Buffer.alloc(0))]);
}

let failures = 0;
const check = (ok, what, detail = "") => {
  console.log(`${ok ? "ok  " : "FAIL"} ${name} image: ${what}${ok || !detail ? "" : `: ${detail}`}`);
  if (!ok) ++failures;
};

fs.rmSync(work, { recursive: true, force: true });
const model = path.join(workRoot, `${name}-image-model`, "model");  // openClientSession empties work
const imagePath = path.join(work, "project", IMAGE_NAME);
// Claude Code: the model reads the image with the Read tool, then answers. Codex: the image comes
// with the prompt, and the model answers at once.
const script = name === "claude"
  ? `I will look at the image with the Read tool.\n</think>\n\n<tool_call>\n<function=Read>\n` +
    `<parameter=file_path>\n${imagePath}\n</parameter>\n</function>\n</tool_call>`
  : AFTER;
makeScriptedModel(qmlx, model, script, AFTER, ["--vision"]);
const session = await openClientSession({ qmlx, client, work, model });
const { project, server, recorder, trap, env } = session;
fs.writeFileSync(imagePath, png(160, 96));
const bin = path.join(nodeModules, ".bin", client.bin);

const turnArgs = (prompt, resume) => name === "claude"
  ? [...(resume ? ["--continue"] : []), "-p", prompt, "--output-format", "stream-json",
    "--verbose", "--allowedTools", "Read"]
  : ["exec", ...(resume ? ["resume", "--last"] : []), "--skip-git-repo-check", "--json",
    "--dangerously-bypass-approvals-and-sandbox", prompt,
    // After the prompt: -i takes every value that follows it.
    ...(resume ? [] : ["-i", IMAGE_NAME])];
const carriesImage = (e) =>
  /"type":"image"|"type":"input_image"|"type":"image_url"/.test(bodyText(e));
const dump = (label, run) => {
  const file = path.join(work, `${label}.out`);
  fs.writeFileSync(file, `exit ${run.code} after ${run.seconds}s\n--- stdout\n${run.stdout}\n` +
    `--- stderr\n${run.stderr}\n`);
  return file;
};

try {
  const turn1 = await runClient([bin, ...turnArgs(PROMPT_1, false)],
    { cwd: project, env, timeoutMs: 180000 });
  const out1 = dump("turn1", turn1);
  check(turn1.code === 0, `turn 1 exits 0 (${turn1.seconds.toFixed(1)} s)`, `see ${out1}`);
  check(turn1.stdout.includes(ANSWER), "turn 1 prints the model's answer", `see ${out1}`);
  const withImage = recorder.exchanges.filter((e) => e.status === 200 && carriesImage(e));
  check(withImage.length >= 1, `the client sent the image (${withImage.length} requests)`);
  if (name === "claude") {
    check(withImage.some((e) => /"type":"tool_result"/.test(bodyText(e))),
      "the image came back inside the Read tool's result");
  }
  const last1 = withImage.at(-1);
  const entry1 = last1 ? await logEntryOf(server, last1) : null;
  check(entry1 && /\bimages=1\b/.test(entry1.line), "its log line counts the image",
    entry1?.line ?? "no log line");

  const before = recorder.exchanges.length;
  const turn2 = await runClient([bin, ...turnArgs(PROMPT_2, true)],
    { cwd: project, env, timeoutMs: 180000 });
  const out2 = dump("turn2", turn2);
  check(turn2.code === 0, `turn 2 exits 0 (${turn2.seconds.toFixed(1)} s)`, `see ${out2}`);
  const first2 = recorder.exchanges.slice(before).find((e) => e.status === 200 &&
    bodyText(e).includes(PROMPT_2));
  check(first2 && carriesImage(first2), "turn 2 resends the image in its history");
  const entry2 = first2 ? await logEntryOf(server, first2) : null;
  check(entry2 && entry2.hit && /\bimages_encoded=0\b/.test(entry2.line) &&
    entry2.prefill < entry2.prompt / 2,
  `turn 2 HITs past the image without encoding it again (cached ${entry2?.cached}, ` +
    `prefill ${entry2?.prefill} of ${entry2?.prompt})`, entry2?.line ?? "no log line");
  checkExchangesClean(check, recorder, trap);
} finally {
  fs.writeFileSync(path.join(work, "requests.json"), JSON.stringify(recorder.exchanges, null, 1));
  await session.close();
}
process.exit(failures ? 1 : 0);
