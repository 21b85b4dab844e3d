// BatchEngine: continuous batching. It owns the engine's step loop on its own thread; sequences
// (each a Session driven by its own job thread) hand it work and block until it is done. Each
// step gathers every pending decode (its generated rows: one, or the MTP drafts it verifies) and
// prefill chunks under a
// per-step token budget, shared fairly between the prefills (and, with max_step_seconds, cut to
// a time budget), and runs ONE Model::forward_batch
// over them (prompt tokens as prompt rows, decodes as generated rows, so a sequence's results do
// not depend on what shares its steps), so each weight is read once per step for all sequences. A
// long prefill therefore delays running decodes by at most one chunk, and a short prompt arriving
// during it is not starved. With one sequence a step is exactly the single-sequence Session: chunks
// of the budget, then one row per decode. A Session built with SessionOptions::engine routes
// prefill and decode here.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "engine/session.h"
#include "engine/step_time_model.h"
#include "model/model.h"

namespace qmlx {

struct BatchEngineOptions {
  // Prompt tokens per step, over all prefills together; 0: the model's default prefill chunk
  // (prefill_chunk_for). Decode rows come on top of it.
  int step_tokens = 0;
  // A step that carries decode rows lasts at most this long (--max-step-ms): its prompt rows
  // are sized by the measured step times (step_time_model.h), so a long prefill does not stall
  // the sequences decoding beside it. 0: no time bound, step_tokens alone.
  double max_step_seconds = 0;
  // The same bound for steps of prefills alone (no one waits on them but their own clients,
  // who may leave: a cancelled prefill stops at a step's end). 0: step_tokens alone.
  double max_prefill_step_seconds = 0;
  DeltaRuleForm delta_rule = DeltaRuleForm::kAuto;
};

// What one step ran, for metrics: sequences in it, their rows (decode + prompt) and its time.
struct BatchStepStats {
  int sequences = 0;
  int decode_rows = 0;
  int prompt_rows = 0;
  double seconds = 0;
};
using BatchStepObserver = std::function<void(const BatchStepStats&)>;

class BatchEngine {
 public:
  // How long a step waits for the decoders of the step before it to hand in their next token.
  static constexpr std::chrono::milliseconds kRegatherWait{3};

  explicit BatchEngine(std::shared_ptr<const Model> model, BatchEngineOptions options = {});
  ~BatchEngine();
  BatchEngine(const BatchEngine&) = delete;
  BatchEngine& operator=(const BatchEngine&) = delete;

  // Feeds `tokens` to `session` as prompt rows, over as many steps as the budget needs, and
  // returns when they are all in (true) or when *cancel was seen set at a step boundary (false;
  // the session is then consistent at the last step it took part in). `progress` is called on
  // the caller's thread as the tokens go in (possibly once for several steps). Token ids outside
  // the vocabulary throw qmlx::Error before anything is fed.
  bool prefill(Session& session, std::span<const int32_t> tokens,
               const PrefillProgress& progress = {}, const std::atomic<bool>* cancel = nullptr);
  // Feeds one generated row (a decode step) and returns once it is in.
  void decode(Session& session, int32_t token);
  // Feeds `tokens` as generated rows, all in one step (MTP drafts being verified): `all_logits`
  // ([T][vocab], optional) receives the logits after every row and `final_hidden` ([T][hidden],
  // optional) their final-normed hidden rows; the session's logits are those after the last.
  void feed_generated(Session& session, std::span<const int32_t> tokens,
                      float* all_logits = nullptr, float* final_hidden = nullptr);

  // Times a few steps on a scratch sequence (prompt rows at depth 0 and at `deep`, a decode row)
  // so that time-bounded steps and the prefill rate are known before the first request; the
  // deep steps attend to `deep` positions of zero K/V, which cost what real ones do. Call before
  // serving (it runs on the caller's thread, outside the step loop).
  void calibrate(int64_t deep = 8192);

  // Called on the engine thread after every step (keep it short). Set before use.
  void set_step_observer(BatchStepObserver observer);

  const Model& model() const { return *model_; }
  int step_tokens() const { return step_tokens_; }
  const BatchEngineOptions& options() const { return options_; }
  // What the engine has learnt of its step times (prefill rates at a depth, for the start line).
  const StepTimeModel& step_times() const { return step_times_; }

 private:
  struct Work;
  // Queues `work` and waits until the step loop finishes it, calling progress as it advances.
  void run(Work& work, const PrefillProgress& progress);
  void loop();
  // Picks the rows of the next step from pending_ (caller holds mutex_): how many tokens each
  // work feeds, in the order of pending_.
  std::vector<size_t> plan_step() const;
  // Cuts the prefills' rows in `give` so the step lasts about `budget_seconds`.
  void fit_prompt_rows_in_time(std::vector<size_t>& give, double budget_seconds) const;
  void check_tokens(std::span<const int32_t> tokens) const;

  std::shared_ptr<const Model> model_;
  const BatchEngineOptions options_;
  const int step_tokens_;
  BatchStepObserver observer_;
  StepTimeModel step_times_;

  std::mutex mutex_;
  std::condition_variable work_arrived_;
  std::condition_variable work_advanced_;
  std::vector<Work*> pending_;  // in arrival order
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace qmlx
