// The copy kernel: correct across lavapipe's 128 MiB binding limit (split into dispatches), and
// the bandwidth it reaches, printed for the record (later benchmarks compare against it).
#include "backend/vulkan/copy.h"

#include "vulkan_fixture.h"

namespace qmlx::vulkan::testing {
namespace {

using CopyTest = VulkanTest;

TEST_F(CopyTest, CopiesMoreThanOneBindingAtOffsets) {
  const size_t range = context().device_info().max_storage_buffer_range;
  const size_t bytes = (range + (size_t(32) << 20)) & ~size_t(15);
  std::vector<uint32_t> words(bytes / 4 + 16);
  std::mt19937 rng(21);
  for (uint32_t& w : words) w = rng();
  Buffer src = context().create_buffer(words.size() * 4);
  Buffer dst = context().create_buffer(words.size() * 4);
  context().upload(src, 0, words.data(), words.size() * 4);
  CommandRecorder recorder(context());
  record_copy(recorder, src, 16, dst, 32, bytes);
  EXPECT_EQ(recorder.dispatch_count(), 2u);
  recorder.submit_and_wait();
  std::vector<uint32_t> back(bytes / 4);
  context().download(dst, 32, back.data(), bytes);
  EXPECT_TRUE(std::equal(back.begin(), back.end(), words.begin() + 4));
}

TEST_F(CopyTest, ReportsBandwidth) {
  const Bandwidth b = measure_copy_bandwidth(context(), size_t(64) << 20, 4);
  EXPECT_GT(b.bytes_per_second, 0);
  std::printf("[ vulkan   ] copy bandwidth on %s: %.2f GB/s (read + write, 4 x 64 MiB)\n",
              context().device_info().name.c_str(), b.bytes_per_second / 1e9);
}

}  // namespace
}  // namespace qmlx::vulkan::testing
