// What the agent e2e tests and bench/agent/real_clients.sh share: a scripted model per client,
// `qmlx serve` on loopback with its log lines parsed, a recording reverse proxy between the
// client and the server (so a test sees every request body and the uid that answered it), an
// egress trap (an HTTP(S) proxy that records and refuses every connection a client tries to
// make to anything but the loopback server), and a client run with a throwaway HOME.
import { spawn, execFileSync } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import net from "node:net";
import path from "node:path";

// `qmlx make-model --script` with the client's tool call as the main script and a final answer
// for every prompt that carries a tool result (`extraArgs`: more make-model flags, --vision).
export function makeScriptedModel(qmlx, dir, script, afterTool, extraArgs = []) {
  fs.mkdirSync(path.dirname(dir), { recursive: true });
  fs.writeFileSync(`${dir}.script.txt`, script);
  fs.writeFileSync(`${dir}.after-tool.txt`, afterTool);
  execFileSync(qmlx, ["make-model", "--out", dir, "--arch", "qwen3_5", "--script",
    `${dir}.script.txt`, "--script-after-tool", `${dir}.after-tool.txt`, ...extraArgs],
  { stdio: ["ignore", "ignore", "inherit"] });
}

async function freePort() {
  const probe = net.createServer();
  const port = await listen(probe);
  await new Promise((r) => probe.close(r));
  return port;
}

function listen(server) {
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server.address().port)));
}

// One request log line: `uid=<n> HIT|MISS cached=<c> prefill=<p> ... ttft=<t>ms prompt=<n> ...`.
export function parseLogLine(line) {
  const m = line.match(/\buid=(\d+) (HIT|MISS) cached=(\d+) prefill=(\d+)/);
  if (!m) return null;
  const field = (name) => {
    const f = line.match(new RegExp(`\\b${name}=([0-9.]+)`));
    return f ? Number(f[1]) : null;
  };
  return { uid: Number(m[1]), hit: m[2] === "HIT", cached: Number(m[3]), prefill: Number(m[4]),
    prompt: field("prompt"), completion: field("completion"), ttft_ms: field("ttft"), line };
}

// Starts `qmlx serve` and resolves once /health answers. `logLines` grows as stderr arrives.
export async function startServer(qmlx, modelDir, workDir, { cache = true, extraArgs = [] } = {}) {
  const port = await freePort();
  const config = path.join(workDir, "cache.json");
  fs.writeFileSync(config, JSON.stringify({ cache: cache
    ? { disk_cache_dir: path.join(workDir, "cache-store"), fsync: false }
    : { memory_prefix_cache: false, disk_kv_cache: false } }));
  const logPath = path.join(workDir, "server.log");
  const log = fs.createWriteStream(logPath);
  // Greedy by default: the clients send no temperature, and the scripted model replies with its
  // script exactly only at temperature 0 (at the server's default of 1 it strays now and then).
  const child = spawn(qmlx, ["serve", "--model", modelDir, "--port", String(port),
    "--host", "127.0.0.1", "--model-id", "qmlx-fixture", "--cache-config", config,
    "--default-temperature", "0", ...extraArgs],
  { stdio: ["ignore", "ignore", "pipe"] });
  const server = { port, child, logPath, entries: [], stderr: "" };
  child.stderr.on("data", (chunk) => {
    log.write(chunk);
    server.stderr += chunk;
    const lines = server.stderr.split("\n");
    server.stderr = lines.pop();
    for (const line of lines) {
      const entry = parseLogLine(line);
      if (entry) server.entries.push(entry);
    }
  });
  for (let i = 0; i < 600; ++i) {
    if (child.exitCode !== null) throw new Error(`qmlx serve exited; see ${logPath}`);
    const ok = await fetch(`http://127.0.0.1:${port}/health`).then((r) => r.ok, () => false);
    if (ok) return server;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`qmlx serve not healthy after 60 s; see ${logPath}`);
}

export async function stopServer(server) {
  if (server.child.exitCode !== null) return;
  const exited = new Promise((r) => server.child.once("exit", r));
  server.child.kill("SIGTERM");
  await exited;
}

// A reverse proxy in front of the server that records each exchange: method, path, request
// body, status, content type, and the uid from the response id (chatcmpl-qmlx<uid>,
// msg_qmlx<uid>, resp_qmlx<uid>) that ties it to the server's log line.
export async function startRecorder(upstreamPort) {
  const exchanges = [];
  const server = http.createServer((req, res) => {
    res.on("error", () => {});  // a client that hangs up mid-stream
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      const exchange = { method: req.method, path: req.url, body: null, status: 0,
        contentType: "", uid: null, events: 0, at: Date.now() };
      try { exchange.body = JSON.parse(body.toString("utf8")); } catch { exchange.body = null; }
      exchanges.push(exchange);
      const headers = { ...req.headers, host: `127.0.0.1:${upstreamPort}` };
      const upstream = http.request({ host: "127.0.0.1", port: upstreamPort, method: req.method,
        path: req.url, headers }, (up) => {
        exchange.status = up.statusCode;
        exchange.contentType = up.headers["content-type"] || "";
        res.writeHead(up.statusCode, up.headers);
        let head = "";
        up.on("data", (c) => {
          if (head.length < 4096) head += c.toString("utf8");
          exchange.events += (c.toString("utf8").match(/^data:/gm) || []).length;
          res.write(c);
        });
        up.on("end", () => {
          const m = head.match(/(?:chatcmpl-qmlx|msg_qmlx|resp_qmlx)(\d+)/);
          if (m) exchange.uid = Number(m[1]);
          res.end();
        });
      });
      upstream.on("error", (e) => { exchange.status = 502; res.destroy(e); });
      upstream.end(body);
    });
  });
  const port = await listen(server);
  return { port, exchanges, close: () => server.close() };
}

// An HTTP(S) proxy that answers nothing: every request or CONNECT is recorded and refused.
// Clients get it as HTTP_PROXY/HTTPS_PROXY/ALL_PROXY with NO_PROXY naming loopback, so any
// attempt to reach another host (telemetry, update checks, model lists) shows up here.
export async function startEgressTrap() {
  const attempts = [];
  const server = http.createServer((req, res) => {
    attempts.push(`${req.method} ${req.url}`);
    res.writeHead(403).end();
  });
  server.on("connect", (req, socket) => {
    socket.on("error", () => {});  // clients reset refused tunnels
    attempts.push(`CONNECT ${req.url}`);
    socket.end("HTTP/1.1 403 Forbidden\r\n\r\n");
  });
  const port = await listen(server);
  return { port, attempts, close: () => server.close() };
}

// The environment every client runs in: a throwaway HOME (and XDG dirs) under `home`, the egress
// trap as proxy, loopback exempt, no colour, and nothing inherited but PATH and locale.
export function isolatedEnv(home, trapPort, extra = {}) {
  for (const d of [".config", ".cache", ".local/share", ".local/state", "tmp"]) {
    fs.mkdirSync(path.join(home, d), { recursive: true });
  }
  const proxy = `http://127.0.0.1:${trapPort}`;
  return {
    PATH: process.env.PATH, LANG: "C.UTF-8", TERM: "dumb", NO_COLOR: "1", CI: "1",
    HOME: home, USERPROFILE: home, TMPDIR: path.join(home, "tmp"),
    XDG_CONFIG_HOME: path.join(home, ".config"), XDG_CACHE_HOME: path.join(home, ".cache"),
    XDG_DATA_HOME: path.join(home, ".local/share"), XDG_STATE_HOME: path.join(home, ".local/state"),
    HTTP_PROXY: proxy, HTTPS_PROXY: proxy, ALL_PROXY: proxy,
    http_proxy: proxy, https_proxy: proxy, all_proxy: proxy,
    NO_PROXY: "127.0.0.1,localhost", no_proxy: "127.0.0.1,localhost",
    ...extra,
  };
}

// Runs a client to completion (or kills it after timeoutMs); resolves with its exit status and
// output.
export function runClient(argv, { cwd, env, timeoutMs = 120000, stdin = "" }) {
  return new Promise((resolve) => {
    const started = Date.now();
    const child = spawn(argv[0], argv.slice(1), { cwd, env, stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "", stderr = "";
    child.stdout.on("data", (c) => { stdout += c; });
    child.stderr.on("data", (c) => { stderr += c; });
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr, seconds: (Date.now() - started) / 1000 });
    });
    child.stdin.end(stdin);
  });
}

// The log entry of a recorded exchange (by the uid in its response), once the line is written.
export async function logEntryOf(server, exchange) {
  for (let i = 0; i < 50; ++i) {
    const entry = server.entries.find((e) => e.uid === exchange.uid);
    if (entry) return entry;
    await new Promise((r) => setTimeout(r, 100));
  }
  return null;
}

// Everything one client run needs, in a fresh `work` folder: a throwaway HOME and project, the
// client's scripted model (unless `model` names one), the server (cache on or off), the
// recorder in front of it, the egress trap, and the client's configuration and environment.
export async function openClientSession({ qmlx, client, work, model, cache = true, afterTool,
  extraArgs = [] }) {
  fs.rmSync(work, { recursive: true, force: true });
  const home = path.join(work, "home"), project = path.join(work, "project");
  fs.mkdirSync(project, { recursive: true });
  if (!model) {
    model = path.join(work, "model");
    makeScriptedModel(qmlx, model, client.script, afterTool);
  }
  const server = await startServer(qmlx, model, work, { cache, extraArgs });
  const recorder = await startRecorder(server.port);
  const trap = await startEgressTrap();
  const env = isolatedEnv(home, trap.port,
    client.configure({ home, project, baseUrl: `http://127.0.0.1:${recorder.port}` }));
  const close = async () => {
    recorder.close();
    trap.close();
    await stopServer(server);
  };
  return { home, project, server, recorder, trap, env, close };
}

// The text of a request's last message when it is the user's (its text parts joined), in any of
// the three API shapes: chat messages, Anthropic messages, Responses input items.
export function lastUserText(body) {
  const items = body?.messages ?? (Array.isArray(body?.input) ? body.input : []);
  const last = items.at(-1);
  if (!last || last.role !== "user") return null;
  if (typeof last.content === "string") return last.content;
  return (last.content ?? []).filter((p) => typeof p.text === "string").map((p) => p.text)
    .join("\n");
}

// How many tokens `text` takes as a user turn of its own, as the model's template renders it
// (`/apply-template`): the least a turn that adds only this message can prefill.
export async function userTurnTokens(server, text) {
  const response = await fetch(`http://127.0.0.1:${server.port}/apply-template`, {
    method: "POST", headers: { "content-type": "application/json", authorization: "Bearer qmlx" },
    body: JSON.stringify({ model: "qmlx-fixture", messages: [{ role: "user", content: text }] }),
  });
  if (!response.ok) throw new Error(`/apply-template: ${response.status} ${await response.text()}`);
  return (await response.json()).tokens.length;
}

// The prompt token ids of an OpenAI chat request as the server renders it (`/apply-template`);
// null for other wire formats (Anthropic, Responses), which that route does not read.
export async function chatPromptIds(server, body) {
  if (!Array.isArray(body?.messages) || body?.input !== undefined || body?.system !== undefined) {
    return null;
  }
  const response = await fetch(`http://127.0.0.1:${server.port}/apply-template`, {
    method: "POST", headers: { "content-type": "application/json", authorization: "Bearer qmlx" },
    body: JSON.stringify({ ...body, stream: false }),  // the same kwargs, tools and messages
  });
  if (!response.ok) throw new Error(`/apply-template: ${response.status} ${await response.text()}`);
  return (await response.json()).tokens;
}

// The whole request body as one string, for "does this request carry X" checks.
export function bodyText(exchange) {
  return exchange.body ? JSON.stringify(exchange.body) : "";
}

// The checks every agent test ends with: no request the client sent failed, and nothing tried
// to leave the machine. `check(ok, what, detail)` is the test's own.
export function checkExchangesClean(check, recorder, trap) {
  const failed = recorder.exchanges.filter((e) => e.status >= 400);
  check(failed.length === 0, `every request succeeds (${recorder.exchanges.length} requests)`,
    failed.map((e) => `${e.method} ${e.path} -> ${e.status}`).join("; "));
  check(trap.attempts.length === 0, "nothing tried to leave the machine", trap.attempts.join("; "));
}
