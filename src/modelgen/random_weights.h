// Random weights for a model shape: every tensor is a pure function of (seed, tensor name,
// element index), so the same seed always gives the same bytes, tensors can be produced in
// any order or in parallel, and a huge preset never needs to be held in memory at once.
// Scales keep activations O(1) through many layers: projections use std 1/sqrt(fan_in),
// residual-branch outputs are smaller, norms stay near 1, and A_log / dt_bias follow the
// Hugging Face initialisation so Gated DeltaNet decays are varied and inside (0, 1).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "modelgen/logical_model.h"
#include "modelgen/model_options.h"

namespace qmlx::modelgen {

// Uniform values in [-1, 1), determined by (seed, name, index).
std::vector<float> uniform_values(uint64_t seed, const std::string& name, int64_t count);

// Embedding and LM-head rows from `used_vocab` on are zero: like the padding rows of real
// checkpoints they belong to no token, and a zero row can never win over the real ones.
LogicalModel random_logical_model(Arch arch, const ModelShape& shape, uint64_t seed,
                                  int used_vocab);

}  // namespace qmlx::modelgen
