#include "cache/prefix_cache.h"

#include "base/elapsed.h"
#include "cache/cache_tiers.h"
#include "cache/checkpoint_commit.h"
#include "cache/divergence_search.h"
#include "cache/restore_across_tiers.h"
#include "cache/writer.h"

namespace qmlx {
namespace {

// Why the run the prompt shares with a snapshot past what was restored gave nothing deeper: a
// resume point in it failed a check, vanished while the lookup ran, or none exists there (a
// hybrid model resumes only where a snapshot was taken).
std::string unrestored_reason(const RestoreResult& result, bool evicted) {
  for (const RejectedCandidate& rejected : result.rejected) {
    if (rejected.point.position > result.cached_tokens) {
      return std::string("rejected:") + reject_reason_name(rejected.reason);
    }
  }
  return evicted ? "evicted" : "no_resume_point";
}

}  // namespace

PrefixCache::PrefixCache(const CacheConfig& config, const Hash128& fingerprint,
                         const StateLayout& layout, Env* env)
    : tiers_(std::make_unique<CacheTiers>(config, fingerprint, layout, env)),
      committer_(std::make_unique<CheckpointCommitter>(*tiers_)),
      writer_(std::make_unique<SnapshotWriter>(
          size_t(config.writer_queue_capacity), [this](PendingWrite& w) { committer_->commit(w); },
          [this](const PendingWrite&) { tiers_->metrics.count_dropped("queue_full"); })),
      restorer_(std::make_unique<TierRestorer>(*tiers_, *writer_)) {}

// The writer finishes its queue first, while everything its commits use is still there.
PrefixCache::~PrefixCache() { writer_.reset(); }

const CacheConfig& PrefixCache::config() const { return tiers_->config; }

const Hash128& PrefixCache::fingerprint() const { return tiers_->fingerprint; }

std::string PrefixCache::store_dir() const { return tiers_->disk ? tiers_->disk->dir() : ""; }

std::vector<ResumePoint> PrefixCache::lookup(std::span<const int32_t> prompt) const {
  return tiers_->resume_points(prompt);
}

RestoreResult PrefixCache::restore(std::span<const int32_t> prompt, StateSink& sink,
                                   const RestoreOptions& options) {
  RestoreResult result;
  CacheMetrics& metrics = tiers_->metrics;
  if (!config().enabled()) {
    result.miss_reason = "disabled";
    if (!options.quiet) metrics.count_miss(result.miss_reason);
    return result;
  }
  const auto start = SteadyClock::now();
  const std::vector<ResumePoint> points = restorer_->resume_points(prompt, !options.quiet);
  result.lookup_seconds = seconds_since(start);
  bool evicted = false;
  restorer_->restore_deepest(points, prompt, sink, options.live, &result, &evicted);
  if (options.quiet) return result;
  if (result.hit) {
    metrics.count_hit(result.cached_tokens, result.tier);
    if (result.tier == "shared") tiers_->shared->store().count_hit();
    if (result.tier != kSessionTier)
      metrics.observe_restore(seconds_since(start), result.bytes_read);
  } else {
    metrics.count_miss(result.miss_reason);
  }
  result.divergence = explain(prompt, result.cached_tokens);
  if (result.divergence) {
    result.divergence->unrestored = unrestored_reason(result, evicted);
    metrics.count_divergence();
  }
  return result;
}

RestoreOutcome PrefixCache::restore_point(const ResumePoint& point, std::span<const int32_t> prompt,
                                          StateSink& sink) {
  return restorer_->restore_point(point, prompt, sink);
}

RestoreEstimate PrefixCache::estimate(const ResumePoint& point) const {
  return restorer_->estimate(point);
}

uint64_t PrefixCache::snapshot_bytes_bound() const {
  const StateLayout& layout = tiers_->layout;
  return layout.recurrent_bytes() + uint64_t(config().chunk_tokens) * layout.kv_bytes_per_token() +
         uint64_t(layout.vocab_size) * sizeof(float);
}

void PrefixCache::count_prefill(int64_t tokens) { tiers_->metrics.count_prefill(tokens); }

bool PrefixCache::capture(const StateSource& source, std::span<const int32_t> tokens,
                          SnapshotKind kind) {
  const int64_t position = source.position();
  if (!config().enabled() || position <= 0 || int64_t(tokens.size()) < position) return false;
  tokens = tokens.first(size_t(position));
  if (!committer_->worth_capturing(prefix_hash(fingerprint(), tokens, config().chunk_tokens),
                                   kind)) {
    return false;
  }
  CaptureOptions options{fingerprint(), config().chunk_tokens, kind, tiers_->now_ms()};
  PendingWrite write = capture_state(source, tokens, options, [this](const Hash128& h) {
    {
      std::lock_guard<std::mutex> lock(tiers_->mutex);
      if (tiers_->index.has_chunk(h)) return false;
    }
    return !writer_->carries_chunk(h);
  });
  if (tiers_->memory) committer_->publish_in_memory(write);
  return writer_->submit(std::move(write));
}

void PrefixCache::flush() { writer_->flush(); }

std::optional<Divergence> PrefixCache::explain(std::span<const int32_t> prompt, int64_t restored,
                                               int64_t min_shared) {
  return find_nearest_divergence(*tiers_, prompt, restored, min_shared);
}

void PrefixCache::set_available_memory_source(std::function<uint64_t()> source) {
  restorer_->set_available_memory_source(std::move(source));
}

void PrefixCache::set_clock(std::function<int64_t()> now_ms) { tiers_->now_ms = std::move(now_ms); }

}  // namespace qmlx
