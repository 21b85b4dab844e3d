#include "engine/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "base/error.h"
#include "kernels/vec.h"

namespace qmlx {
namespace {

size_t usable_count(std::span<const float> logits, int32_t max_token_id) {
  if (max_token_id < 0 || size_t(max_token_id) >= logits.size()) return logits.size();
  return size_t(max_token_id) + 1;
}

bool penalizes(const SamplingParams& p) {
  return p.repetition_penalty != 1.f || p.presence_penalty != 0.f || p.frequency_penalty != 0.f;
}

// Each id of the history is penalised once, by its count. The counts live in a vocabulary-sized
// array (one pass over the history to count, one to apply and clear), not a hash map: a 32k-token
// conversation took 3 ms per token through std::unordered_map.
void apply_penalties(std::vector<float>& l, std::span<const int32_t> history,
                     const SamplingParams& p) {
  std::vector<int32_t> counts(l.size(), 0);
  for (int32_t id : history)
    if (id >= 0 && size_t(id) < l.size()) ++counts[size_t(id)];
  for (int32_t id : history) {
    if (id < 0 || size_t(id) >= l.size() || counts[size_t(id)] == 0) continue;
    float& v = l[size_t(id)];
    if (p.repetition_penalty != 1.f)
      v = v > 0 ? v / p.repetition_penalty : v * p.repetition_penalty;
    v -= p.presence_penalty + p.frequency_penalty * float(counts[size_t(id)]);
    counts[size_t(id)] = 0;
  }
}

// Most likely first; equal logits by id, so the order (and a seeded draw) never depends on how
// the sort happened to meet them.
struct MoreLikely {
  std::span<const float> l;
  bool operator()(int32_t a, int32_t b) const {
    return l[size_t(a)] > l[size_t(b)] || (l[size_t(a)] == l[size_t(b)] && a < b);
  }
};

// The least likely id of the most-likely-first prefix whose probability mass first reaches p (the
// least likely id of all when rounding keeps the total under p), without sorting the vocabulary:
// each id goes into a bin of -log(weight) = (top - l) / T, 1/16 wide (monotone in the order, so
// the prefix is whole bins and part of one), the bins' masses find the bin the prefix ends in, and
// only that bin's ids are sorted.
int32_t top_p_boundary(std::span<const float> l, std::span<const float> w, double total, float top,
                       float temperature, double p) {
  constexpr int kBinsPerUnit = 16, kBins = kBinsPerUnit * 48 + 1;  // the last: weights < e^-48
  auto bin_of = [&](size_t i) {
    const float r = (top - l[i]) / temperature * float(kBinsPerUnit);
    return r < float(kBins - 1) ? int(r) : kBins - 1;
  };
  std::vector<double> bin_mass(kBins, 0.0);
  for (size_t i = 0; i < l.size(); ++i) bin_mass[size_t(bin_of(i))] += w[i];
  double before = 0;  // the mass of the bins before `last`
  int last = -1;
  for (int b = 0; b < kBins; ++b) {
    if (bin_mass[size_t(b)] == 0) continue;
    if (last >= 0) before += bin_mass[size_t(last)];
    last = b;
    if ((before + bin_mass[size_t(b)]) / total >= p) break;
  }
  std::vector<int32_t> in_bin;
  for (size_t i = 0; i < l.size(); ++i)
    if (bin_of(i) == last) in_bin.push_back(int32_t(i));
  std::sort(in_bin.begin(), in_bin.end(), MoreLikely{l});
  double mass = before / total;
  for (int32_t id : in_bin)
    if ((mass += w[size_t(id)] / total) >= p) return id;
  return in_bin.back();
}

double log_sum_exp(std::span<const float> l, size_t n) {
  const float m = l[vec::argmax(l.data(), n)];
  return m + std::log(vec::sum_exp_shifted(l.data(), m, 1.f, n));
}

}  // namespace

Sampler::Sampler(const SamplingParams& params, int32_t max_token_id)
    : params_(params), max_token_id_(max_token_id), rng_(params.seed) {}

int32_t Sampler::sample(std::span<const float> logits, std::span<const int32_t> history) {
  const size_t n = usable_count(logits, max_token_id_);
  const bool every_id = !greedy() && (params_.top_k <= 0 || size_t(params_.top_k) >= n) &&
                        params_.top_p >= 1.f && params_.min_p <= 0.f &&
                        (!penalizes(params_) || history.empty());
  if (!every_id || n == 0) return draw(candidates(logits, history));
  // Temperature alone: every id is a candidate. The same draw as draw(candidates()), to the bit,
  // without building 248k candidates (3 MB) every token.
  const std::span<const float> l = logits.first(n);
  const float top = l[vec::argmax(l.data(), n)];
  weights_.resize(n);
  const double total = vec::exp_shifted(weights_.data(), l.data(), top, params_.temperature, n);
  double mass = 0;
  for (float w : weights_) mass += w / total;
  double u = std::uniform_real_distribution<double>(0.0, mass)(rng_);
  for (size_t i = 0; i < n; ++i)
    if ((u -= weights_[i] / total) < 0) return int32_t(i);
  return int32_t(n - 1);
}

Candidates Sampler::candidates(std::span<const float> logits,
                               std::span<const int32_t> history) const {
  const size_t n = usable_count(logits, max_token_id_);
  if (n == 0) throw Error("sampler: empty logits");
  std::span<const float> l = logits.first(n);
  std::vector<float> penalized;  // a copy only when penalties change it
  if (penalizes(params_) && !history.empty()) {
    penalized.assign(l.begin(), l.end());
    apply_penalties(penalized, history, params_);
    l = penalized;
  }
  Candidates c;
  if (params_.temperature <= 0.f) {
    c.ids = {int32_t(vec::argmax(l.data(), l.size()))};
    c.weights = {1.0};
    return c;
  }

  const float top = l[vec::argmax(l.data(), n)];
  const size_t keep = params_.top_k > 0 ? std::min(n, size_t(params_.top_k)) : n;
  const bool top_p = params_.top_p < 1.f;
  const bool min_p = params_.min_p > 0.f;
  if (keep < n) {
    // top-k: the k best, most likely first, normalised over them; top-p and min-p cut the tail.
    std::vector<int32_t> ids(n);
    std::iota(ids.begin(), ids.end(), 0);
    std::partial_sort(ids.begin(), ids.begin() + ptrdiff_t(keep), ids.end(), MoreLikely{l});
    ids.resize(keep);
    std::vector<double> probs(keep);
    double total = 0;
    for (size_t i = 0; i < keep; ++i)
      total += probs[i] = std::exp((double(l[size_t(ids[i])]) - top) / params_.temperature);
    for (double& p : probs) p /= total;
    size_t cut = keep;
    if (top_p) {
      double mass = 0;
      for (size_t i = 0; i < keep; ++i)
        if ((mass += probs[i]) >= params_.top_p) {
          cut = i + 1;
          break;
        }
    }
    if (min_p)
      while (cut > 1 && probs[cut - 1] < params_.min_p * probs[0]) --cut;
    ids.resize(cut);
    probs.resize(cut);
    c.mass = std::accumulate(probs.begin(), probs.end(), 0.0);
    c.ids = std::move(ids);
    c.weights = std::move(probs);
    return c;
  }

  // Every id: weights exp((l - max) / T) in id order. Nothing here sorts the vocabulary (sorting
  // 248k ids cost 38 ms a token): top-p's cut is found by top_p_boundary, and min-p's is a
  // threshold on the weight itself (the most likely id's weight is e^0 = 1).
  std::vector<float> w(n);
  const double total = vec::exp_shifted(w.data(), l.data(), top, params_.temperature, n);
  const int32_t boundary =
      top_p ? top_p_boundary(l, w, total, top, params_.temperature, params_.top_p) : -1;
  const MoreLikely more_likely{l};
  c.ids.reserve(top_p || min_p ? 0 : n);
  c.weights.reserve(top_p || min_p ? 0 : n);
  for (size_t i = 0; i < n; ++i) {
    const int32_t id = int32_t(i);
    if (top_p && id != boundary && !more_likely(id, boundary)) continue;
    const double p = w[i] / total;
    if (min_p && p < params_.min_p * (1.0 / total)) continue;
    c.ids.push_back(id);
    c.weights.push_back(p);
  }
  c.mass = std::accumulate(c.weights.begin(), c.weights.end(), 0.0);
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
