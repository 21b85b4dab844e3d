#include "server/scheduling/prefix_cache_hooks.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>

#include "base/logging.h"
#include "engine/image_pad_keys.h"
#include "server/scheduling/model_runtime.h"

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

PrefixCacheHooks::Sequence& PrefixCacheHooks::sequence(const StateSource& session) {
  std::lock_guard<std::mutex> lock(mutex_);
  return sequences_[&session];
}

int64_t PrefixCacheHooks::live_prefix(const Sequence& seq, std::span<const int32_t> ids,
                                      const InferenceSession& session) {
  const size_t held = seq.live.size();
  if (session.position() != int64_t(held) || !prompt_needs(ids, seq.live)) return 0;
  // The whole prompt held: usable only with the logits of its last token.
  if (held == ids.size() && session.logits().empty()) return 0;
  return int64_t(held);
}

CacheLookupResult PrefixCacheHooks::lookup_and_restore(const PromptView& prompt,
                                                       InferenceSession& session) {
  Sequence& seq = sequence(session.state_source());
  seq.pending_history = nullptr;  // a request pre-empts the idle pre-fill
  const int64_t live = live_prefix(seq, prompt.ids, session);
  seq.live.clear();  // known again when this request ends
  seq.edit_stops.reset();
  seq.head_tokens = std::max<int64_t>(0, prompt.last_message_end);
  seq.prompt_tokens = int64_t(prompt.ids.size());
  end_running(session.state_source());  // what this slot's last request left, if it failed
  double shared_wait_ms = 0;
  // Only a RAM tier makes another request's checkpoint restorable the moment it is taken.
  if (cache_.config().memory_prefix_cache) {
    const std::vector<ResumePoint> points = cache_.lookup(prompt.ids);
    const int64_t have = std::max(live, points.empty() ? int64_t(0) : points.front().position);
    shared_wait_ms = await_shared_prefix(prompt, session.state_source(), have);
  }
  RestoreResult result = cache_.restore(prompt.ids, session.state_sink(), {live, false});
  CacheLookupResult out;
  out.cached_tokens = result.hit ? result.cached_tokens : 0;
  out.shared_wait_ms = shared_wait_ms;
  seq.restored = out.cached_tokens;
  settle_running(session.state_source(), out.cached_tokens);
  if (result.hit) {
    out.kind = result.tier == kSessionTier ? std::string("live")
               : result.point.is_snapshot  ? std::string(snapshot_kind_name(result.point.kind))
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
    const TokenDecoder decode = [this](std::span<const int32_t> ids) {
      // An image's pads are keys here (engine/image_pad_keys.h): shown as the pad token.
      std::vector<int32_t> mapped;
      const std::optional<int32_t> pad = tokenizer_->token_id("<|image_pad|>");
      if (pad && map_image_pad_keys(ids, *pad, &mapped)) return tokenizer_->decode(mapped);
      return tokenizer_->decode(ids);
    };
    const Divergence& d = *result.divergence;
    DivergenceText text = describe_divergence(d, decode);
    out.divergence = format_divergence(d, text);
    DivergenceReport report;
    report.position = d.position;
    report.restored = d.restored;
    if (text.cause) {
      report.cause = text.cause->kind;
      report.fix = text.cause->fix;
      report.span = std::move(text.cause->text);
    }
    report.before = std::move(text.before);
    report.cached = std::move(text.cached);
    report.incoming = std::move(text.incoming);
    out.divergence_report = std::move(report);
  }
  return out;
}

std::vector<int64_t> PrefixCacheHooks::chosen_edit_points(const PromptView& prompt,
                                                          int64_t from) const {
  const CacheConfig& config = cache_.config();
  const uint64_t bound = std::max<uint64_t>(1, cache_.snapshot_bytes_bound());
  const int64_t allowed = std::min<int64_t>(config.edit_point_checkpoints,
                                            int64_t(config.edit_point_max_bytes() / bound));
  // A point this close to a message boundary or to a deeper point saves next to nothing.
  auto near = [](int64_t a, int64_t b) { return b >= 0 && std::abs(a - b) < kMinEditPointGap; };
  std::vector<int64_t> chosen;
  // The deepest first: an edit after them all (Qwen Code drops its last reminder) keeps most.
  for (auto it = prompt.edit_points.rbegin();
       it != prompt.edit_points.rend() && int64_t(chosen.size()) < allowed && *it > from; ++it) {
    if (near(*it, prompt.last_user_start) || near(*it, prompt.last_message_end) ||
        (!chosen.empty() && near(*it, chosen.back()))) {
      continue;
    }
    chosen.push_back(*it);
  }
  std::reverse(chosen.begin(), chosen.end());
  return chosen;
}

std::vector<int64_t> PrefixCacheHooks::checkpoint_positions(const PromptView& prompt,
                                                            int64_t from) {
  const int64_t total = int64_t(prompt.ids.size());
  std::vector<int64_t> stops;
  if (!cache_.config().enabled()) return stops;
  std::vector<int64_t> boundaries = chosen_edit_points(prompt, from);
  boundaries.push_back(prompt.last_user_start);
  boundaries.push_back(prompt.last_message_end);
  for (int64_t boundary : boundaries) {
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

double PrefixCacheHooks::await_shared_prefix(const PromptView& prompt, const StateSource& session,
                                             int64_t have) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  std::unique_lock<std::mutex> lock(running_mutex_);
  // The running prefill that shares the most of this prompt beyond `have`, and where they part.
  const StateSource* other = nullptr;
  uint64_t serial = 0;
  int64_t part = 0;
  for (const auto& [key, run] : running_) {
    if (key == &session) continue;
    const size_t n = std::min(run.ids.size(), prompt.ids.size());
    int64_t point =
        std::mismatch(run.ids.begin(), run.ids.begin() + ptrdiff_t(n), prompt.ids.begin()).first -
        run.ids.begin();
    // This prompt's end needs the logits there, which only that prompt's own end carries.
    if (point == int64_t(prompt.ids.size()) && point < int64_t(run.ids.size())) --point;
    // Too little to save, or not before that prefill's next pause (already passed, or inside
    // the chunk it is feeding: only a chunk's end is checkpointed).
    if (point - have < kMinSharedPrefixTokens || point <= run.position || point < run.chunk_end) {
      continue;
    }
    if (point > part) {
      other = key;
      serial = run.serial;
      part = point;
    }
  }
  double waited_ms = 0;
  if (other != nullptr) {
    RunningPrefill& run = running_[other];
    // That prompt's end is checkpointed anyway (prompt_end); any other point is asked for.
    if (part < int64_t(run.ids.size())) {
      auto at = std::lower_bound(run.requested.begin(), run.requested.end(), part);
      if (at == run.requested.end() || *at != part) run.requested.insert(at, part);
    }
    ++waiters_;
    int64_t seen = run.settled;
    Clock::time_point last_progress = Clock::now();
    for (;;) {
      auto it = running_.find(other);
      if (it == running_.end() || it->second.serial != serial || it->second.settled >= part) break;
      if (prompt.cancelled && prompt.cancelled()) break;
      if (it->second.settled != seen) {
        seen = it->second.settled;
        last_progress = Clock::now();
      } else if (std::chrono::duration<double>(Clock::now() - last_progress).count() >
                 kSharedWaitStallSeconds) {
        log_warn("shared prefix: gave up waiting for a prefill that made no progress");
        break;
      }
      running_changed_.wait_for(lock, std::chrono::milliseconds(100));
    }
    --waiters_;
    waited_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  }
  RunningPrefill& mine = running_[&session];
  mine.ids.assign(prompt.ids.begin(), prompt.ids.end());
  mine.position = mine.chunk_end = mine.settled = 0;
  mine.requested.clear();
  mine.serial = next_serial_++;
  return waited_ms;
}

int64_t PrefixCacheHooks::chunk_end(const StateSource& session, int64_t from, int64_t end) {
  std::lock_guard<std::mutex> lock(running_mutex_);
  auto it = running_.find(&session);
  if (it == running_.end()) return end;
  RunningPrefill& run = it->second;
  auto next = std::upper_bound(run.requested.begin(), run.requested.end(), from);
  if (next != run.requested.end()) end = std::min(end, *next);
  run.position = from;
  run.chunk_end = end;
  return end;
}

bool PrefixCacheHooks::advance_running(const StateSource& session, int64_t position) {
  std::lock_guard<std::mutex> lock(running_mutex_);
  auto it = running_.find(&session);
  if (it == running_.end()) return false;
  // From here on no request asks for `position`: it is passed.
  it->second.position = std::max(it->second.position, position);
  return std::binary_search(it->second.requested.begin(), it->second.requested.end(), position);
}

void PrefixCacheHooks::settle_running(const StateSource& session, int64_t position) {
  {
    std::lock_guard<std::mutex> lock(running_mutex_);
    auto it = running_.find(&session);
    if (it == running_.end()) return;
    it->second.position = std::max(it->second.position, position);
    it->second.chunk_end = std::max(it->second.chunk_end, position);
    it->second.settled = position;
  }
  running_changed_.notify_all();
}

void PrefixCacheHooks::end_running(const StateSource& session) {
  {
    std::lock_guard<std::mutex> lock(running_mutex_);
    if (running_.erase(&session) == 0) return;
  }
  running_changed_.notify_all();
}

int PrefixCacheHooks::shared_prefix_waiters() const {
  std::lock_guard<std::mutex> lock(running_mutex_);
  return waiters_;
}

void PrefixCacheHooks::on_prefill_progress(const PromptView& prompt, const StateSource& session) {
  const int64_t position = session.position();
  const int64_t total = int64_t(prompt.ids.size());
  if (position >= total) return;  // on_prompt_end takes the end of the prompt
  const bool requested = advance_running(session, position);
  capture_progress(prompt, session, requested);
  settle_running(session, position);
}

void PrefixCacheHooks::capture_progress(const PromptView& prompt, const StateSource& session,
                                        bool requested) {
  const int64_t position = session.position();
  const int64_t every = cache_.config().prefill_checkpoint_tokens;
  Sequence& seq = sequence(session);
  // The same points checkpoint_positions chose: the prefill started where the restore ended.
  if (!seq.edit_stops) seq.edit_stops = chosen_edit_points(prompt, seq.restored);
  const std::vector<int64_t>& edit_stops = *seq.edit_stops;
  if (position == prompt.last_message_end) {
    cache_.capture(session, prompt.ids, SnapshotKind::kMessageBoundary);
  } else if (position == prompt.last_user_start) {
    cache_.capture(session, prompt.ids, SnapshotKind::kUserStart);
  } else if (std::binary_search(edit_stops.begin(), edit_stops.end(), position)) {
    cache_.capture(session, prompt.ids, SnapshotKind::kEditPoint);
  } else if (requested) {
    cache_.capture(session, prompt.ids, SnapshotKind::kSharedPrefix);
  } else if (every > 0 && position % every == 0) {
    cache_.capture(session, prompt.ids, SnapshotKind::kPrefillProgress);
  }
}

void PrefixCacheHooks::on_prompt_end(const PromptView& prompt, const StateSource& session) {
  cache_.count_prefill(int64_t(prompt.ids.size()) - sequence(session).restored);
  // A prompt that ends at its last message (no generation prompt) is a boundary too.
  SnapshotKind kind = int64_t(prompt.ids.size()) == prompt.last_message_end
                          ? SnapshotKind::kMessageBoundary
                          : SnapshotKind::kPromptEnd;
  cache_.capture(session, prompt.ids, kind);
  end_running(session);
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
  Sequence& seq = sequence(session);
  seq.pending_history = std::move(next_turn);
  seq.pending_head.assign(
      tokens.begin(), tokens.begin() + std::min<int64_t>(seq.head_tokens, int64_t(tokens.size())));
  seq.live.assign(tokens.begin(), tokens.begin() + std::clamp<int64_t>(session.position(), 0,
                                                                       int64_t(tokens.size())));
}

std::string PrefixCacheHooks::on_interrupted(std::span<const int32_t> tokens,
                                             InferenceSession& session) {
  end_running(session.state_source());
  Sequence& seq = sequence(session.state_source());
  seq.pending_history = nullptr;
  seq.live.clear();
  const int64_t kept = int64_t(tokens.size());
  if (session.position() > kept) {
    // Generation ran ahead of what reached the client. A recurrent state cannot be rewound:
    // restore the deepest resume point (the prompt's end, in RAM) and prefill the delivered
    // reply again. Nothing delivered, or a prompt not restorable yet (that would cost a whole
    // prefill): the prompt_end snapshot already covers what the client has.
    if (kept <= seq.prompt_tokens) return {};
    RestoreResult restored = cache_.restore(tokens, session.state_sink(), {0, /*quiet=*/true});
    if (!restored.hit || restored.cached_tokens < seq.prompt_tokens) {
      session.reset();
      return {};
    }
  }
  if (session.position() < kept) session.prefill(tokens.subspan(size_t(session.position())));
  const bool captured = cache_.capture(session.state_source(), tokens, SnapshotKind::kInterrupted);
  seq.live.assign(tokens.begin(), tokens.end());
  return captured ? "interrupted@" + std::to_string(kept) : std::string();
}

void PrefixCacheHooks::on_idle(InferenceSession& session, const IdlePreemption& preempted) {
  end_running(session.state_source());  // a request that failed mid-prefill said nothing else
  Sequence& seq = sequence(session.state_source());
  CanonicalHistory render = std::move(seq.pending_history);
  seq.pending_history = nullptr;
  const std::vector<int32_t> head = std::move(seq.pending_head);
  seq.pending_head.clear();
  // A waiting request that does not begin with the last prompt's messages is another
  // conversation: it must not wait for this one's rendering.
  if (!render || !cache_.config().enabled() || preempted(head)) return;
  // Each history on its own: a waiting request may need the second and not the first.
  const CanonicalHistories histories = render();
  for (const std::vector<int32_t>& ids : histories.ids) {
    prefill_history(seq, ids, histories.images, session, preempted);
  }
}

void PrefixCacheHooks::prefill_history(Sequence& seq, const std::vector<int32_t>& ids,
                                       const CanonicalImages& images, InferenceSession& session,
                                       const IdlePreemption& preempted) {
  // A waiting request that begins with this history would prefill it anyway: finish it first.
  if (preempted(ids)) return;
  std::vector<ResumePoint> points = cache_.lookup(ids);
  if (!points.empty() && points.front().position == int64_t(ids.size())) return;  // stored
  // As a request does: the images placed before the restore, encoded after it where the
  // pre-fill needs them (usually none: the live session holds the prompt).
  if (images) session.set_images(images(INT64_MAX));
  RestoreResult restored =
      cache_.restore(ids, session.state_sink(), {live_prefix(seq, ids, session), /*quiet=*/true});
  int64_t position = restored.hit ? restored.cached_tokens : 0;
  if (images) session.set_images(images(position));
  seq.live.assign(ids.begin(), ids.begin() + position);
  while (position < int64_t(ids.size())) {
    // Pre-empted halfway, the session keeps what is done (seq.live says what): a request that
    // begins with it still continues from there.
    if (preempted(ids)) return;
    int64_t n = std::min<int64_t>(kIdlePrefillChunk, int64_t(ids.size()) - position);
    std::span<const int32_t> chunk =
        std::span<const int32_t>(ids).subspan(size_t(position), size_t(n));
    session.prefill(chunk);
    seq.live.insert(seq.live.end(), chunk.begin(), chunk.end());
    position += n;
  }
  cache_.capture(session.state_source(), ids, SnapshotKind::kCanonicalHistory);
}

void PrefixCacheHooks::flush() { cache_.flush(); }

}  // namespace qmlx::server
