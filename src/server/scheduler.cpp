#include "server/scheduler.h"

#include <algorithm>

#include "base/logging.h"

namespace qmlx::server {

uint64_t sequence_state_bytes(const StateLayout& layout, int64_t tokens) {
  return uint64_t(std::max<int64_t>(tokens, 0)) * layout.kv_bytes_per_token() +
         layout.recurrent_bytes();
}

Scheduler::Scheduler(const ModelRuntime& runtime, CacheHooks& hooks, ServerMetrics* metrics,
                     size_t max_queue, RunnerSettings settings, SchedulerLimits limits)
    : runtime_(runtime),
      hooks_(hooks),
      metrics_(metrics),
      max_queue_(max_queue),
      settings_(settings),
      limits_(limits) {
  if (metrics_ && runtime_.listen_steps) {
    runtime_.listen_steps([metrics = metrics_](int sequences, int, double seconds) {
      metrics->record_step(sequences, seconds);
    });
  }
  const size_t slots = size_t(std::max(1, limits_.parallel));
  producing_.resize(slots);
  last_job_.resize(slots);
  for (size_t i = 0; i < slots; ++i) slots_.emplace_back([this, i] { slot_loop(i); });
}

Scheduler::~Scheduler() { stop(std::chrono::milliseconds(0)); }

uint64_t Scheduler::worst_case_bytes(const GenerationJob& job) const {
  const int64_t tokens = int64_t(job.prompt().ids.size()) + job.request().max_tokens.value_or(1);
  return sequence_state_bytes(runtime_.state_layout, tokens);
}

void Scheduler::submit(std::shared_ptr<GenerationJob> job) {
  const uint64_t need = worst_case_bytes(*job);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) throw ApiError(503, "the server is shutting down");
    if (limits_.memory_budget_bytes > 0 && need > limits_.memory_budget_bytes) {
      throw ApiError(503, "the request needs up to " +
                              std::to_string((need + (1 << 20) - 1) >> 20) +
                              " MiB of sequence state (prompt + max_tokens), more than the " +
                              std::to_string(limits_.memory_budget_bytes >> 20) +
                              " MiB batch memory budget (--max-batch-memory); lower max_tokens "
                              "or shorten the prompt");
    }
    // Jobs that free slots are about to take do not count as waiting.
    const size_t free_slots = size_t(std::max(1, limits_.parallel)) - active_.size();
    if (queue_.size() >= max_queue_ + free_slots && !active_.empty()) {
      throw ApiError(429, "too many requests are waiting for the model; retry later");
    }
    queue_.push_back(std::move(job));
    publish_gauges();
  }
  changed_.notify_all();
}

namespace {

// The prompt's conversation without the generation prompt (the next turn re-renders that part
// with the reply), or all of it when the offset is unknown.
std::span<const int32_t> conversation_head(const RenderedPrompt& prompt) {
  const std::span<const int32_t> ids(prompt.ids);
  return prompt.last_message_end > 0 && prompt.last_message_end <= int64_t(ids.size())
             ? ids.first(size_t(prompt.last_message_end))
             : ids;
}

}  // namespace

bool Scheduler::front_fits(size_t slot) const {
  if (queue_.empty() || active_.size() >= size_t(std::max(1, limits_.parallel))) return false;
  const std::vector<int32_t>& prompt = queue_.front()->prompt().ids;
  for (size_t other = 0; other < producing_.size(); ++other) {
    if (other != slot && prompt_needs(prompt, producing_[other])) return false;
  }
  // The next turn of a conversation a slot holds, sent the moment that slot answered (a fast
  // tool loop), waits the moment that slot needs to come back for it: elsewhere it would
  // restore a checkpoint instead of continuing the live session (tests/e2e/cache/
  // run_fast_client_e2e.sh). The slot holding the most of the prompt gets it (the lowest on a
  // tie, so two slots never wait for each other); a turn sent while that slot still generates
  // does not wait.
  size_t holder = slot, held = 0;
  for (size_t s = 0; s < last_job_.size(); ++s) {
    const std::shared_ptr<const GenerationJob>& last = last_job_[s];
    if (!last || !last->answered()) continue;
    const std::span<const int32_t> head = conversation_head(last->prompt());
    if (head.size() > held && prompt_needs(prompt, head)) {
      holder = s;
      held = head.size();
    }
  }
  if (holder != slot) return false;
  if (limits_.memory_budget_bytes == 0 || active_.empty()) return true;
  return active_bytes_ + worst_case_bytes(*queue_.front()) <= limits_.memory_budget_bytes;
}

bool Scheduler::idle_must_yield(size_t slot, std::span<const int32_t> needed) {
  std::lock_guard<std::mutex> lock(mutex_);
  // Copied: the hook's vector may be gone by the time another slot looks (a request's prompt
  // is far longer than this copy takes, and it happens once per idle pre-fill step).
  producing_[slot].assign(needed.begin(), needed.end());
  if (exit_) return true;
  if (queue_.empty()) return false;
  return !prompt_needs(queue_.front()->prompt().ids, needed);
}

size_t Scheduler::queued() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return queue_.size();
}

size_t Scheduler::running() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return active_.size();
}

void Scheduler::publish_gauges() {
  if (metrics_) metrics_->set_sequences(active_.size(), queue_.size());
}

void Scheduler::stop(std::chrono::milliseconds grace) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (exit_ && slots_.empty()) return;
  stopping_ = true;
  changed_.wait_for(lock, grace, [&] { return queue_.empty() && active_.empty(); });
  for (auto& job : queue_) job->cancel();
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
      // A job the budget cannot take yet waits at the front (first come, first served) until a
      // running one ends; with exit_ the queued jobs are cancelled and run to their end at once.
      changed_.wait(lock, [&] {
        return (queue_.empty() && exit_) || idle_pending || front_fits(slot) ||
               (exit_ && !queue_.empty());
      });
      if (queue_.empty() && exit_) return;
      if (!idle_pending && (front_fits(slot) || exit_)) {
        job = queue_.front();
        queue_.pop_front();
        producing_[slot] = {};
        last_job_[slot] = job;
        job_bytes = worst_case_bytes(*job);
        active_.push_back(job);
        active_bytes_ += job_bytes;
        publish_gauges();
      }
    }
    if (!job) {
      // A request ended: let the cache use the quiet time, once, or prepare what the next
      // request needs before it runs.
      idle_pending = false;
      if (session) {
        // What it produced stays marked until this slot takes a job: the job that needs it
        // then comes here (no other slot may grab it in between).
        hooks_.on_idle(*session, [this, slot](std::span<const int32_t> needed) {
          return idle_must_yield(slot, needed);
        });
      }
      continue;
    }
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
