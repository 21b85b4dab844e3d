// Element-wise operations on the device (shaders/elementwise.comp), the counterparts of the
// CPU's: a[i] = op(a[i], b[i]) over n floats, in place on a (a and b distinct buffers).
//  - silu_mul: the SwiGLU combination silu(a) * b (activations.h's silu_mul);
//  - sigmoid_mul: a * sigmoid(b), the attention output gate (attention_layer.cpp);
//  - add: a + b, the residual (decoder_layer.cpp's vec::axpy with 1).
// add is bit-identical everywhere. silu_mul is bit-identical to the CPU (on devices with a
// correctly rounded fma and division, lavapipe) over the CPU's full 8-float blocks, i.e. for
// every n a multiple of 8 (all model widths), because the shader repeats simd::exp step for
// step; the last n % 8 elements, and sigmoid_mul everywhere, go through the CPU's std::exp,
// which the device's exp() is not, so they agree within a few ulp (elementwise_test.cpp).
#pragma once

#include <cstddef>

#include "backend/vulkan/command_recorder.h"

namespace qmlx::vulkan {

void record_silu_mul(CommandRecorder& recorder, const Buffer& a, const Buffer& b, size_t n);
void record_sigmoid_mul(CommandRecorder& recorder, const Buffer& a, const Buffer& b, size_t n);
void record_add(CommandRecorder& recorder, const Buffer& a, const Buffer& b, size_t n);

}  // namespace qmlx::vulkan
