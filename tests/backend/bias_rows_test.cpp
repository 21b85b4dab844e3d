// A bias row added to every row on the device against kernels/biased_matmul.cpp's addition:
// one float addition per element, bit-identical on every device. Sizes cover a row wider than
// one workgroup's 64 lanes and a single column.
#include "backend/vulkan/bias_rows.h"

#include "vulkan_fixture.h"

namespace qmlx::vulkan::testing {
namespace {

using BiasRowsTest = VulkanTest;

TEST_F(BiasRowsTest, AddsTheBiasToEveryRowBitForBit) {
  for (const auto& [rows, n] :
       {std::pair{1, 1}, std::pair{3, 63}, std::pair{17, 1152}, std::pair{5, 4304}}) {
    SCOPED_TRACE(std::to_string(rows) + "x" + std::to_string(n));
    const std::vector<float> y = random_floats(size_t(rows) * n, uint64_t(n), -3.f, 3.f);
    const std::vector<float> bias = random_floats(size_t(n), uint64_t(n) + 1);
    std::vector<float> cpu = y;
    for (int r = 0; r < rows; ++r)
      for (int o = 0; o < n; ++o) cpu[size_t(r) * n + o] += bias[size_t(o)];
    Buffer yb = upload(y), bb = upload(bias);
    CommandRecorder recorder(context());
    record_bias_rows(recorder, yb, bb, rows, n);
    recorder.submit_and_wait();
    EXPECT_EQ(compare_ulp(download(yb, y.size()), cpu).differing, 0u);
  }
}

}  // namespace
}  // namespace qmlx::vulkan::testing
