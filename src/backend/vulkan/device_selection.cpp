#include "backend/vulkan/device_selection.h"

#include <charconv>

#include "base/error.h"

namespace qmlx::vulkan {
namespace {

// Lower is preferred.
int preference(DeviceType type) {
  switch (type) {
    case DeviceType::kDiscrete:
      return 0;
    case DeviceType::kIntegrated:
      return 1;
    case DeviceType::kVirtual:
      return 2;
    case DeviceType::kOther:
      return 3;
    case DeviceType::kCpu:
      break;
  }
  return 4;
}

[[noreturn]] void fail(const VulkanProbe& probe, std::string_view spec, const std::string& why) {
  throw Error("--device " + std::string(spec) + ": " + why + "; found: " + describe_found(probe));
}

}  // namespace

bool is_vulkan_device_spec(std::string_view spec) {
  return spec == "vulkan" || spec.starts_with("vulkan:");
}

std::string describe_found(const VulkanProbe& probe) {
  if (probe.status != VulkanProbe::Status::kOk) return probe.message;
  if (probe.devices.empty()) return "no Vulkan devices";
  std::string out;
  for (const DeviceInfo& d : probe.devices) {
    out += (out.empty() ? "" : "; ") + std::to_string(d.index) + ": " + d.name + " [" +
           device_type_name(d.type) + "] " +
           (d.can_run ? "can run" : "cannot run (" + d.cannot_run_reason + ")");
  }
  return out;
}

int select_device(const VulkanProbe& probe, std::string_view spec) {
  if (!is_vulkan_device_spec(spec)) fail(probe, spec, "not a Vulkan device (vulkan or vulkan:N)");
  if (probe.status != VulkanProbe::Status::kOk) fail(probe, spec, "Vulkan is not available");
  if (spec == "vulkan") {
    int best = -1;
    for (size_t i = 0; i < probe.devices.size(); ++i) {
      const DeviceInfo& d = probe.devices[i];
      if (!d.can_run) continue;
      if (best < 0 || preference(d.type) < preference(probe.devices[best].type)) best = int(i);
    }
    if (best < 0) fail(probe, spec, "no Vulkan device can run qmlx");
    return best;
  }
  std::string_view number = spec.substr(std::string_view("vulkan:").size());
  int n = -1;
  auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), n);
  if (ec != std::errc() || end != number.data() + number.size() || n < 0)
    fail(probe, spec, "expected vulkan:N with N a device index");
  if (size_t(n) >= probe.devices.size()) fail(probe, spec, "no device " + std::to_string(n));
  if (!probe.devices[n].can_run)
    fail(probe, spec, "device " + std::to_string(n) + " cannot run qmlx");
  return n;
}

}  // namespace qmlx::vulkan
