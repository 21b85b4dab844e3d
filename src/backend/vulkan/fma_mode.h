// Whether a device's fma() is fused. Vulkan allows it to round the product and the sum apart,
// which changes results against the CPU kernels' fused multiply-adds; where it does and the
// device has float64, the kernels use their *_exact_fma variants (shaders/fma.glsl). Found out
// once per context by running fma() on values where the two roundings differ.
#pragma once

#include <string>

namespace qmlx::vulkan {

class Context;

enum class FmaMode {
  kNative,    // fma() is correctly rounded
  kEmulated,  // it is not; the kernels emulate it with float64
  kUnfused,   // it is not and there is no float64: results are within rounding, not exact
};

const char* fma_mode_name(FmaMode mode);

// Runs the probe (shaders/fma_probe.comp) and judges its results.
FmaMode detect_fma_mode(Context& context, bool has_float64);

// `shader`, or its _exact_fma variant when the context emulates fma.
std::string fma_shader(Context& context, const std::string& shader);

}  // namespace qmlx::vulkan
