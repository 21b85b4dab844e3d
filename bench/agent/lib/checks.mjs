// The promises of issue 6, checked on a run's rows. Each check returns {name, ok, details}
// where details lists every violating turn, so a failure says which turn and why.
//
// warm-hits (clean, interrupt, restart, regenerate, interval-flood): every turn after the
//   first is a HIT and prefill <= new * (1 + tolerance) + allowance, where allowance is the
//   re-render of the previous reply (`--rerender-allowance reply`, the default: the reply's
//   tokens as the template renders them, which the cache prefills again when its idle
//   canonical-history pre-fill did not finish) or a fixed number of tokens.
// timestamp-divergence: every turn after the first restores nothing past the id (a MISS on a
//   hybrid model) and has a divergence line whose position lies inside the id's tokens and
//   whose text shows the id.
// same-hit-rate (interval-flood): the flood run's hit rate equals the clean run's.

function allowanceFor(row, mode) {
  if (mode === 'reply') return (row.replySpan ?? 0) + 2;
  return Number(mode);
}

export function checkWarmHits(rows, { tolerance, rerenderAllowance }) {
  const details = [];
  for (const row of rows.slice(1)) {
    if (row.error) {
      details.push(`turn ${row.turn}: request failed: ${row.error}`);
      continue;
    }
    if (row.status !== 'HIT') {
      details.push(`turn ${row.turn}: ${row.status ?? 'no log line'} (cached=${row.cached}, ` +
        `reason=${row.missReason ?? '?'})`);
      continue;
    }
    if (row.newTokens === null || row.prefill === null) {
      details.push(`turn ${row.turn}: new tokens unknown (no /apply-template), cannot check prefill`);
      continue;
    }
    const limit = row.newTokens * (1 + tolerance) + allowanceFor(row, rerenderAllowance);
    if (row.prefill > limit) {
      details.push(`turn ${row.turn}: prefill ${row.prefill} > ${limit.toFixed(1)} ` +
        `(new ${row.newTokens}, reply re-render ${row.replySpan})` +
        (row.divergence ? `; ${row.divergence.line}` : ''));
    }
  }
  return { name: 'warm-hits', ok: details.length === 0, details };
}

export function checkTimestamp(rows) {
  const details = [];
  for (const row of rows.slice(1)) {
    if (row.error) {
      details.push(`turn ${row.turn}: request failed: ${row.error}`);
      continue;
    }
    const span = row.markerSpan;
    const d = row.divergence;
    if (!span) details.push(`turn ${row.turn}: the id's token position is unknown`);
    if (span && row.cached !== null && row.cached > span.start) {
      details.push(`turn ${row.turn}: restored ${row.cached} tokens, past the id at ${span.start}`);
    }
    if (!d) {
      details.push(`turn ${row.turn}: no divergence line`);
      continue;
    }
    if (span && !(d.pos >= span.start && d.pos <= span.end)) {
      details.push(`turn ${row.turn}: divergence pos=${d.pos} outside the id's tokens ` +
        `[${span.start}, ${span.end}]`);
    }
    const shown = `${d.before ?? ''}${d.incoming ?? ''}`;
    if (!shown.includes(row.marker)) {
      details.push(`turn ${row.turn}: divergence text does not show the id ${row.marker}: ${d.line}`);
    }
  }
  return { name: 'timestamp-divergence', ok: details.length === 0, details };
}

export function checkSameHitRate(rows, baselineRows, summarize) {
  const a = summarize(rows).hitRate;
  const b = summarize(baselineRows).hitRate;
  const ok = a !== null && a === b;
  return { name: 'same-hit-rate', ok,
    details: ok ? [] : [`hit rate ${a} with the flood, ${b} in the clean run`] };
}

// The scenario's event happened at least once (a short session could end before it), so a
// passing check always means something was tested.
export function checkExercised(scenario, rows) {
  const ok = rows.filter((r) => !r.error);
  const events = {
    interrupt: ok.filter((r) => r.interrupted).length,
    regenerate: ok.filter((r) => r.kind === 'regenerate').length,
    restart: ok.filter((r) => r.epoch > 1).length,
  };
  const count = events[scenario] ?? Math.max(0, ok.length - 1);
  return { name: 'scenario-exercised', ok: count > 0,
    details: count > 0 ? [] : [`no ${scenario} event in ${ok.length} turns: lengthen the session`] };
}
