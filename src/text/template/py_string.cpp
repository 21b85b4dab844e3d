#include "text/template/py_string.h"

#include "text/tokenizer/utf8.h"

#include <algorithm>

namespace qmlx::jinja::py {

std::u32string decode_utf8(std::string_view text) {
  std::u32string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    unsigned char lead = static_cast<unsigned char>(text[i]);
    int extra = lead < 0x80 ? 0 : lead < 0xE0 ? 1 : lead < 0xF0 ? 2 : 3;
    char32_t cp = extra == 0   ? lead
                  : extra == 1 ? (lead & 0x1F)
                  : extra == 2 ? (lead & 0x0F)
                               : (lead & 0x07);
    if (lead >= 0x80 && lead < 0xC0) extra = 0;  // stray continuation byte: keep it as is
    size_t end = std::min(text.size(), i + 1 + extra);
    for (size_t j = i + 1; j < end; ++j)
      cp = (cp << 6) | (static_cast<unsigned char>(text[j]) & 0x3F);
    out.push_back(cp);
    i = end;
  }
  return out;
}

void append_utf8(std::string& out, char32_t cp) { utf8::append(out, cp); }

std::string encode_utf8(std::u32string_view code_points) {
  std::string out;
  out.reserve(code_points.size());
  for (char32_t cp : code_points) append_utf8(out, cp);
  return out;
}

size_t code_point_count(std::string_view text) {
  size_t n = 0;
  for (char c : text) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

bool is_space(char32_t cp) {
  if (cp <= 0x20) return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20);
  return cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) ||
         cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

std::string strip(std::string_view text, const std::optional<std::string>& chars, bool left,
                  bool right) {
  std::u32string cps = decode_utf8(text);
  std::u32string set = chars ? decode_utf8(*chars) : std::u32string();
  auto strippable = [&](char32_t cp) {
    return chars ? set.find(cp) != std::u32string::npos : is_space(cp);
  };
  size_t begin = 0, end = cps.size();
  if (left) {
    while (begin < end && strippable(cps[begin])) ++begin;
  }
  if (right) {
    while (end > begin && strippable(cps[end - 1])) --end;
  }
  return encode_utf8(std::u32string_view(cps).substr(begin, end - begin));
}

static std::vector<std::string> split_whitespace(std::string_view text, int64_t max_split,
                                                 bool from_right) {
  std::u32string cps = decode_utf8(text);
  if (from_right) std::reverse(cps.begin(), cps.end());
  std::vector<std::u32string> parts;
  size_t i = 0;
  while (i < cps.size()) {
    while (i < cps.size() && is_space(cps[i])) ++i;
    if (i == cps.size()) break;
    if (max_split >= 0 && static_cast<int64_t>(parts.size()) == max_split) {
      // The remainder keeps its inner whitespace but loses trailing whitespace.
      size_t end = cps.size();
      while (end > i && is_space(cps[end - 1])) --end;
      parts.push_back(cps.substr(i, end - i));
      break;
    }
    size_t start = i;
    while (i < cps.size() && !is_space(cps[i])) ++i;
    parts.push_back(cps.substr(start, i - start));
  }
  std::vector<std::string> out;
  for (auto& part : parts) {
    if (from_right) std::reverse(part.begin(), part.end());
    out.push_back(encode_utf8(part));
  }
  if (from_right) std::reverse(out.begin(), out.end());
  return out;
}

std::vector<std::string> split(std::string_view text, const std::optional<std::string>& sep,
                               int64_t max_split) {
  if (!sep) return split_whitespace(text, max_split, false);
  std::vector<std::string> out;
  size_t start = 0;
  while (max_split < 0 || static_cast<int64_t>(out.size()) < max_split) {
    size_t at = text.find(*sep, start);
    if (at == std::string_view::npos || sep->empty()) break;
    out.emplace_back(text.substr(start, at - start));
    start = at + sep->size();
  }
  out.emplace_back(text.substr(start));
  return out;
}

std::vector<std::string> rsplit(std::string_view text, const std::optional<std::string>& sep,
                                int64_t max_split) {
  if (!sep) return split_whitespace(text, max_split, true);
  std::vector<std::string> out;
  size_t end = text.size();
  while (!sep->empty() && (max_split < 0 || static_cast<int64_t>(out.size()) < max_split)) {
    if (end < sep->size()) break;
    size_t at = text.rfind(*sep, end - sep->size());
    if (at == std::string_view::npos) break;
    out.emplace_back(text.substr(at + sep->size(), end - at - sep->size()));
    end = at;
  }
  out.emplace_back(text.substr(0, end));
  std::reverse(out.begin(), out.end());
  return out;
}

static bool is_line_break(char32_t cp) {
  return cp == '\n' || cp == '\r' || cp == 0x0B || cp == 0x0C || (cp >= 0x1C && cp <= 0x1E) ||
         cp == 0x85 || cp == 0x2028 || cp == 0x2029;
}

std::vector<std::string> splitlines(std::string_view text) {
  std::u32string cps = decode_utf8(text);
  std::vector<std::string> lines;
  size_t start = 0;
  for (size_t i = 0; i < cps.size(); ++i) {
    if (!is_line_break(cps[i])) continue;
    lines.push_back(encode_utf8(std::u32string_view(cps).substr(start, i - start)));
    if (cps[i] == '\r' && i + 1 < cps.size() && cps[i + 1] == '\n') ++i;
    start = i + 1;
  }
  if (start < cps.size()) lines.push_back(encode_utf8(std::u32string_view(cps).substr(start)));
  return lines;
}

std::string replace(std::string_view text, std::string_view old_text, std::string_view new_text,
                    int64_t count) {
  std::string out;
  if (old_text.empty()) {
    // Python inserts `new` before every code point and at the end.
    std::u32string cps = decode_utf8(text);
    int64_t done = 0;
    for (char32_t cp : cps) {
      if (count < 0 || done < count) {
        out.append(new_text);
        ++done;
      }
      append_utf8(out, cp);
    }
    if (count < 0 || done < count) out.append(new_text);
    return out;
  }
  size_t start = 0;
  int64_t done = 0;
  while (count < 0 || done < count) {
    size_t at = text.find(old_text, start);
    if (at == std::string_view::npos) break;
    out.append(text.substr(start, at - start));
    out.append(new_text);
    start = at + old_text.size();
    ++done;
  }
  out.append(text.substr(start));
  return out;
}

int64_t count(std::string_view text, std::string_view sub) {
  if (sub.empty()) return static_cast<int64_t>(code_point_count(text)) + 1;
  int64_t n = 0;
  for (size_t at = text.find(sub); at != std::string_view::npos;
       at = text.find(sub, at + sub.size())) {
    ++n;
  }
  return n;
}

int64_t find(std::string_view text, std::string_view sub, bool from_right) {
  size_t at = from_right ? text.rfind(sub) : text.find(sub);
  if (at == std::string_view::npos) return -1;
  return static_cast<int64_t>(code_point_count(text.substr(0, at)));
}

// Simple one-to-one case pairs for the scripts chat content commonly uses.
static char32_t to_upper(char32_t cp) {
  if (cp >= 'a' && cp <= 'z') return cp - 32;
  if ((cp >= 0xE0 && cp <= 0xFE && cp != 0xF7)) return cp - 32;
  if (cp == 0xFF) return 0x178;
  if (cp >= 0x100 && cp <= 0x17F && cp != 0x130 && cp != 0x131 && cp != 0x138 && cp != 0x149 &&
      cp != 0x17F) {
    bool odd_is_lower = !(cp >= 0x139 && cp <= 0x148) && !(cp >= 0x179 && cp <= 0x17E);
    bool lower = odd_is_lower ? (cp & 1) : !(cp & 1);
    return lower ? cp - 1 : cp;
  }
  if (cp >= 0x3B1 && cp <= 0x3C9 && cp != 0x3C2) return cp - 32;
  if (cp >= 0x430 && cp <= 0x44F) return cp - 32;
  if (cp >= 0x450 && cp <= 0x45F) return cp - 80;
  return cp;
}

static char32_t to_lower(char32_t cp) {
  if (cp >= 'A' && cp <= 'Z') return cp + 32;
  if ((cp >= 0xC0 && cp <= 0xDE && cp != 0xD7)) return cp + 32;
  if (cp == 0x178) return 0xFF;
  if (cp >= 0x100 && cp <= 0x17F && cp != 0x130 && cp != 0x131 && cp != 0x138 && cp != 0x149 &&
      cp != 0x17F) {
    bool odd_is_lower = !(cp >= 0x139 && cp <= 0x148) && !(cp >= 0x179 && cp <= 0x17E);
    bool upper = odd_is_lower ? !(cp & 1) : (cp & 1);
    return upper ? cp + 1 : cp;
  }
  if (cp >= 0x391 && cp <= 0x3A9 && cp != 0x3A2) return cp + 32;
  if (cp >= 0x410 && cp <= 0x42F) return cp + 32;
  if (cp >= 0x400 && cp <= 0x40F) return cp + 80;
  return cp;
}

bool is_letter(char32_t cp) {
  if (cp < 0x80) return (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z');
  return to_upper(cp) != cp || to_lower(cp) != cp || cp >= 0x4E00;
}

static std::string map_case(std::string_view text, char32_t (*fn)(char32_t)) {
  std::u32string cps = decode_utf8(text);
  for (char32_t& cp : cps) cp = fn(cp);
  return encode_utf8(cps);
}

std::string upper(std::string_view text) { return map_case(text, to_upper); }
std::string lower(std::string_view text) { return map_case(text, to_lower); }

std::string capitalize(std::string_view text) {
  std::u32string cps = decode_utf8(text);
  for (size_t i = 0; i < cps.size(); ++i) cps[i] = i == 0 ? to_upper(cps[i]) : to_lower(cps[i]);
  return encode_utf8(cps);
}

std::string title(std::string_view text) {
  std::u32string cps = decode_utf8(text);
  bool previous_is_cased = false;
  for (char32_t& cp : cps) {
    bool cased = to_upper(cp) != cp || to_lower(cp) != cp;
    cp = previous_is_cased ? to_lower(cp) : to_upper(cp);
    previous_is_cased = cased;
  }
  return encode_utf8(cps);
}

}  // namespace qmlx::jinja::py
