// The on-disk pipeline cache: the driver's VkPipelineCache data, saved when a context closes so
// later runs skip the driver's shader compilation. One file per device and driver build,
// <dir>/<device UUID>-<driver version>.bin, where <dir> defaults to
// $QMLX_HOME/vulkan-pipeline-cache (~/.qmlx/...). The driver's data is wrapped in a header of
// our own ("QMLXVKPC", format version, payload size, XXH64 of the payload) because drivers are
// not required to survive arbitrary bytes: a file that fails any check is ignored with a warning,
// since the cache only saves time and must never stop qmlx from running.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "backend/vulkan/device_info.h"

namespace qmlx::vulkan {

std::string default_pipeline_cache_dir();
std::string pipeline_cache_path(const std::string& dir, const DeviceInfo& device);

// The driver data stored at `path`, or empty when there is none or it is unusable (a warning
// says which check failed). Data written for another device or driver is unusable too.
std::vector<uint8_t> read_pipeline_cache(const std::string& path, const DeviceInfo& device);

// Replaces `path` atomically (a temporary file, then a rename), creating the folder. Returns
// false after logging a warning when the file cannot be written.
bool write_pipeline_cache(const std::string& path, std::span<const uint8_t> data);

}  // namespace qmlx::vulkan
