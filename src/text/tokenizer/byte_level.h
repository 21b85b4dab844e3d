// ByteLevel: GPT-2's reversible byte <-> printable-character map. Byte-level BPE vocabularies
// store every token as a string of these characters, so arbitrary bytes (including partial
// UTF-8) get tokens without any unknown symbol.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace qmlx::byte_level {

// Appends the byte-level form of `bytes` (each byte becomes one code point, as UTF-8).
void encode(std::string_view bytes, std::string& out);

// The bytes a byte-level token stands for, or nullopt if it holds a character outside the
// map (then the token is not byte-level, e.g. an added token written in plain text).
std::optional<std::string> decode(std::string_view token);

}  // namespace qmlx::byte_level
