// DeviceInfo: what `qmlx devices` reports about one Vulkan physical device, and whether the
// backend can run on it. Plain data (no Vulkan types), so the CLI and a build without Vulkan
// support see the same struct.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace qmlx::vulkan {

enum class DeviceType { kDiscrete, kIntegrated, kVirtual, kCpu, kOther };

const char* device_type_name(DeviceType type);

// The optional capabilities later kernels may use; reported so a user can see what a device
// offers. The kernels of this slice need none of them (they read 16- and 8-bit data as uint32).
struct DeviceFeatures {
  bool storage_16bit = false;  // storageBuffer16BitAccess
  bool storage_8bit = false;   // storageBuffer8BitAccess
  bool shader_int8 = false;
  bool shader_float16 = false;
  bool shader_float64 = false;  // lets kernels emulate a fused fma where fma() is not (fma_mode.h)
  bool integer_dot_product = false;  // shaderIntegerDotProduct
  bool subgroup_size_control = false;
  bool buffer_device_address = false;
};

struct DeviceInfo {
  int index = 0;  // position in vkEnumeratePhysicalDevices order: the N of `vulkan:N`
  std::string name;
  DeviceType type = DeviceType::kOther;
  uint32_t vendor_id = 0;
  uint32_t device_id = 0;
  std::string driver_name;  // e.g. "llvmpipe"; empty before Vulkan 1.2
  std::string driver_info;  // e.g. "Mesa 22.3.6 (LLVM 15.0.6)"
  uint32_t driver_id = 0;   // VkDriverId
  uint32_t driver_version = 0;
  uint32_t api_version = 0;  // VK_API_VERSION_*
  std::array<uint8_t, 16> device_uuid{};
  std::array<uint8_t, 16> pipeline_cache_uuid{};  // what a driver's pipeline cache data is for
  uint64_t device_local_bytes = 0;                // sum of the DEVICE_LOCAL heaps
  uint64_t max_storage_buffer_range = 0;
  uint64_t max_allocation_bytes = 0;
  uint32_t min_storage_buffer_offset_alignment = 0;
  uint32_t max_shared_memory_bytes = 0;
  uint32_t max_workgroup_invocations = 0;
  std::array<uint32_t, 3> max_workgroup_count{};
  uint32_t subgroup_size = 0;
  uint32_t min_subgroup_size = 0;
  uint32_t max_subgroup_size = 0;
  DeviceFeatures features;
  bool has_compute_queue = false;
  uint32_t compute_queue_family = 0;
  bool can_run = false;
  std::string cannot_run_reason;  // set when !can_run
};

// "1.3.230".
std::string api_version_string(uint32_t version);
// Lower-case hex of the UUID, 32 characters.
std::string uuid_hex(const std::array<uint8_t, 16>& uuid);

// Fills can_run / cannot_run_reason from the rest of `info`: the backend's requirements.
void judge_device(DeviceInfo& info);

}  // namespace qmlx::vulkan
