#include "vulkan_fixture.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "backend/vulkan/device_probe.h"
#include "backend/vulkan/device_selection.h"

namespace qmlx::vulkan::testing {

Context* VulkanTest::context_ = nullptr;
std::string VulkanTest::skip_reason_;
std::string VulkanTest::failure_;

namespace {

// VkDriverId of lavapipe (VK_DRIVER_ID_MESA_LLVMPIPE).
constexpr uint32_t kLlvmpipeDriver = 13;

std::string test_device_spec() {
  const char* spec = std::getenv("QMLX_TEST_VULKAN_DEVICE");
  return spec != nullptr && *spec ? spec : "vulkan";
}

}  // namespace

ContextOptions VulkanTest::base_options() {
  ContextOptions options;
  options.device = test_device_spec();
  // Tests must not write into the user's ~/.qmlx; ctest points QMLX_HOME at the build folder,
  // and a test that checks the cache passes a folder of its own.
  options.use_pipeline_cache = false;
  return options;
}

bool VulkanTest::exact_device() {
  // With float64 masked (QMLX_VULKAN_MASK_FEATURES) lavapipe's fma stays unfused: within
  // rounding, like any device whose fma is not exact.
  return context_ != nullptr && context_->device_info().driver_id == kLlvmpipeDriver &&
         context_->fma_mode() != FmaMode::kUnfused;
}

void VulkanTest::SetUpTestSuite() {
  if (context_ != nullptr || !skip_reason_.empty() || !failure_.empty()) return;
  // The context comes first, so the loader's libraries stay loaded from here on (see context_).
  try {
    context_ = Context::create(base_options()).release();
  } catch (const std::exception& e) {
    // Skip where there is no device to run on; fail where there is one and it broke.
    const VulkanProbe probe = probe_vulkan();
    try {
      select_device(probe, test_device_spec());
      failure_ = std::string("cannot open the Vulkan device: ") + e.what();
    } catch (const std::exception&) {
      skip_reason_ = std::string("no usable Vulkan device: ") + e.what();
    }
    return;
  }
  const DeviceInfo& d = context_->device_info();
  std::printf("[ vulkan   ] device %d: %s (%s, driver %s %s), fma %s, validation %s\n", d.index,
              d.name.c_str(), device_type_name(d.type), d.driver_name.c_str(),
              d.driver_info.c_str(), fma_mode_name(context_->fma_mode()),
              context_->instance().validation_enabled() ? "on" : "off");
}

void VulkanTest::TearDownTestSuite() {}

void VulkanTest::SetUp() {
  ASSERT_TRUE(failure_.empty()) << failure_;
  if (context_ == nullptr) GTEST_SKIP() << skip_reason_;
  validation_before_ = context_->instance().validation_message_count();
  // ctest asks for validation; without the layer the zero-message checks would prove nothing.
  if (validation_requested()) {
    ASSERT_TRUE(context_->instance().validation_enabled())
        << "QMLX_VULKAN_VALIDATION=1 but VK_LAYER_KHRONOS_validation is not installed "
           "(scripts/setup.sh installs vulkan-validationlayers)";
  }
}

void VulkanTest::TearDown() {
  if (context_ != nullptr) expect_no_validation_messages(context_->instance(), validation_before_);
}

void expect_no_validation_messages(const Instance& instance, size_t before) {
  const size_t count = instance.validation_message_count() - before;
  std::string text;
  for (const std::string& m : instance.validation_messages()) text += "\n  " + m;
  EXPECT_EQ(count, 0u) << "validation messages:" << text;
}

Buffer VulkanTest::upload(const std::vector<float>& values) {
  Buffer b = context_->create_buffer(values.size() * 4);
  context_->upload(b, 0, values.data(), values.size() * 4);
  return b;
}

std::vector<float> VulkanTest::download(const Buffer& buffer, size_t count) {
  std::vector<float> out(count);
  context_->download(buffer, 0, out.data(), count * 4);
  return out;
}

std::vector<float> random_floats(size_t n, uint64_t seed, float lo, float hi) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

int64_t ulp_distance(float a, float b) {
  // Maps floats onto integers monotonically, so neighbours differ by one.
  auto key = [](float f) {
    const int64_t i = int32_t(bits_of(f));
    return i < 0 ? int64_t(INT32_MIN) - i : i;
  };
  return std::llabs(key(a) - key(b));
}

UlpStats compare_ulp(const std::vector<float>& device, const std::vector<float>& cpu) {
  UlpStats stats;
  for (size_t i = 0; i < device.size() && i < cpu.size(); ++i) {
    const int64_t d = ulp_distance(device[i], cpu[i]);
    stats.max_ulp = std::max(stats.max_ulp, d);
    stats.differing += d != 0;
  }
  return stats;
}

void expect_history_is_each_prefix_state(const HistoryRun& run, int rows, size_t state_floats) {
  std::vector<float> history;
  const std::vector<float> with = run(rows, true, &history), without = run(rows, false, nullptr);
  EXPECT_EQ(0, std::memcmp(with.data(), without.data(), with.size() * 4));
  for (int t = 0; t < rows; ++t) {
    const std::vector<float> prefix = run(t + 1, false, nullptr);
    EXPECT_EQ(0, std::memcmp(history.data() + size_t(t) * state_floats,
                             prefix.data() + prefix.size() - state_floats, state_floats * 4))
        << "row " << t;
  }
}

}  // namespace qmlx::vulkan::testing
