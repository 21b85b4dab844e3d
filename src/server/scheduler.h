// Scheduler: the engine's slots. --parallel N slots each run one job at a time on their own
// job thread and their own Session, which stays warm between requests; the sessions share the
// engine's batch step loop (engine/batch_engine.h), so the N sequences decode together. Jobs
// wait in a bounded FIFO for a slot and for memory: a job is admitted when its worst case
// (prompt + max_tokens rows of K/V plus the recurrent state) fits in the batch memory budget
// beside the running sequences. After each job the cache's on_idle hook may use the slot's
// session: it gives way to the next job unless that job needs its work (a fast client's next
// turn arriving during the pre-fill of its own history); that job then waits for that slot
// rather than running on another and prefilling the history again. At submit time a full queue is
// refused (429), as is a job that could not fit even alone, or anything after stop() began (503).
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "server/cache_hooks.h"
#include "server/generation_job.h"
#include "server/generation_runner.h"
#include "server/model_runtime.h"
#include "server/server_metrics.h"

namespace qmlx::server {

struct SchedulerLimits {
  int parallel = 1;  // slots: sequences in flight at once
  // Bytes of sequence state (K/V + recurrent) the running sequences may need together, at
  // worst; 0: no limit beyond the slots.
  uint64_t memory_budget_bytes = 0;
};

// The state one sequence of `tokens` positions holds: K/V rows of every attention layer and the
// recurrent state of every Gated DeltaNet layer.
uint64_t sequence_state_bytes(const StateLayout& layout, int64_t tokens);

class Scheduler {
 public:
  // `metrics` may be null (tests).
  Scheduler(const ModelRuntime& runtime, CacheHooks& hooks, ServerMetrics* metrics,
            size_t max_queue, RunnerSettings settings = {}, SchedulerLimits limits = {});
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Throws ApiError(429) when max_queue jobs already wait, ApiError(503) when stopping or when
  // the job's worst case exceeds the whole memory budget.
  void submit(std::shared_ptr<GenerationJob> job);

  // Stops accepting, lets the running and queued jobs finish for up to `grace`, then cancels
  // what remains (cancelled jobs reach on_interrupted), flushes the cache hooks and joins.
  void stop(std::chrono::milliseconds grace);

  size_t queued() const;
  size_t running() const;

 private:
  // Idle work on `slot` must give way: the scheduler is stopping, or a job waits whose prompt
  // does not begin with `needed`. Records that the slot is producing `needed`.
  bool idle_must_yield(size_t slot, std::span<const int32_t> needed);
  // The most sequence state `job` can need: its prompt plus max_tokens generated rows.
  uint64_t worst_case_bytes(const GenerationJob& job) const;
  // The front job can start now on `slot` (caller holds mutex_): a slot and memory are free,
  // and no other slot's idle work is producing the beginning of its prompt (that slot takes it,
  // its session holding that beginning, rather than another prefilling it again).
  bool front_fits(size_t slot) const;
  void slot_loop(size_t slot);
  void run_one(GenerationJob& job, InferenceSession& session);
  void publish_gauges();  // caller holds mutex_

  const ModelRuntime& runtime_;
  CacheHooks& hooks_;
  ServerMetrics* metrics_;
  const size_t max_queue_;
  const RunnerSettings settings_;
  const SchedulerLimits limits_;

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::shared_ptr<GenerationJob>> queue_;
  std::vector<std::shared_ptr<GenerationJob>> active_;
  uint64_t active_bytes_ = 0;  // worst cases of the active jobs
  // Per slot: the tokens its last idle work produced or is producing, until it takes a job
  // (what the hook last passed to the pre-emption check, copied), empty otherwise.
  std::vector<std::vector<int32_t>> producing_;
  // Per slot: the last job it took. Once answered, its session holds that conversation (prompt
  // and reply) until the slot takes another job, so the conversation's next turn is its own.
  std::vector<std::shared_ptr<const GenerationJob>> last_job_;
  bool stopping_ = false;
  bool exit_ = false;
  std::vector<std::thread> slots_;
};

}  // namespace qmlx::server
