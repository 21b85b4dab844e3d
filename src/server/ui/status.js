// The qmlx status page. Polls /admin/ui/status about once a second (only what is new since the
// last poll) and /admin/cache/snapshots every few seconds, and draws them. Everything that came
// from a client (user agents, session ids, prompt text) is inserted with textContent or as an
// attribute value, never parsed as HTML.
"use strict";

const POLL_MS = 1000;
const SNAPSHOT_POLL_MS = 5000;
const SHOWN_REQUESTS = 200;
const SHOWN_CONVERSATIONS = 40;
const SHOWN_TURNS = 60;
const CHART_POINTS = 300;
const KEY_STORAGE = "qmlx-admin-key";
// Without --api-key the server accepts any non-empty key: this one stands in for it.
const PLACEHOLDER_KEY = "qmlx-status-page";

const state = {
  since: 0,
  requests: [],                 // newest last
  conversations: new Map(),     // key -> conversation, as the server sent it
  chart: [],                    // {t, evictions, quarantined}
  polling: false,
  snapshotsAt: 0,
};

// ---- small DOM helpers: text only ----

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null) continue;
    if (name === "class") node.className = value;
    else node.setAttribute(name, String(value));
  }
  for (const child of children) {
    if (child === undefined || child === null) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function $(id) { return document.getElementById(id); }

function bytes(n) {
  if (!n) return "0 B";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; ++i; }
  return (i ? n.toFixed(1) : String(n)) + " " + units[i];
}

function duration(seconds) {
  seconds = Math.round(seconds);
  const d = Math.floor(seconds / 86400), h = Math.floor(seconds / 3600) % 24;
  const m = Math.floor(seconds / 60) % 60, s = seconds % 60;
  if (d) return d + "d " + h + "h";
  if (h) return h + "h " + m + "m";
  if (m) return m + "m " + s + "s";
  return s + "s";
}

function ms(v) { return v >= 1000 ? (v / 1000).toFixed(2) + " s" : v.toFixed(0) + " ms"; }

function clock(unixMs) { return new Date(unixMs).toLocaleTimeString(); }

// A bar of cached against prefilled tokens. Widths are set through the CSSOM, which the page's
// policy allows (a style attribute would not be).
function sizedBar(cached, prefilled) {
  const total = Math.max(1, cached + prefilled);
  const bar = el("div", { class: "bar", title: cached + " cached, " + prefilled + " prefilled" },
                 el("div", { class: "cached" }), el("div", { class: "prefill" }));
  bar.children[0].style.width = (100 * cached / total) + "%";
  bar.children[1].style.width = (100 * prefilled / total) + "%";
  return bar;
}

// ---- the key ----

function readKey() {
  const match = /(?:^#|&)key=([^&]*)/.exec(location.hash);
  if (match) {
    sessionStorage.setItem(KEY_STORAGE, decodeURIComponent(match[1]));
    history.replaceState(null, "", location.pathname + location.search);
  }
  return sessionStorage.getItem(KEY_STORAGE) || PLACEHOLDER_KEY;
}

function askForKey(message) {
  $("key-form").hidden = false;
  $("content").hidden = true;
  $("key-error").textContent = message || "";
  setConnection("key needed", "bad");
}

$("key-entry").addEventListener("submit", (event) => {
  event.preventDefault();
  const key = $("key-input").value.trim();
  if (!key) return;
  sessionStorage.setItem(KEY_STORAGE, key);
  $("key-input").value = "";
  $("key-form").hidden = true;
  $("content").hidden = false;
  poll();
});

async function api(method, path, body) {
  const headers = { "Authorization": "Bearer " + readKey() };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(path, {
    method, headers, body: body === undefined ? undefined : JSON.stringify(body),
    cache: "no-store", credentials: "omit",
  });
  let data = null;
  try { data = await response.json(); } catch (e) { data = null; }
  if (!response.ok) {
    const message = (data && data.error && data.error.message) || response.statusText;
    const error = new Error(message);
    error.status = response.status;
    throw error;
  }
  return data;
}

function setConnection(text, kind) {
  const pill = $("connection");
  pill.textContent = text;
  pill.className = "pill " + (kind || "");
}

// ---- server ----

function renderServer(server, queue) {
  const rows = [
    ["model", server.model || "(loading)"],
    ["architecture", server.architecture],
    ["weights", server.weights],
    ["K/V dtype", server.kv_cache_dtype],
    ["backend", server.backend],
    ["slots", server.slots],
    ["memory budget", server.memory_budget_bytes ? bytes(server.memory_budget_bytes) : "none"],
    ["context", server.context_length],
    ["max step", server.max_step_ms ? server.max_step_ms + " ms" : "unbounded"],
    ["uptime", duration(server.uptime_seconds)],
  ];
  if (queue) {
    rows.push(["running", queue.running], ["waiting", queue.waiting],
              ["oldest wait", ms(queue.oldest_wait_ms)]);
    if (queue.stalled) rows.push(["queue", "STALLED (see the log)"]);
  }
  const dl = $("server");
  dl.replaceChildren(...rows.filter((r) => r[1] !== undefined)
    .map(([k, v]) => el("div", {}, el("dt", {}, k), el("dd", {}, v))));
}

// ---- requests ----

function requestRow(r) {
  const ran = r.ran;
  return el("tr", { "data-uid": r.uid, "data-status": r.status },
    el("td", {}, clock(r.unix_ms)),
    el("td", {}, r.uid),
    el("td", {}, r.route),
    el("td", { class: "client" }, r.client || "-"),
    el("td", { class: "client" }, r.session || "-"),
    el("td", { class: ran ? "outcome-" + r.outcome : "" },
       ran ? (r.outcome === "hit" ? "HIT " + r.tier : "MISS " + r.miss_reason) : "-"),
    el("td", {}, ran ? r.cached_tokens + " / " + r.prefill_tokens : "-",
       ran ? sizedBar(r.cached_tokens, r.prefill_tokens) : null),
    el("td", {}, ran && r.completion_tokens ? ms(r.ttft_ms) : "-"),
    el("td", {}, ran && r.completion_tokens > 1 ? r.decode_tokens_per_second.toFixed(1) + " tok/s" : "-"),
    el("td", {}, ran ? r.finish : "-"),
    el("td", { title: r.error || "" }, r.status, r.error ? " " + r.error : ""));
}

function renderRequests(fresh) {
  state.requests.push(...fresh);
  if (state.requests.length > SHOWN_REQUESTS) {
    state.requests.splice(0, state.requests.length - SHOWN_REQUESTS);
  }
  const body = $("requests").tBodies[0];
  body.replaceChildren(...state.requests.slice().reverse().map(requestRow));
  $("no-requests").hidden = state.requests.length > 0;
}

// ---- conversations ----

function divergenceBlock(d, showText) {
  const block = el("div", { class: "divergence" },
    "Left the cache at token " + d.position + " (restored " + d.restored + "): likely cause ",
    el("strong", {}, d.cause), d.fix ? ". Fix: " + d.fix : "");
  if (showText && d.before !== undefined) {
    block.append(el("div", {}, "shared text before:"), el("pre", {}, d.before),
                 el("div", {}, "cached after:"), el("pre", {}, d.cached),
                 el("div", {}, "this prompt after:"), el("pre", {}, d.incoming));
  }
  return block;
}

function conversationCard(c, showText) {
  const turns = c.turns.slice(-SHOWN_TURNS);
  const table = el("table", {},
    el("thead", {}, el("tr", {},
      ...["turn", "time", "cache", "cached / prefilled", "TTFT", "decode", "finish", "status"]
        .map((h) => el("th", {}, h)))));
  const body = el("tbody");
  for (const t of turns) {
    body.append(el("tr", {
        class: "turn", "data-session": c.key, "data-turn": t.turn, "data-outcome": t.outcome,
        "data-cause": t.cause, "data-uid": t.uid },
      el("td", {}, t.turn),
      el("td", {}, clock(t.unix_ms)),
      el("td", { class: "outcome-" + t.outcome }, t.outcome === "hit" ? "HIT " + t.tier : "MISS"),
      el("td", {}, t.cached_tokens + " / " + t.prefill_tokens, sizedBar(t.cached_tokens, t.prefill_tokens)),
      el("td", {}, t.completion_tokens ? ms(t.ttft_ms) : "-"),
      el("td", {}, t.completion_tokens > 1 ? t.decode_tokens_per_second.toFixed(1) + " tok/s" : "-"),
      el("td", {}, t.finish),
      el("td", {}, t.status)));
    if (t.divergence) {
      body.append(el("tr", { class: "turn-divergence" },
        el("td", {}), el("td", { colspan: 7 }, divergenceBlock(t.divergence, showText))));
    }
  }
  table.append(body);
  const hidden = c.turns_seen - turns.length;
  return el("div", { class: "conversation", "data-conversation": c.key },
    el("h3", {}, c.session ? "session " + c.session : "conversation " + c.key,
       el("span", { class: "muted" }, "  " + (c.client || "unknown client") + ", " +
          c.turns_seen + " turn" + (c.turns_seen === 1 ? "" : "s") +
          (hidden > 0 ? " (the first " + hidden + " not shown)" : ""))),
    table);
}

function renderConversations(changed, showText) {
  for (const c of changed) state.conversations.set(c.key, c);
  const sorted = [...state.conversations.values()].sort((a, b) => b.last_seq - a.last_seq);
  for (const stale of sorted.slice(SHOWN_CONVERSATIONS)) state.conversations.delete(stale.key);
  $("conversations").replaceChildren(
    ...sorted.slice(0, SHOWN_CONVERSATIONS).map((c) => conversationCard(c, showText)));
  $("no-conversations").hidden = state.conversations.size > 0;
}

// ---- cache ----

function sum(map) { return Object.values(map || {}).reduce((a, b) => a + b, 0); }

function tierBox(name, used, limit, note) {
  const bar = el("div", { class: "bar" }, el("div", { class: "used" }));
  bar.children[0].style.width = (limit ? Math.min(100, 100 * used / limit) : 0) + "%";
  return el("div", { class: "tier" },
    el("div", {}, el("strong", {}, name), " ", bytes(used), limit ? " of " + bytes(limit) : "",
       note ? el("span", { class: "muted" }, " " + note) : null),
    bar);
}

function renderChart() {
  const svg = $("cache-chart");
  const ns = "http://www.w3.org/2000/svg";
  const points = state.chart;
  svg.replaceChildren();
  if (points.length < 2) return;
  const first = points[0], last = points[points.length - 1];
  const maxValue = Math.max(1, ...points.map((p) => Math.max(p.evictions - first.evictions,
                                                           p.quarantined - first.quarantined)));
  const span = Math.max(1, last.t - first.t);
  const line = (field, color) => {
    const path = document.createElementNS(ns, "polyline");
    path.setAttribute("fill", "none");
    path.setAttribute("stroke", color);
    path.setAttribute("points", points.map((p) =>
      (590 * (p.t - first.t) / span + 5).toFixed(1) + "," +
      (70 - 60 * (p[field] - first[field]) / maxValue).toFixed(1)).join(" "));
    svg.append(path);
  };
  line("evictions", "#4f8fdc");
  line("quarantined", "#c9513b");
  const label = document.createElementNS(ns, "text");
  label.setAttribute("x", "5");
  label.setAttribute("y", "78");
  label.textContent = "evictions (blue) +" + (last.evictions - first.evictions) +
    ", quarantined (red) +" + (last.quarantined - first.quarantined) + " over " +
    duration(span / 1000);
  svg.append(label);
}

function renderCache(cache, restore) {
  $("no-cache").hidden = !!cache;
  $("cache-body").hidden = !cache;
  if (!cache) return;
  const shared = cache.shared || {};
  $("cache-tiers").replaceChildren(
    tierBox("RAM", cache.memory_cache_bytes, cache.limits.memory_bytes),
    tierBox("disk", cache.disk_cache_bytes, cache.limits.disk_bytes,
            cache.disk_cache_snapshots + " snapshots"),
    cache.limits.shared
      ? tierBox("shared", shared.bytes_written, 0,
                "written, " + bytes(shared.bytes_read) + " read" +
                (shared.breaker_open ? " (circuit open)" : ""))
      : el("div", { class: "tier muted" }, "shared tier: off"));
  const counters = [
    ["hits", cache.hits], ["misses", sum(cache.misses)], ["divergences", cache.divergences],
    ["evictions", sum(cache.evictions)], ["quarantined", cache.quarantined],
    ["checkpoint writes", sum(cache.checkpoint_writes)],
    ["writes dropped", sum(cache.checkpoint_dropped)],
  ];
  for (const [tier, r] of Object.entries(restore || {})) {
    counters.push(["restore " + tier, r.bytes_per_second
      ? bytes(r.bytes_per_second) + "/s over " + r.restores : "-"]);
  }
  $("cache-counters").replaceChildren(...counters.map(([k, v]) =>
    el("div", {}, el("dt", {}, k), el("dd", {}, v))));
  state.chart.push({ t: Date.now(), evictions: sum(cache.evictions), quarantined: cache.quarantined });
  if (state.chart.length > CHART_POINTS) state.chart.shift();
  renderChart();
}

async function snapshotAction(id, action) {
  try {
    if (action === "delete") {
      if (!confirm("Delete snapshot " + id + "?")) return;
      await api("DELETE", "/admin/cache/snapshots/" + id);
    } else {
      await api("POST", "/admin/cache/snapshots/" + id + "/pin", { pinned: action === "pin" });
    }
  } catch (e) {
    alert("The cache refused: " + e.message);
  }
  state.snapshotsAt = 0;
  await refreshSnapshots();
}

function snapshotRow(s) {
  const pin = el("button", { type: "button", "data-action": s.pinned ? "unpin" : "pin", "data-id": s.id },
                 s.pinned ? "unpin" : "pin");
  pin.addEventListener("click", () => snapshotAction(s.id, s.pinned ? "unpin" : "pin"));
  const remove = el("button", { type: "button", "data-action": "delete", "data-id": s.id }, "delete");
  remove.addEventListener("click", () => snapshotAction(s.id, "delete"));
  return el("tr", { class: "snapshot", "data-id": s.id, "data-pinned": s.pinned },
    el("td", {}, el("code", {}, s.id.slice(0, 12))), el("td", {}, s.kind), el("td", {}, s.tokens),
    el("td", {}, bytes(s.bytes)),
    el("td", {}, [s.in_memory ? "RAM" : null, s.on_disk ? "disk" : null].filter(Boolean).join(" + ")),
    el("td", {}, s.last_used_ms ? clock(s.last_used_ms) : "-"),
    el("td", {}, s.pinned ? "yes" : ""), el("td", {}, pin, " ", remove));
}

async function refreshSnapshots() {
  if (Date.now() - state.snapshotsAt < SNAPSHOT_POLL_MS) return;
  state.snapshotsAt = Date.now();
  const list = await api("GET", "/admin/cache/snapshots");
  const snapshots = list.data.sort((a, b) => b.last_used_ms - a.last_used_ms);
  const kinds = {};
  let pinned = 0;
  for (const s of snapshots) {
    kinds[s.kind] = (kinds[s.kind] || 0) + 1;
    if (s.pinned) ++pinned;
  }
  $("snapshot-summary").textContent = snapshots.length + " snapshots: " +
    Object.entries(kinds).map(([k, n]) => n + " " + k).join(", ") + "; " + pinned + " pinned";
  $("snapshots").tBodies[0].replaceChildren(...snapshots.map(snapshotRow));
}

// ---- the loop ----

async function poll() {
  if (state.polling) return;
  state.polling = true;
  try {
    const data = await api("GET", "/admin/ui/status?since=" + state.since);
    renderServer(data.server, data.queue);
    renderRequests(data.activity.requests);
    renderConversations(data.activity.conversations, data.server.show_text);
    renderCache(data.cache, data.activity.restore);
    state.since = data.activity.seq;
    if (data.cache) await refreshSnapshots();
    setConnection(data.server.ready ? "live" : "loading", "ok");
    $("updated").textContent = "updated " + new Date().toLocaleTimeString();
    document.body.setAttribute("data-polls", String(Number(document.body.getAttribute("data-polls") || 0) + 1));
  } catch (e) {
    state.polling = false;
    if (e.status === 401) return askForKey(sessionStorage.getItem(KEY_STORAGE) ? "That key was refused." : "");
    if (e.status === 403) {
      setConnection("closed", "bad");
      $("updated").textContent = e.message;
    } else {
      setConnection("disconnected", "bad");
      $("updated").textContent = e.message;
    }
    setTimeout(poll, POLL_MS * 3);
    return;
  }
  state.polling = false;
  setTimeout(poll, POLL_MS);
}

poll();
