#include "base/growable_bytes.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <new>
#include <utility>

namespace qmlx {
namespace {

size_t round_to_pages(size_t n) {
  static const size_t page = size_t(sysconf(_SC_PAGESIZE));
  return (n + page - 1) / page * page;
}

}  // namespace

GrowableBytes::~GrowableBytes() { release(); }

GrowableBytes::GrowableBytes(const GrowableBytes& other) { *this = other; }

GrowableBytes& GrowableBytes::operator=(const GrowableBytes& other) {
  if (this == &other) return *this;
  release();
  resize(other.size_);
  if (size_ > 0) std::memcpy(data_, other.data_, size_);
  return *this;
}

GrowableBytes::GrowableBytes(GrowableBytes&& other) noexcept { *this = std::move(other); }

GrowableBytes& GrowableBytes::operator=(GrowableBytes&& other) noexcept {
  if (this == &other) return *this;
  release();
  data_ = std::exchange(other.data_, nullptr);
  size_ = std::exchange(other.size_, 0);
  mapped_ = std::exchange(other.mapped_, 0);
  touched_ = std::exchange(other.touched_, 0);
  return *this;
}

void GrowableBytes::resize(size_t n) {
  if (n > mapped_) {
    const size_t want = round_to_pages(n);
    void* p = data_ == nullptr
                  ? mmap(nullptr, want, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
                  : mremap(data_, mapped_, want, MREMAP_MAYMOVE);
    if (p == MAP_FAILED) throw std::bad_alloc();
    data_ = static_cast<uint8_t*>(p);
    mapped_ = want;
  }
  // Bytes exposed again after a shrink may hold old values: zero those; the rest is fresh.
  if (n > size_ && touched_ > size_) std::memset(data_ + size_, 0, std::min(n, touched_) - size_);
  size_ = n;
  touched_ = std::max(touched_, n);
}

void GrowableBytes::release() {
  if (data_ != nullptr) munmap(data_, mapped_);
  data_ = nullptr;
  size_ = mapped_ = touched_ = 0;
}

}  // namespace qmlx
