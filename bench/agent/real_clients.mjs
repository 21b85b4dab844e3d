// Real coding agents, turn by turn, with the prefix cache on and off: each client (pinned in
// tests/agents) runs headless against a fresh `qmlx serve` on loopback for a few turns (the
// first a shell-tool round trip, the rest --continue/resume follow-ups), and every request of
// the main conversation is printed with its server log line: prompt tokens, cached, prefill,
// TTFT. Side requests (titles, summaries) are listed apart. Clients, isolation and egress trap
// are the e2e tests' own (tests/e2e/agents).
// Usage: node real_clients.mjs --qmlx BIN [--model DIR] [--clients a,b] [--turns N]
//                               [--work DIR] [--agents NODE_MODULES] [--json FILE]
// Without --model each client gets the scripted fixture model that calls its own shell tool.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { fileURLToPath } from "node:url";

import { AFTER_TOOL_SCRIPT, CLIENTS } from "../../tests/e2e/agents/clients.mjs";
import {
  bodyText, logEntryOf, openClientSession, runClient,
} from "../../tests/e2e/agents/harness.mjs";

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
const { values: args } = parseArgs({ options: {
  qmlx: { type: "string", default: path.join(repo, "build", "bin", "qmlx") },
  model: { type: "string" },
  clients: { type: "string", default: Object.keys(CLIENTS).join(",") },
  turns: { type: "string", default: "3" },
  work: { type: "string", default: path.join(os.tmpdir(), "qmlx-real-clients") },
  agents: { type: "string", default: path.join(repo, "tests", "agents", "node_modules") },
  json: { type: "string" },
} });

const PROMPTS = ["Create out.txt in this folder with the shell.", "Thanks. Is the file still there?",
  "Good. Summarise what you did in one line.", "One more check, please.", "That is all, thanks."];
const turns = Math.min(Number(args.turns), PROMPTS.length);

async function runOne(name, cache) {
  const client = CLIENTS[name];
  const work = path.join(args.work, `${name}-cache-${cache ? "on" : "off"}`);
  const session = await openClientSession({ qmlx: args.qmlx, client, work, model: args.model,
    cache, afterTool: AFTER_TOOL_SCRIPT });
  const { home, project, server, recorder, trap, env } = session;
  const rows = [];
  try {
    for (let turn = 0; turn < turns; ++turn) {
      const before = recorder.exchanges.length;
      const run = await runClient([path.join(args.agents, ".bin", client.bin),
        ...client.turn(PROMPTS[turn], { resume: turn > 0, home })], { cwd: project, env,
        timeoutMs: 600000 });
      if (run.code !== 0) console.error(`${name} turn ${turn + 1}: exit ${run.code}`);
      let step = 0;
      for (const exchange of recorder.exchanges.slice(before)) {
        const entry = exchange.uid === null ? null : await logEntryOf(server, exchange);
        const main = bodyText(exchange).includes(PROMPTS[0]) && !!exchange.body?.tools;
        rows.push({ client: name, cache: cache ? "on" : "off", turn: turn + 1,
          request: main ? ++step : "side", status: exchange.status, path: exchange.path,
          prompt: entry?.prompt, cached: entry?.cached, prefill: entry?.prefill,
          ttft_ms: entry?.ttft_ms });
      }
    }
  } finally {
    await session.close();
  }
  if (trap.attempts.length) console.error(`${name}: tried to leave: ${trap.attempts.join("; ")}`);
  return rows;
}

const all = [];
for (const name of args.clients.split(",")) {
  for (const cache of [true, false]) all.push(...await runOne(name, cache));
}
const cell = (v) => (v === undefined || v === null ? "-" : String(v));
console.log("| client | cache | turn | request | prompt | cached | prefill | TTFT ms |");
console.log("|---|---|---|---|---|---|---|---|");
for (const r of all) {
  const status = r.status === 200 ? "" : ` (${r.status})`;
  console.log(`| ${r.client} | ${r.cache} | ${r.turn} | ${r.request}${status} | ${cell(r.prompt)} ` +
    `| ${cell(r.cached)} | ${cell(r.prefill)} | ${cell(r.ttft_ms)} |`);
}
if (args.json) fs.writeFileSync(args.json, JSON.stringify(all, null, 1));
