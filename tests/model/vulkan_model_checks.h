// What every Vulkan model test (vulkan_forward_test.cpp, vulkan_vision_test.cpp) checks around
// itself: whether a device can run it, and that the validation layer found nothing.
#pragma once

#include <string>

namespace qmlx::testing {

// Why no test can run on a Vulkan device here ("" when one can): the reason a suite skips with.
std::string vulkan_skip_reason();

// ctest runs the tests with the validation layer on (QMLX_VULKAN_VALIDATION=1, synchronization
// validation too): a Model's device must then have had it, and it must have found nothing.
// For tests that ran on a device.
void expect_no_validation_findings();

}  // namespace qmlx::testing
