// A Vulkan device's memory bandwidth: bytes read plus written per second by the copy kernel
// (backend/vulkan/copy.h) over buffers far larger than any cache, best of a few runs. Prints one
// JSON line.   qmlx_device_bandwidth [DEVICE=vulkan] [MiB=256]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "backend/vulkan/context.h"
#include "backend/vulkan/copy.h"

int main(int argc, char** argv) {
  qmlx::vulkan::ContextOptions options;
  if (argc > 1) options.device = argv[1];
  const size_t mib = argc > 2 ? size_t(std::atoll(argv[2])) : 256;
  auto context = qmlx::vulkan::Context::create(options);
  double best = 0;
  for (int run = 0; run < 3; ++run) {
    const auto b = qmlx::vulkan::measure_copy_bandwidth(*context, mib << 20, 4);
    best = std::max(best, b.bytes_per_second);
  }
  std::printf("{\"device\": \"%s\", \"copy_bytes\": %zu, \"bandwidth_gb_per_s\": %.2f}\n",
              context->device_info().name.c_str(), mib << 20, best / 1e9);
  return 0;
}
