#include "server/prefix_cache_hooks.h"

#include <algorithm>

#include "base/logging.h"
#include "server/model_runtime.h"

namespace qmlx::server {
namespace {

double ms(double seconds) { return seconds * 1000.0; }

// The reason a request missed: nothing stored, or (when every candidate failed a check) the
// first candidate's rejection, which names what was wrong with the deepest resume point.
std::string miss_reason(const RestoreResult& result) {
  if (!result.rejected.empty() && result.miss_reason == "rejected") {
    return reject_reason_name(result.rejected.front().reason);
  }
  return result.miss_reason;
}

}  // namespace

PrefixCacheHooks::PrefixCacheHooks(PrefixCache& cache, std::shared_ptr<const Tokenizer> tokenizer)
    : cache_(cache), tokenizer_(std::move(tokenizer)) {}

CacheLookupResult PrefixCacheHooks::lookup_and_restore(const PromptView& prompt,
                                                       StateSink& session) {
  pending_history_ = nullptr;  // a request pre-empts the idle pre-fill
  RestoreResult result = cache_.restore(prompt.ids, session);
  CacheLookupResult out;
  out.cached_tokens = result.hit ? result.cached_tokens : 0;
  restored_ = out.cached_tokens;
  if (result.hit) {
    out.kind = result.point.is_snapshot ? std::string(snapshot_kind_name(result.point.kind))
                                        : std::string("chunk");
    out.tier = result.tier;
  } else {
    out.miss_reason = miss_reason(result);
  }
  for (const RejectedCandidate& rejected : result.rejected) {
    if (!out.rejected.empty()) out.rejected += ",";
    out.rejected += reject_reason_name(rejected.reason);
  }
  out.lookup_ms = ms(result.lookup_seconds);
  out.read_ms = ms(result.read_seconds);
  out.verify_ms = ms(result.verify_seconds);
  out.install_ms = ms(result.install_seconds);
  out.restore_bytes = result.bytes_read;
  if (result.divergence) {
    out.divergence = format_divergence(*result.divergence, [this](std::span<const int32_t> ids) {
      return tokenizer_->decode(ids);
    });
  }
  return out;
}

std::vector<int64_t> PrefixCacheHooks::checkpoint_positions(const PromptView& prompt,
                                                            int64_t from) {
  const int64_t total = int64_t(prompt.ids.size());
  std::vector<int64_t> stops;
  if (!cache_.config().enabled()) return stops;
  for (int64_t boundary : {prompt.last_user_start, prompt.last_message_end}) {
    if (boundary > from && boundary < total) stops.push_back(boundary);
  }
  const int64_t every = cache_.config().prefill_checkpoint_tokens;
  if (every > 0) {
    for (int64_t p = (from / every + 1) * every; p < total; p += every) stops.push_back(p);
  }
  std::sort(stops.begin(), stops.end());
  stops.erase(std::unique(stops.begin(), stops.end()), stops.end());
  return stops;
}

void PrefixCacheHooks::on_prefill_progress(const PromptView& prompt, const StateSource& session) {
  const int64_t position = session.position();
  const int64_t total = int64_t(prompt.ids.size());
  if (position >= total) return;  // on_prompt_end takes the end of the prompt
  const int64_t every = cache_.config().prefill_checkpoint_tokens;
  if (position == prompt.last_message_end) {
    cache_.capture(session, prompt.ids, SnapshotKind::kMessageBoundary);
  } else if (position == prompt.last_user_start) {
    cache_.capture(session, prompt.ids, SnapshotKind::kUserStart);
  } else if (every > 0 && position % every == 0) {
    cache_.capture(session, prompt.ids, SnapshotKind::kPrefillProgress);
  }
}

void PrefixCacheHooks::on_prompt_end(const PromptView& prompt, const StateSource& session) {
  cache_.count_prefill(int64_t(prompt.ids.size()) - restored_);
  // A prompt that ends at its last message (no generation prompt) is a boundary too.
  SnapshotKind kind = int64_t(prompt.ids.size()) == prompt.last_message_end
                          ? SnapshotKind::kMessageBoundary
                          : SnapshotKind::kPromptEnd;
  cache_.capture(session, prompt.ids, kind);
}

void PrefixCacheHooks::on_decode_step(const PromptView& prompt, std::span<const int32_t> tokens,
                                      const StateSource& session) {
  const int64_t every = cache_.config().checkpoint_interval_tokens;
  const int64_t generated = int64_t(tokens.size()) - int64_t(prompt.ids.size());
  if (every > 0 && generated > 0 && generated % every == 0) {
    cache_.capture(session, tokens, SnapshotKind::kInterval);
  }
}

void PrefixCacheHooks::on_generation_end(std::span<const int32_t> tokens,
                                         const StateSource& session, CanonicalHistory next_turn) {
  cache_.capture(session, tokens, SnapshotKind::kGenerationEnd);
  pending_history_ = std::move(next_turn);
}

void PrefixCacheHooks::on_interrupted(std::span<const int32_t> tokens,
                                      const StateSource& session) {
  cache_.capture(session, tokens, SnapshotKind::kInterrupted);
  pending_history_ = nullptr;
}

int64_t PrefixCacheHooks::restore_quietly(std::span<const int32_t> ids,
                                          InferenceSession& session) {
  session.reset();
  for (const ResumePoint& point : cache_.lookup(ids)) {
    // A point at the very end would need its logits; the caller skips stored histories.
    if (point.position >= int64_t(ids.size())) continue;
    if (cache_.restore_point(point, ids, session.state_sink()).ok &&
        session.position() == point.position) {
      return point.position;
    }
    session.reset();
  }
  return 0;
}

void PrefixCacheHooks::on_idle(InferenceSession& session, const std::function<bool()>& preempted) {
  CanonicalHistory render = std::move(pending_history_);
  pending_history_ = nullptr;
  if (!render || !cache_.config().enabled() || preempted()) return;
  for (const std::vector<int32_t>& ids : render()) {
    if (!prefill_history(ids, session, preempted)) return;
  }
}

bool PrefixCacheHooks::prefill_history(const std::vector<int32_t>& ids, InferenceSession& session,
                                       const std::function<bool()>& preempted) {
  if (preempted()) return false;
  std::vector<ResumePoint> points = cache_.lookup(ids);
  if (!points.empty() && points.front().position == int64_t(ids.size())) return true;  // stored
  int64_t position = restore_quietly(ids, session);
  while (position < int64_t(ids.size())) {
    if (preempted()) {
      session.reset();  // half a history is of no use to anyone
      return false;
    }
    int64_t n = std::min<int64_t>(kIdlePrefillChunk, int64_t(ids.size()) - position);
    session.prefill(std::span<const int32_t>(ids).subspan(size_t(position), size_t(n)));
    position += n;
  }
  cache_.capture(session.state_source(), ids, SnapshotKind::kCanonicalHistory);
  return true;
}

void PrefixCacheHooks::flush() { cache_.flush(); }

}  // namespace qmlx::server
