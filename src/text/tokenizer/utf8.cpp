#include "text/tokenizer/utf8.h"

#include <cstring>

namespace qmlx::utf8 {
namespace {

// Bytes allowed for the second byte of a sequence, per RFC 3629 table 3-7; this excludes
// overlongs and surrogates, which is what makes "maximal subpart" repair well defined.
bool second_byte_ok(uint8_t lead, uint8_t b) {
  if (lead == 0xE0) return b >= 0xA0 && b <= 0xBF;
  if (lead == 0xED) return b >= 0x80 && b <= 0x9F;
  if (lead == 0xF0) return b >= 0x90 && b <= 0xBF;
  if (lead == 0xF4) return b >= 0x80 && b <= 0x8F;
  return b >= 0x80 && b <= 0xBF;
}

// Expected total length for a lead byte, or 0 for bytes that never start a sequence.
size_t expected_length(uint8_t lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) return 2;
  if (lead >= 0xE0 && lead <= 0xEF) return 3;
  if (lead >= 0xF0 && lead <= 0xF4) return 4;
  return 0;
}

// How many bytes of the sequence starting at s[i] are a valid prefix (at least 1 for a
// valid lead byte), and whether the whole sequence is present.
size_t valid_prefix(std::string_view s, size_t i, bool& complete) {
  auto lead = static_cast<uint8_t>(s[i]);
  size_t need = expected_length(lead);
  complete = false;
  if (need == 0) return 0;
  size_t n = 1;
  while (n < need && i + n < s.size()) {
    auto b = static_cast<uint8_t>(s[i + n]);
    bool ok = n == 1 ? second_byte_ok(lead, b) : (b >= 0x80 && b <= 0xBF);
    if (!ok) return n;
    ++n;
  }
  complete = n == need;
  return n;
}

bool all_ascii8(const char* p) {
  uint64_t word;
  std::memcpy(&word, p, 8);
  return (word & 0x8080808080808080ull) == 0;
}

}  // namespace

size_t valid_sequence_length(std::string_view s, size_t i) {
  bool complete;
  size_t n = valid_prefix(s, i, complete);
  return complete ? n : 0;
}

char32_t decode_at(std::string_view s, size_t& i) {
  auto lead = static_cast<uint8_t>(s[i]);
  size_t n = expected_length(lead);
  if (n <= 1) {
    ++i;
    return lead;
  }
  char32_t cp = lead & (0x7F >> n);
  for (size_t k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<uint8_t>(s[i + k]) & 0x3F);
  i += n;
  return cp;
}

void append(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

bool is_valid(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    if (i + 8 <= s.size() && all_ascii8(s.data() + i)) {
      i += 8;
      continue;
    }
    if (static_cast<uint8_t>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    size_t n = valid_sequence_length(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string to_valid_lossy(std::string_view s) {
  if (is_valid(s)) return std::string(s);
  std::string out;
  out.reserve(s.size() + 8);
  size_t i = 0;
  while (i < s.size()) {
    bool complete;
    size_t n = valid_prefix(s, i, complete);
    if (complete) {
      out.append(s.substr(i, n));
      i += n;
    } else {
      append(out, kReplacementChar);
      i += n == 0 ? 1 : n;
    }
  }
  return out;
}

size_t complete_prefix_length(std::string_view s) {
  // A sequence is at most 4 bytes, so only the last 3 bytes can be an unfinished start.
  size_t from = s.size() > 3 ? s.size() - 3 : 0;
  for (size_t i = from; i < s.size(); ++i) {
    bool complete;
    size_t n = valid_prefix(s, i, complete);
    if (n > 0 && !complete && i + n == s.size()) return i;
  }
  return s.size();
}

}  // namespace qmlx::utf8
