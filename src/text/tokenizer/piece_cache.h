// PieceCache: remembers the ids BPE produced for a piece. Natural text repeats the same words
// constantly, so most pieces skip the merge loop entirely. Sharded by hash with one mutex per
// shard so concurrent encodes rarely contend. Each shard is a flat open-addressing table
// whose keys and ids live in two append-only arenas; a full shard is simply emptied (cheap,
// and the hot words come straight back).
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace qmlx {

// Transparent string hash for maps looked up by string_view.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

class PieceCache {
 public:
  // Pieces longer than this are not worth a cache slot (rarely repeated, costly to hash).
  static constexpr size_t kMaxPieceBytes = 256;

  static uint64_t hash(std::string_view piece);

  // Appends the cached ids for `piece` to `ids` and returns true, or returns false.
  bool lookup(std::string_view piece, uint64_t h, std::vector<int32_t>& ids) const {
    Shard& shard = shards_[h % kShards];
    std::lock_guard lock(shard.mutex);
    const Slot* slot = shard.find(piece, h);
    if (slot == nullptr || slot->hash == 0) return false;
    const int32_t* first = shard.ids.data() + slot->ids_offset;
    ids.insert(ids.end(), first, first + slot->ids_length);
    return true;
  }

  void insert(std::string_view piece, uint64_t h, const std::vector<int32_t>& ids) const {
    Shard& shard = shards_[h % kShards];
    std::lock_guard lock(shard.mutex);
    if (shard.count >= kMaxEntriesPerShard) shard.reset();
    Slot* slot = shard.find(piece, h);
    if (slot->hash != 0) return;
    *slot =
        Slot{h | 1, static_cast<uint32_t>(shard.keys.size()), static_cast<uint32_t>(piece.size()),
             static_cast<uint32_t>(shard.ids.size()), static_cast<uint32_t>(ids.size())};
    shard.keys.append(piece);
    shard.ids.insert(shard.ids.end(), ids.begin(), ids.end());
    ++shard.count;
  }

 private:
  static constexpr size_t kShards = 16;
  static constexpr size_t kMaxEntriesPerShard = 8192;
  static constexpr size_t kSlots = kMaxEntriesPerShard * 2;  // power of two

  struct Slot {
    uint64_t hash = 0;  // 0: empty (stored hashes always have the low bit set)
    uint32_t key_offset = 0, key_length = 0, ids_offset = 0, ids_length = 0;
  };

  struct Shard {
    std::mutex mutex;
    std::vector<Slot> slots;
    std::string keys;
    std::vector<int32_t> ids;
    size_t count = 0;

    void reset() {
      slots.assign(kSlots, Slot{});
      keys.clear();
      ids.clear();
      count = 0;
    }
    // The slot holding `piece`, or the empty slot where it would go.
    Slot* find(std::string_view piece, uint64_t h) {
      if (slots.empty()) reset();
      uint64_t stored = h | 1;
      for (size_t i = (h >> 4) & (kSlots - 1);; i = (i + 1) & (kSlots - 1)) {
        Slot& s = slots[i];
        if (s.hash == 0) return &s;
        if (s.hash == stored && s.key_length == piece.size() &&
            std::memcmp(keys.data() + s.key_offset, piece.data(), piece.size()) == 0) {
          return &s;
        }
      }
    }
  };
  mutable std::array<Shard, kShards> shards_;
};

}  // namespace qmlx
