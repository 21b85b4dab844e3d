// The L2 normalisation of Gated DeltaNet query and key heads on the device (shaders/l2_norm.comp):
// kernels/norms.h's l2_norm_scaled, x = x * (scale / sqrt(sum(x^2) + eps)), on each head of
// each row in place. Bit-identical to it on devices with correctly rounded fma, division and
// square root (lavapipe) for head sizes that are a multiple of 8 (Dk = 128 in every model).
#pragma once

#include <cstddef>

#include "backend/vulkan/command_recorder.h"

namespace qmlx::vulkan {

// `rows` rows `row_stride` floats apart, each holding `heads` heads of n floats from float
// `offset` on (the layer's conv output: q heads at 0, k heads at Hk * Dk, stride CD).
void record_l2_norm(CommandRecorder& recorder, const Buffer& x, int rows, size_t row_stride,
                    size_t offset, int heads, int n, float eps, float scale);

}  // namespace qmlx::vulkan
