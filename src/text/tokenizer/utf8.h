// UTF-8 helpers shared by the tokenizer parts. Tokenizer input and output are UTF-8 byte
// strings; these functions decode code points, repair invalid input the way Rust's
// `String::from_utf8_lossy` and the WHATWG decoder do (one U+FFFD per maximal invalid
// subpart), and find where a byte stream stops being complete UTF-8 for streaming.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace qmlx::utf8 {

inline constexpr char32_t kReplacementChar = 0xFFFD;

// Length of the valid UTF-8 sequence starting at s[i], or 0 if the bytes there are not one.
size_t valid_sequence_length(std::string_view s, size_t i);

// Decodes the code point at s[i] (which must start a valid sequence) and advances i.
char32_t decode_at(std::string_view s, size_t& i);

void append(std::string& out, char32_t cp);

bool is_valid(std::string_view s);

// Replaces each maximal invalid subpart with U+FFFD; valid input comes back unchanged.
std::string to_valid_lossy(std::string_view s);

// Length of the longest prefix of s that does not end in the middle of a sequence that later
// bytes could still complete. Bytes that can never become valid count as complete.
size_t complete_prefix_length(std::string_view s);

}  // namespace qmlx::utf8
