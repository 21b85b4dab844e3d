// Bytes of weights a forward pass reads, for judging decode speed against the memory-bandwidth
// roofline (engine_bench) and speculative steps against plain ones (speculative_bench).
#pragma once

#include <cmath>

#include "model/model.h"

namespace qmlx::bench {

// The MoE experts' share of a forward over `rows` rows that reads each selected expert once:
// with uniform routing of top-k of E experts per row, E (1 - (1 - k/E)^rows) distinct experts.
inline double expert_fraction_read(const ModelConfig& c, int rows) {
  if (c.num_experts <= 0) return 0;
  const double per_row = double(c.experts_per_token) / c.num_experts;
  return 1.0 - std::pow(1.0 - per_row, rows);
}

// Bytes of weights one forward over `rows` generated rows reads: every matrix except the unused
// embedding rows and, for MoE, the experts no row selects (expected, uniform routing).
inline double weight_bytes_per_forward(const Model& model, int rows) {
  const auto& w = model.weights();
  const auto& c = model.config();
  double bytes = double(w.matrix_bytes());
  if (w.head.data != w.embed.data) bytes -= double(w.embed.bytes());
  for (const auto& layer : w.layers) {
    if (!layer.moe) continue;
    double experts = 0;
    for (const auto& e : layer.moe_ffn.experts)
      experts += double(e.gate.bytes() + e.up.bytes() + e.down.bytes());
    bytes -= experts * (1.0 - expert_fraction_read(c, rows));
  }
  return bytes;
}

// One decode step's bytes (a single row).
inline double weight_bytes_per_token(const Model& model) {
  return weight_bytes_per_forward(model, 1);
}

// Bytes one MTP draft row reads: fc, the head's decoder layer (one row: its selected experts
// only) and the LM head.
inline double mtp_weight_bytes_per_draft(const Model& model) {
  const auto& w = model.weights();
  if (!w.mtp) return 0;
  const auto& c = model.config();
  const LayerWeights& l = w.mtp->layer;
  auto mlp = [](const MlpWeights& m) {
    return double(m.gate.bytes() + m.up.bytes() + m.down.bytes());
  };
  double bytes = double(w.mtp->fc.bytes() + w.head.bytes());
  bytes += double(l.attention.q.bytes() + l.attention.k.bytes() + l.attention.v.bytes() +
                  l.attention.o.bytes());
  bytes += mlp(l.mlp) + double(l.moe_ffn.router.bytes() + l.moe_ffn.shared_gate.bytes()) +
           mlp(l.moe_ffn.shared);
  double experts = 0;
  for (const auto& e : l.moe_ffn.experts) experts += mlp(e);
  return bytes + experts * expert_fraction_read(c, 1);
}

}  // namespace qmlx::bench
