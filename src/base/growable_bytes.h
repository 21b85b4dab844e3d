// A byte buffer that grows in place, for the K/V cache. Its pages come from an anonymous
// mapping: growing is mremap (the kernel moves page mappings, nothing is copied) and pages never
// written stay zero and not resident. A std::vector growing a 200k-token K/V cache (GBs) would
// hold the old and the new copy at once and zero every new byte before use.
#pragma once

#include <cstddef>
#include <cstdint>

namespace qmlx {

class GrowableBytes {
 public:
  GrowableBytes() = default;
  ~GrowableBytes();
  GrowableBytes(const GrowableBytes& other);
  GrowableBytes& operator=(const GrowableBytes& other);
  GrowableBytes(GrowableBytes&& other) noexcept;
  GrowableBytes& operator=(GrowableBytes&& other) noexcept;

  uint8_t* data() { return data_; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  // Bytes past the old size read as zero. Shrinking keeps the pages. Throws std::bad_alloc.
  void resize(size_t n);

 private:
  void release();

  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  size_t mapped_ = 0;   // bytes mapped, a multiple of the page size
  size_t touched_ = 0;  // bytes [0, touched_) may be non-zero; the rest of the mapping is zero
};

}  // namespace qmlx
