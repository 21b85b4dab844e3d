// Scheduler: the single engine thread. Jobs wait in a bounded FIFO and run one at a time on
// one Session, which stays warm between requests. After each job the cache's on_idle hook may
// use it: it gives way to the next job unless that job needs its work (a fast client's next
// turn arriving during the pre-fill of its own history). A full queue is refused at submit time
// (429), as is anything after stop() began (503).
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

#include "server/cache_hooks.h"
#include "server/generation_job.h"
#include "server/generation_runner.h"
#include "server/model_runtime.h"
#include "server/server_metrics.h"

namespace qmlx::server {

class Scheduler {
 public:
  // `metrics` may be null (tests).
  Scheduler(const ModelRuntime& runtime, CacheHooks& hooks, ServerMetrics* metrics,
            size_t max_queue, RunnerSettings settings = {});
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Throws ApiError(429) when max_queue jobs already wait, ApiError(503) when stopping.
  void submit(std::shared_ptr<GenerationJob> job);

  // Stops accepting, lets the running and queued jobs finish for up to `grace`, then cancels
  // what remains (cancelled jobs reach on_interrupted), flushes the cache hooks and joins.
  void stop(std::chrono::milliseconds grace);

  size_t queued() const;

 private:
  // Idle work must give way: the scheduler is stopping, or a job waits whose prompt does not
  // begin with `needed`.
  bool idle_must_yield(std::span<const int32_t> needed) const;
  void worker_loop();
  void run_one(GenerationJob& job, InferenceSession& session);

  const ModelRuntime& runtime_;
  CacheHooks& hooks_;
  ServerMetrics* metrics_;
  const size_t max_queue_;
  const RunnerSettings settings_;

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::shared_ptr<GenerationJob>> queue_;
  std::shared_ptr<GenerationJob> active_;
  bool stopping_ = false;
  bool exit_ = false;
  std::thread worker_;
};

}  // namespace qmlx::server
