// Feed-forward blocks (model-spec §3.2, §3.5): the SwiGLU MLP down(silu(gate x) * up x), and the
// MoE block: softmax router, top-k experts (renormalised when configured), each a SwiGLU MLP,
// plus a sigmoid-gated shared expert. Tokens are grouped by expert so a prefill runs each
// expert once over all its tokens.
#include <algorithm>
#include <numeric>
#include <vector>

#include "base/thread_pool.h"
#include "kernels/activations.h"
#include "kernels/matmul.h"
#include "kernels/vec.h"
#include "model/layers.h"

namespace qmlx {

void mlp_layer(const MlpWeights& w, const float* x, int T, int generated_rows, float* out) {
  const int I = w.gate.rows;
  std::vector<float> gate(size_t(T) * I), up(size_t(T) * I);
  const MatmulOutput projections[] = {{&w.gate, gate.data()}, {&w.up, up.data()}};
  matmul_many(x, T, projections, generated_rows);
  silu_mul(gate.data(), up.data(), gate.size());
  matmul(gate.data(), T, w.down, out, generated_rows);
}

namespace {

struct Route {
  int expert;
  float weight;
};

// Up to this many rows per active expert on average, experts run in parallel rather than one
// after another.
constexpr int kMaxRowsPerExpertForParallelExperts = 4;

struct RoutedToken {
  int token;
  float weight;
};

std::vector<Route> route_token(float* probs, const ModelConfig& c) {
  const int E = c.num_experts, k = c.experts_per_token;
  softmax(probs, E);
  std::vector<int> ids(E);
  std::iota(ids.begin(), ids.end(), 0);
  std::partial_sort(ids.begin(), ids.begin() + k, ids.end(),
                    [&](int a, int b) { return probs[a] > probs[b]; });
  float total = 0.f;
  for (int i = 0; i < k; ++i) total += probs[ids[i]];
  std::vector<Route> routes(k);
  for (int i = 0; i < k; ++i)
    routes[i] = {ids[i], c.norm_topk_prob ? probs[ids[i]] / total : probs[ids[i]]};
  return routes;
}

}  // namespace

void moe_layer(const MoeWeights& w, const ModelConfig& c, const float* x, int T, int generated_rows,
               float* out) {
  const int H = c.hidden_size, E = c.num_experts;
  const int first_generated = T - generated_rows;
  std::vector<float> logits(size_t(T) * E);
  matmul(x, T, w.router, logits.data(), generated_rows);
  // Per expert: the tokens routed to it and their weights, in row order (so its prompt rows
  // come before its generated rows, as the kernels want them).
  std::vector<std::vector<RoutedToken>> by_expert(E);
  for (int t = 0; t < T; ++t)
    for (const Route& r : route_token(logits.data() + size_t(t) * E, c))
      by_expert[r.expert].push_back({t, r.weight});

  std::vector<int> active;
  for (int e = 0; e < E; ++e)
    if (!by_expert[e].empty()) active.push_back(e);
  // Each active expert's output rows, gathered in its token order.
  std::vector<std::vector<float>> expert_out(active.size());
  auto run_expert = [&](size_t a) {
    const auto& tokens = by_expert[active[a]];
    const int n = int(tokens.size());
    std::vector<float> gathered(size_t(n) * H);
    for (int i = 0; i < n; ++i)
      std::copy(x + size_t(tokens[i].token) * H, x + size_t(tokens[i].token + 1) * H,
                gathered.data() + size_t(i) * H);
    int generated = 0;
    for (const RoutedToken& r : tokens) generated += r.token >= first_generated;
    expert_out[a].resize(size_t(n) * H);
    mlp_layer(w.experts[active[a]], gathered.data(), n, generated, expert_out[a].data());
  };
  // Few rows per expert (decode, of one sequence or a batch of them): each expert's matrices
  // are too small to split well, so the experts run in parallel, each on one thread, claimed
  // one at a time (a thread slowed by another process then runs fewer of them). Many rows
  // (prefill): one expert at a time, its matmuls split over the pool. Either way each row's
  // result is the same: only the threads differ.
  const bool experts_in_parallel =
      size_t(T) * c.experts_per_token <= active.size() * kMaxRowsPerExpertForParallelExperts;
  if (experts_in_parallel) {
    default_pool().parallel_chunks(active.size(), 1, [&](size_t b, size_t e) {
      for (size_t a = b; a < e; ++a) run_expert(a);
    });
  } else {
    for (size_t a = 0; a < active.size(); ++a) run_expert(a);
  }
  std::fill(out, out + size_t(T) * H, 0.f);
  for (size_t a = 0; a < active.size(); ++a) {
    const auto& tokens = by_expert[active[a]];
    for (size_t i = 0; i < tokens.size(); ++i)
      vec::axpy(out + size_t(tokens[i].token) * H, tokens[i].weight, expert_out[a].data() + i * H,
                H);
  }
  if (!w.has_shared_expert) return;
  std::vector<float> shared(size_t(T) * H), gate(T);
  mlp_layer(w.shared, x, T, generated_rows, shared.data());
  matmul(x, T, w.shared_gate, gate.data(), generated_rows);
  for (int t = 0; t < T; ++t)
    vec::axpy(out + size_t(t) * H, sigmoid(gate[t]), shared.data() + size_t(t) * H, H);
}

}  // namespace qmlx
