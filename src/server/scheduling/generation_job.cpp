#include "server/scheduling/generation_job.h"

namespace qmlx::server {

double GenerationStats::prefill_tokens_per_second() const {
  return prefill_ms > 0 ? prefill_tokens * 1000.0 / prefill_ms : 0;
}

double GenerationStats::decode_tokens_per_second() const {
  // The first token comes from the prefill's logits; decode time covers the rest.
  return decode_ms > 0 && completion_tokens > 1 ? (completion_tokens - 1) * 1000.0 / decode_ms : 0;
}

void GenerationJob::mark_delivered(int64_t settled_tokens) {
  int64_t known = delivered_.load();
  while (settled_tokens > known && !delivered_.compare_exchange_weak(known, settled_tokens)) {
  }
}

void GenerationJob::publish(GenerationEvent event) {
  const bool last = event.kind == GenerationEvent::Kind::kDone ||
                    event.kind == GenerationEvent::Kind::kError;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    events_.push_back(std::move(event));
  }
  if (last) answered_.store(true);
  ready_.notify_one();
}

std::optional<GenerationEvent> GenerationJob::next(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!ready_.wait_for(lock, timeout, [&] { return !events_.empty(); })) return std::nullopt;
  GenerationEvent event = std::move(events_.front());
  events_.pop_front();
  return event;
}

}  // namespace qmlx::server
