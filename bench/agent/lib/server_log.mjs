// Reads the server's log (stderr) as it grows and pairs each generation request's line
// (`uid=<n> HIT cached=<c> prefill=<p> ...` or `uid=<n> MISS cached=0 prefill=<p> ...`) with
// the cache's divergence line (`... divergence pos=<p> restored=<r> snapshot=<id> kind=<k>
// before="..." cached="..." incoming="..."`). A divergence line that names a uid belongs to
// it; one that does not belongs to the next request line (the lookup runs before the request
// finishes and logs).
import fs from 'node:fs';

const REQUEST = /\buid=(\d+) (HIT|MISS) cached=(\d+) prefill=(\d+)/;
const UID = /\buid=(\d+)/;
const QUOTED = '"((?:[^"\\\\]|\\\\.)*)"';

function field(line, name) {
  const m = line.match(new RegExp(`\\b${name}=([^\\s]+)`));
  return m ? m[1] : undefined;
}

function quotedField(line, name) {
  const m = line.match(new RegExp(`\\b${name}=${QUOTED}`));
  if (!m) return undefined;
  try {
    return JSON.parse(`"${m[1]}"`);
  } catch {
    return m[1];
  }
}

function number(text) {
  if (text === undefined) return undefined;
  const v = parseFloat(text);
  return Number.isFinite(v) ? v : undefined;
}

export function parseRequestLine(line) {
  const m = line.match(REQUEST);
  if (!m) return null;
  return {
    uid: Number(m[1]), hit: m[2] === 'HIT', cached: Number(m[3]), prefill: Number(m[4]),
    prompt: number(field(line, 'prompt')), completion: number(field(line, 'completion')),
    ttftMs: number(field(line, 'ttft')), kind: field(line, 'kind'),
    reason: field(line, 'reason') ?? field(line, 'miss_reason'), finish: field(line, 'finish'),
    line: line.trim(),
  };
}

export function parseDivergenceLine(line) {
  if (!/diverge/.test(line)) return null;
  const uid = line.match(UID);
  return {
    uid: uid ? Number(uid[1]) : undefined, pos: number(field(line, 'pos')),
    restored: number(field(line, 'restored')), snapshot: field(line, 'snapshot'),
    kind: field(line, 'kind'), before: quotedField(line, 'before'),
    cached: quotedField(line, 'cached'), incoming: quotedField(line, 'incoming'),
    line: line.trim(),
  };
}

// Parses whole log text into request records, each with its divergence (or null).
export function parseLog(text) {
  const requests = [];
  let pending = null;
  const byUid = new Map();
  for (const line of text.split('\n')) {
    const request = parseRequestLine(line);
    if (request) {
      request.divergence = byUid.get(request.uid) ?? pending ?? null;
      pending = null;
      requests.push(request);
      continue;
    }
    const divergence = parseDivergenceLine(line);
    if (!divergence) continue;
    if (divergence.uid === undefined) {
      pending = divergence;
      continue;
    }
    const known = requests.find((r) => r.uid === divergence.uid);
    if (known) known.divergence = divergence;
    else byUid.set(divergence.uid, divergence);
  }
  return requests;
}

// Follows one log file: each call to take() returns the request records not yet taken.
export class LogFollower {
  constructor(path) {
    this.path = path;
    this.taken = 0;
  }

  all() {
    return fs.existsSync(this.path) ? parseLog(fs.readFileSync(this.path, 'utf8')) : [];
  }

  // Waits (up to timeoutMs) for the request with `uid` or, without one, for the next request;
  // returns it (or null) and marks everything up to it as taken.
  async take(uid, timeoutMs = 3000) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const records = this.all();
      const i = uid === undefined || uid === null
        ? (records.length > this.taken ? this.taken : -1)
        : records.findIndex((r, k) => k >= this.taken && r.uid === uid);
      if (i >= 0) {
        this.taken = i + 1;
        // A divergence line logged just after its request line is picked up here.
        return records[i];
      }
      if (Date.now() > deadline) return null;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}
