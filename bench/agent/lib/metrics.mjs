// Prometheus text scraping: the cache's disk usage and write counts after a run, from the
// server's metrics port. Families that are missing (the cache not wired in yet) read as null.

// Parses exposition text into [{name, labels, value}] samples.
export function parsePrometheus(text) {
  const samples = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = line.match(/^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)/);
    if (!m) continue;
    const labels = {};
    for (const [, k, v] of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
      labels[k] = v;
    }
    samples.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return samples;
}

function sum(samples, name) {
  const matching = samples.filter((s) => s.name === name);
  return matching.length === 0 ? null : matching.reduce((t, s) => t + s.value, 0);
}

function byLabel(samples, name, label) {
  const out = {};
  for (const s of samples.filter((x) => x.name === name)) out[s.labels[label] ?? ''] = s.value;
  return out;
}

// The numbers the report uses.
export function summarizeMetrics(samples) {
  const written = samples.find((s) => /^qmlx_.*(written|write)_bytes_total$/.test(s.name));
  return {
    diskCacheBytes: sum(samples, 'qmlx_disk_cache_bytes'),
    diskCacheSnapshots: sum(samples, 'qmlx_disk_cache_snapshots'),
    diskCacheChunks: sum(samples, 'qmlx_disk_cache_chunks'),
    writtenBytes: written ? sum(samples, written.name) : null,
    checkpointWrites: byLabel(samples, 'qmlx_checkpoint_writes_total', 'kind'),
    checkpointDropped: sum(samples, 'qmlx_checkpoint_dropped_total'),
    evictions: byLabel(samples, 'qmlx_evictions_total', 'reason'),
    restoreBytes: sum(samples, 'qmlx_restore_bytes_total'),
    divergences: sum(samples, 'qmlx_cache_divergence_total'),
  };
}

export async function scrapeMetrics(url) {
  if (!url) return null;
  try {
    const res = await fetch(url);
    if (!res.ok) return null;
    return summarizeMetrics(parsePrometheus(await res.text()));
  } catch {
    return null;
  }
}
