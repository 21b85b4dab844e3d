// Hashes of the cache: the 128-bit model fingerprint F that keys a store, the prefix hash
// chain that names K/V chunks and snapshots (h0 = F, h(i+1) = XXH3-128(h(i) || tokens of chunk
// i)), and the 64-bit checksums that guard every byte on disk. A chain hash identifies a whole
// token prefix under one model, so two conversations that share a prefix share its chunks.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/session_state.h"

namespace qmlx {

struct Hash128 {
  uint64_t low = 0;
  uint64_t high = 0;

  bool operator==(const Hash128&) const = default;
  auto operator<=>(const Hash128&) const = default;
  // 32 lowercase hex digits, high word first.
  std::string hex() const;
  static std::optional<Hash128> from_hex(std::string_view hex);
};

struct Hash128Hasher {
  size_t operator()(const Hash128& h) const {
    return size_t(h.low ^ (h.high * 0x9E3779B97F4A7C15ull));
  }
};

// Bumped whenever the meaning of stored bytes changes (file formats, state layout rules).
inline constexpr uint32_t kCacheFormatVersion = 1;

// F over the engine's model description (architecture, hyper-parameters, tensor names,
// shapes, dtypes, quantization, sampled weight digests), the state layout with its KV dtype,
// and kCacheFormatVersion.
Hash128 model_fingerprint(std::string_view model_description, const StateLayout& layout);

// The next link of the chain: XXH3-128 over prev's 16 bytes followed by the tokens.
Hash128 chain_next(const Hash128& prev, std::span<const int32_t> tokens);

// [h0, h1, ..., hk] for the k = tokens.size() / chunk_tokens full chunks of tokens.
std::vector<Hash128> chain_hashes(const Hash128& fingerprint, std::span<const int32_t> tokens,
                                  int chunk_tokens);

// The name of the resume point at `tokens.size()`: the chain hash of its full chunks extended
// by the tail tokens (equal to the last chain hash when there is no tail).
Hash128 prefix_hash(const Hash128& fingerprint, std::span<const int32_t> tokens, int chunk_tokens);

uint64_t checksum64(std::span<const uint8_t> bytes);

}  // namespace qmlx
