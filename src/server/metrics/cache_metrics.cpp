#include "server/metrics/cache_metrics.h"

namespace qmlx::server {
namespace {

void mirror(Counter& counter, const LabeledCounts& counts) {
  for (const auto& [label, value] : counts) counter.set_total(double(value), {label});
}

void mirror(Histogram& family, const qmlx::Histogram& source) {
  family.set_series(source.counts, source.count, source.sum);
}

}  // namespace

void export_cache_metrics(MetricsRegistry& registry, const PrefixCache& cache) {
  const std::vector<double> seconds = qmlx::Histogram::seconds().upper_bounds;
  Counter& hits = registry.counter("qmlx_cache_hit_total", "Requests that restored a prefix");
  Counter& misses = registry.counter("qmlx_cache_miss_total",
                                     "Requests that restored nothing, by reason", {"reason"});
  Counter& cached = registry.counter("qmlx_cached_tokens_total",
                                     "Prompt tokens restored from the cache, by tier", {"tier"});
  Histogram& restore_seconds = registry.histogram(
      "qmlx_restore_seconds", "Time to look up, read, verify and install a restore", seconds);
  Counter& restore_bytes = registry.counter("qmlx_restore_bytes_total",
                                            "Bytes read by restores (RAM, disk and shared tiers)");
  Counter& rejected =
      registry.counter("qmlx_restore_rejected_total",
                       "Resume points rejected before install, by reason", {"reason"});
  Counter& writes = registry.counter("qmlx_checkpoint_writes_total",
                                     "Checkpoints committed to the store, by kind", {"kind"});
  Histogram& write_seconds = registry.histogram(
      "qmlx_checkpoint_write_seconds", "Background time to commit one checkpoint", seconds);
  Gauge& queue_depth =
      registry.gauge("qmlx_checkpoint_queue_depth", "Checkpoints waiting for the writer");
  Counter& dropped = registry.counter("qmlx_checkpoint_dropped_total",
                                      "Checkpoints given up before commit, by reason", {"reason"});
  Gauge& disk_bytes = registry.gauge("qmlx_disk_cache_bytes", "Bytes held by the disk store");
  Gauge& snapshots = registry.gauge("qmlx_disk_cache_snapshots", "Snapshots in the disk store");
  Gauge& chunks = registry.gauge("qmlx_disk_cache_chunks", "K/V chunks in the disk store");
  Gauge& memory_bytes =
      registry.gauge("qmlx_memory_cache_bytes", "Bytes held by the RAM tier of the cache");
  Counter& evictions = registry.counter("qmlx_evictions_total",
                                        "Files evicted from the store, by reason", {"reason"});
  Counter& divergences = registry.counter("qmlx_cache_divergence_total",
                                          "Requests that shared more with the cache than restored");
  Counter& quarantined =
      registry.counter("qmlx_cache_quarantined_total", "Store files quarantined as corrupt");
  // The shared tier (Redis Cluster); all zero when it is not configured.
  Counter& shared_lookups = registry.counter(
      "qmlx_shared_tier_lookups_total", "Restores that probed the shared tier for resume points");
  Counter& shared_hits = registry.counter("qmlx_shared_tier_hits_total",
                                          "Restores that read files from the shared tier");
  Counter& shared_bytes = registry.counter(
      "qmlx_shared_tier_bytes_total", "Bytes moved to and from the shared tier", {"direction"});
  Counter& shared_errors = registry.counter("qmlx_shared_tier_errors_total",
                                            "Failed shared-tier calls, by kind", {"kind"});
  Counter& shared_skipped = registry.counter("qmlx_shared_tier_chunks_skipped_total",
                                             "Chunks not published: already in the shared tier");
  Counter& shared_deleted =
      registry.counter("qmlx_shared_tier_corrupt_deleted_total",
                       "Shared-tier values that failed verification and were deleted");
  Histogram& shared_seconds = registry.histogram(
      "qmlx_shared_tier_call_seconds", "Time of one shared-tier call (get, put, probe)", seconds);
  Gauge& shared_breaker = registry.gauge("qmlx_shared_tier_breaker_open",
                                         "1 while a shared-tier node's circuit breaker is open");
  Counter& disk_errors = registry.counter(
      "qmlx_disk_cache_errors_total",
      "Failed file operations of the disk tier (each a miss or a skipped checkpoint), by kind",
      {"kind"});

  registry.on_scrape([&, &cache = cache] {
    CacheStats s = cache.stats();
    hits.set_total(double(s.hits));
    mirror(misses, s.misses);
    mirror(cached, s.cached_tokens);
    mirror(restore_seconds, s.restore_seconds);
    restore_bytes.set_total(double(s.restore_bytes));
    mirror(rejected, s.restore_rejected);
    mirror(writes, s.checkpoint_writes);
    mirror(write_seconds, s.checkpoint_write_seconds);
    queue_depth.set(double(s.checkpoint_queue_depth));
    mirror(dropped, s.checkpoint_dropped);
    disk_bytes.set(double(s.disk_cache_bytes));
    snapshots.set(double(s.disk_cache_snapshots));
    chunks.set(double(s.disk_cache_chunks));
    memory_bytes.set(double(s.memory_cache_bytes));
    mirror(evictions, s.evictions);
    divergences.set_total(double(s.divergences));
    quarantined.set_total(double(s.quarantined));
    shared_lookups.set_total(double(s.shared.lookups));
    shared_hits.set_total(double(s.shared.hits));
    shared_bytes.set_total(double(s.shared.bytes_read), {"read"});
    shared_bytes.set_total(double(s.shared.bytes_written), {"written"});
    mirror(shared_errors, s.shared.errors);
    shared_skipped.set_total(double(s.shared.chunks_skipped));
    shared_deleted.set_total(double(s.shared.corrupt_deleted));
    mirror(shared_seconds, s.shared.call_seconds);
    shared_breaker.set(s.shared.breaker_open ? 1 : 0);
    mirror(disk_errors, s.disk_errors);
  });
}

}  // namespace qmlx::server
