// The status page in a real browser (issue 30 item 2): Debian's chromium, headless, driven by
// puppeteer-core (which downloads nothing), against `qmlx serve` on the demo model.
//
// Server A (--api-key): the page asks for the key, then shows no turn before any traffic; a
// scripted agent conversation (session header, a user agent that is HTML) with a forced
// divergence (the date in its system prompt changes on turn 3) and two sub-agents without a
// session header run; the page shows the conversation's turns in order (miss, hit, miss with
// cause "date"), the sub-agents apart, the user agent as text (no markup runs), no prompt text;
// a pin clicked on the page reaches the admin API; `#key=` in the URL works. Server B (no
// --api-key, --ui-show-text): the page needs no key and shows both sides of the divergence.
// Writes WORK/status-page.png.
//
// Usage: node status_page_e2e.mjs QMLX_BINARY WORK_DIR NODE_MODULES
// Exits 77 (skipped) when chromium is not installed.
import { spawn } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { createRequire } from "node:module";

const [qmlx, work, nodeModules] = process.argv.slice(2);
const chromium = process.env.QMLX_CHROMIUM || "/usr/bin/chromium";
if (!fs.existsSync(chromium)) {
  console.log(`SKIP: no chromium at ${chromium} (Debian: apt-get install chromium)`);
  process.exit(77);
}
const require = createRequire(path.resolve(nodeModules, "noop.js"));
const puppeteer = require("puppeteer-core");

const KEY = "e2e-page-key";
const SESSION = "e2e-session-1";
const HOSTILE_AGENT = '<img src=x onerror="window.__xss=1"><script>window.__xss=2</script>';
const WAIT_MS = 30000;

function fail(message) {
  console.error("FAIL: " + message);
  process.exitCode = 1;
  throw new Error(message);
}

function check(condition, message) {
  if (!condition) fail(message);
  console.log("ok: " + message);
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function startServer(name, args) {
  const port = await freePort();
  const home = path.join(work, name);
  fs.rmSync(home, { recursive: true, force: true });
  fs.mkdirSync(home, { recursive: true });
  const log = fs.openSync(path.join(work, name + ".log"), "w");
  const proc = spawn(qmlx, ["serve", "--port", String(port), ...args], {
    env: { ...process.env, QMLX_HOME: home },
    stdio: ["ignore", log, log],
  });
  const deadline = Date.now() + 60000;
  while (Date.now() < deadline) {
    if (proc.exitCode !== null) fail(`${name} exited with ${proc.exitCode}`);
    try {
      const r = await fetch(`http://127.0.0.1:${port}/health`);
      if (r.status === 200) return { port, proc, base: `http://127.0.0.1:${port}` };
    } catch (e) { /* not listening yet */ }
    await sleep(200);
  }
  fail(`${name} not healthy within 60 s`);
}

async function stopServer(server) {
  server.proc.kill("SIGTERM");
  const deadline = Date.now() + 15000;
  while (server.proc.exitCode === null && Date.now() < deadline) await sleep(100);
  if (server.proc.exitCode === null) server.proc.kill("SIGKILL");
}

const SYSTEM = "You are a coding agent working in /work/project. Follow the repository rules, " +
  "explain each change you make and keep answers short. Today's date is DATE. Run the tests " +
  "before you finish and report what they said.";
const TASK = "List the files in the project folder and summarise what each one does.";

async function chat(server, messages, headers) {
  const r = await fetch(server.base + "/v1/chat/completions", {
    method: "POST",
    headers: { "Content-Type": "application/json", "Authorization": "Bearer " + KEY, ...headers },
    body: JSON.stringify({ messages, max_tokens: 8, temperature: 0 }),
  });
  const body = await r.json();
  if (r.status !== 200) fail(`chat answered ${r.status}: ${JSON.stringify(body)}`);
  return body.choices[0].message.content;
}

// Three turns of one agent conversation; the third has a new date in its system prompt.
async function agentConversation(server, session) {
  const headers = { "User-Agent": HOSTILE_AGENT, "X-Claude-Code-Session-Id": session };
  const system = (date) => ({ role: "system", content: SYSTEM.replace("DATE", date) });
  const first = [system("2026-12-06"), { role: "user", content: TASK }];
  const reply = await chat(server, first, headers);
  const second = [...first, { role: "assistant", content: reply },
                  { role: "user", content: "Now run the tests." }];
  await chat(server, second, headers);
  second[0] = system("2026-12-07");
  await chat(server, second, headers);
}

async function pageTurns(page, session) {
  return page.$$eval(`tr.turn[data-session="${session}"]`, (rows) => rows.map((r) => ({
    turn: Number(r.dataset.turn), outcome: r.dataset.outcome, cause: r.dataset.cause })));
}

async function waitForTurns(page, session, count) {
  await page.waitForFunction(
    (s, n) => document.querySelectorAll(`tr.turn[data-session="${s}"]`).length >= n,
    { timeout: WAIT_MS }, session, count);
}

async function waitForPolls(page, atLeast) {
  await page.waitForFunction(
    (n) => Number(document.body.getAttribute("data-polls") || 0) >= n,
    { timeout: WAIT_MS }, atLeast);
}

async function main() {
  fs.mkdirSync(work, { recursive: true });
  const browser = await puppeteer.launch({
    executablePath: chromium,
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
  });
  try {
    // ---- server A: --api-key ----
    const a = await startServer("server-a", ["--api-key", KEY]);
    const page = await browser.newPage();
    await page.setViewport({ width: 1280, height: 900 });
    const pageErrors = [];
    page.on("pageerror", (e) => pageErrors.push(String(e)));
    const response = await page.goto(a.base + "/", { waitUntil: "load" });
    const headers = response.headers();
    check((headers["content-security-policy"] || "").includes("frame-ancestors 'none'"),
          "the page forbids framing");
    check(headers["x-content-type-options"] === "nosniff", "the page sends nosniff");
    await page.waitForSelector("#key-form:not([hidden])", { timeout: WAIT_MS });
    check(true, "with --api-key the page asks for the key");
    await page.type("#key-input", KEY);
    await page.click("#key-entry button");
    await waitForPolls(page, 1);
    check(await page.$eval("#no-conversations", (e) => !e.hidden),
          "before any traffic the page says there is no conversation");
    check((await page.$$("[data-turn]")).length === 0, "before any traffic no turn is shown");

    await agentConversation(a, SESSION);
    // Two sub-agents of one client, no session header, started together.
    const sub = { "User-Agent": "subagent-client/1.0" };
    await Promise.all([
      chat(a, [{ role: "user", content: "Search the code for TODO comments." }], sub),
      chat(a, [{ role: "user", content: "Read the README and list the setup steps." }], sub),
    ]);
    await waitForTurns(page, SESSION, 3);
    const turns = await pageTurns(page, SESSION);
    console.log("turns: " + JSON.stringify(turns));
    check(JSON.stringify(turns.map((t) => t.turn)) === "[1,2,3]", "the turns are in order");
    check(turns[0].outcome === "miss" && turns[0].cause === "none", "turn 1 is a cold miss");
    check(turns[1].outcome === "hit" && turns[1].cause === "none", "turn 2 is a hit");
    check(turns[2].outcome === "miss" && turns[2].cause === "date",
          "turn 3 went cold on the date");
    const divergence = await page.$eval(`tr.turn[data-session="${SESSION}"][data-turn="3"]`,
      (row) => row.nextElementSibling && row.nextElementSibling.textContent);
    check(divergence && /token \d+/.test(divergence) && divergence.includes("date"),
          "the divergence shows its position and cause: " + divergence);
    check((await page.$$(".divergence pre")).length === 0,
          "without --ui-show-text no prompt text is shown");
    await page.waitForFunction(
      () => new Set([...document.querySelectorAll("tr.turn[data-session^='auto-']")]
        .map((r) => r.dataset.session)).size >= 2, { timeout: WAIT_MS });
    check(true, "the two sub-agents are two conversations");
    const shownAgents = await page.$$eval("td.client", (cells) => cells.map((c) => c.textContent));
    check(shownAgents.includes(HOSTILE_AGENT), "the user agent is shown as text");
    check(await page.evaluate(() => window.__xss === undefined), "no markup from a client ran");
    check((await page.$$("img")).length === 0, "no element was made from a client's markup");

    // A pin from the page reaches the admin API.
    await page.waitForSelector("tr.snapshot button[data-action='pin']", { timeout: WAIT_MS });
    const id = await page.$eval("tr.snapshot button[data-action='pin']", (b) => b.dataset.id);
    await page.click(`tr.snapshot button[data-action='pin'][data-id='${id}']`);
    let pinned = false;
    for (let i = 0; i < 100 && !pinned; ++i) {
      const r = await fetch(`${a.base}/admin/cache/snapshots/${id}`,
                            { headers: { "Authorization": "Bearer " + KEY } });
      pinned = r.status === 200 && (await r.json()).pinned === true;
      if (!pinned) await sleep(100);
    }
    check(pinned, `the pin clicked on the page reached the admin API (snapshot ${id})`);
    await page.waitForSelector(`tr.snapshot[data-id='${id}'][data-pinned='true']`,
                               { timeout: WAIT_MS });
    check(true, "the page shows the snapshot pinned");
    await page.screenshot({ path: path.join(work, "status-page.png"), fullPage: true });

    // The key in the URL's fragment, in a fresh tab (a new sessionStorage).
    const context = await browser.createBrowserContext();
    const tab = await context.newPage();
    await tab.goto(`${a.base}/#key=${encodeURIComponent(KEY)}`, { waitUntil: "load" });
    await waitForPolls(tab, 1);
    check(await tab.$eval("#key-form", (e) => e.hidden), "#key= in the URL is enough");
    check(await tab.evaluate(() => location.hash === ""), "the key leaves the address bar");
    await context.close();
    check(pageErrors.length === 0, "no script error on the page: " + pageErrors.join("; "));
    await stopServer(a);

    // ---- server B: no --api-key, --ui-show-text ----
    const b = await startServer("server-b", ["--ui-show-text"]);
    const open = await browser.newPage();
    await open.goto(b.base + "/", { waitUntil: "load" });
    await waitForPolls(open, 1);
    check(await open.$eval("#key-form", (e) => e.hidden), "without --api-key no key is asked");
    await agentConversation(b, "e2e-session-2");
    await waitForTurns(open, "e2e-session-2", 3);
    await open.waitForSelector(".divergence pre", { timeout: WAIT_MS });
    const texts = await open.$$eval(".divergence pre", (p) => p.map((e) => e.textContent));
    // The block shows the shared text before the split, then each side after it.
    check(texts.length === 3 && (texts[0] + texts[1]).includes("date is 2026-12-06") &&
          (texts[0] + texts[2]).includes("date is 2026-12-07"),
          "with --ui-show-text both sides of the divergence are shown: " + JSON.stringify(texts));
    await stopServer(b);
  } finally {
    await browser.close();
  }
}

main().then(() => {
  if (!process.exitCode) console.log("status_page_e2e: all checks passed");
}).catch((e) => {
  console.error(e.stack || String(e));
  process.exitCode = 1;
});
