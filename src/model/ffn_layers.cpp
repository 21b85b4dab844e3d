// Feed-forward blocks (model-spec §3.2, §3.5): the SwiGLU MLP down(silu(gate x) * up x), and the
// MoE block: softmax router, top-k experts (renormalised when configured), each a SwiGLU MLP,
// plus a sigmoid-gated shared expert. Tokens are grouped by expert so a prefill runs each
// expert once over all its tokens.
#include <algorithm>
#include <numeric>
#include <vector>

#include "kernels/activations.h"
#include "kernels/matmul.h"
#include "kernels/vec.h"
#include "model/layers.h"

namespace qmlx {

void mlp_layer(const MlpWeights& w, const float* x, int T, float* out) {
  const int I = w.gate.rows;
  std::vector<float> gate(size_t(T) * I), up(size_t(T) * I);
  matmul(x, T, w.gate, gate.data());
  matmul(x, T, w.up, up.data());
  silu_mul(gate.data(), up.data(), gate.size());
  matmul(gate.data(), T, w.down, out);
}

namespace {

struct Route {
  int expert;
  float weight;
};

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

void moe_layer(const MoeWeights& w, const ModelConfig& c, const float* x, int T, float* out) {
  const int H = c.hidden_size, E = c.num_experts;
  std::vector<float> logits(size_t(T) * E);
  matmul(x, T, w.router, logits.data());
  // Per expert: the tokens routed to it and their weights.
  std::vector<std::vector<RoutedToken>> by_expert(E);
  for (int t = 0; t < T; ++t)
    for (const Route& r : route_token(logits.data() + size_t(t) * E, c))
      by_expert[r.expert].push_back({t, r.weight});

  std::fill(out, out + size_t(T) * H, 0.f);
  std::vector<float> gathered, expert_out;
  for (int e = 0; e < E; ++e) {
    const auto& tokens = by_expert[e];
    if (tokens.empty()) continue;
    const int n = int(tokens.size());
    gathered.resize(size_t(n) * H);
    expert_out.resize(size_t(n) * H);
    for (int i = 0; i < n; ++i)
      std::copy(x + size_t(tokens[i].token) * H, x + size_t(tokens[i].token + 1) * H,
                gathered.data() + size_t(i) * H);
    mlp_layer(w.experts[e], gathered.data(), n, expert_out.data());
    for (int i = 0; i < n; ++i)
      vec::axpy(out + size_t(tokens[i].token) * H, tokens[i].weight,
                expert_out.data() + size_t(i) * H, H);
  }
  if (!w.has_shared_expert) return;
  std::vector<float> shared(size_t(T) * H), gate(T);
  mlp_layer(w.shared, x, T, shared.data());
  matmul(x, T, w.shared_gate, gate.data());
  for (int t = 0; t < T; ++t)
    vec::axpy(out + size_t(t) * H, sigmoid(gate[t]), shared.data() + size_t(t) * H, H);
}

}  // namespace qmlx
