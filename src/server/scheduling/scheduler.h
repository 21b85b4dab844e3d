// Scheduler: the engine's slots. --parallel N slots each run one job at a time on their own
// job thread and their own Session, which stays warm between requests; the sessions share the
// engine's batch step loop (engine/batch_engine.h), so the N sequences decode together. Jobs
// wait in a bounded FIFO for a slot and for memory: a job is admitted when its worst case
// (prompt + max_tokens rows of K/V plus the recurrent state) fits in the batch memory budget
// beside the running sequences. After each job the cache's on_idle hook may use the slot's
// session: it gives way to the next job unless that job needs its work (a fast client's next
// turn arriving during the pre-fill of its own history). At submit time a full queue is refused
// (429), as is a job that could not fit even alone, or anything after stop() began (503).
//
// Affinity. A job whose prompt begins with what one slot's session holds (the history its idle
// work pre-fills, or the conversation its last job just answered) belongs to that slot: it
// would restore a checkpoint or prefill again anywhere else. Exactly one slot is preferred (the
// one holding the most of the prompt, the lowest on a tie), so two slots never wait for each
// other. The job waits for that slot while its idle work produces the prompt's beginning (work
// the job needs done anyway) and otherwise at most `affinity_wait`; then any free slot takes it.
// Jobs behind one that waits for its slot may go first; a job that waits for memory holds back
// those behind it (first come, first served). A cancelled job needs neither: any slot ends it.
//
// No wait is unbounded: a waiting slot re-checks the queue at least every kRecheck (a client
// that left while queued is noticed then), and a job that no free slot has taken for
// `watchdog_after` is logged once with the rule that holds it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "server/activity/activity_log.h"
#include "server/metrics/server_metrics.h"
#include "server/scheduling/cache_hooks.h"
#include "server/scheduling/generation_job.h"
#include "server/scheduling/generation_runner.h"
#include "server/scheduling/model_runtime.h"

namespace qmlx::server {

struct SchedulerLimits {
  int parallel = 1;  // slots: sequences in flight at once
  // Bytes of sequence state (K/V + recurrent) the running sequences may need together, at
  // worst; 0: no limit beyond the slots.
  uint64_t memory_budget_bytes = 0;
  // What set the budget, for 503s and the queue's log lines: "--max-batch-memory", or the
  // device memory that capped it (ModelRuntime::device_memory_note).
  std::string memory_budget_source = "--max-batch-memory";
  // How long a job waits for the slot that holds its conversation when that slot is not
  // pre-filling it (it is finishing the last turn's checkpoints, or its idle work is elsewhere).
  std::chrono::milliseconds affinity_wait{2000};
  // A job no free slot has taken for this long is logged once, with the rule that holds it.
  std::chrono::milliseconds watchdog_after{60000};
};

// The state one sequence of `tokens` positions holds: K/V rows of every attention layer and the
// recurrent state of every Gated DeltaNet layer; with speculative decoding of k drafts, also
// the MTP head's own K/V rows (one attention layer) and the recurrent state after each of a
// verify call's k + 1 rows (kept for the rollback, on the CPU as on a device).
uint64_t sequence_state_bytes(const StateLayout& layout, int64_t tokens,
                              int speculative_tokens = 0);

// The queue as /health shows it.
struct QueueStatus {
  size_t running = 0;
  size_t waiting = 0;
  double oldest_wait_ms = 0;  // the longest a queued job has waited (0 when none waits)
  // A job has waited past the watchdog bound while a slot was free (see the log for the rule).
  bool stalled = false;
};

class Scheduler {
 public:
  // `metrics` and `activity` (the status page's record of requests) may be null (tests).
  Scheduler(const ModelRuntime& runtime, CacheHooks& hooks, ServerMetrics* metrics,
            size_t max_queue, RunnerSettings settings = {}, SchedulerLimits limits = {},
            ActivityLog* activity = nullptr);
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
  QueueStatus status() const;

 private:
  using Clock = std::chrono::steady_clock;
  static constexpr size_t kNoSlot = size_t(-1);
  // How often a waiting slot looks at the queue though nothing woke it.
  static constexpr std::chrono::milliseconds kRecheck{250};

  struct Waiting {
    std::shared_ptr<GenerationJob> job;
    Clock::time_point since;
    bool watchdog_logged = false;
  };
  struct Slot {
    bool idle_working = false;  // inside the cache's on_idle
    // The tokens its idle work produced or is producing (what it last passed to the
    // pre-emption check), until it takes a job; empty otherwise.
    std::vector<int32_t> producing;
    // The last job it took: once answered, its session holds that conversation (prompt and
    // reply) until the slot takes another job, so the conversation's next turn is its own.
    std::shared_ptr<const GenerationJob> last_job;
  };
  // What a free slot may do now (caller holds mutex_).
  struct Decision {
    size_t take = kNoSlot;      // the queue index to take, or kNoSlot
    Clock::time_point recheck;  // when the answer may change without a notification
    std::string front_blocker;  // why the front job is not taken (empty when it is, or none)
  };

  // The one slot whose session holds the most of `prompt` (kNoSlot when none holds any).
  size_t affinity_slot(std::span<const int32_t> prompt) const;
  Decision decide(size_t slot, Clock::time_point now) const;
  // Logs, once per job, a job that has waited past the watchdog bound while `slot` is free.
  void watch(const Decision& decision, Clock::time_point now);
  // Idle work on `slot` must give way: the scheduler is stopping, or a job waits that is not
  // this slot's to take with what it produces. Records that the slot is producing `needed`.
  bool idle_must_yield(size_t slot, std::span<const int32_t> needed);
  // The most sequence state `job` can need: its prompt plus max_tokens generated rows.
  uint64_t worst_case_bytes(const GenerationJob& job) const;
  void slot_loop(size_t slot);
  void run_idle(size_t slot, InferenceSession& session);
  void run_one(GenerationJob& job, InferenceSession& session);
  void publish_gauges();  // caller holds mutex_

  const ModelRuntime& runtime_;
  CacheHooks& hooks_;
  ServerMetrics* metrics_;
  ActivityLog* activity_;
  const size_t max_queue_;
  const RunnerSettings settings_;
  const SchedulerLimits limits_;

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Waiting> queue_;
  std::vector<std::shared_ptr<GenerationJob>> active_;
  uint64_t active_bytes_ = 0;  // worst cases of the active jobs
  std::vector<Slot> slot_state_;
  bool stalled_ = false;  // the watchdog fired for a job still queued
  bool stopping_ = false;
  bool exit_ = false;
  std::vector<std::thread> slots_;
};

}  // namespace qmlx::server
