#include "cache/restore_across_tiers.h"

#include <algorithm>
#include <mutex>
#include <string>
#include <utility>

#include "base/logging.h"
#include "base/process.h"
#include "base/thread_pool.h"
#include "cache/shared_exchange.h"

namespace qmlx {

TierRestorer::TierRestorer(CacheTiers& tiers, SnapshotWriter& writer)
    : tiers_(tiers), writer_(writer), available_memory_(available_memory_bytes) {}

std::vector<ResumePoint> TierRestorer::resume_points(std::span<const int32_t> prompt,
                                                     bool count_lookup) {
  std::vector<ResumePoint> points = tiers_.resume_points(prompt);
  SharedTier* shared = tiers_.shared.get();
  if (!shared || !shared->reads()) return points;
  if (count_lookup) shared->store().count_lookup();
  for (const ResumePoint& remote :
       shared->resume_points(prompt, tiers_.fingerprint, tiers_.config.chunk_tokens,
                             tiers_.layout.has_recurrent_state())) {
    const bool local = std::any_of(points.begin(), points.end(), [&](const ResumePoint& p) {
      return p.id == remote.id && p.is_snapshot == remote.is_snapshot;
    });
    if (!local) points.push_back(remote);
  }
  std::stable_sort(points.begin(), points.end(), [](const ResumePoint& a, const ResumePoint& b) {
    if (a.position != b.position) return a.position > b.position;
    if (a.is_snapshot != b.is_snapshot) return a.is_snapshot;
    return !a.from_shared && b.from_shared;
  });
  return points;
}

void TierRestorer::restore_deepest(const std::vector<ResumePoint>& points,
                                   std::span<const int32_t> prompt, StateSink& sink, int64_t live,
                                   RestoreResult* result, bool* evicted) {
  live = std::clamp<int64_t>(live, 0, int64_t(prompt.size()));
  for (const ResumePoint& point : points) {
    if (point.position <= live) break;  // the sink already holds as much: nothing to read
    if (!point.from_shared && !tiers_.still_indexed(point)) {  // dropped with a chunk quarantined
      *evicted = true;
      continue;
    }
    RestoreOutcome outcome = restore_point(point, prompt, sink);
    result->read_seconds += outcome.read_seconds;
    result->verify_seconds += outcome.verify_seconds;
    result->install_seconds += outcome.install_seconds;
    result->bytes_read += outcome.bytes_read;
    if (!outcome.ok) {
      result->rejected.push_back({point, outcome.reason, outcome.detail});
      if (outcome.sink_cleared) live = 0;
      continue;
    }
    result->hit = true;
    result->point = point;
    result->cached_tokens = point.position;
    result->tier = outcome.any_from_shared ? "shared" : outcome.all_from_memory ? "ram" : "disk";
    break;
  }
  if (!result->hit && live > 0) {
    result->hit = true;
    result->point = ResumePoint::boundary(live, Hash128{});
    result->cached_tokens = live;
    result->tier = kSessionTier;
  }
  if (result->hit && result->tier != kSessionTier) tiers_.touch(result->point);
  if (result->hit) return;
  sink.reset(0);
  const bool all_partial =
      !result->rejected.empty() &&
      std::all_of(result->rejected.begin(), result->rejected.end(),
                  [](const RejectedCandidate& r) { return r.reason == RejectReason::kPartial; });
  result->miss_reason = points.empty() ? "no_candidate" : all_partial ? "partial" : "rejected";
}

RestoreOutcome TierRestorer::restore_point(const ResumePoint& point,
                                           std::span<const int32_t> prompt, StateSink& sink) {
  const CacheConfig& config = tiers_.config;
  if (config.restore_guard_enabled) {
    GuardDecision guard =
        check_restore_guard(estimate(point), available_memory_(), config.guard_margin_bytes());
    if (!guard.allowed) {
      tiers_.metrics.count_reject(reject_reason_name(RejectReason::kGuard));
      RestoreOutcome outcome;
      outcome.reason = RejectReason::kGuard;
      outcome.detail = "restore needs " + std::to_string(guard.needed) + " bytes, " +
                       std::to_string(guard.available) + " available above the margin";
      return outcome;
    }
  }
  RestoreRequest request{point,
                         prompt,
                         tiers_.fingerprint,
                         config.chunk_tokens,
                         config.token_blob_checksum,
                         default_pool().size()};
  const bool allow_shared = tiers_.shared && tiers_.shared->reads();
  std::mutex shared_mutex;  // chunks are fetched in parallel
  std::vector<std::pair<std::string, SharedBytes>> from_shared;
  RestoreOutcome outcome = qmlx::restore_point(
      request,
      [&](const std::string& name) {
        FetchedFile file = tiers_.fetch(name, allow_shared);
        if (file.from_shared && file.status.ok()) {
          std::lock_guard<std::mutex> lock(shared_mutex);
          from_shared.emplace_back(name, file.bytes);
        }
        return file;
      },
      sink);
  if (!outcome.ok) {
    tiers_.metrics.count_reject(reject_reason_name(outcome.reason));
    log_warn("cache: rejected resume point at " + std::to_string(point.position) + " (" +
             reject_reason_name(outcome.reason) + "): " + outcome.detail);
    const bool bad_from_shared =
        std::any_of(from_shared.begin(), from_shared.end(),
                    [&](const auto& file) { return file.first == outcome.bad_file; });
    if (!outcome.bad_file.empty()) tiers_.quarantine(outcome.bad_file, bad_from_shared);
    // A shared snapshot that is gone or bad leaves its index entry stale: drop it.
    if (point.from_shared && point.is_snapshot &&
        (outcome.reason == RejectReason::kPartial ||
         outcome.bad_file == DiskStore::snapshot_name(point.id))) {
      tiers_.shared->forget(point.base, point.id);
    }
  } else if (!from_shared.empty()) {
    adopt_from_shared(tiers_, writer_, point, from_shared);
  }
  return outcome;
}

RestoreEstimate TierRestorer::estimate(const ResumePoint& point) const {
  return estimate_restore(tiers_.layout, tiers_.config.chunk_tokens, point.position,
                          point.is_snapshot, default_pool().size());
}

}  // namespace qmlx
