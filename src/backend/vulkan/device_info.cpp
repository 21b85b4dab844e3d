#include "backend/vulkan/device_info.h"

#include <cstdio>

namespace qmlx::vulkan {
namespace {

// The shaders are compiled for the Vulkan 1.2 environment (SPIR-V 1.5).
constexpr uint32_t kRequiredApi = (1u << 22) | (2u << 12);
// The largest workgroup the kernels use (matmul and copy: 64 invocations).
constexpr uint32_t kRequiredInvocations = 64;

}  // namespace

const char* device_type_name(DeviceType type) {
  switch (type) {
    case DeviceType::kDiscrete:
      return "discrete";
    case DeviceType::kIntegrated:
      return "integrated";
    case DeviceType::kVirtual:
      return "virtual";
    case DeviceType::kCpu:
      return "cpu";
    case DeviceType::kOther:
      break;
  }
  return "other";
}

std::string api_version_string(uint32_t v) {
  // VK_API_VERSION_MAJOR/MINOR/PATCH, spelled out so this file needs no Vulkan header.
  return std::to_string((v >> 22) & 0x7f) + "." + std::to_string((v >> 12) & 0x3ff) + "." +
         std::to_string(v & 0xfff);
}

std::string uuid_hex(const std::array<uint8_t, 16>& uuid) {
  std::string out;
  char byte[3];
  for (uint8_t b : uuid) {
    std::snprintf(byte, sizeof byte, "%02x", b);
    out += byte;
  }
  return out;
}

void judge_device(DeviceInfo& info) {
  info.can_run = false;
  if (info.api_version < kRequiredApi) {
    info.cannot_run_reason =
        "needs Vulkan 1.2, the driver offers " + api_version_string(info.api_version);
  } else if (!info.has_compute_queue) {
    info.cannot_run_reason = "no compute queue";
  } else if (info.max_workgroup_invocations < kRequiredInvocations) {
    info.cannot_run_reason =
        "workgroups of " + std::to_string(kRequiredInvocations) + " invocations not supported";
  } else {
    info.can_run = true;
    info.cannot_run_reason.clear();
  }
}

}  // namespace qmlx::vulkan
