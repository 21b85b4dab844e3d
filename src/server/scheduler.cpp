#include "server/scheduler.h"

#include "base/logging.h"

namespace qmlx::server {

Scheduler::Scheduler(const ModelRuntime& runtime, CacheHooks& hooks, ServerMetrics* metrics,
                     size_t max_queue, RunnerSettings settings)
    : runtime_(runtime),
      hooks_(hooks),
      metrics_(metrics),
      max_queue_(max_queue),
      settings_(settings),
      worker_([this] { worker_loop(); }) {}

Scheduler::~Scheduler() { stop(std::chrono::milliseconds(0)); }

void Scheduler::submit(std::shared_ptr<GenerationJob> job) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) throw ApiError(503, "the server is shutting down");
    if (queue_.size() >= max_queue_ && active_ != nullptr) {
      throw ApiError(429, "too many requests are waiting for the model; retry later");
    }
    queue_.push_back(std::move(job));
  }
  changed_.notify_all();
}

bool Scheduler::idle_must_yield(std::span<const int32_t> needed) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (exit_) return true;
  if (queue_.empty()) return false;
  return !prompt_needs(queue_.front()->prompt().ids, needed);
}

size_t Scheduler::queued() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return queue_.size();
}

void Scheduler::stop(std::chrono::milliseconds grace) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (exit_ && !worker_.joinable()) return;
  stopping_ = true;
  changed_.wait_for(lock, grace, [&] { return queue_.empty() && active_ == nullptr; });
  for (auto& job : queue_) job->cancel();
  if (active_) active_->cancel();
  exit_ = true;
  lock.unlock();
  changed_.notify_all();
  if (worker_.joinable()) worker_.join();
  hooks_.flush();
}

void Scheduler::worker_loop() {
  std::unique_ptr<InferenceSession> session;
  bool idle_pending = false;
  for (;;) {
    std::shared_ptr<GenerationJob> job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      changed_.wait(lock, [&] { return !queue_.empty() || exit_ || idle_pending; });
      if (queue_.empty() && exit_) return;
      if (!queue_.empty() && !idle_pending) {
        job = queue_.front();
        queue_.pop_front();
        active_ = job;
      }
    }
    if (!job) {
      // A request ended: let the cache use the quiet time, once, or prepare what the next
      // request needs before it runs.
      idle_pending = false;
      if (session) {
        hooks_.on_idle(*session,
                       [this](std::span<const int32_t> needed) { return idle_must_yield(needed); });
      }
      continue;
    }
    if (!session) session = runtime_.new_session();
    run_one(*job, *session);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      active_.reset();
      idle_pending = !exit_;
    }
    changed_.notify_all();
  }
}

void Scheduler::run_one(GenerationJob& job, InferenceSession& session) {
  try {
    GenerationOutcome outcome = run_generation(job, session, runtime_, hooks_, settings_);
    log_info(request_log_line(job.uid(), outcome.finish, outcome.stats));
    if (!outcome.stats.cache.divergence.empty()) {
      log_info("uid=" + std::to_string(job.uid()) + " " + outcome.stats.cache.divergence);
    }
    if (metrics_) metrics_->record_generation(outcome.stats);
  } catch (const std::exception& e) {
    log_error("uid=" + std::to_string(job.uid()) + " generation failed: " + e.what());
    GenerationEvent event;
    event.kind = GenerationEvent::Kind::kError;
    event.status = 500;
    event.message = std::string("generation failed: ") + e.what();
    job.publish(std::move(event));
    session.reset();
  }
}

}  // namespace qmlx::server
