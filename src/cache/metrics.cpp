#include "cache/metrics.h"

#include <algorithm>

namespace qmlx {

Histogram Histogram::seconds() {
  Histogram h;
  h.upper_bounds = {0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
  h.counts.assign(h.upper_bounds.size() + 1, 0);
  return h;
}

void Histogram::observe(double value) {
  size_t bucket = size_t(std::lower_bound(upper_bounds.begin(), upper_bounds.end(), value) -
                         upper_bounds.begin());
  ++counts[bucket];
  sum += value;
  ++count;
}

uint64_t CacheStats::dropped_total() const {
  uint64_t total = 0;
  for (const auto& [reason, n] : checkpoint_dropped) total += n;
  return total;
}

namespace {

nlohmann::json histogram_json(const Histogram& h) {
  return nlohmann::json{
      {"upper_bounds", h.upper_bounds}, {"counts", h.counts}, {"sum", h.sum}, {"count", h.count}};
}

}  // namespace

nlohmann::json SharedTierStats::to_json() const {
  return nlohmann::json{{"enabled", enabled},
                        {"breaker_open", breaker_open},
                        {"breaker_opens", breaker_opens},
                        {"lookups", lookups},
                        {"hits", hits},
                        {"bytes_read", bytes_read},
                        {"bytes_written", bytes_written},
                        {"blobs_written", blobs_written},
                        {"chunks_skipped", chunks_skipped},
                        {"corrupt_deleted", corrupt_deleted},
                        {"errors", errors},
                        {"call_seconds", histogram_json(call_seconds)}};
}

nlohmann::json CacheStats::to_json() const {
  const auto& histogram = histogram_json;
  return nlohmann::json{{"hits", hits},
                        {"misses", misses},
                        {"cached_tokens", cached_tokens},
                        {"prefill_tokens", prefill_tokens},
                        {"restore_seconds", histogram(restore_seconds)},
                        {"restore_bytes", restore_bytes},
                        {"restore_rejected", restore_rejected},
                        {"checkpoint_writes", checkpoint_writes},
                        {"checkpoint_write_seconds", histogram(checkpoint_write_seconds)},
                        {"checkpoint_queue_depth", checkpoint_queue_depth},
                        {"checkpoint_dropped", checkpoint_dropped},
                        {"disk_cache_bytes", disk_cache_bytes},
                        {"disk_cache_snapshots", disk_cache_snapshots},
                        {"disk_cache_chunks", disk_cache_chunks},
                        {"memory_cache_bytes", memory_cache_bytes},
                        {"evictions", evictions},
                        {"divergences", divergences},
                        {"quarantined", quarantined},
                        {"leftovers_removed", leftovers_removed},
                        {"disk_errors", disk_errors},
                        {"shared", shared.to_json()}};
}

void CacheMetrics::count_hit(int64_t cached_tokens, const std::string& tier) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++stats_.hits;
  stats_.cached_tokens[tier] += uint64_t(cached_tokens);
}

void CacheMetrics::count_miss(const std::string& reason) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++stats_.misses[reason];
}

void CacheMetrics::count_prefill(int64_t tokens) {
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.prefill_tokens += uint64_t(tokens);
}

void CacheMetrics::observe_restore(double seconds, uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.restore_seconds.observe(seconds);
  stats_.restore_bytes += bytes;
}

void CacheMetrics::count_reject(const std::string& reason) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++stats_.restore_rejected[reason];
}

void CacheMetrics::observe_write(const std::string& kind, double seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++stats_.checkpoint_writes[kind];
  stats_.checkpoint_write_seconds.observe(seconds);
}

void CacheMetrics::count_dropped(const std::string& reason) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++stats_.checkpoint_dropped[reason];
}

void CacheMetrics::count_eviction(const std::string& reason, uint64_t n) {
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.evictions[reason] += n;
}

void CacheMetrics::count_divergence() {
  std::lock_guard<std::mutex> lock(mutex_);
  ++stats_.divergences;
}

void CacheMetrics::count_quarantined() {
  std::lock_guard<std::mutex> lock(mutex_);
  ++stats_.quarantined;
}

void CacheMetrics::count_leftovers(uint64_t n) {
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.leftovers_removed += n;
}

void CacheMetrics::count_disk_error(const std::string& kind) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++stats_.disk_errors[kind];
}

CacheStats CacheMetrics::snapshot() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

}  // namespace qmlx
