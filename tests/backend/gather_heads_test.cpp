// Reordering heads on the device (gather_heads.h) against the same copies on the host: exact,
// for permutations that are not their own inverse, heads of 100 and 128 floats.
#include "backend/vulkan/gather_heads.h"

#include <algorithm>
#include <numeric>
#include <random>

#include "vulkan_fixture.h"

namespace qmlx::vulkan::testing {
namespace {

using GatherHeadsTest = VulkanTest;

TEST_F(GatherHeadsTest, EachRowTakesItsHeadsInTheGivenOrder) {
  std::mt19937_64 rng(3);
  for (const auto& [rows, heads, n] : {std::tuple{1, 6, 128}, {37, 32, 128}, {5, 3, 100}}) {
    SCOPED_TRACE(std::to_string(rows) + " rows of " + std::to_string(heads) + " heads of " +
                 std::to_string(n));
    std::vector<int32_t> order(static_cast<size_t>(heads));
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    std::vector<float> in = random_floats(size_t(rows) * heads * n, rng());
    Buffer in_buffer = upload(in);
    Buffer order_buffer = context().create_buffer(order.size() * 4);
    context().upload(order_buffer, 0, order.data(), order.size() * 4);
    Buffer out_buffer = context().create_buffer(in.size() * 4);
    CommandRecorder recorder(context());
    record_gather_heads(recorder, in_buffer, order_buffer, rows, heads, n, out_buffer);
    recorder.submit_and_wait();
    const std::vector<float> out = download(out_buffer, in.size());
    size_t differing = 0;
    for (int t = 0; t < rows; ++t)
      for (int i = 0; i < heads; ++i)
        for (int d = 0; d < n; ++d)
          differing += out[(size_t(t) * heads + i) * n + d] !=
                       in[(size_t(t) * heads + size_t(order[size_t(i)])) * n + d];
    EXPECT_EQ(differing, 0u);
  }
}

}  // namespace
}  // namespace qmlx::vulkan::testing
