// The Markdown report of one scenario: how it was run, the summary of each run (cache on,
// cache off, ...), the checks, and the per-turn table with the divergence lines of the turns
// that prefilled more than their new tokens.

function fmt(v, digits = 0) {
  if (v === null || v === undefined || Number.isNaN(v)) return '–';
  if (typeof v === 'number') return v.toFixed(digits);
  return String(v);
}

function pct(v) {
  return v === null || v === undefined ? '–' : `${(v * 100).toFixed(1)}%`;
}

function bytes(v) {
  if (v === null || v === undefined) return '–';
  if (v >= 1 << 30) return `${(v / (1 << 30)).toFixed(2)} GiB`;
  if (v >= 1 << 20) return `${(v / (1 << 20)).toFixed(1)} MiB`;
  if (v >= 1 << 10) return `${(v / (1 << 10)).toFixed(1)} KiB`;
  return `${v} B`;
}

function cell(text) {
  return String(text).replace(/\|/g, '\\|').replace(/\n/g, ' ');
}

function summaryTable(runs) {
  const lines = ['| run | turns | hit rate (after 1st) | prefill / new | TTFT median ms | ' +
    'TTFT p95 ms | deepest turn (tokens) | TTFT at deepest ms | disk written | disk held |',
  '|---|---|---|---|---|---|---|---|---|---|'];
  for (const run of runs) {
    const s = run.summary;
    const d = run.disk ?? {};
    lines.push(`| ${run.label} | ${s.turns}${s.errors ? ` (+${s.errors} failed)` : ''} | ` +
      `${pct(s.hitRate)} | ${fmt(s.prefillOverNew, 3)} | ${fmt(s.ttftMedianMs, 1)} | ` +
      `${fmt(s.ttftP95Ms, 1)} | ${fmt(s.deepestTurn)} (${fmt(s.deepestPromptTokens)}) | ` +
      `${fmt(s.deepestTtftMs, 1)} | ${bytes(d.writtenBytes)} | ${bytes(d.heldBytes)} |`);
  }
  return lines.join('\n');
}

function turnTable(rows) {
  const lines = ['| turn | kind | uid | result | cached | prefill | new | prompt | restore ms | ' +
    'TTFT ms | client TTFT ms | decode tok/s | snapshot | note |',
  '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|'];
  for (const r of rows) {
    if (r.error) {
      lines.push(`| ${r.turn} | ${r.kind} | | ERROR | | | | | | | | | | ${cell(r.error)} |`);
      continue;
    }
    const notes = [];
    if (r.interrupted) notes.push('interrupted');
    if (r.toolCalls) notes.push(`${r.toolCalls} tool call(s)`);
    if (r.status === 'MISS' && r.missReason) notes.push(`reason=${r.missReason}`);
    lines.push(`| ${r.turn} | ${r.kind}${r.epoch > 1 ? ` (proc ${r.epoch})` : ''} | ` +
      `${fmt(r.uid)} | ${fmt(r.status)} | ${fmt(r.cached)} | ${fmt(r.prefill)} | ` +
      `${fmt(r.newTokens)} | ${fmt(r.promptTokens)} | ${fmt(r.restoreMs, 1)} | ` +
      `${fmt(r.ttftMs, 1)} | ${fmt(r.clientTtftMs, 1)} | ${fmt(r.decodeTps, 1)} | ` +
      `${fmt(r.snapshotKind)} | ${cell(notes.join(', '))} |`);
  }
  return lines.join('\n');
}

// The divergence line of every turn that prefilled more than its new tokens or that the
// server logged one for.
function divergences(rows) {
  const out = [];
  for (const r of rows) {
    if (r.error || r.turn === 1) continue;
    const over = r.newTokens === null || r.prefill === null || r.prefill > r.newTokens;
    if (!over && !r.divergence) continue;
    out.push(`- turn ${r.turn} (prefill ${fmt(r.prefill)}, new ${fmt(r.newTokens)}): ` +
      (r.divergence ? `\`${r.divergence.line}\`` : 'no divergence line'));
  }
  return out.length ? out.join('\n') : '(none)';
}

export function renderMarkdown(report) {
  const out = [`# Agent replay: ${report.scenario}`, '',
    `Command: \`${report.command}\``, '',
    `Session: ${report.sessionDescription}`, '',
    `Model: ${report.model ?? '–'}; started ${report.startedAt}.`, '',
    '## Summary', '', summaryTable(report.runs), ''];
  if (report.ttftRatioDeepest !== null && report.ttftRatioDeepest !== undefined) {
    out.push(`Cache off / on TTFT at the deepest turn: **${report.ttftRatioDeepest.toFixed(2)}x**.`, '');
  }
  out.push(`![TTFT and cached vs prefilled tokens per turn](${report.chartFile})`, '', '## Checks', '');
  if (report.checks.length === 0) out.push('(none for this scenario)');
  for (const c of report.checks) {
    out.push(`- **${c.ok ? 'PASS' : 'FAIL'}** ${c.run ? `${c.run}: ` : ''}${c.name}`);
    for (const d of c.details.slice(0, 20)) out.push(`  - ${cell(d)}`);
    if (c.details.length > 20) out.push(`  - … ${c.details.length - 20} more`);
  }
  for (const run of report.runs) {
    out.push('', `## Turns: ${run.label}`, '', turnTable(run.rows), '', '### Divergence lines', '',
      divergences(run.rows));
    if (run.metrics) {
      out.push('', `Metrics after the run: checkpoint writes ${JSON.stringify(run.metrics.checkpointWrites)}, ` +
        `evictions ${JSON.stringify(run.metrics.evictions)}, dropped ${fmt(run.metrics.checkpointDropped)}, ` +
        `snapshots ${fmt(run.metrics.diskCacheSnapshots)}, chunks ${fmt(run.metrics.diskCacheChunks)}.`);
    }
  }
  return out.join('\n') + '\n';
}
