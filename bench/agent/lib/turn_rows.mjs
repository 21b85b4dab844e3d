// One flat row per turn for the report: the server's log record first (it is what the server
// decided), the response's usage and timings next, client-side numbers last. Fields the server
// does not provide yet are null.

function firstDefined(...values) {
  for (const v of values) if (v !== undefined && v !== null && !Number.isNaN(v)) return v;
  return null;
}

function restoreMs(timings) {
  if (!timings) return null;
  if (timings.restore_ms !== undefined) return timings.restore_ms;
  const c = timings.cache;
  if (!c) return null;
  return ['lookup_ms', 'read_ms', 'verify_ms', 'install_ms']
    .reduce((t, k) => t + (Number(c[k]) || 0), 0);
}

export function turnRow(turn) {
  if (turn.error) return { turn: turn.turn, kind: turn.kind, error: turn.error };
  const { reply, log, account } = turn;
  const usage = reply.usage ?? {};
  const t = reply.timings ?? {};
  const cached = firstDefined(log?.cached, usage.prompt_tokens_details?.cached_tokens, t.cached);
  const prompt = firstDefined(usage.prompt_tokens, log?.prompt, account?.promptTokens);
  const prefill = firstDefined(log?.prefill, t.prefill,
    prompt !== null && cached !== null ? prompt - cached : null);
  const divergence = log?.divergence ?? null;
  return {
    turn: turn.turn, kind: turn.kind, epoch: turn.epoch ?? 1,
    uid: firstDefined(t.uid, log?.uid),
    status: log ? (log.hit ? 'HIT' : 'MISS') : cached === null ? null : cached > 0 ? 'HIT' : 'MISS',
    cached, prefill, promptTokens: prompt,
    newTokens: account ? account.newTokens : null,
    replySpan: account ? account.replySpan : null,
    completionTokens: firstDefined(usage.completion_tokens, log?.completion),
    restoreMs: restoreMs(reply.timings),
    ttftMs: firstDefined(t.ttft_ms, log?.ttftMs),
    clientTtftMs: reply.clientTtftMs,
    decodeTps: firstDefined(t.decode_tokens_per_second),
    snapshotKind: firstDefined(t.snapshot_kind, t.cache?.kind, log?.kind),
    missReason: log?.reason ?? null,
    interrupted: reply.interrupted,
    toolCalls: reply.toolCalls.length,
    marker: turn.marker ?? null,
    markerSpan: turn.markerSpan ?? null,
    divergence: divergence ? { pos: divergence.pos, restored: divergence.restored,
      kind: divergence.kind, before: divergence.before, cached: divergence.cached,
      incoming: divergence.incoming, line: divergence.line } : null,
    logLine: log?.line ?? null,
  };
}
