// Python `str` operations on UTF-8 strings. Templates index, slice, strip and split strings
// the way Python does, counting code points (not bytes) and treating every Unicode whitespace
// character as whitespace, so these helpers reproduce Python's rules exactly where chat
// templates can observe them. Case mapping covers Latin, Greek and Cyrillic (see cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace qmlx::jinja::py {

std::u32string decode_utf8(std::string_view text);
std::string encode_utf8(std::u32string_view code_points);
void append_utf8(std::string& out, char32_t code_point);
size_t code_point_count(std::string_view text);

// Python's str.isspace() for one code point.
bool is_space(char32_t code_point);

// str.strip / lstrip / rstrip; `chars` absent means whitespace.
std::string strip(std::string_view text, const std::optional<std::string>& chars, bool left,
                  bool right);

// str.split / str.rsplit; `sep` absent means runs of whitespace. max_split < 0: no limit.
std::vector<std::string> split(std::string_view text, const std::optional<std::string>& sep,
                               int64_t max_split);
std::vector<std::string> rsplit(std::string_view text, const std::optional<std::string>& sep,
                                int64_t max_split);

// str.splitlines() (all of Python's line boundaries; "\r\n" counts as one).
std::vector<std::string> splitlines(std::string_view text);

// str.replace(old, new, count); count < 0: all.
std::string replace(std::string_view text, std::string_view old_text, std::string_view new_text,
                    int64_t count);
// str.count(sub) (non-overlapping).
int64_t count(std::string_view text, std::string_view sub);
// str.find / str.rfind, returning a code point index or -1.
int64_t find(std::string_view text, std::string_view sub, bool from_right);

std::string upper(std::string_view text);
std::string lower(std::string_view text);
// str.capitalize(): first character upper, the rest lower.
std::string capitalize(std::string_view text);
// str.title(): upper after any non-letter, lower elsewhere.
std::string title(std::string_view text);
bool is_letter(char32_t code_point);

}  // namespace qmlx::jinja::py
