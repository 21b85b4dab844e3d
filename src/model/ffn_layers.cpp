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

void routed_experts(const std::vector<MlpWeights>& experts, const ModelConfig& c, const float* x,
                    int T, int generated_rows, const int32_t* expert_ids, float* out) {
  const int H = c.hidden_size, k = c.experts_per_token;
  const int first_generated = T - generated_rows;
  // Per expert: the routes to it, in row order (so its prompt rows come before its generated
  // rows, as the kernels want them).
  std::vector<std::vector<int>> by_expert(experts.size());
  for (int r = 0; r < T * k; ++r) by_expert[size_t(expert_ids[r])].push_back(r);

  std::vector<int> active;
  for (size_t e = 0; e < experts.size(); ++e)
    if (!by_expert[e].empty()) active.push_back(int(e));
  auto run_expert = [&](size_t a) {
    const std::vector<int>& routes = by_expert[size_t(active[a])];
    const int n = int(routes.size());
    std::vector<float> gathered(size_t(n) * H), expert_out(size_t(n) * H);
    int generated = 0;
    for (int i = 0; i < n; ++i) {
      const int token = routes[size_t(i)] / k;
      std::copy(x + size_t(token) * H, x + size_t(token + 1) * H, gathered.data() + size_t(i) * H);
      generated += token >= first_generated;
    }
    mlp_layer(experts[size_t(active[a])], gathered.data(), n, generated, expert_out.data());
    for (int i = 0; i < n; ++i)
      std::copy_n(expert_out.data() + size_t(i) * H, H, out + size_t(routes[size_t(i)]) * H);
  };
  // Few rows per expert (decode, of one sequence or a batch of them): each expert's matrices
  // are too small to split well, so the experts run in parallel, each on one thread, claimed
  // one at a time (a thread slowed by another process then runs fewer of them). Many rows
  // (prefill): one expert at a time, its matmuls split over the pool. Either way each row's
  // result is the same: only the threads differ.
  const bool experts_in_parallel =
      size_t(T) * k <= active.size() * kMaxRowsPerExpertForParallelExperts;
  if (experts_in_parallel) {
    default_pool().parallel_chunks(active.size(), 1, [&](size_t b, size_t e) {
      for (size_t a = b; a < e; ++a) run_expert(a);
    });
  } else {
    for (size_t a = 0; a < active.size(); ++a) run_expert(a);
  }
}

void moe_layer(const MoeWeights& w, const ModelConfig& c, const float* x, int T, int generated_rows,
               float* out) {
  const int H = c.hidden_size, E = c.num_experts, k = c.experts_per_token;
  std::vector<float> logits(size_t(T) * E);
  matmul(x, T, w.router, logits.data(), generated_rows);
  std::vector<Route> routes;  // [T][k]
  std::vector<int32_t> expert_ids;
  for (int t = 0; t < T; ++t)
    for (const Route& r : route_token(logits.data() + size_t(t) * E, c)) {
      routes.push_back(r);
      expert_ids.push_back(r.expert);
    }
  std::vector<float> routed(size_t(T) * k * H);
  routed_experts(w.experts, c, x, T, generated_rows, expert_ids.data(), routed.data());
  // Each token's weighted sum, its experts taken in id order.
  std::fill(out, out + size_t(T) * H, 0.f);
  std::vector<int> order(static_cast<size_t>(k));
  for (int t = 0; t < T; ++t) {
    const Route* token_routes = routes.data() + size_t(t) * k;
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(),
              [&](int a, int b) { return token_routes[a].expert < token_routes[b].expert; });
    for (int j : order)
      vec::axpy(out + size_t(t) * H, token_routes[j].weight,
                routed.data() + (size_t(t) * k + size_t(j)) * H, H);
  }
  if (!w.has_shared_expert) return;
  std::vector<float> shared(size_t(T) * H), gate(T);
  mlp_layer(w.shared, x, T, generated_rows, shared.data());
  matmul(x, T, w.shared_gate, gate.data(), generated_rows);
  for (int t = 0; t < T; ++t)
    vec::axpy(out + size_t(t) * H, sigmoid(gate[t]), shared.data() + size_t(t) * H, H);
}

}  // namespace qmlx
