// TraceSource: a recorded session (JSONL, one chat request per line, with think_time_ms)
// replayed as a Source (see generator.mjs). In `substitute` mode (default) the recorded
// assistant messages are replaced by the live server's replies, as a real agent's history
// would hold them, and only the client's side (system, user, tool messages and edits) comes
// from the trace; in `verbatim` mode every request is sent exactly as recorded.
import fs from 'node:fs';

export function readTrace(path) {
  return fs.readFileSync(path, 'utf8').split('\n').filter((l) => l.trim() !== '')
    .map((line, i) => {
      try {
        return JSON.parse(line);
      } catch (e) {
        throw new Error(`${path}:${i + 1}: not JSON: ${e.message}`);
      }
    });
}

// Appends one sent request to a trace file, in the format readTrace accepts.
export function recordRequest(path, body, thinkTimeMs) {
  fs.appendFileSync(path, JSON.stringify({ ...body, stream: undefined,
    stream_options: undefined, think_time_ms: thinkTimeMs }) + '\n');
}

function splitSystem(messages) {
  const system = messages[0]?.role === 'system' ? messages[0].content : undefined;
  return { system, rest: system === undefined ? messages : messages.slice(1) };
}

function commonPrefix(a, b) {
  let n = 0;
  while (n < a.length && n < b.length && JSON.stringify(a[n]) === JSON.stringify(b[n])) n++;
  return n;
}

export class TraceSource {
  constructor(requests, { mode = 'substitute' } = {}) {
    if (requests.length === 0) throw new Error('the trace has no requests');
    this.requests = requests;
    this.mode = mode;
    this.index = 0;
    this.tools = requests[0].tools ?? [];
  }

  #step(request, keep, append, kind) {
    const { system } = splitSystem(request.messages);
    return { kind, system, keep, append, tools: request.tools ?? this.tools,
      thinkTimeMs: request.think_time_ms ?? 0, interruptAfter: request.interrupt_after ?? 0,
      maxTokens: request.max_tokens ?? request.max_completion_tokens };
  }

  first() {
    this.index = 1;
    const request = this.requests[0];
    return this.#step(request, 0, splitSystem(request.messages).rest, 'start');
  }

  next(ctx) {
    if (this.index >= this.requests.length) return null;
    const prev = splitSystem(this.requests[this.index - 1].messages).rest;
    const request = this.requests[this.index++];
    const cur = splitSystem(request.messages).rest;
    if (this.mode === 'verbatim') return this.#step(request, 0, cur, 'verbatim');
    const p = commonPrefix(prev, cur);
    // The recorded reply to the previous request sits at prev.length: the live reply, which
    // the runner already appended, stands in for it.
    if (p === prev.length && cur[p]?.role === 'assistant') {
      return this.#step(request, ctx.history.length, cur.slice(p + 1), 'trace');
    }
    return this.#step(request, p, cur.slice(p), p < prev.length ? 'edit' : 'trace');
  }
}
