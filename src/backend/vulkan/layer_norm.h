// LayerNorm with weight and bias on the device (shaders/layer_norm.comp): the Vulkan
// counterpart of kernels/norms.h's layer_norm (the vision tower's norms), bit-identical to it
// on devices with correctly rounded fma, division and square root (lavapipe) against the -O2
// build's CPU kernel: the shader follows the order GCC compiles it in (layer_norm.glsl says
// how); elsewhere within rounding (layer_norm_test.cpp).
#pragma once

#include "backend/vulkan/command_recorder.h"

namespace qmlx::vulkan {

// y[r] = (x[r] - mean) / sqrt(var + eps) * w + b for `rows` rows of n floats (w, b: n floats).
// y must not be x.
void record_layer_norm(CommandRecorder& recorder, const Buffer& x, const Buffer& w, const Buffer& b,
                       const Buffer& y, int rows, int n, float eps);

}  // namespace qmlx::vulkan
