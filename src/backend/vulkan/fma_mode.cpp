#include "backend/vulkan/fma_mode.h"

#include <cmath>
#include <cstring>
#include <vector>

#include "backend/vulkan/command_recorder.h"
#include "backend/vulkan/context.h"

namespace qmlx::vulkan {
namespace {

struct Triple {
  float a, b, c;
};

}  // namespace

const char* fma_mode_name(FmaMode mode) {
  switch (mode) {
    case FmaMode::kNative:
      return "native";
    case FmaMode::kEmulated:
      return "emulated with float64";
    case FmaMode::kUnfused:
      break;
  }
  return "unfused";
}

FmaMode detect_fma_mode(Context& context, bool has_float64) {
  // (1 + 2^-23)^2 - 1 = 2^-22 + 2^-46 fused, 2^-22 when the product is rounded first; the
  // others have products that need more than 24 bits too.
  const float e = std::ldexp(1.f, -23);
  const Triple cases[] = {{1 + e, 1 + e, -1.f},
                          {1 - e, 1 + e, -1.f},
                          {3.f + 4 * e, 7.f - 8 * e, -21.f},
                          {0.1f, 10.f, -1.f},
                          {1.f / 3, 3.f, -1.f}};
  const uint32_t n = std::size(cases);
  std::vector<float> data(4 * n);
  for (uint32_t i = 0; i < n; ++i) {
    data[4 * i] = cases[i].a;
    data[4 * i + 1] = cases[i].b;
    data[4 * i + 2] = cases[i].c;
  }
  Buffer buffer = context.create_buffer(data.size() * 4);
  context.upload(buffer, 0, data.data(), data.size() * 4);
  const Pipeline& pipeline = context.pipelines().get({"fma_probe", 1, sizeof n, {}});
  CommandRecorder recorder(context);
  const Binding binding{&buffer, 0, buffer.size(), Access::kReadWrite};
  recorder.dispatch(pipeline, {&binding, 1}, &n, sizeof n, 1);
  recorder.submit_and_wait();
  context.download(buffer, 0, data.data(), data.size() * 4);
  for (uint32_t i = 0; i < n; ++i) {
    const float want = std::fma(cases[i].a, cases[i].b, cases[i].c);
    if (std::memcmp(&want, &data[4 * i + 3], 4) != 0)
      return has_float64 ? FmaMode::kEmulated : FmaMode::kUnfused;
  }
  return FmaMode::kNative;
}

std::string fma_shader(Context& context, const std::string& shader) {
  return context.fma_mode() == FmaMode::kEmulated ? shader + "_exact_fma" : shader;
}

}  // namespace qmlx::vulkan
