#include "server/scheduling/scheduler.h"

#include <algorithm>
#include <cstdio>

#include "base/error.h"
#include "base/logging.h"

namespace qmlx::server {
namespace {

std::string mib(uint64_t bytes) { return std::to_string((bytes + (1 << 20) - 1) >> 20); }

// The prompt's conversation without the generation prompt (the next turn re-renders that part
// with the reply), or all of it when the offset is unknown.
std::span<const int32_t> conversation_head(const RenderedPrompt& prompt) {
  const std::span<const int32_t> ids(prompt.ids);
  return prompt.last_message_end > 0 && prompt.last_message_end <= int64_t(ids.size())
             ? ids.first(size_t(prompt.last_message_end))
             : ids;
}

// A fresh state for a slot whose work failed. Making it may fail too (a lost device cannot make
// one): the slot then keeps its old state, and its next job fails the same way, with its own
// answer, instead of the worker thread ending.
void reset_after_failure(InferenceSession& session) {
  try {
    session.reset();
  } catch (const std::exception& e) {
    log_error(std::string("could not reset the slot after a failure: ") + e.what());
  }
}

}  // namespace

uint64_t sequence_state_bytes(const StateLayout& layout, int64_t tokens, int speculative_tokens) {
  const uint64_t positions = uint64_t(std::max<int64_t>(tokens, 0));
  uint64_t bytes = positions * layout.kv_bytes_per_token() + layout.recurrent_bytes();
  if (speculative_tokens > 0)
    bytes += positions * 2 * layout.kv_row_bytes() +
             uint64_t(speculative_tokens + 1) * layout.recurrent_bytes();
  return bytes;
}

Scheduler::Scheduler(const ModelRuntime& runtime, CacheHooks& hooks, ServerMetrics* metrics,
                     size_t max_queue, RunnerSettings settings, SchedulerLimits limits,
                     ActivityLog* activity)
    : runtime_(runtime),
      hooks_(hooks),
      metrics_(metrics),
      activity_(activity),
      max_queue_(max_queue),
      settings_(settings),
      limits_(limits) {
  if (metrics_ && runtime_.listen_steps) {
    runtime_.listen_steps([metrics = metrics_](int sequences, int, double seconds) {
      metrics->record_step(sequences, seconds);
    });
  }
  const size_t slots = size_t(std::max(1, limits_.parallel));
  slot_state_.resize(slots);
  for (size_t i = 0; i < slots; ++i) slots_.emplace_back([this, i] { slot_loop(i); });
}

Scheduler::~Scheduler() { stop(std::chrono::milliseconds(0)); }

uint64_t Scheduler::worst_case_bytes(const GenerationJob& job) const {
  const int64_t tokens = int64_t(job.prompt().ids.size()) + job.request().max_tokens.value_or(1);
  return sequence_state_bytes(runtime_.state_layout, tokens, runtime_.speculative_tokens);
}

void Scheduler::submit(std::shared_ptr<GenerationJob> job) {
  const uint64_t need = worst_case_bytes(*job);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) throw ApiError(503, "the server is shutting down");
    if (limits_.memory_budget_bytes > 0 && need > limits_.memory_budget_bytes) {
      throw ApiError(503, "the request needs up to " + mib(need) +
                              " MiB of sequence state (prompt + max_tokens), more than the " +
                              std::to_string(limits_.memory_budget_bytes >> 20) +
                              " MiB batch memory budget (" + limits_.memory_budget_source +
                              "); lower max_tokens or shorten the prompt");
    }
    // Jobs that free slots are about to take do not count as waiting.
    const size_t free_slots = slot_state_.size() - active_.size();
    if (queue_.size() >= max_queue_ + free_slots && !active_.empty()) {
      throw ApiError(429, "too many requests are waiting for the model; retry later");
    }
    queue_.push_back({std::move(job), Clock::now()});
    publish_gauges();
  }
  changed_.notify_all();
}

size_t Scheduler::affinity_slot(std::span<const int32_t> prompt) const {
  size_t best = kNoSlot, held = 0;
  for (size_t s = 0; s < slot_state_.size(); ++s) {
    const Slot& state = slot_state_[s];
    size_t holds = prompt_needs(prompt, state.producing) ? state.producing.size() : 0;
    // A turn sent while the slot still generates the one before does not wait for it.
    if (state.last_job && state.last_job->answered()) {
      const std::span<const int32_t> head = conversation_head(state.last_job->prompt());
      if (prompt_needs(prompt, head)) holds = std::max(holds, head.size());
    }
    if (holds > held) {  // strictly more: the lowest slot wins a tie
      best = s;
      held = holds;
    }
  }
  return best;
}

Scheduler::Decision Scheduler::decide(size_t slot, Clock::time_point now) const {
  Decision d;
  d.recheck = queue_.empty() ? Clock::time_point::max() : now + kRecheck;
  for (size_t i = 0; i < queue_.size(); ++i) {
    const Waiting& waiting = queue_[i];
    const GenerationJob& job = *waiting.job;
    // A client that left while its job waited: any slot ends it at once, needing nothing.
    if (job.cancelled()) {
      d.take = i;
      return d;
    }
    const std::span<const int32_t> prompt(job.prompt().ids);
    const size_t owner = affinity_slot(prompt);
    if (owner != kNoSlot && owner != slot) {
      const Slot& other = slot_state_[owner];
      // Its idle work is doing this job's prefill: waiting for it is progress. Anything else
      // the owner does (checkpoints after its reply, idle work it will drop) is waited for a
      // bounded while.
      const bool prefilling_it = other.idle_working && prompt_needs(prompt, other.producing);
      const Clock::time_point until = waiting.since + limits_.affinity_wait;
      if (prefilling_it || now < until) {
        if (i == 0) {
          d.front_blocker = "affinity: slot " + std::to_string(owner) +
                            (prefilling_it ? " pre-fills the beginning of its prompt"
                                           : " holds its conversation");
        }
        if (!prefilling_it) d.recheck = std::min(d.recheck, until);
        continue;  // jobs behind it may go first
      }
    }
    const uint64_t need = worst_case_bytes(job);
    if (limits_.memory_budget_bytes > 0 && !active_.empty() &&
        active_bytes_ + need > limits_.memory_budget_bytes) {
      // First come, first served: jobs behind this one wait for it.
      const std::string why = "memory budget: needs " + mib(need) + " MiB, " + mib(active_bytes_) +
                              " of " + mib(limits_.memory_budget_bytes) + " MiB held by " +
                              std::to_string(active_.size()) + " running sequences (" +
                              limits_.memory_budget_source + ")";
      if (d.front_blocker.empty()) {
        d.front_blocker = i == 0 ? why : "behind uid=" + std::to_string(job.uid()) + ", " + why;
      }
      return d;
    }
    d.take = i;
    return d;
  }
  return d;
}

void Scheduler::watch(const Decision& decision, Clock::time_point now) {
  if (queue_.empty() || decision.take != kNoSlot) return;
  Waiting& front = queue_.front();
  const Clock::time_point due = front.since + limits_.watchdog_after;
  if (front.watchdog_logged || now < due) return;
  front.watchdog_logged = true;
  const double waited = std::chrono::duration<double>(now - front.since).count();
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%.1f", waited);
  log_warn("scheduler: uid=" + std::to_string(front.job->uid()) + " has waited " + seconds +
           " s though a slot is free; held by " +
           (decision.front_blocker.empty() ? std::string("no rule (a missed wake-up)")
                                           : decision.front_blocker));
}

bool Scheduler::idle_must_yield(size_t slot, std::span<const int32_t> needed) {
  std::lock_guard<std::mutex> lock(mutex_);
  // Copied: the hook's vector may be gone by the time another slot looks (a request's prompt
  // is far longer than this copy takes, and it happens once per idle pre-fill step).
  slot_state_[slot].producing.assign(needed.begin(), needed.end());
  if (exit_) return true;
  if (queue_.empty()) return false;
  // Only the work the front job needs, on the slot that job will go to, goes on.
  const GenerationJob& front = *queue_.front().job;
  const std::span<const int32_t> prompt(front.prompt().ids);
  return front.cancelled() || !prompt_needs(prompt, needed) || affinity_slot(prompt) != slot;
}

size_t Scheduler::queued() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return queue_.size();
}

size_t Scheduler::running() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return active_.size();
}

QueueStatus Scheduler::status() const {
  std::lock_guard<std::mutex> lock(mutex_);
  QueueStatus status;
  status.running = active_.size();
  status.waiting = queue_.size();
  const Clock::time_point now = Clock::now();
  for (const Waiting& waiting : queue_) {
    status.oldest_wait_ms =
        std::max(status.oldest_wait_ms,
                 std::chrono::duration<double, std::milli>(now - waiting.since).count());
    status.stalled = status.stalled || waiting.watchdog_logged;
  }
  return status;
}

void Scheduler::publish_gauges() {
  if (metrics_) metrics_->set_sequences(active_.size(), queue_.size());
}

void Scheduler::stop(std::chrono::milliseconds grace) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (exit_ && slots_.empty()) return;
  stopping_ = true;
  changed_.wait_for(lock, grace, [&] { return queue_.empty() && active_.empty(); });
  for (auto& waiting : queue_) waiting.job->cancel();
  for (auto& job : active_) job->cancel();
  exit_ = true;
  std::vector<std::thread> slots = std::move(slots_);
  slots_.clear();
  lock.unlock();
  changed_.notify_all();
  for (std::thread& slot : slots) slot.join();
  if (metrics_ && runtime_.listen_steps) runtime_.listen_steps({});
  hooks_.flush();
}

void Scheduler::slot_loop(size_t slot) {
  std::unique_ptr<InferenceSession> session;
  bool idle_pending = false;
  for (;;) {
    std::shared_ptr<GenerationJob> job;
    uint64_t job_bytes = 0;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      while (!idle_pending) {
        // With exit_ the queued jobs are cancelled: slots end them, then leave.
        if (queue_.empty() && exit_) return;
        const Clock::time_point now = Clock::now();
        const Decision decision = decide(slot, now);
        if (decision.take != kNoSlot) {
          job = std::move(queue_[decision.take].job);
          queue_.erase(queue_.begin() + ptrdiff_t(decision.take));
          Slot& state = slot_state_[slot];
          state.producing.clear();
          state.last_job = job;
          job_bytes = worst_case_bytes(*job);
          active_.push_back(job);
          active_bytes_ += job_bytes;
          publish_gauges();
          break;
        }
        watch(decision, now);
        if (decision.recheck == Clock::time_point::max()) {
          changed_.wait(lock);
        } else {
          changed_.wait_until(lock, decision.recheck);
        }
      }
      if (!job) slot_state_[slot].idle_working = session != nullptr;
    }
    if (!job) {
      // A request ended: let the cache use the quiet time, once, or prepare what the next
      // request needs before it runs.
      idle_pending = false;
      if (session) run_idle(slot, *session);
      continue;
    }
    // The queue changed: a slot that looked at the job taken may take the one behind it.
    changed_.notify_all();
    if (!session) session = runtime_.new_session();
    run_one(*job, *session);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      active_.erase(std::find(active_.begin(), active_.end(), job));
      active_bytes_ -= job_bytes;
      idle_pending = !exit_;
      publish_gauges();
    }
    changed_.notify_all();
  }
}

void Scheduler::run_idle(size_t slot, InferenceSession& session) {
  try {
    // What it produced stays marked until this slot takes a job: the job that needs it then
    // comes here (no other slot may grab it in between).
    hooks_.on_idle(session, [this, slot](std::span<const int32_t> needed) {
      return idle_must_yield(slot, needed);
    });
  } catch (const std::exception& e) {
    // Idle work is optional: a failure costs the pre-fill, never the slot.
    log_error(std::string("idle work failed: ") + e.what());
    reset_after_failure(session);
    std::lock_guard<std::mutex> lock(mutex_);
    slot_state_[slot].producing.clear();
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    slot_state_[slot].idle_working = false;
  }
  // Jobs that waited for this slot's pre-fill, or gave way to it, look again.
  changed_.notify_all();
}

void Scheduler::run_one(GenerationJob& job, InferenceSession& session) {
  try {
    GenerationOutcome outcome = run_generation(job, session, runtime_, hooks_, settings_);
    // The client left (499), unless the server's stop cancelled it (503).
    int status = 200;
    if (outcome.finish == FinishReason::kCancelled) {
      std::lock_guard<std::mutex> lock(mutex_);
      status = stopping_ ? 503 : 499;
    }
    log_info(request_log_line(job.uid(), outcome.finish, outcome.stats, status));
    if (!outcome.stats.cache.divergence.empty()) {
      log_info("uid=" + std::to_string(job.uid()) + " " + outcome.stats.cache.divergence);
    }
    if (metrics_) metrics_->record_generation(outcome.stats);
    if (activity_) {
      activity_->record_generation(job.uid(), job.request().route, job.origin(), status,
                                   outcome.finish, outcome.stats);
    }
  } catch (const std::exception& e) {
    // A device that failed (lost, timed out, out of memory) is the server's trouble, not the
    // request's: 503, so a client retries.
    const int status = dynamic_cast<const DeviceUnavailable*>(&e) ? 503 : 500;
    log_error("uid=" + std::to_string(job.uid()) +
              " generation failed: status=" + std::to_string(status) + " " + e.what());
    if (activity_) {
      activity_->record_rejected(job.uid(), route_path(job.request().route), job.origin(), status,
                                 std::string("generation failed: ") + e.what());
    }
    GenerationEvent event;
    event.kind = GenerationEvent::Kind::kError;
    event.status = status;
    event.message = std::string("generation failed: ") + e.what();
    job.publish(std::move(event));
    reset_after_failure(session);
  }
}

}  // namespace qmlx::server
