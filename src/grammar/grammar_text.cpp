#include "grammar/grammar_text.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

namespace qmlx::grammar {
namespace {

std::string hex_escape(uint32_t cp) {
  char buf[16];
  if (cp < 0x100)
    std::snprintf(buf, sizeof buf, "\\x%02x", cp);
  else if (cp < 0x10000)
    std::snprintf(buf, sizeof buf, "\\u%04x", cp);
  else
    std::snprintf(buf, sizeof buf, "\\U%08x", cp);
  return buf;
}

std::string class_char(uint32_t cp) {
  if (cp < 0x80 && std::isalnum(static_cast<int>(cp))) return std::string(1, static_cast<char>(cp));
  return hex_escape(cp);
}

// The canonical escape of a character nlohmann::json escapes, as grammar literal bytes.
std::string canonical_escape(uint32_t cp) {
  switch (cp) {
    case '"':
      return "\\\"";
    case '\\':
      return "\\\\";
    case '\b':
      return "\\b";
    case '\f':
      return "\\f";
    case '\n':
      return "\\n";
    case '\r':
      return "\\r";
    case '\t':
      return "\\t";
    default: {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", cp);
      return buf;
    }
  }
}

}  // namespace

std::string grammar_literal(std::string_view bytes) {
  std::string out = "\"";
  for (char c : bytes) {
    auto b = static_cast<uint8_t>(c);
    if (b >= 0x20 && b < 0x7F && c != '"' && c != '\\')
      out += c;
    else
      out += hex_escape(b);  // \xHH in a literal is one raw byte
  }
  return out + "\"";
}

std::string grammar_class(const std::vector<CodePointRange>& ranges) {
  std::string out = "[";
  for (const auto& r : ranges) {
    out += class_char(r.lo);
    if (r.hi != r.lo) out += "-" + class_char(r.hi);
  }
  return out + "]";
}

std::string json_string_chars(const std::vector<CodePointRange>& ranges) {
  std::vector<CodePointRange> raw;
  std::vector<std::string> alternatives;
  for (const auto& r : normalized(ranges)) {
    for (uint32_t cp = r.lo; cp <= r.hi && cp < 0x20; ++cp)
      alternatives.push_back(grammar_literal(canonical_escape(cp)));
    for (uint32_t cp : {uint32_t{'"'}, uint32_t{'\\'}})
      if (r.lo <= cp && cp <= r.hi) alternatives.push_back(grammar_literal(canonical_escape(cp)));
    // The raw part: r minus controls, '"' and '\'.
    for (auto piece :
         std::vector<CodePointRange>{{0x20, '"' - 1}, {'"' + 1, '\\' - 1}, {'\\' + 1, 0x10FFFF}}) {
      uint32_t lo = std::max(piece.lo, r.lo), hi = std::min(piece.hi, r.hi);
      if (lo <= hi) raw.push_back({lo, hi});
    }
  }
  if (!raw.empty()) alternatives.insert(alternatives.begin(), grammar_class(raw));
  std::string out;
  for (const auto& a : alternatives) out += (out.empty() ? "" : " | ") + a;
  return alternatives.size() > 1 ? "(" + out + ")" : out;
}

}  // namespace qmlx::grammar
