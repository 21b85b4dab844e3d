// UTF-8 ranges: a range of Unicode code points as a list of byte-range sequences, so a
// character class over code points can be matched byte by byte. Each sequence is a fixed
// number of bytes, each byte within its own range (the well-known UTF-8 range splitting).
// Surrogates (U+D800..U+DFFF) are never produced: they are not characters in UTF-8.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace qmlx::grammar {

struct CodePointRange {
  uint32_t lo = 0;
  uint32_t hi = 0;
};

using ByteRangeSequence = std::vector<std::pair<uint8_t, uint8_t>>;

std::vector<ByteRangeSequence> utf8_sequences(uint32_t lo, uint32_t hi);

// The complement of `ranges` within all Unicode scalar values, sorted and merged.
std::vector<CodePointRange> complement(std::vector<CodePointRange> ranges);
// Sorted, overlapping and adjacent ranges merged.
std::vector<CodePointRange> normalized(std::vector<CodePointRange> ranges);

// Appends the UTF-8 encoding of `cp` to `out`.
void append_utf8(uint32_t cp, std::string& out);

}  // namespace qmlx::grammar
