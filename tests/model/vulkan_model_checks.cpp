#include "vulkan_model_checks.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "backend/vulkan/device_probe.h"
#include "backend/vulkan/validation_report.h"

namespace qmlx::testing {

std::string vulkan_skip_reason() {
  if (!vulkan::vulkan_built()) return "built without the Vulkan backend";
  const vulkan::VulkanProbe probe = vulkan::probe_vulkan();
  if (probe.status != vulkan::VulkanProbe::Status::kOk) return "no Vulkan: " + probe.message;
  for (const vulkan::DeviceInfo& d : probe.devices)
    if (d.can_run) return "";
  return "no Vulkan device can run the backend";
}

void expect_no_validation_findings() {
  const char* requested = std::getenv("QMLX_VULKAN_VALIDATION");
  if (requested == nullptr || std::string(requested) != "1") return;
  EXPECT_TRUE(vulkan::process_validation_active()) << "the validation layer never came on";
  std::string found;
  for (const std::string& m : vulkan::process_validation_messages()) found += "\n  " + m;
  EXPECT_EQ(vulkan::process_validation_message_count(), 0u) << found;
}

}  // namespace qmlx::testing
