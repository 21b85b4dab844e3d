#include "text/tokenizer/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <nlohmann/json.hpp>

#include "base/error.h"

namespace qmlx {

struct Regex::Compiled {
  pcre2_code* code = nullptr;
  bool jit = false;
  ~Compiled() { pcre2_code_free(code); }
};

namespace {

struct MatchDataDeleter {
  void operator()(pcre2_match_data* data) const { pcre2_match_data_free(data); }
};
using MatchData = std::unique_ptr<pcre2_match_data, MatchDataDeleter>;

// Oniguruma's meaning of the shorthand classes, written out for PCRE2: \s is exactly
// Unicode White_Space (PCRE2 adds U+180E), \w is Letter|Mark|Nd|Pc (PCRE2 omits marks),
// \h is a hex digit (PCRE2: horizontal space).
constexpr std::string_view kSpaceSet =
    "\\t-\\r\\x{20}\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}"
    "\\x{205F}\\x{3000}";
constexpr std::string_view kWordSet = "\\p{L}\\p{M}\\p{Nd}\\p{Pc}";
constexpr std::string_view kHexSet = "0-9a-fA-F";

std::string_view shorthand_set(char letter) {
  switch (letter) {
    case 's':
    case 'S':
      return kSpaceSet;
    case 'w':
    case 'W':
      return kWordSet;
    case 'h':
    case 'H':
      return kHexSet;
    default:
      return {};
  }
}

// Rewrites \s \S \w \W \h \H into explicit sets. Inside a character class only the positive
// forms can be inlined; a negated one there is left to PCRE2 (no tokenizer uses it).
std::string translate_oniguruma(const std::string& pattern) {
  std::string out;
  out.reserve(pattern.size() + 64);
  bool in_class = false;
  for (size_t i = 0; i < pattern.size(); ++i) {
    char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      char letter = pattern[i + 1];
      std::string_view set = shorthand_set(letter);
      bool negated = letter >= 'A' && letter <= 'Z';
      if (!set.empty() && !in_class) {
        out.append(negated ? "[^" : "[").append(set).append("]");
      } else if (!set.empty() && !negated) {
        out.append(set);
      } else {
        out.append(pattern, i, 2);
      }
      ++i;
      continue;
    }
    if (c == '[' && !in_class) {
      in_class = true;
      out.push_back(c);
      // A ']' right after '[' or '[^' is a literal member, not the end of the class.
      if (i + 1 < pattern.size() && pattern[i + 1] == '^') out.push_back(pattern[++i]);
      if (i + 1 < pattern.size() && pattern[i + 1] == ']') out.push_back(pattern[++i]);
      continue;
    }
    if (c == ']' && in_class) in_class = false;
    out.push_back(c);
  }
  return out;
}

}  // namespace

Regex::Regex(const std::string& pattern, bool literal, const std::string& context)
    : compiled_(std::make_unique<Compiled>()) {
  // PCRE2 refuses UCP together with LITERAL (it has no meaning there).
  uint32_t options = PCRE2_UTF | (literal ? PCRE2_LITERAL : PCRE2_UCP);
  std::string source = literal ? pattern : translate_oniguruma(pattern);
  int error_code = 0;
  PCRE2_SIZE error_offset = 0;
  compiled_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(source.data()), source.size(),
                                  options, &error_code, &error_offset, nullptr);
  if (compiled_->code == nullptr) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error_code, message, sizeof(message));
    throw Error(context + ": cannot compile regex '" + pattern + "' at offset " +
                std::to_string(error_offset) + ": " + reinterpret_cast<char*>(message));
  }
  compiled_->jit = pcre2_jit_compile(compiled_->code, PCRE2_JIT_COMPLETE) == 0;
}

Regex::~Regex() = default;

void Regex::for_each_match(std::string_view text,
                           const std::function<void(size_t, size_t)>& on_match) const {
  MatchData data(pcre2_match_data_create_from_pattern(compiled_->code, nullptr));
  auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t offset = 0;
  while (offset < text.size()) {
    int rc = compiled_->jit ? pcre2_jit_match(compiled_->code, subject, text.size(), offset, 0,
                                              data.get(), nullptr)
                            : pcre2_match(compiled_->code, subject, text.size(), offset,
                                          PCRE2_NO_UTF_CHECK, data.get(), nullptr);
    if (rc < 0) break;
    PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(data.get());
    size_t start = ovector[0], end = ovector[1];
    if (end > start) {
      on_match(start, end);
      offset = end;
    } else {
      // An empty match produces no piece; step over one whole character.
      offset = start + 1;
      while (offset < text.size() && (static_cast<uint8_t>(text[offset]) & 0xC0) == 0x80) {
        ++offset;
      }
    }
  }
}

std::unique_ptr<Regex> regex_from_pattern(const nlohmann::json& pattern,
                                          const std::string& context) {
  if (pattern.is_object() && pattern.contains("String")) {
    return std::make_unique<Regex>(pattern["String"].get<std::string>(), true, context);
  }
  if (pattern.is_object() && pattern.contains("Regex")) {
    return std::make_unique<Regex>(pattern["Regex"].get<std::string>(), false, context);
  }
  throw Error(context + ": pattern must be {\"String\": ...} or {\"Regex\": ...}");
}

std::string replace_all(const Regex& regex, std::string_view text, std::string_view content) {
  std::string out;
  out.reserve(text.size());
  size_t copied = 0;
  regex.for_each_match(text, [&](size_t start, size_t end) {
    out.append(text.substr(copied, start - copied));
    out.append(content);
    copied = end;
  });
  out.append(text.substr(copied));
  return out;
}

}  // namespace qmlx
