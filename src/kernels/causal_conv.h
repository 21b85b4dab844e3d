// Causal depthwise 1-D convolution with a carried state, followed by SiLU: the short
// convolution in front of Gated DeltaNet. The state holds the last K-1 input rows (oldest
// first), so feeding a sequence in pieces gives exactly the result of feeding it at once.
#pragma once

#include <cstddef>

namespace qmlx {

// x: T rows of C channels, row i at x + i * x_stride. w: tap-major [K][C] (tap K-1 multiplies
// the current row). state: [K-1][C], updated. out: [T][C].
void causal_conv1d_silu(const float* x, size_t x_stride, int T, int C, int K, const float* w,
                        float* state, float* out);

}  // namespace qmlx
