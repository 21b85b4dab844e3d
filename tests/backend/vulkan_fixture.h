// The fixture every Vulkan test runs in: one Context per test process on the device
// $QMLX_TEST_VULKAN_DEVICE names (default "vulkan": lavapipe in CI), skipped with a message
// where no Vulkan device can run the backend. ctest sets QMLX_VULKAN_VALIDATION=1, so the
// validation layer watches every test, and each test ends by asserting it reported nothing.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backend/vulkan/command_recorder.h"
#include "backend/vulkan/context.h"

namespace qmlx::vulkan::testing {

class VulkanTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite();
  static void TearDownTestSuite();
  void SetUp() override;
  void TearDown() override;

  static Context& context() { return *context_; }
  // The options the shared context was made with (tests making a context of their own start
  // from these).
  static ContextOptions base_options();
  // True on lavapipe, whose fma, division and square root are correctly rounded, so kernels
  // that follow the CPU's order must match it bit for bit.
  static bool exact_device();

  // A device buffer holding `values`, and a buffer's floats read back.
  Buffer upload(const std::vector<float>& values);
  std::vector<float> download(const Buffer& buffer, size_t count);

  // Never destroyed: while an instance lives the loader keeps lavapipe and the validation layer
  // loaded, so LeakSanitizer can name (and lsan_suppressions.cpp excuse) what they keep at exit.
  static Context* context_;
  static std::string skip_reason_;
  static std::string failure_;
  size_t validation_before_ = 0;
};

// Counts validation messages of an Instance across a test: fails the test when any appeared.
void expect_no_validation_messages(const Instance& instance, size_t before);

std::vector<float> random_floats(size_t n, uint64_t seed, float lo = -1.f, float hi = 1.f);

// Distance in units in the last place between two finite floats of the same sign or zero.
int64_t ulp_distance(float a, float b);

// How far a device result is from the CPU's, element by element.
struct UlpStats {
  int64_t max_ulp = 0;
  size_t differing = 0;  // elements whose bits differ
};
UlpStats compare_ulp(const std::vector<float>& device, const std::vector<float>& cpu);

inline uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// For kernels that can keep their state after every row (KEEP_HISTORY): run(rows, keep,
// history) runs rows [0, rows) from one start state and returns the outputs followed by the
// final state (`state_floats` floats), filling *history ([rows][state_floats]) when keep is set.
// Keeping the history changes no bit of the outputs or the final state, and the state kept after
// row t is bit for bit the final state of a run of t + 1 rows.
using HistoryRun = std::function<std::vector<float>(int rows, bool keep, std::vector<float>*)>;
void expect_history_is_each_prefix_state(const HistoryRun& run, int rows, size_t state_floats);

}  // namespace qmlx::vulkan::testing
