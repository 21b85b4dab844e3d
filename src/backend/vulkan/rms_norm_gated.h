// The gated RMSNorm of Gated DeltaNet outputs on the device (shaders/rms_norm_gated.comp):
// kernels/norms.h's rms_norm_gated, y = w * rms_norm(x) * silu(z), per row of n floats (one
// value head). The norm is bit-identical to the CPU's (the sum in its order; lavapipe); the
// gate is the CPU's scalar silu, whose std::exp the device's exp() is not, so outputs agree
// within a few ulp (rms_norm_gated_test.cpp).
#pragma once

#include "backend/vulkan/command_recorder.h"

namespace qmlx::vulkan {

// x, z, y: `rows` rows of n floats from offset 0; w: n floats. y may be x.
void record_rms_norm_gated(CommandRecorder& recorder, const Buffer& x, const Buffer& z,
                           const Buffer& w, const Buffer& y, int rows, int n, float eps);

}  // namespace qmlx::vulkan
