// StepTimeModel: how long an engine step will take, learned from the steps the engine runs, so
// that a step carrying decode rows can be sized to a time budget (--max-step-ms) instead of a
// token count. A step's time is modelled as
//
//   t = fixed + per_decode_row * decode_rows + per_prompt_row * prompt_rows
//       + per_attended * attended
//
// where `attended` counts (row, earlier position) pairs the step's attention reads: a prompt
// row at depth p attends to p + 1 positions, so deep tokens cost more (at 24k tokens of depth
// attention is most of a prefill token's cost). The weights are fitted by recursive least
// squares with forgetting, so the model follows the machine's load and the context's growth.
// Until it has seen enough steps it knows nothing (known() is false) and callers stay small.
#pragma once

#include <array>
#include <cstdint>
#include <mutex>

namespace qmlx {

// The rows of one step, as the time model reads them.
struct StepShape {
  int64_t decode_rows = 0;
  int64_t prompt_rows = 0;
  // Sum over the step's rows of the positions each attends to (its depth + 1).
  double attended = 0;

  // Adds a run of `rows` consecutive rows starting at position `depth`.
  void add_rows(bool prompt, int64_t depth, int64_t rows);
};

class StepTimeModel {
 public:
  StepTimeModel();
  void observe(const StepShape& shape, double seconds);
  // Whether enough steps with prompt rows were seen to predict.
  bool known() const;
  double predict(const StepShape& shape) const;
  // The most prompt rows a prefill at `depth` can add to `base` (the rest of the step) so that
  // the step lasts at most `budget_seconds`; at least 1, at most `limit`.
  int64_t prompt_rows_within(const StepShape& base, int64_t depth, double budget_seconds,
                             int64_t limit) const;
  // Prompt tokens per second of one prefill alone at `depth` (chunks of `chunk` rows).
  double prefill_rate(int64_t depth, int64_t chunk) const;

 private:
  static constexpr int kFeatures = 4;
  using Vector = std::array<double, kFeatures>;
  static Vector features(const StepShape& shape);
  double predict_locked(const StepShape& shape) const;

  mutable std::mutex mutex_;
  Vector weights_{};
  std::array<Vector, kFeatures> covariance_{};  // RLS inverse-correlation matrix
  int prompt_steps_seen_ = 0;
};

}  // namespace qmlx
