// GELU on the device (shaders/gelu.comp), in place: the counterparts of kernels/activations.h's
// gelu_tanh_in_place (the vision blocks' MLP) and gelu_erf_in_place (the vision merger).
// gelu_tanh is bit-identical to the CPU on devices with a correctly rounded fma and division
// (lavapipe): it repeats simd::exp step for step. gelu_erf is not: GLSL has no erf, so the
// shader evaluates a polynomial fit (gelu.glsl) that agrees with glibc's erff to about 1e-7,
// i.e. within a few ulp of the result (gelu_test.cpp bounds it).
#pragma once

#include <cstddef>

#include "backend/vulkan/command_recorder.h"

namespace qmlx::vulkan {

enum class Gelu : uint32_t { kTanh = 0, kErf = 1 };

// a[i] = gelu(a[i]) over n floats.
void record_gelu(CommandRecorder& recorder, Gelu kind, const Buffer& a, size_t n);

}  // namespace qmlx::vulkan
