// Validation over every Vulkan instance this process created, for tests that cannot reach the
// one a Model made for itself (ctest turns the layer on with QMLX_VULKAN_VALIDATION=1): whether
// the layer was active in any, how many findings there were in all, and the first few. Free of
// Vulkan headers, so a build without the backend has them too (never active, nothing found).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace qmlx::vulkan {

bool process_validation_active();
size_t process_validation_message_count();
std::vector<std::string> process_validation_messages();

}  // namespace qmlx::vulkan
