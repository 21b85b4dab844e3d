#include "grammar/utf8_ranges.h"

#include <algorithm>

namespace qmlx::grammar {
namespace {

constexpr uint32_t kMaxCodePoint = 0x10FFFF;

int encoded_length(uint32_t cp) { return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4; }

// [lo, hi] share one encoded length and one prefix structure once split_same_length is done.
void split_same_length(uint32_t lo, uint32_t hi, std::vector<ByteRangeSequence>& out) {
  int n = encoded_length(lo);
  for (int i = 1; i < n; ++i) {
    uint32_t m = (uint32_t{1} << (6 * i)) - 1;
    if ((lo & ~m) != (hi & ~m)) {
      if ((lo & m) != 0) {
        split_same_length(lo, lo | m, out);
        split_same_length((lo | m) + 1, hi, out);
        return;
      }
      if ((hi & m) != m) {
        split_same_length(lo, (hi & ~m) - 1, out);
        split_same_length(hi & ~m, hi, out);
        return;
      }
    }
  }
  std::string a, b;
  append_utf8(lo, a);
  append_utf8(hi, b);
  ByteRangeSequence seq;
  for (size_t i = 0; i < a.size(); ++i)
    seq.emplace_back(static_cast<uint8_t>(a[i]), static_cast<uint8_t>(b[i]));
  out.push_back(std::move(seq));
}

}  // namespace

void append_utf8(uint32_t cp, std::string& out) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

std::vector<ByteRangeSequence> utf8_sequences(uint32_t lo, uint32_t hi) {
  std::vector<ByteRangeSequence> out;
  hi = std::min(hi, kMaxCodePoint);
  // Cut at the encoded-length boundaries and around the surrogates.
  const uint32_t cuts[][2] = {
      {0, 0x7F}, {0x80, 0x7FF}, {0x800, 0xD7FF}, {0xE000, 0xFFFF}, {0x10000, 0x10FFFF}};
  for (const auto& cut : cuts) {
    uint32_t a = std::max(lo, cut[0]), b = std::min(hi, cut[1]);
    if (a <= b) split_same_length(a, b, out);
  }
  return out;
}

std::vector<CodePointRange> normalized(std::vector<CodePointRange> ranges) {
  std::sort(ranges.begin(), ranges.end(),
            [](const CodePointRange& a, const CodePointRange& b) { return a.lo < b.lo; });
  std::vector<CodePointRange> out;
  for (const auto& r : ranges) {
    if (r.lo > r.hi) continue;
    if (!out.empty() && r.lo <= out.back().hi + 1)
      out.back().hi = std::max(out.back().hi, r.hi);
    else
      out.push_back(r);
  }
  return out;
}

std::vector<CodePointRange> complement(std::vector<CodePointRange> ranges) {
  std::vector<CodePointRange> out;
  uint32_t next = 0;
  for (const auto& r : normalized(std::move(ranges))) {
    if (r.lo > next) out.push_back({next, r.lo - 1});
    next = std::max(next, r.hi + 1);
  }
  if (next <= kMaxCodePoint) out.push_back({next, kMaxCodePoint});
  return out;
}

}  // namespace qmlx::grammar
