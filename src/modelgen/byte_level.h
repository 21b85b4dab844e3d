// The GPT-2 byte-level alphabet used by Qwen's BPE: each of the 256 byte values maps to one
// printable Unicode character (printable Latin-1 bytes map to themselves, the rest to
// U+0100 onwards), so any byte string is a valid token string. Qwen's vocabulary lists the
// 256 byte tokens in this alphabet's order ("!" is id 0).
#pragma once

#include <array>
#include <string>
#include <string_view>

namespace qmlx::modelgen {

// byte_order()[i] is the byte whose token has id i in a Qwen-style vocabulary.
const std::array<unsigned char, 256>& byte_order();
// The UTF-8 encoding of the character that stands for `byte`.
const std::string& byte_symbol(unsigned char byte);
// Every byte of `bytes` replaced by its symbol.
std::string to_byte_level(std::string_view bytes);

}  // namespace qmlx::modelgen
