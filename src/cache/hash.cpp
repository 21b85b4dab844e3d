#include "cache/hash.h"

#include <xxhash.h>

#include <cstdio>
#include <cstring>

namespace qmlx {
namespace {

std::optional<uint64_t> parse_hex64(std::string_view hex) {
  uint64_t value = 0;
  for (char c : hex) {
    int digit;
    if (c >= '0' && c <= '9') {
      digit = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      digit = c - 'a' + 10;
    } else {
      return std::nullopt;
    }
    value = (value << 4) | uint64_t(digit);
  }
  return value;
}

Hash128 to_hash(XXH128_hash_t h) { return Hash128{h.low64, h.high64}; }

}  // namespace

std::string Hash128::hex() const {
  char buffer[33];
  std::snprintf(buffer, sizeof(buffer), "%016llx%016llx", static_cast<unsigned long long>(high),
                static_cast<unsigned long long>(low));
  return buffer;
}

std::optional<Hash128> Hash128::from_hex(std::string_view hex) {
  if (hex.size() != 32) return std::nullopt;
  auto high = parse_hex64(hex.substr(0, 16));
  auto low = parse_hex64(hex.substr(16));
  if (!high || !low) return std::nullopt;
  return Hash128{*low, *high};
}

Hash128 model_fingerprint(std::string_view model_description, const StateLayout& layout) {
  std::string text = "qmlx-cache v" + std::to_string(kCacheFormatVersion) + "\nmodel: ";
  text.append(model_description);
  text += "\nstate: " + layout.describe();
  text += "\nkv_dtype: " + std::string(dtype_name(layout.kv_dtype));
  return to_hash(XXH3_128bits(text.data(), text.size()));
}

Hash128 chain_next(const Hash128& prev, std::span<const int32_t> tokens) {
  uint8_t seed_bytes[16];
  std::memcpy(seed_bytes, &prev.low, 8);
  std::memcpy(seed_bytes + 8, &prev.high, 8);
  // One contiguous buffer: the streaming state type is opaque in the shared xxhash build.
  std::vector<uint8_t> bytes(sizeof(seed_bytes) + tokens.size_bytes());
  std::memcpy(bytes.data(), seed_bytes, sizeof(seed_bytes));
  if (!tokens.empty())
    std::memcpy(bytes.data() + sizeof(seed_bytes), tokens.data(), tokens.size_bytes());
  return to_hash(XXH3_128bits(bytes.data(), bytes.size()));
}

std::vector<Hash128> chain_hashes(const Hash128& fingerprint, std::span<const int32_t> tokens,
                                  int chunk_tokens) {
  const size_t chunks = tokens.size() / size_t(chunk_tokens);
  std::vector<Hash128> hashes;
  hashes.reserve(chunks + 1);
  hashes.push_back(fingerprint);
  for (size_t i = 0; i < chunks; ++i) {
    hashes.push_back(chain_next(hashes.back(), tokens.subspan(i * chunk_tokens, chunk_tokens)));
  }
  return hashes;
}

Hash128 prefix_hash(const Hash128& fingerprint, std::span<const int32_t> tokens, int chunk_tokens) {
  std::vector<Hash128> hashes = chain_hashes(fingerprint, tokens, chunk_tokens);
  const size_t full = (hashes.size() - 1) * size_t(chunk_tokens);
  if (full == tokens.size()) return hashes.back();
  return chain_next(hashes.back(), tokens.subspan(full));
}

uint64_t checksum64(std::span<const uint8_t> bytes) {
  return XXH3_64bits(bytes.data(), bytes.size());
}

}  // namespace qmlx
