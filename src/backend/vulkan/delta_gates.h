// The Gated DeltaNet gates on the device (shaders/delta_gates.comp), in place over the b and a
// projections of T rows of Hv value heads, as delta_net_layer.cpp computes them:
//   beta = sigmoid(b)                        (activations.h: 1 / (1 + std::exp(-b)))
//   g    = A[h] * softplus(a + dt_bias[h])   (softplus: x > 20 ? x : std::log1p(std::exp(x)))
// with A = -exp(A_log) as the weights hold it (weight_loader.cpp computes it once at load).
// The CPU's std::exp and std::log1p are glibc's; the device's exp() and log() are not, so both
// gates agree with the CPU to some ulp, not to the bit: on lavapipe 4 + |x| for exp(x)'s
// argument x (delta_gates_test.cpp says why).
// GLSL has no log1p: the shader takes Goldberg's log(u) * x / (u - 1) with u = 1 + x, which
// keeps log1p's relative accuracy for small x where log(1 + x) would lose it.
#pragma once

#include "backend/vulkan/command_recorder.h"

namespace qmlx::vulkan {

// b, a: [T][Hv] floats, overwritten with beta and g; A, dt_bias: [Hv]. All from offset 0.
void record_delta_gates(CommandRecorder& recorder, const Buffer& b, const Buffer& a,
                        const Buffer& A, const Buffer& dt_bias, int T, int Hv);

}  // namespace qmlx::vulkan
