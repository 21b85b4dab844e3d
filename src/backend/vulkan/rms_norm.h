// RMSNorm on the device (shaders/rms_norm.comp): the Vulkan counterpart of kernels/norms.h's
// rms_norm, bit-identical to it on devices with correctly rounded fma, division and square
// root (lavapipe) for rows whose width is a multiple of 8 (every model width).
#pragma once

#include "backend/vulkan/command_recorder.h"

namespace qmlx::vulkan {

// y[r] = x[r] / sqrt(mean(x[r]^2) + eps) * w for `rows` rows of n floats; with
// weight_plus_one, w + 1 in place of w (zero-centred norm weights as stored). y may be x.
void record_rms_norm(CommandRecorder& recorder, const Buffer& x, const Buffer& w, const Buffer& y,
                     int rows, int n, float eps, bool weight_plus_one);

}  // namespace qmlx::vulkan
