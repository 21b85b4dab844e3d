#include "engine/step_time_model.h"

#include <algorithm>
#include <cmath>

namespace qmlx {
namespace {

// How fast old steps are forgotten: about the last 50 steps count.
constexpr double kForgetting = 0.98;
// Steps with prompt rows seen before predictions are trusted (the fit needs a few depths).
constexpr int kStepsToKnow = 4;
// Forgetting inflates the uncertainty of a direction no step excites (hundreds of decode-only
// steps say nothing of prompt rows); capped, so the next step that does cannot overflow it.
constexpr double kMaxVariance = 1e6;

}  // namespace

void StepShape::add_rows(bool prompt, int64_t depth, int64_t rows) {
  if (rows <= 0) return;
  (prompt ? prompt_rows : decode_rows) += rows;
  // Rows at depths depth .. depth + rows - 1 attend to depth + 1 .. depth + rows positions.
  attended += double(rows) * double(depth) + double(rows) * double(rows + 1) / 2;
}

StepTimeModel::StepTimeModel() {
  // A wide prior: the first steps move the weights freely. Features are scaled (features())
  // so that one prior fits all four.
  for (int i = 0; i < kFeatures; ++i) covariance_[size_t(i)][size_t(i)] = 1e4;
}

StepTimeModel::Vector StepTimeModel::features(const StepShape& shape) {
  // Scaled to similar magnitudes for a well-conditioned fit: rows in hundreds, attention in
  // millions of position pairs.
  return {1.0, double(shape.decode_rows) / 100.0, double(shape.prompt_rows) / 100.0,
          shape.attended / 1e6};
}

void StepTimeModel::observe(const StepShape& shape, double seconds) {
  if (!(seconds >= 0) || !std::isfinite(seconds)) return;
  const Vector x = features(shape);
  std::lock_guard<std::mutex> lock(mutex_);
  // Standard recursive least squares: gain k = P x / (lambda + x' P x).
  Vector px{};
  for (int i = 0; i < kFeatures; ++i)
    for (int j = 0; j < kFeatures; ++j)
      px[size_t(i)] += covariance_[size_t(i)][size_t(j)] * x[size_t(j)];
  double denominator = kForgetting;
  for (int i = 0; i < kFeatures; ++i) denominator += x[size_t(i)] * px[size_t(i)];
  double predicted = 0;
  for (int i = 0; i < kFeatures; ++i) predicted += weights_[size_t(i)] * x[size_t(i)];
  const double error = seconds - predicted;
  for (int i = 0; i < kFeatures; ++i) weights_[size_t(i)] += px[size_t(i)] / denominator * error;
  for (int i = 0; i < kFeatures; ++i)
    for (int j = 0; j < kFeatures; ++j)
      covariance_[size_t(i)][size_t(j)] =
          (covariance_[size_t(i)][size_t(j)] - px[size_t(i)] * px[size_t(j)] / denominator) /
          kForgetting;
  for (int i = 0; i < kFeatures; ++i) {
    const double variance = covariance_[size_t(i)][size_t(i)];
    if (variance <= kMaxVariance) continue;
    const double scale = std::sqrt(kMaxVariance / variance);  // row and column: stays symmetric
    for (int j = 0; j < kFeatures; ++j) {
      covariance_[size_t(i)][size_t(j)] *= scale;
      covariance_[size_t(j)][size_t(i)] *= scale;
    }
  }
  if (shape.prompt_rows > 0) ++prompt_steps_seen_;
}

bool StepTimeModel::known() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return prompt_steps_seen_ >= kStepsToKnow;
}

double StepTimeModel::predict_locked(const StepShape& shape) const {
  const Vector x = features(shape);
  // Each term is a cost: a weight the noise drove negative counts as nothing, so a prediction
  // never shrinks as rows are added.
  double t = 0;
  for (int i = 0; i < kFeatures; ++i) t += std::max(0.0, weights_[size_t(i)]) * x[size_t(i)];
  return t;
}

double StepTimeModel::predict(const StepShape& shape) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return predict_locked(shape);
}

int64_t StepTimeModel::prompt_rows_within(const StepShape& base, int64_t depth,
                                          double budget_seconds, int64_t limit) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (limit <= 1) return std::max<int64_t>(limit, 0);
  // What the step holds already fills the budget: one row, the least that makes progress. (Not
  // left to the search below: where noise drove the prompt-row terms to nothing, every count
  // would "fit" a budget the step already spent, and a 1 us bound took whole chunks.)
  if (predict_locked(base) >= budget_seconds) return 1;
  // The step's time grows with the rows added: the largest count within the budget, by halving.
  auto fits = [&](int64_t rows) {
    StepShape shape = base;
    shape.add_rows(true, depth, rows);
    return predict_locked(shape) <= budget_seconds;
  };
  if (fits(limit)) return limit;
  int64_t lo = 1, hi = limit;  // fits(lo) or lo == 1; !fits(hi)
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    (fits(mid) ? lo : hi) = mid;
  }
  return lo;
}

double StepTimeModel::prefill_rate(int64_t depth, int64_t chunk) const {
  StepShape shape;
  shape.add_rows(true, depth, chunk);
  const double seconds = predict(shape);
  return seconds > 0 ? double(chunk) / seconds : 0;
}

}  // namespace qmlx
