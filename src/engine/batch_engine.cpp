#include "engine/batch_engine.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <string>

#include "base/error.h"

namespace qmlx {

// A sequence's outstanding request: the rows still to feed. Lives on the caller's stack while
// the caller waits; the step loop advances `done` and sets `finished` under the engine's mutex.
struct BatchEngine::Work {
  Session* session = nullptr;
  std::span<const int32_t> tokens;
  RowKind kind = RowKind::kPrompt;
  const std::atomic<bool>* cancel = nullptr;
  float* all_logits = nullptr;    // generated rows only: [T][vocab]
  float* final_hidden = nullptr;  // generated rows only: [T][hidden]
  size_t done = 0;
  bool finished = false;
  bool cancelled = false;
  std::exception_ptr error;
};

BatchEngine::BatchEngine(std::shared_ptr<const Model> model, BatchEngineOptions options)
    : model_(std::move(model)),
      options_(options),
      step_tokens_(prefill_chunk_for(*model_, options.step_tokens)),
      thread_([this] { loop(); }) {}

BatchEngine::~BatchEngine() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  work_arrived_.notify_all();
  thread_.join();
}

void BatchEngine::set_step_observer(BatchStepObserver observer) {
  std::lock_guard<std::mutex> lock(mutex_);
  observer_ = std::move(observer);
}

void BatchEngine::calibrate(int64_t deep) {
  constexpr size_t kRows = 64;
  const int32_t vocab = model_->config().vocab_size;
  std::vector<int32_t> tokens(kRows);
  for (size_t i = 0; i < kRows; ++i) tokens[i] = int32_t((i * 7919 + 13) % size_t(vocab));
  Session scratch(model_);
  scratch.logits_.resize(scratch.layout_.vocab_size);
  const ForwardOptions forward_options{options_.delta_rule};
  auto timed_step = [&](RowKind kind, size_t rows) {
    StepShape shape;
    shape.add_rows(kind == RowKind::kPrompt, scratch.position(), int64_t(rows));
    std::vector<BatchSegment> segments = {{std::span<const int32_t>(tokens).first(rows),
                                           &scratch.state_, kind, scratch.logits_.data(), nullptr,
                                           nullptr}};
    const auto start = std::chrono::steady_clock::now();
    model_->forward_batch(segments, forward_options);
    step_times_.observe(
        shape, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  };
  timed_step(RowKind::kPrompt, kRows);  // the first touches every weight page: timed again
  scratch.reset(0);
  for (int i = 0; i < 2; ++i) timed_step(RowKind::kPrompt, kRows);
  timed_step(RowKind::kGenerated, 1);
  scratch.reset(deep);
  scratch.logits_.resize(scratch.layout_.vocab_size);
  for (int i = 0; i < 2; ++i) timed_step(RowKind::kPrompt, kRows);
  timed_step(RowKind::kGenerated, 1);
}

void BatchEngine::check_tokens(std::span<const int32_t> tokens) const {
  const int32_t vocab = model_->config().vocab_size;
  for (int32_t t : tokens)
    if (t < 0 || t >= vocab)
      throw Error("token id " + std::to_string(t) + " is outside the vocabulary (0.." +
                  std::to_string(vocab - 1) + ")");
}

bool BatchEngine::prefill(Session& session, std::span<const int32_t> tokens,
                          const PrefillProgress& progress, const std::atomic<bool>* cancel) {
  if (tokens.empty()) return true;
  if (cancel && cancel->load()) return false;
  check_tokens(tokens);
  Work work;
  work.session = &session;
  work.tokens = tokens;
  work.kind = RowKind::kPrompt;
  work.cancel = cancel;
  run(work, progress);
  return !work.cancelled;
}

void BatchEngine::decode(Session& session, int32_t token) {
  feed_generated(session, std::span<const int32_t>(&token, 1));
}

void BatchEngine::feed_generated(Session& session, std::span<const int32_t> tokens,
                                 float* all_logits, float* final_hidden) {
  if (tokens.empty()) return;
  check_tokens(tokens);
  Work work;
  work.session = &session;
  work.tokens = tokens;
  work.kind = RowKind::kGenerated;
  work.all_logits = all_logits;
  work.final_hidden = final_hidden;
  run(work, {});
}

void BatchEngine::run(Work& work, const PrefillProgress& progress) {
  if (&work.session->model() != model_.get())
    throw Error("BatchEngine: the session belongs to another model");
  work.session->logits_.resize(work.session->layout_.vocab_size);
  std::unique_lock<std::mutex> lock(mutex_);
  if (stop_) throw Error("BatchEngine: stopped");
  pending_.push_back(&work);
  work_arrived_.notify_one();
  size_t reported = 0;
  for (;;) {
    work_advanced_.wait(lock, [&] { return work.finished || work.done != reported; });
    if (work.done != reported && progress && !work.cancelled) {
      reported = work.done;
      const size_t total = work.tokens.size();
      lock.unlock();
      progress(int64_t(reported), int64_t(total));
      lock.lock();
    }
    reported = work.done;
    if (work.finished) break;
  }
  if (work.error) std::rethrow_exception(work.error);
}

std::vector<size_t> BatchEngine::plan_step() const {
  std::vector<size_t> give(pending_.size(), 0);
  size_t prefills = 0;
  bool decoding = false;
  for (size_t i = 0; i < pending_.size(); ++i) {
    if (pending_[i]->kind == RowKind::kGenerated) {
      give[i] = pending_[i]->tokens.size();  // a running decode (or verify) is never held back
      decoding = true;
    } else {
      ++prefills;
    }
  }
  // The prompt budget, shared fairly: each prefill gets an equal share, and what a short one
  // leaves goes to the others. One prefill alone gets min(budget, what it has left).
  size_t budget = size_t(step_tokens_);
  while (budget > 0 && prefills > 0) {
    size_t unsatisfied = 0;
    for (size_t i = 0; i < pending_.size(); ++i) {
      const Work& w = *pending_[i];
      if (w.kind == RowKind::kPrompt && give[i] < w.tokens.size() - w.done) ++unsatisfied;
    }
    if (unsatisfied == 0) break;
    const size_t share = std::max<size_t>(1, budget / unsatisfied);
    for (size_t i = 0; i < pending_.size() && budget > 0; ++i) {
      const Work& w = *pending_[i];
      if (w.kind != RowKind::kPrompt) continue;
      const size_t add = std::min({share, w.tokens.size() - w.done - give[i], budget});
      give[i] += add;
      budget -= add;
    }
  }
  const double seconds = decoding ? options_.max_step_seconds : options_.max_prefill_step_seconds;
  if (seconds > 0 && prefills > 0) fit_prompt_rows_in_time(give, seconds);
  return give;
}

void BatchEngine::fit_prompt_rows_in_time(std::vector<size_t>& give, double budget_seconds) const {
  // Until the model has seen a few prefill steps, a step beside decoders takes a small probe of
  // each prefill: cheap, and what the model learns from.
  constexpr size_t kProbeRows = 16;
  StepShape step;
  size_t prefills = 0;
  for (size_t i = 0; i < pending_.size(); ++i) {
    const Work& w = *pending_[i];
    if (w.kind == RowKind::kGenerated) {
      step.add_rows(false, w.session->position(), int64_t(give[i]));
    } else if (give[i] > 0) {
      ++prefills;
    }
  }
  const bool known = step_times_.known();
  for (size_t i = 0; i < pending_.size(); ++i) {
    const Work& w = *pending_[i];
    if (w.kind != RowKind::kPrompt || give[i] == 0) continue;
    if (!known) {
      give[i] = std::min(give[i], kProbeRows);
    } else {
      // An equal share of the time left to each prefill still to place.
      const double used = step_times_.predict(step);
      const double share = used + std::max(0.0, budget_seconds - used) / double(prefills);
      give[i] = size_t(
          step_times_.prompt_rows_within(step, w.session->position(), share, int64_t(give[i])));
    }
    step.add_rows(true, w.session->position(), int64_t(give[i]));
    --prefills;
  }
}

void BatchEngine::loop() {
  using Clock = std::chrono::steady_clock;
  const ForwardOptions forward_options{options_.delta_rule};
  // The sessions whose decode the last step finished: they come back for their next token.
  std::vector<const Session*> returning;
  auto all_returned = [&] {
    return std::all_of(returning.begin(), returning.end(), [&](const Session* s) {
      return std::any_of(pending_.begin(), pending_.end(),
                         [&](const Work* w) { return w->session == s; });
    });
  };
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    work_arrived_.wait(lock, [&] { return stop_ || !pending_.empty(); });
    if (pending_.empty()) return;  // stopping, nothing left
    // The first decoder back must not start a step alone: the others, a millisecond behind it
    // (sampling, the stream), would wait for the step after, and every sequence would pay two
    // steps per token (a batch of 4 ran as steps of 1 and 3). A sequence whose generation ended
    // never comes back, so the wait is short.
    if (!returning.empty()) {
      work_arrived_.wait_until(lock, Clock::now() + kRegatherWait,
                               [&] { return stop_ || all_returned(); });
      returning.clear();
    }
    // A cancelled prefill leaves at the step boundary.
    bool any_left = false;
    for (Work* w : pending_) {
      if (w->kind == RowKind::kPrompt && w->cancel && w->cancel->load()) {
        w->cancelled = w->finished = true;
        any_left = true;
      }
    }
    if (any_left) {
      std::erase_if(pending_, [](Work* w) { return w->finished; });
      work_advanced_.notify_all();
      if (pending_.empty()) continue;
    }
    const std::vector<size_t> give = plan_step();
    std::vector<BatchSegment> segments;
    std::vector<Work*> members;
    BatchStepStats stats;
    StepShape shape;
    for (size_t i = 0; i < pending_.size(); ++i) {
      if (give[i] == 0) continue;
      Work* w = pending_[i];
      shape.add_rows(w->kind == RowKind::kPrompt, w->session->position(), int64_t(give[i]));
      segments.push_back({w->tokens.subspan(w->done, give[i]), &w->session->state_, w->kind,
                          w->session->logits_.data(), w->all_logits, w->final_hidden,
                          w->session->images_});
      members.push_back(w);
      (w->kind == RowKind::kGenerated ? stats.decode_rows : stats.prompt_rows) += int(give[i]);
    }
    stats.sequences = int(members.size());
    BatchStepObserver observer = observer_;
    // The members' sessions are not touched by their (waiting) callers while the step runs.
    lock.unlock();
    const auto start = Clock::now();
    std::exception_ptr error;
    try {
      model_->forward_batch(segments, forward_options);
    } catch (...) {
      error = std::current_exception();
    }
    stats.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    if (!error) step_times_.observe(shape, stats.seconds);
    if (observer) observer(stats);
    lock.lock();
    for (size_t k = 0; k < members.size(); ++k) {
      Work* w = members[k];
      w->done += segments[k].tokens.size();
      if (error) w->error = error;
      if (error || w->done == w->tokens.size()) w->finished = true;
      if (w->finished && !error && w->kind == RowKind::kGenerated) returning.push_back(w->session);
    }
    std::erase_if(pending_, [](Work* w) { return w->finished; });
    work_advanced_.notify_all();
  }
}

}  // namespace qmlx
