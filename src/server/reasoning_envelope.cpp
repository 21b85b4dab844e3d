#include "server/reasoning_envelope.h"

#include <algorithm>
#include <array>
#include <cstdint>

namespace qmlx::server {
namespace {

constexpr std::string_view kTag = "qmlx-reasoning-v1:";
constexpr std::string_view kAlphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string base64_encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    uint32_t chunk = static_cast<uint8_t>(bytes[i]) << 16;
    size_t n = std::min<size_t>(3, bytes.size() - i);
    if (n > 1) chunk |= static_cast<uint8_t>(bytes[i + 1]) << 8;
    if (n > 2) chunk |= static_cast<uint8_t>(bytes[i + 2]);
    for (size_t k = 0; k < 4; ++k) {
      out += k <= n ? kAlphabet[(chunk >> (18 - 6 * k)) & 63] : '=';
    }
  }
  return out;
}

std::optional<std::string> base64_decode(std::string_view text) {
  if (text.size() % 4 != 0) return std::nullopt;
  std::array<int, 256> value;
  value.fill(-1);
  for (size_t i = 0; i < kAlphabet.size(); ++i) value[static_cast<uint8_t>(kAlphabet[i])] = int(i);
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (size_t i = 0; i < text.size(); i += 4) {
    uint32_t chunk = 0;
    size_t padding = 0;
    for (size_t k = 0; k < 4; ++k) {
      char c = text[i + k];
      bool last_group = i + 4 == text.size();
      if (c == '=' && last_group && k >= 2) {
        ++padding;
        chunk <<= 6;
        continue;
      }
      int v = value[static_cast<uint8_t>(c)];
      if (v < 0 || padding > 0) return std::nullopt;  // bad character, or data after padding
      chunk = (chunk << 6) | uint32_t(v);
    }
    out += static_cast<char>((chunk >> 16) & 0xff);
    if (padding < 2) out += static_cast<char>((chunk >> 8) & 0xff);
    if (padding < 1) out += static_cast<char>(chunk & 0xff);
  }
  return out;
}

}  // namespace

std::string seal_reasoning(std::string_view reasoning) {
  return std::string(kTag) + base64_encode(reasoning);
}

std::optional<std::string> open_reasoning(std::string_view sealed) {
  if (sealed.substr(0, kTag.size()) != kTag) return std::nullopt;
  return base64_decode(sealed.substr(kTag.size()));
}

}  // namespace qmlx::server
