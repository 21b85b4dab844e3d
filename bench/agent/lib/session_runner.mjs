// SessionRunner: drives one session against one server as a coding agent does: the whole
// conversation every turn, streamed, the reply appended exactly as received, the source's
// tool results and follow-ups appended after it. It records, per turn, what was sent, what
// came back and the server's log record for that request; token accounting happens after the
// last turn (so its /apply-template calls never compete with the cache's idle work).
import fs from 'node:fs';

import { assistantMessage, makeClient, streamTurn } from './stream_turn.mjs';
import { LogFollower, parseLog } from './server_log.mjs';
import { recordRequest } from './trace.mjs';
import { accountTurn, markerSpan } from './prompt_tokens.mjs';
import { ServerApi } from './server_api.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// target: { url, metricsUrl, logPath, restart?(), epoch } (ManagedServer or a fixed server)
export async function runSession(source, target, o) {
  let client = makeClient(target.url, o.apiKey, o.timeoutMs);
  let follower = target.logPath ? new LogFollower(target.logPath) : null;
  const turns = [];
  let history = [];
  let system;
  let step = source.first();
  while (step) {
    const turnNo = turns.length + 1;
    if (step.keep !== undefined && step.keep !== null) history = history.slice(0, step.keep);
    history.push(...step.append);
    if (step.system !== undefined) system = step.system;
    if (step.thinkTimeMs > 0) await sleep(step.thinkTimeMs);
    if (o.restartEvery > 0 && turnNo > 1 && (turnNo - 1) % o.restartEvery === 0) {
      await target.restart();
      client = makeClient(target.url, o.apiKey, o.timeoutMs);
      follower = target.logPath ? new LogFollower(target.logPath) : null;
    }
    const messages = system === undefined ? [...history]
      : [{ role: 'system', content: system }, ...history];
    const tools = step.tools ?? source.tools;
    const body = { model: o.model, messages, stream: true,
      stream_options: { include_usage: true }, max_tokens: step.maxTokens ?? o.maxTokens,
      temperature: o.temperature };
    if (tools?.length) body.tools = tools;
    if (o.templateKwargs) body.chat_template_kwargs = o.templateKwargs;
    if (o.record) recordRequest(o.record, body, step.thinkTimeMs ?? 0);

    let reply;
    try {
      reply = await streamTurn(client, body, { interruptAfter: step.interruptAfter });
    } catch (e) {
      turns.push({ turn: turnNo, kind: step.kind, error: String(e.message ?? e) });
      break;
    }
    const assistant = assistantMessage(reply);
    history.push(assistant);
    const log = follower ? await follower.take(reply.timings?.uid, o.logWaitMs) : null;
    turns.push({ turn: turnNo, kind: step.kind, epoch: target.epoch, logPath: target.logPath,
      messages, tools, kwargs: o.templateKwargs, assistant, reply, log, marker: step.marker });
    const promptTokens = reply.usage?.prompt_tokens ?? log?.prompt ?? 0;
    step = source.next({ reply, history, promptTokens });
  }
  return turns;
}

// Token accounting and late log lines, once the session is over (the server still up).
export async function accountSession(turns, target, apiKey) {
  const api = new ServerApi(target.url, apiKey);
  let prev = null;
  for (const turn of turns) {
    if (turn.error) break;
    const account = await accountTurn(api, turn, prev);
    turn.account = account;
    if (account && turn.marker) {
      turn.markerSpan = await markerSpan(api, account.prompt, account.ids, turn.marker);
    }
    turn.ids = account?.ids;
    prev = turn;
  }
  refreshDivergences(turns);
  for (const turn of turns) {
    delete turn.ids;
    if (turn.account) {
      delete turn.account.ids;
      delete turn.account.prompt;
    }
  }
}

// A divergence line logged after its request line is attached by uid from the final logs.
function refreshDivergences(turns) {
  const logs = new Map();
  for (const turn of turns) {
    if (!turn.log || !turn.logPath) continue;
    if (!logs.has(turn.logPath)) {
      logs.set(turn.logPath, parseLog(fs.readFileSync(turn.logPath, 'utf8')));
    }
    const record = logs.get(turn.logPath).find((r) => r.uid === turn.log.uid);
    if (record?.divergence) turn.log.divergence = record.divergence;
  }
}
