#include "engine/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <unordered_map>

#include "base/error.h"

namespace qmlx {
namespace {

size_t usable_count(std::span<const float> logits, int32_t max_token_id) {
  if (max_token_id < 0 || size_t(max_token_id) >= logits.size()) return logits.size();
  return size_t(max_token_id) + 1;
}

void apply_penalties(std::vector<float>& l, std::span<const int32_t> history,
                     const SamplingParams& p) {
  if (history.empty()) return;
  std::unordered_map<int32_t, int> counts;
  for (int32_t id : history)
    if (id >= 0 && size_t(id) < l.size()) ++counts[id];
  for (const auto& [id, n] : counts) {
    float& v = l[id];
    if (p.repetition_penalty != 1.f)
      v = v > 0 ? v / p.repetition_penalty : v * p.repetition_penalty;
    v -= p.presence_penalty + p.frequency_penalty * float(n);
  }
}

double log_sum_exp(std::span<const float> l, size_t n) {
  float m = *std::max_element(l.begin(), l.begin() + n);
  double s = 0;
  for (size_t i = 0; i < n; ++i) s += std::exp(double(l[i]) - m);
  return m + std::log(s);
}

}  // namespace

Sampler::Sampler(const SamplingParams& params, int32_t max_token_id)
    : params_(params), max_token_id_(max_token_id), rng_(params.seed) {}

int32_t Sampler::sample(std::span<const float> logits, std::span<const int32_t> history) {
  return draw(candidates(logits, history));
}

Candidates Sampler::candidates(std::span<const float> logits,
                               std::span<const int32_t> history) const {
  const size_t n = usable_count(logits, max_token_id_);
  if (n == 0) throw Error("sampler: empty logits");
  std::vector<float> l(logits.begin(), logits.begin() + n);
  apply_penalties(l, history, params_);
  Candidates c;
  if (params_.temperature <= 0.f) {
    c.ids = {int32_t(std::max_element(l.begin(), l.end()) - l.begin())};
    c.weights = {1.0};
    return c;
  }

  // Candidates sorted by logit, most likely first, then cut by top-k.
  std::vector<int32_t> ids(n);
  std::iota(ids.begin(), ids.end(), 0);
  size_t keep = params_.top_k > 0 ? std::min(n, size_t(params_.top_k)) : n;
  std::partial_sort(ids.begin(), ids.begin() + keep, ids.end(),
                    [&](int32_t a, int32_t b) { return l[a] > l[b]; });
  ids.resize(keep);
  std::vector<double> probs(keep);
  const double top = l[ids[0]];
  double total = 0;
  for (size_t i = 0; i < keep; ++i)
    total += probs[i] = std::exp((l[ids[i]] - top) / params_.temperature);
  for (double& p : probs) p /= total;
  // top-p: the smallest prefix whose mass reaches p; min-p: relative to the most likely.
  size_t cut = keep;
  if (params_.top_p < 1.f) {
    double mass = 0;
    for (size_t i = 0; i < keep; ++i)
      if ((mass += probs[i]) >= params_.top_p) {
        cut = i + 1;
        break;
      }
  }
  if (params_.min_p > 0.f)
    while (cut > 1 && probs[cut - 1] < params_.min_p * probs[0]) --cut;
  ids.resize(cut);
  probs.resize(cut);
  c.mass = std::accumulate(probs.begin(), probs.end(), 0.0);
  c.ids = std::move(ids);
  c.weights = std::move(probs);
  return c;
}

int32_t Sampler::draw(const Candidates& c) {
  if (greedy()) return c.ids[0];
  double u = std::uniform_real_distribution<double>(0.0, c.mass)(rng_);
  for (size_t i = 0; i < c.ids.size(); ++i)
    if ((u -= c.weights[i]) < 0) return c.ids[i];
  return c.ids.back();
}

double Sampler::uniform() { return std::uniform_real_distribution<double>(0.0, 1.0)(rng_); }

double Candidates::probability(int32_t id) const {
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] == id) return weights[i] / mass;
  return 0;
}

std::vector<TokenLogprob> top_logprobs(std::span<const float> logits, int k, int32_t max_token_id) {
  const size_t n = usable_count(logits, max_token_id);
  if (n == 0 || k <= 0) return {};
  const double lse = log_sum_exp(logits, n);
  std::vector<int32_t> ids(n);
  std::iota(ids.begin(), ids.end(), 0);
  size_t keep = std::min(n, size_t(k));
  std::partial_sort(ids.begin(), ids.begin() + keep, ids.end(),
                    [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
  std::vector<TokenLogprob> out;
  for (size_t i = 0; i < keep; ++i) out.push_back({ids[i], float(logits[ids[i]] - lse)});
  return out;
}

float token_logprob(std::span<const float> logits, int32_t id, int32_t max_token_id) {
  const size_t n = usable_count(logits, max_token_id);
  if (id < 0 || size_t(id) >= n) throw Error("token_logprob: id out of range");
  return float(logits[id] - log_sum_exp(logits, n));
}

}  // namespace qmlx
