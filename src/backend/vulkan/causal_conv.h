// The causal depthwise convolution + SiLU of Gated DeltaNet on the device
// (shaders/causal_conv.comp): kernels/causal_conv.h's causal_conv1d_silu, with its carried
// state of the last K-1 input rows. Bit-identical to it on devices with a correctly rounded fma
// and division (lavapipe) for channel counts that are a multiple of 8 (every model's); the
// last C % 8 channels go through the CPU's scalar silu, whose std::exp the device's exp() is
// not, and agree within a few ulp.
#pragma once

#include <cstddef>

#include "backend/vulkan/command_recorder.h"

namespace qmlx::vulkan {

// x: T rows of C channels, row t at float t * x_stride; w: tap-major [K][C] (tap K-1 multiplies
// the current row), K <= 8; state: [K-1][C], updated; out: [T][C]. All from offset 0; out must
// not alias x. `history`, when set, receives the state after each row ([T][K-1][C]): what
// speculative decoding rolls back to. Keeping it changes no other output by a bit.
void record_causal_conv1d_silu(CommandRecorder& recorder, const Buffer& x, size_t x_stride, int T,
                               int C, int K, const Buffer& w, const Buffer& state,
                               const Buffer& out, const Buffer* history = nullptr);

}  // namespace qmlx::vulkan
