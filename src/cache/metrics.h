// CacheMetrics: the counters and histograms of issue 5 "Observability and control", kept as
// plain numbers behind one mutex. The cache never formats them; the server renders a
// CacheStats copy as Prometheus text (each family once) and the CLI prints it as a table or
// JSON. Label values (reasons, kinds, tiers) are the map keys.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace qmlx {

struct Histogram {
  std::vector<double> upper_bounds;  // bucket i counts observations <= upper_bounds[i]
  std::vector<uint64_t> counts;      // per bucket (not cumulative); one extra for +Inf
  double sum = 0;
  uint64_t count = 0;

  static Histogram seconds();  // 1 ms .. 60 s
  void observe(double value);
};

using LabeledCounts = std::map<std::string, uint64_t>;

// The shared tier (Redis Cluster) seen from one server: its calls, bytes, errors and breaker.
struct SharedTierStats {
  bool enabled = false;
  bool breaker_open = false;
  uint64_t breaker_opens = 0;
  uint64_t lookups = 0;  // restores that probed the shared tier for resume points
  uint64_t hits = 0;     // restores that read at least one file from it
  uint64_t bytes_read = 0;
  uint64_t bytes_written = 0;
  uint64_t blobs_written = 0;
  uint64_t chunks_skipped = 0;   // chunks already in the shared tier, not sent again
  uint64_t corrupt_deleted = 0;  // values that failed verification, deleted from the tier
  LabeledCounts errors;          // by kind: io, redis, breaker_open
  Histogram call_seconds = Histogram::seconds();

  nlohmann::json to_json() const;
};

struct CacheStats {
  uint64_t hits = 0;
  LabeledCounts misses;         // by reason: no_candidate, rejected, disabled
  LabeledCounts cached_tokens;  // by tier: ram, disk
  uint64_t prefill_tokens = 0;
  Histogram restore_seconds = Histogram::seconds();
  uint64_t restore_bytes = 0;
  LabeledCounts restore_rejected;   // by reason: checksum, tokens, fingerprint, guard, io, format
  LabeledCounts checkpoint_writes;  // by kind
  Histogram checkpoint_write_seconds = Histogram::seconds();
  uint64_t checkpoint_queue_depth = 0;
  LabeledCounts checkpoint_dropped;  // by reason: queue_full, no_space, io, missing_chunk
  uint64_t disk_cache_bytes = 0;
  uint64_t disk_cache_snapshots = 0;
  uint64_t disk_cache_chunks = 0;
  uint64_t memory_cache_bytes = 0;
  LabeledCounts evictions;  // by reason
  uint64_t divergences = 0;
  uint64_t quarantined = 0;
  uint64_t leftovers_removed = 0;
  // by kind (disk_fault_kind): no_space, read_only, permission, missing, not_a_directory, io
  LabeledCounts disk_errors;
  SharedTierStats shared;

  uint64_t dropped_total() const;
  nlohmann::json to_json() const;
};

class CacheMetrics {
 public:
  void count_hit(int64_t cached_tokens, const std::string& tier);
  void count_miss(const std::string& reason);
  void count_prefill(int64_t tokens);
  void observe_restore(double seconds, uint64_t bytes);
  void count_reject(const std::string& reason);
  void observe_write(const std::string& kind, double seconds);
  void count_dropped(const std::string& reason);
  void count_eviction(const std::string& reason, uint64_t n = 1);
  void count_divergence();
  void count_quarantined();
  void count_leftovers(uint64_t n);
  void count_disk_error(const std::string& kind);
  // A copy of every counter; gauges (queue depth, store sizes) are filled in by the owner.
  CacheStats snapshot() const;

 private:
  mutable std::mutex mutex_;
  CacheStats stats_;
};

}  // namespace qmlx
