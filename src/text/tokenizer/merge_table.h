// MergeTable: BPE merge ranks keyed by the (left id, right id) pair, in one flat
// open-addressing array. The merge loop does a lookup for every adjacent pair it considers,
// so this lookup is the tokenizer's hottest path: a single multiply-shift hash and usually a
// single cache line, instead of a node-based map's modulo and pointer chase.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace qmlx {

class MergeTable {
 public:
  struct Merge {
    int32_t rank;
    int32_t result;
  };

  static uint64_t key(int32_t left, int32_t right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) |
           static_cast<uint32_t>(right);
  }

  void reserve(size_t entries) {
    size_t capacity = 16;
    while (capacity < entries * 2) capacity *= 2;
    slots_.assign(capacity, Slot{kEmpty, {}});
    mask_ = capacity - 1;
    bits_ = 0;
    while ((size_t{1} << bits_) < capacity) ++bits_;
  }

  // A pair listed twice keeps the later rank, as Hugging Face's map does.
  void insert(uint64_t k, Merge merge) {
    if (slots_.empty()) reserve(16);
    size_t i = index(k);
    while (slots_[i].key != kEmpty && slots_[i].key != k) i = (i + 1) & mask_;
    if (slots_[i].key == kEmpty) ++size_;
    slots_[i] = Slot{k, merge};
    if (size_ * 2 > slots_.size()) grow();
  }

  const Merge* find(int32_t left, int32_t right) const {
    if (slots_.empty()) return nullptr;
    uint64_t k = key(left, right);
    for (size_t i = index(k);; i = (i + 1) & mask_) {
      if (slots_[i].key == k) return &slots_[i].merge;
      if (slots_[i].key == kEmpty) return nullptr;
    }
  }

  size_t size() const { return size_; }

 private:
  // Ids are non-negative int32, so a key never has the top bit set.
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  struct Slot {
    uint64_t key;
    Merge merge;
  };

  size_t index(uint64_t k) const { return (k * 0x9E3779B97F4A7C15ull) >> (64 - bits_); }

  void grow() {
    std::vector<Slot> old = std::move(slots_);
    reserve(old.size());
    size_ = 0;
    for (const Slot& s : old) {
      if (s.key != kEmpty) insert(s.key, s.merge);
    }
  }

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  int bits_ = 0;
  size_t size_ = 0;
};

}  // namespace qmlx
