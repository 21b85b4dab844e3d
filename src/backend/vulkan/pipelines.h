// Pipelines: compute pipelines created on first use from the embedded SPIR-V, one per shader
// and set of specialization constants, through a VkPipelineCache that is loaded from and saved
// to disk (pipeline_cache_file.h). Every pipeline's interface is the same shape: `bindings`
// storage buffers at set 0, bindings 0..n-1, and `push_constant_bytes` of push constants.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backend/vulkan/device_info.h"
#include "backend/vulkan/vulkan_api.h"

namespace qmlx::vulkan {

struct PipelineDesc {
  std::string shader;  // an embedded shader's name
  uint32_t bindings = 0;
  uint32_t push_constant_bytes = 0;
  // Values of constant_id 0, 1, ... (each a 32-bit bool, int, uint or float bit pattern).
  std::vector<uint32_t> specialization;
};

struct Pipeline {
  std::string name;  // shader and constants, for messages
  uint32_t bindings = 0;
  uint32_t push_constant_bytes = 0;
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkPipeline pipeline = VK_NULL_HANDLE;
};

class Pipelines {
 public:
  // cache_path empty: no on-disk cache.
  Pipelines(VkDevice device, const DeviceFunctions& fn, const DeviceInfo& info,
            std::string cache_path);
  ~Pipelines();
  Pipelines(const Pipelines&) = delete;
  Pipelines& operator=(const Pipelines&) = delete;

  // Creates the pipeline on first use; the reference stays valid for the object's lifetime.
  const Pipeline& get(const PipelineDesc& desc);

  // Writes the cache file when pipelines were created since it was read. Also done on
  // destruction; false when writing failed (logged).
  bool save();
  size_t created() const { return created_; }
  // Bytes of driver data read from the cache file (0 when absent or ignored).
  size_t loaded_cache_bytes() const { return loaded_bytes_; }

 private:
  VkDevice device_;
  const DeviceFunctions& fn_;
  std::string cache_path_;
  VkPipelineCache cache_ = VK_NULL_HANDLE;
  std::mutex mutex_;
  std::map<std::string, std::unique_ptr<Pipeline>> pipelines_;
  size_t created_ = 0;
  size_t saved_at_ = 0;  // created_ when last saved or loaded
  size_t loaded_bytes_ = 0;
};

}  // namespace qmlx::vulkan
