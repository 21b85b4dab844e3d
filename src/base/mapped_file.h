// MappedFile: a read-only memory mapping of a whole file. Model weights are used in place
// from the mapping, so a 4-bit model costs its file size in page cache, not a decoded copy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace qmlx {

class MappedFile {
 public:
  // Throws qmlx::Error naming the path when the file cannot be opened or mapped.
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::string& path() const { return path_; }
  std::span<const uint8_t> bytes() const { return {data_, size_}; }
  size_t size() const { return size_; }

 private:
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace qmlx
