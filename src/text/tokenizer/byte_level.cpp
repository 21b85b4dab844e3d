#include "text/tokenizer/byte_level.h"

#include <array>

#include "text/tokenizer/utf8.h"

namespace qmlx::byte_level {
namespace {

struct Tables {
  // UTF-8 form of the character standing for each byte (at most 2 bytes long).
  std::array<std::string, 256> byte_to_utf8;
  // Inverse, indexed by code point (all mapped code points are below 0x144).
  std::array<int, 0x200> char_to_byte;
};

// GPT-2 keeps printable Latin-1 bytes as themselves and shifts the rest to 256 + k.
Tables build_tables() {
  Tables t;
  t.char_to_byte.fill(-1);
  int shifted = 0;
  for (int b = 0; b < 256; ++b) {
    bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
    char32_t cp = printable ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + shifted++);
    utf8::append(t.byte_to_utf8[b], cp);
    t.char_to_byte[cp] = b;
  }
  return t;
}

const Tables& tables() {
  static const Tables t = build_tables();
  return t;
}

}  // namespace

void encode(std::string_view bytes, std::string& out) {
  const auto& map = tables().byte_to_utf8;
  for (char c : bytes) out += map[static_cast<uint8_t>(c)];
}

std::optional<std::string> decode(std::string_view token) {
  const auto& inverse = tables().char_to_byte;
  std::string bytes;
  bytes.reserve(token.size());
  size_t i = 0;
  while (i < token.size()) {
    if (utf8::valid_sequence_length(token, i) == 0) return std::nullopt;
    char32_t cp = utf8::decode_at(token, i);
    if (cp >= inverse.size() || inverse[cp] < 0) return std::nullopt;
    bytes.push_back(static_cast<char>(inverse[cp]));
  }
  return bytes;
}

}  // namespace qmlx::byte_level
