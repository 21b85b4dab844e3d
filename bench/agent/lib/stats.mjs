// Summary statistics of a run: hit rate over the turns after the first, prefill over new
// tokens, TTFT median and p95, and the deepest turn's TTFT (for the cache on/off ratio).

export function percentile(values, p) {
  const sorted = values.filter((v) => v !== null && Number.isFinite(v)).sort((a, b) => a - b);
  if (sorted.length === 0) return null;
  const rank = (p / 100) * (sorted.length - 1);
  const lo = Math.floor(rank);
  const hi = Math.ceil(rank);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - lo);
}

const total = (rows, key) => rows.reduce((t, r) => t + (r[key] ?? 0), 0);

export function summarize(rows) {
  const ok = rows.filter((r) => !r.error);
  const later = ok.slice(1);
  const withNew = later.filter((r) => r.newTokens !== null && r.prefill !== null);
  const hits = later.filter((r) => r.status === 'HIT').length;
  const deepest = ok.reduce((best, r) => (r.promptTokens ?? -1) > (best?.promptTokens ?? -1)
    && !r.interrupted ? r : best, null);
  return {
    turns: ok.length,
    errors: rows.length - ok.length,
    hitRate: later.length ? hits / later.length : null,
    hits,
    prefillTokens: total(later, 'prefill'),
    cachedTokens: total(later, 'cached'),
    newTokens: withNew.length ? total(withNew, 'newTokens') : null,
    prefillOverNew: withNew.length && total(withNew, 'newTokens') > 0
      ? total(withNew, 'prefill') / total(withNew, 'newTokens') : null,
    ttftMedianMs: percentile(ok.map((r) => r.ttftMs), 50),
    ttftP95Ms: percentile(ok.map((r) => r.ttftMs), 95),
    deepestTurn: deepest?.turn ?? null,
    deepestPromptTokens: deepest?.promptTokens ?? null,
    deepestTtftMs: deepest?.ttftMs ?? null,
    finalPromptTokens: ok.at(-1)?.promptTokens ?? null,
  };
}
