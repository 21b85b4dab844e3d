// What the peer benchmarks share: the pseudo-random prompt id streams every engine is fed (ids
// below 256: byte tokens, valid in every generated tokenizer; each seed its own stream), reading
// a qmlx SSE stream chunk by chunk with arrival times, and the statistics of the gaps between a
// stream's token arrivals.
export function promptOf(length, seed) {
  return Array.from({length}, () => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed % 256;
  });
}

function quantile(sorted, q) {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] : null;
}

// Time to first token and the gaps between tokens (median, p90, max) of arrival `times`
// (performance.now() values) for a request sent at `sent`.
export function arrivalStats(sent, times) {
  const gaps = times.slice(1).map((t, i) => t - times[i]).sort((a, b) => a - b);
  return {short_ttft_ms: times[0] - sent, short_tokens: times.length,
          gap_median_ms: quantile(gaps, 0.5), gap_p90_ms: quantile(gaps, 0.9),
          gap_max_ms: gaps.at(-1) ?? null};
}

// The JSON chunks of an SSE response body, each with its arrival time (performance.now());
// throws on an error chunk.
export async function* sseChunks(response) {
  const decoder = new TextDecoder();
  let buffer = "";
  for await (const piece of response.body) {
    const now = performance.now();
    buffer += decoder.decode(piece, {stream: true});
    for (let cut; (cut = buffer.indexOf("\n\n")) >= 0;) {
      const data = buffer.slice(0, cut).split("\n").filter((l) => l.startsWith("data: "))
          .map((l) => l.slice(6)).join("");
      buffer = buffer.slice(cut + 2);
      if (!data || data === "[DONE]") continue;
      const chunk = JSON.parse(data);
      if (chunk.error) throw new Error(JSON.stringify(chunk.error));
      yield {chunk, now};
    }
  }
}
