// String formats the schema compiler enforces, as grammar expressions of a string's content
// (between the quotes; all ASCII, so raw and canonical coincide):
//   date       RFC 3339 full-date, with real month lengths and Feb 29 only in leap years
//   time       RFC 3339 full-time: hh:mm:ss, optional fraction, Z or +hh:mm / -hh:mm offset
//              (leap second :60 not accepted)
//   date-time  date "T" time (t and z accepted in lower case, as RFC 3339 allows)
//   uuid       8-4-4-4-12 hex digits
//   email      dot-atom local part "@" a domain of LDH labels (no quoted local parts, no
//              address literals)
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace qmlx::grammar {

// The content expression of `format`, or nullopt when the format is not enforced.
std::optional<std::string> format_expression(std::string_view format);

}  // namespace qmlx::grammar
