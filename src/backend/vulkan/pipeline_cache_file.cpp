#include "backend/vulkan/pipeline_cache_file.h"

#include <xxhash.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <system_error>

#include "base/logging.h"
#include "base/process.h"

namespace qmlx::vulkan {
namespace {

constexpr char kMagic[8] = {'Q', 'M', 'L', 'X', 'V', 'K', 'P', 'C'};
constexpr uint32_t kFormatVersion = 1;
// magic, format version, reserved, payload bytes, payload XXH64.
constexpr size_t kHeaderBytes = 8 + 4 + 4 + 8 + 8;
// VkPipelineCacheHeaderVersionOne: header size, header version, vendor, device, cache UUID.
constexpr size_t kDriverHeaderBytes = 16 + 16;

template <typename T>
T read_le(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);  // every platform qmlx targets is little-endian
  return v;
}

template <typename T>
void append_le(std::vector<uint8_t>& out, T v) {
  const auto* p = reinterpret_cast<const uint8_t*>(&v);
  out.insert(out.end(), p, p + sizeof v);
}

std::vector<uint8_t> ignore(const std::string& path, const std::string& why) {
  log_warn("ignoring the Vulkan pipeline cache " + path + ": " + why);
  return {};
}

}  // namespace

std::string default_pipeline_cache_dir() {
  return (std::filesystem::path(qmlx_home()) / "vulkan-pipeline-cache").string();
}

std::string pipeline_cache_path(const std::string& dir, const DeviceInfo& device) {
  char version[16];
  std::snprintf(version, sizeof version, "%08x", device.driver_version);
  return (std::filesystem::path(dir) / (uuid_hex(device.device_uuid) + "-" + version + ".bin"))
      .string();
}

std::vector<uint8_t> read_pipeline_cache(const std::string& path, const DeviceInfo& device) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};  // no cache yet: the ordinary first run
  std::vector<uint8_t> file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (file.size() < kHeaderBytes) return ignore(path, "shorter than its header");
  if (std::memcmp(file.data(), kMagic, sizeof kMagic) != 0) return ignore(path, "bad magic");
  if (read_le<uint32_t>(file.data() + 8) != kFormatVersion)
    return ignore(path, "unknown format version");
  const uint64_t size = read_le<uint64_t>(file.data() + 16);
  if (size != file.size() - kHeaderBytes) return ignore(path, "truncated or overlong");
  const uint8_t* payload = file.data() + kHeaderBytes;
  if (XXH64(payload, size, 0) != read_le<uint64_t>(file.data() + 24))
    return ignore(path, "checksum mismatch");
  if (size < kDriverHeaderBytes) return ignore(path, "no driver header");
  if (read_le<uint32_t>(payload + 8) != device.vendor_id ||
      read_le<uint32_t>(payload + 12) != device.device_id ||
      std::memcmp(payload + 16, device.pipeline_cache_uuid.data(), 16) != 0)
    return ignore(path, "written by another device or driver build");
  return std::vector<uint8_t>(payload, payload + size);
}

bool write_pipeline_cache(const std::string& path, std::span<const uint8_t> data) {
  std::vector<uint8_t> file(kMagic, kMagic + sizeof kMagic);
  append_le<uint32_t>(file, kFormatVersion);
  append_le<uint32_t>(file, 0);
  append_le<uint64_t>(file, data.size());
  append_le<uint64_t>(file, XXH64(data.data(), data.size(), 0));
  file.insert(file.end(), data.begin(), data.end());

  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path target(path);
  fs::create_directories(target.parent_path(), ec);
  // A random name of our own, so two qmlx processes saving at once never mix their bytes; the
  // rename then replaces the file whole.
  const fs::path temp = target.string() + ".tmp" + std::to_string(std::random_device{}());
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(file.data()), std::streamsize(file.size()));
    if (!out) {
      log_warn("cannot write the Vulkan pipeline cache " + temp.string());
      fs::remove(temp, ec);
      return false;
    }
  }
  fs::rename(temp, target, ec);
  if (ec) {
    log_warn("cannot replace the Vulkan pipeline cache " + path + ": " + ec.message());
    fs::remove(temp, ec);
    return false;
  }
  return true;
}

}  // namespace qmlx::vulkan
