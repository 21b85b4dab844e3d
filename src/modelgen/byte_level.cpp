#include "modelgen/byte_level.h"

#include <algorithm>

namespace qmlx::modelgen {

namespace {

std::string utf8(unsigned code_point) {
  std::string out;
  if (code_point < 0x80) {
    out += static_cast<char>(code_point);
  } else {
    out += static_cast<char>(0xc0 | (code_point >> 6));
    out += static_cast<char>(0x80 | (code_point & 0x3f));
  }
  return out;
}

bool maps_to_itself(unsigned byte) {
  return (byte >= '!' && byte <= '~') || (byte >= 0xa1 && byte <= 0xac) ||
         (byte >= 0xae && byte <= 0xff);
}

struct Alphabet {
  std::array<unsigned char, 256> order{};
  std::array<std::string, 256> symbols;

  Alphabet() {
    int next = 0;
    for (unsigned b = 0; b < 256; ++b) {
      if (maps_to_itself(b)) order[next++] = static_cast<unsigned char>(b);
    }
    unsigned extra = 0;
    for (unsigned b = 0; b < 256; ++b) {
      if (maps_to_itself(b)) {
        symbols[b] = utf8(b);
      } else {
        order[next++] = static_cast<unsigned char>(b);
        symbols[b] = utf8(256 + extra++);
      }
    }
  }
};

const Alphabet& alphabet() {
  static const Alphabet instance;
  return instance;
}

}  // namespace

const std::array<unsigned char, 256>& byte_order() { return alphabet().order; }

const std::string& byte_symbol(unsigned char byte) { return alphabet().symbols[byte]; }

std::string to_byte_level(std::string_view bytes) {
  std::string out;
  for (unsigned char c : bytes) out += byte_symbol(c);
  return out;
}

}  // namespace qmlx::modelgen
